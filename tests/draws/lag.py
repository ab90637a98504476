"""Draws for the activation tables of Laguna (query heads per layer, RoPE widths per layer type, a softplus output
gate, a sigmoid-routed MoE with a shared expert)."""

from __future__ import annotations

import random

# rope_parameters: absent (LagunaConfig's 0.5 on full layers, 1 on sliding ones), or given per layer type with its
# own partial_rotary_factor, or an entry without one (1)
ROPE = [
    None,
    {
        "full_attention": {"rope_type": "default", "rope_theta": 500000.0, "partial_rotary_factor": 0.5},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 1.0},
    },
    {
        "full_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.3},
    },
    {
        "full_attention": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
    },
]


def _laguna(rng: random.Random) -> dict:
    """Three layers of drawn kinds (sliding or full, dense or MoE), each with its own query heads (a multiple of the
    key/value heads, once equal to them) or, without num_attention_heads_per_layer, num_attention_heads on every
    layer; widths of multiples of 8 for bf16 grouped matmuls."""
    h_kv = rng.choice([1, 2])
    config = {
        "model_type": "laguna",
        "num_hidden_layers": 3,
        "hidden_size": rng.choice([16, 24, 32]),
        "intermediate_size": rng.choice([22, 28, 36]),
        "num_attention_heads": h_kv * 2,
        "num_attention_heads_per_layer": [h_kv * rng.choice([1, 2, 3]) for _ in range(3)],
        "num_key_value_heads": h_kv,
        "head_dim": rng.choice([6, 8, 10]),
        "vocab_size": rng.choice([67, 101]),
        "num_experts": rng.choice([4, 6]),
        "num_experts_per_tok": rng.choice([1, 2]),
        "moe_intermediate_size": rng.choice([8, 16]),
        "shared_expert_intermediate_size": rng.choice([12, 20]),
        "layer_types": [rng.choice(["full_attention", "sliding_attention"]) for _ in range(3)],
        "sliding_window": rng.choice([3, 4]),
        "mlp_layer_types": [rng.choice(["dense", "sparse"]) for _ in range(3)],
        "gating": rng.choice([True, "per-head", "per-element"]),
        "moe_router_logit_softcapping": rng.choice([0.0, 30.0]),
        "attention_bias": rng.choice([True, False]),
    }
    if rng.random() < 0.4:  # every layer with num_attention_heads: per-layer entries (pipeline stages split them)
        del config["num_attention_heads_per_layer"]
    rope = rng.choice(ROPE)
    if rope is not None:
        config["rope_parameters"] = rope
    return config


DRAWS = {"laguna": _laguna}

# the seeds' draws: heads "list" (num_attention_heads_per_layer, the summed entries) or "h" (the per-layer ones)
CASES = [
    ("laguna", 1, "fp32", "eager"),  # h; full and sliding layers, MoE and dense, per-channel gates, default RoPE
    ("laguna", 2, "bf16", "eager"),  # list; sliding layers only, soft-capped router, a sliding entry without a factor
    ("laguna", 4, "bf16", "eager"),  # list; full RoPE 0.5 and sliding 1 given, a layer with h = h_kv
    ("laguna", 6, "bf16", "eager"),  # h = h_kv; per-head gates, soft-capped router, full RoPE 0.25
    ("laguna", 10, "bf16", "eager"),  # list; per-channel gates, soft-capped router, a full entry without a factor
    ("laguna", 15, "fp32", "eager"),  # list; MoE on every layer, per-head gates, sliding RoPE 0.3 (width rounded up)
    ("laguna", 20, "bf16", "eager"),  # h; two full layers, soft-capped MoE layers
    ("laguna", 27, "fp32", "eager"),  # list; full layers only
    ("laguna", 29, "fp32", "eager"),  # list; per-channel gates, soft-capped router, full and sliding MoE layers
    ("laguna", 31, "fp32", "eager"),  # h; full layers only, per-channel gates
    ("laguna", 35, "fp32", "eager"),  # h; soft-capped MoE on two layers, per-head gates
]
