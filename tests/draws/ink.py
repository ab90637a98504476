"""Draws for the activation tables of Inkling's and dots3-note's text models: full and sliding layers of their own
head counts and widths, a dense or an MoE MLP each (widths of multiples of 8 for bf16 grouped matmuls)."""

from __future__ import annotations

import random

LAYER_TYPES = [["hybrid", "hybrid_sliding"], ["hybrid_sliding", "hybrid"], ["hybrid", "hybrid"]]
MLP_LAYER_TYPES = [["dense", "sparse"], ["sparse", "sparse"], ["sparse", "dense"]]


def _inkling(model_type: str, rng: random.Random) -> dict:
    """Two layers; the window and the relative extent shorter or longer than S; one or two shared experts."""
    h_kv, h_kv_sw = rng.choice([1, 2]), rng.choice([1, 2])
    return {
        "model_type": model_type,
        "num_hidden_layers": 2,
        "layer_types": rng.choice(LAYER_TYPES),
        "mlp_layer_types": rng.choice(MLP_LAYER_TYPES),
        "hidden_size": rng.choice([16, 24, 32]),
        "intermediate_size": rng.choice([22, 28]),
        "moe_intermediate_size": rng.choice([8, 16]),
        "num_attention_heads": h_kv * rng.choice([1, 2]),
        "num_key_value_heads": h_kv,
        "head_dim": rng.choice([4, 6]),
        "swa_num_attention_heads": h_kv_sw * rng.choice([1, 2]),
        "swa_num_key_value_heads": h_kv_sw,
        "swa_head_dim": rng.choice([4, 6, 8]),
        "sliding_window_size": rng.choice([3, 16]),
        "d_rel": rng.choice([2, 3]),
        "rel_extent": rng.choice([5, 12]),
        "conv_kernel_size": rng.choice([2, 3, 4]),
        "n_routed_experts": rng.choice([4, 6]),
        "num_experts_per_tok": rng.choice([1, 2]),
        "n_shared_experts": rng.choice([1, 2]),
        "vocab_size": rng.choice([67, 101]),
        "pad_token_id": 0,
    }


DRAWS = {
    "inkling_text": lambda rng: _inkling("inkling_text", rng),
}

CASES = [
    ("inkling_text", 0, "fp32", "eager"),  # full then sliding (W = 3 < S = 9, h_sw = 2 · h_kv_sw), MoE on both
    ("inkling_text", 1, "bf16", "eager"),  # sliding then full (h = 2 · h_kv), dense then MoE, two shared experts
    ("inkling_text", 4, "bf16", "eager"),  # rel_extent 5 = S, one key/value head per query head
    ("inkling_text", 5, "fp32", "eager"),  # full layers only, an MoE then a dense layer
    ("inkling_text", 6, "bf16", "eager"),  # a window of 16 past S, two shared experts
    ("inkling_text", 7, "fp32", "eager"),  # W = 3 < S = 5 with one head, h = 2 · h_kv on the full layer
]
