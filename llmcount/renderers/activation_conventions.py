"""Text and JSON of ``memory --training --conventions``: Korthikanti et al.'s activations per layer beside
llmcount's exact figure."""

from __future__ import annotations

import textwrap
from fractions import Fraction
from typing import Any

from ..formulas.activation_conventions import DIFFERENCES, SOURCE, ActivationConvention


def _number(value: Fraction) -> int | float:
    return int(value) if value.denominator == 1 else float(value)


def _grouped(value: Fraction) -> str:
    return f"{int(value):,}" if value.denominator == 1 else f"{float(value):,.1f}"


def conventions_data(rows: list[ActivationConvention], exact: int | None, sizes: dict[str, int], why: str) -> dict:
    out: dict[str, Any] = {
        "unit": "activation bytes of one layer on one GPU",
        "sizes": sizes,
        "llmcount_bytes_per_layer": exact,
        "llmcount_note": why,
        "rows": [
            {
                "name": r.name,
                "bytes_per_layer": _number(r.bytes_per_layer),
                "formula": r.formula,
                "source": r.source,
                "matches_options": r.matches,
                "llmcount_over_row": None if exact is None else float(Fraction(exact) / r.bytes_per_layer),
            }
            for r in rows
        ],
        "differences": DIFFERENCES,
    }
    return out


def render_conventions(rows: list[ActivationConvention], exact: int | None, sizes: dict[str, int], why: str) -> str:
    width = 80
    head = ", ".join(f"{k} = {v:,}" for k, v in sizes.items())
    lines = textwrap.wrap(
        f"Activations of one layer on one GPU, as Korthikanti et al. 2022 count them ({head}):", width
    )
    name_w = max(len(r.name) for r in rows) + 2
    lines.append(f"{'row':<{name_w}}{'bytes per layer':>18}  {'llmcount / row':>14}")
    for r in rows:
        ratio = "" if exact is None else f"{float(Fraction(exact) / r.bytes_per_layer):.4f}"
        mark = " *" if r.matches else ""
        lines.append(f"{r.name:<{name_w}}{_grouped(r.bytes_per_layer):>18}  {ratio:>14}{mark}")
    lines.append("* the row of the options given (--tp, --sequence-parallel, --recompute)")
    if exact is not None:
        lines += textwrap.wrap(f"llmcount (exact, transformers' autograd): {exact:,} bytes per layer, {why}", width)
    else:
        lines += textwrap.wrap(f"llmcount: not given, {why}", width)
    for r in rows:
        lines += textwrap.wrap(f"{r.name}: {r.formula}", width, subsequent_indent="    ")
    lines += textwrap.wrap(f"source: {SOURCE}", width, subsequent_indent="    ")
    lines += textwrap.wrap(f"why they differ: {DIFFERENCES}", width, subsequent_indent="    ")
    return "\n".join(lines)
