"""Draws for the activation tables of DeepSeek-V3.2's family (MLA, MoE, the DSA indexer), the Gemma 3n / Gemma 4
families, Inkling, dots3-note, Mllama's text model, GIT, Moshi, Laguna and MiniMax (lightning attention)."""

from __future__ import annotations

import random


def _dsa(model_type: str, rng: random.Random) -> dict:
    """MLA with a query latent, MoE with shared experts (widths of multiples of 8 for bf16 grouped matmuls), the
    indexer keeping fewer keys than S (its mask leaves keys out) or all of them; two layers, dense or MoE each."""
    h = rng.choice([2, 3, 4])
    config = {
        "model_type": model_type,
        "num_hidden_layers": 2,
        "hidden_size": rng.choice([16, 24, 32]),
        "intermediate_size": rng.choice([22, 28, 36]),
        "num_attention_heads": h,
        "num_key_value_heads": h,
        "vocab_size": rng.choice([67, 101]),
        "tie_word_embeddings": False,
        "pad_token_id": 0,
        "q_lora_rank": rng.choice([8, 16]),
        "kv_lora_rank": rng.choice([8, 16]),
        "qk_rope_head_dim": rng.choice([4, 8]),
        "qk_nope_head_dim": rng.choice([8, 16]),
        "v_head_dim": rng.choice([8, 16]),
        "mlp_layer_types": rng.choice([["dense", "sparse"], ["sparse", "sparse"], ["sparse", "dense"]]),
        "n_routed_experts": rng.choice([4, 6]),
        "num_experts_per_tok": rng.choice([1, 2]),
        "n_shared_experts": rng.choice([1, 2]),
        "moe_intermediate_size": rng.choice([8, 16]),
        "norm_topk_prob": rng.choice([True, False]),
        "index_n_heads": rng.choice([2, 3]),
        "index_head_dim": rng.choice([12, 16]),  # RoPE on its first qk_rope_head_dim
        "index_topk": rng.choice([4, 2048]),  # fewer than S: the indexer's mask leaves keys out
    }
    config["n_group"], config["topk_group"] = rng.choice([(1, 1), (2, 1), (2, 2)])
    if model_type == "glm_moe_dsa":  # the second layer runs its own indexer or reuses the first's selection
        config["indexer_types"] = rng.choice([["full", "full"], ["full", "shared"]])
    return config


def _mllama(rng: random.Random) -> dict:
    """Three layers, one or none of them a cross-attention layer (skipped whole without vision states)."""
    h_kv = rng.choice([2, 3])
    h = h_kv * rng.choice([1, 2])
    return {
        "model_type": "mllama_text_model",
        "num_hidden_layers": 3,
        "hidden_size": h * rng.choice([4, 6]),
        "intermediate_size": rng.choice([22, 28, 36]),
        "num_attention_heads": h,
        "num_key_value_heads": h_kv,
        "vocab_size": rng.choice([67, 101]),
        "pad_token_id": 0,
        "cross_attention_layers": rng.choice([[1], [0], [2], []]),
    }


def _moshi(rng: random.Random) -> dict:
    """Moshi's text decoder: grouped or one key/value head per query head; ffn_dim is twice the MLP width."""
    h_kv = rng.choice([2, 3])
    h = h_kv * rng.choice([1, 2])
    return {
        "model_type": "moshi",
        "num_hidden_layers": rng.choice([1, 2]),
        "hidden_size": h * rng.choice([4, 5, 8]),  # MoshiConfig checks d % h
        "ffn_dim": 2 * rng.choice([11, 14, 18]),
        "num_attention_heads": h,
        "num_key_value_heads": h_kv,
        "head_dim": rng.choice([4, 6]),
        "vocab_size": rng.choice([67, 101]),
        "num_codebooks": 2,
        "sliding_window": rng.choice([3, 3000]),  # the cache's window only: the scores are not masked
    }


# Gemma 3n layouts: (layer_types, num_kv_shared_layers), each shared layer after a layer of its kind with its own K/V
GEMMA3N_LAYOUTS = [
    (["sliding_attention", "full_attention"], 0),
    (["sliding_attention", "full_attention", "sliding_attention"], 1),
    (["sliding_attention", "full_attention", "sliding_attention", "full_attention"], 2),
    (["full_attention", "full_attention", "full_attention"], 1),
]


def _gemma3n(rng: random.Random) -> dict:
    """AltUp with 2 to 4 copies, LAuReL, per-layer inputs, KV sharing, activation sparsity drawn per layer."""
    layer_types, shared = rng.choice(GEMMA3N_LAYOUTS)
    h_kv = rng.choice([1, 2])
    h = h_kv * rng.choice([1, 2])
    return {
        "model_type": "gemma3n_text",
        "num_hidden_layers": len(layer_types),
        "layer_types": layer_types,
        "num_kv_shared_layers": shared,
        "hidden_size": 4 * rng.choice([4, 5, 6]),
        "intermediate_size": rng.choice([22, 28]),
        "num_attention_heads": h,
        "num_key_value_heads": h_kv,
        "head_dim": rng.choice([4, 6]),
        "vocab_size": rng.choice([67, 101]),
        "vocab_size_per_layer_input": rng.choice([53, 67]),  # ids past it index row 0
        "hidden_size_per_layer_input": rng.choice([3, 4]),
        "altup_num_inputs": rng.choice([2, 3, 4]),
        "laurel_rank": rng.choice([3, 5]),
        "sliding_window": rng.choice([3, 64]),
        "activation_sparsity_pattern": [rng.choice([0.0, 0.95, 0.5]) for _ in layer_types],
        "altup_correct_scale": rng.choice([True, False]),
        "final_logit_softcapping": rng.choice([30.0, 15.0]),  # a float: Gemma3nTextConfig refuses null
        "tie_word_embeddings": rng.choice([True, False]),
    }


# Gemma 4 layouts: (layer_types, num_kv_shared_layers); the last layer is always full
GEMMA4_LAYOUTS = [
    (["sliding_attention", "full_attention"], 0),
    (["sliding_attention", "full_attention", "sliding_attention", "full_attention"], 2),
    (["sliding_attention", "full_attention", "full_attention"], 1),
    (["full_attention", "sliding_attention", "full_attention"], 1),
]


def _gemma4(model_type: str, rng: random.Random) -> dict:
    """Sliding and full layers of their own head sizes (global_head_dim, num_global_key_value_heads with
    attention_k_eq_v), KV sharing (double-wide MLPs), per-layer inputs (Gemma 4 only) or none."""
    layer_types, shared = rng.choice(GEMMA4_LAYOUTS)
    h_kv = rng.choice([1, 2])
    h = 2 * rng.choice([1, 2])
    config = {
        "model_type": model_type,
        "num_hidden_layers": len(layer_types),
        "layer_types": layer_types,
        "num_kv_shared_layers": shared,
        "hidden_size": 4 * rng.choice([4, 5, 6]),
        "intermediate_size": rng.choice([22, 28]),
        "num_attention_heads": h,
        "num_key_value_heads": h_kv,
        "head_dim": rng.choice([4, 6]),
        "global_head_dim": rng.choice([8, 12]),
        "attention_k_eq_v": rng.choice([True, False]),
        "num_global_key_value_heads": rng.choice([None, 1, 2]),
        "use_double_wide_mlp": rng.choice([True, False]),
        "vocab_size": rng.choice([67, 101]),
        "sliding_window": rng.choice([3, 64]),
        "final_logit_softcapping": rng.choice([None, 30.0]),
        "tie_word_embeddings": rng.choice([True, False]),
    }
    if model_type == "gemma4_text":  # its per-layer table must cover every id
        config["vocab_size_per_layer_input"] = config["vocab_size"]
        # none (0) only without KV sharing: transformers' forward fails on that pair (refused by name)
        config["hidden_size_per_layer_input"] = rng.choice([0, 3, 4] if shared == 0 else [3, 4])
    return config


def _minimax_m3(rng: random.Random) -> dict:
    """Full-attention layers and layers with the lightning indexer (blocks of 2 or 3 keys, S a multiple or not), a
    dense or MoE MLP each (widths of multiples of 8 for bf16 grouped matmuls), RoPE on rotary_dim of each head."""
    h_kv = rng.choice([1, 2])
    return {
        "model_type": "minimax_m3_vl_text",
        "num_hidden_layers": 2,
        "layer_types": rng.choice(
            [["full_attention", "minimax_m3_sparse"], ["minimax_m3_sparse"] * 2, ["full_attention"] * 2]
        ),
        "index_n_heads": rng.choice([1, h_kv]),  # one selection per key/value group: a divisor of h
        "index_head_dim": rng.choice([4, 6]),
        "index_block_size": rng.choice([2, 3]),
        "index_topk_blocks": rng.choice([1, 2]),
        "index_local_blocks": rng.choice([0, 1, 2]),
        "mlp_layer_types": rng.choice([["dense", "sparse"], ["sparse", "sparse"], ["sparse", "dense"]]),
        "hidden_size": rng.choice([16, 24, 32]),
        "num_attention_heads": h_kv * rng.choice([1, 2]),
        "num_key_value_heads": h_kv,
        "head_dim": rng.choice([6, 8]),
        "rotary_dim": rng.choice([2, 4]),
        "intermediate_size": rng.choice([8, 16]),
        "dense_intermediate_size": rng.choice([22, 28]),
        "shared_intermediate_size": rng.choice([8, 24]),
        "num_local_experts": rng.choice([3, 4, 5]),
        "num_experts_per_tok": rng.choice([1, 2]),
        "vocab_size": rng.choice([67, 101]),
        "pad_token_id": 0,
        "use_cache": rng.choice([True, False]),  # the cache holds the indexer key, and so its norm's graph
    }


DRAWS = {
    "deepseek_v32": lambda rng: _dsa("deepseek_v32", rng),
    "glm_moe_dsa": lambda rng: _dsa("glm_moe_dsa", rng),
    "mllama_text_model": _mllama,
    "moshi": _moshi,
    "gemma3n_text": _gemma3n,
    "gemma4_text": lambda rng: _gemma4("gemma4_text", rng),
    "gemma4_unified_text": lambda rng: _gemma4("gemma4_unified_text", rng),
    "minimax_m3_vl_text": _minimax_m3,
}

CASES = [
    ("deepseek_v32", 0, "fp32", "eager"),  # an MoE then a dense layer, one expert group, renormalized top-k
    ("deepseek_v32", 1, "bf16", "eager"),  # a dense then an MoE layer, two groups, k = 2
    ("deepseek_v32", 2, "bf16", "eager"),  # the indexer keeps 4 of 7 keys
    ("deepseek_v32", 3, "fp32", "eager"),  # MoE on both layers, the indexer keeps 4 of 9 keys
    ("deepseek_v32", 5, "bf16", "eager"),  # renormalized top-k, the indexer keeps 4 of 5 keys
    ("glm_moe_dsa", 0, "fp32", "eager"),  # an MoE then a dense layer, renormalized top-k, an indexer per layer
    ("glm_moe_dsa", 1, "bf16", "eager"),  # a dense then an MoE layer, two groups, k = 2
    ("glm_moe_dsa", 2, "bf16", "eager"),  # the second layer reuses the first's selection of 4 of 7 keys
    ("glm_moe_dsa", 3, "fp32", "eager"),  # MoE on both layers, the second reusing the first's selection
    ("glm_moe_dsa", 5, "bf16", "eager"),  # renormalized top-k, the second layer reusing the selection
    ("mllama_text_model", 0, "fp32", "eager"),  # no cross-attention layer, h = 2 · h_kv
    ("mllama_text_model", 6, "bf16", "eager"),  # the first layer a cross-attention layer, skipped
    ("mllama_text_model", 2, "fp32", "sdpa"),  # the last layer skipped
    ("mllama_text_model", 5, "bf16", "sdpa"),  # the middle layer skipped, h = 2 · h_kv
    ("moshi", 0, "fp32", "eager"),  # h = 2 · h_kv; the norms' scale is the parameter itself in fp32
    ("moshi", 1, "bf16", "eager"),  # two layers, each with its RoPE tables; the scale's fp32 copy per step
    ("moshi", 2, "fp32", "sdpa"),  # a cache window of 3 (the scores are not masked)
    ("moshi", 3, "bf16", "sdpa"),
    ("gemma3n_text", 0, "fp32", "eager"),  # full layers only, the last reusing the second's K/V as they are (h = h_kv)
    ("gemma3n_text", 1, "bf16", "eager"),  # a shared sliding layer repeating K/V to h = 2 · h_kv; every MLP sparse
    ("gemma3n_text", 4, "bf16", "eager"),  # two AltUp copies, a shared layer with h = h_kv; tied embeddings
    ("gemma3n_text", 5, "fp32", "eager"),  # four layers, two shared; the scaled clone into per_layer_input_gate
    ("gemma3n_text", 6, "fp32", "eager"),  # no KV sharing, h = 2 · h_kv, the second MLP sparse
    ("gemma3n_text", 7, "bf16", "eager"),  # two shared layers repeating K/V, S past the window, scaled clone
    ("gemma3n_text", 11, "bf16", "eager"),  # full layers only, the shared one repeating K/V
    ("gemma4_text", 0, "fp32", "eager"),  # the shared full layer reusing K/V as they are; double-wide MLP
    ("gemma4_text", 1, "bf16", "eager"),  # two shared layers repeating K/V to h; soft-capped logits
    ("gemma4_text", 2, "fp32", "eager"),  # attention_k_eq_v with num_global_key_value_heads on the full layer
    ("gemma4_text", 8, "bf16", "eager"),  # attention_k_eq_v, two shared layers repeating K/V
    ("gemma4_text", 10, "bf16", "eager"),  # no per-layer inputs (hidden_size_per_layer_input 0)
    ("gemma4_text", 11, "fp32", "eager"),  # attention_k_eq_v, a shared full layer, MLPs of one width
    ("gemma4_unified_text", 2, "fp32", "eager"),  # attention_k_eq_v, no sharing
    ("gemma4_unified_text", 3, "bf16", "eager"),  # two shared layers repeating K/V, double-wide MLPs
    ("gemma4_unified_text", 4, "fp32", "eager"),  # attention_k_eq_v, shared layers reusing K/V as they are
    ("gemma4_unified_text", 12, "bf16", "eager"),  # a shared full layer repeating K/V
    ("minimax_m3_vl_text", 0, "fp32", "eager"),  # indexer on both layers, blocks of 3 keys (S = 9), MoE on both
    ("minimax_m3_vl_text", 4, "bf16", "eager"),  # indexer on both, blocks of 3 padding S = 5, no local blocks
    ("minimax_m3_vl_text", 7, "fp32", "eager"),  # a full layer, then a sparse one with two indexer heads
    ("minimax_m3_vl_text", 12, "bf16", "eager"),  # indexer on both, two indexer heads, grouped keys and values
    ("minimax_m3_vl_text", 3, "bf16", "eager"),  # full layers only, a dense then an MoE layer
    ("minimax_m3_vl_text", 15, "fp32", "eager"),  # a full then a sparse layer, blocks of 2 padding S = 5, no cache
]
