"""Text that fits a terminal: a table whose one long column wraps, and lines that wrap with a hanging
indent. Widths count characters (``·``, ``²`` and ``…`` are one column each). Registered as filters."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .filters import FILTERS, table

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
    """:func:`filters.table`, except that column ``wrapped`` is wrapped (continuation lines below, other cells
    empty) so that each line has at most ``width`` characters; when the other columns leave it fewer than
    :data:`MIN_WRAPPED` characters, it leaves the table and is written, wrapped, on indented lines below each
    row. ``None``: as :func:`filters.table`."""
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
    """:func:`filters.table`, except that a table wider than ``width`` is cut into blocks of columns, one below
    the other with a blank line between, each repeating the first column (the row labels): the models of
    ``compare`` side by side as far as they fit. A header cell (first row) too long for one column next to the
    labels wraps onto more header lines. ``None``: as :func:`filters.table`."""
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


FILTERS.update(wrap=wrap, fit_table=fit_table, fit_columns=fit_columns)
