"""The numeric path's output is the sympy path's: ``count``'s text written in Python (plain.render_count) is what the
template renders for the same model; ``count MODEL... [--json|--csv|--jsonl]`` run without click's parsing prints
what the parsed command prints; the compiled FLOPs formulas (``flops --json``, ``llmcount.flops``) give what the sympy
formulas give, on every record's defaults and every preset, and ``flops``'s text written in Python
(plain_flops.render_flops) is what the template renders; they import no sympy."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from llmcount import counting, plain, plain_flops
from llmcount.formulas import records, snapshot
from llmcount.formulas.flops import Flops
from llmcount.presets import presets
from llmcount.renderers import flops_data, render_count, render_flops


@pytest.mark.parametrize("name", sorted(presets()))
def test_count_text_is_the_templates(name: str) -> None:
    try:
        counted = counting.read(presets()[name].config(), f"preset {name}", name)
    except counting.Fallback:
        pytest.skip("read by the sympy path")
    model = counted.full()
    for width in (None, 120, 80, 40, 12):
        try:
            ours = plain.render_count(counted, width)
        except counting.Fallback:
            pytest.skip("shown by the sympy path")
        assert ours == render_count(model, width, None)


def _run(*args: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "llmcount", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "90"},
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("qwen3-32b",),
        ("deepseek-v3", "--json"),
        ("qwen3-32b", "no-such-model", "--csv"),
        ("gpt2", "llama-3-8b", "--jsonl"),
        ("gpt2", "llama-3-8b"),
        ("no-such-model",),
    ],
)
def test_count_without_clicks_parsing_prints_what_the_parsed_command_prints(args: tuple[str, ...]) -> None:
    # after "--" every word is a MODEL: the command line is click's to parse
    quick = _run("count", *args)
    parsed = _run("count", *[a for a in args if a.startswith("-")], "--", *[a for a in args if not a.startswith("-")])
    assert quick == parsed
    assert quick[1] or quick[2]


HEAVY = ("sympy", "torch", "transformers", "numpy", "matplotlib")
PROBE = """
import json, sys
from llmcount.cli import main
sys.argv = ["llmcount", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "heavy": sorted({m.split(".")[0] for m in sys.modules} & set(%r))}), file=sys.stderr)
"""


def _heavy(*args: str) -> tuple[int, list[str], str]:
    """Run the CLI's main on ``args`` in a fresh process: its exit status, the heavy modules it imported, stdout."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE % (HEAVY,), json.dumps(args)], capture_output=True, text=True, timeout=120
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], report["heavy"], done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("flops", "qwen3-32b", "--json"),
        ("flops", "deepseek-v3", "--seq", "8k", "--batch", "2", "--causal", "--json"),
        ("flops", "gemma-2-2b", "--json"),
    ],
)
def test_numbers_without_a_formula_shown_import_no_sympy(args: tuple[str, ...]) -> None:
    code, heavy, out = _heavy(*args)
    assert code == 0
    assert heavy == []
    assert json.loads(out)["forward_flops"] > 0


@pytest.mark.parametrize(
    ("args", "seq", "batch", "causal", "training"),
    [
        (("qwen3-32b",), 4096, 1, False, False),
        (("deepseek-v3", "--seq", "8k", "--batch", "2", "--causal", "--training"), 8192, 2, True, True),
        (("gemma-2-2b", "--training"), 4096, 1, False, True),
    ],
)
def test_flops_text_imports_no_sympy_and_prints_the_templates(args, seq, batch, causal, training) -> None:
    env = {**os.environ, "COLUMNS": "90"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE % (HEAVY,), json.dumps(["flops", *args])],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert (report["code"], report["heavy"]) == (0, [])
    model = counting.read(presets()[args[0]].config(), f"preset {args[0]}", args[0]).full()
    formula = Flops(model.derivation, causal=causal).at(model.values, seq)
    theirs = formula.evaluate(model.values, seq, batch)
    assert done.stdout == render_flops(model, formula, theirs, training, 90).rstrip() + "\n"


def test_flops_bad_inputs_keep_their_one_line_errors() -> None:
    for args, code in ((("no-such-model",), 1), (("qwen3-32b", "--seq", "0"), 2), (("qwen3-32b", "--seq", "x"), 2)):
        done = subprocess.run([sys.executable, "-m", "llmcount", "flops", *args], capture_output=True, text=True)
        assert (done.returncode, done.stdout) == (code, ""), args
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, args


def test_the_apis_flops_import_no_sympy() -> None:
    script = (
        "import sys, llmcount; f = llmcount.flops('qwen3-32b', seq='4k', batch=2, causal=True); "
        f"print(f.forward, sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    forward, heavy = done.stdout.split(" ", 1)
    assert int(forward) > 0
    assert heavy.strip() == "[]"


def _flops_alike(config: dict, source: str) -> None:
    """The compiled FLOPs of ``config`` are the sympy formula's, at several S and B, eager and causal; where the
    compiled path hands the config over, so be it (the sympy path is the one tested against torch)."""
    try:
        counted = counting.read(config, source)
    except counting.Fallback:
        return
    model = counted.full()
    for seq, batch, causal in ((1, 1, False), (4096, 2, False), (4096, 2, True), (7, 3, True), (300_000, 1, True)):
        try:
            ours = counted.flops(seq, batch, causal)
        except counting.Fallback:
            continue
        formula = Flops(model.derivation, causal=causal).at(model.values, seq)
        theirs = formula.evaluate(model.values, seq, batch)
        assert (ours.forward, ours.per_token, ours.training, ours.rule_of_thumb, ours.convention) == (
            theirs.forward,
            theirs.per_token,
            theirs.training,
            theirs.rule_of_thumb,
            theirs.convention,
        )
        assert [(c.path, c.formula, c.flops) for c in ours.components] == [
            (c.path, str(c.formula), c.flops) for c in theirs.components
        ]
        assert counted.flops_data(ours, causal) == flops_data(model, formula, theirs)
        for width, training in ((None, seq == 4096), (80, True), (40, False)):
            text = plain_flops.render_flops(counted, ours, causal, training, width)
            assert text == render_flops(model, formula, theirs, training, width)


COMPILED = tuple(name for name in snapshot.bundled() if counting.compiled(name) is not None)


@pytest.mark.parametrize("model_type", COMPILED)
def test_compiled_flops_on_each_records_defaults_are_the_sympy_formulas(model_type: str) -> None:
    _flops_alike(snapshot._default_config(records.family(model_type)), f"{model_type} defaults")


@pytest.mark.parametrize("name", sorted(presets()))
def test_compiled_flops_of_each_preset_are_the_sympy_formulas(name: str) -> None:
    _flops_alike(presets()[name].config(), f"preset {name}")
