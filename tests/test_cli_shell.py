"""The shell around the commands: --version, -h everywhere, completion scripts."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import llmcount
from llmcount.cli import app, load_commands

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
COMMANDS = load_commands()


def run(*args):
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag):
    result = run(flag)
    assert result.exit_code == 0
    assert result.stdout.strip() == f"llmcount {llmcount.__version__}"


@pytest.mark.parametrize("name", [None, *COMMANDS])
def test_short_and_long_help_on_the_app_and_every_command(name):
    args = [] if name is None else [name]
    short, long = run(*args, "-h"), run(*args, "--help")
    assert short.exit_code == long.exit_code == 0
    assert short.stdout == long.stdout
    assert "-h, --help" in short.stdout


def test_completion_is_documented():
    assert "completion" in COMMANDS
    text = run("completion", "--help").stdout.replace("\n", " ").replace("  ", " ")
    assert "Example: llmcount completion" in text


@pytest.mark.parametrize(
    ("shell", "marker"),
    [("bash", "complete -o"), ("zsh", "compdef"), ("fish", "complete --command llmcount")],
)
def test_completion_prints_a_script_for_the_shell(shell, marker):
    result = run("completion", shell)
    assert result.exit_code == 0
    assert marker in result.stdout and "_LLMCOUNT_COMPLETE" in result.stdout


def test_completion_refuses_an_unknown_shell():
    result = run("completion", "tcsh")
    assert result.exit_code == 2
    assert "tcsh" in result.stderr


def test_the_script_answers_completion_requests():
    """What the bash script runs on <TAB> after `llmcount co`: the matching commands."""
    code = "import sys; sys.argv[0] = 'llmcount'; from llmcount.cli import main; main()"
    env = {**os.environ, "_LLMCOUNT_COMPLETE": "complete_bash", "COMP_WORDS": "llmcount co", "COMP_CWORD": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT).stdout
    assert set(out.split()) == {"count", "compare", "completion"}
