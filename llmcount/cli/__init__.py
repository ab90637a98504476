"""The command line, ``llmcount`` and ``python -m llmcount``: the typer app and its entry point (:mod:`.app`), the
options many commands share (:mod:`.options`), one module per subject registering its commands (count, analysis,
costs, speed, writeup, shell), imported only when one of its commands runs, and the helpers some of them share."""

from .app import COMMAND_MODULES, app, load_commands, main

__all__ = ["COMMAND_MODULES", "app", "load_commands", "main"]
