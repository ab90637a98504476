"""The contract for bad input, checked one way everywhere: exit 1, nothing on stdout, one line on stderr; a value an
option does not take (a number that is malformed or out of the option's range) is a usage error: exit 2, the line
ending with the command's help to read."""

from __future__ import annotations

from typer.testing import CliRunner

from llmcount.cli import app


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def assert_refused(result, *needles: str, code: int = 1) -> None:
    assert result.exit_code == code, result.output
    assert isinstance(result.exception, SystemExit), "a traceback escaped"
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    if code == 2:
        assert lines[0].endswith("--help`)"), lines[0]


def assert_usage(result, *needles: str) -> None:
    """An option's value refused as a usage error (exit 2)."""
    assert_refused(result, *needles, code=2)
