"""Shell integration: the completion script."""

from __future__ import annotations

import os
from enum import Enum
from typing import Annotated

import typer

from .app import app

COMPLETE_VAR = "_LLMCOUNT_COMPLETE"

if os.environ.get(COMPLETE_VAR):  # the shell asks for completions: register typer's shell classes first
    from typer.completion import completion_init

    completion_init()


class Shell(str, Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


@app.command()
def completion(shell: Annotated[Shell, typer.Argument(help="The shell to complete in.")]) -> None:
    """Print the shell completion script for llmcount: commands, options, choices.

    Load it in the current shell with `eval "$(llmcount completion bash)"` (zsh: the same with zsh;
    fish: `llmcount completion fish | source`), or save it where your shell reads completions.

    Example: llmcount completion bash >> ~/.bashrc
    """
    from typer.completion import get_completion_script

    typer.echo(get_completion_script(prog_name="llmcount", complete_var=COMPLETE_VAR, shell=shell.value))
