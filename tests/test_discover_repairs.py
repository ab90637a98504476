"""Discovery's classes of class defaults that do not build as they are, each repaired from the refusal itself (a
mapping with no entry for a kind of layer; a sub-config without a key the modeling code reads); ModuleLists outside
the layers, whose index is no layer index; and keys a validator requires to be multiples of another. No model is
built: the builds are stubs with the shapes written by hand, the modules are hand-made torch modules, and the config
classes are read, not built."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="discover needs torch and transformers")
pytest.importorskip("transformers", reason="discover needs torch and transformers")

import torch
from discover_stubs import bare as _bare

from llmcount.discover import probe, repairs, ties
from llmcount.formulas.expressions import condition

# ---- a mapping with no entry for a kind of layer ---------------------------------------------------------------
# as CohereCompassRotaryEmbedding (transformers 5.24): `rope_params = self.config.rope_parameters[layer_type]` for
# each kind of layer, and CohereCompassTextConfig defaults rope_parameters to {} (a KeyError for its full_attention
# layers); an entry None is transformers' word for a kind without parameters of its own
SOURCE = "for layer_type in set(config.layer_types):\n    rope_params = self.config.rope_parameters[layer_type]\n"


def test_a_mapping_without_an_entry_for_a_kind_of_layer_gets_one_per_kind() -> None:
    defaults = {"rope_parameters": {}, "layer_types": ["full_attention"] * 4, "id2label": {0: "LABEL_0"}}
    kinds = {"layer_types": ["full_attention", "sliding_attention"]}
    found = repairs.missing_entries("KeyError: 'full_attention'", defaults, kinds, SOURCE)
    assert [(r.key, r.value) for r in found] == [
        ("rope_parameters", {"full_attention": None, "sliding_attention": None}),
        ("rope_parameters", {"full_attention": {}, "sliding_attention": {}}),
    ]
    assert found[0].kinds == ("full_attention", "sliding_attention")
    # a KeyError for no kind of layer, or a mapping the modeling code does not index, is not this class
    assert repairs.missing_entries("KeyError: 'rope_theta'", defaults, kinds, SOURCE) == []
    assert repairs.missing_entries("KeyError: 'full_attention'", defaults, kinds, "rope = config.rope_parameters") == []
    assert repairs.missing_entries("ValueError: 'full_attention'", defaults, kinds, SOURCE) == []


def test_the_draft_refuses_a_config_missing_the_entry_for_a_kind_of_layer_it_has() -> None:
    repair = repairs.Repair("rope_parameters", {"full_attention": None}, ("full_attention", "sliding_attention"))
    kinds = {"layer_types": ["full_attention", "sliding_attention"]}
    tests = [condition(test, "refuse") for test, _why in repairs.refusals(repair, kinds)]

    def refused(layers: list[str], rope: dict | None) -> bool:
        return any(test({"layer_types": layers, "rope_parameters": rope}) for test in tests)

    full, sliding = ["full_attention"] * 3, ["full_attention", "sliding_attention"]
    # the class defaults (rope_parameters {}): transformers raises the KeyError, the draft refuses them by name
    assert refused(full, {}) and refused(full, None)
    # an entry for every kind the layers have: transformers builds it, the draft counts it
    assert not refused(full, {"full_attention": None})
    assert not refused(sliding, {"full_attention": {}, "sliding_attention": None})
    assert refused(sliding, {"full_attention": {}})
    # a kind no per-layer list gives a layer is never asked for
    assert repairs.refusals(repair, {"layer_types": ["full_attention"]})[1:] == []


def test_a_sub_config_without_a_key_the_modeling_code_reads_gets_the_configs_own_value() -> None:
    # as DbrxAttention (transformers 5.24): `self.rope_theta = attn_config.rope_theta`, which DbrxAttentionConfig does
    # not default; DbrxConfig holds it in rope_parameters
    refusal = "AttributeError: 'DbrxAttentionConfig' object has no attribute 'rope_theta'"
    defaults = {"attn_config": {"kv_n_heads": 1}, "ffn_config": {}, "rope_parameters": {"rope_theta": 10000.0}}
    subconfigs = {"attn_config": "DbrxAttentionConfig", "ffn_config": "DbrxFFNConfig"}
    (found,) = repairs.missing_attribute(refusal, defaults, subconfigs, defaults)
    assert (found.key, found.value, found.kinds) == ("attn_config.rope_theta", 10000.0, ())
    # the config's own attribute of that name first
    (found,) = repairs.missing_attribute(refusal, defaults, subconfigs, {**defaults, "rope_theta": 5e5})
    assert found.value == 5e5
    # set inside the sub-config, its other keys kept
    assert repairs.with_repair({"attn_config": {"kv_n_heads": 2}, "n_layers": 3}, found) == {
        "attn_config": {"kv_n_heads": 2, "rope_theta": 5e5},
        "n_layers": 3,
    }
    # no value of that name anywhere, or no sub-config of that class: no repair
    assert repairs.missing_attribute(refusal, {"attn_config": {}}, subconfigs, {}) == []
    assert repairs.missing_attribute(refusal, defaults, {"ffn_config": "DbrxFFNConfig"}, defaults) == []


def test_a_repair_is_kept_once_the_build_accepts_it_and_only_when_it_shapes_no_tensor(monkeypatch) -> None:
    refusal = "AttributeError: 'XAttentionConfig' object has no attribute 'rope_theta'"
    monkeypatch.setattr(probe, "modeling_source", lambda model_type: "")
    monkeypatch.setattr(probe, "subconfig_classes", lambda model_type: {"attn_config": "XAttentionConfig"})
    defaults = {"attn_config": {}, "rope_theta": 10000.0, "n_layers": 3}

    def stub(width_of):
        def build(model_type, values, drop=(), outside=None):
            theta = (values.get("attn_config") or {}).get("rope_theta")
            if theta is None:
                raise probe.Refused(refusal)
            tensor = probe.Tensor("model.layers.*.attn.w.weight", 0, (width_of(theta), 4), "Linear", False, False)
            return probe.Build((tensor,), {}, 4 * width_of(theta), 1, "XForCausalLM", "model", "XConfig", {})

        return build

    for width_of, kept in ((lambda theta: 8, True), (lambda theta: int(theta) % 7 + 1, False)):
        monkeypatch.setattr(probe, "build", stub(width_of))
        discoverer = _bare(defaults=defaults, fixed={"n_layers": 3}, per_layer={}, parts=[], layer_key="n_layers")
        discoverer.dependent = {}
        assert discoverer.repair_defaults(refusal) is kept
        assert [r.key for r in discoverer.repairs] == (["attn_config.rope_theta"] if kept else [])
        assert discoverer.fixed.get("attn_config") == ({"rope_theta": 10000.0} if kept else None)


def test_the_class_defaults_of_cohere_compass_get_their_repair() -> None:
    defaults = probe.class_defaults("cohere_compass_text")  # transformers' own class (not built)
    kinds = {"layer_types": list(dict.fromkeys(defaults["layer_types"]))}
    found = repairs.missing_entries("KeyError: 'full_attention'", defaults, kinds, SOURCE)
    assert found and found[0].key == "rope_parameters" and found[0].value == {"full_attention": None}


# ---- ModuleLists outside the layers ----------------------------------------------------------------------------
class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)


class _Model(torch.nn.Module):
    """As Gemma3nTextModel (transformers 5.24): the layers, and ``altup_projections``, ``altup_num_inputs - 1``
    Linears outside them; as XLMModel: ``layer_norm1``, a norm per layer kept beside the layers."""

    def __init__(self, layers: int, projections: int) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(_Block() for _ in range(layers))
        self.altup_projections = torch.nn.ModuleList(torch.nn.Linear(4, 4, bias=False) for _ in range(projections))
        self.layer_norm1 = torch.nn.ModuleList(torch.nn.LayerNorm(4) for _ in range(layers))


def test_a_list_of_single_modules_outside_the_layers_has_no_layer_index() -> None:
    model = _Model(3, 3)
    assert probe._module_lists(model) == {"altup_projections", "layer_norm1"}
    outside = frozenset({"altup_projections"})
    assert probe._key_and_layer("altup_projections.2.weight", frozenset(), outside) == (
        "altup_projections.*.weight",
        None,
    )
    assert probe._key_and_layer("layer_norm1.2.weight", frozenset(), outside) == ("layer_norm1.*.weight", 2)
    assert probe._key_and_layer("layers.1.proj.weight", frozenset(), outside) == ("layers.*.proj.weight", 1)
    # without the lists found, every first index is a layer's, as before
    assert probe._key_and_layer("altup_projections.2.weight", frozenset(), frozenset()) == (
        "altup_projections.*.weight",
        2,
    )


def test_the_lists_outside_the_layers_are_those_as_long_with_one_more_layer(monkeypatch) -> None:
    def build(model_type, values, drop=(), outside=None):  # 3 projections whatever the layers, a norm per layer
        n = values["num_hidden_layers"]
        lists = {"model.altup_projections": 3, "model.layer_norm1": n}
        return probe.Build((), {}, 0, n, "XForCausalLM", "model", "XConfig", {}, lists)

    monkeypatch.setattr(probe, "build", build)
    discoverer = _bare(layer_key="num_hidden_layers", parts=[], per_layer={}, dependent={}, defaults={})
    values = {"num_hidden_layers": 3}
    discoverer.lists_outside(build("x", values), values, ())
    assert discoverer.outside == {"model.altup_projections"}


# ---- keys a validator requires to be multiples of another ----------------------------------------------------
class _LoopConfig:
    """As Inkling2LoopTextConfig.validate_architecture (transformers 5.24), by hand."""

    def validate_architecture(self):
        if self.loop_layer_index_start <= 0:
            raise ValueError("must be greater than 0")
        if self.loop_layer_index_start % self.n_layers_per_attn_res_block != 0:
            raise ValueError(f"`loop_layer_index_start` ({self.loop_layer_index_start}) must be a multiple of ...")
        if self.loop_layer_index_end % self.n_layers_per_attn_res_block:
            raise ValueError("`loop_layer_index_end` must be a multiple of ...")


def test_keys_a_validator_requires_to_be_multiples_of_another_are_read_and_rounded() -> None:
    found = ties.multiples(_LoopConfig)
    assert [(m.key, m.of) for m in found] == [
        ("loop_layer_index_start", "n_layers_per_attn_res_block"),
        ("loop_layer_index_end", "n_layers_per_attn_res_block"),
    ]
    start = found[0]
    assert start.round({"loop_layer_index_start": 5, "n_layers_per_attn_res_block": 2}) == 6  # the nearest
    assert start.round({"loop_layer_index_start": 1, "n_layers_per_attn_res_block": 3}) == 3  # at least one
    assert start.round({"loop_layer_index_start": 4, "n_layers_per_attn_res_block": 2}) is None  # already one
    assert start.round({"loop_layer_index_start": 4, "n_layers_per_attn_res_block": None}) is None
    # transformers' own class
    real = ties.multiples(probe.config_class("inkling2_loop_text"))
    assert {(m.key, m.of) for m in real} >= {(m.key, m.of) for m in found}


def test_a_build_refused_for_a_multiple_is_built_again_with_the_key_rounded(monkeypatch) -> None:
    discoverer = _bare(defaults={"n_layers_per_attn_res_block": 6}, multiples=ties.multiples(_LoopConfig))
    values = {"loop_layer_index_start": 2, "loop_layer_index_end": 5, "n_layers_per_attn_res_block": 2}
    refusal = "ValueError: `loop_layer_index_start` (2) must be a multiple of `n_layers_per_attn_res_block` (3)."
    assert discoverer.round_multiples({**values, "n_layers_per_attn_res_block": 3}, refusal) == {
        "loop_layer_index_start": 3,
        "loop_layer_index_end": 5,  # not named by this refusal: the next one names it
        "n_layers_per_attn_res_block": 3,
    }
    assert discoverer.round_multiples(values, refusal) is None  # each named key already a multiple
    # a build trying another value of the key keeps it (transformers refuses that value)
    assert (
        discoverer.round_multiples({**values, "loop_layer_index_start": 1}, refusal, keep={"loop_layer_index_start"})
        is None
    )
