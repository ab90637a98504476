"""The checkpoint's MTP module counted by the compiled path (``counting.Counted.mtp_module``): ``count``'s text and
``count --json``, with ``--mtp`` and without, are the sympy path's (``formulas.mtp.module`` and the template) byte
for byte, on every record with an ``[mtp]`` table, on its defaults and its presets, with the config's count of MTP
layers as given, set to 2 and to 0; where the sympy path refuses, the compiled path hands the config over."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcount import counting, plain
from llmcount.errors import LlmcountError
from llmcount.formulas import mtp as mtp_module
from llmcount.formulas import records, snapshot
from llmcount.formulas.config import read_config
from llmcount.renderers import count_data, render_count

MTP_RECORDS = sorted(name for name in snapshot.bundled() if records.family(name).mtp is not None)


def _cases(name: str) -> list[tuple[str, dict]]:
    family = records.family(name)
    given = [*snapshot._preset_configs().get(name, []), (f"{name} defaults", snapshot._default_config(family))]
    key = family.mtp.count.key
    more = [(f"{name} defaults, 2 MTP layers", {**given[-1][1], key: 2}), (f"{name}, none", {**given[0][1], key: 0})]
    return [*given, *more]


def _sympy(make) -> str:
    try:
        return make()
    except LlmcountError as exc:
        return f"refused: {exc}"


def _compiled(make) -> str | None:
    try:
        return make()
    except counting.Fallback:
        return None


@pytest.mark.parametrize("name", MTP_RECORDS)
def test_the_mtp_module_is_the_sympy_paths(name: str) -> None:
    counted_any = False
    for source, config in _cases(name):
        counted = counting.read(config, source)
        model = read_config(config, source)
        for mtp in (False, True):
            expected = _sympy(lambda m=mtp: json.dumps(count_data(model, m), indent=2))  # noqa: B023
            ours = _compiled(lambda m=mtp: json.dumps(counted.count_data(m), indent=2))  # noqa: B023
            if ours is None:  # handed over: only where the sympy path refuses
                assert expected.startswith("refused: "), (source, mtp)
                continue
            assert ours == expected, (source, mtp)
            counted_any = counted_any or ('"mtp"' in ours)
            for width in (None, 40):
                assert plain.render_count(counted, width, mtp) == render_count(model, width, mtp), (source, mtp, width)
    assert counted_any, f"{name}: no config with an MTP module"


def test_deepseek_v3s_module_is_one_moe_layer_and_its_own_weights() -> None:
    """DeepSeek-V3's MTP module (model.layers.61 of the released checkpoint, README_WEIGHTS.md: 14B of the 685B),
    derived by hand from its config: one MoE decoder layer (MLA attention, 256 routed experts and one shared, two
    norms) and its own embedding and head copies, enorm, hnorm, eh_proj and the head's norm."""
    from llmcount.presets import presets

    d, V, r_q, r_kv, h, nope, rope, v, moe, n = 7168, 129280, 1536, 512, 128, 128, 64, 128, 2048, 256
    attention = d * r_q + r_q + r_q * h * (nope + rope) + d * (r_kv + rope) + r_kv + r_kv * h * (nope + v) + h * v * d
    mlp = d * n + 3 * d * moe * n + 3 * d * moe  # router, routed experts, one shared expert
    own = 2 * V * d + 3 * d + 2 * d * d
    counted = counting.read(presets()["deepseek-v3"].config(), "preset deepseek-v3")
    module = counted.mtp_module()
    assert module.layers == 1
    assert module.total == attention + mlp + 2 * d + own == 13_463_426_048
    data = counted.count_data(mtp=True)
    assert data["total"] == data["total_without_mtp"] + module.total == 671_026_404_352 + module.total


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(
    record=st.sampled_from(["deepseek_v3", "glm4_moe", "longcat_flash"]),
    d=st.integers(1, 64).map(lambda x: 16 * x),
    vocab=st.integers(1, 5000),
    layers=st.integers(1, 6),
    mtp_layers=st.integers(0, 4),
    experts=st.integers(1, 16),
    width=st.integers(1, 512),
)
def test_drawn_configs_mtp_module_is_the_sympy_paths(record, d, vocab, layers, mtp_layers, experts, width) -> None:
    """Random sizes on each record's defaults: the MTP module is the sympy path's, and so is ``count --json``,
    ``--mtp`` and not, where the snapshot holds the selection's formula."""
    family = records.family(record)
    config = snapshot._default_config(family)
    config.update(hidden_size=d, vocab_size=vocab, num_hidden_layers=layers, moe_intermediate_size=width)
    config.update({family.mtp.count.key: mtp_layers, "n_routed_experts": experts, "num_experts_per_tok": 1})
    try:
        model = read_config(config, "drawn")
    except LlmcountError:
        return  # a config the record refuses: nothing to compare
    counted = counting.read(config, "drawn")
    found = mtp_module.module(model)
    ours = counted.mtp_module()
    assert (ours is None) == (found is None), config
    if found is not None:
        assert counting.mtp_summary(ours, True) == counting.mtp_summary(found, True), config
    for mtp in (False, True):
        expected = _sympy(lambda m=mtp: json.dumps(count_data(model, m)))
        shown = _compiled(lambda m=mtp: json.dumps(counted.count_data(m)))
        if shown is None:  # handed over: a selection whose whole formula the snapshot does not hold, or a refusal
            assert counted.shown is None or expected.startswith("refused: "), (config, mtp)
            continue
        assert shown == expected, (config, mtp)
