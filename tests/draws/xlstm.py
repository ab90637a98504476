"""xLSTM configs: transformers' own torch mLSTM (without the xlstm package), the cache off as a training step needs.

Chunk sizes are drawn below, at and above the S of 5, 7 or 9 that tests/test_activations.py draws (whole chunks with
steps left, whole chunks only, steps only); query/key and value head widths differ. Sequence lengths around the chunk
(one token, whole chunks, several chunks with steps left) are checked in tests/test_activations_xlstm.py.
"""

from __future__ import annotations

import random


def xlstm(rng: random.Random) -> dict:
    h = rng.choice([1, 2, 3])
    blocks = rng.choice([1, 2])
    return {
        "model_type": "xlstm",
        "num_blocks": blocks,
        "num_hidden_layers": blocks,
        "num_heads": h,
        "hidden_size": h * rng.choice([4, 8]),  # q and k: half of it (qk_dim_factor 0.5), v: all or half
        "v_dim_factor": rng.choice([1.0, 0.5]),
        "chunk_size": rng.choice([2, 3, 4, 5, 16]),
        "ffn_proj_factor": rng.choice([1.5, 2.667]),
        "ffn_round_up_to_multiple_of": rng.choice([8, 16]),
        "use_bias": rng.choice([True, False]),
        "norm_reduction_force_float32": rng.choice([True, False]),
        "vocab_size": rng.choice([67, 101]),
        "use_cache": False,  # with the cache transformers' backward fails (test_activations_xlstm.py)
        "pad_token_id": 0,
    }


DRAWS = {"xlstm": xlstm}

# (model_type, seed, dtype, attention): the S, B and chunk size each seed draws in test_activations.py
CASES = [
    ("xlstm", 5, "fp32", "eager"),  # S = Q = 5: one whole chunk (its reads take views of the state buffers), 3 heads
    ("xlstm", 9, "fp32", "eager"),  # S = 9, Q = 3: three whole chunks, no step left
    ("xlstm", 17, "fp32", "eager"),  # S = 9, Q = 4: two whole chunks and one step, v heads half the width
    ("xlstm", 12, "fp32", "eager"),  # S = 9, Q = 5: one whole chunk and four steps, norms without the fp32 upcast
    ("xlstm", 36, "fp32", "eager"),  # S = 9, Q = 2: four whole chunks and one step
    ("xlstm", 1, "fp32", "eager"),  # one head, S = Q = 5
    ("xlstm", 15, "fp32", "eager"),  # one head, S = 7, Q = 3: two whole chunks and one step
    ("xlstm", 10, "fp32", "eager"),  # S = 5 below Q = 16: steps only
    ("xlstm", 0, "bf16", "eager"),  # S = 9 below Q = 16: bf16 steps (a whole chunk in bf16 fails in transformers)
    ("xlstm", 3, "bf16", "eager"),  # one head, bf16 steps, norms in bf16
    ("xlstm", 10, "bf16", "eager"),  # 3 heads, bf16 steps, norms in bf16
    ("xlstm", 26, "bf16", "eager"),  # 3 heads, bf16 steps, norms upcast to fp32
]
