"""BigBird's costs: full attention up to S_full, block-sparse attention beyond it, as transformers runs them.

BigBirdModel.forward (transformers 5.23, modeling_big_bird.py) runs attention_type "block_sparse" (the default) only
when S > (5 + 2 · num_random_blocks) · block_size; for shorter sequences it switches the model to "original_full",
eager full attention over the S × S scores. Longer, it pads the sequence to whole blocks and runs
bigbird_block_sparse_attention: a fixed number of key blocks per query block, no mask, nothing in the cache.
Checked against FlopCounterMode and the cache of a CPU forward pass.
"""

from __future__ import annotations

import json

import oracle
import pytest
from refusal import assert_refused, run
from test_state_flops import counter_flops

from llmcount.errors import LlmcountError
from llmcount.formulas import memory, records
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


@pytest.mark.parametrize(("block", "random"), [(4, 1), (2, 3), (3, 2)])
@pytest.mark.parametrize("past", [1, 3, 8, 33])
def test_block_sparse_equals_flop_counter(block: int, random: int, past: int) -> None:
    """S_full + past tokens: a multiple of block_size or not (transformers pads to whole blocks)."""
    config = {**SMALL, "block_size": block, "num_random_blocks": random}
    seq = (5 + 2 * random) * block + past
    for batch in (1, 2):
        expected = counter_flops(config, batch, seq)
        assert forward(config, batch, seq) == expected, f"b={block} r={random} B={batch} S={seq} ({oracle.VERSIONS})"


def test_block_sparse_by_hand() -> None:
    """block_size b = 4, num_random_blocks r = 1, S = 35: padded to 36 tokens, n = 9 blocks. Per layer and head
    (d/h = 8), each of Q·K^T and A·V: first and last query blocks 2 · 4 · 36 keys, the second and second-to-last
    2 · 4 · (4 + 1) · 4, the 5 middle ones 5 · 4 · (5 + 1) · 4: 288 + 160 + 480 = 928 query-key pairs, 2 · 8 FLOPs
    each; over 4 heads, two matmuls and 2 layers: 2 · 2 · 4 · 928 · 16. The layers' weights run on the 36 padded
    tokens: 2 · 36 · (4 · 32² + 2 · 32 · 48) per layer; the transform and the head on the 35 tokens:
    35 · (2 · 32² + 2 · 32 · 64); the pooler 2 · 32² once."""
    attention = 2 * 2 * 4 * 928 * 16
    layers = 2 * 2 * 36 * (4 * 32**2 + 2 * 32 * 48)
    assert forward(SMALL, 1, 35) == attention + layers + 35 * (2 * 32**2 + 2 * 32 * 64) + 2 * 32**2


def test_random_blocks_change_which_keys_not_how_many() -> None:
    """transformers draws the random blocks with numpy while training (in eval every random block is block 0):
    the count is the same with either, and with other seeds."""
    import numpy as np
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_config(oracle._hf_config(SMALL), attn_implementation="eager")
    counts = set()
    for seed, training in ((0, False), (0, True), (1, True), (7, True)):
        np.random.seed(seed)
        torch.manual_seed(seed)
        model.train(training)
        ids = torch.randint(0, 64, (2, 45))
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
        model.bert.set_attention_type("block_sparse")
        counts.add(counter.get_total_flops())
    assert counts == {forward(SMALL, 2, 45)}, oracle.VERSIONS


def test_block_sparse_causal_and_conventions_are_refused_by_name(tmp_path) -> None:
    """Block-sparse attention runs without a mask (a decoder too): there are no causal pairs to count, and the
    conventions' full S×S is not what runs."""
    model = read_config(DECODER, "big_bird")
    with pytest.raises(
        LlmcountError, match=r"causal pairs \(--causal\) are not derived for BigBird \(big_bird\) at S = 29"
    ):
        Flops(model.derivation, causal=True).evaluate(model.values, 29, 1)
    assert Flops(model.derivation, causal=True).evaluate(model.values, 28, 1).forward > 0
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL))
    assert_refused(run("flops", str(path), "--seq", "29", "--causal"), "BigBird (big_bird)", "S = 29", "--causal")
    assert_refused(run("flops", str(path), "--seq", "29", "--conventions"), "BigBird (big_bird)", "conventions")
    for command in (["flops", str(path), "--seq", "29"], ["memory", str(path), "--seq", "29"]):
        assert run(*command).exit_code == 0
    assert run("flops", str(path), "--seq", "28", "--conventions").exit_code == 0
    decoder = tmp_path / "decoder.json"
    decoder.write_text(json.dumps(DECODER))
    refused = run("memory", str(decoder), "--gpu-memory", "1GiB")  # the cache drops to nothing past S = 28
    assert_refused(refused, "--gpu-memory", "BigBird (big_bird)", "S = 28")


def test_the_flops_command_shows_the_formula_that_holds_at_s(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL))
    beyond = run("flops", str(path), "--seq", "35").stdout
    assert "⌈S/b_blk⌉" in beyond and "4·S·d" not in beyond and f"{forward(SMALL, 1, 35):,}" in beyond
    full = run("flops", str(path), "--seq", "28").stdout
    assert "b_blk" not in full and "4·S·d" in full
    data = json.loads(run("flops", str(path), "--seq", "35", "--json").stdout)
    assert data["forward_flops"] == forward(SMALL, 1, 35) and "block-sparse" in data["convention"]


def test_class_defaults_run_full_attention_up_to_704_tokens() -> None:
    """BigBirdConfig(): block_size 64, num_random_blocks 3: (5 + 6) · 64 = 704."""
    config = {"model_type": "big_bird", **{k: SMALL[k] for k in ("num_hidden_layers", "hidden_size", "vocab_size")}}
    config |= {"num_attention_heads": 4, "intermediate_size": 48}
    model = read_config(config, "big_bird")
    assert "block-sparse" not in Flops(model.derivation).evaluate(model.values, 704, 1).convention
    assert "block-sparse" in Flops(model.derivation).evaluate(model.values, 705, 1).convention


@pytest.mark.parametrize(
    ("config", "batch", "seq"), [(DECODER, 2, 9), (DECODER, 1, 28), ({**FULL, "is_decoder": True}, 2, 33)]
)
def test_decoder_cache_equals_transformers(config: dict, batch: int, seq: int) -> None:
    """A decoder (is_decoder) caches keys and values of d per layer: 2 · N · d · B · S elements."""
    model = read_config(config, "big_bird")
    got = memory.inference(model.derivation, model.values, "fp32", seq=seq, batch=batch).bytes_of("kv_cache")
    assert got == 2 * 2 * 32 * batch * seq * 4 == oracle.cache_bytes(config, batch, seq), oracle.VERSIONS


@pytest.mark.parametrize(("batch", "seq"), [(2, 29), (1, 35), (2, 40)])
def test_block_sparse_decoder_caches_nothing(batch: int, seq: int) -> None:
    """Beyond S_full the block-sparse layers are not given the cache: a decoder's forward with use_cache leaves it
    empty."""
    model = read_config(DECODER, "big_bird")
    lines = memory.inference(model.derivation, model.values, "fp32", seq=seq, batch=batch).lines
    line = next(line for line in lines if line.name == "kv_cache")
    assert line.bytes == 0 == oracle.cache_bytes(DECODER, batch, seq), oracle.VERSIONS
    assert "neither read nor fill the cache" in line.note


def test_a_record_with_beyond_entries_needs_the_longest_s_they_are_beyond() -> None:
    from pathlib import Path

    import tomllib

    from llmcount.formulas.records import RecordError, parse_record

    record = tomllib.loads((Path(records.__file__).parent / "families" / "big_bird.toml").read_text())
    parse_record(record, "big_bird.toml")
    without = {**record, "attention": {k: v for k, v in record["attention"].items() if "beyond" not in k}}
    del without["attention"]["longest"]
    with pytest.raises(RecordError, match="marked 'beyond' need \\[attention\\] 'longest'"):
        parse_record(without, "big_bird.toml")
    flag = {**record, "flops": [{**record["flops"][1], "beyond": "yes"}]}
    with pytest.raises(RecordError, match="beyond: true or false"):
        parse_record(flag, "big_bird.toml")
