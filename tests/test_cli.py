"""Every command through typer's CliRunner: output forms, --json parses, exit codes."""

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from llmcount.cli import app, load_commands
from llmcount.formulas import records
from llmcount.presets import presets

runner = CliRunner()


def run(*args):
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_every_command_has_help_with_an_example():
    commands = load_commands()
    assert {"count", "formula", "list"} <= set(commands)
    for name in commands:
        result = run(name, "--help")
        assert result.exit_code == 0
        assert "Example: llmcount " + name in result.stdout.replace("\n", " ").replace("  ", " ")


def test_top_level_help_states_the_activated_definition():
    out = run("--help").stdout
    assert "k/n of the" in out and "shared experts count fully" in out


def test_count_table_shows_exact_and_human_sizes():
    # Qwen3-32B: 32,762,123,264 (the sum of its safetensors index, bf16).
    out = run("count", "qwen3-32b").stdout
    assert "32,762,123,264" in out and "32.76B" in out
    assert "attention/q_norm" in out and "head/lm_head" in out


def test_count_by_hub_id_of_a_preset():
    out = run("count", "Qwen/Qwen3-32B", "--json").stdout
    assert json.loads(out)["total"] == 32_762_123_264


def test_count_json_shape():
    data = json.loads(run("count", "qwen3-235b-a22b", "--json").stdout)
    assert set(data) >= {"model", "family", "total", "activated", "embedding", "non_embedding", "components", "values"}
    assert data["family"] == "qwen3_moe"
    assert data["total"] == 235_093_634_560
    assert all(isinstance(data[key], int) for key in ("total", "activated", "embedding", "non_embedding"))
    assert data["total"] == sum(c["count"] for c in data["components"])
    assert data["non_embedding"] == data["total"] - data["embedding"]
    assert data["activated"] < data["total"]
    assert "k/n" in data["definitions"]["activated"]
    groups = [c["path"].split("/")[0] for c in data["components"]]
    order = ["embedding", "attention", "moe", "mlp", "norms", "head"]
    assert groups == sorted(groups, key=order.index), "components are in reader's order"


def test_count_a_file_and_a_folder(tmp_path):
    config = presets()["llama-2-7b"].config()
    folder = tmp_path / "Llama-2-7b-hf"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    by_file = json.loads(run("count", str(folder / "config.json"), "--json").stdout)
    by_folder = json.loads(run("count", str(folder), "--json").stdout)
    # Llama-2-7B: 6,738,415,616 parameters (Meta's published count for the HF checkpoint).
    assert by_file["total"] == by_folder["total"] == 6_738_415_616
    assert by_folder["model"] == "Llama-2-7b-hf"


@pytest.mark.parametrize("family", records.names())
@pytest.mark.parametrize("fmt", ["text", "markdown", "latex"])
def test_formula_of_every_family_in_every_format(family, fmt):
    result = run("formula", family, "--format", fmt)
    assert result.exit_code == 0
    assert "N" in result.stdout


def test_formula_json_is_sympy_parsable_and_matches_count():
    import sympy

    data = json.loads(run("formula", "qwen3", "--json").stdout)
    assert set(data) >= {"total", "activated", "per_layer", "latex"}
    values = json.loads(run("count", "qwen3-32b", "--json").stdout)["values"]
    symbols = {name: sympy.Symbol(name) for name in data["symbols"]}  # N is not sympy's N()
    total = sympy.parse_expr(data["total"], local_dict=symbols)
    assert total.subs({symbols[k]: v for k, v in values.items()}) == 32_762_123_264


def test_formula_activated_text_of_a_preset():
    out = run("formula", "qwen3-235b-a22b", "--activated", "--format", "text").stdout
    assert "activated" in out and "d_moe·k" in out


def test_list_shows_families_and_presets_with_published_sizes():
    out = run("list").stdout
    for name in ("qwen3-32b", "deepseek-v3", "gpt2", "deepseek_v2"):
        assert name in out
    assert "32,762,123,264" in out
    data = json.loads(run("list", "--json").stdout)
    assert {f["name"] for f in data["families"]} == set(records.names())
    assert {p["name"] for p in data["presets"]} == set(presets())


def test_python_dash_m_and_no_heavy_imports():
    code = (
        "import sys, runpy; sys.argv = ['llmcount', 'count', 'gpt2', '--json'];\n"
        "try:\n    runpy.run_module('llmcount', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'transformers', 'numpy', 'matplotlib') if m in sys.modules]\n"
        "print('HEAVY', heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert '"total": 124439808' in out  # GPT-2: 124,439,808 parameters (HF model card)
    assert "HEAVY []" in out
