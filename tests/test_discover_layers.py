"""Discovery's failure classes of layers: which layers carry which tensors when one layer key is the period and
another the offset within it (Jamba), and per-layer keys of a heterogeneous config (Gemma 4, Dots3)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="discover needs torch and transformers")
pytest.importorskip("transformers", reason="discover needs torch and transformers")

from llmcount.discover import probe
from llmcount.discover.core import Discoverer, _explains


def test_a_period_and_an_offset_bound_the_attention_layers() -> None:
    # JambaConfig.layers_block_type: attention on layer i when i % attn_layer_period == attn_layer_offset
    discoverer = Discoverer.__new__(Discoverer)
    discoverer.per_layer = {}
    discoverer.defaults = {"num_hidden_layers": 32}
    discoverer.layer_values = {"attn_layer_offset": [4, 0, 1, 2, 3], "attn_layer_period": [8, 0, 1, 2, 3]}

    def attention(v, i):
        return i % v["attn_layer_period"] == v["attn_layer_offset"]

    base = {"attn_layer_offset": 0, "attn_layer_period": 8, "N": 3}  # the offset chosen to show attention
    settings = [base] + [{**base, k: x} for k, xs in discoverer.layer_values.items() for x in xs]
    settings = [v for v in settings if v["attn_layer_offset"] < v["attn_layer_period"]]  # what the validator accepts
    seen = [(v, [attention(v, i) for i in range(3)]) for v in settings]
    found = next(text for text in discoverer.candidates() if _explains(text, seen))
    grid = [
        {"attn_layer_offset": o, "attn_layer_period": p, "N": 9} for p in range(1, 9) for o in range(p)
    ]  # by hand: every offset below every period, over nine layers
    assert _explains(found, [(v, [attention(v, i) for i in range(9)]) for v in grid]), found


def test_a_per_layer_key_of_a_heterogeneous_config_is_read() -> None:
    # Gemma 4's head_dim may vary per layer: transformers refuses a plain read of the global value
    built = probe.build("gemma4_text", {"num_hidden_layers": 2, "head_dim": 32, "vocab_size": 64})
    assert built.attributes["head_dim"] == 32


def test_the_layer_count_is_the_key_whose_layers_are_built() -> None:
    # HRM: num_hidden_layers (128) counts layer applications and builds nothing; each stack has num_layers_per_stack
    discoverer = Discoverer.__new__(Discoverer)
    discoverer.model_type = "hrm_text"
    discoverer.notes = []
    discoverer.defaults = probe.class_defaults("hrm_text")
    discoverer.aliases = probe.attribute_map("hrm_text")
    assert discoverer.find_layer_key() == "num_layers_per_stack"
    assert probe.build("hrm_text", {"num_layers_per_stack": 2, "num_hidden_layers": 5}).layers == 2


def test_a_count_that_turns_every_layer_alike_is_no_layer_key() -> None:
    # Qwen3-Next: num_experts 0 makes every layer dense; it is a size, and the dense layers' condition is
    # i in mlp_only_layers or (i + 1) % decoder_sparse_step != 0 (no third key); its linear attention on some layers
    # only makes every build uneven, so a key is judged on the kinds it changes
    dense, moe = "model.layers.*.mlp.gate_proj.weight", "model.layers.*.mlp.experts.gate_up_proj"

    def build(overrides):
        v = {"num_experts": 8, "decoder_sparse_step": 1, **overrides}
        if v["decoder_sparse_step"] == 0:
            raise probe.Refused("ZeroDivisionError: integer modulo by zero")
        kinds = [moe if v["num_experts"] > 0 and (i + 1) % v["decoder_sparse_step"] == 0 else dense for i in range(3)]
        tensors = tuple(probe.Tensor(k, i, (2, 2), "Linear", False, False) for i, k in enumerate(kinds))
        tensors += (probe.Tensor("model.layers.*.linear_attn.in_proj.weight", 0, (2, 2), "Linear", False, False),)
        return probe.Build(tensors, {}, 0, 3, "M", "model", "C", {})

    discoverer = Discoverer.__new__(Discoverer)
    discoverer.layer_key = "num_hidden_layers"
    discoverer.tokens = set()
    discoverer.on = {}
    discoverer.defaults = {"num_hidden_layers": 48, "num_experts": 8, "decoder_sparse_step": 1}
    discoverer.build = build
    assert set(discoverer._layer_keys(build({}), set())) == {"decoder_sparse_step"}
    assert set(discoverer._layer_keys(build({"decoder_sparse_step": 2}), set())) == {"decoder_sparse_step"}


def test_a_layer_count_that_is_the_length_of_a_per_layer_list() -> None:
    # Nemotron-H: no integer layer count; num_hidden_layers is a property, the number of entries of layers_block_type
    discoverer = Discoverer.__new__(Discoverer)
    discoverer.model_type = "nemotron_h"
    discoverer.notes = []
    discoverer.defaults = probe.class_defaults("nemotron_h")
    discoverer.aliases = probe.attribute_map("nemotron_h")
    assert "num_hidden_layers" not in discoverer.defaults
    assert discoverer.find_layer_key() == "num_hidden_layers"
    assert discoverer.length_of == "layers_block_type"
    assert discoverer.defaults["num_hidden_layers"] == len(discoverer.defaults["layers_block_type"])


def test_the_wider_search_is_skipped_when_the_chosen_list_cannot_take_more_layers() -> None:
    # Kimi-Linear: layer_types chosen for 3 layers; a build with 5 layers and that list is refused by its validator
    from llmcount.discover.core import WIDE

    kinds = ["linear_attention", "full_attention"]

    def build(overrides):
        n = overrides.get("num_hidden_layers", 3)
        types = overrides.get("layer_types", [kinds[i % 2] for i in range(n)])
        if len(types) != n:
            raise probe.Refused(f"ValueError: num_hidden_layers ({n}) must equal the number of layer_types")
        key = {
            "linear_attention": "model.layers.*.linear_attn.q.weight",
            "full_attention": "model.layers.*.attn.q.weight",
        }
        tensors = tuple(probe.Tensor(key[t], i, (2, 2), "Linear", False, False) for i, t in enumerate(types))
        return probe.Build(tensors, {}, 0, n, "M", "model", "C", {})

    discoverer = Discoverer.__new__(Discoverer)
    discoverer.layer_key = "num_hidden_layers"
    discoverer.tokens = set()
    discoverer.on = {"layer_types": kinds + kinds[:1]}  # as the fitting builds choose it
    discoverer.fixed = {}
    discoverer.defaults = {"num_hidden_layers": 27, "layer_types": [kinds[i % 2] for i in range(27)]}
    discoverer.build = build
    assert WIDE > 3
    assert set(discoverer.find_layer_keys()) == {"layer_types"}
