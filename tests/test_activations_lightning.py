"""Activations of MiniMax's lightning attention against autograd at lengths around its default block of 256 tokens.

transformers' torch path runs a loop over blocks of block_size tokens (the last one shorter, not padded), so what it
keeps depends on ceil(S / block_size) and on the last block's length. ``tests/test_activations.py`` draws small block
sizes around S in 5 to 9; here the block size is the config class's default (256) and S is below one block, one
whole block, one past it, two whole blocks and past two (200, 256, 257, 512, 600), on configs drawn by
``tests/draws/minimax2.py``; then one sequence, and a sliding window on the softmax layers (under SDPA a mask).
The expected numbers come from transformers (``activation_oracle.saved_bytes``), never from llmcount.
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from activation_oracle import VERSIONS, saved_bytes
from draws import DRAWS

from llmcount.errors import LlmcountError
from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config

# 0: lightning then full, four heads, a cache; 1: two lightning layers of one head, a cache; 12: full, lightning, full
# (layer_types null), four heads, no cache
SEEDS = [0, 1, 12]
LENGTHS = ((200, "fp32"), (256, "bf16"), (257, "fp32"), (512, "fp32"), (600, "bf16"))


def _config(seed: int) -> dict:
    config = DRAWS["minimax"](random.Random(seed))
    del config["block_size"]  # the default, 256
    return config


@pytest.mark.parametrize(("seq", "dtype"), LENGTHS)
@pytest.mark.parametrize("seed", SEEDS)
def test_lightning_blocks_equal_what_autograd_saves(seed: int, seq: int, dtype: str) -> None:
    config = _config(seed)
    expected = saved_bytes(config, 2, seq, dtype, "eager")
    model = read_config(config, "random config")
    result = activations(model.architecture, model.values, dtype, 2, seq, Options(), model.keys)
    assert result.bytes == expected, (config, seq, dtype, VERSIONS)


@pytest.mark.parametrize("seq", [5, 9])
def test_one_sequence_keeps_views_of_the_blocks(seq: int) -> None:
    """B = 1 (block size 4, so 2 or 3 blocks): the blocks' q, k and v are views of the SiLU output, not copies, as
    with one head. The oracle keeps S + 1 labels when B = 1 (8 bytes more, tests/test_activations.py)."""
    config = {**DRAWS["minimax"](random.Random(0)), "block_size": 4}
    expected = saved_bytes(config, 1, seq, "fp32", "eager")
    model = read_config(config, "random config")
    result = activations(model.architecture, model.values, "fp32", 1, seq, Options(), model.keys)
    assert expected - result.bytes == 8, (config, seq, VERSIONS)


# (seed, window, S, dtype, attention): 13 full then lightning, 4 heads of 2 key/value heads; 66 two full layers, 2 heads
# of one key/value head (expanded as a view); 0 lightning then full, 4 heads of 2
WINDOWS = [
    (13, 4, 9, "fp32", "sdpa"),  # the window shorter than S: its mask, K and V repeated to h heads
    (13, 9, 9, "bf16", "sdpa"),  # the window as long as S: still a mask
    (13, 10, 9, "fp32", "sdpa"),  # the window longer than S: no mask
    (66, 3, 7, "bf16", "sdpa"),  # one key/value head: a mask, K and V not copied
    (0, 3, 9, "bf16", "eager"),  # eager: the window only masks the scores
]


@pytest.mark.parametrize(("seed", "window", "seq", "dtype", "attention"), WINDOWS)
def test_a_sliding_window_on_the_softmax_layers(seed: int, window: int, seq: int, dtype: str, attention: str) -> None:
    config = {**DRAWS["minimax"](random.Random(seed)), "sliding_window": window}
    expected = saved_bytes(config, 2, seq, dtype, attention)
    model = read_config(config, "random config")
    options = Options(attention="eager" if attention == "eager" else "flash")
    result = activations(model.architecture, model.values, dtype, 2, seq, options, model.keys)
    assert result.bytes == expected, (config, seq, dtype, attention, VERSIONS)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"output_router_logits": True}, "output_router_logits"),
        ({"hidden_act": "gelu"}, "hidden_act other than silu"),
    ],
)
def test_configs_the_table_was_not_checked_for_are_refused_by_name(change: dict, reason: str) -> None:
    config = {**DRAWS["minimax"](random.Random(0)), **change}
    model = read_config(config, "random config")
    with pytest.raises(LlmcountError, match=rf"not derived for MiniMax \(minimax\): {reason}"):
        activations(model.architecture, model.values, "bf16", 2, 64, Options(), model.keys)
