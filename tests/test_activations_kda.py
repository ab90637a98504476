"""The KDA tables (Kimi Linear, Bailing hybrid) refuse by name the configs they were not checked for.

Their bytes are checked against autograd in test_activations.py (S below one chunk) and test_activations_chunked.py
(S around whole chunks of 64).
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from draws.kda import DRAWS

from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config


@pytest.mark.parametrize("model_type", ["kimi_linear", "bailing_hybrid"])
@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"output_router_logits": True}, "output_router_logits"),
        ({"hidden_act": "gelu"}, "hidden_act other than silu"),
    ],
)
def test_configs_the_tables_were_not_checked_for_are_refused_by_name(model_type: str, change: dict, reason: str):
    from llmcount.errors import LlmcountError

    config = {**DRAWS[model_type](random.Random(3)), **change}
    model = read_config(config, "random config")
    with pytest.raises(LlmcountError, match=rf"not derived for .* \({model_type}\): {reason}"):
        activations(model.architecture, model.values, "bf16", 2, 64, Options(), model.keys)
