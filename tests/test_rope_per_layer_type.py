"""Cohere Compass's rotary embedding reads rope_parameters per layer type (a JSON object keyed by layer type): a
config without an entry for a kind of layer it has cannot run in transformers 5.23 and is refused by name (a check
that reads the object's keys with `in`); configs with one are counted and cached as transformers builds them."""

from __future__ import annotations

import json

import pytest
from refusal import assert_refused, run

from llmcount.formulas import memory
from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

COMPASS = {
    "model_type": "cohere_compass_text",
    "vocab_size": 50,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 32,
    "num_hidden_layers": 3,
}
ROPE = {"rope_type": "default", "rope_theta": 10000.0}
BOTH = {"full_attention": ROPE, "sliding_attention": ROPE}
MIXED = ["sliding_attention", "full_attention", "sliding_attention"]


@pytest.mark.parametrize(
    "keys",
    [
        {"rope_parameters": {"full_attention": ROPE}},
        {"rope_parameters": {"full_attention": None}},  # an entry, even null, is what the model reads
        {"rope_parameters": BOTH, "layer_types": MIXED, "sliding_window": 3},
        {"rope_parameters": {"sliding_attention": ROPE}, "layer_types": ["sliding_attention"] * 3},
        {"rope_parameters": BOTH, "head_dim": 8, "tie_word_embeddings": False, "attention_bias": True},
    ],
)
def test_cohere_compass_builds_with_an_entry_per_layer_type(keys: dict) -> None:
    config = {**COMPASS, **keys}
    assert read_config(config, "test").counts.total == oracle.meta_total(config), f"{config} ({oracle.VERSIONS})"


@pytest.mark.parametrize(
    ("keys", "missing"),
    [
        ({}, "full_attention"),  # the class's defaults: rope_parameters {}
        ({"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}, "full_attention"),
        ({"rope_parameters": None}, "full_attention"),
        ({"rope_parameters": {"full_attention": ROPE}, "layer_types": MIXED}, "sliding_attention"),
    ],
)
def test_cohere_compass_without_an_entry_for_a_layer_type_is_refused(keys: dict, missing: str) -> None:
    """transformers builds the config object but not the model (a KeyError in the rotary embedding)."""
    config = {**COMPASS, **keys}
    with pytest.raises(oracle.TransformersRejected, match=missing):
        oracle.meta_total(config)
    with pytest.raises(RuleRefusal, match=f"rope_parameters has no entry for {missing}"):
        read_config(config, "test")


def test_cohere_compass_rope_parameters_of_the_wrong_type_are_refused(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**COMPASS, "rope_parameters": ["full_attention"]}))
    assert_refused(run("count", str(path)), "key 'rope_parameters' must be a JSON object, got a list")


@pytest.mark.parametrize("seq", [2, 5])
def test_cohere_compass_cache_of_sliding_and_full_layers_equals_transformers(seq: int) -> None:
    config = {**COMPASS, "rope_parameters": BOTH, "layer_types": MIXED, "sliding_window": 3}
    model = read_config(config, "test")
    got = memory.inference(model.derivation, model.values, "fp32", seq=seq, batch=2).bytes_of("kv_cache")
    assert got == oracle.cache_bytes(config, 2, seq), f"S={seq} ({oracle.VERSIONS})"


def test_a_condition_reads_a_json_object_by_key() -> None:
    """The activation table keeps a layer type's RoPE tables only where its entry is not null."""
    from llmcount.formulas.expressions import condition

    rotates = condition("rope_parameters['full_attention'] is not None", "test")
    assert rotates({"rope_parameters": BOTH}) is True
    assert rotates({"rope_parameters": {"full_attention": None}}) is False
    assert rotates({"rope_parameters": {}}) is False  # a key it lacks reads as None
