"""Discovery of layer keys a validator ties to another key and that shape a tensor outside the layers (Inkling-2-Loop's
loop: layers loop_layer_index_start to loop_layer_index_end - 1 carry message gates, both keys multiples of
n_layers_per_attn_res_block, 6 by default, and message_input holds a row of queries per looped layer). No model is
built: the builds are stubs that follow Inkling2LoopTextConfig's validator and Inkling2LoopTextModel's layers, by
hand."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="discover needs torch and transformers")
pytest.importorskip("transformers", reason="discover needs torch and transformers")

from discover_stubs import bare as _bare
from discover_stubs import stub as _stub

from llmcount.discover import probe
from llmcount.discover.core import LAYERS, Factor, Kind

START, END, BLOCK = "loop_layer_index_start", "loop_layer_index_end", "n_layers_per_attn_res_block"
GATE = "model.layers.*.q_message_gate.down_proj.weight"
QUERIES = "model.message_input.query"


class _LoopConfig:
    """As Inkling2LoopTextConfig.validate_architecture (transformers 5.24), by hand."""

    def validate_architecture(self):
        if self.loop_layer_index_start <= 0:
            raise ValueError("must be greater than 0")
        if self.loop_layer_index_start % self.n_layers_per_attn_res_block != 0:
            raise ValueError(f"`loop_layer_index_start` ({self.loop_layer_index_start}) must be a multiple of ...")
        if self.loop_layer_index_end % self.n_layers_per_attn_res_block:
            raise ValueError(f"`loop_layer_index_end` ({self.loop_layer_index_end}) must be a multiple of ...")


def _loop_model(shaping_block: bool = False):
    """A fake probe.build: Inkling2LoopTextModel's tensors by hand. Every layer has a norm, the looped layers a message
    gate (loop_gate_rank x 2d), message_input end - start rows of 4 x d; ``shaping_block``: a tensor of
    n_layers_per_attn_res_block rows too (a base that shapes a tensor)."""

    def build(model_type, values, drop=(), outside=None):
        start, end, block, d = values[START], values[END], values[BLOCK], values["hidden_size"]
        if block <= 0 or start <= 0 or start % block or end % block:
            raise probe.Refused(f"ValueError: `{START}` ({start}) must be a multiple of `{BLOCK}` ({block}).")
        if end < start:
            raise probe.Refused("RuntimeError: Trying to create tensor with negative dimension")
        tensors = [probe.Tensor(QUERIES, None, (end - start, 4, d), "Inkling2LoopTextModel", False, False)]
        if shaping_block:
            tensors.append(probe.Tensor("model.block_table", None, (block, d), "Inkling2LoopTextModel", False, False))
        for i in range(values["num_hidden_layers"]):
            tensors.append(probe.Tensor("model.layers.*.norm.weight", i, (d,), "Inkling2LoopRMSNorm", True, False))
            if start <= i < end:
                tensors.append(probe.Tensor(GATE, i, (values["loop_gate_rank"], 2 * d), "Linear", False, False))
        return _stub(tensors, values["num_hidden_layers"])

    return build


def _discoverer(monkeypatch, shaping_block: bool = False):
    monkeypatch.setattr(probe, "build", _loop_model(shaping_block))
    monkeypatch.setattr(probe, "config_class", lambda model_type: _LoopConfig)
    defaults = {"num_hidden_layers": 24, "hidden_size": 8, "loop_gate_rank": 4, START: 6, END: 18, BLOCK: 6}
    return _bare(
        defaults=defaults,
        fixed={**defaults, "num_hidden_layers": LAYERS},
        layer_key="num_hidden_layers",
        tokens=set(),
        parts=[],
        per_layer={},
        pinned={},
        dependent={},
        splits=None,
        reshaped={},
        reference={},
        outside=frozenset(),
    )


def test_a_base_of_multiples_that_shapes_no_tensor_is_1_in_every_build(monkeypatch) -> None:
    discoverer = _discoverer(monkeypatch)
    # with the class defaults' block of 6, no start a build of 3 layers can take is a multiple but 6: no loop shows
    assert discoverer._layer_keys(discoverer.build({}), skip=set()) == {}
    discoverer.free_multiples()
    assert discoverer.bases == {BLOCK: 1} and discoverer.fixed[BLOCK] == 1
    assert discoverer.pinned[BLOCK] == 1  # random configs give it 1 too (see verify.random_config)
    found = discoverer._layer_keys(discoverer.build({}), skip=set())
    assert START in found and BLOCK not in found  # a loop from layer 1: gates on layers 1 and 2, not on layer 0
    assert found[START][0] == 6 and 1 in found[START]


def test_a_base_of_multiples_that_shapes_a_tensor_is_left(monkeypatch) -> None:
    discoverer = _discoverer(monkeypatch, shaping_block=True)
    discoverer.free_multiples()
    assert discoverer.bases == {} and discoverer.fixed[BLOCK] == 6


def test_a_layer_key_that_shapes_a_tensor_outside_the_layers_is_a_size_of_it(monkeypatch) -> None:
    discoverer = _discoverer(monkeypatch)
    discoverer.free_multiples()
    discoverer.on = {START: 1}
    discoverer.layer_values = {START: [6, 1, 2, 3], END: [18, 0, 1, 2, 3]}
    kinds = {
        QUERIES: Kind(QUERIES, "Inkling2LoopTextModel", False, False, False, 0, [Factor() for _ in range(4)]),
        GATE: Kind(GATE, "Linear", False, False, True, 1, [Factor() for _ in range(3)]),
    }
    sizes = ["hidden_size"]
    discoverer.layer_keys_shaping(kinds, sizes)
    assert sizes == ["hidden_size", START, END]
    # its rows (end - start): factor 1 of (1 tensor, rows, 4, d); the gates' shapes are not theirs
    assert [f.deps for f in kinds[QUERIES].factors] == [set(), {START, END}, set(), set()]
    assert all(not f.deps for f in kinds[GATE].factors)
    # drawn within the layers a build has, where they show looped layers
    discoverer.rng = __import__("random").Random(3)
    draws = [discoverer.draw(sizes) for _ in range(40)]
    assert {d[START] for d in draws} == {d[END] for d in draws} == set(range(1, LAYERS + 1))


def test_a_layer_key_every_trial_of_which_is_refused_is_tried_beside_another_layer_key(monkeypatch) -> None:
    discoverer = _discoverer(monkeypatch)
    discoverer.free_multiples()
    base = discoverer.build({})
    found = discoverer._layer_keys(base, skip=set())
    # every end a build of 3 layers can take lies below the default start (6): transformers refuses each
    assert END not in found
    more = discoverer._layer_keys(base, skip=set(found), beside=found)
    assert END in more and discoverer.beside[END] == {START: 1}  # a loop from layer 1 ending at layer 2: it acts
    # the conditions' builds of its values keep that start beside them
    discoverer.layer_values = {**found, **more}
    settings = []
    monkeypatch.setattr(discoverer, "build", lambda overrides, *a, **k: settings.append(overrides) or base)
    discoverer.conditions({})
    assert {START: 1, END: 2} in [{k: s[k] for k in (START, END)} for s in settings]
