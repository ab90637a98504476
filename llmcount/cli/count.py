"""Counting commands: count (one model or many), formula, list and scan. Each resolves its input, calls the library,
prints; errors are one line on stderr."""

from __future__ import annotations

import json
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import LlmcountError
from .app import app, fail, print_json, terminal_width, usage_error
from .options import (
    SPEC_HELP,
    ActivatedOption,
    CsvOption,
    DiscoverOption,
    JsonlOption,
    RediscoverOption,
)

if TYPE_CHECKING:
    from ..formulas.derivation import Derivation


class Format(str, Enum):
    text = "text"
    markdown = "markdown"
    latex = "latex"


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
    from .rows import Rows, output_format, print_rows

    fmt = output_format(as_json, as_csv, jsonl)
    scheme_options = quant is not None or bits is not None or group_size is not None or dtype is not None
    if mtp and (len(specs) > 1 or fmt in (Rows.csv, Rows.jsonl)):
        raise fail("--mtp counts one model at a time (without --csv or --jsonl)")
    if len(specs) > 1 or fmt in (Rows.csv, Rows.jsonl):
        from ..batch import count_all
        from ..quant.count import STORED_FIELDS, check_options, with_stored

        try:
            check_options(quant, bits, group_size, dtype)
        except LlmcountError as exc:
            raise fail(str(exc)) from None
        results = with_stored(count_all(specs, discover or rediscover, rediscover), quant, bits, group_size, dtype)
        print_rows(results, fmt, STORED_FIELDS if quant not in (None, "none") else ())
        return
    from ..gguf_file import check_header

    try:
        check_header(specs[0])  # a hostile GGUF file is refused before the records (and sympy) load
        gguf = specs[0].lower().endswith(".gguf")
        if gguf and scheme_options:
            raise LlmcountError("--quant: a GGUF file's tensors are stored in its own types (memory FILE shows them)")
        from ..quant import count as stored_count  # imports no sympy unless a scheme is read

        if scheme_options:  # the options checked before the model is read: a refusal is the only line on stderr
            try:
                stored_count.check_options(quant, bits, group_size, dtype)
            except LlmcountError as exc:
                raise fail(str(exc)) from None
        from ..sources import resolve

        resolved = resolve(specs[0])
        wants_stored = not gguf and (scheme_options or stored_count.declares(resolved[2]))
        if wants_stored and quant is None:  # the config's own scheme read before the model (and its note on stderr)
            from ..quant.report import scheme_for

            scheme_for(resolved[2], resolved[1], None, None, None)
        model = None
        if not (discover or rediscover or gguf or wants_stored):
            model = _count_compiled(specs[0], as_json, resolved, mtp)
            if isinstance(model, str):
                typer.echo(model)
                return
        from ..renderers import count_data, render_count
        from ..sources import load

        model = model or load(specs[0], discover or rediscover, None, resolved, rediscover)
        stored = None
        if wants_stored:
            stored = stored_count.summary(model, resolved[2], resolved[1], quant, bits, group_size, dtype)
            if stored is not None and mtp:
                stored = stored_count.with_note(stored, "the MTP module counted above is not in these bytes")
        if gguf:  # a GGUF file: its tensors' count beside the formula's
            from .gguf import count_gguf

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


def _count_compiled(spec: str, as_json: bool, resolved: tuple[str, str, Any], mtp: bool = False):
    """``count``'s output for one model by the compiled path (no sympy), a str (``mtp``: the checkpoint's MTP module
    counted in); or, when the compiled path does not take it, the Model the sympy path read (the config is read once,
    its note said once)."""
    from ..counting import Counted, Fallback
    from ..sources import load_counted

    model = load_counted(spec, resolved=resolved)
    if not isinstance(model, Counted):
        return model
    try:
        if as_json:
            return json.dumps(model.count_data(mtp), indent=2)
        from ..plain import render_count

        return render_count(model, terminal_width(), mtp).rstrip()
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
            "--part",
            help="Of a multimodal model: language (default), vision (the tower), projector, or another part `count` "
            "shows (audio, audio_projector: a second tower and its projector; vq, vq_projector: Janus's).",
            metavar="PART",
        ),
    ] = "language",
) -> None:
    """Print the symbolic parameter formula of a family, or of the switches a model's config sets.

    Example: llmcount formula qwen3 --format latex

    Example: llmcount formula qwen2_5_vl --part vision
    """
    from ..formulas import records
    from ..formulas.derivation import Derivation
    from ..formulas.parts import part_roles
    from ..renderers import formula_data, render_formula
    from ..sources import load

    # the parts --part names: those of every composite (language, vision, projector, audio, vq, ...)
    roles = {"language": "language model", "vision": "vision tower", "projector": "projector"}
    for each in records.composites():
        roles |= part_roles(each)
    if part not in roles:
        raise usage_error(f"--part: {part[:40]!r} is not one of {', '.join(roles)}")
    try:
        family, outer = records.family(spec), records.composite(spec)
        if outer is not None and outer.text == spec:  # a flat multimodal config whose language model has its name
            family = None
        if family is None and outer is not None:  # a multimodal type: the formula of one of its parts
            from ..formulas.parts import part_records

            name = {"language": outer.text, **part_records(outer)}.get(part, "")
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
                wanted = {roles[part]}
                if part == "vision" and model.composite is not None:  # the first tower, an audio encoder's too
                    wanted.add(f"{model.composite.tower_config.split('_')[0]} tower")
                chosen = [p for p in model.parts if p.role in wanted]
                if not chosen:
                    raise LlmcountError(f"--part {part}: {spec} has no {roles[part]} that llmcount counts")
                derivation, title = chosen[0].model.derivation, chosen[0].model.name
        if flops:
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
        from ..renderers.fit import fit_lines

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
    from ..formulas.records import composites, families
    from ..presets import presets
    from ..renderers import render

    if as_json:
        print_json(
            {
                "families": [{"name": a.name, "title": a.title, "kind": a.kind, "moe": a.is_moe} for a in families()],
                "composites": [
                    {
                        "name": c.name,
                        "title": c.title,
                        "text": c.text,
                        **(
                            {"vision": c.vision or None, "projector": c.projector or None}
                            if c.vision or c.projector
                            else {}
                        ),
                        **(
                            {
                                "towers": [
                                    {"config": t.config, "tower": t.tower or None, "projector": t.projector or None}
                                    for t in c.towers
                                ]
                            }
                            if c.towers
                            else {}
                        ),
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
    rendered = render(
        "list.txt.j2", families=families(), composites=composites(), presets=presets().values(), width=terminal_width()
    )
    typer.echo(rendered.rstrip())


def flops_formula(derivation: Derivation, fmt: str, title: str, as_json: bool) -> str:
    """The output of ``formula --flops``: the family's forward FLOPs formula, rendered or as JSON."""
    from ..formulas.flops import Flops
    from ..renderers import flops_formula_data, render_flops_formula

    formula = Flops(derivation)
    if as_json:
        return json.dumps(flops_formula_data(formula), indent=2)
    return render_flops_formula(formula, fmt, title).rstrip()


@app.command()
def scan(
    folder: Annotated[str, typer.Argument(help="A folder of models, or a Hugging Face cache.", metavar="DIR")],
    as_csv: CsvOption = False,
    jsonl: JsonlOption = False,
    max_files: Annotated[
        int, typer.Option("--max-files", min=1, help="Read at most this many config.json files.")
    ] = 10_000,
    max_depth: Annotated[int, typer.Option("--max-depth", min=0, help="Descend at most this many folders.")] = 8,
) -> None:
    """Count every config.json below a folder, one row per model: in a Hugging Face cache
    (models--org--name/snapshots/*/config.json) the row is named org/name. Symlinked folders are
    followed once; hidden folders are skipped. A bad config is one line on stderr and the scan goes on.

    Example: llmcount scan ~/.cache/huggingface/hub --csv
    """
    from ..batch import Scan
    from .rows import output_format, print_rows

    fmt = output_format(False, as_csv, jsonl)
    try:
        walk = Scan(folder, max_files=max_files, max_depth=max_depth)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    found = 0

    def each():
        nonlocal found
        for result in walk.results():
            found += 1
            yield result

    try:
        print_rows(each(), fmt)
    finally:
        if walk.truncated:
            typer.echo(f"llmcount: warning: {folder}: {walk.truncated}", err=True)
    if not found:
        raise fail(f"{folder}: no config.json found")
