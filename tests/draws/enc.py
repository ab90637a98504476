"""Draws for the encoder-style records trained as causal LMs (``is_decoder``): BERT and its relatives."""

from __future__ import annotations

import random

# hidden_act values the tables are checked for (the others are refused by name)
HIDDEN_ACTS = ["gelu", "relu", "gelu_new", "silu", "gelu_pytorch_tanh"]


def bert_like(model_type: str, rng: random.Random) -> dict:
    """A small BERT-style config: h heads of d/h, a learned position table longer than the drawn sequences."""
    h = rng.choice([2, 3, 4])
    return {
        "model_type": model_type,
        "num_hidden_layers": rng.choice([1, 2]),
        "num_attention_heads": h,
        "hidden_size": h * rng.choice([4, 6, 8]),
        "intermediate_size": rng.choice([20, 28, 36]),
        "vocab_size": rng.choice([67, 101]),
        "max_position_embeddings": rng.choice([16, 40]),
        "type_vocab_size": rng.choice([1, 2]),
        "hidden_act": rng.choice(HIDDEN_ACTS),
        "tie_word_embeddings": rng.choice([True, False]),
        "is_decoder": rng.choice([True, True, False]),  # a causal mask or none: the same storages
    }


def _with(model_type: str, **choices: list):
    def draw(rng: random.Random) -> dict:
        config = bert_like(model_type, rng)
        config.update({key: rng.choice(values) for key, values in choices.items()})
        return config

    return draw


DRAWS = {
    name: _with(name)
    for name in (
        "bert",
        "roberta",
        "xlm-roberta",
        "camembert",
        "data2vec-text",
        "bert-generation",
        "megatron-bert",
        "roberta-prelayernorm",
        "xlm-roberta-xl",
    )
}
DRAWS["ernie"] = _with("ernie", use_task_id=[True, False])


def _electra(rng: random.Random) -> dict:
    """ELECTRA: embeddings of d_emb, projected to d when d_emb differs from d."""
    config = bert_like("electra", rng)
    config["embedding_size"] = rng.choice([8, 16, config["hidden_size"]])
    return config


DRAWS["electra"] = _electra


def _rembert(rng: random.Random) -> dict:
    """RemBERT: input embeddings of d_emb, a head of d_out."""
    config = bert_like("rembert", rng)
    config["input_embedding_size"] = rng.choice([8, 12])
    config["output_embedding_size"] = rng.choice([10, 20])
    return config


def _roc_bert(rng: random.Random) -> dict:
    """RoCBert: shape and pronunciation embeddings concatenated to the word embeddings, or not."""
    config = bert_like("roc_bert", rng)
    config.update({"pronunciation_vocab_size": 20, "shape_vocab_size": 30})
    config.update({"pronunciation_embed_dim": rng.choice([6, 10]), "shape_embed_dim": rng.choice([8, 12])})
    config.update({key: rng.choice([True, False]) for key in ("concat_input", "enable_pronunciation", "enable_shape")})
    return config


DRAWS["rembert"] = _rembert
DRAWS["roc_bert"] = _roc_bert


def _roformer(rng: random.Random) -> dict:
    """RoFormer: rotary positions on q and k (and v), embeddings of d_emb (null: d); heads of an even d/h."""
    config = bert_like("roformer", rng)
    config["hidden_size"] = config["num_attention_heads"] * rng.choice([4, 8])
    config["embedding_size"] = rng.choice([None, 10, config["hidden_size"]])
    config["rotary_value"] = rng.choice([True, False])
    return config


DRAWS["roformer"] = _roformer


def _big_bird(rng: random.Random) -> dict:
    """BigBird: original_full attention, or block_sparse with blocks so long that it falls back to full attention."""
    config = bert_like("big_bird", rng)
    config["attention_type"] = rng.choice(["original_full", "block_sparse"])
    config.update({"block_size": rng.choice([2, 64]), "num_random_blocks": 1})  # (5 + 2) · 2 = 14 > S
    return config


DRAWS["big_bird"] = _big_bird


def _xmod(rng: random.Random) -> dict:
    """X-MOD: one to three languages, the default one drawn; post- or pre-norm; the adapters' LayerNorm choices."""
    config = bert_like("xmod", rng)
    languages = ["en_XX", "de_DE", "fr_XX"][: rng.choice([1, 2, 3])]
    config.update({"languages": languages, "default_language": rng.choice(languages)})
    config["adapter_reduction_factor"] = rng.choice([2, 4])
    for key in ("pre_norm", "adapter_layer_norm", "adapter_reuse_layer_norm", "ln_before_adapter"):
        config[key] = rng.choice([True, False])
    return config


DRAWS["xmod"] = _xmod


def _modernbert_decoder(rng: random.Random) -> dict:
    """ModernBERT decoder: full and sliding layers (window W = local_attention // 2 on both sides of S)."""
    h = rng.choice([2, 3])
    config = {
        "model_type": "modernbert-decoder",
        "num_hidden_layers": rng.choice([1, 2, 3]),
        "num_attention_heads": h,
        "hidden_size": h * rng.choice([4, 8]),
        "intermediate_size": rng.choice([20, 28]),
        "vocab_size": rng.choice([67, 101]),
        "global_attn_every_n_layers": rng.choice([1, 2, 3]),
        "local_attention": rng.choice([4, 8, 16, 64]),
        "hidden_activation": rng.choice(HIDDEN_ACTS),
        "classifier_activation": rng.choice(HIDDEN_ACTS),
        "tie_word_embeddings": rng.choice([True, False]),
    }
    config.update({"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "sep_token_id": 2, "cls_token_id": 1})
    return config


DRAWS["modernbert-decoder"] = _modernbert_decoder


def _xlm(rng: random.Random) -> dict:
    """XLM: causal or bidirectional, gelu or relu, an FFN of 4·d."""
    h = rng.choice([2, 3, 4])
    return {
        "model_type": "xlm",
        "n_layers": rng.choice([1, 2]),
        "n_heads": h,
        "emb_dim": h * rng.choice([4, 6, 8]),
        "vocab_size": rng.choice([67, 101]),
        "max_position_embeddings": rng.choice([16, 40]),
        "n_langs": rng.choice([1, 2]),
        "causal": rng.choice([True, False]),
        "gelu_activation": rng.choice([True, False]),
        "tie_word_embeddings": rng.choice([True, False]),
    }


DRAWS["xlm"] = _xlm


def _xlnet(rng: random.Random) -> dict:
    """XLNet: relative positions both ways (bi) or one way (uni); its table is fp32 only (see CASES)."""
    h = rng.choice([2, 3, 4])
    return {
        "model_type": "xlnet",
        "n_layer": rng.choice([1, 2]),
        "n_head": h,
        "d_model": h * rng.choice([4, 6, 8]),
        "d_inner": rng.choice([20, 28, 36]),
        "vocab_size": rng.choice([67, 101]),
        "attn_type": rng.choice(["bi", "uni"]),
        "ff_activation": rng.choice(HIDDEN_ACTS),
        "tie_word_embeddings": rng.choice([True, False]),
    }


DRAWS["xlnet"] = _xlnet


# seeds drawn to cover each family's variants (the comment names the variant of the drawn config); the families not
# named here get test_activations' own fp32 and bf16 eager (and SDPA) cases
CASES = [
    ("bert", 7, "fp32", "eager"),  # gelu_new in the MLP and in the head's transform
    ("bert", 8, "bf16", "eager"),  # relu: the activation's output is the next linear's input
    ("bert", 0, "fp32", "sdpa"),  # silu
    ("bert", 2, "bf16", "sdpa"),  # gelu_pytorch_tanh
    ("ernie", 15, "bf16", "eager"),  # task-type ids (use_task_id)
    ("ernie", 8, "fp32", "eager"),  # task-type ids, relu
    ("ernie", 4, "fp32", "sdpa"),  # no task-type ids
    ("electra", 2, "fp32", "eager"),  # d_emb = d: no embeddings_project
    ("electra", 0, "bf16", "eager"),  # d_emb 8, d 12: projected
    ("electra", 1, "fp32", "sdpa"),  # d_emb 16, d 12
    ("roc_bert", 2, "fp32", "eager"),  # without concat_input: no shape or pronunciation embeddings
    ("roc_bert", 11, "bf16", "eager"),  # concatenated word, pronunciation and shape embeddings
    ("roc_bert", 6, "fp32", "eager"),  # concat_input with neither: a copy of the word embeddings
    ("roc_bert", 4, "fp32", "sdpa"),  # word and pronunciation embeddings
    ("roc_bert", 5, "bf16", "sdpa"),  # word and shape embeddings
    ("roformer", 16, "fp32", "eager"),  # embedding_size null (d), rotary_value
    ("roformer", 5, "bf16", "eager"),  # d_emb 10, projected to d; rotary_value
    ("roformer", 27, "fp32", "eager"),  # d_emb 10, rotary on q and k only
    ("big_bird", 16, "fp32", "eager"),  # block_sparse, falling back to full attention (S <= 14)
    ("big_bird", 7, "bf16", "eager"),  # original_full, gelu_new
    ("big_bird", 36, "bf16", "eager"),  # block_sparse with blocks of 64, relu
    ("xmod", 0, "fp32", "eager"),  # pre-norm; the adapters' own LayerNorm; one language
    ("xmod", 5, "bf16", "eager"),  # post-norm; both adapter LayerNorm flags; two languages
    ("xmod", 8, "fp32", "eager"),  # post-norm; no LayerNorm before the adapters; relu
    ("xmod", 11, "bf16", "eager"),  # pre-norm; two languages
    ("xmod", 1, "bf16", "sdpa"),  # post-norm; the adapters' own LayerNorm; two languages
    ("modernbert-decoder", 2, "fp32", "eager"),  # one full layer; gelu_new in the MLP
    ("modernbert-decoder", 5, "bf16", "eager"),  # three layers, full and sliding; relu in the MLP
    ("modernbert-decoder", 6, "fp32", "eager"),  # two full layers; gelu_new in the MLP and the head
    ("modernbert-decoder", 31, "bf16", "sdpa"),  # a full and a sliding layer, S >= W: the sliding mask is kept
    ("modernbert-decoder", 29, "bf16", "sdpa"),  # a full and a sliding layer, S < W: no mask
    ("modernbert-decoder", 24, "fp32", "sdpa"),  # three layers, all full
    ("xlm", 4, "fp32", "eager"),  # causal, gelu, two layers
    ("xlm", 5, "bf16", "eager"),  # causal, gelu
    ("xlm", 1, "bf16", "eager"),  # bidirectional, relu
    ("xlm", 6, "fp32", "eager"),  # causal, relu
    ("xlnet", 9, "fp32", "eager"),  # bi, gelu_new, two layers (fp32 only: bf16 fails in transformers)
    ("xlnet", 4, "fp32", "eager"),  # uni (S + 1 relative positions), relu, two layers
    ("xlnet", 3, "fp32", "eager"),  # bi, gelu_pytorch_tanh
]
