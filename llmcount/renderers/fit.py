"""Text that fits a terminal: a table whose one long column wraps, and lines that wrap with a hanging
indent. Widths count characters (``·``, ``²`` and ``…`` are one column each). Registered as filters."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .filters import FILTERS, table

MIN_WRAPPED = 8  # the wrapped column never gets fewer characters than this


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


def fit_table(rows: Iterable[Sequence[str]], align: str, width: int | None, wrapped: int) -> str:
    """:func:`filters.table`, except that column ``wrapped`` is wrapped (continuation lines below, other cells
    empty) so that each line has at most ``width`` characters; ``None``: as :func:`filters.table`."""
    rows = [list(map(str, row)) for row in rows]
    if width is None:
        return table(rows, align)
    widths = [max(len(row[i]) for row in rows) for i in range(len(align))]
    others = sum(w for i, w in enumerate(widths) if i != wrapped) + 2 * (len(align) - 1)
    room = max(MIN_WRAPPED, width - others)
    if widths[wrapped] <= room:
        return table(rows, align)
    out = []
    for row in rows:
        pieces = wrap_lines(row[wrapped], room, "  ")
        out.append([*row[:wrapped], pieces[0], *row[wrapped + 1 :]])
        out += [["" if i != wrapped else piece for i in range(len(align))] for piece in pieces[1:]]
    return table(out, align)


FILTERS.update(wrap=wrap, fit_table=fit_table)
