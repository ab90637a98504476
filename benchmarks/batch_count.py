"""Batch speed of `llmcount count`: many config.json files in one call, against one, and against the same batch
evaluated by sympy's `subs` (the evaluator before compiled per-term evaluators), all in the same run.

Run: python benchmarks/batch_count.py [--configs 2000] [--repeat 3] [--subs-sample 200]

1. Whole process, as a user pays it: `llmcount count <one config> --jsonl` and `llmcount count <N configs>
   --jsonl`, each the median of --repeat fresh processes. The marginal cost of the other N - 1 configs gives the
   configs/s (the target: at least 1,000 configs/s, i.e. 2,000 configs cost at most 2 s more than one).
2. In one process, the same configs through the library (read, count, the --jsonl row), with the compiled
   evaluators and with them switched off (sympy `subs`, a sample of --subs-sample configs): the speed-up as a
   ratio measured in the same run, so that a busy machine slows both sides alike. Every total is compared too.

The configs are the bundled presets (every family they cover), each written N / len(presets) times with its
vocab_size moved by a few rows so that no two files are the same model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from llmcount.presets import presets

TARGET = 1_000  # configs/s


def write_configs(folder: Path, count: int, plain: bool = False, quantised: bool = False) -> list[str]:
    """``count`` config files of the bundled presets in ``folder``; ``plain``: only the presets the compiled path
    counts (not a composite) whose config declares no quantisation scheme (no stored-bytes columns to compute);
    ``quantised``: only the presets whose config declares one."""
    specs = list(presets().values())
    if quantised:
        from llmcount.quant.count import declares

        specs = [spec for spec in specs if declares(spec.config())]
    if plain:
        from llmcount import counting
        from llmcount.quant.count import declares

        def compiled(config: dict) -> bool:
            try:
                counting.read(config, "bench")
            except counting.Fallback:
                return False
            return True

        specs = [spec for spec in specs if not declares(spec.config()) and compiled(spec.config())]
    paths = []
    for i in range(count):
        config = specs[i % len(specs)].config()
        if isinstance(config.get("vocab_size"), int):
            config["vocab_size"] += i % 97
        path = folder / f"{i:05d}-{specs[i % len(specs)].name}.json"
        path.write_text(json.dumps(config))
        paths.append(str(path))
    return paths


def whole_process(paths: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "llmcount", "count", *paths, "--jsonl"], capture_output=True, text=True, check=True
    )
    return time.perf_counter() - start, len(done.stdout.splitlines())


def in_process(paths: list[str]) -> tuple[float, list[int]]:
    from llmcount.batch import load_one, row

    start = time.perf_counter()
    totals = []
    for path in paths:
        result = load_one(path)
        assert result.model is not None, result.error
        totals.append(row(result.model)["total"])
    return time.perf_counter() - start, totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--subs-sample", type=int, default=200)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        paths = write_configs(Path(tmp), args.configs)

        ones = [whole_process(paths[:1]) for _ in range(args.repeat)]
        alls = [whole_process(paths) for _ in range(args.repeat)]
        t_one, t_all = statistics.median(t for t, _ in ones), statistics.median(t for t, _ in alls)
        assert all(n == len(paths) for _, n in alls), "a config was not counted"
        extra = t_all - t_one
        rate = (len(paths) - 1) / extra if extra > 0 else float("inf")
        print(f"whole process, median of {args.repeat}:")
        print(f"  count 1 config        {t_one:8.3f} s")
        print(f"  count {len(paths):,} configs  {t_all:8.3f} s   (+{extra:.3f} s for {len(paths) - 1:,} more)")
        verdict = "meets" if rate >= TARGET else "MISSES"
        print(f"  marginal rate         {rate:8.0f} configs/s  ({verdict} the {TARGET:,} configs/s target)")

        from llmcount.formulas import derivation

        in_process(paths[: len(presets())])  # load every family's record once, as the batch above did
        t_compiled, compiled = in_process(paths)
        sample = paths[: args.subs_sample]
        original = derivation._evaluate_compiled
        derivation._evaluate_compiled = lambda terms, values: None  # every term by sympy's subs
        try:
            evaluated = derivation.evaluate_int
            derivation.evaluate_int = _subs_only
            t_subs, by_subs = in_process(sample)
        finally:
            derivation._evaluate_compiled, derivation.evaluate_int = original, evaluated
        t_compiled_sample = t_compiled * len(sample) / len(paths)
        print("in one process (read, count, --jsonl row):")
        print(f"  compiled evaluators   {len(paths) / t_compiled:8.0f} configs/s  ({len(paths):,} configs)")
        print(f"  sympy subs            {len(sample) / t_subs:8.0f} configs/s  ({len(sample):,} configs)")
        print(f"  ratio                 {t_subs / t_compiled_sample:8.1f}x faster, same run")
        same = compiled[: len(sample)] == by_subs
        print(f"  same totals           {same}")
        if not same:
            sys.exit(1)


def _subs_only(expr, values, what):  # the evaluator before compiled ones
    value = expr.subs(values)
    if not value.is_Integer:
        raise ValueError(f"{what}: does not evaluate to an integer: {expr} = {value}")
    return int(value)


if __name__ == "__main__":
    main()
