"""The command line imports lazily: `llmcount --help` imports no command module and nothing heavy, `llmcount count`
nothing heavy; each command module is imported when one of its commands runs. Run in fresh processes, as a user
starts it, and checked on ``sys.modules``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from llmcount import cli

HEAVY = ("torch", "transformers", "numpy", "matplotlib", "huggingface_hub")
PROBE = """
import json, sys
from llmcount.cli import main
sys.argv = ["llmcount", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(m for m in sys.modules if m.split(".")[0] in %r
                                                  or m.startswith("llmcount.cli"))}),
      file=sys.stderr)
"""


def imported(*args: str) -> tuple[int, list[str]]:
    """The exit code of ``llmcount *args`` in a fresh process, and the heavy and command modules it imported."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE % (("sympy", *HEAVY),), json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], report["modules"]


SHARED = {"llmcount.cli", "llmcount.cli.app", "llmcount.cli.options"}
"""What every command and ``--help`` imports: the app and the options."""
PACKAGE = "llmcount.cli"
"""The package whose modules COMMAND_MODULES names."""
COMMANDS = {f"{PACKAGE}.{module}" for module in cli.COMMAND_MODULES.values()}


def test_help_imports_no_command_module_and_nothing_heavy() -> None:
    code, modules = imported("--help")
    assert code == 0
    assert set(modules) <= SHARED, modules


@pytest.mark.parametrize("args", [("count", "qwen3-32b"), ("count", "qwen3-32b", "llama-3-8b", "--csv")])
def test_count_imports_no_command_module_and_no_optional_dependency(args) -> None:
    code, modules = imported(*args)
    assert code == 0
    assert not [m for m in modules if m.split(".")[0] in HEAVY], modules
    assert not [m for m in modules if m in COMMANDS and m != "llmcount.cli.count"], modules


def test_a_command_imports_its_module_when_it_runs() -> None:
    code, modules = imported("memory", "qwen3-32b")
    assert code == 0
    assert "llmcount.cli.costs" in modules and "llmcount.cli.writeup" not in modules


def test_the_help_list_is_the_same_before_and_after_the_modules_are_imported() -> None:
    runner = CliRunner()
    before = runner.invoke(cli.app, ["--help"], terminal_width=100).stdout
    names = cli.load_commands()
    after = runner.invoke(cli.app, ["--help"], terminal_width=100).stdout
    assert before == after
    for name in names:
        assert f"\n  {name} " in after


def test_every_lazy_command_is_registered_by_its_module() -> None:
    cli.load_commands()
    group = typer.main.get_command(cli.app)
    for name, module in cli.COMMAND_MODULES.items():
        assert group.get_command(None, name).callback.__module__ == f"{PACKAGE}.{module}", name
    modules = {info.callback.__module__ for info in cli.app.registered_commands}
    assert modules == COMMANDS


def test_the_command_list_keeps_its_order_whichever_command_module_is_imported_first() -> None:
    module = f"{PACKAGE}.{cli.COMMAND_MODULES['memory']}"
    code = f"import importlib; importlib.import_module({module!r}); from llmcount.cli import main; main(['--help'])"
    env = {**os.environ, "COLUMNS": "250"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    listed = re.findall(r"^  (\S+)", done.stdout.split("Commands:")[1], flags=re.M)
    assert listed == list(cli.COMMAND_MODULES)
