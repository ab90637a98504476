"""The shared command line: the typer app and its root command (one-line errors, placeholders, the command list),
the commands registered lazily by name, the helpers every command uses to print and to fail, and the entry point."""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import shlex
import shutil
import sys
from typing import Annotated

import typer

from .. import _pipes
from ..errors import CONTROL, LlmcountError, OptionError
from .options import ACTIVATED_HELP

try:  # typer >= 0.26 vendors click; main() needs the exceptions it raises
    from typer._click import exceptions as click
except ImportError:  # pragma: no cover - older typer, on the real click
    from click import exceptions as click


def summary(doc: str) -> str:
    """A command's summary in the command list of ``--help``: the first sentence of its docstring, whole (the
    list wraps it; it is never cut at a width)."""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    return re.split(r"(?<=[.!?])\s+(?=[A-Z])", paragraph, maxsplit=1)[0]


# The placeholder of a value in every command's --help, when its declaration names none: by option, then by type.
_PLACEHOLDERS = {
    "--assume": "RATIO",
    "--over": "MODEL,...",
    "--set": "SYMBOL=VALUE",
    "--target": "COUNT",
    "--for": "SYMBOL",
    "--from": "MODEL",
    "--dtype": "DTYPE",
    "--kv-dtype": "DTYPE",
    "--scale-dtype": "DTYPE",
    "--lora-targets": "A,B,...",
    "--sections": "A,B,...",
    "--gpu": "NAME",
    "--convention": "NAME",
    "--index": "FILE",
    "--checkpoint": "PATH",
    "--output": "FILE",
    "--chart": "FILE",
}
_ARGUMENT_PLACEHOLDERS = {"spec": "MODEL"}


def _choices(param) -> tuple[str, ...]:
    """The choices of an option declared with an Enum (typer's descriptor, or click's Choice on older typer)."""
    descriptor = getattr(param, "type_descriptor", None)
    found = getattr(descriptor, "choices", None) if descriptor is not None and descriptor.is_choice else None
    found = found if found is not None else getattr(getattr(param, "type", None), "choices", None)
    return tuple(getattr(c, "value", c) for c in found or ())


def _placeholder(param) -> str:
    choices = _choices(param)
    if choices:
        return "[" + "|".join(map(str, choices)) + "]"
    named = next((_PLACEHOLDERS[o] for o in param.opts if o in _PLACEHOLDERS), None)
    if named is not None:
        return named
    descriptor = getattr(param, "type_descriptor", None)
    kind = getattr(descriptor, "annotation", None) or getattr(getattr(param, "type", None), "name", "")
    if kind in (int, "integer", "integer range"):
        return "INT"
    if kind in (float, "float", "float range"):
        return "NUMBER"
    return param.name.upper()


class _PlainArgument(typer.core.TyperArgument):
    """An argument shown by its placeholder alone: ``MODEL`` in the usage line and the argument list (typer would
    write ``{MODEL}`` and ``MODEL <str>``)."""

    def get_usage_pieces(self, ctx) -> list[str]:
        return [self.metavar if self.required else f"[{self.metavar}]"]

    def get_help_record(self, ctx):
        record = super().get_help_record(ctx)
        return None if record is None else (self.metavar, record[1])


def _takes_a_value(option) -> bool:
    return not option.is_flag and not option.count and option.name != "help"


_NAMES_A_DTYPE = frozenset({"--dtype", "--kv-dtype", "--scale-dtype"})


def _given_dtype(callback):
    """An option naming a dtype with ``callback`` run after it: an empty value is refused, never read as the
    default the option takes when it is not given (``--kv-dtype ''`` is not ``--kv-dtype`` left out)."""

    def check(ctx, param, value):
        if isinstance(value, str) and not value.strip():
            raise click.BadParameter("is empty; name a dtype (bf16, fp16, fp8, ...) or leave the option out")
        return callback(ctx, param, value) if callback is not None else value

    return check


def plain_placeholders(command):
    """``command`` with a placeholder (``MODEL``, ``SIZE``, ``INT``, ``DTYPE``, ``[a|b]``) for every value its --help
    shows, the same in every command; done once per command, when the root command hands it out."""
    if getattr(command, "_plain_placeholders", False):
        return command
    for param in getattr(command, "params", ()):
        if isinstance(param, typer.core.TyperArgument):
            if param.metavar is None:
                param.metavar = _ARGUMENT_PLACEHOLDERS.get(param.name, param.name.upper())
            if param.nargs != 1 and not param.metavar.endswith("..."):
                param.metavar += "..."
            if type(param) is typer.core.TyperArgument:
                param.__class__ = _PlainArgument
        elif isinstance(param, typer.core.TyperOption) and param.metavar is None and _takes_a_value(param):
            param.metavar = _placeholder(param)
        if isinstance(param, typer.core.TyperOption) and _NAMES_A_DTYPE.intersection(param.opts):
            param.callback = _given_dtype(param.callback)
    command._plain_placeholders = True
    return command


def _print_held(held: list[str], code: object) -> None:
    """The notes a command held (:data:`llmcount.sources.HELD_NOTES`), on stderr when it ended with success."""
    from .. import sources

    sources.HELD_NOTES = None
    if code in (0, None):
        for note in held:
            typer.echo(note, err=True)


class _OneLineErrors(typer.core.TyperGroup):
    """The root command, wherever it is entered from (the console script, ``python -m llmcount``, ``app()``,
    typer's ``CliRunner``): usage errors exit 2 and bad input exits 1, each as one line on stderr; never a
    traceback (set LLMCOUNT_DEBUG=1 to see one for an internal error)."""

    def list_commands(self, ctx) -> list[str]:
        """Every command in the order of :data:`COMMAND_MODULES`, whichever of them are imported already."""
        return listed(super().list_commands(ctx))

    def get_command(self, ctx, name: str):
        found = super().get_command(ctx, name)
        if found is None and name in COMMAND_MODULES:
            found = _load_command(name)
            self.commands[name] = found
        return found if found is None else plain_placeholders(found)

    def format_commands(self, ctx, formatter) -> None:
        """The command list of ``--help``: a command not imported yet by the summary read from its module's source
        (its docstring, as click shortens it), so that listing the commands imports none of them."""
        names = [name for name in self.list_commands(ctx) if name in self.commands or name in COMMAND_MODULES]
        if not names:
            return
        rows = []
        for name in names:
            if name in self.commands:
                if not self.commands[name].hidden:
                    rows.append((name, summary(self.commands[name].help or "")))
            else:
                rows.append((name, summary(_summaries().get(name, ""))))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        args = list(sys.argv[1:] if args is None else args)
        from .. import sources

        sources.HELD_NOTES = held = []  # notes on the input, printed only when the command succeeds
        _COMMAND[0] = f"llmcount {args[0]}" if args and args[0] in COMMAND_MODULES else "llmcount"
        try:
            quick = _quick_count(args)
            code = quick() if quick else super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            _print_held(held, code)
        except SystemExit as exc:
            _print_held(held, exc.code)
            raise
        except click.NoArgsIsHelpError as exc:
            typer.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message(), err=True)
            sys.exit(2)
        except click.UsageError as exc:
            typer.echo(f"llmcount: error: {one_line(usage_message(exc, args))}", err=True)
            sys.exit(2)
        except click.ClickException as exc:
            typer.echo(f"llmcount: error: {one_line(' '.join(exc.format_message().split()))}", err=True)
            sys.exit(exc.exit_code)
        except OptionError as exc:  # an option's value refused by our own parser: a usage error, as click's
            typer.echo(f"llmcount: error: {one_line(with_help(str(exc)))}", err=True)
            sys.exit(2)
        except LlmcountError as exc:
            typer.echo(f"llmcount: error: {one_line(str(exc))}", err=True)
            sys.exit(1)
        except (KeyboardInterrupt, typer.Abort):
            sys.exit(130)
        except BrokenPipeError:  # the reader stopped reading: the console entry point ends quietly (_pipes)
            raise
        except Exception as exc:
            if os.environ.get("LLMCOUNT_DEBUG"):
                raise
            detail = " ".join(str(exc).split())[:300]
            message = f"llmcount: internal error: {type(exc).__name__}: {detail} (a bug; please report it)"
            typer.echo(one_line(message), err=True)
            sys.exit(1)
        finally:
            sources.HELD_NOTES = None  # refused: its notes are dropped; the library (api) prints its own at once
        code = code if isinstance(code, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code


_QUICK = ("count", "memory")  # the commands whose module has a fast path (``_quick_<command>``)


def _quick_count(args: list[str]):
    """The fast path of ``count MODEL... [--json | --csv | --jsonl]`` (the count module's) or of ``memory MODEL`` with
    the options of :func:`llmcount.cli.costs._quick_memory`, or None (imported by name, as the lazy loader imports
    every command module, so that this module imports no command module)."""
    if len(args) < 2 or args[0] not in _QUICK:
        return None
    module = importlib.import_module(f"{__package__}.{COMMAND_MODULES[args[0]]}")
    return getattr(module, f"_quick_{args[0]}")(args)


app = typer.Typer(
    cls=_OneLineErrors,
    name="llmcount",
    help="Exact symbolic parameter counts of LLMs, from their Hugging Face config.json.\n\n" + ACTIVATED_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every command
)


_CONTROL = CONTROL  # a message's control characters as escapes (errors.CONTROL): one line, inert in a terminal


LONG_WORD = 240  # a word of a message longer than this (a value typed by mistake, 20,000 x's) is shortened


def one_line(message: str) -> str:
    """``message`` on one line, control characters escaped, each overlong word kept by its head and its tail
    (a path's file name stays whole)."""
    words = message.translate(_CONTROL).split(" ")
    return " ".join(w if len(w) <= LONG_WORD else f"{w[:160]}…{w[-60:]}" for w in words)


def fail(message: str) -> typer.Exit:
    """A refused input: one line on stderr, exit 1. Called while an OptionError is handled (a command's ``except
    LlmcountError: raise fail(str(exc))`` around an option's parser), it is a usage error: exit 2, naming the help to
    read, as click reports a value its own types refuse."""
    if isinstance(sys.exc_info()[1], OptionError):
        return usage_error(with_help(message))
    typer.echo(f"llmcount: error: {one_line(message)}", err=True)
    return typer.Exit(1)


_COMMAND = ["llmcount"]
"""The command being run (``llmcount memory``), set by the root command's main: where a usage error's line points."""


def with_help(message: str) -> str:
    """``message`` and where to read the command's options, as click's usage errors end."""
    return f"{message} (see `{_COMMAND[0]} --help`)"


def usage_error(message: str) -> typer.Exit:
    """A wrong combination of options: one line on stderr, exit 2 (as click's usage errors)."""
    typer.echo(f"llmcount: error: {one_line(message)}", err=True)
    return typer.Exit(2)


def print_json(data: object) -> None:
    """``data`` as JSON in UTF-8: a name that is not UTF-8 (a file name's undecodable bytes) as ``\\udcXX`` escapes."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8"))


def terminal_width() -> int:
    """COLUMNS if set, else the terminal's width, else 80 (a pipe or a file)."""
    return shutil.get_terminal_size((80, 24)).columns


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"llmcount {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", help="Print the version and exit.", is_eager=True, callback=_print_version),
    ] = False,
) -> None:
    # No docstring: the app's help above is the one `llmcount --help` prints.
    pass


# Each command lives in the module of its subject, which registers it on `app` when imported: a module is imported
# only when one of its commands runs (or is completed, or its --help is asked for), so that `llmcount --help`
# imports none of them and `llmcount count` only its own, and nothing heavy (sympy, torch, numpy, matplotlib).
COMMAND_MODULES: dict[str, str] = {
    "count": "count",
    "formula": "count",
    "list": "count",
    "scan": "count",
    "approx": "analysis",
    "check": "analysis",
    "compare": "analysis",
    "solve": "analysis",
    "sweep": "analysis",
    "flops": "costs",
    "memory": "costs",
    "verify": "costs",
    "mfu": "costs",
    "speed": "speed",
    "fit": "costs",
    "completion": "shell",
    "writeup": "writeup",
    "chart": "writeup",
}
"""Command name -> the module of this package that registers it."""


def _registered(name: str):
    """The CommandInfo registered on `app` under ``name``, or None."""
    for info in app.registered_commands:
        if (info.name or typer.main.get_command_name(info.callback.__name__)) == name:
            return info
    return None


def _load_command(name: str):
    """The click command ``name``, its module imported now."""
    import importlib

    importlib.import_module(f"{__package__}.{COMMAND_MODULES[name]}")
    info = _registered(name)
    if info is None:  # pragma: no cover - COMMAND_MODULES names a module that does not register it
        raise LookupError(f"{__package__}.{COMMAND_MODULES[name]} registers no command {name!r}")
    return typer.main.get_command_from_info(
        info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
    )


def load_commands() -> list[str]:
    """Import every command module (for what lists the commands with their options: docs, completion, tests);
    the names of all commands, in the order ``--help`` lists them."""
    for name in COMMAND_MODULES:
        if _registered(name) is None:
            _load_command(name)
    return listed(
        [info.name or typer.main.get_command_name(info.callback.__name__) for info in app.registered_commands]
    )


def listed(registered: list[str]) -> list[str]:
    """The commands in the order of :data:`COMMAND_MODULES` (not the order their modules happened to be imported
    in), then any registered command it does not name."""
    return [*COMMAND_MODULES, *(name for name in registered if name not in COMMAND_MODULES)]


@functools.cache
def _summaries() -> dict[str, str]:
    """Each command's docstring as its module's source states it, read with ``ast`` (the module is not imported):
    a function decorated ``@app.command()`` (or ``@app.command(name=...)``); read once per process (``--help`` lists
    every command)."""
    import ast
    import importlib.util

    found: dict[str, str] = {}
    for module in dict.fromkeys(COMMAND_MODULES.values()):
        spec = importlib.util.find_spec(f"{__package__}.{module}")
        if spec is None or spec.origin is None:
            continue
        with open(spec.origin, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                call = decorator if isinstance(decorator, ast.Call) else None
                if call is None or ast.unparse(call.func) != "app.command":
                    continue
                named = [k.value.value for k in call.keywords if k.arg == "name" and isinstance(k.value, ast.Constant)]
                name = named[0] if named else typer.main.get_command_name(node.name)
                found[name] = ast.get_docstring(node) or ""
    return found


def usage_message(exc: click.UsageError, args: list[str]) -> str:
    """A click usage error as one line: the message, a hint for a value that looks like an option, the help."""
    message = " ".join(exc.format_message().split())
    if isinstance(exc, click.NoSuchOption):
        at = next((i for i, a in enumerate(args) if a.startswith(exc.option_name)), None)
        token = exc.option_name if at is None else args[at]
        if not re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", token):  # -2*d, -(d+1): a value, not an option name
            example = shlex.join(["llmcount", *args[:at], "--", token]) if at == len(args) - 1 else f"... -- {token}"
            message += f"; if {token!r} is a value, put -- before it: {example}"
    command = exc.ctx.command_path if exc.ctx is not None else "llmcount"
    return f"{message} (see `{command} --help`)"


@_pipes.quiet_broken_pipe
def main(args: list[str] | None = None) -> None:
    """Console entry point; the root command (`_OneLineErrors`) turns every error into one line and an exit code.
    Libraries' warnings (numpy, matplotlib, the Hub client) are silenced here, at the boundary: what matters in one is
    checked and reported by name where it arises (a sweep's zero denominator), never as a library's stderr text."""
    import warnings

    if os.environ.get("_LLMCOUNT_COMPLETE"):  # the shell asks for completions: every command's options
        load_commands()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        typer.main.get_command(app).main(args, prog_name="llmcount")
