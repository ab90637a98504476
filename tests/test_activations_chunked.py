"""Activations of the chunked linear attention (Gated DeltaNet, KDA) against autograd at lengths around the chunk.

transformers' torch path pads S up to whole chunks of 64 and runs a loop over the chunks, so what it keeps depends
on ceil(S / 64) and on whether there is more than one chunk. ``tests/test_activations.py`` draws S below one chunk;
here S is one whole chunk, one past it, two whole chunks and past two (64, 65, 128, 130), on configs drawn by
``tests/draws/gdn.py`` and ``tests/draws/kda.py`` (seeds chosen so that together they have linear layers with and
without grouped value heads, with and without a cache). The expected numbers come from transformers
(``activation_oracle.saved_bytes``), never from llmcount.
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from activation_oracle import VERSIONS, saved_bytes
from draws import DRAWS

from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config

# linear layers: without grouped value heads, no cache (6) and with a cache (7); grouped, with a cache (11) and without
# (23): in fp32 with S a whole number of chunks the grouped heads' layout makes the matmuls copy (the table's
# strided entries)
SEEDS = {
    "qwen3_next": [6, 7, 11, 23],
    "qwen3_5_text": [6, 7, 10, 23],
    "olmo_hybrid": [3, 14, 0, 11],
    "qwen3_5_moe_text": [3, 6, 11, 23],  # 3: a full then a linear layer, no grouped heads, a cache
    # KDA (its per-channel decays, the forward substitution's clones): Kimi 0: an MLA then a KDA layer of one head, no
    # cache; 3: two KDA layers of two heads; 4: MLA of one head then KDA of one head, a cache; 7: KDA of two heads then
    # MLA, a cache. Bailing hybrid 3: KDA (softplus gate) of four heads then MLA, a cache; 6: two KDA layers of one
    # head, no cache
    "kimi_linear": [0, 3, 4, 7],
    "bailing_hybrid": [3, 6],
}
LENGTHS = ((64, "fp32"), (65, "bf16"), (128, "fp32"), (130, "fp32"))
CASES = [
    (model_type, seed, seq, dtype) for model_type, seeds in SEEDS.items() for seed in seeds for seq, dtype in LENGTHS
]


@pytest.mark.parametrize(("model_type", "seed", "seq", "dtype"), CASES)
def test_chunked_linear_attention_equals_what_autograd_saves(model_type: str, seed: int, seq: int, dtype: str) -> None:
    config = DRAWS[model_type](random.Random(seed))
    expected = saved_bytes(config, 2, seq, dtype, "eager")
    model = read_config(config, "random config")
    result = activations(model.architecture, model.values, dtype, 2, seq, Options(), model.keys)
    assert result.bytes == expected, (config, seq, dtype, VERSIONS)


@pytest.mark.parametrize("seq", [64, 128])
@pytest.mark.parametrize("seed", [6, 7, 23])
def test_one_sequence_folds_into_the_batched_matmuls(seed: int, seq: int) -> None:
    """B = 1, fp32, S a whole number of chunks: whether the chunks' batched matmuls copy q and k depends on the batch
    (6: one key head, no grouping; 7: two heads, no grouping; 23: grouped heads). The oracle keeps S + 1 labels when
    B = 1 (8 bytes more, tests/test_activations.py)."""
    config = DRAWS["qwen3_next"](random.Random(seed))
    expected = saved_bytes(config, 1, seq, "fp32", "eager")
    model = read_config(config, "random config")
    result = activations(model.architecture, model.values, "fp32", 1, seq, Options(), model.keys)
    assert expected - result.bytes == 8, (config, seq, VERSIONS)


@pytest.mark.parametrize(
    ("model_type", "change", "reason"),
    [
        ("qwen3_next", {"output_router_logits": True}, "output_router_logits"),
        ("qwen3_5_moe_text", {"output_router_logits": True}, "output_router_logits"),
        ("qwen3_5_text", {"hidden_act": "relu"}, "hidden_act other than silu"),
        ("olmo_hybrid", {"hidden_act": "gelu"}, "hidden_act other than silu"),
        ("olmo_hybrid", {"rope_parameters": {"rope_type": "default", "rope_theta": None}}, "rope_parameters without"),
    ],
)
def test_configs_the_tables_were_not_checked_for_are_refused_by_name(model_type: str, change: dict, reason: str):
    from llmcount.errors import LlmcountError

    config = {**DRAWS[model_type](random.Random(3)), **change}
    model = read_config(config, "random config")
    with pytest.raises(LlmcountError, match=rf"not derived for .* \({model_type}\): {reason}"):
        activations(model.architecture, model.values, "bf16", 2, 64, Options(), model.keys)
