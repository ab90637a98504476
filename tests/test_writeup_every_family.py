"""Every family's write-up renders from its config class's defaults, in both languages, or is refused by name: a
family the registry supports must never end in an internal error."""

from __future__ import annotations

import pytest

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import read_config
from llmcount.renderers.writeup import render_writeup

oracle = pytest.importorskip("oracle", reason="the class defaults come from transformers (pip install '.[test]')")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("model_type", records.names())
def test_writeup_renders_or_refuses_by_name(model_type: str, lang: str) -> None:
    config = {**oracle.runnable_defaults(model_type), "model_type": model_type}
    model = read_config(config, model_type)
    try:
        text = render_writeup(model, "markdown", lang, present=set(config))
    except LlmcountError:
        return  # refused by name: allowed
    assert f"{model.whole_total or model.counts.total:,}" in text  # a flat composite's (Chameleon's): the whole model
