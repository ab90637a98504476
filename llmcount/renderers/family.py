"""The family write-up: how the parameters of one family's sizes divide among the components, and how the shares
move from the smallest size to the largest (``llmcount writeup qwen3 --family-sizes qwen3-0.6b,qwen3-8b,qwen3-32b``).

Everything numeric is computed here, as exact integers and Fractions, from each size's own sections (the same
:func:`.writeup.sections` a one-model post uses); the templates (``templates/writeup/sizes_*.j2``) only format.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..errors import LlmcountError
from ..formulas.config import Model
from .writeup import FORMATS, LANGS, Section, display_name, pie, sections, variables

MIN_SIZES = 2


@dataclass(frozen=True)
class Size:
    """One size of the family: its model, the name a reader knows it by and its sections by key."""

    model: Model
    name: str
    parts: dict[str, Section]

    @property
    def total(self) -> int:
        return self.model.counts.total

    @property
    def activated(self) -> int:
        return self.model.counts.activated

    @property
    def tied(self) -> bool:
        return self.model.tied

    def share(self, key: str) -> Fraction | None:
        """The share of component ``key``; None when this size has no such component."""
        part = self.parts.get(key)
        return part.share if part is not None and part.count else None

    def count(self, key: str) -> int:
        part = self.parts.get(key)
        return part.count if part is not None else 0

    @property
    def pie(self) -> list:
        return pie([p for p in self.parts.values() if p.count])


@dataclass(frozen=True)
class Move:
    """How the share of one component moves from the smallest size to the largest."""

    key: str
    first: Fraction
    last: Fraction
    monotonic: bool  # the share grows (or shrinks) at every step

    @property
    def change(self) -> Fraction:
        return self.last - self.first

    @property
    def ratio(self) -> Fraction | None:
        return None if self.first == 0 else self.last / self.first


@dataclass(frozen=True)
class VariableRow:
    latex: str
    key: str
    meaning: str
    values: tuple[int | None, ...]  # one per size; None: that size's formula has no such symbol

    @property
    def same(self) -> bool:
        return len(set(self.values)) == 1


@dataclass(frozen=True)
class FamilySizes:
    """The sizes of one family, smallest first, with what the write-up says about them."""

    family: Any  # records.Family
    sizes: tuple[Size, ...]
    keys: tuple[str, ...]  # the components, in reader's order
    moves: tuple[Move, ...]
    variables: tuple[VariableRow, ...]

    @property
    def tied(self) -> tuple[Size, ...]:
        return tuple(s for s in self.sizes if s.tied)

    @property
    def untied(self) -> tuple[Size, ...]:
        return tuple(s for s in self.sizes if not s.tied)

    @property
    def moe(self) -> bool:
        return self.family.is_moe

    def move(self, key: str) -> Move | None:
        return next((m for m in self.moves if m.key == key), None)

    @property
    def largest_move(self) -> Move:
        """The component whose share moves the most (in percentage points)."""
        return max(self.moves, key=lambda m: abs(m.change))


def parse_sizes(value: str) -> list[str]:
    """``--family-sizes a,b,c`` -> ['a', 'b', 'c']; an empty name, a repeated one or fewer than two are refused."""
    names = [part.strip() for part in value.split(",")]
    if any(not name for name in names):
        raise LlmcountError(f"--family-sizes {value!r}: an empty name; give the sizes as a,b,c")
    seen: set[str] = set()
    for name in names:
        if name.lower() in seen:
            raise LlmcountError(f"--family-sizes {value!r}: {name} is named twice")
        seen.add(name.lower())
    if len(names) < MIN_SIZES:
        raise LlmcountError(
            f"--family-sizes {value!r}: one size only; give at least {MIN_SIZES}, e.g. qwen3-0.6b,qwen3-32b"
        )
    return names


def family_sizes(family_name: str, models: list[Model]) -> FamilySizes:
    """The sizes ``models`` of the family ``family_name`` (its model_type), smallest first; a model of another
    family is refused by name."""
    for model in models:
        if model.architecture.name != family_name:
            raise LlmcountError(
                f"{model.name}: its model_type is {model.architecture.name!r}, not {family_name!r}; "
                "--family-sizes compares sizes of one family"
            )
    seen: set[str] = set()
    for model in models:
        if model.name in seen:
            raise LlmcountError(f"{model.name}: named twice in --family-sizes")
        seen.add(model.name)
    ordered = sorted(models, key=lambda m: m.counts.total)
    sizes = tuple(Size(m, display_name(m), {s.key: s for s in sections(m)}) for m in ordered)
    keys = tuple(dict.fromkeys(k for s in sizes for k, p in s.parts.items() if p.count))
    moves = []
    for key in keys:
        shares = [s.share(key) or Fraction(0) for s in sizes]
        steps = [b - a for a, b in itertools.pairwise(shares)]
        monotonic = all(x > 0 for x in steps) or all(x < 0 for x in steps)
        moves.append(Move(key, shares[0], shares[-1], monotonic))
    rows: dict[str, dict] = {}
    for i, size in enumerate(sizes):
        for var in variables(size.model):
            row = rows.setdefault(var.name, {"latex": var.latex, "key": var.key, "meaning": var.meaning, "values": {}})
            row["values"][i] = var.value
    table = tuple(
        VariableRow(r["latex"], r["key"], r["meaning"], tuple(r["values"].get(i) for i in range(len(sizes))))
        for r in rows.values()
    )
    return FamilySizes(models[0].architecture, sizes, keys, tuple(moves), table)


def sizes_data(fs: FamilySizes) -> dict[str, Any]:
    """The numbers of a family write-up, for ``--json``: exact integers; shares as floats."""
    return {
        "family": fs.family.name,
        "sizes": [
            {
                "name": s.name,
                "spec": s.model.name,
                "total": s.total,
                "activated": s.activated,
                "tied": s.tied,
                "components": [{"component": k, "count": s.count(k), "share": float(s.share(k) or 0)} for k in fs.keys],
            }
            for s in fs.sizes
        ],
        "moves": [
            {"component": m.key, "first": float(m.first), "last": float(m.last), "monotonic": m.monotonic}
            for m in fs.moves
        ],
    }


def render_sizes(fs: FamilySizes, fmt: str, lang: str, chart: str | None = None, chart_svg: bytes | None = None) -> str:
    """The family write-up in ``fmt`` (markdown, latex, html) and ``lang`` (en, zh)."""
    from . import render
    from .writeup import _choose, _tidy

    _choose(fmt, FORMATS, "format")
    _choose(lang, LANGS, "language")
    context = {"fmt": fmt, "lang": lang, "fs": fs, "chart": chart}
    if fmt == "html":
        from .html import CHART_ALT, page

        context["chart"] = CHART_ALT if chart_svg is not None else None
        return page(_tidy(render("writeup/sizes_markdown.j2", **context)), lang, chart_svg)
    return _tidy(render(f"writeup/sizes_{fmt}.j2", **context))


def _family(name: str):
    """The record ``name`` names; a model's name (a preset) is refused with its family as the hint."""
    from ..formulas import records
    from ..formulas.config import find_family
    from ..presets import find

    if records.family(name) is None:
        preset = find(name)
        if preset is not None:
            model_type = preset.config().get("model_type")
            raise LlmcountError(
                f"{name} is a model, not a family: with --family-sizes, MODEL names the family (its model_type, "
                f"here {model_type}) and the list names the sizes"
            )
    return find_family(name, name)


def build_sizes(
    family_name: str,
    specs: str,
    fmt: str = "markdown",
    lang: str = "en",
    *,
    output: str | None = None,
    chart: str | None = None,
    flavor: str = "dollars",
):
    """The family write-up of the sizes ``specs`` names (``a,b,c``: presets, config files, Hub ids) of the family
    ``family_name``, with its chart. Output paths are checked before anything is computed; nothing is written
    here (see :func:`.writeup.save`)."""
    from ..sources import load
    from .writeup import FLAVORS, WriteUp, _choose, targets

    _choose(fmt, FORMATS, "format")
    _choose(lang, LANGS, "language")
    _choose(flavor, FLAVORS, "flavor")
    if flavor != "dollars" and fmt != "markdown":
        raise LlmcountError(f"--flavor {flavor} is for --format markdown, not {fmt}")
    names = parse_sizes(specs)
    family = _family(family_name)
    output, out, image, suffix, link = targets(output, chart, fmt)
    fs = family_sizes(family.name, [load(name) for name in names])
    models = [s.model for s in fs.sizes]
    files: dict[Path, bytes] = {}
    inline = None
    if image is not None or fmt == "html":
        from .charts import render_chart, svg_chart

        if image is not None:
            files[image] = render_chart(models, suffix.lstrip("."), activated=fs.moe, lang=lang)
        else:
            inline = svg_chart(models, activated=fs.moe, lang=lang)
    text = render_sizes(fs, fmt, lang, link, inline)
    if flavor == "commonmark":
        from .html import fence_math

        text = fence_math(text)
    if out is not None:
        files[out] = text.encode("utf-8")
    data = {**sizes_data(fs), "format": fmt, "lang": lang, "output": output, "chart": chart, "flavor": flavor}
    return WriteUp(text, data, files)
