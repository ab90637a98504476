"""A symbol another record declared for its own config key (CTRL's ``dff``, declared when that record or a draft of
it loads) is not a symbol of a model that has no such key: a typed formula or a sweep naming it is refused with this
model's closest symbol, whichever records the process loaded before."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from llmcount.cli.app import app
from llmcount.formulas.symbols import declare


@pytest.mark.parametrize(
    "args",
    [
        ["check", "qwen3-8b", "3 dff d N"],
        ["sweep", "qwen3", "--from", "qwen3-8b", "--set", "dff=1:3"],
        ["solve", "qwen3", "--target", "8B", "--for", "dff", "--set", "N=36"],
    ],
)
def test_another_records_own_symbol_is_not_this_models(args):
    declare("dff", "hidden size of the position-wise feed-forward layer (CTRL)")
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (1, 2)
    assert "not a symbol of" in result.output and "did you mean d_ff?" in result.output
    assert "rows" not in result.output  # no sweep of a symbol the model does not have
