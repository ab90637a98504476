"""The compiled path checks a config and selects its terms once per values of the names its family's rules, layer
conditions and choices read (``Compiled._decided``), and reads plain keys, lists of names or layer indices and
computed defaults without the reader's general walk: a config read after others of its family counts as it does
read alone, as the sympy path counts it, and one that differs in a value the rules read (a list of layer kinds, a
list of dense layers, a type) is checked and selected again."""

from __future__ import annotations

import pytest

from llmcount import counting
from llmcount.errors import LlmcountError
from llmcount.formulas.config import read_config
from llmcount.presets import presets


def _same(config: dict) -> counting.Counted:
    ours = counting.read(config, "x")
    theirs = read_config(config, "x")
    assert (ours.total, ours.activated, ours.values) == (
        theirs.counts.total,
        theirs.counts.activated,
        {s.name: v for s, v in theirs.values.items()},
    )
    assert [(c.path, c.count, c.activated) for c in ours.components] == [
        (c.path, c.count, c.activated) for c in theirs.counts.components
    ]
    return ours


def test_a_list_of_layer_kinds_is_its_own_key() -> None:
    """Qwen3 with its sliding window switched on: layer_types decides which layers slide; two lists of one length
    with different kinds are two selections, each read after the other as alone."""
    base = {**presets()["qwen3-8b"].config(), "use_sliding_window": True}
    layers = base["num_hidden_layers"]
    full = {**base, "layer_types": ["full_attention"] * layers}
    half = {**base, "layer_types": ["sliding_attention", "full_attention"] * (layers // 2)}
    first = [_same(full), _same(half)]
    again = [_same(full), _same(half), _same(full)]
    assert first[0].selection.endswith("|N_sliding=0")  # no layer slides
    assert first[1].selection.endswith("|")  # some layers slide, not all
    assert [c.selection for c in again] == [first[0].selection, first[1].selection, first[0].selection]


def test_a_list_of_dense_layers_is_its_own_key() -> None:
    """Qwen3-MoE's mlp_only_layers (layer indices, integers): layers 0 and 1 dense instead of routed. Hand
    derivation of the difference: two layers lose n routed experts of 3·d·d_moe and a router of n·d, and gain a
    dense MLP of 3·d·d_ff."""
    config = presets()["qwen3-30b-a3b"].config()
    moe = _same(config)
    dense = _same({**config, "mlp_only_layers": [0, 1]})
    assert _same(config).total == moe.total
    d, n, d_moe, d_ff = (
        config[k] for k in ("hidden_size", "num_experts", "moe_intermediate_size", "intermediate_size")
    )
    assert moe.total - dense.total == 2 * (n * 3 * d * d_moe + n * d - 3 * d * d_ff)


def test_a_value_the_rules_read_of_another_type_is_checked_again() -> None:
    """A float 8.0 where the count of key-value heads is read is the integer 8 (as the reader takes a whole float);
    a string is refused by name however many good configs of the family came before."""
    config = presets()["llama-3-8b"].config()
    for _ in range(3):
        _same(config)
    assert _same({**config, "num_key_value_heads": 8.0}).total == _same(config).total
    bad = {**config, "num_key_value_heads": "8"}
    with pytest.raises(counting.Fallback):
        counting.read(bad, "bad")
    with pytest.raises(LlmcountError, match="num_key_value_heads"):
        read_config(bad, "bad")


@pytest.mark.parametrize("name", sorted(presets()))
def test_every_preset_read_twice_counts_as_the_sympy_path(name: str) -> None:
    config = presets()[name].config()
    try:
        counting.read(config, "x")
    except counting.Fallback:
        pytest.skip("read by the sympy path")
    changed = (
        {**config, "vocab_size": config["vocab_size"] + 3} if isinstance(config.get("vocab_size"), int) else config
    )
    _same(changed)
    _same(config)
