"""Alias records: a config type that AutoModelForCausalLM builds another family's class from shares that family's
record, with its own config class's defaults and key names (families/README.md, "Aliases"). Their counts are checked
against transformers with every record (tests/test_records.py); here, the format's rules."""

from __future__ import annotations

import pytest

from llmcount.formulas import records
from llmcount.formulas.config import read_config
from llmcount.formulas.expressions import RecordError

ALIASES = {"sarvam_moe": "glm4_moe", "sarvam_mla": "deepseek_v3", "exaone": "llama"}


@pytest.mark.parametrize(("alias", "shared"), sorted(ALIASES.items()))
def test_an_alias_has_the_shared_records_terms_and_its_own_name(alias: str, shared: str) -> None:
    mine, theirs = records.family(alias), records.family(shared)
    assert (mine.name, mine.shares, theirs.shares) == (alias, shared, "")
    assert [c.term for c in mine.choices] == [c.term for c in theirs.choices]
    assert mine.attention == theirs.attention
    assert mine.example == ""  # the shared record's preset is another family's model


def test_defaults_replace_the_shared_records_by_key() -> None:
    """SarvamMoEConfig: head_dim 64 for both symbols read from head_dim, 4 key/value heads, q/k norms on."""
    config = {"model_type": "sarvam_moe", "num_hidden_layers": 1, "vocab_size": 10, "hidden_size": 8}
    config |= {"num_attention_heads": 4, "num_experts": 2, "num_experts_per_tok": 1, "first_k_dense_replace": 1}
    values = {s.name: v for s, v in read_config(config, "x").values.items()}
    assert (values["h_d"], values["d_rope"], values["h_kv"], values["d_ff"]) == (64, 64, 4, 8192)
    # by hand: one dense layer of d = 8 with 4 query and 4 key/value heads of 64, q_norm and k_norm of 64
    attention = 8 * 4 * 64 + 2 * (8 * 4 * 64) + 4 * 64 * 8 + 2 * 64
    total = 10 * 8 + attention + 3 * 8 * 8192 + 2 * 8 + 8 + 8 * 10
    assert read_config(config, "x").counts.total == total
    assert records.family("glm4_moe").keys["use_qk_norm"] is False  # the shared record keeps its own


def test_an_alias_reads_its_config_classs_key_names() -> None:
    """ExaoneConfig's attribute_map: num_layers is num_hidden_layers."""
    config = {"model_type": "exaone", "num_layers": 3, "vocab_size": 10, "hidden_size": 8, "intermediate_size": 4}
    config |= {"num_attention_heads": 8}  # 8 key/value heads by ExaoneConfig's default
    assert read_config(config, "x").values[records.BY_NAME["N"].symbol] == 3


ALIAS = {"model_type": "toy", "title": "Toy", "alias": "llama"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"terms": []}, "an alias shares llama's terms"),
        ({"keys": {"attention_bias": True}}, "an alias shares llama's keys"),
        ({"alias": "no_such_type"}, "alias 'no_such_type' is not another bundled record"),
        ({"alias": "sarvam_moe"}, "alias 'sarvam_moe' is itself an alias"),
        ({"defaults": {"rope_theta": 1.0}}, r"\[defaults\] rope_theta: llama's record does not read it"),
        ({"defaults": {"hidden_size": 64}}, r"\[defaults\] hidden_size: required by llama's record"),
        (
            {"defaults": {"num_key_value_heads": True}},
            r"\[defaults\] num_key_value_heads: an integer, an expression or .none.",
        ),
    ],
)
def test_a_bad_alias_is_refused_naming_the_field(change: dict, message: str) -> None:
    with pytest.raises(RecordError, match=message):
        records.parse_record({**ALIAS, **change}, "toy.toml")


def test_an_alias_of_itself_is_refused() -> None:
    with pytest.raises(RecordError, match="alias 'llama' is not another bundled record"):
        records.parse_record({**ALIAS, "model_type": "llama"}, "llama.toml")
