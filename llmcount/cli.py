"""The command line: resolve the input, call the library, print. Errors are one line on stderr."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from enum import Enum
from typing import Annotated, Any

import typer

from .errors import LlmcountError

try:  # typer >= 0.26 vendors click; main() needs the exceptions it raises
    from typer._click import exceptions as click
except ImportError:  # pragma: no cover - older typer, on the real click
    from click import exceptions as click

ACTIVATED_HELP = (
    "Activated (MoE) = every parameter except the routed experts, plus k/n of the routed experts; "
    "the router and shared experts count fully. For dense models activated = total."
)


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
    command._plain_placeholders = True
    return command


class _OneLineErrors(typer.core.TyperGroup):
    """The root command, wherever it is entered from (the console script, ``python -m llmcount``, ``app()``,
    typer's ``CliRunner``): usage errors exit 2 and bad input exits 1, each as one line on stderr; never a
    traceback (set LLMCOUNT_DEBUG=1 to see one for an internal error)."""

    def list_commands(self, ctx) -> list[str]:
        names = super().list_commands(ctx)
        return names + [name for name in COMMAND_MODULES if name not in names]

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
        try:
            quick = _quick_count(args)
            code = quick() if quick else super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.NoArgsIsHelpError as exc:
            typer.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message(), err=True)
            sys.exit(2)
        except click.UsageError as exc:
            typer.echo(f"llmcount: error: {one_line(usage_message(exc, args))}", err=True)
            sys.exit(2)
        except click.ClickException as exc:
            typer.echo(f"llmcount: error: {one_line(' '.join(exc.format_message().split()))}", err=True)
            sys.exit(exc.exit_code)
        except LlmcountError as exc:
            typer.echo(f"llmcount: error: {one_line(str(exc))}", err=True)
            sys.exit(1)
        except (KeyboardInterrupt, typer.Abort):
            sys.exit(130)
        except Exception as exc:
            if os.environ.get("LLMCOUNT_DEBUG"):
                raise
            detail = " ".join(str(exc).split())[:300]
            message = f"llmcount: internal error: {type(exc).__name__}: {detail} (a bug; please report it)"
            typer.echo(one_line(message), err=True)
            sys.exit(1)
        code = code if isinstance(code, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code


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

SPEC_HELP = "A bundled preset (see `llmcount list`), a config.json, a folder holding one, or a Hub id."

# The arguments and options many commands share, declared once.
ModelArgument = Annotated[str, typer.Argument(help=SPEC_HELP, metavar="MODEL")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
ActivatedOption = Annotated[
    bool, typer.Option("--activated", help="The activated count (MoE), as `llmcount --help` defines it.")
]
CsvOption = Annotated[
    bool, typer.Option("--csv", help="One CSV row per model with a header: model,family,source,total,...")
]
JsonlOption = Annotated[bool, typer.Option("--jsonl", help="One JSON object per line, one line per model.")]
DiscoverOption = Annotated[
    bool,
    typer.Option(
        "--discover",
        help="A model_type with no bundled record: derive one from transformers' model code (needs torch and"
        " transformers; checked exact against them, cached, and said so on stderr).",
    ),
]
RediscoverOption = Annotated[
    bool,
    typer.Option(
        "--rediscover",
        help="As --discover, deriving the record again even when one (or the reason a discovery failed) is cached.",
    ),
]


class Format(str, Enum):
    text = "text"
    markdown = "markdown"
    latex = "latex"


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(32), 127]} | {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): " "}
"""Control characters in a message (a file name with a newline, an escape sequence in a config value) as escapes:
the message stays one line and cannot drive the terminal."""


LONG_WORD = 240  # a word of a message longer than this (a value typed by mistake, 20,000 x's) is shortened


def one_line(message: str) -> str:
    """``message`` on one line, control characters escaped, each overlong word kept by its head and its tail
    (a path's file name stays whole)."""
    words = message.translate(_CONTROL).split(" ")
    return " ".join(w if len(w) <= LONG_WORD else f"{w[:160]}…{w[-60:]}" for w in words)


def fail(message: str) -> typer.Exit:
    typer.echo(f"llmcount: error: {one_line(message)}", err=True)
    return typer.Exit(1)


def print_json(data: object) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _print_version(value: bool) -> None:
    if value:
        from . import __version__

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


@app.command()
def count(
    specs: Annotated[
        list[str],
        typer.Argument(help=SPEC_HELP + " Several, or - for a config.json on stdin.", metavar="MODEL"),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object (a list of them for several).")] = False,
    as_csv: CsvOption = False,
    jsonl: JsonlOption = False,
    discover: DiscoverOption = False,
    rediscover: RediscoverOption = False,
    mtp: Annotated[
        bool,
        typer.Option(
            "--mtp",
            help="Also count the multi-token-prediction (MTP) module the checkpoint stores and transformers does not"
            " build (DeepSeek-V3, GLM-4.5, Qwen3-Next ...; engines load it for speculative decoding).",
        ),
    ] = False,
    quant: Annotated[
        str | None,
        typer.Option(
            "--quant",
            help="Also the bytes as a quantisation scheme stores the weights (the config's quantization_config is "
            "read without it): fp8-block, mxfp4, gptq, awq, nf4, nvfp4, mlx ..., a llama.cpp file type (q4_k_m), "
            "or none.",
        ),
    ] = None,
    bits: Annotated[
        str | None, typer.Option("--bits", help="With --quant gptq, awq or mlx: bits per weight.", metavar="INT")
    ] = None,
    group_size: Annotated[
        str | None, typer.Option("--group-size", help="With --quant gptq, awq or mlx: the group size.", metavar="INT")
    ] = None,
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype", help="With a quantisation scheme: the dtype of what it leaves alone (else the config's)."
        ),
    ] = None,
) -> None:
    """Count the parameters of a model, per component, exactly; of several models, one row each.

    A quantised checkpoint's config (or --quant) adds the stored bytes under the scheme, apart from the
    parameters, which stay the model's own.

    With several models (or --csv, --jsonl) a bad config is one line on stderr, the others are
    still counted, and the exit status is 1 at the end.

    Example: llmcount count qwen3-32b

    Example: llmcount count qwen3-8b llama-3-8b mistral-7b --csv

    Example: cat config.json | llmcount count -

    Example: llmcount count Qwen3-8B-Q4_K_M.gguf

    Example: llmcount count some-new-arch/config.json --discover

    Example: llmcount count deepseek-v3 --mtp

    Example: llmcount count qwen3-8b --quant awq --bits 4 --group-size 128
    """
    from .cli_batch import Rows, output_format, print_rows, terminal_width

    fmt = output_format(as_json, as_csv, jsonl)
    scheme_options = quant is not None or bits is not None or group_size is not None or dtype is not None
    if mtp and (len(specs) > 1 or fmt in (Rows.csv, Rows.jsonl)):
        raise fail("--mtp counts one model at a time (without --csv or --jsonl)")
    if len(specs) > 1 or fmt in (Rows.csv, Rows.jsonl):
        from .batch import count_all
        from .quant.count import STORED_FIELDS, check_options, with_stored

        try:
            check_options(quant, bits, group_size, dtype)
        except LlmcountError as exc:
            raise fail(str(exc)) from None
        results = with_stored(count_all(specs, discover or rediscover, rediscover), quant, bits, group_size, dtype)
        print_rows(results, fmt, STORED_FIELDS if quant not in (None, "none") else ())
        return
    from .gguf_file import check_header

    try:
        check_header(specs[0])  # a hostile GGUF file is refused before the records (and sympy) load
        gguf = specs[0].lower().endswith(".gguf")
        if gguf and scheme_options:
            raise LlmcountError("--quant: a GGUF file's tensors are stored in its own types (memory FILE shows them)")
        from .quant import count as stored_count  # imports no sympy unless a scheme is read
        from .sources import resolve

        resolved = resolve(specs[0])
        wants_stored = not gguf and (scheme_options or stored_count.declares(resolved[2]))
        model = None
        if not (discover or rediscover or mtp or gguf or wants_stored):
            model = _count_compiled(specs[0], as_json, resolved)
            if isinstance(model, str):
                typer.echo(model)
                return
        from .renderers import count_data, render_count
        from .sources import load

        model = model or load(specs[0], discover or rediscover, None, resolved, rediscover)
        stored = None
        if wants_stored:
            stored = stored_count.summary(model, resolved[2], resolved[1], quant, bits, group_size, dtype)
            if stored is not None and mtp:
                stored = stored_count.with_note(stored, "the MTP module counted above is not in these bytes")
        if gguf:  # a GGUF file: its tensors' count beside the formula's
            from .cli_gguf import count_gguf

            output = count_gguf(specs[0], model, as_json, terminal_width())
        elif as_json:
            data = count_data(model, mtp)
            if stored is not None:
                data["stored"] = stored_count.data(stored)
            output = json.dumps(data, indent=2)
        else:
            output = render_count(model, terminal_width(), mtp).rstrip()
            if stored is not None:
                output += "\n\n" + stored_count.render(stored, terminal_width())
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    typer.echo(output)


_QUICK_FLAGS = {"--json": "as_json", "--csv": "as_csv", "--jsonl": "jsonl"}


def _quick_count(args: list[str]):
    """``count MODEL... [--json | --csv | --jsonl]`` as a call of :func:`count` (returning its exit status), for the
    root command to make without click's parsing, whose typer builds a pydantic validator for every option (more CPU
    than the count itself); None for any other command line, which click parses (a MODEL starting with ``-``, any
    other option, ``--help``)."""
    if len(args) < 2 or args[0] != "count":
        return None
    flags = [arg for arg in args[1:] if arg.startswith("-")]
    specs = [arg for arg in args[1:] if not arg.startswith("-")]
    if not specs or "" in specs or len(flags) > 1 or not set(flags) <= _QUICK_FLAGS.keys():
        return None

    def run() -> int:
        try:
            count(specs, **{_QUICK_FLAGS[flag]: True for flag in flags})
        except typer.Exit as exc:
            return exc.exit_code
        return 0

    return run


def _count_compiled(spec: str, as_json: bool, resolved: tuple[str, str, Any]):
    """``count``'s output for one model by the compiled path (no sympy), a str; or, when the compiled path does not
    take it, the Model the sympy path read (the config is read once, its note said once)."""
    from .counting import Counted, Fallback
    from .sources import load_counted

    model = load_counted(spec, resolved=resolved)
    if not isinstance(model, Counted):
        return model
    try:
        if as_json:
            return json.dumps(model.count_data(), indent=2)
        from .cli_batch import terminal_width
        from .plain import render_count

        return render_count(model, terminal_width()).rstrip()
    except Fallback:
        return model.full()


@app.command()
def formula(
    spec: Annotated[str, typer.Argument(help="A family (e.g. qwen3) or a model: " + SPEC_HELP, metavar="FAMILY|MODEL")],
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    activated: ActivatedOption = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print total, activated and per_layer as sympy strings and LaTeX.")
    ] = False,
    flops: Annotated[
        bool, typer.Option("--flops", help="The forward FLOPs formula (in S and B) instead of the parameters.")
    ] = False,
    discover: DiscoverOption = False,
    part: Annotated[
        str,
        typer.Option(
            "--part", help="Of a multimodal model: language (default), vision (the tower) or projector.", metavar="PART"
        ),
    ] = "language",
) -> None:
    """Print the symbolic parameter formula of a family, or of the switches a model's config sets.

    Example: llmcount formula qwen3 --format latex

    Example: llmcount formula qwen2_5_vl --part vision
    """
    from .formulas import records
    from .formulas.derivation import Derivation
    from .renderers import formula_data, render_formula
    from .sources import load

    roles = {"language": "language model", "vision": "vision tower", "projector": "projector"}
    if part not in roles:
        from .cli_batch import usage_error

        raise usage_error(f"--part: {part[:40]!r} is not one of {', '.join(roles)}")
    try:
        family, outer = records.family(spec), records.composite(spec)
        if family is None and outer is not None:  # a multimodal type: the formula of one of its parts
            name = {"language": outer.text, "vision": outer.vision, "projector": outer.projector}[part]
            if not name and part == "projector" and outer.vision:
                raise LlmcountError(f"--part projector: {spec}'s vision tower holds its projector (--part vision)")
            if not name:
                raise LlmcountError(f"--part {part}: {spec} has no {roles[part]} record (llmcount list)")
            family = records.family(name) if part == "language" else records.tower(name)
        elif part != "language" and family is not None:
            raise LlmcountError(f"--part {part}: {spec} is a language model's family; --part takes a multimodal type")
        if family is not None:
            derivation, title = Derivation(family), family.title
            if outer is not None:
                scope = "the language model only" if part == "language" and not outer.whole else roles[part]
                title = f"{outer.title}, {scope} ({family.name})"
        else:
            model = load(spec, discover)
            derivation, title = model.derivation, model.name
            if part != "language":
                chosen = [p for p in model.parts if p.role == roles[part]]
                if not chosen:
                    raise LlmcountError(f"--part {part}: {spec} has no {roles[part]} that llmcount counts")
                derivation, title = chosen[0].model.derivation, chosen[0].model.name
        if flops:
            from .cli_costs import flops_formula

            output = flops_formula(derivation, fmt.value, title, as_json)
        elif as_json:
            output = json.dumps(formula_data(derivation), indent=2)
        else:
            output = render_formula(derivation, fmt.value, activated=activated, title=title).rstrip()
    except LlmcountError as exc:
        message = str(exc)
        if message.startswith("unknown preset"):
            message += f"; or a family: {', '.join(records.names())}"
        raise fail(message) from None
    if not as_json and fmt is Format.text:
        from .cli_batch import terminal_width
        from .renderers.fit import fit_lines

        output = fit_lines(output, terminal_width())
    typer.echo(output)


@app.command(name="list")
def list_(
    as_json: Annotated[bool, typer.Option("--json", help="Print families and presets as JSON.")] = False,
) -> None:
    """List the supported families, the multimodal configs whose language model they count, and the bundled presets
    with their published sizes.

    Example: llmcount list
    """
    from .formulas.records import composites, families
    from .presets import presets
    from .renderers import render

    if as_json:
        print_json(
            {
                "families": [{"name": a.name, "title": a.title, "kind": a.kind, "moe": a.is_moe} for a in families()],
                "composites": [
                    {
                        "name": c.name,
                        "title": c.title,
                        "text": c.text,
                        **({"vision": c.vision, "projector": c.projector or None} if c.vision else {}),
                        "not_counted": c.left_out,
                    }
                    for c in composites()
                ],
                "presets": [
                    {"name": p.name, "hub_id": p.hub_id, "model": p.model, "published": p.published, "source": p.source}
                    for p in presets().values()
                ],
            }
        )
        return
    from .cli_batch import terminal_width

    rendered = render(
        "list.txt.j2", families=families(), composites=composites(), presets=presets().values(), width=terminal_width()
    )
    typer.echo(rendered.rstrip())


# The commands of the other subjects live in their own modules, which register them on `app` when imported: each
# module is imported only when one of its commands runs (or is completed, or its --help is asked for), so that
# `llmcount --help` and `llmcount count` import none of them and nothing heavy (sympy, torch, numpy, matplotlib).
COMMAND_MODULES: dict[str, str] = {
    "scan": "cli_batch",
    "approx": "cli_analysis",
    "check": "cli_analysis",
    "compare": "cli_analysis",
    "solve": "cli_analysis",
    "sweep": "cli_analysis",
    "flops": "cli_costs",
    "memory": "cli_costs",
    "verify": "cli_costs",
    "mfu": "cli_glance",
    "speed": "cli_speed",
    "fit": "cli_serving",
    "completion": "cli_shell",
    "writeup": "cli_writeup",
    "chart": "cli_writeup",
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
        raise LookupError(f"llmcount.{COMMAND_MODULES[name]} registers no command {name!r}")
    return typer.main.get_command_from_info(
        info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
    )


def load_commands() -> list[str]:
    """Import every command module (for what lists the commands with their options: docs, completion, tests);
    the names of all commands, in the order ``--help`` lists them."""
    for name in COMMAND_MODULES:
        if _registered(name) is None:
            _load_command(name)
    return [info.name or typer.main.get_command_name(info.callback.__name__) for info in app.registered_commands]


def _summaries() -> dict[str, str]:
    """Each command's docstring as its module's source states it, read with ``ast`` (the module is not imported):
    a function decorated ``@app.command()`` (or ``@app.command(name=...)``)."""
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


from . import _pipes  # noqa: E402


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

    if os.environ.get("_LLMCOUNT_COMPLETE"):  # the shell asks for completions (cli_shell): every command's options
        load_commands()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        typer.main.get_command(app).main(args, prog_name="llmcount")
