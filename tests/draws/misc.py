"""Draws for Granite SWA, Emu3, JetMoE, HunYuan V4, HRM, LFM2/LFM2-MoE/LFM3, ZAYA, BEAM, CPM-Ant, RecurrentGemma,
RWKV and xLSTM: small configs whose layer layouts reach every layer kind and every `when` of their tables."""

from __future__ import annotations

import random


def _heads(rng: random.Random) -> dict:
    h_kv = rng.choice([1, 2])
    return {"num_attention_heads": h_kv * rng.choice([1, 2]), "num_key_value_heads": h_kv}


def granite_swa(rng: random.Random) -> dict:
    layers = rng.choice([2, 3])
    kinds = ["full_attention", "sliding_attention"]
    config = {
        "model_type": "granite_swa",
        "num_hidden_layers": layers,
        "hidden_size": 16,
        "intermediate_size": rng.choice([8, 24]),
        "head_dim": rng.choice([4, 8]),
        "vocab_size": 67,
        "sliding_window": rng.choice([2, 3, 64]),
        "layer_types": rng.choice([None, [rng.choice(kinds) for _ in range(layers)]]),
        "layer_rope_theta": rng.choice(
            [None, [rng.choice([0, 10000]) for _ in range(layers)], [0] * layers, [500000] * layers]
        ),
        "tie_word_embeddings": rng.choice([True, False]),
        **_heads(rng),
    }
    return config


DRAWS = {"granite_swa": granite_swa}

CASES = [
    ("granite_swa", 0, "fp32", "eager"),
    ("granite_swa", 1, "bf16", "eager"),
    ("granite_swa", 2, "fp32", "eager"),
    ("granite_swa", 3, "bf16", "eager"),
    ("granite_swa", 4, "bf16", "eager"),
]


def emu3_text_model(rng: random.Random) -> dict:
    """Emu3's text model, built (as AutoModelForCausalLM builds it) from an Emu3Config's text_config."""
    text = {
        "num_hidden_layers": 2,
        "attention_dropout": 0.0,
        "pad_token_id": 0,
        "hidden_size": 16,
        "intermediate_size": rng.choice([8, 24]),
        "vocab_size": 67,
        "attention_bias": rng.choice([True, False]),
        "mlp_bias": rng.choice([True, False]),
        **_heads(rng),
    }
    return {"model_type": "emu3", "text_config": text, "vocab_size": text["vocab_size"]}  # the oracle reads vocab_size


DRAWS["emu3_text_model"] = emu3_text_model
CASES += [
    ("emu3_text_model", 0, "fp32", "eager"),
    ("emu3_text_model", 1, "bf16", "eager"),
    ("emu3_text_model", 2, "bf16", "sdpa"),
    ("emu3_text_model", 3, "fp32", "sdpa"),
]


def jetmoe(rng: random.Random) -> dict:
    experts = rng.choice([3, 4])
    return {
        "model_type": "jetmoe",
        "num_hidden_layers": 2,
        "hidden_size": 16,
        "intermediate_size": rng.choice([8, 12]),
        "num_key_value_heads": rng.choice([1, 2]),
        "kv_channels": rng.choice([4, 8]),
        "num_local_experts": experts,
        "num_experts_per_tok": rng.choice([1, 2, experts]),
        "activation_function": rng.choice(["silu", "gelu"]),
        "vocab_size": 67,
        "tie_word_embeddings": rng.choice([True, False]),
    }


DRAWS["jetmoe"] = jetmoe
CASES += [
    ("jetmoe", 0, "fp32", "eager"),
    ("jetmoe", 1, "bf16", "eager"),
    ("jetmoe", 2, "bf16", "eager"),
    ("jetmoe", 3, "fp32", "sdpa"),
    ("jetmoe", 4, "bf16", "sdpa"),
]


def hrm_text(rng: random.Random) -> dict:
    """num_hidden_layers: the cache's slots, one per layer pass (N · H_cycles · (L_cycles + 1))."""
    layers, high, low = rng.choice([1, 2]), rng.choice([1, 2, 3]), rng.choice([2, 3])
    return {
        "model_type": "hrm_text",
        "num_layers_per_stack": layers,
        "num_hidden_layers": layers * high * (low + 1),
        "hidden_size": 16,
        "intermediate_size": rng.choice([8, 24]),
        "num_attention_heads": rng.choice([2, 4]),
        "head_dim": rng.choice([4, 8]),
        "H_cycles": high,
        "L_cycles": low,
        "attention_bias": rng.choice([True, False]),
        "vocab_size": 67,
        "pad_token_id": 0,
    }


DRAWS["hrm_text"] = hrm_text
CASES += [
    ("hrm_text", 0, "fp32", "eager"),
    ("hrm_text", 1, "bf16", "eager"),
    ("hrm_text", 2, "bf16", "eager"),
    ("hrm_text", 3, "fp32", "sdpa"),
    ("hrm_text", 4, "bf16", "sdpa"),
]


def _lfm_layers(rng: random.Random, layers: int) -> list[str]:
    """Conv and attention layers, each kind at least once (a model of conv layers only fails in transformers: its
    cache has no attention layer to tell the sequence length)."""
    kinds = [rng.choice(["conv", "full_attention"]) for _ in range(layers)]
    kinds[:2] = rng.choice([["conv", "full_attention"], ["full_attention", "conv"]])
    return kinds


def lfm2(rng: random.Random) -> dict:
    layers = rng.choice([2, 3])
    return {
        "model_type": "lfm2",
        "num_hidden_layers": layers,
        "hidden_size": 16,
        "intermediate_size": rng.choice([24, 36]),
        "block_auto_adjust_ff_dim": rng.choice([True, False]),
        "block_multiple_of": rng.choice([4, 8]),
        "conv_L_cache": rng.choice([2, 3, 6, 8]),  # S >= k_conv and S < k_conv (a padded sequence)
        "conv_bias": rng.choice([True, False]),
        "layer_types": _lfm_layers(rng, layers),
        "vocab_size": 67,
        **_heads(rng),
    }


DRAWS["lfm2"] = lfm2
CASES += [
    ("lfm2", 0, "fp32", "eager"),
    ("lfm2", 1, "bf16", "eager"),
    ("lfm2", 2, "bf16", "eager"),
    ("lfm2", 3, "fp32", "sdpa"),
    ("lfm2", 4, "bf16", "sdpa"),
]


def lfm2_moe(rng: random.Random) -> dict:
    """Sizes of multiples of 8 (the grouped matmul wants 16-byte strides); dense then MoE layers."""
    layers = rng.choice([2, 3])
    experts = rng.choice([3, 4])
    return {
        "model_type": "lfm2_moe",
        "num_hidden_layers": layers,
        "hidden_size": 16,
        "intermediate_size": rng.choice([8, 24]),
        "moe_intermediate_size": rng.choice([8, 16]),
        "num_experts": experts,
        "num_experts_per_tok": rng.choice([1, 2, experts]),
        "num_dense_layers": rng.choice([0, 1]),
        "norm_topk_prob": rng.choice([True, False]),
        "use_expert_bias": rng.choice([True, False]),
        "conv_L_cache": rng.choice([3, 8]),
        "layer_types": _lfm_layers(rng, layers),
        "vocab_size": 67,
        **_heads(rng),
    }


DRAWS["lfm2_moe"] = lfm2_moe
# every mix of norm_topk_prob and use_expert_bias, dense or not first, conv or attention first
CASES += [("lfm2_moe", seed, dtype, "eager") for seed, dtype in enumerate(["fp32", "bf16"] * 3)]
CASES += [("lfm2_moe", 6, "fp32", "sdpa"), ("lfm2_moe", 7, "bf16", "sdpa")]


def lfm3(rng: random.Random) -> dict:
    """Conv, full and sliding layers in some order; the gate and sandwich norms on or off."""
    layers = rng.choice([2, 3])
    kinds = ["conv", "full_attention", "sliding_attention"]
    layer_types = [rng.choice(kinds) for _ in range(layers)]
    layer_types[:2] = rng.sample(kinds, 2)
    if "conv" not in layer_types or not set(layer_types) - {"conv"}:
        layer_types[0], layer_types[1] = "conv", rng.choice(kinds[1:])
    return {
        "model_type": "lfm3",
        "num_hidden_layers": layers,
        "hidden_size": 16,
        "intermediate_size": rng.choice([8, 24]),
        "head_dim": rng.choice([4, 8]),
        "conv_L_cache": rng.choice([3, 7]),  # 7 (the default) above S = 5
        "conv_bias": rng.choice([True, False]),
        "attention_bias": rng.choice([True, False]),
        "use_attention_gate": rng.choice([True, False]),
        "use_sandwich_norm": rng.choice([True, False]),
        "sliding_window": rng.choice([2, 3, 64]),
        "layer_types": layer_types,
        "vocab_size": 67,
        "pad_token_id": 0,
        **_heads(rng),
    }


DRAWS["lfm3"] = lfm3
CASES += [("lfm3", seed, dtype, "eager") for seed, dtype in enumerate(["fp32", "bf16"] * 3)]
# SDPA: sliding layers past their window (a mask kept per layer, K and V repeated to h heads) and within it (none)
CASES += [
    ("lfm3", 6, "fp32", "sdpa"),
    ("lfm3", 7, "bf16", "sdpa"),
    ("lfm3", 12, "bf16", "sdpa"),
    ("lfm3", 14, "fp32", "sdpa"),
    ("lfm3", 8, "bf16", "sdpa"),  # h = 4, h_kv = 2: K and V repeated past the window
    ("lfm3", 11, "fp32", "sdpa"),  # h = 2, h_kv = 1: the one head expanded as a view
]


def beam(rng: random.Random) -> dict:
    """Sliding (RoPE) and full (NoPE) layers, dense and MoE MLPs; sizes of multiples of 8 (grouped matmuls)."""
    experts, groups = rng.choice([(4, 2), (8, 4), (4, 1)])
    return {
        "model_type": "beam",
        "num_hidden_layers": 2,
        "hidden_size": 16,
        "intermediate_size": rng.choice([8, 24]),
        "moe_intermediate_size": rng.choice([8, 16]),
        "num_experts": experts,
        "n_group": groups,
        "topk_group": rng.choice([1, groups]),
        "num_experts_per_tok": rng.choice([1, 2]),
        "norm_topk_prob": rng.choice([True, False]),
        "final_logit_softcapping": rng.choice([None, 30.0]),
        "head_dim": rng.choice([4, 8]),
        "sliding_window": rng.choice([3, 64]),
        "layer_types": rng.choice([["sliding_attention", "full_attention"], ["full_attention", "sliding_attention"]]),
        "mlp_layer_types": rng.choice([["dense", "sparse"], ["sparse", "sparse"], ["sparse", "dense"]]),
        "vocab_size": 67,
        "pad_token_id": 0,
        **_heads(rng),
    }


DRAWS["beam"] = beam
CASES += [("beam", seed, dtype, "eager") for seed, dtype in enumerate(["fp32", "bf16"] * 3)]


def cpmant(rng: random.Random) -> dict:
    """prompt_types >= 3: the model's prompt ids are those of the third prompt type."""
    return {
        "model_type": "cpmant",
        "num_hidden_layers": rng.choice([1, 2]),
        "hidden_size": 16,
        "dim_ff": rng.choice([8, 24]),
        "num_attention_heads": rng.choice([1, 2, 4]),
        "dim_head": rng.choice([4, 8]),
        "prompt_types": rng.choice([3, 4]),
        "prompt_length": rng.choice([1, 3]),
        "segment_types": 4,
        "position_bias_num_buckets": rng.choice([8, 16]),
        "vocab_size": 67,
    }


DRAWS["cpmant"] = cpmant
CASES += [("cpmant", seed, dtype, "eager") for seed, dtype in enumerate(["fp32", "bf16"] * 2)]


def recurrent_gemma(rng: random.Random) -> dict:
    """block_types repeated over the layers, each with an attention layer (transformers fails without one: its cache
    has no attention layer to tell the sequence length)."""
    block_types = rng.choice(
        [["recurrent", "attention"], ["attention", "recurrent"], ["recurrent", "recurrent", "attention"]]
    )
    return {
        "model_type": "recurrent_gemma",
        "num_hidden_layers": len(block_types) + rng.choice([0, 1]),
        "hidden_size": 16,
        "intermediate_size": rng.choice([16, 24]),
        **rng.choice(
            [
                {"num_attention_heads": 1},
                {"num_attention_heads": 2},
                {"num_attention_heads": 4, "num_key_value_heads": 2},
            ]
        ),
        "lru_width": rng.choice([16, 24]),
        "conv1d_width": rng.choice([2, 4, 6]),
        "attention_window_size": rng.choice([3, 64]),
        "block_types": block_types,
        "vocab_size": 67,
    }


DRAWS["recurrent_gemma"] = recurrent_gemma
CASES += [("recurrent_gemma", seed, dtype, "eager") for seed, dtype in enumerate(["fp32", "bf16"] * 3)]


def rwkv(rng: random.Random) -> dict:
    """At least two layers (its weight init divides by num_hidden_layers - 1)."""
    return {
        "model_type": "rwkv",
        "num_hidden_layers": rng.choice([2, 3]),
        "hidden_size": 16,
        "attention_hidden_size": rng.choice([8, 16, 24]),
        "intermediate_size": rng.choice([24, 32]),
        "context_length": 64,
        "rescale_every": rng.choice([0, 1, 6]),
        "vocab_size": 67,
    }


DRAWS["rwkv"] = rwkv
CASES += [("rwkv", seed, dtype, "eager") for seed, dtype in enumerate(["fp32", "bf16"] * 2)]
# SDPA: a sliding layer within its window (6) and past it with h_kv = 2 (7: K and V repeated) and h_kv = 1 (8, 9)
CASES += [("beam", seed, dtype, "sdpa") for seed, dtype in zip(range(6, 10), ["fp32", "bf16"] * 2, strict=True)]
