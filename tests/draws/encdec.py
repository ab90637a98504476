"""Encoder-decoder records counted as their *ForCausalLM decoder on token ids alone (no encoder states, so the
cross-attention is not run): BART and the decoders built like it, Whisper's and TrOCR's."""

from __future__ import annotations

import random

ACTIVATIONS = ["gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu", "swish"]


def _decoder(model_type: str, rng: random.Random) -> dict:
    """A small decoder with distinct sizes; as many encoder layers as decoder layers (transformers sizes the
    *ForCausalLM's DynamicCache by num_hidden_layers, an alias of encoder_layers in these configs)."""
    layers, heads = rng.choice([1, 2]), rng.choice([2, 4])
    return {
        "model_type": model_type,
        "decoder_layers": layers,
        "encoder_layers": layers,
        "d_model": heads * rng.choice([4, 6]),
        "decoder_attention_heads": heads,
        "encoder_attention_heads": heads,
        "decoder_ffn_dim": rng.choice([22, 28, 36]),
        "vocab_size": rng.choice([67, 101]),
        "max_position_embeddings": rng.choice([16, 40]),
        "activation_function": rng.choice(ACTIVATIONS),
        "tie_word_embeddings": rng.choice([True, False]),
        "scale_embedding": rng.choice([True, False]),  # a Python float factor: nothing kept
        "pad_token_id": 0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "decoder_start_token_id": 2,
    }


def _whisper(rng: random.Random) -> dict:
    config = _decoder("whisper", rng)
    config["max_target_positions"] = config.pop("max_position_embeddings")
    config["max_source_positions"] = 16
    config |= {"suppress_tokens": None, "begin_suppress_tokens": None}
    return config


def _trocr(rng: random.Random) -> dict:
    config = _decoder("trocr", rng)
    config["use_learned_position_embeddings"] = rng.choice([True, False])  # learned, or a sinusoidal buffer
    config["layernorm_embedding"] = rng.choice([True, False])
    config["cross_attention_hidden_size"] = rng.choice([None, 12])  # the cross-attention (not run) reads 12 wide
    return config


def _bigbird_pegasus(rng: random.Random) -> dict:
    config = _decoder("bigbird_pegasus", rng)
    config["use_bias"] = rng.choice([True, False])
    config["attention_type"] = "original_full"  # the encoder's; the decoder attends fully either way
    return config


BART_LIKE = ["bart", "mbart", "marian", "pegasus", "plbart", "mvp", "blenderbot", "blenderbot-small"]
DRAWS = {
    **{name: (lambda rng, name=name: _decoder(name, rng)) for name in BART_LIKE},
    "whisper": _whisper,
    "trocr": _trocr,
    "bigbird_pegasus": _bigbird_pegasus,
}

SDPA = ["bart", "mbart", "marian", "pegasus", "plbart", "blenderbot", "blenderbot-small", "whisper"]
CASES = [
    # seeds drawn to cover each family's variants (the comment names the variant of the drawn config)
    *((name, 5, "fp32", "eager") for name in [*SDPA, "mvp", "bigbird_pegasus"]),  # gelu_new, two layers
    *((name, 16, "bf16", "eager") for name in [*SDPA, "mvp", "bigbird_pegasus"]),  # relu, two layers
    *((name, 0, "fp32", "sdpa") for name in SDPA),  # a fused GELU, two layers
    ("mvp", 0, "bf16", "eager"),  # a fused GELU, two layers (MvpForCausalLM has no SDPA path)
    ("bigbird_pegasus", 0, "bf16", "eager"),  # a fused GELU, two layers (no SDPA path)
    ("trocr", 0, "fp32", "eager"),  # learned positions, layernorm_embedding; a fused GELU, two layers
    ("trocr", 5, "bf16", "eager"),  # sinusoidal positions, layernorm_embedding; gelu_new, two layers
    ("trocr", 11, "fp32", "eager"),  # learned positions, no layernorm_embedding; a fused GELU, two layers
    ("trocr", 17, "bf16", "eager"),  # sinusoidal positions, no layernorm_embedding; two layers
    ("trocr", 16, "fp32", "eager"),  # sinusoidal positions, layernorm_embedding; relu, two layers
]


def _prophetnet(rng: random.Random) -> dict:
    """ProphetNet's own key names; S within half the position table (the predicting streams read positions + 1)."""
    layers, heads = rng.choice([1, 2]), rng.choice([2, 4])
    return {
        "model_type": "prophetnet",
        "num_decoder_layers": layers,
        "num_encoder_layers": layers,
        "hidden_size": heads * rng.choice([4, 6]),
        "num_decoder_attention_heads": heads,
        "num_encoder_attention_heads": heads,
        "decoder_ffn_dim": rng.choice([22, 28, 36]),
        "vocab_size": rng.choice([67, 101]),
        "max_position_embeddings": 40,
        "ngram": rng.choice([1, 2, 3]),
        "num_buckets": rng.choice([5, 8]),
        "relative_max_distance": rng.choice([12, 16]),  # past num_buckets / 2: transformers' buckets need it
        "activation_function": rng.choice(ACTIVATIONS),
        "tie_word_embeddings": rng.choice([True, False]),
        "disable_ngram_loss": rng.choice([True, False]),  # the other streams' targets ignored: the same storages
        "pad_token_id": 0,
    }


DRAWS["prophetnet"] = _prophetnet
CASES += [
    ("prophetnet", 5, "fp32", "eager"),  # three predicting streams, two layers, a fused GELU, untied
    ("prophetnet", 9, "bf16", "eager"),  # three predicting streams, two layers, SiLU, disable_ngram_loss
    ("prophetnet", 7, "fp32", "eager"),  # one predicting stream, two layers, SiLU
    ("prophetnet", 1, "bf16", "eager"),  # gelu_new
    ("prophetnet", 3, "fp32", "eager"),  # relu, untied
    ("prophetnet", 11, "bf16", "eager"),  # one predicting stream, 8 buckets over a distance of 12
]
