"""Text and JSON of the cost views at a glance: FLOPs conventions side by side, MFU, the weights in every
dtype, and what fits in a GPU's memory. Text fits 80 columns; templates format through filters only."""

from __future__ import annotations

from typing import Any

from ..formulas.capacity import Fit, WeightRow
from ..formulas.config import Model
from ..formulas.conventions import Convention, Ingredients, Utilisation, not_given, ratio_to_6nd
from ..plain_glance import _paper_ratio, conventions_data, mfu_data  # noqa: F401 -- the JSON of both paths
from ..plain_memory import fit_data as fit_data  # the JSON of memory --gpu-memory, shared with the numeric path
from . import render

WIDTH = 80


def render_conventions(
    model: Model, x: Ingredients, rows: list[Convention], paper: dict[str, Any] | None = None
) -> str:
    """``paper``: a preset's ``six_nd_parameters`` (the N its paper divides by), shown as one more ratio column."""
    reference = next(c for c in rows if c.name == "llmcount").training_flops_per_token
    skipped = not_given(x)
    return render(
        "costs_conventions.txt.j2",
        model=model,
        seq=x.seq,
        x=x,
        rows=rows,
        reference=reference,
        width=WIDTH,
        skipped=skipped,
        ratios={c.name: ratio_to_6nd(x, c) for c in rows},
        paper=paper,
        paper_ratios={c.name: _paper_ratio(c, paper) for c in rows} if paper else {},
    )


def render_mfu(model: Model, u: Utilisation) -> str:
    return render("costs_mfu.txt.j2", model=model, u=u, width=WIDTH)


def render_weights_table(
    model: Model, parameters: int, rows: list[WeightRow], schemes: Any = (), refused: Any = ()
) -> str:
    return render(
        "costs_weights.txt.j2",
        model=model,
        parameters=parameters,
        rows=rows,
        schemes=schemes,
        refused=refused,
        width=WIDTH,
    )


def weights_table_data(
    model: Model, parameters: int, rows: list[WeightRow], schemes: Any = (), refused: Any = ()
) -> dict[str, Any]:
    return {
        "model": model.name,
        "parameters": parameters,
        "unit": "bytes; GiB = 2^30 bytes",
        "weights": [{"dtype": r.name, "bits": r.bits, "bytes": r.bytes, "gib": r.gib, "note": r.note} for r in rows],
        "schemes": [
            {
                "scheme": s.name,
                "as_stored": s.label,
                "quantised_parameters": s.converted,
                "bytes": s.bytes,
                "bits_per_parameter": float(s.bits),
            }
            for s in schemes
        ],
        "schemes_refused": list(refused),
    }


def render_fit(model: Model, f: Fit) -> str:
    return render("costs_fit.txt.j2", model=model, f=f, width=WIDTH)
