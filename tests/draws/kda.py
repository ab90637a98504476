"""Kimi Delta Attention hybrids (Kimi Linear): KDA layers beside MLA full-attention layers, dense or MoE MLPs with
grouped sigmoid routing. The layer layouts are drawn so that every layer kind (KDA or MLA; dense or MoE) occurs in
some case; the chunked delta rule's sizes in S past one chunk are checked in tests/test_activations_kda.py."""

from __future__ import annotations

import random

LAYOUTS = [
    ["linear_attention", "full_attention"],
    ["full_attention", "linear_attention"],
    ["linear_attention", "linear_attention"],
]
MLP_LAYOUTS = [["dense", "sparse"], ["sparse", "dense"], ["sparse", "sparse"], ["dense", "dense"]]


def kimi_linear(rng: random.Random) -> dict:
    n_group = rng.choice([1, 2])
    layers = rng.choice(LAYOUTS)
    return {
        "model_type": "kimi_linear",
        "num_hidden_layers": 2,
        "layer_types": layers,
        "mlp_layer_types": rng.choice(MLP_LAYOUTS),
        "hidden_size": rng.choice([16, 32]),  # bf16 grouped matmuls: rows a multiple of 16 bytes
        "intermediate_size": rng.choice([20, 28]),
        "moe_intermediate_size": rng.choice([8, 16]),
        "num_attention_heads": rng.choice([1, 2, 4]),
        "num_key_value_heads": None,
        "q_lora_rank": rng.choice([None, 12]),
        "kv_lora_rank": rng.choice([8, 16]),
        "qk_rope_head_dim": rng.choice([2, 4]),
        "qk_nope_head_dim": rng.choice([4, 8]),
        "v_head_dim": rng.choice([4, 6]),
        "linear_num_heads": rng.choice([1, 2]),
        "linear_head_dim": rng.choice([4, 6, 8]),
        "linear_conv_kernel_dim": rng.choice([2, 3, 4]),
        "num_local_experts": n_group * rng.choice([2, 4]),
        "num_experts_per_tok": rng.choice([1, 2]),
        "n_group": n_group,
        "topk_group": n_group,
        "n_shared_experts": rng.choice([1, 2]),
        "norm_topk_prob": rng.choice([True, False]),
        "vocab_size": rng.choice([67, 101]),
        "pad_token_id": 0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "use_cache": rng.choice([True, False]) if "full_attention" in layers else False,
    }


def bailing_hybrid(rng: random.Random) -> dict:
    """Bailing hybrid: the KDA heads are the attention heads, of head_dim; kda_safe_gate drawn, and the MLA layers'
    query latent (q_lora_rank, drawn last so that the other keys of a seed stay as they were)."""
    layers = rng.choice(LAYOUTS)
    return {
        "model_type": "bailing_hybrid",
        "num_hidden_layers": 2,
        "layer_types": layers,
        "mlp_layer_types": rng.choice(MLP_LAYOUTS),
        "hidden_size": rng.choice([16, 32]),  # bf16 grouped matmuls: rows a multiple of 16 bytes
        "intermediate_size": rng.choice([20, 28]),
        "moe_intermediate_size": rng.choice([8, 16]),
        "num_attention_heads": rng.choice([1, 2, 4]),
        "num_key_value_heads": None,
        "head_dim": rng.choice([4, 6, 8]),
        "kv_lora_rank": rng.choice([8, 16]),
        "qk_rope_head_dim": rng.choice([2, 4]),
        "qk_nope_head_dim": rng.choice([4, 8]),
        "v_head_dim": rng.choice([4, 6]),
        "short_conv_kernel_size": rng.choice([2, 3, 4]),
        "kda_safe_gate": rng.choice([True, False]),
        "num_local_experts": 2 * rng.choice([2, 4]),
        "num_experts_per_tok": rng.choice([1, 2]),
        "n_group": 2,
        "topk_group": rng.choice([1, 2]),
        "n_shared_experts": rng.choice([1, 2]),
        "norm_topk_prob": rng.choice([True, False]),
        "vocab_size": rng.choice([67, 101]),
        "pad_token_id": 0,
        "eos_token_id": 2,
        "use_cache": rng.choice([True, False]) if "full_attention" in layers else False,
        "q_lora_rank": rng.choice([None, 8, 12]),
    }


DRAWS = {"kimi_linear": kimi_linear, "bailing_hybrid": bailing_hybrid}

CASES = [
    ("kimi_linear", 0, "fp32", "eager"),  # MLA (query latent) then KDA, a dense then an MoE layer, two groups
    ("kimi_linear", 2, "fp32", "eager"),  # KDA of two heads then MLA without a query latent, top-k not renormalized
    ("kimi_linear", 4, "fp32", "eager"),  # MLA of one head (values a view of kv_b_proj) then KDA, a cache
    ("kimi_linear", 6, "bf16", "eager"),  # MLA then KDA, MoE on both layers, query latent
    ("kimi_linear", 12, "bf16", "eager"),  # MLA then KDA, MoE on both, a cache, two expert groups
    ("kimi_linear", 15, "bf16", "eager"),  # KDA then MLA of one head, a cache
    ("kimi_linear", 3, "bf16", "eager"),  # two KDA layers of two heads, an MoE then a dense layer
    ("kimi_linear", 7, "fp32", "eager"),  # KDA then MLA, dense MLPs, a cache
    ("bailing_hybrid", 1, "fp32", "eager"),  # KDA (softplus gate) then gated MLA, a dense then an MoE layer
    ("bailing_hybrid", 2, "bf16", "eager"),  # KDA (sigmoid safe gate) then MLA of four heads, a cache
    ("bailing_hybrid", 4, "fp32", "eager"),  # KDA then MLA of one head (values a view of kv_b_proj), a cache
    ("bailing_hybrid", 7, "bf16", "eager"),  # MLA then KDA (softplus gate), MoE then dense, a cache
    ("bailing_hybrid", 6, "bf16", "eager"),  # two KDA layers of one head, softplus gate
    ("bailing_hybrid", 9, "fp32", "eager"),  # MLA then KDA, MoE on both, a cache
]
