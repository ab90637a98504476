"""A value typed far too long (20,000 characters) is named in a short one-line refusal, whatever option it is
given to: the message keeps the option and the head of the value, not the whole of it."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from llmcount.cli import app

LONG = "x" * 20_000
DIGITS = "9" * 20_000

CASES = [
    ("mfu", "llama-3-8b", "--tokens-per-second", "100", "--gpu", LONG),
    ("mfu", "llama-3-8b", "--tokens-per-second", DIGITS, "--gpu", "h100-sxm"),
    ("memory", "llama-3-8b", "--dtype", LONG),
    ("memory", "llama-3-8b", "--kv-dtype", LONG),
    ("memory", "llama-3-8b", "--gpu-memory", DIGITS + "GiB"),
    ("memory", "llama-3-8b", "--seq", DIGITS),
    ("memory", "llama-3-8b", "--training", "--zero", LONG),
    ("flops", LONG),
    ("flops", "llama-3-8b", "--seq", "1." + DIGITS),
    ("writeup", "qwen3-8b", "--sections", LONG),
    ("count", LONG),
    ("count", "-"),  # stdin: a config of one long key
]


@pytest.mark.parametrize("args", CASES, ids=lambda args: " ".join(a[:12] for a in args))
def test_an_overlong_value_gets_a_short_refusal(args):
    stdin = '{"model_type": "' + LONG + '"}' if args[-1] == "-" else None
    result = CliRunner().invoke(app, list(args), input=stdin)
    assert result.exit_code in (1, 2) and isinstance(result.exception, SystemExit), result.exception
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("llmcount: error: ")
    assert len(lines[0]) < 1000, lines[0][:200]
