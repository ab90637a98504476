"""A table entry summed over layers of different sizes (Laguna's query heads per layer) is one model-level entry:
pipeline stages and full recomputation, which count layer by layer, are refused for it by name."""

from __future__ import annotations

import pytest

from llmcount.formulas.activations import NotDerived, Options, activations
from llmcount.formulas.config import read_config

CONFIG = {
    "model_type": "laguna",
    "num_hidden_layers": 4,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 1000,
    "num_experts": 8,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "intermediate_size": 128,
}


def _activations(config: dict, options: Options):
    model = read_config(config, "config")
    return activations(model.architecture, model.values, "bf16", 2, 16, options, model.keys)


@pytest.mark.parametrize("options", [Options(pp=2), Options(recompute="full")])
def test_heads_differing_per_layer_are_refused_with_pp_and_full_recomputation(options: Options) -> None:
    with pytest.raises(NotDerived, match=r"attention/.* is summed over the layers"):
        _activations({**CONFIG, "num_attention_heads_per_layer": [4, 8, 4, 2]}, options)


@pytest.mark.parametrize("options", [Options(pp=2), Options(recompute="full")])
def test_the_same_heads_on_every_layer_split_by_layer(options: Options) -> None:
    """Without the list every layer has num_attention_heads: per-layer entries; pp 2 puts two layers on each stage,
    the first stage keeping two micro-batches (1F1B), so it holds at least the whole model's per-layer part."""
    split = _activations(CONFIG, options)
    whole = _activations(CONFIG, Options())
    if options.pp > 1:
        assert split.per_stage_bytes[0] > split.per_stage_bytes[1]
    else:
        assert split.bytes < whole.bytes
