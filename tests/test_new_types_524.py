"""Records of the causal-LM types new in transformers 5.24, beyond the oracle tests every record gets: the sizes their
config classes compute, derived by hand from the modeling code."""

from __future__ import annotations

import pytest

from llmcount.formulas.activations import NotDerived, Options, activations
from llmcount.formulas.config import RuleRefusal, read_config

APERTUS = {"model_type": "apertus1p5_text", "num_hidden_layers": 1, "vocab_size": 100, "hidden_size": 16}
APERTUS |= {"num_attention_heads": 2, "num_key_value_heads": 2, "intermediate_size": 8}
# by hand (modeling_apertus1p5.py): embedding V·d; q, k, v, o of 16·16; q_norm, k_norm of h_d = 8; up and down 16·8;
# xIELU's two scalars; two layer norms and the final norm of 16
BODY = 100 * 16 + 4 * 16 * 16 + 2 * 8 + 2 * 16 * 8 + 2 + 3 * 16


@pytest.mark.parametrize(
    ("keys", "head"),
    [
        ({}, 100 * 16),  # the whole vocabulary
        ({"output_vocab_size": 60}, 60 * 16),  # the head pruned to the first 60 rows
        ({"output_vocab_size": None}, 100 * 16),
        ({"output_vocab_size": 60, "tie_word_embeddings": True}, 0),  # tied: the embedding is the head
    ],
)
def test_apertus1p5_head_has_output_vocab_size_rows(keys: dict, head: int) -> None:
    model = read_config({**APERTUS, **keys}, "x")
    assert model.counts.total == BODY + head


def test_apertus1p5_refuses_a_head_wider_than_the_vocabulary() -> None:
    with pytest.raises(RuleRefusal, match=r"output_vocab_size \(120\) is larger than vocab_size \(100\)"):
        read_config({**APERTUS, "output_vocab_size": 120}, "x")


def test_apertus1p5_tied_and_pruned_head_is_refused_for_training() -> None:
    model = read_config({**APERTUS, "output_vocab_size": 60, "tie_word_embeddings": True}, "x")
    with pytest.raises(NotDerived, match="tied LM head with output_vocab_size below vocab_size does not train"):
        activations(model.architecture, model.values, "bf16", 1, 8, Options(), model.keys)


def test_apertus1p5_composite_refuses_codes_beyond_the_text_vocabulary() -> None:
    """Apertus1p5Config's audio codes (262344 + 4096 by default) must lie within text_config.vocab_size."""
    text = {k: v for k, v in APERTUS.items() if k != "model_type"}
    with pytest.raises(RuleRefusal, match=r"audio codes .* end beyond the text vocab_size \(100\)"):
        read_config({"model_type": "apertus1p5", "text_config": text}, "x")
    small = {"image_token_offset": 0, "vision_config": {"codebook_size": 4}, "audio_token_offset": 4}
    small |= {"audio_config": {"codebook_size": 96}}
    model = read_config({"model_type": "apertus1p5", "text_config": text, **small}, "x")
    assert model.counts.total == BODY + 100 * 16  # the language model: the head untied, of all 100 rows


# Dory as DoryConfig.to_dict writes it: every layer twice (an "mlp" entry after each in layer_types, the counts
# doubled), which DoryConfig reads back by halving; 1 input, 2 looped and 1 output layer here
DORY = {"model_type": "dory", "vocab_size": 40, "hidden_size": 16, "intermediate_size": 24, "num_attention_heads": 4}
DORY |= {"num_key_value_heads": 2, "head_dim": 4, "num_hidden_layers": 8, "n_input_layers": 2, "n_output_layers": 2}
DORY |= {"layer_types": ["sliding_attention", "mlp", "full_attention", "mlp"] * 2, "sliding_window": 3}
DORY |= {"n_recurrent_loops": 3, "pad_token_id": 0}


def test_dory_by_hand() -> None:
    """Four layers of: q, gate 2·16·16, k, v 2·16·8, o 16·16, sqk and s_gate 2·16; the MLP 3·16·24 and its two
    scales 2·24; lambda_1, lambda_2 2·16. The embedding and the head 2·40·16 and the head's logit_scale 40."""
    layer = 2 * 16 * 16 + 2 * 16 * 8 + 16 * 16 + 2 * 16 + 3 * 16 * 24 + 2 * 24 + 2 * 16
    assert read_config(DORY, "x").counts.total == 4 * layer + 2 * 40 * 16 + 40


@pytest.mark.parametrize("mode", ["per_loop", "last_loop"])
@pytest.mark.parametrize(("batch", "seq"), [(1, 2), (2, 5)])
def test_dory_written_by_to_dict_against_transformers(mode: str, batch: int, seq: int) -> None:
    """Parameters, the cache after one forward (per_loop: a slot for every pass of a looped layer; last_loop: one)
    and the FLOPs of one forward (the looped layers run three times), against transformers on the CPU."""
    oracle = pytest.importorskip("oracle")
    from test_flops import llmcount_forward
    from test_state_flops import counter_flops

    from llmcount.formulas import memory

    config = {**DORY, "recurrent_kv_cache_mode": mode}
    model = read_config(config, "x")
    assert model.counts.total == oracle.meta_total(config), oracle.VERSIONS
    cache = memory.inference(model.derivation, model.values, "fp32", seq=seq, batch=batch)
    got = cache.bytes_of("kv_cache") + cache.bytes_of("state")
    assert got == oracle.cache_bytes(config, batch, seq), oracle.VERSIONS
    assert llmcount_forward(config, batch, seq) == counter_flops(config, batch, seq), oracle.VERSIONS
