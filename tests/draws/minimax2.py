"""MiniMax (MiniMax-Text-01): lightning-attention layers beside softmax-attention layers, an MoE block in every layer.

The lightning attention runs a loop over blocks of block_size tokens; block_size is drawn around the test's
lengths (5, 7 or 9) so that the cases have one block shorter than S, one block of exactly S, several blocks with a
shorter last one and several whole blocks. One head (h = 1) is drawn too: its blocks are views, not copies.
"""

from __future__ import annotations

import random

LAYOUTS = [
    ["linear_attention", "full_attention"],
    ["full_attention", "linear_attention"],
    ["linear_attention", "linear_attention"],
    ["full_attention", "full_attention"],
    None,  # full attention in the even layers
]


def minimax(rng: random.Random) -> dict:
    h_kv = rng.choice([1, 2, 3])
    h = h_kv * rng.choice([1, 2])
    layers = rng.choice(LAYOUTS)
    return {
        "model_type": "minimax",
        "num_hidden_layers": rng.choice([2, 3]) if layers is None else 2,
        "layer_types": layers,
        "hidden_size": rng.choice([16, 24, 32]),  # bf16 grouped matmuls on the CPU: widths of multiples of 8
        "num_attention_heads": h,
        "num_key_value_heads": h_kv,
        "head_dim": rng.choice([4, 6]),
        "intermediate_size": rng.choice([8, 16]),
        "num_local_experts": rng.choice([3, 4, 5]),
        "num_experts_per_tok": rng.choice([1, 2, 3]),
        "block_size": rng.choice([2, 3, 4, 5, 7, 9, 16]),
        "use_cache": rng.choice([True, False]),
        "router_jitter_noise": rng.choice([0.0, 0.1]),  # in training: uniform factors on the MoE block's input
        "vocab_size": rng.choice([67, 101]),
        "tie_word_embeddings": False,
        "pad_token_id": 0,
    }


DRAWS = {"minimax": minimax}

# (the comment: the drawn layout, F full / L lightning; heads; S against block_size Q; cache; jitter)
CASES = [
    ("minimax", 2, "fp32", "eager"),  # L F, one head; S = 9, three whole blocks of 3; cache
    ("minimax", 62, "bf16", "eager"),  # L F, 3 heads; three whole blocks of 3; cache
    ("minimax", 78, "bf16", "eager"),  # L L, one head; three whole blocks of 3; no cache (the last update freed)
    ("minimax", 36, "fp32", "eager"),  # L F, 2 heads; three whole blocks of 3; cache; router jitter
    ("minimax", 0, "fp32", "eager"),  # L F, 4 heads (grouped K/V); S = 5, a block of 4 and one of 1; cache
    ("minimax", 5, "fp32", "eager"),  # L L, 6 heads; S = 5 in blocks of 2 (the last of 1); cache
    ("minimax", 63, "bf16", "eager"),  # L L, 4 heads; S = 9 in five blocks of 2 (the last of 1); cache
    ("minimax", 74, "bf16", "eager"),  # L L, 3 heads; S = 5 in blocks of 2; no cache; router jitter
    ("minimax", 12, "bf16", "eager"),  # layer_types null, 3 layers: F L F; S = 7 in blocks of 4 and 3; no cache
    ("minimax", 15, "bf16", "eager"),  # layer_types null: F L, one head; S = 7 in blocks of 3, 3 and 1; no cache
    ("minimax", 9, "bf16", "eager"),  # L L, 4 heads; S = Q = 5 (one whole block); cache; router jitter
    ("minimax", 50, "fp32", "eager"),  # L L, 4 heads; S = Q = 7; no cache
    ("minimax", 3, "fp32", "eager"),  # L L, one head; S = 9 < Q = 16 (one short block); no cache; router jitter
    ("minimax", 79, "bf16", "eager"),  # L L, 2 heads (grouped K/V); S = 5 < Q = 9; no cache
    ("minimax", 7, "fp32", "eager"),  # F F: no lightning layer; cache
    ("minimax", 24, "fp32", "sdpa"),  # layer_types null: F L, 6 heads; S = 7 < Q = 9; cache
    ("minimax", 13, "fp32", "sdpa"),  # F L, 4 heads; S = Q = 9; cache
    ("minimax", 35, "fp32", "sdpa"),  # F L, 6 heads; S = 7 in blocks of 4 and 3; cache; router jitter
    ("minimax", 42, "bf16", "sdpa"),  # L F, 3 heads; S = 5 < Q = 9; cache
    ("minimax", 66, "bf16", "sdpa"),  # F F, grouped K/V; no cache
]
