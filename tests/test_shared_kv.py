"""Layers that reuse an earlier layer's keys and values (Gemma 3n's KV sharing) and sizes given per layer.

The last ``num_kv_shared_layers`` layers of Gemma 3n have no k_proj, v_proj or k_norm and keep no cache of their
own: their cache layers are transformers' ``DummyLayer``. The configs below set the sharing, the layer pattern and
the per-layer lists by hand, so that every case is exercised (the drawn configs of test_records mostly leave the
sharing out: 15 shared layers of 1 to 4); parameters and caches are compared with transformers, the published
defaults' cache with a hand derivation.
"""

from __future__ import annotations

import json

import pytest
from refusal import assert_refused, run

from llmcount.errors import LlmcountError
from llmcount.formulas import memory
from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

SMALL_3N = {
    "model_type": "gemma3n_text",
    "vocab_size": 64,
    "vocab_size_per_layer_input": 48,
    "hidden_size": 16,
    "hidden_size_per_layer_input": 4,
    "intermediate_size": 24,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "laurel_rank": 3,
    "altup_num_inputs": 3,
    "sliding_window": 3,
}
SHARED_3N = [
    {"num_hidden_layers": 5, "num_kv_shared_layers": 0},
    {"num_hidden_layers": 6, "num_kv_shared_layers": 1},  # the default pattern: layer 4 full, its kinds before
    {"num_hidden_layers": 7, "num_kv_shared_layers": 2, "tie_word_embeddings": False, "attention_bias": True},
    {"num_hidden_layers": 4, "num_kv_shared_layers": 2, "layer_types": ["sliding_attention", "full_attention"] * 2},
    {"num_hidden_layers": 4, "num_kv_shared_layers": 3, "layer_types": ["full_attention"] * 4},
    {"num_hidden_layers": 3, "num_kv_shared_layers": 1, "intermediate_size": [24, 24, 24]},
]


@pytest.mark.parametrize("keys", SHARED_3N)
def test_gemma3n_parameters_equal_transformers(keys: dict) -> None:
    config = {**SMALL_3N, **keys}
    assert read_config(config, "test").counts.total == oracle.meta_total(config), f"{config} ({oracle.VERSIONS})"


@pytest.mark.parametrize("keys", SHARED_3N)
@pytest.mark.parametrize("seq", [2, 5])
def test_gemma3n_cache_equals_transformers(keys: dict, seq: int) -> None:
    """The shared layers keep nothing; the others S tokens (full) or min(S, W - 1) (sliding)."""
    config = {**SMALL_3N, **keys}
    model = read_config(config, "test")
    got = memory.inference(model.derivation, model.values, "fp32", seq=seq, batch=2).bytes_of("kv_cache")
    assert got == oracle.cache_bytes(config, 2, seq), f"{config} S={seq} ({oracle.VERSIONS})"


@pytest.mark.parametrize("keys", SHARED_3N)
def test_gemma3n_flops_equal_flop_counter(keys: dict) -> None:
    """Shared layers attend (with an earlier layer's keys) but have no k_proj or v_proj; AltUp's prediction matmul
    and its router's second use are the record's [[flops]]."""
    from test_flops import assert_equal_to_counter

    for batch, seq in ((1, 1), (2, 5)):
        assert_equal_to_counter({**SMALL_3N, **keys}, batch, seq)


def test_gemma3n_class_defaults_cache_by_hand() -> None:
    """Gemma3nTextConfig() (gemma-3n-E4B's language model): 35 layers, every fifth full; the last 15 share, so the
    first 20 keep a cache: 4 full layers (4, 9, 14, 19) and 16 sliding ones. h_kv = 2, h_d = 256: 2 · 2 · 256 =
    1,024 elements per token and layer. bf16 at S = 32,768, W = 512: 4 · 1,024 · 32,768 · 2 = 268,435,456 bytes
    for the full layers, 16 · 1,024 · 511 · 2 = 16,744,448 for the sliding ones."""
    model = read_config(oracle.class_defaults("gemma3n_text"), "defaults")
    result = memory.inference(model.derivation, model.values, "bf16", seq=32768, batch=1)
    kinds = {k.kind: (k.layers, k.bytes) for k in result.per_layer_kind}
    assert kinds == {"full_attention": (4, 268_435_456), "sliding_attention": (16, 16_744_448)}
    assert result.bytes_of("kv_cache") == 268_435_456 + 16_744_448


def test_gemma3n_widths_that_differ_per_layer_are_refused() -> None:
    config = {**SMALL_3N, "num_hidden_layers": 3, "num_kv_shared_layers": 0, "intermediate_size": [24, 24, 32]}
    with pytest.raises(RuleRefusal, match=r"key 'intermediate_size' gives layers different sizes \(24, 32\)"):
        read_config(config, "test")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([24, 24], "key 'intermediate_size' has 2 entries; it needs one per layer"),
        ([24, "24", 24], r"key 'intermediate_size\[1\]' must be an integer"),
        ([24, [24], 24], r"key 'intermediate_size\[1\]' must be an integer"),
        ([24, 0, 24], r"key 'intermediate_size\[1\]' must be positive"),
        ([24, True, 24], r"key 'intermediate_size\[1\]' must be an integer"),
        ([], "key 'intermediate_size' has 0 entries"),
        ([24] * 200_000, "key 'intermediate_size' has 200000 entries"),
        ({"0": 24}, "key 'intermediate_size' must be an integer"),
    ],
)
def test_gemma3n_hostile_per_layer_widths(value: object, message: str) -> None:
    config = {**SMALL_3N, "num_hidden_layers": 3, "num_kv_shared_layers": 0, "intermediate_size": value}
    with pytest.raises(LlmcountError, match=message):
        read_config(config, "test")


@pytest.mark.parametrize(
    "keys",
    [
        {"num_hidden_layers": 4, "num_kv_shared_layers": 4},  # no layer left to share from
        {"num_hidden_layers": 5, "num_kv_shared_layers": 1},  # the last layer, the only full one, would share
        {"num_hidden_layers": 4, "num_kv_shared_layers": 9},
    ],
)
def test_gemma3n_sharing_without_a_layer_to_share_from_is_refused(keys: dict) -> None:
    """Gemma3nTextConfig.kv_sharing_modes raises when a kind of layer among the shared ones has none before them;
    more shared layers than layers leaves no layer that computes keys (transformers then indexes from the end)."""
    config = {**SMALL_3N, **keys}
    if keys["num_kv_shared_layers"] <= keys["num_hidden_layers"]:
        with pytest.raises(oracle.TransformersRejected, match="layer types producing a cache"):
            oracle.meta_total(config)
    with pytest.raises(RuleRefusal, match="num_kv_shared_layers"):
        read_config(config, "test")


def test_gemma3n_refusal_is_one_line(tmp_path) -> None:
    config = {**SMALL_3N, "num_hidden_layers": 3, "num_kv_shared_layers": 0, "intermediate_size": [1, 2, 3]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert_refused(run("count", str(path)), "intermediate_size", "different sizes")
