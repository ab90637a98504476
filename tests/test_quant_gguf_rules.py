"""The tensors llama.cpp's quantiser never quantises and the converter writes in F32, by hand from llama.cpp
007dbbf3fd17 src/llama-quant.cpp (tensor_allows_quantization: 2-D and 3-D tensors whose name ends in "weight", not
norms, routers, DeepSeek-V4's tid2eid table, Gemma 3n's altup, laurel and per_layer_model_proj, Mamba's ssm_conv1d,
LFM2's shortconv.conv, MiniMax's indexer projections, RWKV's small time_mix weights, T5's attn_rel_b, the position and
token-type embeddings) and convert_hf_to_gguf.py (FFN_GATE_INP, POS_EMBD, TOKEN_TYPES, SSM_CONV1D, SHORTCONV_CONV and
RWKV's TIME_MIX_FIRST, _W1, _W2, _DECAY_W1, _DECAY_W2, _LERP_FUSED always F32)."""

from __future__ import annotations

import pytest

from llmcount.gguf_quant import CONVERTER_F32, Planned, _quantizable

KEPT = [
    "blk.0.ffn_gate_inp.weight",
    "blk.3.ffn_gate_tid2eid.weight",
    "blk.0.altup_proj.weight",
    "blk.0.laurel_l.weight",
    "per_layer_model_proj.weight",
    "blk.0.ssm_conv1d.weight",
    "blk.0.shortconv.conv.weight",
    "blk.0.indexer.k_proj.weight",
    "blk.0.indexer.q_proj.weight",
    "blk.0.time_mix_w1.weight",
    "blk.0.time_mix_lerp_fused.weight",
    "blk.0.attn_rel_b.weight",
    "position_embd.weight",
    "token_types.weight",
    "blk.0.attn_q_norm.weight",
    "blk.0.ssm_in.bias",
]
QUANTISED = [
    "token_embd.weight",
    "output.weight",
    "blk.0.attn_q.weight",
    "blk.0.ffn_down_exps.weight",
    "blk.0.ssm_in.weight",
    "blk.0.attn_k_b.weight",
    "blk.0.indexer.attn_k.weight",
]


@pytest.mark.parametrize("name", KEPT)
def test_left_as_converted(name: str) -> None:
    assert not _quantizable(Planned(name, "", 0, 256, 256))


@pytest.mark.parametrize("name", QUANTISED)
def test_quantised(name: str) -> None:
    assert _quantizable(Planned(name, "", 0, 256, 256))


def test_a_vector_is_never_quantised() -> None:
    assert not _quantizable(Planned("blk.0.attn_q.weight", "", 0, 256, 1))


@pytest.mark.parametrize(
    ("name", "f32"),
    [
        ("blk.0.ssm_conv1d.weight", True),
        ("blk.0.shortconv.conv.weight", True),
        ("blk.0.ffn_gate_inp.weight", True),
        ("position_embd.weight", True),
        ("blk.0.time_mix_first.weight", True),
        ("blk.0.altup_proj.weight", False),  # left in the converter's type (F16 or BF16)
        ("per_layer_model_proj.weight", False),
    ],
)
def test_converter_f32(name: str, f32: bool) -> None:
    assert any(part in name for part in CONVERTER_F32) == f32
