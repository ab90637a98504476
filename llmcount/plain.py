"""Plain text that needs no sympy: the human and grouped forms of numbers, shares, aligned tables, lines and
tables that fit a terminal (registered as the renderers' filters), and ``count``'s table of a model counted by the
compiled path (:mod:`llmcount.counting`), from the same template as the renderers' (``count.txt.j2``). Widths count
characters (``·``, ``²`` and ``…`` are one column each).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .counting import Counted


def is_norm(path: str) -> bool:
    """A norm's scale (and shift): the ``norms`` group, or a module named ``*norm*`` (``q_norm``, ``q_a_layernorm``)."""
    group, _, module = path.partition("/")
    return group == "norms" or "norm" in module


_UNITS = ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K"))


def count(value: int) -> str:
    """A human form of a count: 32762123264 -> '32.76B'; exact below a thousand."""
    value = int(value)
    if abs(value) >= 10**15:
        return f"{value:.2e}"
    for size, unit in _UNITS:
        if abs(value) >= size:
            return f"{value / size:.2f}{unit}"
    return str(value)


def grouped(value: int | Fraction) -> str:
    """Digit grouping for plain text and Markdown: 32,762,123,264; a fraction (a mean per token) with two
    decimals: 185,250.71."""
    if isinstance(value, Fraction) and value.denominator != 1:
        return f"{float(value):,.2f}"
    return f"{int(value):,}"


_FLOP_UNITS = ((10**21, "Z"), (10**18, "E"), (10**15, "P"), (10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "K"))


def flops(value: int) -> str:
    """A human form of a FLOP count: 32940000000000 -> '32.94T' (K, M, G, T, P, E, Z); exact below a thousand
    (a fraction there with two decimals)."""
    value = value if isinstance(value, Fraction) else int(value)
    for size, unit in _FLOP_UNITS:
        if abs(value) >= size:
            return f"{float(value / size):.2f}{unit}"
    return grouped(value)


def percent(part: int, whole: int) -> str:
    """A share with two decimals, or two significant digits when it is smaller (0.0014%, not 0.00%)."""
    if not whole:
        return "-"
    share = Fraction(100 * int(part), int(whole))
    if share == 0 or abs(share) >= Fraction(1, 100):
        return f"{float(share):.2f}%"
    decimals = 1 - math.floor(math.log10(abs(share)))  # two significant digits
    return f"{float(share):.{decimals}f}%"


def table(rows: Iterable[Sequence[str]], align: str) -> str:
    """Rows of cells as aligned text columns; ``align`` is one of 'l'/'r' per column."""
    rows = [list(map(str, row)) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(align))]
    lines = []
    for row in rows:
        cells = [cell.ljust(w) if a == "l" else cell.rjust(w) for cell, w, a in zip(row, widths, align, strict=True)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


MIN_WRAPPED = 20  # narrower than this, the wrapped column goes below its row, across the whole width
STACK_INDENT = "    "


def wrap(text: str, width: int | None, indent: str = "") -> str:
    """``text`` in lines of at most ``width`` characters, continuation lines starting with ``indent``;
    a formula breaks after ``·`` or at a space, a piece longer than a line is cut. ``None``: one line."""
    return "\n".join(wrap_lines(text, width, indent))


def wrap_lines(text: str, width: int | None, indent: str = "") -> list[str]:
    """The lines of :func:`wrap`: breaks at spaces first; a word longer than a line breaks after ``·``."""
    if width is None or len(text) <= width:
        return [text]
    width = max(width, len(indent) + 1)
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        if not line or len(line) + 1 + len(word) <= width:
            line = f"{line} {word}" if line else word
            if len(line) <= width:
                continue
            line, word = line[: len(line) - len(word)].rstrip(), word  # the word alone is too long: split it
        lead = indent if lines or line.strip() else ""  # the first line has no indent
        if line.strip():
            lines.append(line.rstrip())
        line = lead + word
        while len(line) > width:
            cut = line.rfind("·", len(indent) + 1, width) + 1 or width  # after the last · that fits, else hard
            lines.append(line[:cut])
            line = indent + line[cut:]
    if line.strip():
        lines.append(line.rstrip())
    return lines


def fit_lines(text: str, width: int | None) -> str:
    """Each line of ``text`` longer than ``width`` wrapped, continuation lines indented four spaces past its own
    indent: a formula or a sentence printed as one line stays readable in a terminal. ``None``: unchanged."""
    if width is None:
        return text
    out = []
    for line in text.split("\n"):
        body = line.lstrip(" ")
        lead = line[: len(line) - len(body)]
        out += [lead + piece for piece in wrap_lines(body, max(width - len(lead), 20), "    ")]
    return "\n".join(out)


def fit_table(rows: Iterable[Sequence[str]], align: str, width: int | None, wrapped: int) -> str:
    """:func:`table`, except that column ``wrapped`` is wrapped (continuation lines below, other cells
    empty) so that each line has at most ``width`` characters; when the other columns leave it fewer than
    :data:`MIN_WRAPPED` characters, it leaves the table and is written, wrapped, on indented lines below each
    row. ``None``: as :func:`table`."""
    rows = [list(map(str, row)) for row in rows]
    if width is None:
        return table(rows, align)
    widths = [max(len(row[i]) for row in rows) for i in range(len(align))]
    others = sum(w for i, w in enumerate(widths) if i != wrapped) + 2 * (len(align) - 1)
    room = width - others
    if widths[wrapped] <= room:
        return table(rows, align)
    if room < MIN_WRAPPED:
        return _stacked(rows, align, width, wrapped)
    out = []
    for row in rows:
        pieces = wrap_lines(row[wrapped], room, "  ")
        out.append([*row[:wrapped], pieces[0], *row[wrapped + 1 :]])
        out += [["" if i != wrapped else piece for i in range(len(align))] for piece in pieces[1:]]
    return table(out, align)


def _stacked(rows: list[list[str]], align: str, width: int, moved: int) -> str:
    """The table without column ``moved``, each row followed by its ``moved`` cell on indented lines."""
    rest = [[cell for i, cell in enumerate(row) if i != moved] for row in rows]
    lines = table(rest, align[:moved] + align[moved + 1 :]).split("\n")
    out = []
    for line, row in zip(lines, rows, strict=True):
        out.append(line)
        if row[moved]:
            room = width - len(STACK_INDENT)
            out += [STACK_INDENT + piece for piece in wrap_lines(row[moved], room, "  ")]
    return "\n".join(out)


def fit_columns(rows: Iterable[Sequence[str]], align: str, width: int | None) -> str:
    """:func:`table`, except that a table wider than ``width`` is cut into blocks of columns, one below
    the other with a blank line between, each repeating the first column (the row labels): the models of
    ``compare`` side by side as far as they fit. A header cell (first row) too long for one column next to the
    labels wraps onto more header lines. ``None``: as :func:`table`."""
    rows = [list(map(str, row)) for row in rows]
    text = table(rows, align)
    if width is None or max(map(len, text.splitlines()), default=0) <= width:
        return text
    labels = max(len(row[0]) for row in rows)
    room = max(MIN_WRAPPED, width - labels - 2)
    headers = {i: wrap_lines(rows[0][i], room) for i in range(1, len(align))}
    widths = {i: max([*map(len, headers[i]), *(len(row[i]) for row in rows[1:])]) for i in headers}
    blocks: list[list[int]] = [[]]
    used = labels
    for i in headers:
        if blocks[-1] and used + 2 + widths[i] > width:
            blocks.append([])
            used = labels
        blocks[-1].append(i)
        used += 2 + widths[i]
    out = []
    for block in blocks:
        height = max(len(headers[i]) for i in block)
        head = [[rows[0][0] if j == 0 else "", *(_piece(headers[i], j, height) for i in block)] for j in range(height)]
        body = [[row[0], *(row[i] for i in block)] for row in rows[1:]]
        out.append(table(head + body, align[0] + "".join(align[i] for i in block)))
    return "\n\n".join(out)


def _piece(pieces: list[str], j: int, height: int) -> str:
    """Line ``j`` of a header wrapped into ``pieces``, bottom-aligned over ``height`` lines."""
    k = j - (height - len(pieces))
    return pieces[k] if k >= 0 else ""


def render_count(model: Counted, width: int | None = None, mtp: bool = False) -> str:
    """``renderers.render_count`` of a model counted by the compiled path, written out in Python: the branch of
    ``count.txt.j2`` a language model takes (a test holds the two texts equal), without importing jinja2 and compiling
    the template on every run. The checkpoint's MTP module is a line under the table, or (``mtp``) rows of the table
    and part of its totals."""
    from .counting import ACTIVATED_DEFINITION, Fallback

    shown = model.shown
    if shown is None:
        raise Fallback  # a selection of terms whose formula the snapshot does not hold: the sympy path shows it
    module = model.mtp_module(mtp)
    family = model.architecture
    lines = [wrap(f"{model.name} ({family.title}, model_type {family.name}; {model.source})", width, "  ")]
    if family.not_counted:
        lines.append(wrap(f"counted: {family.counted}; not counted: {family.not_counted}", width, "  "))
    total = model.total
    rows = [["component", "formula", "parameters", "", "share"]]
    rows += [[c.path, c.text, grouped(c.count), count(c.count), percent(c.count, total)] for c in model.components]
    if mtp:
        rows += _mtp_rows(model, module)
    else:
        rows += [["", "", "", "", ""], ["total", "", grouped(total), count(total), ""]]
        shares = [("activated", model.activated)] if family.is_moe else []
        shares += [("embedding", model.embedding), ("non-embedding", model.non_embedding)]
        rows += [[label, "", grouped(value), count(value), percent(value, total)] for label, value in shares]
    lines.append(fit_table(rows, "llrrr", width, 1))
    if module is not None:
        lines.append(wrap(_mtp_line(module, total, mtp), width, "  "))
    lines += ["", wrap(f"P = {shown['P']}", width, "    ")]
    if family.is_moe:
        lines += [wrap(f"P_act = {shown['P_act']}", width, "    "), wrap(f"  ({ACTIVATED_DEFINITION})", width, "   ")]
    values = ", ".join(f"{name}={value}" for name, value in model.values.items())
    lines.append(wrap(f"values: {values}", width, "        "))
    return "\n".join(lines) + "\n\n"  # the template ends with a blank line


def _mtp_rows(model: Counted, module) -> list[list[str]]:
    """The rows of ``count --mtp`` after the model's components: the MTP module's, then the totals with it."""
    total = model.total + module.total
    rows = [[c.path, c.text, grouped(c.count), count(c.count), percent(c.count, total)] for c in module.components]
    rows.append(["", "", "", "", ""])
    rows.append(["model (transformers)", "", grouped(model.total), count(model.total), percent(model.total, total)])
    rows.append(["mtp module", "", grouped(module.total), count(module.total), percent(module.total, total)])
    rows.append(["total with mtp", "", grouped(total), count(total), ""])
    shares = [("activated with mtp", model.activated + module.activated)] if model.architecture.is_moe else []
    embedding = model.embedding + module.embedding
    shares += [("embedding", embedding), ("non-embedding", total - embedding)]
    rows += [[label, "", grouped(value), count(value), percent(value, total)] for label, value in shares]
    return rows


def _mtp_line(module, total: int, counted: bool) -> str:
    """The line under ``count``'s table that names the checkpoint's MTP module."""
    if counted:
        return (
            f"with the checkpoint's MTP module ({module.key} = {module.layers}, {count(module.total)}), which "
            f"transformers does not build; the mtp/ rows are its formula, N_mtp = {module.layers}"
        )
    return (
        f"+ {count(module.total)} MTP module in the checkpoint ({module.key} = {module.layers}; "
        f"{count(total + module.total)} with it), which transformers does not build; --mtp counts it"
    )
