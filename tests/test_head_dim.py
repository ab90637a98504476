"""Every record against transformers on a config whose ``head_dim`` is not ``hidden_size // num_attention_heads``.

Most attention classes read ``getattr(config, "head_dim", hidden_size // num_attention_heads)``: a config.json that
gives ``head_dim`` changes the model even where the config class does not list the key (Jamba). Random configs of
tests/test_records.py draw ``head_dim`` only for the records that read it; here every record whose modeling file
reads it from the config gets one config with another value, built by transformers on the meta device, and must
count what transformers builds or refuse the config naming the key. The layers are cut where the class accepts it
(to two, or to eight where the record has layers of several kinds), so that each case is one small build.
"""

from __future__ import annotations

import importlib
import re
from functools import cache

import pytest

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

# what the attention classes write: getattr(config, "head_dim", ...) or config.head_dim
_READS = re.compile(r"""getattr\(\s*(?:self\.)?config,\s*["']head_dim["']|\bconfig\.head_dim\b""")


@cache
def _modeling_source(model_type: str) -> str:
    """The source of the module that defines the causal-LM class transformers builds for ``model_type``."""
    import transformers

    name = oracle.CAUSAL_LM_CLASSES.get(model_type)
    if name is None:
        return ""
    module = importlib.import_module(getattr(transformers, name).__module__)
    with open(module.__file__, encoding="utf-8") as handle:
        return handle.read()


def _cases() -> list[str]:
    return [name for name in records.names() if _READS.search(_modeling_source(name))]


def _layer_key(family: records.Family) -> str | None:
    return next((spec.key for spec in family.symbols if spec.symbol.name == "N"), None)


def _configs(model_type: str) -> list[dict]:
    """The runnable class defaults with another head_dim: first with two layers (where the class accepts two), then
    with the class's own number of layers."""
    config = oracle.runnable_defaults(model_type)
    d, h = config.get("hidden_size"), config.get("num_attention_heads")
    width = config.get("head_dim") or (d // h if isinstance(d, int) and isinstance(h, int) and h else 64)
    config = {**config, "head_dim": width + 16}
    family = records.family(model_type)
    key = _layer_key(family)
    # layers of several kinds (Jamba's attention on every 8th layer from the 4th): eight, so that each kind is built
    layers = 8 if family.layers else 2
    if key is None or "." in key or not isinstance(config.get(key), int) or config[key] <= layers:
        return [config]
    if not oracle._accepts(model_type, key, layers):
        return [config]
    cut = {k: v for k, v in config.items() if not (isinstance(v, list) and len(v) == config.get(key))}
    return [{**cut, key: layers}, config]


@pytest.mark.parametrize("model_type", _cases())
def test_head_dim_read_as_transformers_reads_it(model_type: str) -> None:
    refused = ""
    configs = _configs(model_type)
    for config in configs:
        try:
            expected = oracle.meta_total(config)
        except oracle.TransformersRejected as error:
            refused = refused or str(error)
            continue
        try:
            got = read_config(config, "test config").counts.total
        except LlmcountError as error:  # refused: only by name, for the key that was changed
            if "head_dim" not in str(error) and config is not configs[-1]:
                continue  # a refusal of the cut layers (a per-layer list left at its default length)
            assert "head_dim" in str(error), f"{model_type}: refused for another reason: {error}"
            return
        assert got == expected, f"{model_type}: head_dim={config['head_dim']} ({oracle.VERSIONS})"
        return
    pytest.skip(f"transformers refuses another head_dim for {model_type}: {refused}")
