"""Configs whose training step transformers cannot run are refused by name: each test shows transformers failing
(so the refusal is not a guess) and llmcount's one-line refusal."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from activation_oracle import saved_bytes

from llmcount.errors import LlmcountError
from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config

GEMMA4_SHARED_WITHOUT_PER_LAYER_INPUTS = {
    "model_type": "gemma4_text",
    **{"num_hidden_layers": 3, "layer_types": ["sliding_attention", "full_attention", "full_attention"]},
    **{"num_kv_shared_layers": 1, "hidden_size_per_layer_input": 0, "hidden_size": 16, "intermediate_size": 24},
    **{"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "global_head_dim": 8, "vocab_size": 67},
    "vocab_size_per_layer_input": 67,
}


def test_gemma4_kv_sharing_without_per_layer_inputs_is_refused_by_name() -> None:
    """Gemma 4's forward slices the per-layer inputs at the first KV-shared layer, which fails when there are none."""
    with pytest.raises(TypeError, match="not subscriptable"):
        saved_bytes(GEMMA4_SHARED_WITHOUT_PER_LAYER_INPUTS, 2, 5, "fp32", "eager")
    model = read_config(GEMMA4_SHARED_WITHOUT_PER_LAYER_INPUTS, "random config")
    with pytest.raises(LlmcountError, match=r"not derived for Gemma 4 \(text\) \(gemma4_text\): hidden_size_per_layer"):
        activations(model.architecture, model.values, "bf16", 2, 5, Options(), model.keys)


def test_git_text_only_training_fails_in_transformers_and_has_no_table() -> None:
    """GitForCausalLM's loss drops the image tokens' logits (there are none without pixel_values) but not the labels:
    the shapes differ and cross-entropy fails, so GIT has no activation table (refused by name)."""
    config = {"model_type": "git", "num_hidden_layers": 1, "hidden_size": 16, "intermediate_size": 20}
    config |= {"num_attention_heads": 2, "vocab_size": 67, "vision_config": {"image_size": 4, "patch_size": 4}}
    with pytest.raises(ValueError, match="batch_size"):
        saved_bytes(config, 2, 7, "fp32", "eager")
    model = read_config(config, "random config")
    with pytest.raises(LlmcountError, match=r"activations: not derived for GIT \(git\)"):
        activations(model.architecture, model.values, "bf16", 2, 7, Options(), model.keys)
