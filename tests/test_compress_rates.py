"""DeepSeek-V4's compressed attention: layer kinds from layer_types and the compression rates from the compress_rates
object (dotted keys, one level), against transformers for hand-set configs that flip every part; bad values of the
object refused naming the key, the legacy keys DeepseekV4Config folds in refused by name. Its FLOPs and cache:
test_compressed_costs.py."""

from __future__ import annotations

import json

import pytest
from refusal import assert_refused, run

from llmcount.errors import LlmcountError
from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

SMALL_V4 = {
    "model_type": "deepseek_v4",
    "vocab_size": 64,
    "hidden_size": 16,
    "num_hidden_layers": 5,
    "num_attention_heads": 4,
    "head_dim": 8,
    "q_lora_rank": 6,
    "o_groups": 2,
    "o_lora_rank": 5,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 6,
    "hc_mult": 3,
    "index_n_heads": 3,
    "index_head_dim": 4,
    "index_topk": 2,
}
CSA, HCA, SLIDING = "compressed_sparse_attention", "heavily_compressed_attention", "sliding_attention"
V4 = [
    {},  # the default layout: HCA, HCA, HCA, CSA, HCA; the default rates 4 and 128
    {"compress_rates": {CSA: 3, HCA: 7}},
    {"compress_rates": None},
    {"layer_types": [SLIDING, CSA, HCA, SLIDING, CSA], "compress_rates": {CSA: 2, HCA: 5}},
    {"layer_types": [SLIDING] * 5},
    {"layer_types": [CSA] * 5, "mlp_bias": True, "tie_word_embeddings": True},
    {"num_hidden_layers": 2, "mlp_layer_types": ["moe", "hash_moe"]},
]


@pytest.mark.parametrize("keys", V4)
def test_deepseek_v4_parameters_equal_transformers(keys: dict) -> None:
    config = {**SMALL_V4, **keys}
    assert read_config(config, "test").counts.total == oracle.meta_total(config), f"{config} ({oracle.VERSIONS})"


def test_the_position_biases_grow_with_the_rates() -> None:
    """By hand: a CSA layer's compressor and indexer keep 2·m_csa·h_d + 2·m_csa·d_idx bias parameters, an HCA
    layer's m_hca·h_d; one more token per window adds 2·8 + 2·4 = 24 on the two CSA layers, 8 on the three HCA ones."""
    base = {**SMALL_V4, "layer_types": [CSA, HCA, CSA, HCA, HCA], "compress_rates": {CSA: 4, HCA: 16}}
    wider = {**base, "compress_rates": {CSA: 5, HCA: 17}}
    assert read_config(wider, "t").counts.total - read_config(base, "t").counts.total == 2 * 24 + 3 * 8


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"compress_rates": [4, 128]}, "key 'compress_rates' must be a JSON object, got a list"),
        ({"compress_rates": "4"}, "key 'compress_rates' must be a JSON object"),
        ({"compress_rates": {CSA: "4"}}, f"key 'compress_rates.{CSA}' must be an integer"),
        ({"compress_rates": {HCA: 0}}, f"key 'compress_rates.{HCA}' must be positive"),
        ({"compress_rates": {HCA: 2**80}}, f"key 'compress_rates.{HCA}' is 1.21e+24"),
        ({"compress_rates": {CSA: {"x": 1}}}, f"key 'compress_rates.{CSA}' must be an integer, got a JSON object"),
        ({"layer_types": [CSA] * 4}, "key 'layer_types' has 4 entries; deepseek_v4 needs at least one entry per layer"),
        ({"layer_types": [CSA] * 4 + ["full_attention"]}, "key 'layer_types' entry 4 is a string ('full_attention')"),
        ({"o_groups": 3}, "is not divisible by o_groups (3)"),
        ({"compress_rate_csa": 8}, "the legacy keys compress_ratios, compress_rate_csa and compress_rate_hca"),
        ({"compress_ratios": [0, 4, 128, 4, 128]}, "the legacy keys compress_ratios"),
    ],
)
def test_deepseek_v4_bad_values_are_refused_naming_the_key(keys: dict, message: str) -> None:
    with pytest.raises(LlmcountError, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        read_config({**SMALL_V4, **keys}, "test")


def test_deepseek_v4_refusals_are_one_line(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**SMALL_V4, "compress_rates": {CSA: True}}))
    assert_refused(run("count", str(path)), f"compress_rates.{CSA}")
    assert_refused(run("flops", str(path)), f"compress_rates.{CSA}")
    assert_refused(run("memory", str(path)), f"compress_rates.{CSA}")
    with pytest.raises(RuleRefusal):
        read_config({**SMALL_V4, "compress_rate_hca": 64}, "test")


@pytest.mark.parametrize(
    "keys",
    [
        {"compress_rates": {CSA: 3}},  # the default layout has both kinds: transformers' KeyError on the HCA layers
        {"compress_rates": {HCA: 3}},
        {"compress_rates": {}},
        {"layer_types": [CSA] * 5, "compress_rates": {CSA: 3}},  # a rate only for the kind the layers have: built
        {"layer_types": [SLIDING] * 4 + [HCA], "compress_rates": {HCA: 5}},
        {"layer_types": [SLIDING] * 5, "compress_rates": {}},
    ],
)
def test_a_rate_left_out_is_refused_where_transformers_refuses_it(keys: dict) -> None:
    """DeepseekV4Config keeps compress_rates as given; each compressed layer reads its kind's rate, a KeyError when
    the object leaves it out. llmcount refuses the config naming the rate (never the record's default), and counts
    those whose layers need only the rates given."""
    config = {**SMALL_V4, **keys}
    try:
        expected = oracle.meta_total(config)
    except oracle.TransformersRejected as exc:
        assert "KeyError" in str(exc)
        missing = CSA if CSA not in keys["compress_rates"] else HCA
        with pytest.raises(RuleRefusal, match=f"compress_rates has no {missing} rate"):
            read_config(config, "test")
    else:
        assert read_config(config, "test").counts.total == expected, oracle.VERSIONS
