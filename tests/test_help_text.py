"""The help people read: every command's ``--help`` names its values with plain placeholders (``MODEL``, ``SIZE``,
``INT``, ``DTYPE``, ``[a|b]``), never typer's ``{spec}``, ``<str>`` or ``<list[str]>``; the command list of
``llmcount --help`` shows each summary whole; the definition of "activated" is written once."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from llmcount import cli
from llmcount.cli.app import summary

runner = CliRunner()
COMMANDS = cli.load_commands()

# typer's own renderings of a value: {spec} / {MODEL} in the usage line, <str>, <int range>, <list[str]> beside a name
TYPER_PLACEHOLDER = re.compile(r"\{[^}\s]*\}|<[a-z][\w\[\]|, ]*>")


def help_of(*args: str) -> str:
    result = runner.invoke(cli.app, [*args, "--help"], terminal_width=120)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_command_is_walked() -> None:
    assert set(cli.COMMAND_MODULES) <= set(COMMANDS) and {"count", "formula", "list"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_no_typer_placeholders_in_a_commands_help(name: str) -> None:
    text = help_of(name)
    usage = text.splitlines()[0]
    assert usage.startswith(f"Usage: llmcount {name} [OPTIONS]"), usage
    found = TYPER_PLACEHOLDER.findall(text)
    assert not found, f"llmcount {name} --help shows {found}"


def test_the_placeholders_people_expect() -> None:
    assert help_of("count").splitlines()[0] == "Usage: llmcount count [OPTIONS] MODEL..."
    assert help_of("verify").splitlines()[0] == "Usage: llmcount verify [OPTIONS] MODEL"
    assert help_of("check").splitlines()[0] == "Usage: llmcount check [OPTIONS] MODEL FORMULA"
    memory = help_of("memory")
    for shown in (
        "--dtype DTYPE",
        "--kv-dtype DTYPE",
        "--gpu NAME",
        "--dp INT",
        "-s, --seq SIZE",
        "--attention [sdpa|eager|flash]",
    ):
        assert shown in memory, shown
    assert "--max-files INT" in help_of("scan") and "--from MODEL" in help_of("solve")


def test_the_command_list_shows_whole_summaries() -> None:
    text = help_of()
    listed = "".join(text.split("Commands:")[1].split())  # the list wraps lines, at spaces or after a hyphen
    assert "..." not in listed.replace("h_kv/h,...)", "")
    for name in COMMANDS:
        command = typer.main.get_command(cli.app).get_command(None, name)
        first = summary(command.help or "")
        assert first.endswith((".", ")")) and "".join(first.split()) in listed, name


def test_activated_is_defined_once() -> None:
    definition = "k/n of the routed experts"
    assert definition in " ".join(help_of().split())
    for name in COMMANDS:
        text = " ".join(help_of(name).split())
        assert definition not in text, name
        if "--activated" in text and name != "chart":
            assert "as `llmcount --help` defines it" in text, name
