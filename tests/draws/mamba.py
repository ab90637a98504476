"""Mamba-family configs: Mamba-1 and Mamba-2 mixers, alone and in hybrids with attention (and MoE) layers.

Sizes are small and distinct (d_state differs from the S and B the test draws, so a wrong factor shows); layouts
are drawn so that every layer kind of a record appears in some case.
"""

from __future__ import annotations

import random


def _mamba(rng: random.Random, model_type: str = "mamba") -> dict:
    config = {
        "model_type": model_type,
        "num_hidden_layers": rng.choice([1, 2]),
        "hidden_size": rng.choice([16, 20, 24]),
        "state_size": rng.choice([3, 4, 6]),
        "conv_kernel": rng.choice([2, 3, 4]),
        "time_step_rank": rng.choice([2, 3]),
        "vocab_size": rng.choice([67, 101]),
        "use_bias": rng.choice([True, False]),
        "use_conv_bias": rng.choice([True, False]),
        "residual_in_fp32": rng.choice([True, False]),
        "tie_word_embeddings": rng.choice([True, False]),
        "pad_token_id": 0,
    }
    if rng.random() < 0.5:
        config["intermediate_size"] = rng.choice([22, 28, 36])
    else:
        config["expand"] = rng.choice([1, 2])
    return config


DRAWS = {
    "mamba": _mamba,
    "falcon_mamba": lambda rng: _mamba(rng, "falcon_mamba"),
}


def _mamba2(rng: random.Random) -> dict:
    h_m, g = rng.choice([(2, 1), (2, 2), (4, 2)])
    d_mh = rng.choice([4, 8])
    expand = rng.choice([1, 2])
    return {
        "model_type": "mamba2",
        "num_hidden_layers": rng.choice([1, 2]),
        "hidden_size": h_m * d_mh // expand,
        "expand": expand,
        "num_heads": h_m,
        "head_dim": d_mh,
        "n_groups": g,
        "state_size": rng.choice([3, 4, 6]),
        "conv_kernel": rng.choice([2, 3, 4]),
        "chunk_size": rng.choice([2, 3, 4, 16]),  # S of 5, 7, 9: padded chunks, whole ones, one chunk
        "vocab_size": rng.choice([67, 101]),
        "use_bias": rng.choice([True, False]),
        "use_conv_bias": rng.choice([True, False]),
        "residual_in_fp32": rng.choice([True, False]),
        "tie_word_embeddings": rng.choice([True, False]),
        "time_step_limit": rng.choice([(0.0, float("inf")), (0.001, 0.1)]),
        "pad_token_id": 0,
    }


DRAWS["mamba2"] = _mamba2


def _attention(rng: random.Random) -> dict:
    """Attention heads that divide hidden_size (a multiple of 8, for bf16 grouped matmuls), grouped or not."""
    h_kv = rng.choice([1, 2])
    h = h_kv * rng.choice([1, 2])
    return {"hidden_size": rng.choice([16, 24, 32]), "num_attention_heads": h, "num_key_value_heads": h_kv}


def _jamba(rng: random.Random) -> dict:
    # four layers: Mamba and attention alternate (or one attention layer), MoE every 2 or 3 layers from 0 or 1: every
    # combination of mixer and MLP kind appears in some draw
    return {
        "model_type": "jamba",
        **_attention(rng),
        "num_hidden_layers": 4,
        "attn_layer_period": rng.choice([2, 4]),
        "attn_layer_offset": 1,
        "expert_layer_period": rng.choice([2, 3]),
        "expert_layer_offset": rng.choice([0, 1]),
        "intermediate_size": rng.choice([8, 16]),
        "num_experts": rng.choice([3, 4]),
        "num_experts_per_tok": rng.choice([1, 2]),
        "mamba_expand": rng.choice([1, 2]),
        "mamba_d_state": rng.choice([3, 4, 6]),
        "mamba_d_conv": rng.choice([2, 3, 4]),
        "mamba_dt_rank": rng.choice([2, 3]),
        "mamba_conv_bias": rng.choice([True, False]),
        "mamba_proj_bias": rng.choice([True, False]),
        "vocab_size": rng.choice([67, 101]),
        "tie_word_embeddings": rng.choice([True, False]),
        "pad_token_id": 0,
    }


DRAWS["jamba"] = _jamba


def _mamba2_mixer(rng: random.Random, d: int, prefix: str = "mamba_", chunk: str = "chunk_size") -> dict:
    """Mamba-2 mixer keys of a hybrid of width d: h_m heads of E·d / h_m in groups; S padded to chunks or one chunk."""
    h_m, g = rng.choice([(2, 1), (2, 2), (4, 2)])
    expand = rng.choice([1, 2])
    return {
        f"{prefix}expand": expand,
        f"{prefix}n_heads": h_m,
        f"{prefix}d_head": expand * d // h_m,
        f"{prefix}n_groups": g,
        f"{prefix}d_state": rng.choice([3, 4, 6]),
        f"{prefix}d_conv": rng.choice([2, 3, 4]),
        f"{prefix}{chunk}": rng.choice([2, 4, 16]),
        f"{prefix}conv_bias": rng.choice([True, False]),
        f"{prefix}proj_bias": rng.choice([True, False]),
    }


def _bamba(rng: random.Random) -> dict:
    attention = _attention(rng)
    return {
        "model_type": "bamba",
        **attention,
        "head_dim": rng.choice([4, 8]),  # RoPE on its first half
        "num_hidden_layers": 2,
        "attn_layer_indices": rng.choice([[0], [1]]),  # none: transformers cannot train it (refused)
        "intermediate_size": rng.choice([8, 24]),
        **_mamba2_mixer(rng, attention["hidden_size"]),
        "vocab_size": rng.choice([67, 101]),
        "tie_word_embeddings": rng.choice([True, False]),
        "pad_token_id": 0,
    }


DRAWS["bamba"] = _bamba


def _nemotron_h(rng: random.Random) -> dict:
    attention = _attention(rng)
    d = attention["hidden_size"]
    mixer = _mamba2_mixer(rng, d)
    kinds = ["mamba", "moe", "attention", "mlp"]
    rng.shuffle(kinds)
    return {
        "model_type": "nemotron_h",
        **attention,
        "head_dim": rng.choice([4, 8]),
        "num_hidden_layers": 4,
        # every kind of block once, in a drawn order; or the same as hybrid_override_pattern
        **rng.choice(
            [
                {"layers_block_type": kinds},
                {
                    "hybrid_override_pattern": "".join(
                        "M*E-"[["mamba", "attention", "moe", "mlp"].index(x)] for x in kinds
                    )
                },
            ]
        ),
        "mamba_num_heads": mixer["mamba_n_heads"],
        "mamba_head_dim": mixer["mamba_d_head"],
        "n_groups": mixer["mamba_n_groups"],
        "ssm_state_size": mixer["mamba_d_state"],
        "conv_kernel": mixer["mamba_d_conv"],
        "chunk_size": mixer["mamba_chunk_size"],
        "use_conv_bias": mixer["mamba_conv_bias"],
        "use_bias": mixer["mamba_proj_bias"],
        "intermediate_size": rng.choice([8, 24]),
        "n_routed_experts": 4,
        "num_experts_per_tok": rng.choice([1, 2]),
        "n_group": rng.choice([1, 2]),
        "topk_group": 1,
        "norm_topk_prob": rng.choice([True, False]),
        "routed_scaling_factor": rng.choice([1.0, 2.5]),
        "moe_intermediate_size": rng.choice([8, 16]),
        "moe_shared_expert_intermediate_size": rng.choice([8, 24]),
        "vocab_size": rng.choice([67, 101]),
        "tie_word_embeddings": rng.choice([True, False]),
        "pad_token_id": 0,
    }


DRAWS["nemotron_h"] = _nemotron_h


CASES = [
    ("mamba", 1, "fp32", "eager"),  # residual stream in the compute dtype, intermediate_size given
    ("mamba", 2, "bf16", "eager"),  # fp32 residual stream, expand 2
    ("mamba", 5, "fp32", "eager"),  # two layers, fp32 residual stream, biases
    ("mamba", 9, "bf16", "eager"),  # two layers, residual stream in the compute dtype
    ("falcon_mamba", 1, "fp32", "eager"),  # residual stream in the compute dtype
    ("falcon_mamba", 2, "bf16", "eager"),  # fp32 residual stream, expand 2
    ("falcon_mamba", 5, "bf16", "eager"),  # two layers, fp32 residual stream, biases
    ("falcon_mamba", 9, "fp32", "eager"),  # two layers, residual stream in the compute dtype
    ("mamba2", 1, "fp32", "eager"),  # one chunk (S <= Q): the scan's copies shared
    ("mamba2", 11, "bf16", "eager"),  # one chunk, one head per group
    ("mamba2", 6, "bf16", "eager"),  # two layers, S a whole number of chunks, two heads per group
    ("mamba2", 2, "fp32", "eager"),  # two layers, S padded to whole chunks
    ("mamba2", 5, "bf16", "eager"),  # S padded, four heads in two groups, residual stream in the compute dtype
    ("jamba", 5, "fp32", "eager"),  # Mamba + MoE, attention + dense, Mamba + dense, attention + MoE; grouped heads
    ("jamba", 20, "bf16", "eager"),  # the same layout, two experts per token, grouped heads
    ("jamba", 5, "bf16", "sdpa"),  # the fused attention kernel
    ("jamba", 12, "bf16", "eager"),  # one attention layer, MoE in the attention layer and the last Mamba layer
    ("bamba", 5, "fp32", "eager"),  # Mamba-2 then attention (grouped heads), S padded to chunks
    ("bamba", 6, "bf16", "eager"),  # attention then Mamba-2 (four heads in two groups), S padded
    ("bamba", 4, "bf16", "eager"),  # Mamba-2 in one chunk, then attention
    ("bamba", 1, "fp32", "sdpa"),  # the fused attention kernel, RoPE on 2 of 4
    ("bamba", 2, "bf16", "sdpa"),  # the fused attention kernel first, RoPE on 4 of 8; one chunk
    ("nemotron_h", 4, "fp32", "eager"),  # layers_block_type: Mamba-2, MoE (renormalized), attention, MLP
    ("nemotron_h", 6, "bf16", "eager"),  # layers_block_type: MLP, MoE (k = 1, not renormalized), Mamba-2, attention
    ("nemotron_h", 2, "bf16", "eager"),  # hybrid_override_pattern E-*M: grouped routing, S padded to chunks
    ("nemotron_h", 7, "fp32", "eager"),  # hybrid_override_pattern -*ME: not renormalized
    ("nemotron_h", 8, "bf16", "sdpa"),  # the fused attention kernel, grouped routing
]
