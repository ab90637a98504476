"""The ``verify_both_paths`` fixture: every verify comparison a test makes with a model the compiled path read
(:class:`llmcount.plain_verify.Read`) is made again with the sympy path's Model of the same config, and the two
results must be equal (or refused with the same words); every result's text
(:func:`llmcount.plain_verify.render_verify`) must be what the template ``costs_verify.txt.j2`` renders. A test
module uses it with ``pytestmark = pytest.mark.usefixtures("verify_both_paths")`` after importing it."""

from __future__ import annotations

import pytest

from llmcount import checkpoint, plain_verify
from llmcount.errors import LlmcountError
from llmcount.quant import index as quant_index
from llmcount.renderers import render_verify as template_verify


def _outcome(function, model, args, kwargs):
    try:
        return function(model, *args, **kwargs)
    except LlmcountError as exc:
        return f"refused: {exc}"


def _twin(function, seen: list):
    def both(model, *args, **kwargs):
        result = _outcome(function, model, args, kwargs)
        if isinstance(model, plain_verify.Read):
            seen.append(model.name)
            assert result == _outcome(function, model.full(), args, kwargs)
        if isinstance(result, str):
            raise LlmcountError(result.removeprefix("refused: "))
        assert plain_verify.render_verify(result) == template_verify(result)
        return result

    return both


@pytest.fixture
def verify_both_paths(monkeypatch) -> list[str]:
    """Check every verify comparison of this test on both paths (see the module docstring); the names of the models
    the compiled path read."""
    seen: list[str] = []
    monkeypatch.setattr(checkpoint, "compare", _twin(checkpoint.compare, seen))
    monkeypatch.setattr(checkpoint, "verify_index", _twin(checkpoint.verify_index, seen))
    monkeypatch.setattr(quant_index, "verify_index", _twin(quant_index.verify_index, seen))
    return seen
