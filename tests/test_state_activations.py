"""Activation tables of state-space families: options and configs they were not checked for are refused by name.

The byte counts themselves are checked against autograd in test_activations.py (draws in tests/draws/mamba.py); here
only what the reader does with a table that has no attention entries, and the tables' refuse rules.
"""

from __future__ import annotations

import pytest

from llmcount.errors import LlmcountError
from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config

MAMBA = {"model_type": "mamba", "num_hidden_layers": 2, "hidden_size": 16, "vocab_size": 64, "state_size": 4}


def _bytes(config: dict, options: Options | None = None) -> int:
    model = read_config(config, "config")
    return activations(model.architecture, model.values, "bf16", 2, 8, options, model.keys).bytes


def test_an_attention_free_table_is_read_with_the_default_attention() -> None:
    assert _bytes(MAMBA) > 0
    assert _bytes(MAMBA, Options(recompute="full")) > 0


@pytest.mark.parametrize("options", [Options(attention="flash"), Options(recompute="selective")])
def test_attention_options_change_nothing_without_attention(options: Options) -> None:
    """No attention: a fused attention kernel, or recomputing the core attention, leaves the same tensors."""
    assert _bytes(MAMBA, options) == _bytes(MAMBA)


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({**MAMBA, "use_mambapy": True}, "use_mambapy"),
        ({**MAMBA, "hidden_act": "gelu"}, "hidden_act"),
        ({**MAMBA, "model_type": "falcon_mamba", "use_falcon_mambapy": True}, "use_falcon_mambapy"),
        (
            {
                "model_type": "nemotron_h",
                "hybrid_override_pattern": "M*E-",
                "num_hidden_layers": 4,
                "hidden_size": 16,
                "vocab_size": 64,
                "moe_latent_size": 8,
            },
            "moe_latent_size",
        ),
    ],
)
def test_unchecked_configs_are_refused_by_name(config: dict, named: str) -> None:
    with pytest.raises(LlmcountError, match=named):
        _bytes(config)
