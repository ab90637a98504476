"""Plain formatting functions, registered as jinja2 filters; each has its own tests."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from sympy import Add, Expr, sstr
from sympy import latex as sympy_latex

from ..formulas.symbols import LATEX_NAMES

_UNITS = ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K"))


def latex(expr: Expr) -> str:
    """LaTeX of an expression in the glossary's symbols: ``d_{\\mathrm{ff}}``, thin-space products."""
    return sympy_latex(expr, symbol_names=LATEX_NAMES, mul_symbol=r"\,")


def text(expr: Expr) -> str:
    """Plain-text form for terminals: ``3·d·d_ff + 2·d²``."""
    out = sstr(expr)
    out = re.sub(r"\*\*(\d+)", lambda m: "".join("⁰¹²³⁴⁵⁶⁷⁸⁹"[int(c)] for c in m.group(1)), out)
    return out.replace("**", "^").replace("*", "·")


def _ordered(groups: Sequence[tuple[Expr, Sequence[Expr]]], fmt, left: str, right: str) -> str:
    parts = []
    for layers, exprs in groups:
        if layers == 1:
            parts.append(" + ".join(fmt(e) for e in exprs))
        elif len(exprs) == 1 and not isinstance(layers, Add):
            parts.append(fmt(layers * exprs[0]))
        else:
            factor = f"{left}{fmt(layers)}{right}" if isinstance(layers, Add) else fmt(layers)
            inner = " + ".join(fmt(e) for e in exprs)
            parts.append(f"{factor}{left}{inner}{right}")
    return " + ".join(parts)


def ordered_latex(groups: Sequence[tuple[Expr, Sequence[Expr]]]) -> str:
    """A sum in reader's order, terms gathered under their layer count: ``N\\left(...\\right) + ...``."""
    return _ordered(groups, latex, r"\left(", r"\right)")


def ordered_text(groups: Sequence[tuple[Expr, Sequence[Expr]]]) -> str:
    """The plain-text form of :func:`ordered_latex`."""
    return _ordered(groups, text, "(", ")")


def count(value: int) -> str:
    """A human form of a count: 32762123264 -> '32.76B'; exact below a thousand."""
    value = int(value)
    for size, unit in _UNITS:
        if abs(value) >= size:
            return f"{value / size:.2f}{unit}"
    return str(value)


def grouped(value: int) -> str:
    """Digit grouping for plain text and Markdown: 32,762,123,264."""
    return f"{int(value):,}"


def latex_int(value: int) -> str:
    """Digit grouping in LaTeX math: 32{,}762{,}123{,}264."""
    return f"{int(value):,}".replace(",", "{,}")


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f}%" if whole else "-"


def table(rows: Iterable[Sequence[str]], align: str) -> str:
    """Rows of cells as aligned text columns; ``align`` is one of 'l'/'r' per column."""
    rows = [list(map(str, row)) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(align))]
    lines = []
    for row in rows:
        cells = [cell.ljust(w) if a == "l" else cell.rjust(w) for cell, w, a in zip(row, widths, align, strict=True)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(value: str) -> str:
    """Escape user-supplied text (model names, paths) for LaTeX prose."""
    return "".join(_LATEX_SPECIAL.get(c, c) for c in str(value))


FILTERS = {
    "latex": latex,
    "text": text,
    "ordered_latex": ordered_latex,
    "ordered_text": ordered_text,
    "count": count,
    "grouped": grouped,
    "latex_int": latex_int,
    "percent": percent,
    "table": table,
    "latex_escape": latex_escape,
}
