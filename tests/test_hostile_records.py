"""Hostile inputs against the features of composite configs, nested keys, float expressions, cached discovered
records, writeups and state-layer costs: each is a result or one clean line, never a traceback or a hang."""

from __future__ import annotations

import pytest
from refusal import assert_refused, run

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import read_config

LFM2 = {
    "model_type": "lfm2",
    "hidden_size": 64,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
}


@pytest.mark.parametrize("family", records.families(), ids=lambda f: f.name)
def test_every_record_text_a_message_quotes_is_one_line(family: records.Family) -> None:
    texts = [t for spec in family.symbols for t in (spec.adjust_text, spec.default_text)]
    texts += [t for rule in (*family.checks, *family.refuse) for t in (rule.text, rule.message)]
    assert all("\n" not in text for text in texts)


@pytest.mark.parametrize(
    "bad",
    [
        {"intermediate_size": 1},
        {"block_ff_dim": 0},
        {"block_ff_dim": -5},
        {"block_ffn_dim_multiplier": -5},
        {"block_ffn_dim_multiplier": 1e-300},
    ],
    ids=str,
)
def test_an_adjusted_width_refused_quotes_its_multiline_rule_on_one_line(bad: dict, tmp_path) -> None:
    with pytest.raises(LlmcountError) as caught:
        read_config({**LFM2, **bad}, "c.json")
    assert "\n" not in str(caught.value) and "lfm2" in str(caught.value)
    path = tmp_path / "config.json"
    path.write_text(__import__("json").dumps({**LFM2, **bad}))
    result = run("count", str(path))
    assert_refused(result, "config.json", "lfm2")
    assert "\\n" not in result.stderr
