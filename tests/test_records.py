"""Every family record against transformers: the config class's defaults and hypothesis-drawn configs.

The oracle is ``sum(numel())`` over the parameters of ``AutoModelForCausalLM.from_config`` built on the meta
device (``tests/oracle.py``), for the versions pinned in pyproject.toml.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import RuleRefusal, read_config
from llmcount.presets import presets

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

FAMILIES = records.names()


def llmcount_total(config: dict) -> int:
    return read_config(config, "test config").counts.total


def required_keys(family: records.Family) -> list[str]:
    return [spec.key for spec in family.symbols if spec.default is records.REQUIRED]


@pytest.mark.parametrize("model_type", FAMILIES)
def test_class_defaults(model_type: str) -> None:
    """The config class's defaults, given in full (as `to_dict` writes them) and with only the required keys."""
    full = oracle.class_defaults(model_type)
    if model_type in oracle.REFUSED_DEFAULTS:  # refused by a rule of the record, for the reason it states
        with pytest.raises(RuleRefusal, match=oracle.REFUSED_DEFAULTS[model_type][0]):
            llmcount_total(full)
        full = oracle.runnable_defaults(model_type)
    if model_type in oracle.UNBUILDABLE_DEFAULTS:  # the same count with the value transformers needs to build it
        built = oracle.runnable_defaults(model_type)
        assert llmcount_total(full) == llmcount_total(built), model_type
        full = built
    expected = oracle.meta_total(full)
    assert llmcount_total(full) == expected, f"{model_type}: class defaults ({oracle.VERSIONS})"
    family = records.family(model_type)
    minimal = {"model_type": model_type, **{key: full[key] for key in required_keys(family) if key in full}}
    minimal = oracle.runnable(minimal, model_type)  # the keys that make the defaults runnable
    assert llmcount_total(minimal) == expected, f"{model_type}: only the required keys given ({oracle.VERSIONS})"


# A whole multimodal preset (gemma-3-27b-it, qwen2.5-vl-7b) is checked against transformers' whole model and its
# checkpoint in tests/test_towers.py; here each causal-LM preset against the model AutoModelForCausalLM builds.
CAUSAL_PRESETS = sorted(n for n, p in presets().items() if records.composite(p.config()["model_type"]) is None)


@pytest.mark.parametrize("name", CAUSAL_PRESETS)
def test_every_preset_equals_transformers(name: str) -> None:
    config = {k: v for k, v in presets()[name].config().items() if k != "quantization_config"}
    assert llmcount_total(config) == oracle.meta_total(config), f"preset {name} ({oracle.VERSIONS})"


@pytest.mark.parametrize("model_type", FAMILIES)
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn_configs(model_type: str, data) -> None:
    family = records.family(model_type)
    config = data.draw(oracle.drawn_config(family))
    refused = None
    try:  # llmcount first: a refusal for a stated reason needs no model built
        got = llmcount_total(config)
    except RuleRefusal:  # a stated reason: transformers builds a model that cannot run, or one not supported
        assume(False)
    except LlmcountError as error:
        refused = error
    try:
        expected = oracle.meta_total(config)
    except oracle.TransformersRejected:
        assume(False)  # transformers refuses it: nothing to compare
    if refused is not None:  # refusing what transformers builds is only right for a stated reason
        pytest.fail(f"{model_type}: refused a config transformers builds: {refused}\n{config}")
    assert got == expected, f"{model_type}: {config} ({oracle.VERSIONS})"


def test_rows_of_experts_that_compute_nothing_are_never_activated() -> None:
    """LongCat-Flash allocates gate_up_proj rows for its zero-computation experts (identities, n_zero of them): a
    token routed to one uses none of them, so they are total but not activated parameters. With k/n of them the
    activated count was a fraction whenever n does not divide k · 2 · n_zero · d · d_moe (here 12 · 4 / 512)."""
    config = {
        "model_type": "longcat_flash", "num_layers": 1, "vocab_size": 16, "hidden_size": 1, "ffn_hidden_size": 1,
        "num_attention_heads": 1, "num_key_value_heads": 1, "q_lora_rank": 1, "qk_rope_head_dim": 0,
        "qk_nope_head_dim": 1, "zero_expert_num": 2, "expert_ffn_hidden_size": 1, "n_routed_experts": 512,
        "moe_topk": 12,
    }  # fmt: skip
    parts = {c.path: c for c in read_config(config, "test").counts.components}
    n, k, n_zero, d, d_moe = 512, 12, 2, 1, 1
    assert (parts["moe/zero_experts"].count, parts["moe/zero_experts"].activated) == (2 * n_zero * d * d_moe, 0)
    assert (parts["moe/experts"].count, parts["moe/experts"].activated) == (3 * d * d_moe * n, 3 * d * d_moe * k)
