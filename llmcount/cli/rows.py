"""Many models at once, as ``count`` of several models and ``scan`` of a folder print them: one line per model on
stdout; each bad config one line on stderr; exit 1 at the end if any failed."""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING

import typer

from .app import one_line, print_json, terminal_width, usage_error

if TYPE_CHECKING:
    from ..batch import Result


class Rows(str, Enum):
    text = "text"
    csv = "csv"
    jsonl = "jsonl"
    json = "json"


def output_format(as_json: bool, as_csv: bool, jsonl: bool) -> Rows:
    chosen = [name for name, on in (("--json", as_json), ("--csv", as_csv), ("--jsonl", jsonl)) if on]
    if len(chosen) > 1:
        raise usage_error(f"{' and '.join(chosen)} cannot be combined; give one output format")
    return Rows(chosen[0].lstrip("-")) if chosen else Rows.text


def print_rows(results: Iterable[Result], fmt: Rows, extra: tuple[str, ...] = ()) -> None:
    """Each model's row as soon as it is counted (CSV, JSON lines), or all of them at the end (a text table,
    a JSON array); each failure one line on stderr as it happens; a summary and exit 1 if any failed. ``extra``:
    more CSV columns (a result's ``stored`` values; JSON carries them whenever a result has them)."""
    from ..batch import ROW_FIELDS, csv_line, jsonl_line, row

    done, failed, kept = 0, 0, []
    fields = ROW_FIELDS + extra
    if fmt is Rows.csv:
        typer.echo(csv_line(fields))
    for result in results:
        done += 1
        if result.model is None:
            failed += 1
            typer.echo(f"llmcount: error: {one_line(result.error)}", err=True)
            continue
        if fmt is Rows.csv:
            data = {**row(result.model), **(result.stored or {})}
            typer.echo(csv_line([data.get(key) for key in fields]))
        elif fmt is Rows.jsonl:
            typer.echo(jsonl_line({**row(result.model), **(result.stored or {})}))
        else:
            kept.append(result)
    if fmt is Rows.json:
        print_json([{**_count_data(r.model), **(r.stored or {})} for r in kept])
    elif fmt is Rows.text and kept:
        from ..renderers.rows import text_table

        typer.echo(text_table([row(r.model) for r in kept], terminal_width()))
    if failed:
        typer.echo(f"llmcount: {failed} of {done} configs failed", err=True)
        raise typer.Exit(1)


def _count_data(model) -> dict:
    """``count --json`` of one model: by the compiled path when it holds the formula, else the renderer's."""
    from ..counting import Counted, Fallback

    if isinstance(model, Counted):
        try:
            return model.count_data()
        except Fallback:
            model = model.full()
    from ..renderers import count_data

    return count_data(model)
