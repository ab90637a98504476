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
    """Attention heads that divide hidden_size (a multiple of 8, for bf16 grouped matmuls), grouped or not; two
    key/value heads (with one, transformers' SDPA path repeats them to h heads: test_activations' MQA case)."""
    h_kv = 2
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


def _without_cache(config: dict, attention_free: bool) -> dict:
    """Without attention layers transformers 5.23 trains only with use_cache false (with a cache of Mamba layers only
    the forward asks it for a sequence length and fails); the cache does not change what autograd keeps."""
    return {**config, "use_cache": False} if attention_free else config


def _bamba(rng: random.Random) -> dict:
    attention = _attention(rng)
    config = {
        "model_type": "bamba",
        **attention,
        "head_dim": rng.choice([4, 8]),  # RoPE on its first half
        "num_hidden_layers": 2,
        "attn_layer_indices": rng.choice([None, [0], [1]]),
        "intermediate_size": rng.choice([8, 24]),
        **_mamba2_mixer(rng, attention["hidden_size"]),
        "vocab_size": rng.choice([67, 101]),
        "tie_word_embeddings": rng.choice([True, False]),
        "pad_token_id": 0,
    }
    return _without_cache(config, config["attn_layer_indices"] is None)


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


def _granitemoehybrid(rng: random.Random) -> dict:
    attention = _attention(rng)
    config = {
        "model_type": "granitemoehybrid",
        **attention,
        "num_hidden_layers": 2,
        "layer_types": rng.choice([["mamba", "attention"], ["attention", "mamba"], ["mamba", "mamba"]]),
        "position_embedding_type": rng.choice([None, "rope"]),
        "intermediate_size": rng.choice([8, 16]),
        "shared_intermediate_size": rng.choice([8, 24]),
        "num_local_experts": rng.choice([3, 4]),  # 0 (no MoE) is refused by the record
        "num_experts_per_tok": rng.choice([1, 2]),
        **_mamba2_mixer(rng, attention["hidden_size"]),
        "embedding_multiplier": rng.choice([1.0, 12.0]),
        "residual_multiplier": rng.choice([1.0, 0.22]),
        "logits_scaling": rng.choice([1.0, 8.0]),
        "vocab_size": rng.choice([67, 101]),
        "tie_word_embeddings": rng.choice([True, False]),
        "pad_token_id": 0,
    }
    return _without_cache(config, "attention" not in config["layer_types"])


DRAWS["granitemoehybrid"] = _granitemoehybrid


def _falcon_h1(rng: random.Random) -> dict:
    attention = _attention(rng)
    d = attention["hidden_size"]
    mixer = _mamba2_mixer(rng, d)
    return {
        "model_type": "falcon_h1",
        **attention,
        "head_dim": rng.choice([4, 8]),
        "num_hidden_layers": rng.choice([1, 2]),
        "intermediate_size": rng.choice([8, 24]),
        **{key: value for key, value in mixer.items() if key != "mamba_expand"},
        "mamba_d_ssm": mixer["mamba_n_heads"] * mixer["mamba_d_head"],
        "mlp_multipliers": rng.choice([[1.0, 1.0], [0.5, 2.0]]),
        "ssm_multipliers": rng.choice([[1.0] * 5, [0.5, 1.0, 2.0, 0.25, 1.5]]),
        "key_multiplier": rng.choice([1.0, 0.5]),
        "mamba_rms_norm": rng.choice([True, False]),
        "mamba_norm_before_gate": rng.choice([True, False]),
        "vocab_size": rng.choice([67, 101]),
        "tie_word_embeddings": rng.choice([True, False]),
        "pad_token_id": 0,
    }


DRAWS["falcon_h1"] = _falcon_h1


def _zamba(rng: random.Random) -> dict:
    h = rng.choice([2, 4])
    layout = rng.choice([["mamba", "hybrid", "hybrid"], ["hybrid", "mamba", "hybrid"], ["hybrid", "hybrid", "hybrid"]])
    return {
        "model_type": "zamba",
        "num_hidden_layers": 3,
        "layers_block_type": layout,  # two hybrid layers or more: one shared block, tied
        "hidden_size": rng.choice([16, 24]),
        "num_attention_heads": h,
        "num_key_value_heads": rng.choice([h, 2]),
        "intermediate_size": rng.choice([8, 24]),
        "hidden_act": rng.choice(["gelu", "silu"]),
        "n_mamba_heads": rng.choice([1, 2]),
        "mamba_expand": rng.choice([1, 2]),
        "mamba_d_state": rng.choice([3, 4, 6]),
        "mamba_d_conv": rng.choice([2, 3, 4]),
        "mamba_dt_rank": rng.choice([2, 3]),
        "mamba_conv_bias": rng.choice([True, False]),
        "mamba_proj_bias": rng.choice([True, False]),
        "vocab_size": rng.choice([67, 101]),
        "tie_word_embeddings": True,
        "pad_token_id": 0,
    }


DRAWS["zamba"] = _zamba


def _zamba2(rng: random.Random) -> dict:
    h = rng.choice([2, 4])
    d = rng.choice([16, 24])
    mixer = _mamba2_mixer(rng, d)
    layout = rng.choice([["mamba", "hybrid", "hybrid"], ["hybrid", "mamba", "hybrid"], ["hybrid", "hybrid", "hybrid"]])
    config = {
        "model_type": "zamba2",
        "num_hidden_layers": 3,
        "layers_block_type": layout,
        "num_mem_blocks": rng.choice([1, 2]),
        "hidden_size": d,
        "num_attention_heads": h,
        "num_key_value_heads": rng.choice([h, 2]),
        "intermediate_size": rng.choice([8, 24]),
        "hidden_act": rng.choice(["gelu", "silu"]),
        "adapter_rank": rng.choice([4, 6]),
        "use_shared_attention_adapter": rng.choice([True, False]),
        "use_mem_rope": rng.choice([True, False]),
        "mamba_expand": mixer["mamba_expand"],
        "n_mamba_heads": mixer["mamba_n_heads"],
        "mamba_headdim": mixer["mamba_d_head"],
        "mamba_ngroups": mixer["mamba_n_groups"],
        "mamba_d_state": mixer["mamba_d_state"],
        "mamba_d_conv": mixer["mamba_d_conv"],
        "chunk_size": mixer["mamba_chunk_size"],
        "vocab_size": rng.choice([67, 101]),
        "tie_word_embeddings": True,
        "pad_token_id": 0,
    }
    if config["use_shared_attention_adapter"]:  # the k and v adapters are h heads wide: no grouped heads (refused)
        config["num_key_value_heads"] = h
    return config


DRAWS["zamba2"] = _zamba2


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
    (
        "jamba",
        1,
        "fp32",
        "eager",
    ),  # all four mixer and MLP combinations; two experts per token
    ("jamba", 2, "bf16", "eager"),  # the same layout, one expert per token
    ("jamba", 5, "fp32", "eager"),  # one attention layer, MoE there and in the last Mamba layer; grouped heads
    ("jamba", 9, "bf16", "eager"),  # one attention layer, MoE in the first and the last layer; grouped heads
    ("jamba", 1, "bf16", "sdpa"),  # the fused attention kernel
    ("bamba", 1, "fp32", "eager"),  # attention then Mamba-2, S padded to chunks
    ("bamba", 4, "bf16", "eager"),  # Mamba-2 (S padded) then attention
    ("bamba", 6, "bf16", "eager"),  # Mamba-2 layers only (use_cache false)
    ("bamba", 10, "fp32", "eager"),  # Mamba-2 in one chunk, then attention
    ("bamba", 5, "fp32", "sdpa"),  # the fused attention kernel, grouped heads
    ("bamba", 13, "bf16", "sdpa"),  # the fused attention kernel, grouped heads; Mamba-2 in one chunk
    ("bamba", 10, "bf16", "sdpa"),  # the fused attention kernel, as many key/value heads as query heads
    ("nemotron_h", 4, "fp32", "eager"),  # layers_block_type: Mamba-2, MoE (renormalized), attention, MLP
    ("nemotron_h", 6, "bf16", "eager"),  # layers_block_type: MLP, MoE (k = 1, not renormalized), Mamba-2, attention
    ("nemotron_h", 2, "bf16", "eager"),  # hybrid_override_pattern -M*E: grouped routing, Mamba-2 in one chunk
    ("nemotron_h", 7, "fp32", "eager"),  # hybrid_override_pattern -*ME: not renormalized
    ("nemotron_h", 8, "bf16", "sdpa"),  # the fused attention kernel, grouped routing
    ("nemotron_h", 12, "fp32", "sdpa"),  # the fused attention kernel, grouped routing, renormalized
    ("granitemoehybrid", 1, "fp32", "eager"),  # Mamba-2 (S padded) then attention with RoPE; two experts per token
    ("granitemoehybrid", 5, "bf16", "eager"),  # attention without RoPE, then Mamba-2
    ("granitemoehybrid", 3, "bf16", "eager"),  # Mamba-2 layers only (use_cache false)
    ("granitemoehybrid", 12, "fp32", "eager"),  # Mamba-2 layers only, one chunk
    ("granitemoehybrid", 9, "bf16", "sdpa"),  # the fused attention kernel with RoPE
    ("granitemoehybrid", 10, "fp32", "sdpa"),  # the fused attention kernel without RoPE
    ("falcon_h1", 3, "fp32", "eager"),  # two layers, S padded to chunks, muP multipliers, SiLU gate
    ("falcon_h1", 1, "bf16", "eager"),  # gated RMSNorm after the gate, S padded
    ("falcon_h1", 4, "fp32", "eager"),  # two layers, gated RMSNorm before the gate
    ("falcon_h1", 5, "bf16", "eager"),  # two layers in one chunk, gated RMSNorm before the gate, grouped heads
    ("falcon_h1", 2, "bf16", "eager"),  # one chunk, SiLU gate
    ("falcon_h1", 9, "fp32", "sdpa"),  # the fused attention kernel, grouped heads
    ("falcon_h1", 10, "bf16", "sdpa"),  # the fused attention kernel, two layers with the gated RMSNorm
    ("zamba", 2, "fp32", "eager"),  # a Mamba layer, then two hybrid layers running the shared block; two Mamba heads
    ("zamba", 4, "bf16", "eager"),  # hybrid, Mamba, hybrid; one Mamba head (plain x_proj and dt_proj matmuls)
    ("zamba", 6, "fp32", "eager"),  # hybrid, Mamba, hybrid; two Mamba heads, GELU MLP
    ("zamba", 9, "bf16", "eager"),  # hybrid layers only, one Mamba head, grouped attention heads
    ("zamba", 11, "fp32", "eager"),  # hybrid layers only, two Mamba heads, grouped attention heads
    ("zamba", 7, "bf16", "sdpa"),  # the fused attention kernel
    ("zamba", 9, "fp32", "sdpa"),  # the fused attention kernel, grouped heads
    ("zamba2", 1, "fp32", "eager"),  # a Mamba-2 layer, two hybrid layers on two shared blocks; S padded to chunks
    ("zamba2", 3, "bf16", "eager"),  # hybrid, Mamba-2, hybrid on one shared block, RoPE and q/k/v adapters
    ("zamba2", 4, "fp32", "eager"),  # two shared blocks, RoPE and adapters
    ("zamba2", 9, "bf16", "eager"),  # hybrid layers only, grouped heads, no RoPE
    ("zamba2", 11, "fp32", "eager"),  # two shared blocks, RoPE, no q/k/v adapters
    ("zamba2", 2, "bf16", "eager"),  # hybrid layers only, Mamba-2 in one chunk
    ("zamba2", 5, "bf16", "sdpa"),  # the fused attention kernel with RoPE and adapters
    ("zamba2", 9, "fp32", "sdpa"),  # the fused attention kernel, grouped heads
]
