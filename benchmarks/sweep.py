"""Rows per second of `llmcount sweep` on a 10^6-row grid against substituting row by row with sympy's `subs`,
measured in the same run, and the ratio.

Run: python benchmarks/sweep.py [--side 1000] [--subs-rows 2000]
The grid is Qwen3 with d = 64, 128, ... and N = 1 .. side (side² rows), d_ff = 3·d, the rest from qwen3-8b.
`subs` is timed on the first --subs-rows rows only (all 10^6 would take many minutes) and its rate extrapolated;
those rows are also checked to agree with the sweep, value for value. Not a test: nothing is asserted on time.
"""

from __future__ import annotations

import argparse
import io
import itertools
import time

from llmcount.analysis import subject_and_base
from llmcount.analysis.parse import parse_setting
from llmcount.analysis.sweep import sweep, write_csv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=1000, help="values per axis; the grid has side² rows")
    parser.add_argument("--subs-rows", type=int, default=2000, help="rows evaluated with subs")
    args = parser.parse_args()

    derivation, base, _ = subject_and_base("qwen3", "qwen3-8b")
    texts = [f"d=64:{64 * args.side}:64", f"N=1:{args.side}", "d_ff=3*d"]
    settings = [parse_setting(text, "--set", grid=True) for text in texts]
    rows = args.side**2

    timings = {}
    for backend in ("numpy", "python"):
        start = time.perf_counter()
        result = sweep(derivation, settings, base, backend=backend)
        computed = time.perf_counter() - start
        write_csv(result, io.StringIO())
        timings[backend] = (computed, time.perf_counter() - start, result)

    # Row by row: substitute each grid point into the same formula (relations first), as a naive loop would.
    d, n, d_ff = (s.symbol for s in settings)
    fixed = {s: v for s, v in base.items() if s not in (d, n, d_ff)}
    formula = derivation.total.subs(d_ff, settings[2].relation).subs(fixed)
    grid = itertools.islice(itertools.product(settings[0].numbers, settings[1].numbers), args.subs_rows)
    start = time.perf_counter()
    by_subs = [int(formula.subs({d: a, n: b})) for a, b in grid]
    subs_seconds = time.perf_counter() - start
    swept = [row[2] for row in itertools.islice(timings["numpy"][2].rows(), args.subs_rows)]
    assert by_subs == swept, "sweep and subs disagree"

    subs_rate = args.subs_rows / subs_seconds
    print(f"grid: {rows:,} rows ({' '.join(texts)}, rest from qwen3-8b)")
    print(f"{'method':<28}{'seconds':>10}{'rows/s':>16}{'vs subs':>10}")
    for backend, (computed, with_csv, _) in timings.items():
        for label, seconds in ((f"sweep, {backend}", computed), (f"sweep, {backend} + CSV", with_csv)):
            rate = rows / seconds
            print(f"{label:<28}{seconds:>10.3f}{rate:>16,.0f}{rate / subs_rate:>9,.0f}x")
    print(f"{'subs, row by row':<28}{subs_seconds:>10.3f}{subs_rate:>16,.0f}{1:>9}x   ({args.subs_rows:,} rows)")


if __name__ == "__main__":
    main()
