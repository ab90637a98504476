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

CASES = [
    ("mamba", 1, "fp32", "eager"),  # residual stream in the compute dtype, intermediate_size given
    ("mamba", 2, "bf16", "eager"),  # fp32 residual stream, expand 2
    ("mamba", 5, "fp32", "eager"),  # two layers, fp32 residual stream, biases
    ("mamba", 9, "bf16", "eager"),  # two layers, residual stream in the compute dtype
    ("falcon_mamba", 1, "fp32", "eager"),  # residual stream in the compute dtype
    ("falcon_mamba", 2, "bf16", "eager"),  # fp32 residual stream, expand 2
    ("falcon_mamba", 5, "bf16", "eager"),  # two layers, fp32 residual stream, biases
    ("falcon_mamba", 9, "fp32", "eager"),  # two layers, residual stream in the compute dtype
]
