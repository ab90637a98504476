"""Draws for the activation table of Inkling 2's text model: sliding and full layers in any order (layer 0 of
either kind, or the class's every-6th-full pattern), blocks of 1 to 4 layers for the attention residuals, so the
number of block states each residual attends over grows differently with the layer index; the window and the
relative extent shorter or longer than S. The logits are not cut here (the oracle's token ids reach V - 1, past
unpadded_vocab_size, where the loss fails): tests/test_inkling2_activations.py cuts them with ids below it.

fp32 only here: from_config leaves the router weight in bf16, where the router's fp32 input fails to meet it; the
bf16 cases (the same draws, the modules _keep_in_fp32_modules_strict names in fp32 as from_pretrained loads them)
are in tests/test_inkling2_activations.py."""

from __future__ import annotations

import random

from .ink import attention_and_experts


def _layer_types(rng: random.Random, layers: int) -> list[str] | None:
    """None (every 6th layer full), or each layer sliding or full at random."""
    if rng.random() < 0.2:
        return None
    return [rng.choice(["hybrid", "hybrid_sliding"]) for _ in range(layers)]


def _inkling2(rng: random.Random) -> dict:
    layers = rng.choice([2, 3, 4, 5, 7])
    h_kv, h_kv_sw = rng.choice([1, 2]), rng.choice([1, 2])
    vocab = rng.choice([67, 101])
    config = {
        "model_type": "inkling2_text",
        "num_hidden_layers": layers,
        "layer_types": _layer_types(rng, layers),
        "n_layers_per_attn_res_block": rng.choice([1, 2, 3, 4]),
        "hidden_size": rng.choice([16, 24]),
        **attention_and_experts(rng, h_kv, h_kv_sw),
        "moe_intermediate_size": rng.choice([8, 16]),
        "vocab_size": vocab,
        "pad_token_id": 0,
    }
    if rng.random() < 0.5:  # absent: the class's 200058, past V (no logit is cut)
        config["unpadded_vocab_size"] = vocab
    return config


DRAWS = {"inkling2_text": _inkling2}

CASES = [
    ("inkling2_text", 6, "fp32", "eager"),  # the class's pattern (layer 5 of 7 full), blocks of 2, W = 16 past S
    ("inkling2_text", 10, "fp32", "eager"),  # a full layer 0 (no residual), blocks of 3, one head, W = 3 < S = 9
    ("inkling2_text", 4, "fp32", "eager"),  # full layers only, one block (L_res = 4 > N), h = h_kv = 2
    ("inkling2_text", 19, "fp32", "eager"),  # sliding then full, h = 2 · h_kv, W = 3 < S
    ("inkling2_text", 12, "fp32", "eager"),  # every layer a block (L_res = 1), the last layer full, n_rel = 5 < S = 9
    ("inkling2_text", 21, "fp32", "eager"),  # full, sliding, full: blocks of 2, h_sw = 2 · h_kv_sw
    ("inkling2_text", 37, "fp32", "eager"),  # full first and last of 7 layers, L_res = 1, B = 3, n_rel = S = 5
    ("inkling2_text", 23, "fp32", "eager"),  # one head on every layer, blocks of 4, k = 2
    ("inkling2_text", 32, "fp32", "eager"),  # two layers (full, sliding), L_res = 1, k = 1
]
