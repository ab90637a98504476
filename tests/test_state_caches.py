"""The fixed per-sequence state of Mamba, linear-attention and recurrent layers, figured by hand.

Every expected number below is worked out in the comments from the config's own sizes (never from the
code under test); ``test_caches`` checks the same formulas against the tensors transformers' cache holds. The
recurrent states (SSM, delta-rule, RG-LRU, WKV) are kept in fp32 whatever the model's dtype, as transformers'
torch code keeps them (MiniMax's K^T·V excepted); the conv states and the token shift in the cache dtype.
"""

from __future__ import annotations

import json

from refusal import run

from llmcount import memory
from llmcount.formulas import memory as mem
from llmcount.formulas.config import read_config

GIB = 2**30


def inference(config: dict, **options) -> mem.Memory:
    model = read_config(config, "hand-written config")
    return mem.inference(model.derivation, model.values, **options)


# Qwen/Qwen3-Next-80B-A3B-Instruct (the bundled preset): 48 layers, full_attention_interval 4, so layers
# 3, 7, ..., 47 are full attention (N_full = 12) and the other N_linear = 36 are Gated DeltaNet.
# Full attention: num_key_value_heads 2, head_dim 256: 2 · 2 · 256 = 1,024 elements per token per layer,
#   12 · 1,024 = 12,288 per token, 24,576 bytes in bf16; at S = 262,144: 24,576 · 262,144 = 6,442,450,944 (6 GiB).
# Linear attention: linear_num_key_heads 16, linear_num_value_heads 32, key and value heads of 128,
#   linear_conv_kernel_dim 4:
#   conv state over q, k and v: (2 · 16 · 128 + 32 · 128) · 4 = (4,096 + 4,096) · 4 = 32,768 elements,
#   delta-rule state: 32 value heads · 128 · 128 = 524,288 elements,
#   conv state in bf16, 65,536 bytes; delta-rule state in fp32, 2,097,152 bytes; 2,162,688 bytes per layer,
#   36 · 2,162,688 = 77,856,768 bytes per sequence whatever S.
QWEN3_NEXT_KV = 6_442_450_944
QWEN3_NEXT_STATE = 77_856_768


def test_qwen3_next_at_256k_tokens() -> None:
    result = memory("qwen3-next-80b-a3b", seq=262144)
    assert result.bytes_of("kv_cache") == QWEN3_NEXT_KV == 6 * GIB
    assert result.bytes_of("state") == QWEN3_NEXT_STATE
    assert result.kv_per_token_bytes == 24_576
    kinds = {(k.kind, k.layers, k.bytes) for k in result.per_layer_kind}
    assert kinds == {("full_attention", 12, QWEN3_NEXT_KV), ("linear_attention", 36, QWEN3_NEXT_STATE)}
    assert result.total_bytes == result.bytes_of("weights") + QWEN3_NEXT_KV + QWEN3_NEXT_STATE


def test_qwen3_next_state_is_fixed_and_grows_with_the_batch() -> None:
    one = memory("qwen3-next-80b-a3b", seq=1)
    assert one.bytes_of("state") == QWEN3_NEXT_STATE  # the same at 1 token as at 256K
    assert one.bytes_of("kv_cache") == 24_576
    eight = memory("qwen3-next-80b-a3b", seq=262144, batch=8, kv_dtype="fp32")
    # 8 sequences, 4 bytes an element: 8 · 36 · (32,768 + 524,288) · 4
    assert eight.bytes_of("state") == 641_728_512
    assert eight.bytes_of("kv_cache") == 8 * 2 * QWEN3_NEXT_KV


def test_qwen3_next_memory_reads_well() -> None:
    result = run("memory", "qwen3-next-80b-a3b", "--seq", "262144")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert any(line.startswith("kv cache") and "6,442,450,944" in line for line in lines)
    assert any(line.startswith("state") and "77,856,768" in line for line in lines)
    assert "whatever S" in " ".join(result.stdout.split())  # its note, below the table
    assert any(line.split()[:3] == ["full", "attention", "12"] for line in lines)
    assert any(line.split()[:3] == ["linear", "attention", "36"] for line in lines)
    assert "state of the linear attention layers" in " ".join(
        result.stdout.split()
    )  # its dtype is stated among the assumptions

    data = json.loads(run("memory", "qwen3-next-80b-a3b", "--seq", "262144", "--json").stdout)
    assert data["kv_cache_bytes"] == QWEN3_NEXT_KV and data["state_bytes"] == QWEN3_NEXT_STATE
    assert [(k["kind"], k["layers"], k["bytes"]) for k in data["per_layer_kind"]] == [
        ("full_attention", 12, QWEN3_NEXT_KV),
        ("linear_attention", 36, QWEN3_NEXT_STATE),
    ]
    assert data["total_bytes"] == data["weights_bytes"] + QWEN3_NEXT_KV + QWEN3_NEXT_STATE


# Mamba with the sizes of state-spaces/mamba-2.8b-hf: hidden_size 2560, 64 layers, expand 2 (inner 5,120),
# state_size 16, conv_kernel 4. Per layer: conv 5,120 · 4 = 20,480 elements in bf16 (40,960 bytes) and SSM
# 5,120 · 16 = 81,920 in fp32 (327,680 bytes), 368,640 bytes; B = 8: 8 · 64 · 368,640 = 188,743,680 bytes.
MAMBA_2_8B = {"model_type": "mamba", "vocab_size": 50280, "hidden_size": 2560, "num_hidden_layers": 64}


def test_mamba_keeps_no_kv_cache() -> None:
    result = inference(MAMBA_2_8B, seq=1_000_000, batch=8)
    assert result.bytes_of("kv_cache") == 0 and result.kv_per_token_bytes is None
    assert result.bytes_of("state") == 188_743_680
    assert [(k.kind, k.layers) for k in result.per_layer_kind] == [("mamba", 64)]


# Mamba-2 with the sizes of state-spaces/mamba2-2.7b: hidden_size 2560, 64 layers, expand 2 (inner 5,120 =
# 80 heads of 64), n_groups 1, state_size 128, conv_kernel 4. Per layer: conv over x, B and C,
# (5,120 + 2 · 1 · 128) · 4 = 5,376 · 4 = 21,504 elements in bf16 (43,008 bytes); SSM 80 · 64 · 128 = 655,360
# in fp32 (2,621,440 bytes); 64 · 2,664,448 = 170,524,672 bytes per sequence.
MAMBA2_2_7B = {
    "model_type": "mamba2",
    "vocab_size": 50288,
    "hidden_size": 2560,
    "num_hidden_layers": 64,
    "num_heads": 80,
    "head_dim": 64,
    "n_groups": 1,
    "state_size": 128,
}


def test_mamba2_state() -> None:
    assert inference(MAMBA2_2_7B, seq=4096).bytes_of("state") == 170_524_672


# Jamba with the sizes of ai21labs/Jamba-v0.1: 32 layers, attn_layer_period 8, offset 4 (layers 4, 12, 20,
# 28 attend: N_attn = 4, N_mamba = 28), hidden_size 4096, 32 heads (of 4096 / 32 = 128), 8 KV heads;
# Mamba expand 2 (inner 8,192), d_state 16, d_conv 4.
# KV: 4 · 2 · 8 · 128 = 8,192 elements per token, 16,384 bytes in bf16; at S = 262,144: 4,294,967,296 (4 GiB).
# State: 28 · (8,192 · 4 · 2 bytes (conv, bf16) + 8,192 · 16 · 4 bytes (SSM, fp32)) = 28 · 589,824 = 16,515,072.
JAMBA_V0_1 = {
    "model_type": "jamba",
    "vocab_size": 65536,
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "num_experts": 16,
}


def test_jamba_kv_cache_and_state() -> None:
    result = inference(JAMBA_V0_1, seq=262144)
    assert result.bytes_of("kv_cache") == 4 * GIB and result.kv_per_token_bytes == 16_384
    assert result.bytes_of("state") == 16_515_072
    assert [(k.kind, k.layers) for k in result.per_layer_kind] == [("full_attention", 4), ("mamba", 28)]


# RecurrentGemma with the sizes of google/recurrentgemma-2b: 26 layers cycling recurrent, recurrent,
# attention (layers 2, 5, ..., 23 attend: N_attn = 8, N_recurrent = 18), hidden_size = lru_width = 2560,
# 10 heads of 256, 1 KV head, conv1d_width 4, attention_window_size 2048.
# KV: the local attention keeps min(S, 2048 - 1) tokens; at S = 8,192, 2,047 tokens of 2 · 1 · 256 = 512
#   elements in 8 layers: 8 · 2,047 · 512 = 8,384,512 elements, 16,769,024 bytes in bf16.
# State: 18 · (2,560 · (4 - 1) · 2 bytes (conv, bf16) + 2,560 · 4 bytes (RG-LRU, fp32)) = 18 · 25,600 = 460,800.
RECURRENTGEMMA_2B = {
    "model_type": "recurrent_gemma",
    "vocab_size": 256000,
    "hidden_size": 2560,
    "num_hidden_layers": 26,
    "num_attention_heads": 10,
    "num_key_value_heads": 1,
    "intermediate_size": 15360,
}


def test_recurrent_gemma_window_and_state() -> None:
    result = inference(RECURRENTGEMMA_2B, seq=8192)
    assert result.bytes_of("kv_cache") == 16_769_024
    assert result.bytes_of("state") == 460_800
    assert [(k.kind, k.layers) for k in result.per_layer_kind] == [("sliding_attention", 8), ("recurrent", 18)]
    short = inference(RECURRENTGEMMA_2B, seq=100)  # below the window: 8 · 100 · 512 · 2 = 819,200 bytes
    assert short.bytes_of("kv_cache") == 819_200 and short.bytes_of("state") == 460_800


# MiniMax with a MiniMax-Text-01-like layout: 80 layers, a softmax layer after every seven lightning layers
# (N_full = 10, N_linear = 70), 64 heads of 128, 8 KV heads.
# KV: 10 · 2 · 8 · 128 = 20,480 elements per token, 40,960 bytes in bf16; at S = 1,048,576: 42,949,672,960 (40 GiB).
# State: K^T·V of every head, 64 · 128 · 128 = 1,048,576 elements per layer, 70 · 1,048,576 = 73,400,320,
#   146,800,640 bytes in bf16 (no conv state).
MINIMAX = {
    "model_type": "minimax",
    "vocab_size": 200064,
    "hidden_size": 6144,
    "num_hidden_layers": 80,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 9216,
    "num_local_experts": 32,
    "layer_types": (["linear_attention"] * 7 + ["full_attention"]) * 10,
}


def test_minimax_lightning_state() -> None:
    result = inference(MINIMAX, seq=1048576)
    assert result.bytes_of("kv_cache") == 40 * GIB
    assert result.bytes_of("state") == 146_800_640


# RWKV-4 with the sizes of RWKV/rwkv-4-169m-pile: hidden_size 768, 12 layers. Per layer: the token shift
# before time and channel mixing, 2 · 768, and the WKV numerator, denominator and maximum, 3 · 768: 3,840
# elements; 12 · 3,840 = 46,080 per sequence, 184,320 bytes in fp32.
RWKV_169M = {"model_type": "rwkv", "vocab_size": 50277, "hidden_size": 768, "num_hidden_layers": 12}


def test_rwkv_state() -> None:
    result = inference(RWKV_169M, seq=4096, kv_dtype="fp32")
    assert result.bytes_of("kv_cache") == 0 and result.bytes_of("state") == 184_320
