"""``sweep --csv`` without sympy: the total and activated counts over a grid of sizes, evaluated row by row with the
compiled counts of the base config's selection of terms (:mod:`llmcount.counting`), equal to what
:func:`llmcount.analysis.sweep.sweep` gives through sympy (``tests/test_plain_training_sweep.py`` holds them equal).

The CSV shows no formula, so nothing here needs sympy. This path takes the common grid only: a MODEL the compiled path
reads (or a bundled family with ``--from`` a model of that family), each ``--set`` a plain whole number, a list of them
or a range ``START:STOP[:STEP]`` of plain whole numbers over a symbol of the record, and a grid of at most
:data:`MAX_ROWS` rows. Anything else raises :class:`~llmcount.counting.Fallback` before a word is printed, and the
caller runs the sympy path, which words every refusal: a relation (``d_ff=4*d``), a number it should refuse or
read otherwise, a count that is not whole or negative on some row, a broken constraint (k > n, h not divisible by
h_kv), a size missing from the formula, a config the compiled path does not read.

The rows are those of the sympy path: the first swept symbol varies slowest; the layer counts are read as there
(``N_dense`` taken as ``min(N_dense, N)`` on a row where one is swept); ``h_d = d/h`` (transformers' default head size)
when the formula needs h_d and nothing sets it.
"""

from __future__ import annotations

import csv
import itertools
import math
import re
from collections.abc import Sequence
from typing import Any, TextIO

from . import evaluate
from .counting import Counted, Fallback, _record_bytes, read
from .errors import LlmcountError

MAX_ROWS = 200_000  # rows evaluated one by one here; a larger grid goes to the sympy path's vectorised evaluation
MAX_LISTED = 1000  # values listed one by one on an axis (as analysis.parse.MAX_LISTED)
MAX_DIGITS = 30  # digits of one value; a longer number is read (and bounded) by the sympy path's parser
_NUMBER = re.compile(rf"(?:0|[1-9][0-9]{{0,{MAX_DIGITS - 1}}})")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FAMILY = re.compile(r"[A-Za-z0-9_-]+")
CONSTRAINTS = (("k", "n", lambda a, b: a > b), ("h", "h_kv", lambda a, b: a % b != 0))
"""``analysis.relations.CONSTRAINTS``: the pairs a row must not break (a broken one is worded by the sympy path)."""


def _numbers(text: str) -> Sequence[int]:
    """The values of one ``--set`` value: a whole number, a list or a range; Fallback for anything else."""
    text = text.strip()
    if ":" in text:
        parts = [part.strip() for part in text.split(":")]
        if len(parts) not in (2, 3) or not all(_NUMBER.fullmatch(part) for part in parts):
            raise Fallback
        start, stop = int(parts[0]), int(parts[1])
        step = int(parts[2]) if len(parts) == 3 else 1
        if step <= 0 or start > stop or (stop - start) // step + 1 > MAX_ROWS:
            raise Fallback
        return range(start, stop + 1, step)
    items = [item.strip() for item in text.split(",")]
    if len(items) > MAX_LISTED or not all(_NUMBER.fullmatch(item) for item in items):
        raise Fallback
    return tuple(int(item) for item in items)


def _axes(settings: Sequence[str], minimum: dict[str, int]) -> dict[str, Sequence[int]]:
    """The swept symbols and their values, in the order given; Fallback for a setting this path does not read."""
    axes: dict[str, Sequence[int]] = {}
    for text in settings:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not _NAME.fullmatch(name) or name in axes or name not in minimum:
            raise Fallback
        numbers = _numbers(value)
        if any(number < minimum[name] for number in numbers):
            raise Fallback
        axes[name] = numbers
    if not axes:
        raise Fallback
    return axes


def _minimum(model: Counted) -> dict[str, int]:
    """The smallest value of each symbol of the record a setting may name: 1 for a size; a symbol whose spec allows 0
    (n_s) may be 0; the layer counts are left to the sympy path at 0."""
    out = {spec.symbol.name: 1 if spec.symbol.is_positive else 0 for spec in model.architecture.symbols}
    for symbol, _, _ in model.architecture.layers:
        out.setdefault(symbol.name, 1)
    return out


def _counted(spec: str) -> tuple[Counted, Any]:
    """A model the compiled path reads, with its config (for the unseen-key note); Fallback otherwise."""
    from .sources import resolve

    try:
        found, source, config = resolve(spec)
        return read(config, source, found), config
    except LlmcountError:
        raise Fallback from None


def _is_family(spec: str) -> bool:
    """Whether ``spec`` names a bundled record and no preset (``analysis.subject`` reads it as a family then)."""
    from .presets import find

    return bool(_FAMILY.fullmatch(spec)) and find(spec) is None and _record_bytes(spec) is not None


def rows(spec: str, base_spec: str | None, settings: Sequence[str], force: bool = False) -> tuple[list[str], list]:
    """The CSV's header and rows (``analysis.sweep.sweep`` of ``analysis.subject_and_base(spec, base_spec)``); the
    unseen-key notes the sympy path prints are printed once the rows stand. Fallback for what this path does not
    take (module docstring)."""
    if spec == "-" or base_spec == "-":
        raise Fallback  # standard input is read once: by the sympy path
    notes = []
    if _is_family(spec):
        if base_spec is None:
            raise Fallback
        model, config = _counted(base_spec)
        if model.architecture.name != spec or model.architecture.data.get("shares"):
            raise Fallback
        base = model
        notes.append((base, config))
    else:
        model, config = _counted(spec)
        notes.append((model, config))
        base = model
        if base_spec is not None:
            base, base_config = _counted(base_spec)
            notes.append((base, base_config))
    used = model.plan.in_terms
    axes = _axes(settings, _minimum(model))
    size = math.prod(len(values) for values in axes.values())
    if size > MAX_ROWS or (size > 10**7 and not force):
        raise Fallback
    fixed = {name: value for name, value in base.values.items() if name in used and name not in axes}
    given = {*fixed, *axes}
    head = "h_d" in used and "h_d" not in given
    cap = {"N", "N_dense"} <= given and bool({"N", "N_dense"} & set(axes))
    function = model.plan.counted
    names = list(axes)
    out = []
    for point in itertools.product(*axes.values()):
        values = {**fixed, **dict(zip(names, point, strict=True))}
        if cap:
            values["N_dense"] = min(values["N_dense"], values["N"])
        if head:
            if not values.get("h") or "d" not in values or values["d"] % values["h"] or values["d"] < values["h"]:
                raise Fallback  # not a whole head size: the sympy path words it
            values["h_d"] = values["d"] // values["h"]
        for a, b, broken in CONSTRAINTS:
            if a in values and b in values and (values[b] == 0 or broken(values[a], values[b])):
                raise Fallback
        try:
            numbers = function(values)
        except (KeyError, ZeroDivisionError):
            raise Fallback from None
        total, activated = (sum(numbers[i::2]) for i in (0, 1))
        counts = [evaluate.whole(total), evaluate.whole(activated)]
        if None in counts or min(counts) < 0:
            raise Fallback
        out.append((*(values[name] for name in names), *counts))  # N_dense as capped, as the sympy path shows it
    from .sources import emit_note, unseen_note

    for counted, config in notes:
        note = unseen_note(counted, config)
        if note:
            emit_note(note)
    return [*names, "total", "activated"], out


def write_csv(header: list[str], table: list, stream: TextIO) -> None:
    """``analysis.sweep.write_csv``: the header, then one row per grid point."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(table)
