"""``memory --training`` without sympy: the training memory computed from the training snapshots
(llmcount.plain_training) is the sympy path's (llmcount.formulas.training.estimate, whose model states and
activations test_training.py and test_activations.py check against hand derivations and autograd) on every record's
defaults and every preset, under several dtypes, optimizers, ZeRO stages, tensor / pipeline / expert parallel degrees,
attention implementations and recomputations, as JSON and as text; ``memory --training`` of such a model imports no
sympy; the snapshots are current."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_counting import HEAVY, PROBE

from llmcount import counting, plain_training
from llmcount.formulas import snapshot, training_snapshot
from llmcount.formulas import training as tr
from llmcount.presets import presets
from llmcount.quant.config import read_quant
from llmcount.renderers.training import render_training, training_data

# (dtype, optimizer, parallel degrees, attention, recompute, S, B)
CASES = (
    ("bf16", "adamw", {}, "sdpa", "none", 4096, 1),
    ("fp32", "adafactor", {"dp": 4, "zero": 1}, "eager", "full", 4096, 1),
    ("bf16", "muon", {"tp": 2, "dp": 4, "zero": 3, "sequence_parallel": True}, "sdpa", "selective", 4096, 1),
    ("fp16", "adamw8bit", {"dp": 8, "zero": 2, "ep": 2}, "flash", "none", 4096, 2),
    ("bf16", "sgd-momentum", {"tp": 4, "dp": 2, "zero": 1}, "eager", "selective", 1000, 3),
    ("bf16", "adamw", {"pp": 4, "dp": 2, "zero": 1}, "sdpa", "none", 4096, 1),
    ("bf16", "muon", {"pp": 3, "tp": 2}, "sdpa", "full", 2048, 2),
)


def _training_alike(config: dict, source: str, cases=CASES) -> int:
    """The plain training memory of ``config`` is the sympy path's for each case the plain path takes; the number
    of cases it took."""
    try:
        counted = counting.read(config, source)
    except counting.Fallback:
        return 0
    model = counted.full()
    taken = 0
    for dtype, optimizer, degrees, attention, recompute, seq, batch in cases:
        parallel = plain_training.Parallel(**degrees)
        try:
            ours = plain_training.estimate(counted, dtype, seq, batch, optimizer, parallel, attention, recompute)
        except counting.Fallback:
            continue
        theirs = tr.estimate(model, dtype, seq, batch, optimizer, tr.Parallel(**degrees), None, attention, recompute)
        assert plain_training.training_data(counted, ours, seq, batch) == training_data(model, theirs, seq, batch)
        for width in (None, 90):
            assert plain_training.render_training(counted, ours, seq, batch, width) == render_training(
                model, theirs, seq, batch, width
            )
        taken += 1
    return taken


COMPILED = tuple(name for name in snapshot.bundled() if plain_training.snapshot(name) is not None)


@pytest.mark.parametrize(("index", "model_type"), enumerate(COMPILED))
def test_plain_training_on_each_records_defaults_is_the_sympy_paths(index: int, model_type: str) -> None:
    """The records' defaults under one case each, in turn (the sympy path is slow)."""
    family = snapshot.records.family(model_type)
    config = snapshot._default_config(family)
    _training_alike(config, f"{model_type} defaults", (CASES[index % len(CASES)],))


@pytest.mark.parametrize(("index", "name"), enumerate(sorted(presets())))
def test_plain_training_of_each_preset_is_the_sympy_paths(index: int, name: str) -> None:
    config = presets()[name].config()
    cases = (CASES[0], CASES[1 + index % (len(CASES) - 1)])
    taken = _training_alike(config, f"preset {name}", cases)
    if isinstance(config.get("model_type"), str) and plain_training.snapshot(config["model_type"]) is not None:
        assert taken >= 1, f"{name}: no case taken by the plain path"


def test_most_records_defaults_and_presets_are_taken() -> None:
    """The plain path takes the default options on most records' defaults (what it hands over is worded by the
    sympy path, so a hand-over is never wrong, only slower)."""
    taken = 0
    for name in COMPILED:
        family = snapshot.records.family(name)
        config = snapshot._default_config(family)
        try:
            counted = counting.read(config, name)
            plain_training.estimate(counted)
            taken += 1
        except counting.Fallback:
            pass
    assert taken >= 0.9 * len(COMPILED), (taken, len(COMPILED))


def _run(*args: str) -> tuple[int, list[str], str, str]:
    env = {**os.environ, "COLUMNS": "100"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE % (HEAVY,), json.dumps(args)], capture_output=True, text=True, timeout=120, env=env
    )
    lines = done.stderr.strip().splitlines()
    report = json.loads(lines[-1])
    return report["code"], report["heavy"], done.stdout, "\n".join(lines[:-1])


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("qwen3-8b",), ("bf16", "adamw", {}, "sdpa", "none", 4096, 1)),
        (("qwen3-8b", "--json"), ("bf16", "adamw", {}, "sdpa", "none", 4096, 1)),
        (
            ("llama-3-8b", "--zero", "3", "--dp", "8", "--tp", "2", "--recompute", "selective", "--optimizer", "muon"),
            ("bf16", "muon", {"tp": 2, "dp": 8, "zero": 3}, "sdpa", "selective", 4096, 1),
        ),
        (
            ("deepseek-v3", "--json", "--dtype", "fp32", "--ep", "8", "--dp", "8", "--zero", "1", "--seq", "1000"),
            ("fp32", "adamw", {"ep": 8, "dp": 8, "zero": 1}, "sdpa", "none", 1000, 1),
        ),
        (
            ("qwen3-next-80b-a3b", "--pp", "4", "--dp", "2", "--zero", "1", "--json"),
            ("bf16", "adamw", {"pp": 4, "dp": 2, "zero": 1}, "sdpa", "none", 4096, 1),
        ),
        (
            ("gpt2", "--attention", "eager", "--recompute", "full", "--batch", "4", "--optimizer", "adafactor"),
            ("bf16", "adafactor", {}, "eager", "full", 4096, 4),
        ),
    ],
)
def test_memory_training_imports_no_sympy_and_prints_the_sympy_paths(args, expected) -> None:
    code, heavy, out, err = _run("memory", args[0], "--training", *args[1:])
    dtype, optimizer, degrees, attention, recompute, seq, batch = expected
    scheme = read_quant(presets()[args[0]].config(), args[0])  # DeepSeek-V3's FP8, named and not applied
    note = "" if scheme is None else f"the config's quantisation ({scheme.label}) is not applied to training memory"
    assert (code, heavy) == (0, []) and (note in err if note else err == "")
    model = counting.read(presets()[args[0]].config(), f"preset {args[0]}", args[0]).full()
    theirs = tr.estimate(model, dtype, seq, batch, optimizer, tr.Parallel(**degrees), None, attention, recompute)
    if "--json" in args:
        assert json.loads(out) == training_data(model, theirs, seq, batch)
    else:
        assert out == render_training(model, theirs, seq, batch, 100).rstrip() + "\n"


def test_memory_training_the_plain_path_does_not_take_is_the_sympy_paths() -> None:
    # a target list whose adapters' formula the snapshot does not hold
    code, heavy, out, _ = _run("memory", "qwen3-8b", "--training", "--lora", "16", "--lora-targets", "o_proj", "--json")
    assert code == 0 and "sympy" in heavy
    assert json.loads(out)["lora"]["rank"] == 16
    code, _, out, err = _run("memory", "qwen3-8b", "--training", "--tp", "3")
    assert code == 1 and out == "" and "--tp 3" in err


REGENERATED = ("qwen3", "deepseek_v3", "gpt_oss", "qwen3_next")
"""Records whose training snapshots the test makes again in full (all of them take minutes: the others are held to
their record by the hash, and made by the same code)."""


def test_the_training_snapshots_are_current() -> None:
    """The common file and the snapshots of :data:`REGENERATED` are what formulas/training_snapshot.py makes now;
    every record with a count snapshot has a training snapshot made from the same record text, and no other file is
    there (regenerate: python -m llmcount.formulas.training_snapshot)."""
    folder = training_snapshot.folder()
    have = {path.name: path.read_text("utf-8") for path in folder.glob("*.json")}
    made = training_snapshot.expected(REGENERATED)
    stale = sorted(name for name, text in made.items() if have.get(name) != text)
    names = {f"{name}.json" for name in training_snapshot.wanted()} | {plain_training.COMMON}
    stale += sorted(names ^ have.keys())
    for name in training_snapshot.wanted():
        data = json.loads(have.get(f"{name}.json", "{}"))
        if data.get("hash") != counting.compiled(name).data["hash"]:
            stale.append(f"{name}.json")
    assert not stale, f"stale training snapshots {stale[:5]}: run python -m llmcount.formulas.training_snapshot"


# (rank, targets, dtype, optimizer, parallel degrees, recompute)
LORA_CASES = (
    (16, ("attention", "mlp"), "bf16", "adamw", {}, "none"),
    (8, ("q_proj", "v_proj"), "fp32", "adamw8bit", {"dp": 4, "zero": 2}, "selective"),
    (64, ("attention",), "bf16", "muon", {"pp": 2, "dp": 2, "zero": 1}, "full"),
    (4, ("mlp",), "bf16", "adafactor", {"ep": 2}, "none"),
)
LORA_MODELS = ("qwen3-8b", "llama-3-8b", "gpt2", "deepseek-v3", "qwen3-next-80b-a3b", "gemma-2-2b", "mixtral-8x7b")


@pytest.mark.parametrize("name", LORA_MODELS)
def test_lora_on_the_plain_path_is_the_sympy_paths(name: str) -> None:
    config = presets()[name].config()
    counted = counting.read(config, f"preset {name}", name)
    model = counted.full()
    taken = 0
    for rank, targets, dtype, optimizer, degrees, recompute in LORA_CASES:
        parallel = plain_training.Parallel(**degrees)
        lora = plain_training.Lora(rank, targets)
        try:
            ours = plain_training.estimate(counted, dtype, 4096, 1, optimizer, parallel, "sdpa", recompute, lora)
        except counting.Fallback:  # handed to the sympy path, which words any refusal
            continue
        theirs = tr.estimate(
            model, dtype, 4096, 1, optimizer, tr.Parallel(**degrees), tr.Lora(rank, targets), "sdpa", recompute
        )
        assert ours.lora_parameters == theirs.lora_parameters
        assert plain_training.training_data(counted, ours, 4096, 1) == training_data(model, theirs, 4096, 1)
        for width in (None, 90):
            assert plain_training.render_training(counted, ours, 4096, 1, width) == render_training(
                model, theirs, 4096, 1, width
            )
        taken += 1
    assert taken >= 2, name


def test_lora_and_freeze_vision_import_no_sympy() -> None:
    code, heavy, out, err = _run("memory", "qwen3-8b", "--training", "--lora", "16", "--json")
    assert (code, heavy, err) == (0, [], "")
    model = counting.read(presets()["qwen3-8b"].config(), "preset qwen3-8b", "qwen3-8b").full()
    theirs = tr.estimate(model, "bf16", 4096, 1, "adamw", tr.Parallel(), tr.Lora(16), "sdpa", "none")
    assert json.loads(out) == training_data(model, theirs, 4096, 1)
    code, heavy, out, err = _run("memory", "qwen3-8b", "--training", "--freeze-vision")
    assert (code, heavy, out) == (1, [], "")
    assert err == "llmcount: error: --freeze-vision: qwen3-8b has no vision tower counted (a language model only)"
