"""Inkling's FLOPs and cache: sliding layers with head counts and widths of their own, short convolutions, and a
relative-position bias mixed per head.

The configs below set every part by hand (full and sliding layers of other widths, dense and sparse MLPs, sequences
shorter and longer than the window and the bias extent); the cache is compared with the tensors transformers' cache
holds after a CPU forward, in fp32 and bf16 (the convolution states stay in fp32), the FLOPs with FlopCounterMode
on CPU (the meta device cannot run Inkling's recurrent mask), the class defaults' cache with a hand derivation.
"""

from __future__ import annotations

import pytest

from llmcount.formulas import memory
from llmcount.formulas.config import read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

SMALL = {
    "model_type": "inkling_text",
    **{"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 3, "intermediate_size": 12},
    **{"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8},
    **{"swa_num_attention_heads": 6, "swa_num_key_value_heads": 3, "swa_head_dim": 4, "sliding_window_size": 3},
    **{"d_rel": 5, "rel_extent": 7, "conv_kernel_size": 3},
    **{"n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1, "moe_intermediate_size": 6},
    "layer_types": ["hybrid_sliding", "hybrid", "hybrid_sliding"],
}
CASES = [
    {},
    {"mlp_layer_types": ["dense", "sparse", "dense"], "dense_intermediate_size": 10},
    {"layer_types": ["hybrid"] * 3, "conv_kernel_size": 2},
    {"layer_types": None, "local_layer_ids": [0, 2], "sliding_window_size": 6},
]


@pytest.mark.parametrize("keys", CASES)
@pytest.mark.parametrize("seq", [2, 5])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_inkling_cache_equals_transformers(keys: dict, seq: int, dtype: str) -> None:
    """Keys and values (sliding layers: min(S, W - 1) tokens of their own heads), and four convolution states of
    d_conv inputs per layer, in fp32 whatever the model's dtype."""
    config = {**SMALL, **keys}
    model = read_config(config, "test")
    result = memory.inference(model.derivation, model.values, dtype, seq=seq, batch=2)
    got = result.bytes_of("kv_cache") + result.bytes_of("state")
    torch_dtype = {"fp32": oracle.torch.float32, "bf16": oracle.torch.bfloat16}[dtype]
    assert got == oracle.cache_bytes(config, 2, seq, torch_dtype), f"{config} {dtype} S={seq} ({oracle.VERSIONS})"


@pytest.mark.parametrize("keys", CASES)
def test_inkling_flops_equal_flop_counter(keys: dict) -> None:
    """Scores and values at each kind's own widths, the depthwise convolutions over S + d_conv - 1 positions and
    the relative-bias product (h · d_rel · extent per token) besides the weights."""
    from test_flops import llmcount_forward
    from test_state_flops import counter_flops

    config = {**SMALL, **keys}
    for batch, seq in ((1, 1), (2, 5), (1, 9)):
        expected = counter_flops(config, batch, seq)
        assert llmcount_forward(config, batch, seq) == expected, f"B={batch} S={seq} {config} ({oracle.VERSIONS})"


def test_inkling_class_defaults_cache_by_hand() -> None:
    """InklingTextConfig(): 66 layers, every sixth full (11), 55 sliding (W = 512: 511 tokens); full layers h_kv = 8,
    h_d = 128 (2 · 8 · 128 = 2,048 elements per token), sliding ones swa h_kv = 16, h_d = 128 (4,096); d = 6144,
    d_conv = 4. bf16 at S = 32,768: 11 · 32,768 · 2,048 · 2 = 1,476,395,008 bytes and 55 · 511 · 4,096 · 2 =
    230,236,160. Convolution states in fp32: a full layer (2 · 1,024 + 2 · 6,144) · 4 = 57,344 elements, 11 of
    them 2,523,136 bytes; a sliding layer (2 · 2,048 + 2 · 6,144) · 4 = 65,536, 55 of them 14,417,920 bytes."""
    model = read_config(oracle.class_defaults("inkling_text"), "defaults")
    result = memory.inference(model.derivation, model.values, "bf16", seq=32768, batch=1)
    assert result.bytes_of("kv_cache") == 1_476_395_008 + 230_236_160
    assert result.bytes_of("state") == 2_523_136 + 14_417_920
