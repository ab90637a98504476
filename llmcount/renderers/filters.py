"""Plain formatting functions, registered as jinja2 filters; each has its own tests."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from fractions import Fraction

from sympy import Add, Expr, Rational
from sympy import latex as sympy_latex
from sympy.printing.precedence import precedence
from sympy.printing.str import StrPrinter

from ..files import printable
from ..formulas.symbols import LATEX_NAMES
from ..formulas.training import LATEX_NAMES as STATE_NAMES
from ..plain import count, flops, grouped, percent, table  # the number forms and tables that need no sympy
from ..sizes import gb_gib

_NAMES = {**LATEX_NAMES, **STATE_NAMES}


def latex(expr: Expr) -> str:
    """LaTeX of an expression in the glossary's symbols: ``d_{\\mathrm{ff}}``, thin-space products."""
    return sympy_latex(expr, symbol_names=_NAMES, mul_symbol=r"\,")


def _terminal(out: str) -> str:
    """A sympy string for terminals: ``d**2*N`` -> ``d²·N``."""
    out = re.sub(r"\*\*(\d+)", lambda m: "".join("⁰¹²³⁴⁵⁶⁷⁸⁹"[int(c)] for c in m.group(1)), out)
    return out.replace("**", "^").replace("*", "·")


class _TextPrinter(StrPrinter):
    """sympy's str printer, with ceilings and floors written as people do: ``⌈S/64⌉``, ``⌊S/C⌋``."""

    def _print_ceiling(self, expr: Expr) -> str:
        return f"⌈{self._print(expr.args[0])}⌉"

    def _print_floor(self, expr: Expr) -> str:
        return f"⌊{self._print(expr.args[0])}⌋"


def text(expr: Expr) -> str:
    """Plain-text form for terminals: ``3·d·d_ff + 2·d²``, ``⌈S/64⌉``."""
    return _terminal(_TextPrinter().doprint(expr))


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
    return " + ".join(parts) or "0"  # no terms: nothing is built for this config


def ordered_latex(groups: Sequence[tuple[Expr, Sequence[Expr]]]) -> str:
    """A sum in reader's order, terms gathered under their layer count: ``N\\left(...\\right) + ...``."""
    return _ordered(groups, latex, r"\left(", r"\right)")


def ordered_text(groups: Sequence[tuple[Expr, Sequence[Expr]]]) -> str:
    """The plain-text form of :func:`ordered_latex`."""
    return _ordered(groups, text, "(", ")")


def latex_int(value: int) -> str:
    """Digit grouping in LaTeX math: 32{,}762{,}123{,}264; a number of four digits is written without a separator
    (7168), as the SI brochure (5.4.4) allows and the reference posts write their sizes."""
    if abs(int(value)) < 10_000:
        return str(int(value))
    return f"{int(value):,}".replace(",", "{,}")


def latex_exact(value: int | Fraction) -> str:
    """An exact number in LaTeX math: an integer digit-grouped, a fraction that is not whole (a mean per token) as
    ``\\tfrac{p}{q}`` of digit-grouped integers."""
    if isinstance(value, Fraction) and value.denominator != 1:
        return rf"\tfrac{{{latex_int(value.numerator)}}}{{{latex_int(value.denominator)}}}"
    return latex_int(value)


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
    "\u2212": r"\ensuremath{-}",  # the minus sign: pdflatex's utf8 input has no glyph for U+2212
    # the OT1 text font prints < > | as ¡ ¿ —: math's, which every LaTeX has
    "<": r"\ensuremath{<}",
    ">": r"\ensuremath{>}",
    "|": r"\ensuremath{|}",
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
    "flops": flops,
    "grouped": grouped,
    "latex_int": latex_int,
    "latex_exact": latex_exact,
    "percent": percent,
    "table": table,
    "latex_escape": latex_escape,
    "printable": printable,
}


# --- write-ups -----------------------------------------------------------------------------------------------------


_SIZED = re.compile(r"\\left\(((?:(?!\\left|\\right).)*)\\right\)")
_TALL = re.compile(r"\\(frac|tfrac|dfrac|sqrt|lfloor|lceil|sum|prod)")


def plain_brackets(tex: str) -> str:
    """``\\left(…\\right)`` as plain brackets where the content is one line high: ``h\\,(d_{v} + d)``. A
    derivation is an ``aligned`` block broken between terms, where a plain bracket may open on one line and close on
    another (``\\left(`` would need ``\\right.`` and ``\\left.`` at every break); ``\\left`` sizes only a bracket
    around a fraction, a root, a floor or a ceiling, which keep it."""
    while True:
        out = _SIZED.sub(lambda m: m.group(0) if _TALL.search(m.group(1)) else f"({m.group(1)})", tex)
        if out == tex:
            return out
        tex = out


def post_latex(expr: Expr) -> str:
    """:func:`latex` with :func:`plain_brackets`."""
    return plain_brackets(latex(expr))


def substitute(expr: Expr, values: dict) -> str:
    """LaTeX of ``expr`` with each symbol replaced by its digit-grouped value, products as ``\\cdot``:
    ``2\\,d\\,h`` with d=5120, h=64 -> ``2 \\cdot 5120 \\cdot 64``. Nothing is evaluated; brackets as in
    :func:`post_latex`."""
    names = {symbol: latex_int(value) for symbol, value in values.items()}
    return plain_brackets(sympy_latex(expr, symbol_names=names, mul_symbol="dot"))


def _visible_width(tex: str) -> int:
    """A rough printed width of a LaTeX math string, for line breaking."""
    tex = tex.replace(r"\cdot", "···").replace("{,}", ",")
    return len(re.sub(r"\\(left|right|mathrm|,)|[{}]", "", tex))


def ordered_lines(
    groups: Sequence[tuple[Expr, Sequence[Expr]]], values: dict | None = None, width: int = 64
) -> list[str]:
    """:func:`ordered_latex` broken into lines of about ``width`` characters for an ``aligned`` block, with
    plain brackets (:func:`post_latex`): a bracket opened on one line may close on a later one. With ``values``,
    the numbers are substituted (:func:`substitute`)."""
    fmt = post_latex if values is None else (lambda e: substitute(e, values))
    items: list[tuple[str, str]] = []  # ("term", tex) | ("open", factor) | ("close", "")
    for layers, exprs in groups:
        if layers == 1:
            items += [("term", fmt(e)) for e in exprs]
        elif len(exprs) == 1 and not isinstance(layers, Add):
            items.append(("term", fmt(layers * exprs[0])))
        else:
            factor = f"({fmt(layers)})" if isinstance(layers, Add) else fmt(layers)
            items += [("open", factor), *[("term", fmt(e)) for e in exprs], ("close", "")]
    lines, line, fresh = [], "", True  # fresh: nothing yet since the line start or a bracket
    for kind, tex in items:
        if kind == "close":
            line, fresh = line + ")", False
            continue
        piece = tex + "(" if kind == "open" else tex
        if line and not fresh and _visible_width(line) + _visible_width(piece) > width:  # a bracket keeps a term
            lines.append(line)
            line, fresh = "{}", False
        line += piece if fresh else " + " + piece
        fresh = kind == "open"
    return [*lines, line]


def skipped_latex(groups: Sequence[tuple[Expr, Sequence[Expr]]], values: dict | None = None) -> str:
    """The routed expert weights a token skips, ``[(layers, [expr / n])]`` times :math:`n - k`, as one product in
    :func:`post_latex`'s brackets: ``(N - N_{\\mathrm{dense}})\\,3\\,d\\,d_{\\mathrm{moe}}\\,(n - k)``; with ``values``,
    substituted (``(61 - 3) \\cdot 3 \\cdot 7168 \\cdot 2048 \\cdot (256 - 8)``)."""
    from ..formulas.symbols import k, n

    fmt = post_latex if values is None else (lambda e: substitute(e, values))
    times = r"\," if values is None else r" \cdot "
    (layers, exprs), *_ = groups
    if len(exprs) == 1 and not isinstance(layers, Add):  # one product: N·3·d·d_moe prints 3 N d d_moe
        factors = [fmt(layers * exprs[0])]
    else:
        factors = [] if layers == 1 else [f"({fmt(layers)})" if isinstance(layers, Add) else fmt(layers)]
        inner = " + ".join(fmt(e) for e in exprs)
        factors.append(f"({inner})" if len(exprs) > 1 else inner)
    return times.join([*factors, f"({fmt(n)} - {fmt(k)})"])


def sum_lines(terms: Sequence[str], width: int = 64) -> list[str]:
    """A sum of LaTeX ``terms`` broken into lines by :func:`ordered_lines`' rule (about ``width`` characters),
    the later lines starting with ``{} +``."""
    lines: list[str] = []
    for term in terms:
        if lines and _visible_width(lines[-1]) + _visible_width(term) <= width:
            lines[-1] += " + " + term
        else:
            lines.append(term if not lines else "{} + " + term)
    return lines


def code(name: str, fmt: str) -> str:
    """A module or key name in running text: ```q_proj``` in Markdown, ``\\texttt{q\\_\\allowbreak{}proj}``
    in LaTeX (a line may break after an underscore, a slash, a hyphen or a dot)."""
    if fmt != "latex":
        fence = "`" * (max((len(run) for run in re.findall("`+", name)), default=0) + 1)
        pad = " " if "`" in name else ""  # CommonMark strips one space each side when both are there
        return f"{fence}{pad}{name}{pad}{fence}"
    text = latex_escape(name).replace(r"\_", r"\_\allowbreak{}")  # a long name may break after _ / - .
    text = re.sub(r"([/.-])(?=.)", r"\1\\allowbreak{}", text)
    return r"\texttt{" + text + "}"


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|$#~&])")


def escape(value: str, fmt: str) -> str:
    """User-supplied text (model names, paths) made literal for ``fmt`` ("markdown" or "latex"): on one line (control
    characters as visible escapes) and every character that is markup in the format escaped."""
    value = printable(str(value))
    return latex_escape(value) if fmt == "latex" else _MARKDOWN_SPECIAL.sub(r"\\\1", value)


MINUS = "\u2212"
"""The minus sign (−), not the hyphen: what a typeset negative number has."""


def pct(fraction, signed: bool = False, typeset: bool = False) -> str:
    """A share or relative error as a percentage with enough decimals to show it:
    0.1843 -> '18.43%', -0.0000213 -> '-0.0021%', 0 -> '0%'; ``signed`` adds '+' to positives; ``typeset``
    (write-ups, charts) writes a negative with the minus sign, '−0.0021%', terminals keep the hyphen."""
    value = 100 * float(fraction)
    if value == 0:
        return "0%"
    places = max(2, 1 - math.floor(math.log10(abs(value))))
    out = f"{value:{'+' if signed else ''}.{places}f}%"
    return out.replace("-", MINUS) if typeset else out


def significant(value, digits: int = 4) -> str:
    """A ratio with ``digits`` significant digits and no trailing zeros: 18.6, 12, 0.2."""
    return f"{float(value):.{digits}g}"


def mermaid(value: str) -> str:
    """Text for a Mermaid label or title: its entity codes for the characters that would end the string or be
    read as markup (``"`` ``<`` ``>`` ``#`` ``;``), and no line breaks."""
    codes = {'"': "#quot;", "<": "#lt;", ">": "#gt;", "#": "#35;", ";": "#59;", "&": "#amp;"}
    return "".join(codes.get(c, c) for c in " ".join(str(value).split()))


def layer_list(indices: Sequence[int], lang: str = "en") -> str:
    """Layer indices for prose: '0, 2, 4, …, 46' for a progression of more than four, else all of them."""
    indices = list(indices)
    sep = "、" if lang == "zh" else ", "
    steps = {b - a for a, b in itertools.pairwise(indices)}
    if len(indices) > 4 and len(steps) == 1:
        indices = [*map(str, indices[:3]), "…", str(indices[-1])]
    return sep.join(map(str, indices))


def gib(value: int) -> str:
    """Bytes in GiB (2^30 bytes), two decimals: 65524246528 -> '61.02'."""
    return f"{int(value) / 2**30:,.2f}"


def fold(text: str, width: int = 88) -> str:
    """``print(model)``'s text with every line longer than ``width`` broken after its last ", " that fits, the rest
    indented four spaces deeper, as a terminal of that width would wrap it readably (a LaTeX verbatim block neither
    wraps nor shrinks). A line with no such break is left whole."""
    out = []
    for line in text.split("\n"):
        indent = " " * (len(line) - len(line.lstrip(" ")) + 4)
        while len(line) > width:
            cut = line.rfind(", ", len(indent), width - 1)
            if cut < 0:
                break
            out.append(line[: cut + 1])
            line = indent + line[cut + 2 :]
        out.append(line)
    return "\n".join(out)


FILTERS.update(
    fold=fold,
    gib=gib,
    gb_gib=gb_gib,
    layer_list=layer_list,
    mermaid=mermaid,
    substitute=substitute,
    ordered_lines=ordered_lines,
    sum_lines=sum_lines,
    skipped_latex=skipped_latex,
    code=code,
    escape=escape,
    pct=pct,
    significant=significant,
)


# --- analysis ------------------------------------------------------------------------------------------------------


def _terminating(value: Rational) -> str | None:
    """The exact decimal of a rational whose decimal ends: 23/2 -> '11.5'; None for 1/3."""
    p, q = int(value.p), int(value.q)
    twos = fives = 0
    while q % 2 ** (twos + 1) == 0:
        twos += 1
    while q % 5 ** (fives + 1) == 0:
        fives += 1
    if q != 2**twos * 5**fives:
        return None
    places = max(twos, fives)
    whole, frac = divmod(abs(p) * 10**places // q, 10**places)
    return f"{'-' if p < 0 else ''}{whole}.{frac:0{places}d}"


class _DecimalPrinter(_TextPrinter):
    """sympy's str printer, with coefficients such as 23/2 written 11.5 (exactly; 1/3 stays 1/3)."""

    def _print_Rational(self, expr: Rational) -> str:
        return _terminating(expr) or super()._print_Rational(expr)

    def _print_Mul(self, expr: Expr) -> str:
        coeff, rest = expr.as_coeff_Mul()
        decimal = _terminating(coeff) if coeff.is_Rational and not coeff.is_Integer and rest != 1 else None
        if decimal is None:
            return super()._print_Mul(expr)
        return f"{decimal}*{self.parenthesize(rest, precedence(expr), strict=True)}"


def decimal(expr: Expr) -> str:
    """:func:`text` with terminating coefficients as decimals, as blogs write them: ``11.5·N·d² + 2·V·d``."""
    return _terminal(_DecimalPrinter().doprint(expr))


FILTERS.update(decimal=decimal)
