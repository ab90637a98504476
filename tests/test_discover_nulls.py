"""Discovery's classes of configs the class defaults do not describe whole: a per-layer list None by default (no
default pattern of layer kinds: the model cannot be built without one), a float that shapes tensors (fitted at its
default only, other values refused), and a width in the integer root of a key (written with the glossary's symbol for
that root). No model is built: the builds are stubs with the shapes written by hand."""

from __future__ import annotations

import math
import random

import pytest

pytest.importorskip("torch", reason="discover needs torch and transformers")
pytest.importorskip("transformers", reason="discover needs torch and transformers")

from discover_stubs import bare as _bare
from sympy import floor, sqrt

from llmcount.discover import probe
from llmcount.discover.core import _off_default
from llmcount.formulas.expressions import condition
from llmcount.formulas.symbols import BY_NAME


def _build(width: int) -> probe.Build:
    tensor = probe.Tensor("model.layers.*.mlp.w1.weight", 0, (width, 16), "Linear", False, False)
    return probe.Build((tensor,), {}, width * 16, 1, "StubForCausalLM", "model", "StubConfig", {})


def test_a_per_layer_list_none_by_default_takes_the_kinds_the_modeling_code_compares_it_with(monkeypatch) -> None:
    # as Lfm2MoeDecoderLayer (transformers 5.24): `self.is_attention_layer = config.layer_types[layer_idx] != "conv"`;
    # the config refuses kinds transformers does not allow, and a list of conv layers alone builds no attention
    source = 'def __init__(self, config, layer_idx):\n    x = config.layer_types[layer_idx] != "conv"\n'
    monkeypatch.setattr(probe, "modeling_source", lambda model_type: source)
    discoverer = _bare(defaults={"num_hidden_layers": 4, "layer_types": None, "hidden_size": 16}, per_layer={})
    discoverer.null_lists = {}
    tried = []

    def build(overrides, drop=(), repair=None):
        kinds = discoverer.per_layer.get("layer_types")
        tried.append(kinds)
        if kinds is None or not set(kinds) <= set(probe.layer_kind_names()) or len(set(kinds)) < 2:
            raise probe.Refused("TypeError: 'NoneType' object is not subscriptable")
        return _build(8)

    discoverer.build = build
    assert discoverer.fill_lists("TypeError: 'NoneType' object is not subscriptable")
    assert discoverer.null_lists == {"layer_types": ["conv", "full_attention"]}
    assert discoverer.per_layer == {"layer_types": ["conv", "full_attention"]}
    # a key no layer indexes is never filled
    other = _bare(defaults={"num_hidden_layers": 4, "rope_scaling": None}, per_layer={}, null_lists={})
    other.build = build
    assert not other.fill_lists("refused")


def test_a_float_that_shapes_a_tensor_is_found_and_others_are_not() -> None:
    def build(overrides, drop=(), repair=None):  # by hand: w1 int(8 * ffn_factor) wide; eps, dropout shape nothing
        return _build(int(8 * overrides.get("ffn_factor", 1.5)))

    discoverer = _bare(defaults={"ffn_factor": 1.5, "rms_norm_eps": 1e-6, "dropout": 0.0, "hidden_size": 16})
    discoverer.build = build
    assert discoverer.shaping_floats() == {"ffn_factor": 1.5}
    for default in (1.5, 2.667, 1.0, 1e-05):  # the draft refuses another value of it (a condition has no float literal)
        refused = condition(_off_default("ffn_factor", default), "test")
        assert not refused({"ffn_factor": default})
        assert refused({"ffn_factor": default * 2}) and refused({"ffn_factor": None})


def test_a_width_in_the_integer_root_of_a_key_is_written_with_the_glossarys_symbol_for_it() -> None:
    # DogeCDMoE (transformers 5.24), by hand: num_keys = int(math.sqrt(num_experts)); router_gate is
    # (2 * num_keys, hidden_size)
    n, d = BY_NAME["n"].symbol, BY_NAME["d"].symbol
    discoverer = _bare(symbols={"num_experts": n, "hidden_size": d}, roots={}, root_keys={})
    rng = random.Random(0)
    points = []
    for _ in range(18):
        v = {n: rng.randint(2, 300), d: 8 * rng.randint(2, 9)}
        points.append((v, 2 * math.isqrt(v[n])))
    expr = discoverer.rooted(points, [n])
    n_pk = next(iter(discoverer.root_keys))
    assert discoverer.root_keys == {n_pk: "num_experts"}
    assert discoverer.roots == {n_pk: floor(sqrt(n))}
    assert expr == 2 * n_pk
    assert all(expr.subs(discoverer.roots).subs(v) == y for v, y in points)


def test_the_defaults_are_the_layout_the_config_holds_where_to_dict_writes_another() -> None:
    # DoryConfig (transformers 5.24), by hand: 36 layers, 8 input and 8 output layers; its to_dict writes every layer
    # as an attention and an mlp block (72 entries, every count doubled), which the class halves when it reads them
    from transformers import AutoConfig

    written = AutoConfig.for_model("dory").to_dict()
    assert written["num_hidden_layers"] == 72  # the other layout: the class holds half of it
    defaults = probe.class_defaults("dory")
    assert defaults["num_hidden_layers"] == 36
    assert len(defaults["layer_types"]) == 36 and "mlp" not in defaults["layer_types"]
    assert (defaults["n_input_layers"], defaults["n_output_layers"]) == (8, 8)
    assert probe.class_defaults("llama") == AutoConfig.for_model("llama").to_dict()  # the same layout: as written


def test_a_parameter_beside_a_tied_weight_in_one_module_gets_a_term_of_its_own() -> None:
    # DoryLMHead (transformers 5.24), by hand: lm_head.weight (absent with tie_word_embeddings) and lm_head.logit_scale
    # (always there): one module, two conditions, so two terms
    from llmcount.discover.core import Kind

    discoverer = _bare()
    weight = Kind("lm_head.weight", "DoryLMHead", False, False, False, 0)
    scale = Kind("lm_head.logit_scale", "DoryLMHead", False, False, False, 1)
    terms = {"head/lm_head": {"when": "not tie_word_embeddings", "layers": "1"}}
    assert discoverer.own_path("head/lm_head", weight, "not tie_word_embeddings", "1", terms) == "head/lm_head"
    assert discoverer.own_path("head/lm_head", scale, "", "1", terms) == "head/lm_head.logit_scale"


def test_conditions_on_one_per_layer_list_get_a_layer_count_symbol_each() -> None:
    # NemotronHBlock (transformers 5.24), by hand: one mixer per entry of layers_block_type, a Mamba-2 mixer, an MoE,
    # an MLP or attention; the glossary names N_attn after that key, and one condition only may take it
    from llmcount.discover.core import Kind

    pattern = ["linear_attention", "moe", "full_attention", "mlp"]
    kinds = {}
    conditions = {}
    for order, (name, kind) in enumerate([("experts.up_proj", "moe"), ("in_proj.weight", "linear_attention")]):
        key = f"model.layers.*.mixer.{name}"
        kinds[key] = Kind(key, "Stub", False, False, True, order)
        conditions[key] = f"layers_block_type[i] == '{kind}'"
    key = "model.layers.*.mixer.up_proj.weight"
    kinds[key] = Kind(key, "Stub", False, False, True, 2)
    conditions[key] = "layers_block_type[i] == 'mlp'"
    seen = {
        k: [
            (
                {"layers_block_type": pattern, "N": 4},
                [condition(c, "test")({"layers_block_type": pattern, "i": i}) for i in range(4)],
            )
        ]
        for k, c in conditions.items()
    }
    discoverer = _bare(layer_conditions=conditions, seen=seen, own={}, prefix="model", log=lambda text: None)
    counts = discoverer.layer_counts(kinds)
    symbols = {k: v.removeprefix("N - ") for k, v in counts.items()}
    assert len(set(symbols.values())) == 3, counts
    for k, text in counts.items():  # each symbol's [layers] condition counts the layers of its own kind
        symbol = symbols[k]
        layers = sum(
            condition(discoverer.layer_symbols[symbol], "t")({"layers_block_type": pattern, "i": i}) for i in range(4)
        )
        assert (4 - layers if text.startswith("N - ") else layers) == 1, (k, text, discoverer.layer_symbols)


def test_a_count_of_some_layers_that_crowds_out_a_small_build_is_kept_small() -> None:
    # Gemma3nTextConfig (transformers 5.24), by hand: the last num_kv_shared_layers (15 of 35) share the caches of
    # earlier layers of their kind; with 3 layers all of them would share, and the config refuses it
    discoverer = _bare(
        defaults={"num_hidden_layers": 35, "num_kv_shared_layers": 15, "hidden_size": 2048},
        fixed={"num_hidden_layers": 3, "num_kv_shared_layers": 15, "hidden_size": 2048},
        layer_key="num_hidden_layers",
        pinned={},
    )

    def build(overrides, drop=(), repair=None):
        if discoverer.fixed["num_kv_shared_layers"] >= discoverer.fixed["num_hidden_layers"]:
            raise probe.Refused("ValueError: The set of layer types producing a cache is different than ...")
        return _build(8)

    discoverer.build = build
    assert discoverer.pin_counts(["num_kv_shared_layers", "hidden_size"], 35)
    assert discoverer.pinned == {"num_kv_shared_layers": 0} and discoverer.fixed["num_kv_shared_layers"] == 0


def test_a_tensor_outside_the_layers_shaped_by_the_layer_count_reads_it() -> None:
    # Gemma3nTextModel (transformers 5.24), by hand: embed_tokens_per_layer is (vocab_size_per_layer_input,
    # num_hidden_layers * hidden_size_per_layer_input); the final norm is not shaped by the layer count
    from llmcount.discover.core import Factor, Kind

    def build(overrides, drop=(), repair=None):
        n = overrides.get("num_hidden_layers", 3)
        tensors = (
            probe.Tensor("model.embed_tokens_per_layer.weight", None, (64, n * 8), "Embedding", False, True),
            probe.Tensor("model.norm.weight", None, (16,), "RMSNorm", True, False),
        )
        return probe.Build(tensors, {}, 0, n, "StubForCausalLM", "model", "StubConfig", {})

    discoverer = _bare(layer_key="num_hidden_layers", per_layer={}, layer_values={})
    discoverer.build = build
    kinds = {
        "model.embed_tokens_per_layer.weight": Kind("model.embed_tokens_per_layer.weight", "E", False, True, False, 0),
        "model.norm.weight": Kind("model.norm.weight", "N", True, False, False, 1),
    }
    kinds["model.embed_tokens_per_layer.weight"].factors = [Factor(), Factor(), Factor()]
    kinds["model.norm.weight"].factors = [Factor(), Factor()]
    sizes = ["hidden_size"]
    discoverer.grows_with_layers(kinds, sizes)
    assert sizes == ["hidden_size", "num_hidden_layers"]
    assert [f.deps for f in kinds["model.embed_tokens_per_layer.weight"].factors] == [
        set(),
        set(),
        {"num_hidden_layers"},
    ]
    assert all(not f.deps for f in kinds["model.norm.weight"].factors)


def test_the_last_layers_by_a_count_of_them_have_a_condition() -> None:
    # Gemma3nTextAttention (transformers 5.24), by hand: the last num_kv_shared_layers layers read the keys and values
    # of an earlier layer, and build no k_proj
    from llmcount.discover.core import _explains

    discoverer = _bare(layer_values={"num_kv_shared_layers": [0, 2]}, per_layer={})
    seen = [
        ({"num_kv_shared_layers": 0, "N": 3}, [True, True, True]),
        ({"num_kv_shared_layers": 2, "N": 5}, [True, True, True, False, False]),
    ]
    found = next((text for text in discoverer.candidates() if _explains(text, seen)), None)
    assert found == "i < N - num_kv_shared_layers"
