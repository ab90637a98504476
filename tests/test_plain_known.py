"""A config whose read keys hold the values of one counted before is counted by one lookup
(``counting.Compiled._known``): the result is the one a fresh read gives, on every preset and every record's defaults;
a value of another type, another value, or a config that failed is read and checked again."""

from __future__ import annotations

from functools import cache

import pytest

from llmcount import counting
from llmcount.formulas import snapshot
from llmcount.presets import presets


def _fields(counted: counting.Counted) -> tuple:
    return (counted.name, counted.source, counted.values, counted.selection, counted.numbers, counted.components)


@cache
def _configs() -> list[tuple[str, dict]]:
    configs = [(f"preset {name}", preset.config()) for name, preset in sorted(presets().items())]
    for name in snapshot.bundled():
        if counting.compiled(name) is not None:
            configs.append((f"{name} defaults", snapshot._default_config(snapshot.records.family(name))))
    return configs


def test_a_config_read_again_is_counted_as_read_first() -> None:
    remembered = 0
    for source, config in _configs():
        try:
            first = counting.read(config, source)
        except counting.Fallback:
            continue
        family = first.architecture
        family._known.clear()  # the next read is a fresh one
        fresh = counting.read(dict(config), source)
        again = counting.read(dict(config), source)
        assert _fields(again) == _fields(fresh) == _fields(first), source
        remembered += family._read_names is not None
    assert remembered > 50


def _llama(**changes):
    return {**presets()["llama-3-8b"].config(), **changes}


def test_another_value_or_type_is_read_again() -> None:
    base = counting.read(_llama(), "a")
    counting.read(_llama(), "b").values["N"] = 0  # a caller's change to one result is not kept for the next
    assert counting.read(_llama(), "c").values == base.values
    deeper = counting.read(_llama(num_hidden_layers=33), "d")
    # hand derivation: one Llama 3 8B layer, 4096·(4096 + 1024 + 1024 + 4096) + 3·4096·14336 + 2·4096
    assert deeper.total - base.total == 4096 * (2 * 4096 + 2 * 1024) + 3 * 4096 * 14336 + 2 * 4096
    tied = counting.read(_llama(tie_word_embeddings=True), "e")
    assert base.total - tied.total == 128_256 * 4096
    with pytest.raises(counting.Fallback):  # 1 is not true: the sympy path refuses it by name
        counting.read(_llama(tie_word_embeddings=1), "f")
    assert counting.read(_llama(num_hidden_layers=32.0), "g").total == base.total  # a whole float, as read alone


def test_a_config_that_failed_is_checked_again() -> None:
    bad = _llama(num_key_value_heads=7)  # 32 heads are not divisible into 7 groups
    for _ in range(2):
        with pytest.raises(counting.Fallback):
            counting.read(bad, "bad")
    qwen3 = presets()["qwen3-8b"].config()
    layers = {**qwen3, "layer_types": ["full_attention"] * 36}  # a list is remembered as a tuple of its entries
    assert counting.read(layers, "h").total == counting.read(layers, "i").total == counting.read(qwen3, "j").total
    too_long = {**qwen3, "layer_types": ["full_attention"] * 100_001}  # past the reader's bound: refused, not kept
    for _ in range(2):
        with pytest.raises(counting.Fallback):
            counting.read(too_long, "k")


def test_a_config_differing_in_counted_values_only_is_counted_as_read_alone() -> None:
    """Configs that differ from one read before in sizes no rule reads (vocab_size, and every other key the family's
    ``_free`` lists), given or left out, are counted as a fresh read counts them."""
    compared = 0
    for source, config in _configs():
        try:
            first = counting.read(config, source)
        except counting.Fallback:
            continue
        family = first.architecture
        for key, _, _ in family._free:
            for change in ({key: 2 * config[key] + 8} if isinstance(config.get(key), int) else {}, {key: 64}, None):
                changed = {k: v for k, v in config.items() if k != key} if change is None else {**config, **change}
                try:
                    remembered = counting.read(changed, source)
                except counting.Fallback:
                    remembered = None
                family._known.clear()
                try:
                    fresh = counting.read(changed, source)
                except counting.Fallback:
                    fresh = None
                counting.read(config, source)  # remembered again for the next change
                assert (remembered and _fields(remembered)) == (fresh and _fields(fresh)), (source, change)
                compared += fresh is not None
    assert compared > 200
