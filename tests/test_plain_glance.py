"""``flops --conventions`` and ``mfu`` without sympy: the ingredients read from the snapshots (llmcount.plain_glance)
are the sympy path's (llmcount.formulas.conventions.ingredients, whose conventions test_conventions.py and
test_papers.py check against the papers' own tables), and so are the conventions, their text and their JSON, and
the MFU, on every preset and every record's defaults; the commands import no sympy on such a model, hand the rest
(Megatron's MTP layers) to the sympy path, and keep their one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import pytest
from test_counting import HEAVY
from test_plain_training import _run

from llmcount import counting, plain_glance
from llmcount.errors import LlmcountError
from llmcount.formulas import conventions, records, snapshot
from llmcount.gpus import peak as gpu_peak
from llmcount.presets import presets
from llmcount.renderers.costs_glance import render_conventions, render_mfu

COMPILED = tuple(name for name in snapshot.bundled() if counting.compiled(name) is not None)
# (convention, tokens/s, GPUs, peak TFLOP/s per GPU, GPU name, dtype)
MFU = (
    ("palm", Fraction(28000), 8, Fraction(989), "h100-sxm", "bf16"),
    ("megatron", Fraction(7, 2), 1, Fraction(1), "", "fp8"),
    ("maxtext", Fraction(12000), 2, Fraction(500), "", "bf16"),
)


def _glance_alike(config: dict, source: str, seqs=(4096,), paper: dict | None = None) -> int:
    """The plain ingredients, conventions, texts and MFU of ``config`` are the sympy path's at each S the plain path
    takes; how many it took."""
    try:
        counted = counting.read(config, source)
    except counting.Fallback:
        return 0
    model = counted.full()
    taken = 0
    for seq in seqs:
        try:
            ours = plain_glance.ingredients(counted, seq)
        except counting.Fallback:
            continue
        assert ours == conventions.ingredients(model, seq)
        try:
            rows = conventions.rows(ours)
        except LlmcountError as exc:  # a convention the model cannot take: the sympy path refuses it alike
            with pytest.raises(LlmcountError) as caught:
                conventions.conventions(model, seq)
            assert str(caught.value) == str(exc)
            taken += 1
            continue
        assert rows == conventions.conventions(model, seq)
        assert plain_glance.render_conventions(counted, ours, rows, paper) == render_conventions(
            model, ours, rows, paper
        )
        for name, *args in MFU:
            try:
                theirs = conventions.utilisation(model, seq, *args, name)
            except LlmcountError as exc:  # a convention not given for this model: the same refusal on both paths
                with pytest.raises(LlmcountError) as caught:
                    conventions.utilisation(counted, seq, *args, name, read=plain_glance.ingredients)
                assert str(caught.value) == str(exc)
                continue
            made = conventions.utilisation(counted, seq, *args, name, read=plain_glance.ingredients)
            assert made == theirs
            assert plain_glance.render_mfu(counted, made) == render_mfu(model, theirs)
        taken += 1
    return taken


@pytest.mark.parametrize("model_type", COMPILED)
def test_plain_conventions_on_each_records_defaults_are_the_sympy_paths(model_type: str) -> None:
    _glance_alike(snapshot._default_config(records.family(model_type)), f"{model_type} defaults")


@pytest.mark.parametrize("name", sorted(presets()))
def test_plain_conventions_of_each_preset_are_the_sympy_paths(name: str) -> None:
    preset = presets()[name]
    _glance_alike(preset.config(), f"preset {name}", (4096, 7), preset.six_nd)


def test_the_plain_path_takes_most_presets() -> None:
    """Most presets' conventions are computed without sympy (a regression that hands them all over fails here)."""
    taken = 0
    for name, preset in presets().items():
        try:
            plain_glance.ingredients(counting.read(preset.config(), f"preset {name}", name), 4096)
        except counting.Fallback:
            continue
        taken += 1
    assert taken >= 0.8 * len(presets()), taken


def _sympy_conventions(name: str, seq: int) -> tuple:
    model = counting.read(presets()[name].config(), f"preset {name}", name).full()
    x = conventions.ingredients(model, seq)
    return model, x, conventions.conventions(model, seq)


@pytest.mark.parametrize(("name", "seq"), [("qwen3-32b", 4096), ("deepseek-v3", 8192), ("gemma-2-2b", 1024)])
def test_flops_conventions_import_no_sympy_and_print_the_sympy_paths(name: str, seq: int) -> None:
    model, x, rows = _sympy_conventions(name, seq)
    paper = presets()[name].six_nd
    code, heavy, out, err = _run("flops", name, "--conventions", "--seq", str(seq))
    assert (code, heavy, err) == (0, [], "")
    assert out == render_conventions(model, x, rows, paper).rstrip() + "\n"
    code, heavy, out, err = _run("flops", name, "--conventions", "--seq", str(seq), "--json")
    assert (code, heavy, err) == (0, [], "")
    assert json.loads(out) == json.loads(json.dumps(plain_glance.conventions_data(model, x, rows, paper)))


def test_mfu_imports_no_sympy_and_prints_the_sympy_paths() -> None:
    args = ("--seq", "4096", "--tokens-per-second", "28000", "--gpu", "h100-sxm", "--gpus", "8")
    model = counting.read(presets()["llama-3-8b"].config(), "preset llama-3-8b", "llama-3-8b").full()
    code, heavy, out, err = _run("mfu", "llama-3-8b", *args)
    assert (code, heavy, err) == (0, [], "")
    peak, gpu = gpu_peak("h100-sxm", None, "bf16")
    theirs = conventions.utilisation(model, 4096, Fraction(28000), 8, peak, gpu, "bf16", "palm")
    assert out == render_mfu(model, theirs).rstrip() + "\n"
    code, heavy, out, err = _run("mfu", "llama-3-8b", *args, "--convention", "megatron", "--json")
    assert (code, heavy, err) == (0, [], "")
    theirs = conventions.utilisation(model, 4096, Fraction(28000), 8, peak, gpu, "bf16", "megatron")
    assert json.loads(out) == json.loads(json.dumps(plain_glance.mfu_data(model, theirs)))


def test_megatrons_mtp_layers_are_the_sympy_paths() -> None:
    code, heavy, out, _ = _run("flops", "deepseek-v3", "--conventions", "--mtp", "1", "--json")
    assert code == 0 and "sympy" in heavy
    assert "k = 1" in next(c["formula"] for c in json.loads(out)["conventions"] if c["name"] == "megatron")


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("mfu", "llama-3-8b", "--tokens-per-second", "1", "--gpu", "h100-sxm", "--convention", "nope"), 1, "nope"),
        (("mfu", "no-such-model", "--tokens-per-second", "1", "--gpu", "h100-sxm"), 1, "no-such-model"),
        (("mfu", "llama-3-8b", "--tokens-per-second", "0", "--gpu", "h100-sxm"), 2, "--tokens-per-second"),
        (("flops", "no-such-model", "--conventions"), 1, "no-such-model"),
        (("flops", "qwen3-32b", "--conventions", "--seq", "0"), 2, "--seq"),
    ],
)
def test_bad_inputs_keep_their_one_line_errors(args: tuple[str, ...], code: int, says: str) -> None:
    done = subprocess.run([sys.executable, "-m", "llmcount", *args], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (code, "")
    assert len(done.stderr.strip().splitlines()) == 1 and says in done.stderr


def test_the_apis_conventions_and_mfu_import_no_sympy() -> None:
    script = (
        "import json, sys, llmcount; rows = llmcount.conventions('llama-3-8b', seq='2k'); "
        "u = llmcount.mfu('llama-3-8b', 28000, gpu='h100-sxm', gpus=8, convention='megatron'); "
        "print(json.dumps([[[c.name, str(c.training_flops_per_token)] for c in rows], str(u.mfu), "
        f"sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))]))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    rows, mfu, heavy = json.loads(done.stdout)
    assert heavy == []
    model = counting.read(presets()["llama-3-8b"].config(), "preset llama-3-8b", "llama-3-8b").full()
    assert rows == [[c.name, str(c.training_flops_per_token)] for c in conventions.conventions(model, 2048)]
    peak, gpu = gpu_peak("h100-sxm", None, "bf16")
    assert mfu == str(conventions.utilisation(model, 4096, Fraction(28000), 8, peak, gpu, "bf16", "megatron").mfu)
