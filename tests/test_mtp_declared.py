"""``--mtp`` on a record whose config class declares multi-token-prediction layers (num_nextn_predict_layers,
num_mtp_layers, mtp_num_hidden_layers) but that has no [mtp] table is refused saying so (the layout of those layers in
its checkpoints is not described yet), not as a model without MTP layers; a record whose model class builds them
(MiMo's remote code) says they are counted already; a record whose class declares none says it has none."""

from __future__ import annotations

import json
import warnings

import pytest
from refusal import run

from llmcount.formulas import mtp, records

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

# the records whose config class declares MTP layers and that have no [mtp] table (transformers 5.24)
UNDESCRIBED = ["bailing_hybrid", "deepseek_v4", "inkling_text", "mellum", "nemotron_h"]


def test_the_records_whose_class_declares_mtp_layers_have_a_table_or_are_these() -> None:
    """Every record whose [checked] keys (its config class's) hold a key declaring MTP layers has an [mtp] table, or
    is one of UNDESCRIBED, whose --mtp says why it is refused."""
    declaring = [
        name for name in records.names() if set(mtp.DECLARING_KEYS) & (records.family(name).checked_keys or set())
    ]
    assert sorted(name for name in declaring if records.family(name).mtp is None) == UNDESCRIBED


def _defaults(tmp_path, model_type: str) -> str:
    from transformers import AutoConfig

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = {**AutoConfig.for_model(model_type).to_dict(), "model_type": model_type}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


@pytest.mark.parametrize("model_type", ["deepseek_v4", "nemotron_h"])
def test_mtp_of_a_class_that_declares_it_without_a_table_is_refused_saying_so(tmp_path, model_type: str) -> None:
    result = run("count", _defaults(tmp_path, model_type), "--mtp")
    assert result.exit_code == 1 and result.stdout == "", result.output
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1, result.stderr
    assert f"({model_type}) declares multi-token-prediction layers (num_nextn_predict_layers" in line
    assert "its record has no [mtp] table" in line


def test_mtp_of_a_class_that_declares_none_says_it_has_none(tmp_path) -> None:
    result = run("count", _defaults(tmp_path, "llama"), "--mtp")
    assert result.exit_code == 1 and "Llama (llama) has no multi-token-prediction layers" in result.stderr


def test_mtp_layers_the_model_class_builds_are_counted_already(tmp_path) -> None:
    config = {"model_type": "mimo", "num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128}
    config |= {"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "num_nextn_predict_layers": 1}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("count", str(path), "--mtp")
    assert result.exit_code == 1 and result.stdout == "", result.output
    assert "num_nextn_predict_layers of them, are built by its model class and counted in its total" in result.stderr
