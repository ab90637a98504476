"""BigBird's costs: full attention where transformers runs it, refused by name where it runs block-sparse attention.

BigBirdModel.forward (transformers 5.23, modeling_big_bird.py) runs attention_type "block_sparse" (the default) only
when S > (5 + 2 · num_random_blocks) · block_size; for shorter sequences it switches the model to "original_full",
eager full attention over the S × S scores. llmcount counts that full attention (every S with "original_full") and
refuses a longer sequence with "block_sparse", naming S and the threshold. Checked against FlopCounterMode and the
cache of a CPU forward pass.
"""

from __future__ import annotations

import json

import oracle
import pytest
from refusal import assert_refused, run
from test_state_flops import counter_flops

from llmcount.errors import LlmcountError
from llmcount.formulas import memory
from llmcount.formulas.config import read_config
from llmcount.formulas.flops import Flops

# block_size 4 and one random block: block-sparse attention beyond (5 + 2 · 1) · 4 = 28 tokens
SMALL = {
    "model_type": "big_bird",
    **{"num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 48},
    **{"vocab_size": 64, "block_size": 4, "num_random_blocks": 1},
}
FULL = {**SMALL, "attention_type": "original_full"}
DECODER = {**SMALL, "is_decoder": True, "tie_word_embeddings": False}


def forward(config: dict, batch: int, seq: int) -> int:
    model = read_config(config, "big_bird")
    return Flops(model.derivation).evaluate(model.values, seq, batch).forward


@pytest.mark.parametrize(
    ("config", "batch", "seq"),
    [(SMALL, 1, 1), (SMALL, 2, 7), (SMALL, 2, 28), (DECODER, 3, 13), (FULL, 2, 29), (FULL, 1, 40)],
)
def test_full_attention_equals_flop_counter(config: dict, batch: int, seq: int) -> None:
    expected = counter_flops(config, batch, seq)
    assert forward(config, batch, seq) == expected, f"B={batch} S={seq} ({oracle.VERSIONS})"


def test_full_attention_by_hand() -> None:
    """d = 32, N = 2, d_ff = 48, V = 64, B = 1, S = 28: per token and layer q, k, v, o 4 · 2 · 32² = 8,192, the MLP
    2 · 2 · 32 · 48 = 6,144, the scores and values 2 · 2 · 28 · 32 = 3,584; the transform 2 · 32² = 2,048 and the
    head 2 · 32 · 64 = 4,096 per token; the pooler 2 · 32² = 2,048 once (the first token)."""
    per_token = 2 * (8_192 + 6_144 + 3_584) + 2_048 + 4_096
    assert forward(SMALL, 1, 28) == 28 * per_token + 2_048


def test_block_sparse_is_refused_by_name_beyond_the_threshold(tmp_path) -> None:
    # at S = 29 transformers runs block-sparse attention (its count differs from full attention's)
    assert counter_flops(SMALL, 1, 29) != counter_flops(FULL, 1, 29)
    with pytest.raises(LlmcountError, match=r"at S = 29: beyond S = 28 \(\(5 \+ 2 · num_random_blocks\)"):
        forward(SMALL, 1, 29)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL))
    for command in (["flops", str(path), "--seq", "29"], ["memory", str(path), "--seq", "29"]):
        assert_refused(run(*command), "BigBird (big_bird)", "S = 29", "S = 28", "block-sparse")
    assert run("flops", str(path), "--seq", "28").exit_code == 0


def test_class_defaults_run_full_attention_up_to_704_tokens() -> None:
    """BigBirdConfig(): block_size 64, num_random_blocks 3: (5 + 6) · 64 = 704."""
    config = {"model_type": "big_bird", **{k: SMALL[k] for k in ("num_hidden_layers", "hidden_size", "vocab_size")}}
    config |= {"num_attention_heads": 4, "intermediate_size": 48}
    assert forward(config, 1, 704) > 0
    with pytest.raises(LlmcountError, match="beyond S = 704"):
        forward(config, 1, 705)


@pytest.mark.parametrize(
    ("config", "batch", "seq"), [(DECODER, 2, 9), (DECODER, 1, 28), ({**FULL, "is_decoder": True}, 2, 33)]
)
def test_decoder_cache_equals_transformers(config: dict, batch: int, seq: int) -> None:
    """A decoder (is_decoder) caches keys and values of d per layer: 2 · N · d · B · S elements."""
    model = read_config(config, "big_bird")
    got = memory.inference(model.derivation, model.values, "fp32", seq=seq, batch=batch).bytes_of("kv_cache")
    assert got == 2 * 2 * 32 * batch * seq * 4 == oracle.cache_bytes(config, batch, seq), oracle.VERSIONS
