"""A discovery that fails says where and why: which tensor, which config, how many parameters apart, and for a term
the draft miscounts, the tensor it has no formula for or the layers that carry it beside the draft's layer count."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="discover needs torch and transformers")
pytest.importorskip("transformers", reason="discover needs torch and transformers")

from llmcount.discover import probe
from llmcount.discover.core import Discoverer, _per_kind
from llmcount.discover.verify import _why


def _tensor(key: str, layer: int | None, shape: tuple[int, ...]) -> probe.Tensor:
    return probe.Tensor(key, layer, shape, "Linear", False, False)


def _build(tensors, layers: int) -> probe.Build:
    return probe.Build(tuple(tensors), {}, 0, layers, "M", "model", "C", {})


def test_tensors_of_one_name_with_two_shapes_in_a_layer_are_named() -> None:
    key = "model.layers.*.mixer.in_proj.weight"  # Zamba2's two in_proj of other shapes within one layer
    built = _build([_tensor(key, 0, (128, 64)), _tensor(key, 0, (256, 64))], 1)
    with pytest.raises(ValueError, match=r"in_proj\.weight in layer 0"):
        _per_kind(built)


def test_a_term_the_draft_has_no_formula_for_says_which_tensor_and_why() -> None:
    discoverer = Discoverer.__new__(Discoverer)
    key = "roberta.encoder.layer.*.output.adapter.dense1.weight"
    discoverer.term_of = {key: "output/adapter.dense1"}
    discoverer.unfitted = {key: "dimension 0 is no polynomial of degree <= 3 in hidden_size (e.g. d=96 -> 31)"}
    discoverer.term_layers = {"output/adapter.dense1": "every layer"}
    built = _build([_tensor(key, 0, (31, 96))], 1)
    said = _why(discoverer, "output/adapter.dense1", built)
    assert "no formula for" in said and "dense1.weight" in said and "d=96 -> 31" in said


def test_a_term_on_other_layers_says_which_layers_carry_it() -> None:
    discoverer = Discoverer.__new__(Discoverer)
    key = "model.layers.*.mlp.gate_proj.weight"  # a dense MLP on the first two of five layers
    discoverer.term_of = {key: "mlp/gate_proj"}
    discoverer.unfitted = {}
    discoverer.term_layers = {"mlp/gate_proj": "N layers: no condition found for them"}
    built = _build([_tensor(key, i, (8, 4)) for i in (0, 1)] + [_tensor("model.layers.*.x.weight", 4, (2,))], 5)
    said = _why(discoverer, "mlp/gate_proj", built)
    assert "on 2 of 5 layers (0-1)" in said and "no condition found" in said


def test_no_random_config_accepted_says_the_first_refusal(monkeypatch) -> None:
    discoverer = Discoverer.__new__(Discoverer)
    discoverer.model_type = "toy"
    discoverer.on = {}
    discoverer.draw = lambda sizes: {"hidden_size": 96}

    def refuse(*args, **kwargs):
        raise probe.Refused("ValueError: hidden_size must be a multiple of 128")

    discoverer.build = refuse
    with pytest.raises(
        RuntimeError, match=r"the first: ValueError: hidden_size must be a multiple of 128 with hidden_size=96"
    ):
        discoverer.sample(["hidden_size"])


def test_random_configs_always_give_the_head_counts() -> None:
    # GraniteMoE-SWA: hidden_size drawn as 12 beside num_attention_heads left at its default 16 made head_dim 0;
    # Phi: hidden_size left at its default 2048 beside 3 drawn heads made a head width of 2048 / 3
    import random

    from llmcount.discover.verify import random_config

    discoverer = Discoverer.__new__(Discoverer)
    discoverer.model_type = "toy"
    discoverer.layer_key = "num_hidden_layers"
    discoverer.symbols = {"hidden_size": None, "num_attention_heads": None, "intermediate_size": None}
    discoverer.defaults = {"hidden_size": 2048, "num_attention_heads": 16, "intermediate_size": 3072}
    discoverer.tokens = set()
    discoverer.switches_read = []
    discoverer.parts = []
    discoverer.per_layer = {}
    discoverer.dependent = {}
    discoverer.layer_values = {}
    discoverer.draw = lambda sizes: {"num_attention_heads": 3, "hidden_size": 12, "intermediate_size": 24}
    rng = random.Random(0)
    configs = [random_config(discoverer, rng) for _ in range(30)]
    assert all(c["num_attention_heads"] == 3 for c in configs)
    assert all(c["hidden_size"] % 6 == 0 for c in configs)  # drawn, or 2048 made a multiple of 2 * 3
    assert any(c["hidden_size"] != 12 for c in configs)
    assert any("intermediate_size" not in c for c in configs)  # 3072 = 6 * 512: its default may stay
