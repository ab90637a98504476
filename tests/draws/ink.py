"""Draws for the activation tables of Inkling's and dots3-note's text models: full and sliding layers of their own
head counts and widths, a dense or an MoE MLP each (widths of multiples of 8 for bf16 grouped matmuls)."""

from __future__ import annotations

import random

LAYER_TYPES = [["hybrid", "hybrid_sliding"], ["hybrid_sliding", "hybrid"], ["hybrid", "hybrid"]]
MLP_LAYER_TYPES = [["dense", "sparse"], ["sparse", "sparse"], ["sparse", "dense"]]


def attention_and_experts(rng: random.Random, h_kv: int, h_kv_sw: int) -> dict:
    """Inkling's (and Inkling 2's) attention of either kind of layer, its relative positions, short convolutions and
    routed experts: grouped heads of h_kv (h_kv_sw on sliding layers) key/value heads."""
    return {
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
    }


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
        **attention_and_experts(rng, h_kv, h_kv_sw),
        "n_shared_experts": rng.choice([1, 2]),
        "vocab_size": rng.choice([67, 101]),
        "pad_token_id": 0,
    }


DOTS3_LAYOUTS = [  # (layer_types, use_dsa); the global layers indexed unless use_dsa is false
    (["full_attention", "sliding_attention", "full_attention"], True),
    (["sliding_attention", "full_attention", "sliding_attention"], False),
    (["indexed_attention", "full_attention", "sliding_attention"], True),
    (["full_attention", "full_attention", "full_attention"], False),
    (["sliding_attention", "sliding_attention", "indexed_attention"], True),
]


def _dots3(rng: random.Random) -> dict:
    """Three MLA layers, global (indexed or full) and sliding with their own sizes (the swa_* keys); a dense or an
    MoE MLP each; the indexer keeping fewer keys than S or all of them, the window shorter than S or not."""
    layer_types, use_dsa = rng.choice(DOTS3_LAYOUTS)
    h, h_sw = rng.choice([1, 2, 4]), rng.choice([1, 2, 3])
    nope, rope, nope_sw, rope_sw = rng.choice([4, 6]), rng.choice([2, 4]), rng.choice([2, 4]), rng.choice([2, 4])
    return {
        "model_type": "dots3_note_text",
        "num_hidden_layers": 3,
        "layer_types": layer_types,
        "use_dsa": use_dsa,
        "mlp_layer_types": [rng.choice(["dense", "sparse"]) for _ in layer_types],
        "vocab_size": rng.choice([67, 101]),
        "pad_token_id": 0,
        "hidden_size": rng.choice([16, 24, 32]),
        "intermediate_size": rng.choice([10, 22]),
        "num_attention_heads": h,
        "num_key_value_heads": h,  # MLA expands the latent to every head: repeat_kv must not repeat it again
        "q_lora_rank": rng.choice([6, 8]),
        "kv_lora_rank": rng.choice([5, 8]),
        "qk_nope_head_dim": nope,
        "qk_rope_head_dim": rope,
        "head_dim": nope + rope,
        "v_head_dim": rng.choice([3, 8]),
        "swa_num_attention_heads": h_sw,
        "swa_num_key_value_heads": h_sw,
        "swa_q_lora_rank": rng.choice([4, 6]),
        "swa_kv_lora_rank": rng.choice([7, 8]),
        "swa_qk_nope_head_dim": nope_sw,
        "swa_qk_rope_head_dim": rope_sw,
        "swa_head_dim": nope_sw + rope_sw,
        "swa_v_head_dim": rng.choice([5, 8]),
        "sliding_window": rng.choice([3, 64]),
        "index_n_heads": rng.choice([2, 3]),
        "index_head_dim": rope + rng.choice([2, 4]),
        "index_topk": rng.choice([2, 2048]),
        "n_routed_experts": rng.choice([4, 6]),
        "num_experts_per_tok": rng.choice([1, 2]),
        "n_group": 1,
        "norm_topk_prob": rng.choice([True, False]),
        "moe_intermediate_size": rng.choice([8, 16]),
        "shared_experts_intermediate_size": rng.choice([5, 8]),
        "n_shared_experts": rng.choice([1, 2]),
    }


DRAWS = {
    "inkling_text": lambda rng: _inkling("inkling_text", rng),
    "dots3_note_text": _dots3,
}

CASES = [
    ("inkling_text", 0, "fp32", "eager"),  # full then sliding (W = 3 < S = 9, h_sw = 2 · h_kv_sw), MoE on both
    ("inkling_text", 1, "bf16", "eager"),  # sliding then full (h = 2 · h_kv), dense then MoE, two shared experts
    ("inkling_text", 4, "bf16", "eager"),  # rel_extent 5 = S, one key/value head per query head
    ("inkling_text", 5, "fp32", "eager"),  # full layers only, an MoE then a dense layer
    ("inkling_text", 6, "bf16", "eager"),  # a window of 16 past S, two shared experts
    ("inkling_text", 7, "fp32", "eager"),  # W = 3 < S = 5 with one head, h = 2 · h_kv on the full layer
    ("dots3_note_text", 0, "fp32", "eager"),  # full layers without the indexer, MoE twice, renormalized top-k
    ("dots3_note_text", 1, "bf16", "eager"),  # sliding (one head: the values a view of kv_b_proj's output, W = 3)
    ("dots3_note_text", 2, "bf16", "eager"),  # indexed layers with one head, dense MLPs
    ("dots3_note_text", 3, "fp32", "eager"),  # sliding layers of three heads, W = 3 < S = 9, MoE on two layers
    ("dots3_note_text", 6, "bf16", "eager"),  # two sliding layers and an indexed one of one head, MoE on all three
    ("dots3_note_text", 7, "fp32", "eager"),  # indexed layers keeping 2 of 9 keys, a sliding layer, dense MLPs
    ("dots3_note_text", 12, "fp32", "eager"),  # full layers, MoE on all three, renormalized top-k
    ("dots3_note_text", 13, "bf16", "eager"),  # indexed and sliding layers, the indexer keeping every key
]
