"""The contract for bad input, checked one way everywhere: exit 1, nothing on stdout, one line on stderr."""

from __future__ import annotations

from typer.testing import CliRunner

from llmcount.cli import app


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def assert_refused(result, *needles: str) -> None:
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), "a traceback escaped"
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def assert_usage(result, *needles: str) -> None:
    """A usage error (a bad option value such as an unknown engine or GPU name): exit 2, one line on stderr."""
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
