"""Draws for Phi-4-multimodal (phi4_multimodal) on token ids alone: the Phi-3 decoder with grouped heads, partial
RoPE (Phi-4-multimodal-instruct turns 0.75 of each head) with or without longrope, a window on every layer or on the
layers layer_types marks, a tied or untied head; small encoders, which do not run on token ids alone and keep
nothing."""

from __future__ import annotations

import random

VISION = {"num_hidden_layers": 1, "hidden_size": 8, "intermediate_size": 8, "num_attention_heads": 2}
AUDIO = {"num_blocks": 1, "hidden_size": 8, "intermediate_size": 8, "num_attention_heads": 2}


def phi4_multimodal(rng: random.Random) -> dict:
    layers, h_kv = rng.choice([1, 2, 3]), rng.choice([2, 3])
    h = h_kv * rng.choice([1, 2])
    head = rng.choice([4, 6, 8])
    kinds = ["sliding_attention", "full_attention"]
    window = rng.choice([None, 3, 64])
    config = {
        "model_type": "phi4_multimodal",
        "num_hidden_layers": layers,
        "hidden_size": h * head,
        "intermediate_size": rng.choice([22, 28, 36]),
        "num_attention_heads": h,
        "num_key_value_heads": h_kv,
        "vocab_size": rng.choice([67, 101]),
        "pad_token_id": 0,  # the class's 199999 lies past a small vocabulary
        "tie_word_embeddings": rng.choice([True, False]),
        # int(h_d · factor) channels turned, rounded up to pairs by the rotary table (odd for heads of 6 at 0.75)
        "partial_rotary_factor": rng.choice([1.0, 0.75, 0.5]),
        "sliding_window": window,
        "vision_config": VISION,
        "audio_config": AUDIO,
    }
    if rng.random() < 0.5:  # Phi-4-multimodal-instruct's longrope, its long factors from S > 4 on (no tensor more kept)
        factor = config.pop("partial_rotary_factor")
        rotated = int(head * factor) // 2  # validate_rope: one factor per frequency of int(d // h · factor) channels
        config["original_max_position_embeddings"] = 4
        config["rope_parameters"] = {
            **{"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": factor},
            **{"short_factor": [1.0] * rotated, "long_factor": [2.0] * rotated, "original_max_position_embeddings": 4},
        }
    if window is not None:  # a sliding layer without a window fails in transformers' cache, built in training too
        config["layer_types"] = rng.choice([None, [rng.choice(kinds) for _ in range(layers)]])
    return config


DRAWS = {"phi4_multimodal": phi4_multimodal}

# each seed's draw, by what it exercises (B >= 2 in every one; printed from phi4_multimodal(random.Random(seed)))
CASES = [
    ("phi4_multimodal", 2, "fp32", "eager"),  # longrope, heads of 6 at 0.5: int(3) channels, a table 4 wide; S = 9 > 4
    ("phi4_multimodal", 3, "bf16", "eager"),  # longrope, tied, grouped heads, 0.75 of heads of 8, a window of 3, B = 3
    ("phi4_multimodal", 5, "fp32", "eager"),  # 3 layers, two sliding and a full one (layer_types), 6 query heads on 3
    ("phi4_multimodal", 7, "bf16", "eager"),  # longrope, 2 layers, grouped heads, 0.5 of heads of 8, no window
    ("phi4_multimodal", 10, "fp32", "eager"),  # default RoPE at 0.75 of heads of 6, sliding and full layers
    ("phi4_multimodal", 10, "bf16", "eager"),
    ("phi4_multimodal", 11, "bf16", "eager"),  # 2 sliding layers, 0.5 of heads of 8, B = 3
    ("phi4_multimodal", 14, "fp32", "eager"),  # longrope at 0.75, a window that layer_types leaves unused
]
