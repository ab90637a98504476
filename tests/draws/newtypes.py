"""Draws for the causal-LM types new in transformers 5.24: small configs that reach every `when` of their tables.

Sarvam-MoE, Sarvam-MLA and EXAONE are alias records (GLM-4-MoE's, DeepSeek-V3's and Llama's): they are drawn as those
are in ``tests/test_activations.py``, under their own config classes' names for the keys (the attribute maps)."""

from __future__ import annotations

import random


def sarvam_moe(rng: random.Random) -> dict:
    h_kv = rng.choice([2, 3])
    h = h_kv * rng.choice([1, 2])
    head = rng.choice([4, 6, 8])
    experts = "num_experts" if rng.random() < 0.5 else "n_routed_experts"  # SarvamMoEConfig's name or GLM's
    return {
        "model_type": "sarvam_moe",
        "num_hidden_layers": rng.choice([1, 2]),
        "hidden_size": 8 * h if h * head % 8 else rng.choice([16, 24, 32]),  # bf16 grouped matmuls: rows of 16 bytes
        "intermediate_size": rng.choice([22, 28, 36]),
        "num_attention_heads": h,
        "num_key_value_heads": h_kv,
        "head_dim": head,
        "vocab_size": rng.choice([67, 101]),
        "tie_word_embeddings": False,
        "pad_token_id": 0,
        experts: rng.choice([3, 4, 5]),
        "num_experts_per_tok": rng.choice([1, 2, 3]),
        "moe_intermediate_size": rng.choice([8, 16]),
        "first_k_dense_replace": rng.choice([0, 1]),
        "n_shared_experts": rng.choice([1, 2]),
        "norm_topk_prob": rng.choice([True, False]),
        "use_qk_norm": rng.choice([True, False]),
        "use_qkv_bias": rng.choice([True, False]),
        "partial_rotary_factor": rng.choice([0.5, 1.0]),
    }


def sarvam_mla(rng: random.Random) -> dict:
    h = rng.choice([2, 3, 4])
    groups = rng.choice([1, 2])
    return {
        "model_type": "sarvam_mla",
        "num_hidden_layers": rng.choice([1, 2]),
        "hidden_size": rng.choice([16, 24, 32]),
        "intermediate_size": rng.choice([22, 28, 36]),
        "num_attention_heads": h,
        "num_key_value_heads": h,  # MLA: k and v have h heads
        "vocab_size": rng.choice([67, 101]),
        "pad_token_id": 0,
        "tie_word_embeddings": False,
        "first_k_dense_replace": rng.choice([0, 1]),
        "q_lora_rank": rng.choice([8, 16, None]),
        "kv_lora_rank": rng.choice([8, 16]),
        "qk_rope_head_dim": rng.choice([4, 8]),
        "qk_nope_head_dim": rng.choice([8, 16]),
        "v_head_dim": rng.choice([8, 16]),
        "num_experts": rng.choice([4, 6]),  # SarvamMLAConfig's name of n_routed_experts
        "num_experts_per_tok": rng.choice([1, 2]),
        "n_group": groups,
        "topk_group": rng.choice(range(1, groups + 1)),
        "num_shared_experts": rng.choice([1, 2]),
        "moe_intermediate_size": rng.choice([8, 16]),
        "norm_topk_prob": rng.choice([True, False]),
    }


def exaone(rng: random.Random) -> dict:
    h_kv = rng.choice([2, 3])
    h = h_kv * rng.choice([1, 2])
    return {
        "model_type": "exaone",
        "num_layers": rng.choice([1, 2]),  # ExaoneConfig's name of num_hidden_layers
        "hidden_size": 8 * h,
        "intermediate_size": rng.choice([22, 28, 36]),
        "num_attention_heads": h,
        "num_key_value_heads": h_kv,
        "head_dim": rng.choice([4, 6]),
        "vocab_size": rng.choice([67, 101]),
        "tie_word_embeddings": rng.choice([True, False]),
        "attention_bias": rng.choice([True, False]),
        "mlp_bias": rng.choice([True, False]),
        "activation_function": "silu",
    }


def apertus1p5_text(rng: random.Random) -> dict:
    """Apertus with its LM head pruned to the first output_vocab_size rows, or whole, or tied (then the embedding)."""
    h_kv = rng.choice([2, 3])
    vocab = rng.choice([67, 101])
    tied = rng.choice([True, False])  # tied, the head is the embedding: a pruned one does not train (refused)
    return {
        "model_type": "apertus1p5_text",
        "num_hidden_layers": rng.choice([1, 2]),
        "hidden_size": 8 * h_kv,
        "intermediate_size": rng.choice([22, 28, 36]),
        "num_attention_heads": h_kv * rng.choice([1, 2]),
        "num_key_value_heads": h_kv,
        "head_dim": rng.choice([4, 6]),
        "vocab_size": vocab,
        "output_vocab_size": rng.choice([None, vocab] if tied else [None, 40, vocab]),
        "tie_word_embeddings": tied,
        "pad_token_id": 0,
    }


DRAWS = {"sarvam_moe": sarvam_moe, "sarvam_mla": sarvam_mla, "exaone": exaone, "apertus1p5_text": apertus1p5_text}

CASES = [
    ("sarvam_moe", 0, "fp32", "eager"),
    ("sarvam_moe", 1, "bf16", "eager"),
    ("sarvam_moe", 2, "fp32", "sdpa"),
    ("sarvam_moe", 3, "bf16", "eager"),
    ("sarvam_mla", 0, "fp32", "eager"),
    ("sarvam_mla", 1, "bf16", "eager"),
    ("sarvam_mla", 2, "fp32", "eager"),
    ("sarvam_mla", 3, "bf16", "eager"),  # DeepSeek-V3's table has no fused-kernel entries
    ("exaone", 0, "fp32", "eager"),
    ("exaone", 1, "bf16", "eager"),
    ("exaone", 2, "fp32", "sdpa"),
    ("apertus1p5_text", 3, "fp32", "eager"),  # the head pruned to 40 of 67 rows
    ("apertus1p5_text", 10, "bf16", "eager"),  # pruned to 40 of 101
    ("apertus1p5_text", 0, "fp32", "eager"),  # output_vocab_size = vocab_size, tied
    ("apertus1p5_text", 8, "bf16", "eager"),  # no output_vocab_size, untied
    ("apertus1p5_text", 12, "fp32", "sdpa"),  # pruned to 40 of 101
]
