"""Discovery's failure classes of sizes: sizes a validator ties by an equation (Bamba's Mamba heads), a number of
experts per token that is None by default (DeepSeek-V2, Dots1), a tensor width in many keys (more random configs
than monomials), and a switch whose tensors live only on layers the class defaults do not have."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch", reason="discover needs torch and transformers")
pytest.importorskip("transformers", reason="discover needs torch and transformers")

from sympy import Symbol

from llmcount.discover import probe, ties
from llmcount.discover.core import Discoverer, Factor, Kind
from llmcount.discover.verify import _unset_activation
from llmcount.formulas import records

SMALL_BAMBA = {"vocab_size": 64, "intermediate_size": 32, "mamba_d_state": 8, "max_position_embeddings": 64}


def test_a_validators_equation_is_read_and_solved() -> None:
    # BambaConfig.validate_architecture: mamba_d_head * mamba_n_heads must equal mamba_expand * hidden_size
    config_class = probe.config_class("bamba")
    found = [t for t in ties.ties(config_class) if t.where == "BambaConfig.validate_architecture"]
    assert len(found) == 1
    tie = found[0]
    values = {"mamba_d_head": 64, "mamba_n_heads": 128, "mamba_expand": 2, "hidden_size": 4096}
    assert tie.keys(values) == ["mamba_d_head", "mamba_n_heads", "mamba_expand", "hidden_size"]
    assert tie.holds(values)
    # by hand: 2 * 96 / 4 = 48; 2 * 96 / 5 is no integer
    assert tie.solve({**values, "hidden_size": 96, "mamba_n_heads": 4}, "mamba_d_head") == 48
    assert tie.solve({**values, "hidden_size": 96, "mamba_n_heads": 5}, "mamba_d_head") is None


def test_a_tied_size_follows_the_others_in_every_build(monkeypatch) -> None:
    defaults = probe.class_defaults("bamba")
    monkeypatch.setattr(probe, "class_defaults", lambda model_type: {**defaults, **SMALL_BAMBA})
    with pytest.raises(probe.Refused, match="do not match"):  # hidden_size changed, the head size given: refused
        probe.build("bamba", {"num_hidden_layers": 3, **SMALL_BAMBA, "hidden_size": 2048, "mamba_d_head": 64})
    discoverer = Discoverer("bamba", log=lambda text: None)
    assert set(discoverer.dependent) == {"mamba_d_head"}
    built = discoverer.build({"hidden_size": 2048})
    assert built.attributes["mamba_d_head"] == 2 * 2048 // 128  # mamba_expand * hidden_size / mamba_n_heads
    assert discoverer.build({"mamba_n_heads": 64}).attributes["mamba_d_head"] == 2 * 4096 // 64
    assert "mamba_d_head" not in discoverer.draw(["hidden_size", "mamba_n_heads"])


def test_a_width_in_many_keys_gets_enough_random_configs() -> None:
    # Mamba-2's in_proj width: 2·e·d + 2·g·s + n_h, a quadratic in five keys (21 monomials, more than 18 configs)
    keys = ["hidden_size", "mamba_expand", "mamba_n_groups", "mamba_d_state", "mamba_n_heads"]
    discoverer = Discoverer.__new__(Discoverer)
    discoverer.notes = []
    discoverer.symbols = {k: Symbol(k, positive=True, integer=True) for k in keys}
    rng = random.Random(3)

    def sample(sizes):
        v = {k: rng.randint(2, 40) for k in keys}
        width = 2 * v["mamba_expand"] * v["hidden_size"] + 2 * v["mamba_n_groups"] * v["mamba_d_state"]
        width += v["mamba_n_heads"]
        tensor = probe.Tensor(
            "model.layers.*.mamba.in_proj.weight", 0, (width, v["hidden_size"]), "Linear", False, False
        )
        return v, probe.Build((tensor,), {}, 0, 1, "M", "model", "C", {})

    discoverer.sample = sample
    kind = Kind("model.layers.*.mamba.in_proj.weight", "Linear", False, False, True, 0)
    kind.factors = [Factor(set()), Factor(set(keys)), Factor({"hidden_size"})]
    discoverer.fit({kind.key: kind}, keys)
    s = discoverer.symbols
    expected = 2 * s["mamba_expand"] * s["hidden_size"] + 2 * s["mamba_n_groups"] * s["mamba_d_state"]
    assert kind.factors[1].expr == expected + s["mamba_n_heads"]
    assert kind.factors[2].expr == s["hidden_size"]


class _Unset:
    null_activations = ("num_experts_per_tok",)


def test_a_null_top_k_checks_the_total_and_refuses_by_name() -> None:
    # Dots1: num_experts_per_tok is None by default; transformers builds without it (it shapes no tensor)
    config = {
        "model_type": "dots1",
        "num_hidden_layers": 2,
        "first_k_dense_replace": 1,
        "hidden_size": 32,
        "intermediate_size": 48,
        "moe_intermediate_size": 16,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "n_routed_experts": 4,
        "n_shared_experts": 1,
        "vocab_size": 64,
        "num_experts_per_tok": None,
    }
    total = probe.build("dots1", {k: v for k, v in config.items() if k != "model_type"}).total
    family = records.family("dots1")  # the bundled record refuses an unset top-k by name, as a draft does
    why = "num_experts_per_tok is null (Dots1Config's default): the MoE layers cannot route without it"
    check = _unset_activation(_Unset(), "random config 1", config, family, total, why)
    assert check.exact and "exact with num_experts_per_tok set" in check.refused
    wrong = _unset_activation(_Unset(), "random config 1", config, family, total + 1, why)
    assert not wrong.exact
    other = _unset_activation(_Unset(), "random config 1", config, family, total, "hidden_size is not divisible")
    assert not other.exact


def test_a_switch_on_layers_the_defaults_lack(monkeypatch) -> None:
    # DeepSeek-V2: mlp_bias adds biases to the dense MLP, which exists only before first_k_dense_replace (0 by
    # default): its effect is seen again with the layer key that shows the dense layers
    small = {
        "vocab_size": 64,
        "hidden_size": 32,
        "intermediate_size": 48,
        "moe_intermediate_size": 16,
        "n_routed_experts": 4,
        "kv_lora_rank": 8,
        "q_lora_rank": 16,
        "qk_nope_head_dim": 8,
        "qk_rope_head_dim": 8,
        "v_head_dim": 8,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "head_dim": 8,
        "qk_head_dim": 16,
        "max_position_embeddings": 64,
    }
    defaults = probe.class_defaults("deepseek_v2")
    monkeypatch.setattr(probe, "class_defaults", lambda model_type: {**defaults, **small})
    discoverer = Discoverer("deepseek_v2", log=lambda text: None)
    effects = discoverer.switches()
    assert "model.layers.*.mlp.gate_proj.bias" not in effects["mlp_bias"][0]
    discoverer.on = {"mlp_bias": True}
    discoverer.layer_values = {"first_k_dense_replace": [0, 1]}
    discoverer.on["first_k_dense_replace"] = 1
    discoverer.switches_on_layers(effects)
    assert "model.layers.*.mlp.gate_proj.bias" in effects["mlp_bias"][0]


def _layer(key: str, layer: int, shape: tuple[int, ...]) -> probe.Tensor:
    return probe.Tensor(key, layer, shape, "Linear", False, False)


def test_one_name_with_other_shapes_on_other_layer_kinds() -> None:
    # Kimi-Linear's self_attn.q_proj: one width on linear-attention layers, another on MLA layers
    discoverer = Discoverer.__new__(Discoverer)
    discoverer.notes = []
    discoverer.per_layer = {"layer_types": ["linear_attention", "full_attention"]}
    key = "model.layers.*.self_attn.q_proj.weight"
    kinds = ["linear_attention", "full_attention", "linear_attention"]
    shapes = [(64, 32), (96, 32), (64, 32)]
    built = probe.Build(tuple(_layer(key, i, s) for i, s in enumerate(shapes)), {}, 0, 3, "M", "model", "C", {})
    values = {"layer_types": kinds}
    assert discoverer.find_splits(built, values) == {key: "layer_types"}
    discoverer.splits = {key: "layer_types"}
    renamed = discoverer.split(built, values)
    assert [t.key for t in renamed.tensors] == [
        "model.layers.*.self_attn.q_proj_linear_attention.weight",
        "model.layers.*.self_attn.q_proj_full_attention.weight",
        "model.layers.*.self_attn.q_proj_linear_attention.weight",
    ]
    # a list whose kinds do not tell the shapes apart is no split
    assert discoverer.find_splits(built, {"layer_types": ["full_attention"] * 3}) == {}


def test_three_layer_keys_bound_the_moe_layers() -> None:
    # ERNIE-4.5-MoE: MoE on layer i when (i + 1) % interval == 0 and start <= i <= end
    discoverer = Discoverer.__new__(Discoverer)
    discoverer.per_layer = {}
    discoverer.defaults = {"num_hidden_layers": 28}
    discoverer.layer_values = {
        "moe_layer_end_index": [27, 0, 1, 2, 3],
        "moe_layer_interval": [1, 2, 3],
        "moe_layer_start_index": [1, 0, 2, 3],
    }

    def moe(v, i):
        return (i + 1) % v["moe_layer_interval"] == 0 and v["moe_layer_start_index"] <= i <= v["moe_layer_end_index"]

    base = {"moe_layer_end_index": 27, "moe_layer_interval": 1, "moe_layer_start_index": 1, "N": 3}
    settings = [base] + [{**base, k: x} for k, xs in discoverer.layer_values.items() for x in xs]
    seen = [(v, [moe(v, i) for i in range(3)]) for v in settings]
    from llmcount.discover.core import _explains

    found = next(text for text in discoverer.candidates() if _explains(text, seen))
    grid = [
        {"moe_layer_end_index": e, "moe_layer_interval": k, "moe_layer_start_index": s, "N": 6}
        for e in range(6)
        for k in (1, 2, 3)
        for s in range(6)
    ]
    assert _explains(found, [(v, [moe(v, i) for i in range(6)]) for v in grid]), found
