"""Linear-attention hybrids: Gated DeltaNet (Qwen3-Next, Qwen3.5, OLMo Hybrid) layers beside full-attention layers,
with MoE or dense MLPs (KDA hybrids: tests/draws/kda.py). The layer layouts are drawn so that every layer kind
(linear or full attention; MoE or dense) occurs in some case; the chunked delta rule's sizes in S past one chunk
are checked in tests/test_activations_chunked.py."""

from __future__ import annotations

import random

LAYOUTS = [
    ["linear_attention", "full_attention"],
    ["full_attention", "linear_attention"],
    ["linear_attention", "linear_attention"],
    ["full_attention", "full_attention"],
]


def _gdn(rng: random.Random) -> dict:
    """Gated DeltaNet sizes: h_lv a multiple of h_lk (grouped value heads), distinct head widths."""
    h_lk = rng.choice([1, 2])
    h_kv = rng.choice([1, 2])
    return {
        "num_hidden_layers": 2,
        "hidden_size": rng.choice([16, 24]),
        "num_attention_heads": h_kv * rng.choice([1, 2]),
        "num_key_value_heads": h_kv,
        "head_dim": rng.choice([4, 8]),
        "linear_num_key_heads": h_lk,
        "linear_num_value_heads": h_lk * rng.choice([1, 2]),
        "linear_key_head_dim": rng.choice([4, 6]),
        "linear_value_head_dim": rng.choice([5, 8]),
        "linear_conv_kernel_dim": rng.choice([2, 3, 4]),
        "vocab_size": rng.choice([67, 101]),
        "tie_word_embeddings": False,
        "pad_token_id": 0,
    }


def _cache(config: dict, rng: random.Random) -> dict:
    """use_cache drawn (the training forward fills the cache or not; autograd keeps the same); without a
    full-attention layer transformers' cache cannot tell the sequence length, so no cache."""
    layers = config.get("layer_types")
    config["use_cache"] = rng.choice([True, False]) if layers is None or "full_attention" in layers else False
    return config


def qwen3_next(rng: random.Random) -> dict:
    config = {"model_type": "qwen3_next", **_gdn(rng)}
    config["layer_types"] = rng.choice([*LAYOUTS, None])  # None: full_attention_interval
    config["full_attention_interval"] = rng.choice([1, 2])
    config["mlp_only_layers"] = rng.choice([[], [0], [1]])
    config["intermediate_size"] = rng.choice([20, 28])
    config["num_experts"] = rng.choice([4, 6])
    config["num_experts_per_tok"] = rng.choice([1, 2])
    config["moe_intermediate_size"] = rng.choice([8, 16])
    config["shared_expert_intermediate_size"] = rng.choice([8, 12])
    config["norm_topk_prob"] = rng.choice([True, False])
    config["partial_rotary_factor"] = rng.choice([0.25, 0.5, 1.0])
    return _cache(config, rng)


def qwen3_5_text(rng: random.Random) -> dict:
    config = {"model_type": "qwen3_5_text", **_gdn(rng)}
    config["layer_types"] = rng.choice([*LAYOUTS, None])  # None: full_attention_interval
    config["full_attention_interval"] = rng.choice([1, 2])
    config["intermediate_size"] = rng.choice([20, 28])
    config["partial_rotary_factor"] = rng.choice([0.25, 0.5, 1.0])
    return _cache(config, rng)


def qwen3_5_moe_text(rng: random.Random) -> dict:
    config = {"model_type": "qwen3_5_moe_text", **_gdn(rng)}
    config["layer_types"] = rng.choice([*LAYOUTS, None])  # None: full_attention_interval
    config["full_attention_interval"] = rng.choice([1, 2])
    config["num_experts"] = rng.choice([4, 6])
    config["num_experts_per_tok"] = rng.choice([1, 2])
    config["moe_intermediate_size"] = rng.choice([8, 16])
    config["shared_expert_intermediate_size"] = rng.choice([8, 12])
    config["partial_rotary_factor"] = rng.choice([0.25, 0.5, 1.0])
    return _cache(config, rng)


def olmo_hybrid(rng: random.Random) -> dict:
    """OLMo Hybrid needs a layer of each kind; None: every fourth layer full (the last one of fewer than four)."""
    config = {"model_type": "olmo_hybrid", **_gdn(rng)}
    config["layer_types"] = rng.choice([*LAYOUTS[:2], None])
    config["num_hidden_layers"] = rng.choice([2, 3]) if config["layer_types"] is None else 2
    config["intermediate_size"] = rng.choice([20, 28])
    config["linear_allow_neg_eigval"] = rng.choice([True, False])
    return _cache(config, rng)


DRAWS = {
    "olmo_hybrid": olmo_hybrid,
    "qwen3_next": qwen3_next,
    "qwen3_5_text": qwen3_5_text,
    "qwen3_5_moe_text": qwen3_5_moe_text,
}

CASES = [
    ("qwen3_next", 3, "fp32", "eager"),  # a full then a linear layer without grouped value heads (fp32 views), cache
    ("qwen3_next", 5, "bf16", "eager"),  # a full then a linear layer (dense MLP), no cache: the last update dropped
    ("qwen3_next", 6, "fp32", "eager"),  # two linear layers, MoE on both, no cache
    ("qwen3_next", 7, "fp32", "sdpa"),  # a linear then a full layer: the fused kernel's output and its copy
    ("qwen3_next", 0, "bf16", "eager"),  # full_attention_interval 1: full layers only; a dense then an MoE layer
    ("qwen3_next", 4, "fp32", "sdpa"),  # full_attention_interval 2: a linear then a full layer, MoE on both
    ("qwen3_5_text", 3, "fp32", "eager"),  # a full then a linear layer without grouped value heads (fp32 views), cache
    ("qwen3_5_text", 11, "bf16", "eager"),  # a full then a linear layer with grouped value heads, no cache
    ("qwen3_5_text", 23, "fp32", "eager"),  # two linear layers with grouped value heads, no cache
    ("qwen3_5_text", 7, "fp32", "sdpa"),  # a linear then a full layer of one head (the kernel's output not copied)
    ("qwen3_5_text", 5, "fp32", "sdpa"),  # a full then a linear layer, four heads
    ("qwen3_5_text", 0, "bf16", "eager"),  # full_attention_interval 1: full layers only
    ("qwen3_5_moe_text", 3, "fp32", "eager"),  # a full then a linear layer without grouped value heads, cache
    ("qwen3_5_moe_text", 11, "bf16", "eager"),  # a full then a linear layer with grouped value heads, cache
    ("qwen3_5_moe_text", 23, "fp32", "eager"),  # two linear layers with grouped value heads, no cache
    ("qwen3_5_moe_text", 5, "fp32", "sdpa"),  # a full then a linear layer, four heads
    ("qwen3_5_moe_text", 0, "bf16", "eager"),  # full_attention_interval 1: full layers only
    ("olmo_hybrid", 0, "fp32", "eager"),  # default layout (a linear then a full layer), grouped heads, cache
    ("olmo_hybrid", 3, "bf16", "eager"),  # a linear then a full layer without grouped heads, no cache
    ("olmo_hybrid", 4, "fp32", "eager"),  # default layout of 3 layers: two linear then a full one
    ("olmo_hybrid", 5, "fp32", "sdpa"),  # a linear then a full layer, four heads
    ("olmo_hybrid", 17, "bf16", "eager"),  # default layout of 3 layers, grouped heads, no cache
    ("olmo_hybrid", 14, "fp32", "eager"),  # a full then a linear layer without grouped heads, cache
]
