"""Keys inside nested config objects (DBRX's attn_config and ffn_config), read as dotted keys with the sub-config
classes' defaults; a bad sub-object or a bad value inside one is refused naming it."""

from __future__ import annotations

import pytest

from llmcount.errors import LlmcountError
from llmcount.formulas.config import read_config

# databricks/dbrx-base's config.json, the sizes (published with the model: 132B parameters, 36B active)
DBRX = {
    "model_type": "dbrx",
    "d_model": 6144,
    "n_heads": 48,
    "n_layers": 40,
    "vocab_size": 100352,
    "max_seq_len": 32768,
    "attn_config": {"clip_qkv": 8, "kv_n_heads": 8, "rope_theta": 500000},
    "ffn_config": {"ffn_hidden_size": 10752, "moe_num_experts": 16, "moe_top_k": 4},
}


def test_dbrx_published_sizes() -> None:
    """By hand, per layer: Wqkv 6144·(6144 + 2·8·128), out_proj 6144², router 6144·16, experts 3·16·6144·10752,
    two norms 2·6144; embedding and head 2·100352·6144; final norm 6144. Activated: 4 of the 16 experts."""
    layer = 6144 * (6144 + 2 * 8 * 128) + 6144**2 + 6144 * 16 + 3 * 16 * 6144 * 10752 + 2 * 6144
    total = 40 * layer + 2 * 100352 * 6144 + 6144
    counts = read_config(DBRX, "dbrx-base").counts
    assert counts.total == total == 131_596_523_520  # "132B total parameters"
    assert counts.activated == total - 40 * 3 * 12 * 6144 * 10752 == 36_469_708_800  # "36B active"


def test_absent_sub_objects_take_the_sub_config_classes_defaults() -> None:
    """DbrxAttentionConfig: kv_n_heads 1; DbrxFFNConfig: 4 experts of 3584, top 1."""
    base = {"model_type": "dbrx", "d_model": 64, "n_heads": 4, "n_layers": 1, "vocab_size": 10}
    per_layer = 64 * (64 + 2 * 1 * 16) + 64 * 64 + 64 * 4 + 3 * 4 * 64 * 3584 + 2 * 64
    expected = per_layer + 2 * 10 * 64 + 64
    for config in (base, {**base, "attn_config": None, "ffn_config": None}, {**base, "ffn_config": {}}):
        assert read_config(config, "c.json").counts.total == expected
    # a literal top-level "ffn_config.moe_num_experts" is not the nested key
    assert read_config({**base, "ffn_config.moe_num_experts": 9}, "c.json").counts.total == expected


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"attn_config": 5}, "key 'attn_config' must be a JSON object, got int 5"),
        ({"ffn_config": [1]}, "key 'ffn_config' must be a JSON object, got a list"),
        ({"ffn_config": {"moe_num_experts": "16"}}, "key 'ffn_config.moe_num_experts' must be an integer"),
        ({"attn_config": {"kv_n_heads": 0}}, "key 'attn_config.kv_n_heads' must be positive"),
        ({"ffn_config": {"moe_top_k": 17}}, r"ffn_config.moe_top_k \(17\) is larger than ffn_config.moe_num_experts"),
    ],
)
def test_bad_nested_values_are_refused_naming_the_dotted_key(change: dict, message: str) -> None:
    with pytest.raises(LlmcountError, match=message):
        read_config({**DBRX, **change}, "c.json")


def test_a_condition_reads_a_dotted_key() -> None:
    from llmcount.formulas.expressions import Unknown, condition, condition_names

    test = condition("ffn_config.moe_top_k > 1 and n > 2", "t")
    assert test({"ffn_config.moe_top_k": 2, "n": 3}) is True
    assert condition_names("ffn_config.moe_top_k > 1 and n > 2") == ["ffn_config.moe_top_k", "n"]
    with pytest.raises(Unknown):
        test({"n": 3})
