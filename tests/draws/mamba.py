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
]
