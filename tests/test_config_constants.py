"""A config is read as transformers reads it: NaN, Infinity and -Infinity are floats (transformers' own configs hold
them), accepted under a key no record reads and refused, by the key's name, in a key that is read."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from refusal import assert_refused, run
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.sources import load

# The configs transformers writes for these classes hold time_step_limit = (0.0, inf); to_dict() and json.dumps, as
# older save_pretrained wrote them, spell it Infinity.
HYBRIDS = ["mamba2", "falcon_h1", "nemotron_h", "granitemoehybrid"]


@pytest.mark.parametrize("model_type", HYBRIDS)
def test_the_configs_transformers_writes_with_infinity_are_read(tmp_path: Path, model_type: str) -> None:
    from transformers import AutoConfig

    config = AutoConfig.for_model(model_type)
    text = json.dumps(config.to_dict())
    assert "Infinity" in text  # what the test is about: the file holds the bare constant
    assert json.loads(text)["time_step_limit"][1] == math.inf  # and transformers' json reads it as a float
    written = tmp_path / "config.json"
    written.write_text(text)
    current = tmp_path / "current.json"  # what transformers 5.x writes: {"__float__": "Infinity"}
    current.write_text(config.to_json_string())
    assert load(str(written)).counts.total == load(str(current)).counts.total
    result = run("count", str(written))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("model_type", HYBRIDS)
def test_a_config_piped_on_stdin_with_infinity_is_read(model_type: str) -> None:
    from transformers import AutoConfig

    text = json.dumps(AutoConfig.for_model(model_type).to_dict())
    result = CliRunner().invoke(app, ["count", "-"], input=text)
    assert result.exit_code == 0, result.output


LLAMA = {
    "model_type": "llama",
    "vocab_size": 1000,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}


def _with(key: str, constant: str) -> str:
    return json.dumps(LLAMA).replace(f'"{key}": {LLAMA[key]}', f'"{key}": {constant}')


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999"])
@pytest.mark.parametrize("key", ["hidden_size", "num_hidden_layers", "vocab_size", "num_key_value_heads"])
def test_a_non_finite_value_in_a_key_that_is_read_is_refused_by_name(tmp_path: Path, key: str, constant: str) -> None:
    config = tmp_path / "config.json"
    config.write_text(_with(key, constant))
    assert_refused(run("count", str(config)), f"'{key}'", "config.json")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_value_in_a_read_list_is_refused_by_name(tmp_path: Path, constant: str) -> None:
    config = tmp_path / "config.json"
    text = json.dumps({**LLAMA, "model_type": "qwen2", "layer_types": ["full_attention", "x"]})
    config.write_text(text.replace('"x"', constant))
    assert_refused(run("count", str(config)), "'layer_types'")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_float_key_that_is_read_is_refused_by_name(tmp_path: Path, constant: str) -> None:
    # LFM2 computes its MLP width from the float block_ffn_dim_multiplier, as Lfm2MLP does.
    from transformers import AutoConfig

    values = {**AutoConfig.for_model("lfm2").to_dict(), "block_auto_adjust_ff_dim": True}
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**values, "block_ffn_dim_multiplier": "x"}).replace('"x"', constant))
    assert_refused(run("count", str(config)), "'block_ffn_dim_multiplier'", "finite")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_value_in_a_key_no_record_reads_is_accepted(tmp_path: Path, constant: str) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**LLAMA, "rms_norm_eps": "x", "extra": {"limit": ["x"]}}).replace('"x"', constant))
    result = run("count", str(config))
    assert result.exit_code == 0, result.output
    assert "nan" not in result.stdout.lower() and "inf" not in result.stdout.lower()
