"""Analysis commands: approx, check, compare, solve, sweep."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import LlmcountError
from ..plain import fit_lines
from .app import app, fail, print_json, terminal_width
from .options import SPEC_HELP, ActivatedOption, JsonOption, ModelArgument

SUBJECT_HELP = "A family (e.g. qwen3) or a model: " + SPEC_HELP
SET_HELP = "SYMBOL=VALUE: a number (N=32) or a relation (d_ff=8/3 d, h_kv=h/4). Repeatable."
FROM_HELP = "A model whose config gives every size not set with --set."


def _split(items: list[str] | None) -> list[str]:
    """Repeated options, each possibly a comma-separated list."""
    return [name.strip() for item in items or [] for name in item.split(",") if name.strip()]


@app.command()
def approx(
    spec: Annotated[str, typer.Argument(help=SUBJECT_HELP, metavar="MODEL|FAMILY")],
    assume: Annotated[
        list[str] | None,
        typer.Option("--assume", help="A ratio instead of the config's, e.g. d_ff=4d or h_kv=h. Repeatable."),
    ] = None,
    over: Annotated[
        list[str] | None, typer.Option("--over", help="Also show the error on these models (comma-separated).")
    ] = None,
    activated: ActivatedOption = False,
    no_embedding: Annotated[
        bool, typer.Option("--no-embedding", help="Leave the embedding out of the total (and of the exact count).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Leading term of the count per layer and in total as d grows, under the config's structural ratios
    (d_ff/d, h·h_d/d, h_kv/h, ...), with the exact remainder, the error and the asymptotic shares.

    Example: llmcount approx qwen3-8b --over qwen3-32b,qwen3-0.6b
    """
    from ..analysis import subject
    from ..analysis.approx import approximate
    from ..analysis.parse import Vocabulary, parse_setting
    from ..renderers import render
    from ..sources import load

    try:
        derivation, model = subject(spec)
        known = Vocabulary.of(
            derivation.symbols, model.name if model else f"the {derivation.architecture.title} formula"
        )
        settings = [parse_setting(text, "--assume", known=known) for text in assume or []]
        if any(not _split([item]) for item in over or []):  # an empty --over is refused, not read as left out
            raise LlmcountError("--over: name a model (a preset, config or folder; several comma-separated)")
        others = [load(name) for name in _split(over)]
        result = approximate(derivation, model, settings, others, activated=activated, embedding=not no_embedding)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_json:
        print_json(result.data())
    else:
        typer.echo(render("analysis_approx.txt.j2", a=result).rstrip())


@app.command()
def check(
    spec: ModelArgument,
    formula: Annotated[
        str,
        typer.Argument(
            help="Your formula as you write it: 12 N d^2, 12·N·d², 2(d+1), 12*N*d**2 (symbols: see `glossary`)."
        ),
    ],
    activated: ActivatedOption = False,
    as_json: JsonOption = False,
) -> None:
    """Check a hand-written formula against the exact count: the error, and what it leaves out, by component.

    Example: llmcount check qwen3-8b "2 V d + 11.5 d^2 N"
    """
    from ..analysis.check import check as check_formula
    from ..renderers import render
    from ..sources import load

    try:
        result = check_formula(load(spec), formula, activated=activated)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_json:
        print_json(result.data())
    else:
        typer.echo(fit_lines(render("analysis_check.txt.j2", c=result).rstrip(), terminal_width()))


@app.command()
def compare(
    specs: Annotated[list[str], typer.Argument(help="Two or more models: " + SPEC_HELP, metavar="MODEL...")],
    components: Annotated[bool, typer.Option("--components", help="One row per component, not per group.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Several models side by side: sizes, parameters by group (or component), totals and shares.

    Example: llmcount compare qwen3-8b llama-3-8b mistral-7b
    """
    from ..analysis.compare import compare as compare_models
    from ..renderers import render
    from ..sources import load

    try:
        if len(specs) < 2:
            raise LlmcountError("compare needs at least two models")
        result = compare_models([load(spec) for spec in specs])
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_json:
        print_json(result.data())
    else:
        rendered = render("analysis_compare.txt.j2", cmp=result, by_component=components, width=terminal_width())
        typer.echo(rendered.rstrip())


@app.command()
def solve(
    spec: Annotated[str, typer.Argument(help=SUBJECT_HELP, metavar="FAMILY|MODEL")],
    target: Annotated[str, typer.Option("--target", help="The count to reach: 7B, 1.5T, 6.7e9, 6738415616.")],
    for_: Annotated[str, typer.Option("--for", help="The symbol to solve for, e.g. d or N.")],
    set_: Annotated[list[str] | None, typer.Option("--set", help=SET_HELP)] = None,
    from_: Annotated[str | None, typer.Option("--from", help=FROM_HELP)] = None,
    multiple_of: Annotated[int, typer.Option("--multiple-of", help="Candidates are multiples of this.")] = 1,
    activated: ActivatedOption = False,
    as_json: JsonOption = False,
) -> None:
    """Solve for one size given a target count: the exact real solution, and the nearest whole values
    (or multiples of --multiple-of) with the exact count each gives.

    Example: llmcount solve llama --target 7B --for d --set N=32 --set V=32000 --set d_ff=8/3*d --set h_kv=h
    """
    from ..analysis import subject_and_base
    from ..analysis.parse import Vocabulary, parse_count, parse_setting
    from ..analysis.solve import solve as solve_for
    from ..renderers import render

    try:
        derivation, base, title = subject_and_base(spec, from_)
        known = Vocabulary.of(derivation.symbols, title)
        settings = [parse_setting(text, "--set", known=known) for text in set_ or []]
        count = parse_count(target, "--target")
        result = solve_for(derivation, for_, count, settings, base, activated, multiple_of, title)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_json:
        print_json(result.data())
    else:
        typer.echo(fit_lines(render("analysis_solve.txt.j2", s=result).rstrip(), terminal_width()))


@app.command()
def sweep(
    spec: Annotated[str, typer.Argument(help=SUBJECT_HELP, metavar="FAMILY|MODEL")],
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="SYMBOL=START:STOP:STEP (stop included), SYMBOL=A,B,C, a number or a relation."),
    ] = None,
    from_: Annotated[str | None, typer.Option("--from", help=FROM_HELP)] = None,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV: the swept symbols, total, activated.")] = False,
    as_json: JsonOption = False,
    force: Annotated[bool, typer.Option("--force", help="Evaluate a grid of more than 10^7 rows.")] = False,
) -> None:
    """Evaluate the exact total and activated counts over a grid of sizes; the rest from a base config.

    Example: llmcount sweep qwen3 --set d=1024:8192:1024 --set N=24,32,48 --from qwen3-8b --csv
    """
    if as_csv:  # no formula shown: the compiled counts, without sympy, when they take this grid
        from .. import plain_sweep
        from ..counting import Fallback

        try:
            header, table = plain_sweep.rows(spec, from_, set_ or [], force)
        except Fallback:
            pass
        else:
            plain_sweep.write_csv(header, table, sys.stdout)
            return
    from ..analysis import subject_and_base
    from ..analysis.parse import Vocabulary, parse_setting
    from ..analysis.sweep import sweep as sweep_grid
    from ..analysis.sweep import write_csv
    from ..renderers import render

    try:
        derivation, base, title = subject_and_base(spec, from_)
        known = Vocabulary.of(derivation.symbols, title)
        settings = [parse_setting(text, "--set", grid=True, known=known) for text in set_ or []]
        result = sweep_grid(derivation, settings, base, force=force, title=title)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_csv:
        write_csv(result, sys.stdout)
    elif as_json:
        print_json(result.data())
    else:
        typer.echo(render("analysis_sweep.txt.j2", sweep=result).rstrip())
