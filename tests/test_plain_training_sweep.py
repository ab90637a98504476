"""``sweep --csv`` without sympy: the rows llmcount.plain_sweep evaluates with the compiled counts are the sympy path's
(llmcount.analysis.sweep, whose counts test_sweep.py checks against ``count``) on every preset for a few grids, and
``sweep --csv`` of such a model imports no sympy; what the plain path does not take is handed to the sympy path,
which prints the same CSV or words the refusal."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from test_counting import HEAVY, PROBE

from llmcount import counting, plain_sweep
from llmcount.analysis import subject_and_base
from llmcount.analysis.parse import MAX_LISTED, Vocabulary, parse_setting
from llmcount.analysis.sweep import sweep, write_csv
from llmcount.presets import presets


def _run(*args: str) -> tuple[int, list[str], str, str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE % (HEAVY,), json.dumps(args)], capture_output=True, text=True, timeout=120
    )
    lines = done.stderr.strip().splitlines()
    report = json.loads(lines[-1])
    return report["code"], report["heavy"], done.stdout, "\n".join(lines[:-1])


def _sympy_csv(spec: str, base: str | None, settings: list[str]) -> str:
    derivation, values, title = subject_and_base(spec, base)
    known = Vocabulary.of(derivation.symbols, title)
    parsed = [parse_setting(text, "--set", grid=True, known=known) for text in settings]
    out = io.StringIO()
    write_csv(sweep(derivation, parsed, values, title=title), out)
    return out.getvalue()


def _plain_csv(spec: str, base: str | None, settings: list[str]) -> str:
    header, table = plain_sweep.rows(spec, base, settings)
    out = io.StringIO()
    plain_sweep.write_csv(header, table, out)
    return out.getvalue()


def _grids(values: dict[str, int]) -> list[list[str]]:
    """A few grids over a model's own sizes: its width doubled, its layers from one, both at once."""
    grids = []
    if "d" in values:
        d = values["d"]
        grids.append([f"d={d}:{2 * d}:{d}"])
    if "N" in values:
        grids.append([f"N=1,2,{values['N']}"])
    if "d" in values and "N" in values and "V" in values:
        grids.append(["N=1:3", f"V={values['V']},{values['V'] + 64}"])
    return grids


@pytest.mark.parametrize("name", sorted(presets()))
def test_plain_sweep_of_each_preset_is_the_sympy_paths(name: str) -> None:
    config = presets()[name].config()
    try:
        counted = counting.read(config, f"preset {name}")
    except counting.Fallback:
        pytest.skip("the compiled path does not read this preset (composite): the sympy path sweeps it")
    taken = 0
    for grid in _grids(counted.values):
        try:
            ours = _plain_csv(name, None, grid)
        except counting.Fallback:
            continue
        assert ours == _sympy_csv(name, None, grid), grid
        taken += 1
    assert taken, f"{name}: no grid taken by the plain path"


def test_a_family_swept_from_a_model_of_it_is_the_sympy_paths() -> None:
    grid = ["d=1024:4096:1024", "N=24,36"]
    assert _plain_csv("qwen3", "qwen3-8b", grid) == _sympy_csv("qwen3", "qwen3-8b", grid)
    grid = ["N_dense=1,3,100", "N=2,61"]  # first_k_dense_replace past N: every layer dense, as count reads it
    assert _plain_csv("deepseek-v3", None, grid) == _sympy_csv("deepseek-v3", None, grid)


def test_a_family_with_a_list_and_a_single_value_is_the_sympy_paths() -> None:
    grid = ["d=2048,4096", "V=1000"]
    assert _plain_csv("llama", "llama-3-8b", grid) == _sympy_csv("llama", "llama-3-8b", grid)


@pytest.mark.parametrize(
    "settings",
    [
        ["d_ff=4*d", "d=1024,2048"],  # a relation
        ["d=1e3"],  # a number the formula parser reads
        ["h_kv=3,4"],  # h not divisible by h_kv: refused
        ["zz=1,2"],  # not a symbol
        ["d=0,1"],  # below a size's least value
        ["d=1,2", "d=3"],  # set twice
        [f"V={','.join(['7'] * (MAX_LISTED + 1))}"],
        [],
    ],
)
def test_what_the_plain_path_does_not_take_goes_to_the_sympy_path(settings: list[str]) -> None:
    with pytest.raises(counting.Fallback):
        plain_sweep.rows("qwen3-8b", None, settings)


@pytest.mark.parametrize(
    "args",
    [
        ("sweep", "qwen3-8b", "--set", "d=1024:4096:1024", "--set", "N=24,32", "--csv"),
        ("sweep", "qwen3", "--set", "N=24,32", "--from", "qwen3-8b", "--csv"),
        ("sweep", "deepseek-v3", "--set", "n=64,256", "--csv"),
    ],
)
def test_sweep_csv_imports_no_sympy(args) -> None:
    code, heavy, out, err = _run(*args)
    assert (code, heavy, err) == (0, [], "")
    settings = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    base = args[args.index("--from") + 1] if "--from" in args else None
    assert out == _sympy_csv(args[1], base, settings)


def test_sweep_csv_the_plain_path_does_not_take_prints_the_sympy_paths() -> None:
    code, heavy, out, _ = _run("sweep", "qwen3-8b", "--set", "d_ff=3*d", "--set", "d=1024,2048", "--csv")
    assert code == 0 and "sympy" in heavy
    assert out == _sympy_csv("qwen3-8b", None, ["d_ff=3*d", "d=1024,2048"])
    code, _, out, err = _run("sweep", "qwen3-8b", "--set", "h_kv=3,4", "--csv")
    assert code == 1 and out == "" and "not divisible" in err
