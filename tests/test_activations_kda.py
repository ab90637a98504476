"""Activations of the chunked KDA (Kimi Linear, Bailing hybrid) against autograd at lengths around the chunk.

transformers' torch path (``chunk_kimi_delta_attention``) pads S up to whole chunks of 64, keeps 64 × 64 × d_k
blocks of per-channel decays per chunk and head, the clones of its forward-substitution loop, and a loop over the
chunks whose state reads and updates keep more from the second chunk on. ``tests/test_activations.py`` draws S below
one chunk; here S is one whole chunk, one past it, two whole chunks and past two (64, 65, 128, 130), on configs drawn
by ``tests/draws/kda.py`` (seeds with one and two KDA heads, with and without a cache). The expected numbers come from
transformers (``activation_oracle.saved_bytes``), never from llmcount.
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from activation_oracle import VERSIONS, saved_bytes
from draws.kda import DRAWS

from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config

# 0: an MLA then a KDA layer of one head, no cache; 3: two KDA layers of two heads; 4: MLA of one head then KDA
# of one head, a cache; 7: KDA of two heads then MLA, a cache
# Bailing hybrid 3: KDA (softplus gate) of four heads then MLA, a cache; 6: two KDA layers of one head, no cache
SEEDS = {"kimi_linear": [0, 3, 4, 7], "bailing_hybrid": [3, 6]}
LENGTHS = ((64, "fp32"), (65, "bf16"), (128, "fp32"), (130, "fp32"))
CASES = [
    (model_type, seed, seq, dtype) for model_type, seeds in SEEDS.items() for seed in seeds for seq, dtype in LENGTHS
]


@pytest.mark.parametrize(("model_type", "seed", "seq", "dtype"), CASES)
def test_chunked_kda_equals_what_autograd_saves(model_type: str, seed: int, seq: int, dtype: str) -> None:
    config = DRAWS[model_type](random.Random(seed))
    expected = saved_bytes(config, 2, seq, dtype, "eager")
    model = read_config(config, "random config")
    result = activations(model.architecture, model.values, dtype, 2, seq, Options(), model.keys)
    assert result.bytes == expected, (config, seq, dtype, VERSIONS)


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
