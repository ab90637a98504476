"""Discovery of one tensor name with other shapes on other layers (Inkling's attention: q_proj, r_proj, o_proj of the
sliding layers take the swa_* keys): every build of a pass that forms the kinds is evidence for the kinds to split,
the steps run again while a pass splits more, and a split kind's layers may be those of its kind but the first. No
model is built: the builds are stubs with the shapes written by hand."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="discover needs torch and transformers")
pytest.importorskip("transformers", reason="discover needs torch and transformers")

from discover_stubs import bare as _bare
from discover_stubs import stub as _stub

from llmcount.discover import probe
from llmcount.discover.core import _explains


def test_every_build_of_a_forming_pass_splits_the_kinds_it_shows_differ(monkeypatch) -> None:
    # InklingAttention (transformers 5.24), by hand: on "hybrid_sliding" layers q_proj is swa_num_attention_heads *
    # swa_head_dim wide and r_proj swa_num_attention_heads * d_rel, on "hybrid" layers the same with the full layers'
    # keys; a config with other head widths only shows q_proj differ, one with other head counts r_proj too. Both
    # builds are evidence: the kinds split are those of every build, not of the first that splits one
    def fake(model_type, values, drop=(), outside=None):
        h, h_sw, h_d, h_d_sw = values["h"], values["h_sw"], values["h_d"], values["h_d_sw"]
        tensors = []
        for i, kind in enumerate(values["layer_types"]):
            sliding = kind == "hybrid_sliding"
            heads, width = (h_sw, h_d_sw) if sliding else (h, h_d)
            tensors.append(probe.Tensor("model.layers.*.self_attn.q_proj.weight", i, (heads * width, 16), "L", 0, 0))
            tensors.append(probe.Tensor("model.layers.*.self_attn.r_proj.weight", i, (heads * 4, 16), "L", 0, 0))
        return _stub(tensors, len(values["layer_types"]))

    monkeypatch.setattr(probe, "build", fake)
    discoverer = _bare(
        defaults={"num_hidden_layers": 3},
        fixed={"num_hidden_layers": 3, "h": 2, "h_sw": 2, "h_d": 8, "h_d_sw": 8},
        layer_key="num_hidden_layers",
        parts=[],
        per_layer={"layer_types": ["hybrid", "hybrid_sliding"]},
        dependent={},
        splits=None,
        forming=True,
        resplit=False,
        reshaped={},
        reference={},
    )
    discoverer.build({})  # the class defaults: alike on every layer, nothing split
    assert discoverer.splits == {}
    discoverer.build({"h_d_sw": 16})  # other head widths: q_proj only
    assert set(discoverer.splits) == {"model.layers.*.self_attn.q_proj.weight"} and discoverer.resplit
    discoverer.build({"h_sw": 3})  # other head counts: r_proj too, in the same pass
    assert set(discoverer.splits) == {
        "model.layers.*.self_attn.q_proj.weight",
        "model.layers.*.self_attn.r_proj.weight",
    }
    assert discoverer.splits["model.layers.*.self_attn.r_proj.weight"] == "layer_types"


def test_passes_run_while_they_split_more_the_last_keeps_its_kinds() -> None:
    passes = []

    def steps():
        passes.append(discoverer.forming)
        discoverer.resplit = discoverer.forming  # each forming pass finds one more kind to split
        return len(passes)

    discoverer = _bare(splits={}, log=lambda text: None)
    discoverer.steps = steps
    assert discoverer.run() == 3
    assert passes == [True, True, False]


def test_a_kind_on_the_layers_of_its_kind_but_the_first() -> None:
    # Inkling2SlidingDecoderLayer and its full-attention twin (transformers 5.24), by hand: `self.attention_input =
    # Inkling2BlockAttentionResidual(config) if layer_idx > 0 else None`; split by layer kind, the full layers' copy
    # is on "hybrid" layers except layer 0
    pattern = ["hybrid", "hybrid_sliding", "hybrid"]
    turned = pattern[1:] + pattern[:1]
    discoverer = _bare(layer_values={"layer_types": [pattern, turned]}, per_layer={"layer_types": []})
    seen = [
        ({"layer_types": pattern, "N": 3}, [False, False, True]),
        ({"layer_types": ["hybrid_sliding", "hybrid", "hybrid_sliding"], "N": 3}, [False, True, False]),
        ({"layer_types": ["hybrid"] * 5, "N": 5}, [False, True, True, True, True]),
    ]
    found = next((text for text in discoverer.candidates() if _explains(text, seen)), None)
    assert found == "layer_types[i] == 'hybrid' and i != 0"
