"""Text output fits the terminal: COLUMNS=80 over every bundled preset, lines of at most 80 characters."""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.presets import presets
from llmcount.renderers.fit import fit_table, wrap_lines

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent


def run(*args, columns=80):
    result = runner.invoke(app, list(args), env={"COLUMNS": str(columns)})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 0, result.stderr
    return result.stdout


def widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())  # characters: '·' and '²' are one column


@pytest.mark.parametrize("preset", sorted(presets()))
def test_count_fits_80_columns(preset):
    out = run("count", preset)
    assert widest(out) <= 80, "\n".join(line for line in out.splitlines() if len(line) > 80)
    # nothing is lost: every component and its exact count are still there
    data = json.loads(run("count", preset, "--json"))
    for component in data["components"]:
        assert re.search(rf"^ *{re.escape(component['path'])}\s.*{component['count']:,}", out, re.M)
    assert f"{data['total']:,}" in out


@pytest.mark.parametrize("columns", [80, 90, 100, 120])
def test_count_follows_columns(columns):
    assert widest(run("count", "deepseek-v3", columns=columns)) <= columns


def test_a_wide_terminal_keeps_one_line_per_component():
    out = run("count", "deepseek-v3", columns=300)
    assert widest(out) > 100
    assert re.search(r"^moe/experts\s+3·d·d_moe·n·\(N - N_dense\)\s+653,908,770,816", out, re.M)
    assert sum(line.startswith("P = ") for line in out.splitlines()) == 1


def test_readme_example_is_what_80_columns_print():
    readme = (ROOT / "README.md").read_text("utf-8")
    block = readme.split("`llmcount count qwen3-32b`:\n\n```\n", 1)[1].split("```", 1)[0]
    assert run("count", "qwen3-32b") == block


def test_several_models_fit_with_long_names(tmp_path):
    folder = tmp_path / ("a-very-long-model-name-that-would-not-fit-in-any-terminal-" * 2)
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(presets()["deepseek-v3"].config()))
    out = run("count", str(folder), "deepseek-v3", "qwen3-235b-a22b")
    assert widest(out) <= 80
    assert "…" in out and "671,026,404,352" in out


def test_wrap_breaks_at_spaces_then_after_products():
    assert wrap_lines("3·d·d_moe·n·(N - N_dense)", 16, "  ") == ["3·d·d_moe·n·(N -", "  N_dense)"]
    assert wrap_lines("N·h·r_q·(d_nope", 10, "  ") == ["N·h·r_q·", "  (d_nope"]
    assert wrap_lines("abcdefghijklmnop", 10, "  ") == ["abcdefghij", "  klmnop"]
    assert wrap_lines("short", 10) == ["short"] and wrap_lines("x" * 50, None) == ["x" * 50]


def test_fit_table_wraps_one_column():
    rows = [["a", "one two three four", "1"], ["bb", "x", "22"]]
    out = fit_table(rows, "llr", 16, 1)
    assert widest(out) <= 16 and out.splitlines()[0].startswith("a ") and "four" in out
    assert fit_table(rows, "llr", None, 1) == fit_table(rows, "llr", 200, 1)


def test_list_fits_80_columns() -> None:
    result = runner.invoke(app, ["list"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert max(map(len, result.stdout.splitlines())) <= 80
    assert "dense (" in result.stdout and "moe (" in result.stdout  # grouped by kind


# --- compare: models side by side as far as they fit, the rest in blocks below ---------------------------------

COMPARED = ["qwen3-8b", "llama-3-8b", "mistral-7b", "deepseek-v3", "gpt2", "gpt-oss-120b"]


@pytest.mark.parametrize("columns", [60, 80, 100, 120])
@pytest.mark.parametrize("components", [False, True], ids=["groups", "components"])
def test_compare_fits_columns(columns, components):
    options = ["--components"] if components else []
    out = run("compare", *COMPARED, *options, columns=columns)
    assert widest(out) <= columns, "\n".join(line for line in out.splitlines() if len(line) > columns)
    # nothing is lost: every model's name and exact total are still there
    for name in COMPARED:
        total = json.loads(run("count", name, "--json"))["total"]
        assert f"{total:,}" in out, name
        assert re.search(rf"(^|\s){re.escape(name)}(\s|$)", out, re.M), name


def test_compare_in_a_wide_terminal_is_one_table():
    out = run("compare", *COMPARED, columns=400)
    assert widest(out) > 80
    assert sum(line.startswith("total ") for line in out.splitlines()) == 1


def test_compare_blocks_repeat_the_row_labels():
    out = run("compare", *COMPARED, columns=80)
    blocks = sum(line.startswith("family ") for line in out.splitlines())
    assert blocks >= 2 and sum(line.startswith("total ") for line in out.splitlines()) == blocks


def test_compare_wraps_a_long_model_name(tmp_path):
    folder = tmp_path / ("a-very-long-model-name-that-would-not-fit-" * 3)
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(presets()["qwen3-8b"].config()))
    out = run("compare", str(folder), "gpt2", columns=80)
    assert widest(out) <= 80
    assert "8,190,735,360" in out and "124,439,808" in out  # Qwen3-8B and GPT-2, as transformers counts them


@pytest.mark.parametrize(
    "args",
    [
        ("flops", "deepseek-v3", "--causal", "--training"),
        ("flops", "mistral-7b", "--seq", "32768", "--causal"),
        ("flops", "gpt-oss-120b", "--seq", "8192", "--causal"),
        ("memory", "gpt-oss-120b", "--seq", "131072"),
        ("memory", "mistral-7b", "--seq", "32768"),
        ("memory", "deepseek-v3", "--group-size", "128", "--dtype", "int4"),
        ("memory", "qwen3-32b", "--training", "--zero", "3", "--dp", "8", "--lora", "16"),
        ("memory", "deepseek-v3", "--training", "--tp", "8", "--pp", "4", "--ep", "8", "--dp", "8"),
    ],
    ids=" ".join,
)
def test_costs_fit_80_columns(args):
    out = run(*args)
    assert widest(out) <= 80, "\n".join(line for line in out.splitlines() if len(line) > 80)


def test_flops_read_in_human_units():
    out = run("flops", "llama-3-8b", "--seq", "2048")
    assert "e+" not in out  # 4.40T, not 4.398e+12
    assert re.search(r"^forward\s+[\d,]+\s+\d+\.\d\dT$", out, re.M)


@pytest.mark.parametrize(
    "args",
    [
        ("formula", "deepseek_v3"),
        ("formula", "qwen3_next"),
        ("formula", "deepseek_v3", "--flops"),
        ("check", "deepseek-v3", "12*N*d**2"),
        ("solve", "qwen3", "--target", "7B", "--for", "d", "--from", "qwen3-8b"),
    ],
    ids=" ".join,
)
def test_formulas_wrap_at_80_columns(args):
    out = run(*args)
    assert widest(out) <= 80, "\n".join(line for line in out.splitlines() if len(line) > 80)
    wide = run(*args, columns=1000)
    assert " ".join(out.split()) == " ".join(wide.split())  # the same text, only broken into lines
