"""Widths the modeling code computes with floats and rounds (LFM2's MLP): the record's expression computes them as
the modeling code's Python does, so the count equals transformers' even where float rounding differs from exact
arithmetic (1.15 · 100 is 114.99999999999999 in floats: int() gives 114, not 115)."""

from __future__ import annotations

import pytest

from llmcount.errors import LlmcountError
from llmcount.formulas.config import RuleRefusal, read_config
from llmcount.formulas.expressions import RecordError, condition

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")


def test_the_functions_round_as_python_does() -> None:
    assert condition("int(m * x)", "t")({"m": 1.15, "x": 100}) == 114  # the float product is just below 115
    assert condition("int(2 * x / 3)", "t")({"x": 12288}) == 8192
    assert condition("int(-7 / 2)", "t")({}) == -3  # toward zero
    assert condition("floor(-7 / 2)", "t")({}) == -4
    assert condition("ceil(7 / 2)", "t")({}) == 4
    assert condition("floor(sqrt(n))", "t")({"n": 24}) == 4
    assert condition("isqrt(n)", "t")({"n": 10**30 - 1}) == 10**15 - 1
    assert condition("m * ((x + m - 1) // m)", "t")({"m": 256, "x": 8193}) == 8448
    # xLSTM's round_up_to_next_multiple_of(64.5, 64): float floor division, 64 (a ceiling would give 128)
    assert condition("int(((x + m - 1) // m) * m)", "t")({"m": 64, "x": 64.5}) == 64


@pytest.mark.parametrize(
    ("text", "values", "error"),
    [
        ("int(x)", {"x": "12"}, TypeError),
        ("int(x)", {"x": float("nan")}, ValueError),
        ("int(x * 2)", {"x": float("inf")}, ValueError),
        ("int(x * y)", {"x": 1e300, "y": 1e300}, OverflowError),
        ("x % y", {"x": 1.5, "y": 1}, TypeError),  # % stays integer-only
        ("isqrt(x)", {"x": 2.0}, TypeError),
        ("x * 2", {"x": 2**70}, OverflowError),
    ],
)
def test_bad_operands_raise(text: str, values: dict, error: type) -> None:
    with pytest.raises(error):
        condition(text, "t")(values)


def test_only_the_listed_functions_may_be_called() -> None:
    with pytest.raises(RecordError, match="not round"):
        condition("round(x)", "t")
    with pytest.raises(RecordError, match="not int"):
        condition("int(x, 2)", "t")
    with pytest.raises(RecordError, match="not max"):
        condition("max(x, y, z)", "t")


def test_min_and_max_of_a_list() -> None:
    """Kimi Linear's 1-indexed layer lists must lie in 1..N: min(x) and max(x) of a list, min(a, b) of two values."""
    in_range = condition("len(x) == 0 or (min(x) >= 1 and max(x) <= N)", "t")
    assert in_range({"x": [], "N": 3}) and in_range({"x": [3, 1], "N": 3})
    assert not in_range({"x": [0, 2], "N": 3}) and not in_range({"x": [1, 4], "N": 3})
    assert condition("min(a, b)", "t")({"a": 2, "b": 5}) == 2


LFM2 = {
    "model_type": "lfm2",
    "num_hidden_layers": 2,
    "vocab_size": 32,
    "hidden_size": 16,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "layer_types": ["conv", "full_attention"],
}


@pytest.mark.parametrize("multiplier", [1.0, 1.15, 1.3, 0.7, 2])
@pytest.mark.parametrize("multiple_of", [1, 7, 256])
@pytest.mark.parametrize("size", [150, 100, 12288])
def test_lfm2_mlp_width_equals_transformers(multiplier, multiple_of: int, size: int) -> None:
    config = {
        **LFM2,
        "intermediate_size": size,
        "block_ffn_dim_multiplier": multiplier,
        "block_multiple_of": multiple_of,
    }
    assert read_config(config, "t").counts.total == oracle.meta_total(config), f"{config} ({oracle.VERSIONS})"


def test_lfm2_width_where_floats_and_exact_arithmetic_differ() -> None:
    """int(2 · 150 / 3) = 100, int(1.15 · 100) = 114 in floats (exactly: 115), a multiple of 1: d_ff = 114."""
    config = {**LFM2, "intermediate_size": 150, "block_ffn_dim_multiplier": 1.15, "block_multiple_of": 1}
    model = read_config(config, "t")
    assert model.values[next(s for s in model.values if s.name == "d_ff")] == 114
    assert model.counts.total == oracle.meta_total(config), oracle.VERSIONS


@pytest.mark.parametrize(
    "switches",
    [
        {"block_auto_adjust_ff_dim": False},
        {"block_ff_dim": 300},
        {"tie_embedding": False},
        {"conv_bias": True},
        {"full_attn_idxs": [1]},
    ],
)
def test_lfm2_switches_equal_transformers(switches: dict) -> None:
    config = {**{k: v for k, v in LFM2.items() if k != "layer_types" or "full_attn_idxs" not in switches}, **switches}
    assert read_config(config, "t").counts.total == oracle.meta_total(config), f"{config} ({oracle.VERSIONS})"


def test_a_width_the_model_cannot_have_is_refused() -> None:
    config = {**LFM2, "intermediate_size": 1, "block_auto_adjust_ff_dim": True}  # int(2 / 3) = 0
    with pytest.raises(RuleRefusal, match="intermediate_size"):
        read_config(config, "t")
    with pytest.raises(RuleRefusal, match="block_ffn_dim_multiplier must be a number, got null"):
        read_config({**LFM2, "block_ffn_dim_multiplier": None}, "t")  # transformers 5.23 refuses it too
    with pytest.raises(LlmcountError, match="'block_ffn_dim_multiplier' must be a number"):
        read_config({**LFM2, "block_ffn_dim_multiplier": "1.3"}, "t")


DOGE = {
    "model_type": "doge",
    "num_hidden_layers": 2,
    "vocab_size": 32,
    "hidden_size": 16,
    "intermediate_size": 24,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "is_moe": True,
    "num_experts_per_tok": 2,
}


@pytest.mark.parametrize("experts", [4, 10, 16, 17, 24, 99, 16384])
def test_doge_cdmoe_router_width_equals_transformers(experts: int) -> None:
    """DogeCDMoE's router has 2 · floor(sqrt(num_experts)) outputs: 2 · 4 for 24 experts, 2 · 128 for 16384."""
    config = {**DOGE, "num_experts": experts}
    model = read_config(config, "t")
    assert model.counts.total == oracle.meta_total(config), f"{config} ({oracle.VERSIONS})"
    router = next(c for c in model.counts.components if c.path == "moe/router_gate")
    assert router.count == 2 * 16 * 2 * {4: 2, 10: 3, 16: 4, 17: 4, 24: 4, 99: 9, 16384: 128}[experts]


def test_doge_cdmoe_activated_counts_k_of_n_expert_rows() -> None:
    config = {**DOGE, "num_experts": 24}
    counts = read_config(config, "t").counts
    assert counts.total - counts.activated == 2 * 2 * (24 - 2) * 16  # 2 layers, down_embed and up_embed, 22 rows


XLSTM = {"model_type": "xlstm", "num_blocks": 2, "vocab_size": 32, "num_heads": 2}


@pytest.mark.parametrize("size", [64, 100, 4096])
@pytest.mark.parametrize(
    "factors",
    [
        {},
        {"qk_dim_factor": 0.3, "v_dim_factor": 1.5, "ffn_proj_factor": 1.3, "ffn_round_up_to_multiple_of": 7},
        {"ffn_proj_factor": 4.0, "ffn_round_up_to_multiple_of": 1, "weight_mode": "fused", "use_bias": True},
        {"qk_dim_factor": 0.25, "use_bias": True},
    ],
)
def test_xlstm_widths_equal_transformers(size: int, factors: dict) -> None:
    """int(d · qk_dim_factor), int(d · v_dim_factor) and the feed-forward width rounded up by a float floor division
    (4096 · 2.667 = 10924.03 -> 10,944), for both weight modes."""
    config = {**XLSTM, "hidden_size": size, **factors}
    try:
        got = read_config(config, "t").counts.total
    except RuleRefusal:  # value heads that do not split (int(100 · 1.5) = 150 over 2 heads does)
        pytest.skip("refused for a stated reason")
    assert got == oracle.meta_total(config), f"{config} ({oracle.VERSIONS})"


XMOD = {
    "model_type": "xmod",
    "num_hidden_layers": 2,
    "vocab_size": 32,
    "hidden_size": 16,
    "num_attention_heads": 4,
    "intermediate_size": 24,
    "max_position_embeddings": 20,
}


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"languages": ["en_XX", "de_DE", "fr_XX"]},
        {"languages": ["en_XX", "de_DE", "en_XX"]},  # one adapter per distinct name (a ModuleDict)
        {"languages": ["en_XX", "de_DE"], "adapter_reduction_factor": 3, "adapter_layer_norm": True, "pre_norm": True},
        {"languages": ["en_XX"], "tie_word_embeddings": False},
    ],
)
def test_xmod_adapters_per_language_equal_transformers(change: dict) -> None:
    config = {**XMOD, **change}
    assert read_config(config, "t").counts.total == oracle.meta_total(config), f"{config} ({oracle.VERSIONS})"


def test_xmod_counts_distinct_languages_and_refuses_other_lists() -> None:
    """Two layers, each with n_lang adapters of 16·8 + 8 + 8·16 + 16 = 280 parameters."""
    one = read_config({**XMOD, "languages": ["a"]}, "t").counts.total
    three = read_config({**XMOD, "languages": ["a", "b", "a", "c"]}, "t").counts.total
    assert three - one == 2 * 2 * 280
    with pytest.raises(LlmcountError, match="key 'languages' must be positive, got 0"):  # no adapter to run
        read_config({**XMOD, "languages": []}, "t")
    with pytest.raises(LlmcountError, match="key 'languages' must be a list of names"):
        read_config({**XMOD, "languages": [1, 2]}, "t")
    with pytest.raises(LlmcountError, match="key 'languages' must be a list of names"):
        read_config({**XMOD, "languages": "en_XX"}, "t")


LAGUNA = {
    "model_type": "laguna",
    "num_hidden_layers": 3,
    "hidden_size": 32,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "vocab_size": 64,
    "moe_intermediate_size": 8,
    "shared_expert_intermediate_size": 12,
    "intermediate_size": 16,
}


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"num_attention_heads_per_layer": [8, 2, 4]},
        {"num_attention_heads_per_layer": [2, 6, 2], "gating": False},
        {"num_attention_heads_per_layer": [8, 2, 4], "gating": "per-element", "attention_bias": True},
        {"gating": "per-head", "mlp_layer_types": ["sparse", "dense", "sparse"]},
    ],
)
def test_laguna_heads_per_layer_equal_transformers(change: dict) -> None:
    config = {**LAGUNA, **change}
    assert read_config(config, "t").counts.total == oracle.meta_total(config), f"{config} ({oracle.VERSIONS})"


def test_laguna_sums_the_heads_per_layer_and_refuses_bad_lists() -> None:
    """q_proj, o_proj and the per-head gate have d·h_d + h_d·d + d = 32·8 + 8·32 + 32 = 544 parameters per head."""
    base = read_config({**LAGUNA, "num_attention_heads_per_layer": [4, 4, 4]}, "t").counts.total
    more = read_config({**LAGUNA, "num_attention_heads_per_layer": [8, 2, 4]}, "t").counts.total
    assert more - base == 2 * 544
    with pytest.raises(LlmcountError, match="has 2 entries; it needs one per layer"):
        read_config({**LAGUNA, "num_attention_heads_per_layer": [2, 4]}, "t")
    with pytest.raises(LlmcountError, match=r"num_attention_heads_per_layer\[1\]' must be positive"):
        read_config({**LAGUNA, "num_attention_heads_per_layer": [2, 0, 4]}, "t")
    with pytest.raises(LlmcountError, match="must be a list of integers, one per layer"):
        read_config({**LAGUNA, "num_attention_heads_per_layer": 4}, "t")


@pytest.mark.parametrize("entry", ["full_attention", "sliding_attention"])
def test_laguna_null_rotary_fraction_is_refused_as_transformers_fails(entry: str) -> None:
    """An explicit null partial_rotary_factor reaches the rotary embedding, which multiplies by it (a TypeError when
    transformers builds the model); an entry without the key is read as 1."""
    rope = {kind: {"rope_type": "default", "rope_theta": 10000.0} for kind in ("full_attention", "sliding_attention")}
    rope[entry]["partial_rotary_factor"] = None
    config = {
        **LAGUNA,
        "layer_types": ["full_attention", "sliding_attention", "full_attention"],
        "rope_parameters": rope,
    }
    with pytest.raises(TypeError):  # building the rotary embedding
        oracle.AutoModelForCausalLM.from_config(oracle._hf_config(config))
    with pytest.raises(LlmcountError, match=f"{entry} entry has partial_rotary_factor null"):
        read_config(config, "t")
    del rope[entry]["partial_rotary_factor"]
    assert read_config(config, "t").counts.total == oracle.meta_total(config)
