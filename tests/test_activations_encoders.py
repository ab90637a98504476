"""Activations of the encoder-style records trained as causal LMs: the configs their tables refuse, by name.

The tables themselves are checked against autograd in tests/test_activations.py (draws in tests/draws/enc.py).
"""

from __future__ import annotations

import pytest

from llmcount.errors import LlmcountError
from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config

SMALL_BERT = {"num_hidden_layers": 2, "hidden_size": 24, "num_attention_heads": 3, "intermediate_size": 28}


def _refused(config: dict, dtype: str, seq: int, match: str) -> None:
    model = read_config(config, "random config")
    with pytest.raises(LlmcountError, match=match):
        activations(model.architecture, model.values, dtype, 2, seq, Options(), model.keys)


def test_an_activation_not_checked_is_refused_by_name() -> None:
    config = {"model_type": "bert", **SMALL_BERT, "vocab_size": 67, "hidden_act": "quick_gelu"}
    _refused(config, "bf16", 8, r"not derived for BERT \(bert\): hidden_act other than gelu")


def test_big_bird_block_sparse_attention_is_refused_once_it_runs() -> None:
    """BigBirdModel falls back to full attention for S <= (5 + 2 · num_random_blocks) · block_size = 7 · 64 = 448."""
    config = {"model_type": "big_bird", **SMALL_BERT, "vocab_size": 67, "num_random_blocks": 1}
    model = read_config(config, "random config")
    full = activations(model.architecture, model.values, "bf16", 2, 448, Options(), model.keys)
    assert full.bytes > 0
    _refused(config, "bf16", 449, r"not derived for BigBird \(big_bird\): block_sparse attention")
    _refused({**config, "attention_type": "block_sparse"}, "fp32", 4096, r"block_sparse attention")
    original = {**config, "attention_type": "original_full"}
    model = read_config(original, "random config")
    assert activations(model.architecture, model.values, "bf16", 2, 4096, Options(), model.keys).bytes > 0


def test_xlnet_is_derived_in_fp32_only() -> None:
    """XLNet creates q, k, v, o and r as fp32 tensors whatever the model's dtype: its bf16 forward fails."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = {"model_type": "xlnet", "n_layer": 1, "d_model": 24, "n_head": 3, "d_inner": 28, "vocab_size": 67}
    settings = {k: v for k, v in config.items() if k != "model_type"}
    hf_config = transformers.AutoConfig.for_model("xlnet", **settings)
    model = transformers.AutoModelForCausalLM.from_config(hf_config, dtype=torch.bfloat16)
    ids = torch.randint(0, 67, (2, 5))
    with pytest.raises(RuntimeError, match="expected scalar type"):
        model(input_ids=ids, labels=ids)
    _refused(config, "bf16", 8, r"not derived for XLNet \(xlnet\): training in a dtype other than fp32")
    record = read_config(config, "random config")
    assert activations(record.architecture, record.values, "fp32", 2, 8, Options(), record.keys).bytes > 0
    _refused({**config, "bi_data": True}, "fp32", 8, r"not derived for XLNet \(xlnet\): bi_data=true")
    _refused({**config, "use_mems_train": True}, "fp32", 8, r"not derived for XLNet \(xlnet\): use_mems_train=true")


@pytest.mark.parametrize("model_type", ["megatron-bert", "rembert", "roformer", "big_bird", "xlm", "xlnet"])
def test_families_without_an_sdpa_path_refuse_the_fused_kernel(model_type: str) -> None:
    sizes = {"xlm": {"n_layers": 2, "emb_dim": 24, "n_heads": 3}, "xlnet": {"n_layer": 2, "d_model": 24, "n_head": 3}}
    config = {"model_type": model_type, "vocab_size": 67, **sizes.get(model_type, SMALL_BERT)}
    model = read_config(config, "random config")
    with pytest.raises(LlmcountError, match=r"--attention flash is not derived"):
        activations(model.architecture, model.values, "fp32", 2, 8, Options("flash"), model.keys)


# the draws pick hidden_act from gelu, relu, gelu_new, silu, gelu_pytorch_tanh; swish (nn.SiLU, not transformers'
# SiLUActivation) is checked here, in each place a table reads an activation key
SWISH = [("bert", ("hidden_act",)), ("xmod", ("hidden_act",)), ("xlnet", ("ff_activation",))]
SWISH += [("modernbert-decoder", ("hidden_activation", "classifier_activation"))]


@pytest.mark.parametrize(("model_type", "keys"), SWISH)
def test_swish_keeps_what_silu_keeps(model_type: str, keys: tuple[str, ...]) -> None:
    import random

    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from activation_oracle import VERSIONS, saved_bytes
    from draws import DRAWS

    config = DRAWS[model_type](random.Random(3)) | dict.fromkeys(keys, "swish")
    dtype = "fp32" if model_type == "xlnet" else "bf16"
    model = read_config(config, "random config")
    result = activations(model.architecture, model.values, dtype, 2, 7, Options(), model.keys)
    assert result.bytes == saved_bytes(config, 2, 7, dtype, "eager"), (config, VERSIONS)
