"""A model's counts and formula for a notebook cell: the ``_repr_markdown_`` and ``_repr_latex_`` of
``llmcount.load(...)``. The Markdown includes the formula template of ``llmcount formula -f markdown``."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..formulas.config import Model
from ..formulas.symbols import GLOSSARY
from ..sizes import gb_gib
from . import render
from .filters import escape


def markdown(model: Model) -> str:
    """Counts table, the config's values and the family's formula, in Markdown with $…$ math."""
    derivation = model.derivation
    glossary = [e for e in GLOSSARY if e.symbol in derivation.symbols and e.symbol.name in model.counts.values]
    return render(
        "notebook.md.j2",
        model=model,
        counts=model.counts,
        d=derivation,
        model_name=escape(model.name, "markdown"),
        source=escape(model.source, "markdown"),
        title=escape(model.name, "markdown"),
        activated=False,
        glossary=glossary,
    )


def latex(model: Model) -> str:
    """The total (and activated) formula in reader's order and its exact value, as display math."""
    return render("notebook.tex.j2", model=model, counts=model.counts, d=model.derivation)


# --- every API result as a table: _repr_html_ and _repr_markdown_ (llmcount/shown.py) -----------------------------


@dataclass(frozen=True)
class Table:
    """A caption, a header and rows of text; each cell is escaped for the format it is written in."""

    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    align: str  # "l" or "r" per column
    note: str = ""

    def html(self) -> str:
        def cells(tag: str, row: tuple[str, ...]) -> str:
            return "".join(
                f'<{tag} style="text-align: {"right" if a == "r" else "left"}">{html.escape(c)}</{tag}>'
                for c, a in zip(row, self.align, strict=True)
            )

        body = "".join(f"<tr>{cells('td', row)}</tr>" for row in self.rows)
        note = f"<p>{html.escape(self.note)}</p>" if self.note else ""
        return (
            f"<table><caption>{html.escape(self.caption)}</caption><thead><tr>{cells('th', self.header)}</tr></thead>"
            f"<tbody>{body}</tbody></table>{note}"
        )

    def markdown(self) -> str:
        def line(row: tuple[str, ...]) -> str:
            return "| " + " | ".join(escape(c, "markdown") for c in row) + " |"

        rule = "| " + " | ".join("---:" if a == "r" else "---" for a in self.align) + " |"
        parts = [f"**{escape(self.caption, 'markdown')}**", "", line(self.header), rule, *map(line, self.rows)]
        if self.note:
            parts += ["", escape(self.note, "markdown")]
        return "\n".join(parts)


def _bytes(value: int) -> str:
    """Bytes exact and in both units people use: 65,524,246,528 B (65.52 GB = 61.02 GiB)."""
    return f"{value:,} B ({gb_gib(value)})"


def _number(value: Any) -> str:
    if isinstance(value, Fraction) and value.denominator != 1:
        return f"{float(value):,.2f}"
    return f"{int(value):,}"


def table_of(result: Any) -> Table:
    """The table a notebook shows for an API result."""
    kind = type(result).__name__
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise TypeError(f"no notebook table for {kind}")
    return builder(result)


def _loaded(loaded: Any) -> Table:
    counts = loaded.counts
    rows = [(c.path, _number(c.count)) for c in counts.components]
    rows += [("total", _number(counts.total)), ("activated", _number(counts.activated))]
    rows += [("embedding", _number(counts.embedding)), ("non-embedding", _number(counts.non_embedding))]
    return Table(f"{loaded.name}: parameters ({loaded.family})", ("component", "parameters"), tuple(rows), "lr")


def _flops(f: Any) -> Table:
    rows = [(c.path, _number(c.flops)) for c in f.components]
    rows += [
        ("forward", _number(f.forward)),
        ("per token", _number(f.per_token)),
        ("training (3 × forward)", _number(f.training)),
        ("rule of thumb 6·N·tokens", _number(f.rule_of_thumb)),
    ]
    caption = f"forward FLOPs, B = {f.batch:,} × S = {f.seq:,} tokens"
    return Table(caption, ("component", "FLOPs"), tuple(rows), "lr", f.convention)


def _memory(m: Any) -> Table:
    rows = [(line.name + ("" if line.in_total else " (not in the total)"), _bytes(line.bytes)) for line in m.lines]
    rows.append(("total", _bytes(m.total_bytes)))
    at = f", S = {m.seq:,}, B = {m.batch:,}" if m.seq is not None else ""
    return Table(f"{m.mode} memory, {m.dtype}{at}", ("amount", "bytes"), tuple(rows), "lr", m.assumptions)


def _training(t: Any) -> Table:
    rows = [(line.name, _bytes(line.bytes)) for line in t.lines]
    rows.append(("model states", _bytes(t.model_states_bytes)))
    if t.activations_bytes is not None:
        rows.append(("activations", _bytes(t.activations_bytes)))
    rows.append(("total per GPU", _bytes(t.total_bytes)))
    p = t.parallel
    degrees = f"tp {p.tp} pp {p.pp} dp {p.dp} ep {p.ep}"
    caption = f"training memory per GPU, {t.dtype}, {t.optimizer}, ZeRO {p.zero}, {degrees}"
    note = "; ".join(filter(None, [t.activations_refused, *t.notes]))
    return Table(caption, ("amount", "bytes"), tuple(rows), "lr", note)


def _fit(f: Any) -> Table:
    def at_most(value: Any) -> str:
        return "no limit from memory" if value is None else f"{value:,}"

    rows = (
        ("capacity", _bytes(f.capacity)),
        ("weights", _bytes(f.weights)),
        ("longest sequence at B = 1", at_most(f.max_seq)),
        (f"largest batch at S = {f.seq:,}", at_most(f.max_batch)),
    )
    return Table(f"what fits, {f.dtype} weights, {f.kv_dtype} cache", ("", "value"), rows, "lr")


def _conventions(items: Any) -> Table:
    rows = tuple((c.name, _number(c.training_flops_per_token), c.formula, c.source) for c in items)
    header = ("convention", "training FLOPs per token", "formula", "source")
    return Table("training FLOPs per token by convention", header, rows, "lrll")


def _utilisation(u: Any) -> Table:
    rows = (
        ("MFU", f"{float(u.mfu) * 100:.2f}%"),
        ("tokens/s (all GPUs)", _number(u.tokens_per_second)),
        ("training FLOPs per token", _number(u.convention.training_flops_per_token)),
        ("GPUs", f"{u.gpus:,}"),
        ("peak TFLOP/s per GPU", _number(u.peak_tflops)),
    )
    caption = f"model FLOPs utilisation ({u.convention.name}, {u.gpu or 'given peak'}, {u.dtype}, S = {u.seq:,})"
    return Table(caption, ("", "value"), rows, "lr", u.convention.source)


def _check(c: Any) -> Table:
    rows = [
        ("your formula", c.formula),
        ("exact", _number(c.exact)),
        ("claimed", _number(Fraction(int(c.claimed.p), int(c.claimed.q)))),
        ("relative error", f"{c.relative_error * 100:+.2f}%"),
    ]
    rows += [(f"missing: {', '.join(m.components) or '-'}", str(m.term)) for m in c.missing]
    rows += [("extra", str(e.term)) for e in c.extra]
    kind = "activated" if c.activated else "total"
    return Table(f"{c.model}: your formula against the exact {kind} count", ("", "value"), tuple(rows), "ll")


def _approximation(a: Any) -> Table:
    rows = [
        ("leading term per layer", str(a.leading_per_layer)),
        ("exact per layer", str(a.per_layer)),
        ("leading total", str(a.leading_total)),
    ]
    rows += [(f"ratio {s.name}", str(e)) for s, e in a.relations.items()]
    rows += [(f"{e.model}: leading / exact", f"{e.relative_error * 100:+.2f}%") for e in a.evaluations]
    return Table(f"{a.title}: leading terms as d grows", ("", "value"), tuple(rows), "ll")


_BUILDERS: dict[str, Callable[[Any], Table]] = {
    "Loaded": _loaded,
    "FlopCounts": _flops,
    "Memory": _memory,
    "Training": _training,
    "Fit": _fit,
    "ShownList": _conventions,
    "Utilisation": _utilisation,
    "Check": _check,
    "Approximation": _approximation,
}
