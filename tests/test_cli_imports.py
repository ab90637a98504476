"""The command line's modules import each other in one direction: command modules (those that register a command
with ``@app.command``) import the shared app and options and helper modules, never another command module, and no
import of the package's modules closes a circle. Read from the source with ``ast`` (every import, also those inside
functions), so that a lazy import is checked as strictly as one at the top."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import llmcount
from llmcount.cli import COMMAND_MODULES

ROOT = Path(llmcount.__file__).parent


def module_name(path: Path) -> str:
    parts = ["llmcount", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
NAMESPACES = {module_name(p / "__init__.py") for p in ROOT.rglob("*") if p.is_dir() and any(p.glob("*.py"))}
NAMESPACES -= set(MODULES)
"""Folders of modules without an ``__init__.py`` (``llmcount.formulas``): packages that hold only their modules."""


def is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def ancestors(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def known(target: str) -> str:
    """The llmcount module an import names: itself, or the module holding the name it imports."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target


def imports(name: str) -> set[str]:
    """The llmcount modules ``name`` imports anywhere in its source (a name imported from a package is an import of
    its ``__init__``), and the packages that hold them, whose ``__init__`` runs first (but for ``name``'s own
    packages, which have run before ``name`` does)."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    package = name if is_package(name) else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {known(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in MODULES else known(target))
    found |= {parent for module in found for parent in ancestors(module)} - ancestors(name)
    return found - {name, "", "llmcount"}


GRAPH = {name: imports(name) for name in MODULES}


def cli_modules() -> list[str]:
    return [name for name in MODULES if name == "llmcount.cli" or name.startswith("llmcount.cli.")]


def registers_a_command(name: str) -> bool:
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                call = decorator.func if isinstance(decorator, ast.Call) else decorator
                if ast.unparse(call) == "app.command":
                    return True
    return False


COMMANDS = [name for name in cli_modules() if registers_a_command(name)]


def cycle_through(start: str) -> list[str] | None:
    """A shortest path of imports from ``start`` back to itself, or None."""
    paths = {target: [start, target] for target in GRAPH[start]}
    frontier = list(paths)
    while frontier:
        following = []
        for name in frontier:
            if name == start:
                return paths[name]
            for target in GRAPH.get(name, ()):
                if target not in paths:
                    paths[target] = [*paths[name], target]
                    following.append(target)
        frontier = following
    return None


def test_the_command_modules_are_the_ones_the_commands_are_loaded_from() -> None:
    assert set(COMMANDS) == {f"llmcount.cli.{module}" for module in COMMAND_MODULES.values()}


@pytest.mark.parametrize("name", cli_modules())
def test_no_cli_module_is_in_an_import_cycle(name: str) -> None:
    assert cycle_through(name) is None, " -> ".join(cycle_through(name) or [])


@pytest.mark.parametrize("name", COMMANDS)
def test_a_command_module_imports_no_other_command_module(name: str) -> None:
    assert not [other for other in COMMANDS if other != name and other in GRAPH[name]], GRAPH[name]


def test_the_cycle_check_can_fail() -> None:
    """The checks above see imports inside functions and from the package's parent: a circle drawn by hand is
    found."""
    saved = dict(GRAPH)
    try:
        GRAPH["llmcount.errors"] = GRAPH["llmcount.errors"] | {COMMANDS[0]}
        GRAPH[COMMANDS[0]] = GRAPH[COMMANDS[0]] | {"llmcount.errors"}
        assert cycle_through(COMMANDS[0]) is not None
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


def defined(name: str) -> set[str] | None:
    """The names a module binds at its top level (also under ``if`` and ``try``), or None when it makes names on
    demand (a module ``__getattr__``)."""
    names: set[str] = set()
    body = list(ast.parse(MODULES[name].read_text(encoding="utf-8")).body)
    while body:
        node = body.pop()
        if isinstance(node, (ast.If, ast.Try)):
            body += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
            body += [n for handler in getattr(node, "handlers", []) for n in handler.body]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return None if "__getattr__" in names else names


def unresolved(name: str) -> list[str]:
    """Each relative import of ``name`` that names no llmcount module, or a name its module does not define: what a
    module moved into or out of a package, or a line merged from before a move, would leave behind."""
    package = name if is_package(name) else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = package.split(".")
        target = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
        line = f"{name}:{node.lineno}: {ast.unparse(node)}"
        if target not in MODULES and target not in NAMESPACES:
            found.append(f"{line}: no module {target}")
            continue
        names = defined(target) if target in MODULES else set()
        missing = [a.name for a in node.names if f"{target}.{a.name}" not in MODULES and names is not None]
        missing = [m for m in missing if m not in names]
        if missing:
            found.append(f"{line}: {target} defines no {', '.join(missing)}")
    return found


@pytest.mark.parametrize("name", cli_modules())
def test_every_relative_import_names_a_module_and_what_it_defines(name: str) -> None:
    assert unresolved(name) == []


def test_an_import_that_does_not_resolve_is_found(tmp_path, monkeypatch) -> None:
    stale = tmp_path / "stale.py"
    stale.write_text("def f():\n    from .errors import LlmcountError, Nothing\n    from .nowhere import x\n")
    monkeypatch.setitem(MODULES, "llmcount.stale", stale)
    found = unresolved("llmcount.stale")
    assert len(found) == 2 and "defines no Nothing" in found[0] and "no module llmcount.nowhere" in found[1], found
    assert defined("llmcount") is None  # the package makes its API's names on demand: any name is taken
