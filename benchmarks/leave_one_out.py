"""Leave-one-out over the records: for each causal-LM model_type that has a record, discover a record from scratch
(as if the bundled one did not exist) and check that it reproduces the bundled record's counts and transformers' on
the class defaults and on random configs. Prints one line per type, then the success rate and the failures by class.

Run: python benchmarks/leave_one_out.py [--only llama,qwen3] [--all] [--out results.jsonl] [--resume] [--shuffle SEED]
Without --only or --all it runs a small sample. Each type takes 15-200 s (a few dozen meta-device builds): run it in
one process on a shared machine. --out appends one JSON line per type, --resume skips the types already in it.

Discovery reads only transformers' code and the glossary of symbols (formulas/symbols.py), never the records; a type
counts as reproduced when the draft is exact against transformers on every check and equals the bundled record's
count on the class defaults and on each random config the bundled record reads.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

# the checkout this script is in, before an installed llmcount (a worktree measures its own code)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SAMPLE = ["llama", "qwen3", "mistral"]

CLASSES = [  # (class, the pattern of the reason that puts a failure in it), the first that matches
    ("layer count refused by validators", r"refuses a build with \d+ layers"),
    ("class defaults refused when given explicitly", r"refuses its class defaults given explicitly"),
    ("no random config accepted", r"random configs: transformers accepted|no random config accepted"),
    ("draft cannot be loaded", r"cannot load the draft"),
    ("draft refused by llmcount's reader", r"llmcount refuses it"),
    ("differs from the bundled record", r"bundled record"),
    ("draft not exact", r"the draft counts"),
    ("no layer-count key", r"no config key for the number of layers"),
    ("tensors of one name with other shapes within a layer", r"tensors under one name differ in shape"),
]


def causal_types() -> list[str]:
    """The model_types with a record that transformers builds with AutoModelForCausalLM."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    from llmcount.formulas import records

    return [name for name in records.names() if name in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES]


def run_one(model_type: str) -> dict:
    """Discover ``model_type`` from scratch and compare the draft with transformers and with the bundled record."""
    from llmcount.discover.core import Discoverer
    from llmcount.discover.verify import first_failure, verify
    from llmcount.errors import LlmcountError
    from llmcount.formulas import records
    from llmcount.formulas.config import read_config

    start = time.monotonic()
    out = {"model_type": model_type, "ok": False, "reason": "", "checks": 0}
    try:
        discoverer = Discoverer(model_type, log=lambda text: None)
        text = discoverer.run().text
        with tempfile.TemporaryDirectory(prefix="llmcount-loo-") as folder:
            path = Path(folder) / f"{model_type}.toml"
            path.write_text(text, encoding="utf-8")
            checks = verify(discoverer, path)
            out["checks"] = len(checks)
            wrong = first_failure(checks)
            if wrong:
                out["reason"] = wrong
            else:
                out["reason"] = _against_record(discoverer, records.load(path), records.family(model_type), read_config)
                out["ok"] = not out["reason"]
    except (LlmcountError, Exception) as error:  # a type the method cannot handle: its reason, one line
        out["reason"] = f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"
    out["seconds"] = round(time.monotonic() - start, 1)
    return out


def _against_record(discoverer, draft, bundled, read_config) -> str:
    """ "" when the draft and the bundled record count the same on the class defaults and random configs."""
    import random

    from llmcount.discover import probe
    from llmcount.discover.verify import random_config
    from llmcount.errors import LlmcountError

    rng = random.Random(1)
    configs = [{**probe.class_defaults(discoverer.model_type), "model_type": discoverer.model_type}]
    configs += [random_config(discoverer, rng) for _ in range(5)]
    for i, config in enumerate(configs):
        if i:  # a random config transformers refuses has no count to agree on (Jamba's offset at or past its period)
            try:
                probe.build(discoverer.model_type, {k: v for k, v in config.items() if k != "model_type"})
            except probe.Refused:
                continue
        try:
            theirs = read_config(config, "bundled", family=bundled).counts.total
        except (LlmcountError, ValueError):
            continue  # a config the bundled record refuses by name: nothing to compare
        try:
            ours = read_config(config, "draft", family=draft).counts.total
        except (LlmcountError, ValueError) as error:
            return f"the draft refuses a config the bundled record counts ({error})"
        if ours != theirs:
            which = "the class defaults" if i == 0 else f"random config {i}"
            return f"on {which} the draft counts {ours:,} and the bundled record {theirs:,}"
    return ""


def failure_class(reason: str) -> str:
    return next((name for name, pattern in CLASSES if re.search(pattern, reason)), "other: " + reason.split(":")[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated model_types")
    parser.add_argument("--all", action="store_true", help="every causal-LM type with a record")
    parser.add_argument("--out", help="append one JSON line per type to this file")
    parser.add_argument("--resume", action="store_true", help="skip the types already in --out")
    parser.add_argument(
        "--shuffle", type=int, metavar="SEED", help="run in a random order (a partial run is then a fair sample)"
    )
    args = parser.parse_args()
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    every = causal_types()
    names = every if args.all else [n for n in args.only.split(",") if n] or SAMPLE
    if args.shuffle is not None:
        import random

        random.Random(args.shuffle).shuffle(names)
    unknown = [n for n in names if n not in every]
    if unknown:
        parser.error(f"not causal-LM types with a record: {', '.join(unknown)}")
    results = []
    if args.out and args.resume and os.path.exists(args.out):
        with open(args.out, encoding="utf-8") as handle:
            results = [json.loads(line) for line in handle if line.strip()]
        done = {r["model_type"] for r in results}
        names = [n for n in names if n not in done]
    for name in names:
        result = run_one(name)
        results.append(result)
        verdict = "reproduced" if result["ok"] else f"FAILED ({failure_class(result['reason'])}): {result['reason']}"
        print(f"{name:<28}{result['seconds']:>7.0f} s  {verdict}", flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(result) + "\n")
    ok = sum(r["ok"] for r in results)
    print(f"\nreproduced {ok} of {len(results)} ({100 * ok / max(1, len(results)):.0f}%); {len(every)} causal-LM types")
    classes: dict[str, list[str]] = {}
    for r in results:
        if not r["ok"]:
            classes.setdefault(failure_class(r["reason"]), []).append(r["model_type"])
    for name, types in sorted(classes.items(), key=lambda x: -len(x[1])):
        print(f"  {len(types):>3}  {name}: {', '.join(types)}")


if __name__ == "__main__":
    sys.exit(main())
