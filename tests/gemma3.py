"""The vision tower of Google's Gemma 3 checkpoints as their config.json files publish it (the same SigLIP tower in
google/gemma-3-4b-it and google/gemma-3-27b-it), for the composite and tower tests that read those configs."""

from __future__ import annotations

VISION_CONFIG = {
    "hidden_size": 1152,
    "image_size": 896,
    "intermediate_size": 4304,
    "model_type": "siglip_vision_model",
    "num_attention_heads": 16,
    "num_hidden_layers": 27,
    "patch_size": 14,
    "vision_use_head": False,
}
