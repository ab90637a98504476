"""A small Qwen3 config the quantised-checkpoint tests build their files from (each format's own library writes
them): two layers, two query heads sharing one KV head."""

from __future__ import annotations

QWEN3 = {
    "model_type": "qwen3",
    "hidden_size": 96,
    "intermediate_size": 160,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 48,
    "vocab_size": 300,
}
