"""The generic reader over every record: absent optional keys take transformers' defaults, absent required keys
are named, values of the wrong type are refused naming the key."""

from __future__ import annotations

import pytest

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

FAMILIES = records.names()


def small_defaults(family: records.Family) -> dict:
    """The class defaults with two layers, lists per layer dropped (the config class recomputes them)."""
    config = {k: v for k, v in oracle.runnable_defaults(family.name).items() if not isinstance(v, list)}
    layers = next(spec.key for spec in family.symbols if spec.symbol.name == "N")
    config[layers] = 2
    return config


def optional_keys(family: records.Family) -> list[str]:
    return [spec.key for spec in family.symbols if spec.default is not records.REQUIRED]


@pytest.mark.parametrize("model_type", FAMILIES)
def test_each_absent_optional_key_takes_transformers_default(model_type: str) -> None:
    family = records.family(model_type)
    base = small_defaults(family)
    aliases = {name for names in family.aliases.values() for name in names}
    for key in optional_keys(family):
        config = oracle.without_key({k: v for k, v in base.items() if k not in aliases}, key)
        try:
            expected = oracle.meta_total(config)
        except oracle.TransformersRejected:
            continue  # transformers itself needs the key with these sizes
        try:
            got = read_config(config, "test").counts.total
        except RuleRefusal:  # a stated reason (two layers where the record's layer pattern needs more)
            continue
        assert got == expected, f"{model_type}: without {key!r} ({oracle.VERSIONS})"


@pytest.mark.parametrize("model_type", FAMILIES)
def test_each_absent_required_key_is_named(model_type: str) -> None:
    family = records.family(model_type)
    base = small_defaults(family)
    for spec in family.symbols:
        if spec.default is records.REQUIRED:
            config = {k: v for k, v in base.items() if k not in family.aliases.get(spec.key, ())}
            config = oracle.without_key(config, spec.key)
            with pytest.raises(LlmcountError, match=f"required key '{spec.key}' is missing"):
                read_config(config, "test")


@pytest.mark.parametrize("model_type", FAMILIES)
@pytest.mark.parametrize("bad", ["12", True, 1.5, -3, [4], {"a": 1}, 2**80])
def test_a_size_of_the_wrong_type_or_range_is_refused_naming_the_key(model_type: str, bad: object) -> None:
    family = records.family(model_type)
    base = small_defaults(family)
    for spec in family.symbols:
        config = oracle.with_key(base, spec.key, bad)
        for alias in family.aliases.get(spec.key, ()):
            config.pop(alias, None)
        with pytest.raises(LlmcountError, match=f"'{spec.key}'"):
            read_config(config, "test")
