"""Activations of the chunked linear attention (Gated DeltaNet, KDA) against autograd at lengths around the chunk.

transformers' torch path pads S up to whole chunks of 64 and runs a loop over the chunks, so what it keeps depends
on ceil(S / 64) and on whether there is more than one chunk. ``tests/test_activations.py`` draws S below one chunk;
here S is one whole chunk, one past it, and past two (64, 65, 130), on configs drawn by ``tests/draws/gdn.py``
(seeds chosen so that together they have linear layers with and without grouped value heads, with and without a
cache). The expected numbers come from transformers (``activation_oracle.saved_bytes``), never from llmcount.
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from activation_oracle import VERSIONS, saved_bytes
from draws.gdn import DRAWS

from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config

SEEDS = {
    "qwen3_next": [5, 6, 7],  # a full then a linear layer, no cache; two linear layers; a linear then a full layer
}
CASES = [
    (model_type, seed, seq, dtype)
    for model_type, seeds in SEEDS.items()
    for seed in seeds
    for seq, dtype in ((64, "fp32"), (65, "bf16"), (130, "fp32"))
]


@pytest.mark.parametrize(("model_type", "seed", "seq", "dtype"), CASES)
def test_chunked_linear_attention_equals_what_autograd_saves(model_type: str, seed: int, seq: int, dtype: str) -> None:
    config = DRAWS[model_type](random.Random(seed))
    expected = saved_bytes(config, 2, seq, dtype, "eager")
    model = read_config(config, "random config")
    result = activations(model.architecture, model.values, dtype, 2, seq, Options(), model.keys)
    assert result.bytes == expected, (config, seq, dtype, VERSIONS)
