"""Time `llmcount count --json` for each preset against building the same model on the meta
device with transformers, in the same run, and print the ratio.

Run: python benchmarks/count_vs_meta.py [--repeat 3] [--only falcon-7b,gemma-2-2b]
Both sides run in fresh subprocesses so that import time is counted for each, as a user pays it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from llmcount.presets import presets

META = """
import json, sys, torch, transformers
from transformers import AutoConfig, AutoModelForCausalLM
from llmcount.presets import presets
transformers.logging.set_verbosity_error()
config = presets()[sys.argv[1]].config()
model_type = config.pop("model_type")
cfg = AutoConfig.for_model(model_type, **config)
with torch.device("meta"):
    model = AutoModelForCausalLM.from_config(cfg)
print(sum(p.numel() for p in model.parameters()))
"""


def timed(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated presets (default: every preset)")
    args = parser.parse_args()
    names = [name for name in args.only.split(",") if name] or list(presets())
    unknown = [name for name in names if name not in presets()]
    if unknown:
        parser.error(f"unknown presets: {', '.join(unknown)} (see `llmcount list`)")
    print(f"{'preset':<18}{'llmcount s':>12}{'meta build s':>14}{'ratio':>8}  same total")
    ratios = []
    for name in names:
        ours = [timed([sys.executable, "-m", "llmcount", "count", name, "--json"]) for _ in range(args.repeat)]
        theirs = [timed([sys.executable, "-c", META, name]) for _ in range(args.repeat)]
        t_ours = statistics.median(t for t, _ in ours)
        t_theirs = statistics.median(t for t, _ in theirs)
        same = json.loads(ours[0][1])["total"] == int(theirs[0][1])
        ratios.append(t_theirs / t_ours)
        print(f"{name:<18}{t_ours:>12.3f}{t_theirs:>14.3f}{t_theirs / t_ours:>7.1f}x  {same}")
    print(f"median: llmcount is {statistics.median(ratios):.1f}x faster than building on the meta device")


if __name__ == "__main__":
    main()
