"""Discovery of sizes that sit inside sub-configs (DBRX's ``attn_config.kv_n_heads``, ``ffn_config.ffn_hidden_size``,
``ffn_config.moe_num_experts``): read as dotted keys, given inside their sub-config's mapping in every build and
random config, varied like top-level keys, and named in the draft by a symbol of its own. One tiny DBRX is built on
the meta device (the probe's own view of dotted keys); the rest are stub builds with the shapes written by hand, and
config classes read, not built."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch", reason="discover needs torch and transformers")
pytest.importorskip("transformers", reason="discover needs torch and transformers")

from discover_stubs import bare as _bare
from discover_stubs import stub
from sympy import Integer, Symbol

from llmcount.discover import probe, repairs
from llmcount.discover.core import Factor, Kind
from llmcount.discover.verify import random_config
from llmcount.formulas import records
from llmcount.formulas.config import read_config


def test_dotted_keys_go_inside_their_sub_config_beside_its_other_keys() -> None:
    values = {"d_model": 8, "attn_config": {"rope_theta": 1e4}, "attn_config.kv_n_heads": 2, "ffn_config.n": 3}
    inside = {"attn_config": {"rope_theta": 1e4, "kv_n_heads": 2}, "ffn_config": {"n": 3}}
    assert probe.nested(values) == {"d_model": 8, **inside}
    assert probe.nested({"ffn_config": None, "ffn_config.n": 3}) == {"ffn_config": {"n": 3}}  # null: the class defaults
    assert probe.nested({"d_model": 8}) == {"d_model": 8}


def test_the_sizes_of_dbrxs_sub_configs_are_the_integer_keys_their_classes_declare() -> None:
    # DbrxAttentionConfig and DbrxFFNConfig (transformers 5.24) declare these integers; DbrxConfig copies d_model
    # (2048) into ffn_config.hidden_size. The keys every config has (chunk_size_feed_forward, ...) are not sizes.
    assert probe.subconfig_sizes("dbrx") == {
        "attn_config.kv_n_heads": 1,
        "ffn_config.hidden_size": 2048,
        "ffn_config.ffn_hidden_size": 3584,
        "ffn_config.moe_num_experts": 4,
        "ffn_config.moe_top_k": 1,
    }
    assert probe.subconfig_sizes("llama") == {}
    assert "kv heads" in probe.docstring_meaning("dbrx", "attn_config.kv_n_heads")


def test_a_build_gives_dotted_keys_inside_their_sub_config() -> None:
    # a tiny DBRX: d = 32, h = 4 (heads of 8), 2 KV heads, 3 experts of 8: Wqkv is d + 2 * 2 * 8 = 64 rows, each of
    # the experts' w1 stacks 3 * 8 = 24 rows, the router 3; read back from the config
    values = {"n_layers": 1, "d_model": 32, "n_heads": 4, "vocab_size": 16, "attn_config.kv_n_heads": 2}
    values |= {"attn_config.rope_theta": 1e4, "ffn_config.moe_num_experts": 3, "ffn_config.ffn_hidden_size": 8}
    built = probe.build("dbrx", values)
    shapes = {t.key.removesuffix(".weight").rsplit(".", 1)[-1]: t.shape for t in built.tensors}
    assert shapes["Wqkv"] == (64, 32) and shapes["w1"] == (24, 32) and shapes["layer"] == (3, 32)
    assert built.attributes["attn_config.kv_n_heads"] == 2 and built.attributes["ffn_config.moe_num_experts"] == 3
    dropped = probe.build("dbrx", values, drop=("ffn_config.moe_num_experts",))
    assert dropped.attributes["ffn_config.moe_num_experts"] == 4  # DbrxFFNConfig's default


FFN = "model.layers.*.ffn.experts.w1"


def _stub_build(model_type, values, drop=(), outside=None):
    """A DBRX-like stub: experts of moe_num_experts * ffn_hidden_size rows; ffn_config.hidden_size is overwritten by
    the config (no tensor follows it), an audio_config the causal LM does not build, and a depth_config the config
    refuses when given (as Moshi's depth_decoder_config, given without the audio encoder's)."""
    values = probe.nested({k: v for k, v in values.items() if k not in drop})
    if "depth_config" in values:
        raise probe.Refused("TypeError: Field 'audio_vocab_size' expected int, got NoneType")
    ffn = values.get("ffn_config") or {}
    rows = ffn.get("moe_num_experts", 4) * ffn.get("ffn_hidden_size", 6)
    tensor = probe.Tensor(FFN, 0, (rows, values.get("d_model", 8)), "Linear", False, False)
    return stub([tensor], 1)


def test_discovery_varies_the_sizes_inside_sub_configs_that_shape_tensors(monkeypatch) -> None:
    sizes = {"ffn_config.hidden_size": 8, "ffn_config.ffn_hidden_size": 6, "ffn_config.moe_num_experts": 4}
    sizes |= {"audio_config.width": 32, "audio_config.depth": 2, "ffn_config.pad_token_id": 0, "depth_config.n": 8}
    monkeypatch.setattr(probe, "subconfig_sizes", lambda model_type: sizes)
    monkeypatch.setattr(probe, "build", _stub_build)
    defaults = {"n_layers": 3, "d_model": 8}
    discoverer = _bare(defaults=defaults, fixed={"n_layers": 1, "d_model": 8}, per_layer={}, parts=[])
    discoverer.__dict__ |= {"layer_key": "n_layers", "dependent": {}, "splits": {}, "outside": frozenset()}
    discoverer.multiples = []  # no validator of multiples to read from a stub's config class
    discoverer.nested_sizes()
    kept = {"ffn_config.ffn_hidden_size": 6, "ffn_config.moe_num_experts": 4}
    assert {k: v for k, v in discoverer.fixed.items() if "." in k} == kept
    assert discoverer.defaults == {**defaults, **kept}
    # then a dotted key is varied like any other: its other value builds other shapes
    assert discoverer.build({"ffn_config.moe_num_experts": 5}).tensors[0].shape == (30, 8)


def test_a_symbol_of_its_own_for_a_dotted_key_is_named_by_its_last_part_unless_taken() -> None:
    discoverer = _bare(defaults={"hidden_size": 8, "ffn_config.hidden_size": 8}, aliases={"n_embd": "hidden_size"})
    discoverer.symbols = {"ffn_config.moe_num_experts": Symbol("moe_num_experts")}
    assert discoverer.own_name("attn_config.kv_n_heads") == "kv_n_heads"
    assert discoverer.own_name("encoder_config.hidden_size") == "encoder_config_hidden_size"  # a top-level key
    assert discoverer.own_name("x_config.n_embd") == "x_config_n_embd"  # the class's other name for one
    assert discoverer.own_name("x_config.d") == "x_config_d"  # the glossary's symbol for the hidden size
    assert discoverer.own_name("other_config.moe_num_experts") == "other_config_moe_num_experts"  # taken already
    assert discoverer.own_name("vocab_size") == "vocab_size"


def _dbrx_like():
    """A bare Discoverer with DBRX's size keys, two of them dotted, as discovery leaves it before the random configs."""
    d, h = Symbol("d", positive=True, integer=True), Symbol("h", positive=True, integer=True)
    h_kv, n = Symbol("kv_n_heads", positive=True, integer=True), Symbol("moe_num_experts", positive=True, integer=True)
    defaults = {"n_layers": 24, "d_model": 2048, "n_heads": 16, "attn_config.kv_n_heads": 1}
    defaults |= {"ffn_config.moe_num_experts": 4, "vocab_size": 32000}
    symbols = {"d_model": d, "n_heads": h, "attn_config.kv_n_heads": h_kv, "ffn_config.moe_num_experts": n}
    discoverer = _bare(model_type="dbrx", defaults=defaults, fixed=dict(defaults), symbols=symbols, tokens=set())
    discoverer.__dict__ |= {"layer_key": "n_layers", "dependent": {}, "rng": random.Random(0), "switches_read": []}
    discoverer.__dict__ |= {"parts": [], "per_layer": {}, "layer_values": {}}
    discoverer.repairs = [repairs.Repair("attn_config.rope_theta", 10000.0)]
    return discoverer


def test_random_configs_draw_the_dotted_keys_inside_their_sub_configs() -> None:
    discoverer, rng = _dbrx_like(), random.Random(3)
    configs = [random_config(discoverer, rng) for _ in range(12)]
    assert not any("." in key for config in configs for key in config)
    kv = {c["attn_config"]["kv_n_heads"] for c in configs}  # head counts are always given
    experts = {c.get("ffn_config", {}).get("moe_num_experts") for c in configs}
    assert len(kv) > 1 and len(experts - {None}) > 1 and all(c["attn_config"]["rope_theta"] == 1e4 for c in configs)
    assert all(c["n_heads"] % c["attn_config"]["kv_n_heads"] == 0 for c in configs)
    # the bundled DBRX record reads them where they are: its count, by hand (V d twice, and per layer Wqkv d (d +
    # 2 h_kv d / h), out_proj d², the router d n, the experts 3 n d d_moe, two norms d; the final norm d). The record
    # has no default for d_model: a config without it is given transformers' default
    for config in configs:
        config = {"d_model": 2048, **config}
        d, h, v, layers = config["d_model"], config["n_heads"], config.get("vocab_size", 32000), config["n_layers"]
        h_kv, n = config["attn_config"]["kv_n_heads"], config.get("ffn_config", {}).get("moe_num_experts", 4)
        d_moe = config.get("ffn_config", {}).get("ffn_hidden_size", 3584)
        per_layer = d * (d + 2 * h_kv * d // h) + d * d + d * n + 3 * n * d * d_moe + 2 * d
        expected = 2 * v * d + layers * per_layer + d
        assert read_config(config, "random", family=records.family("dbrx")).counts.total == expected


def test_a_draft_reads_a_dotted_key_with_a_symbol_of_its_own(tmp_path) -> None:
    # the draft of a DBRX-like stub: a router d x n on every layer, n = ffn_config.moe_num_experts
    d, n = Symbol("d", positive=True, integer=True), Symbol("moe_num_experts", positive=True, integer=True)
    router = "transformer.blocks.*.ffn.router.layer.weight"
    kinds = {router: Kind(router, "Linear", False, False, True, 0)}
    kinds[router].factors = [Factor(expr=Integer(1)), Factor(expr=n), Factor(expr=d)]
    discoverer = _bare(
        model_type="nested_stub",
        prefix="transformer",
        classes=("NestedStubForCausalLM", "NestedStubConfig"),
        symbols={"d_model": d, "ffn_config.moe_num_experts": n},
        own={"moe_num_experts": "The number of experts in the mixture of experts layer."},
        tied={},
        aliases={},
        defaults={"n_layers": 24, "d_model": 2048, "ffn_config.moe_num_experts": 4},
        layer_key="n_layers",
        layer_values={},
        layer_keys=[],
        layer_conditions={},
        log=lambda text: None,
    )
    text = discoverer.write(kinds, {"d_model": ("2048", None), "ffn_config.moe_num_experts": ("4", None)}, {})
    assert 'moe_num_experts = { key = "ffn_config.moe_num_experts", default = 4 }' in text
    path = tmp_path / "nested_stub.toml"
    path.write_text(text, encoding="utf-8")
    family = records.load(path)
    config = {"model_type": "nested_stub", "n_layers": 3, "d_model": 16, "ffn_config": {"moe_num_experts": 5}}
    assert read_config(config, "stub", family=family).counts.total == 3 * 5 * 16
    assert read_config({**config, "ffn_config": {}}, "stub", family=family).counts.total == 3 * 4 * 16
