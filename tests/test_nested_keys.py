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


# moonshotai/Kimi-Linear-48B-A3B-Instruct's config.json: the KDA sizes and the layer layout (1-indexed) sit in
# linear_attn_config, which KimiLinearConfig prefers to its own linear_* keys
KIMI_FULL = [4, 8, 12, 16, 20, 24, 27]
KIMI_LINEAR = {
    "model_type": "kimi_linear",
    "num_hidden_layers": 27,
    "hidden_size": 2304,
    "num_attention_heads": 32,
    "first_k_dense_replace": 1,
    "linear_attn_config": {
        "full_attn_layers": KIMI_FULL,
        "kda_layers": [i for i in range(1, 28) if i not in KIMI_FULL],
        "head_dim": 128,
        "num_heads": 32,
        "short_conv_kernel_size": 4,
    },
}


def test_kimi_linear_reads_its_layout_from_linear_attn_config() -> None:
    """7 MLA layers (27 is one of them, not the default every-4th pattern's 24), 20 KDA layers; by hand:
    KDA q, k, v, o 4·2304·4096, conv 3·4096·4, gates 2·(2304·128 + 128·4096), dt_bias 4096, A_log 32, b_proj 2304·32,
    o_norm 128; MLA q_proj 2304·32·192, kv_a 2304·576, kv_a_layernorm 512, kv_b 512·32·256, o_proj 4096·2304."""
    model = read_config(KIMI_LINEAR, "kimi-linear-48b")
    kda = 4 * 2304 * 4096 + 3 * 4096 * 4 + 2 * (2304 * 128 + 128 * 4096) + 4096 + 32 + 2304 * 32 + 128
    mla = 2304 * 32 * 192 + 2304 * 576 + 512 + 512 * 32 * 256 + 4096 * 2304
    moe = 2304 * 256 + 3 * 256 * 2304 * 1024 + 3 * 2304 * 1024
    total = 20 * kda + 7 * mla + 26 * moe + 3 * 2304 * 9216 + 27 * 2 * 2304 + 2304 + 2 * 163840 * 2304
    assert model.counts.total == total == 49_122_675_072  # "48B total parameters"
    values = {symbol.name: value for symbol, value in model.values.items()}
    assert (values["N_full"], values["N_linear"], values["N_dense"]) == (7, 20, 1)


@pytest.mark.parametrize(
    "change",
    [
        {"linear_attn_config": {"full_attn_layers": [1, 3], "kda_layers": [2, 3, 4, 5]}},  # a layer in both: KDA
        {"linear_attn_config": {"full_attn_layers": [2], "kda_layers": [1, 3, 4, 5], "head_dim": 8, "num_heads": 2}},
        {"linear_attn_config": {"full_attn_layers": [2]}, "q_lora_rank": 16},  # one list alone: the default pattern
        {"layer_types": ["full_attention"] + ["linear_attention"] * 4, "linear_attn_config": {"kda_layers": [1]}},
        {"mlp_layer_types": ["sparse", "dense", "sparse", "sparse", "dense"], "attention_bias": True},
    ],
)
def test_kimi_linear_layouts_equal_transformers(change: dict) -> None:
    oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")
    small = {"model_type": "kimi_linear", "num_hidden_layers": 5, "hidden_size": 32, "num_attention_heads": 4}
    config = {
        **small,
        "linear_head_dim": 16,
        "linear_num_heads": 4,
        "num_experts": 8,
        "vocab_size": 64,
        "pad_token_id": 0,
        **change,
    }
    assert read_config(config, "t").counts.total == oracle.meta_total(config), f"{config} ({oracle.VERSIONS})"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"linear_attn_config": {"full_attn_layers": [0, 1], "kda_layers": [2, 3]}}, "number the layers from 1"),
        ({"linear_attn_config": {"full_attn_layers": [1], "kda_layers": [3]}}, "every layer must be full_attention"),
        (
            {"linear_attn_config": {"full_attn_layers": [1, 4], "kda_layers": [2, 3]}},
            r"from 1 to num_hidden_layers \(3\)",
        ),
        ({"linear_attn_config": {"full_attn_layers": [1], "kda_layers": [2, "3"]}}, "number the layers from 1"),
        ({"linear_attn_config": {"head_dim": "128"}}, "key 'linear_attn_config.head_dim' must be an integer"),
        ({"linear_attn_config": 4}, "key 'linear_attn_config' must be a JSON object"),
    ],
)
def test_kimi_linear_bad_layouts_are_refused(change: dict, message: str) -> None:
    config = {"model_type": "kimi_linear", "num_hidden_layers": 3, "hidden_size": 32, "num_attention_heads": 4}
    with pytest.raises(LlmcountError, match=message):
        read_config({**config, **change}, "t")
