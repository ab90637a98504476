"""Sizes that differ per kind of layer, from transformers' per-layer config object (Gemma 4's ``per_layer_config``).

A record reads a key ``on`` the layers of a [layers] kind (families/README.md): the value a layer's override gives,
else the record's value without a per-layer object (Gemma 4: global_head_dim on the full-attention layers), else the
key's own. Parameters are compared with transformers for hand-set configs that flip every part (the drawn configs of
test_records leave the per-layer object out); hostile per-layer objects are refused in one line naming the key.
"""

from __future__ import annotations

import json
import re

import pytest
from refusal import assert_refused, run

from llmcount.errors import LlmcountError
from llmcount.formulas import memory, records
from llmcount.formulas.config import RuleRefusal, read_config
from llmcount.formulas.records import RecordError, parse_record

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

SMALL_4 = {
    "model_type": "gemma4_text",
    "vocab_size": 64,
    "vocab_size_per_layer_input": 48,
    "hidden_size": 16,
    "hidden_size_per_layer_input": 4,
    "intermediate_size": 24,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "num_hidden_layers": 6,
    "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2,
}
FULL = {"head_dim": 12, "num_key_value_heads": 1}
GEMMA_4 = [
    {},  # no per_layer_config: the full layers take global_head_dim (512)
    {"global_head_dim": 12},
    {"global_head_dim": 12, "attention_k_eq_v": True, "num_global_key_value_heads": 1},
    {"global_head_dim": 12, "attention_k_eq_v": True},  # no num_global_key_value_heads: num_key_value_heads
    {"per_layer_config": None},  # null: every layer as the config says
    {"per_layer_config": {}},
    {"per_layer_config": {"2": FULL, "05": FULL}, "attention_k_eq_v": True},
    {"per_layer_config": {"0": {"head_dim": 6}, "1": {"head_dim": 6}, "3": {"head_dim": 6}, "4": {"head_dim": 6}}},
    {"per_layer_config": {"2": {"num_key_value_heads": 4}, "5": {"num_key_value_heads": 4}}},
    {"num_kv_shared_layers": 3, "use_double_wide_mlp": True, "global_head_dim": 10},
    {"num_kv_shared_layers": 2, "tie_word_embeddings": False, "attention_bias": True},
    {"enable_moe_block": True, "num_experts": 5, "top_k_experts": 2, "moe_intermediate_size": 6},
    {"hidden_size_per_layer_input": 0},
    {"layer_types": ["sliding_attention"] * 6},  # the last layer is made full whatever layer_types says
    {"num_hidden_layers": 7, "layer_types": None},  # the default pattern: layers 5 and 6 full
]


@pytest.mark.parametrize("keys", GEMMA_4)
def test_gemma4_parameters_equal_transformers(keys: dict) -> None:
    config = {**SMALL_4, **keys}
    expected = oracle.meta_total(config)
    assert read_config(config, "test").counts.total == expected, f"{config} ({oracle.VERSIONS})"


UNIFIED = {k: v for k, v in SMALL_4.items() if "per_layer_input" not in k} | {"model_type": "gemma4_unified_text"}


GEMMA_4_PARTS = {"enable_moe_block", "hidden_size_per_layer_input"}  # what Gemma 4 Unified's text model has not


@pytest.mark.parametrize("keys", [keys for keys in GEMMA_4 if not GEMMA_4_PARTS & set(keys)])
def test_gemma4_unified_parameters_equal_transformers(keys: dict) -> None:
    """Gemma 4 Unified's text model: Gemma 4's decoder without per-layer embeddings and the MoE block."""
    config = {**UNIFIED, **keys}
    expected = oracle.meta_total(config)
    assert read_config(config, "test").counts.total == expected, f"{config} ({oracle.VERSIONS})"


def test_gemma4_class_defaults_by_hand() -> None:
    """Gemma4TextConfig(): 30 layers (25 sliding, 5 full: 5, 11, 17, 23, 29), d = 2304, h = 8, V = 262,144,
    d_ff = 9216, per-layer embeddings of 256 from a table of 262,144 rows; sliding layers h_kv = 4, h_d = 256; full
    layers h_kv = 4 and global_head_dim 512. Per sliding layer: q and o 2 · 2304 · 2048 = 9,437,184, k and v
    2 · 2304 · 1024 = 4,718,592, q/k norms 512; per full layer twice the head size: 18,874,368 + 9,437,184 + 1,024.
    Every layer: MLP 3 · 2304 · 9216 = 63,700,992, four norms 9,216, PLE gate and projection 2 · 2304 · 256 =
    1,179,648 and its norm 2,304."""
    sliding = 9_437_184 + 4_718_592 + 512
    full = 18_874_368 + 9_437_184 + 1_024
    every = 63_700_992 + 9_216 + 1_179_648 + 2_304
    model_level = 262_144 * 2304 + 262_144 * 30 * 256 + 2304 * 30 * 256 + 256 + 2304
    expected = model_level + 25 * sliding + 5 * full + 30 * every
    assert oracle.meta_total(oracle.class_defaults("gemma4_text")) == expected, oracle.VERSIONS
    assert read_config(oracle.class_defaults("gemma4_text"), "defaults").counts.total == expected


@pytest.mark.parametrize(
    ("per_layer", "message"),
    [
        ([FULL], "key 'per_layer_config' must be a JSON object of layer indices and their keys, got a list"),
        ("x", "key 'per_layer_config' must be a JSON object"),
        (3, "key 'per_layer_config' must be a JSON object"),
        ({str(i): FULL for i in range(7)}, "key 'per_layer_config' has 7 entries, more than the 6 layers"),
        ({str(i): FULL for i in range(200_000)}, "key 'per_layer_config' has 200,000 entries"),
        ({"x": FULL}, "key 'per_layer_config' has an entry 'x' that is not a layer index"),
        ({"-1": FULL}, "an entry '-1' that is not a layer index"),
        ({" 2": FULL}, "an entry ' 2' that is not a layer index"),
        ({"٢": FULL}, "that is not a layer index"),
        ({"9" * 30: FULL}, "that is not a layer index"),
        ({"6": FULL}, "layer 6 does not exist (num_hidden_layers: 6)"),
        ({"2": FULL, "02": FULL}, "key 'per_layer_config' gives layer 2 twice ('2' and '02')"),
        ({"2": [12]}, "key \"per_layer_config['2']\" must be a JSON object (the layer's keys), got a list"),
        ({"2": None}, "must be a JSON object (the layer's keys), got null"),
        ({"2": {"head_dim": "12"}}, r"key 'per_layer_config\['2'\].head_dim' must be an integer"),
        ({"2": {"head_dim": True}}, r"key 'per_layer_config\['2'\].head_dim' must be an integer"),
        ({"2": {"head_dim": None}}, r"key 'per_layer_config\['2'\].head_dim' must be an integer, got null"),
        ({"2": {"head_dim": 1.5}}, r"key 'per_layer_config\['2'\].head_dim' must be an integer"),
        ({"2": {"head_dim": 0}}, r"key 'per_layer_config\['2'\].head_dim' must be positive"),
        ({"2": {"head_dim": 2**80}}, r"key 'per_layer_config\['2'\].head_dim' is 1.21e\+24"),
        ({"2": {"head_dim": {"x": 1}}}, r"key 'per_layer_config\['2'\].head_dim' must be an integer, got a JSON"),
    ],
)
def test_gemma4_hostile_per_layer_objects_are_refused_naming_the_key(per_layer: object, message: str) -> None:
    config = {**SMALL_4, "per_layer_config": per_layer}
    with pytest.raises(LlmcountError, match=message if "\\" in message else _literal(message)):
        read_config(config, "test")


def _literal(text: str) -> str:
    return re.escape(text)


@pytest.mark.parametrize(
    ("per_layer", "message"),
    [
        ({"2": {"intermediate_size": 8}}, "gives layer 2 its own 'intermediate_size'"),
        ({"2": {"skip": ["mlp"]}}, "gives layer 2 its own 'skip'"),
        ({"0": {"head_dim": 6}}, "gives the N_sliding layers different head_dim (6, 8)"),
        ({"2": {"num_key_value_heads": 1}}, "gives the N_full layers different num_key_value_heads (1, 2)"),
    ],
)
def test_gemma4_per_layer_sizes_the_record_cannot_count_are_refused(per_layer: dict, message: str) -> None:
    """A layer override of a key the record does not read per layer, or layers of one kind with different sizes:
    refused for a stated reason (transformers builds some of these)."""
    with pytest.raises(RuleRefusal, match=_literal(message)):
        read_config({**SMALL_4, "per_layer_config": per_layer}, "test")


def test_gemma4_refusal_is_one_line(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**SMALL_4, "per_layer_config": {"2": {"head_dim": "12"}}}))
    assert_refused(run("count", str(path)), "per_layer_config['2'].head_dim")
    path.write_text(json.dumps({**SMALL_4, "per_layer_config": {"0": {"head_dim": 6}}}))
    assert_refused(run("count", str(path)), "per_layer_config", "different head_dim")


CACHED_4 = {"vocab_size_per_layer_input": 64, "sliding_window": 3}  # token ids below V index both tables
BIDIRECTIONAL = [  # use_bidirectional_attention "all": Gemma4TextConfig makes the window W // 2 + 1 (6: 4 tokens)
    {"use_bidirectional_attention": "all", "sliding_window": 6},
    {"use_bidirectional_attention": "all", "sliding_window": 5, "num_kv_shared_layers": 2},
    {"use_bidirectional_attention": "vision"},
]


def _gemma4_configs() -> list[dict]:
    cases = [*GEMMA_4, *BIDIRECTIONAL]
    text = [{**SMALL_4, **CACHED_4, **keys} for keys in cases]
    unified = [{**UNIFIED, "sliding_window": 3, **keys} for keys in cases if not GEMMA_4_PARTS & set(keys)]
    return text + unified


@pytest.mark.parametrize("config", _gemma4_configs())
@pytest.mark.parametrize("seq", [2, 5])
def test_gemma4_cache_equals_transformers(config: dict, seq: int) -> None:
    """Full layers keep S tokens of their own (wider) heads, sliding layers min(S, W - 1) of theirs, the layers
    that reuse an earlier layer's keys and values nothing."""
    model = read_config(config, "test")
    got = memory.inference(model.derivation, model.values, "fp32", seq=seq, batch=2).bytes_of("kv_cache")
    assert got == oracle.cache_bytes(config, 2, seq), f"{config} S={seq} ({oracle.VERSIONS})"


@pytest.mark.parametrize("config", [c for c in _gemma4_configs() if "use_bidirectional_attention" not in c])
def test_gemma4_flops_equal_flop_counter(config: dict) -> None:
    """Scores and values at the full layers' head width on the full layers, the sliding layers' on theirs; the
    layers that share keys and values attend without k_proj or v_proj. (A bidirectional model does not run on the
    meta device: its mask calls .item(); its FLOPs are the causal model's, eager computing S x S either way.)"""
    from test_flops import assert_equal_to_counter

    for batch, seq in ((1, 1), (2, 5)):
        assert_equal_to_counter(config, batch, seq)


def test_gemma4_class_defaults_cache_by_hand() -> None:
    """Gemma4TextConfig(): 30 layers, 25 sliding (h_kv = 4, h_d = 256: 2 · 4 · 256 = 2,048 elements per token) and 5
    full (h_kv = 4, global_head_dim 512: 4,096). bf16 at S = 32,768, W = 512: 5 · 4,096 · 32,768 · 2 =
    1,342,177,280 bytes for the full layers, 25 · 2,048 · 511 · 2 = 52,326,400 for the sliding ones."""
    model = read_config(oracle.class_defaults("gemma4_text"), "defaults")
    result = memory.inference(model.derivation, model.values, "bf16", seq=32768, batch=1)
    kinds = {k.kind: (k.layers, k.bytes) for k in result.per_layer_kind}
    assert kinds == {"full_attention": (5, 1_342_177_280), "sliding_attention": (25, 52_326_400)}


def test_gemma4_costs_on_the_command_line(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL_4))
    for command in ("flops", "memory"):
        result = run(command, str(path))
        assert result.exit_code == 0 and result.stdout, (command, result.stderr)


HEAD = {"N": "num_hidden_layers", "V": "vocab_size", "d": "hidden_size"}  # the LM head's FLOPs read V and d
RECORD = {
    "model_type": "x",
    "title": "x",
    "per_layer": "per_layer_config",
    "symbols": {**HEAD, "h_d": {"key": "head_dim", "on": "N_full"}},
    "layers": {"N_full": "i % 2 == 0"},
    "terms": [{"path": "attention/q_proj", "expr": "h_d", "layers": "N_full"}],
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"symbols": {**HEAD, "h_d": {"key": "head_dim", "on": "N"}}}, "N is not a [layers] symbol"),
        ({"symbols": {**HEAD, "h_d": {"key": "head_dim", "absent": 4}}}, "only with 'on'"),
        ({"per_layer": ""}, "'per_layer' (the per-layer object) goes with symbols read 'on' some layers"),
        ({"symbols": {**HEAD, "h_d": "head_dim"}}, "'per_layer' (the per-layer object) goes with"),
    ],
)
def test_records_with_per_layer_symbols_are_checked(change: dict, message: str) -> None:
    with pytest.raises(RecordError, match=_literal(message)):
        parse_record({**RECORD, **change}, "x.toml")


def test_a_record_reads_a_key_on_the_layers_of_a_kind() -> None:
    family = parse_record(RECORD, "x.toml")
    config = {"model_type": "x", "num_hidden_layers": 4, "vocab_size": 5, "hidden_size": 2, "head_dim": 8}
    config["per_layer_config"] = {"0": {"head_dim": 3}}
    with pytest.raises(RuleRefusal, match="different head_dim"):
        read_config(config, "test", family=family)
    config["per_layer_config"]["2"] = {"head_dim": 3}
    assert read_config(config, "test", family=family).counts.total == 2 * 3
    assert records.family("gemma4_text").per_layer == "per_layer_config"


@pytest.mark.parametrize("keys", [{}, {"use_double_wide_mlp": True, "global_head_dim": 10}])
def test_gemma4_every_layer_sharing_kv_is_counted(keys: dict) -> None:
    """num_kv_shared_layers = num_hidden_layers: Gemma4TextConfig accepts it (transformers 5.24: every layer reuses the
    keys and values of another model, an assistant's), so no layer has k_proj, v_proj or k_norm. The count equals
    transformers'; the model caches nothing of its own and cannot run a training forward alone, which is refused."""
    from llmcount.formulas.activations import Options, activations

    config = {**SMALL_4, "num_kv_shared_layers": 6, **keys}
    model = read_config(config, "test")
    assert model.counts.total == oracle.meta_total(config), oracle.VERSIONS
    assert memory.inference(model.derivation, model.values, "bf16", seq=64).bytes_of("kv_cache") == 0
    with pytest.raises(LlmcountError, match="num_kv_shared_layers equal to num_hidden_layers"):
        activations(model.architecture, model.values, "bf16", 1, 8, Options(), model.keys)
