"""Text and JSON of the cost views at a glance: FLOPs conventions side by side, MFU, the weights in every
dtype, and what fits in a GPU's memory. Text fits 80 columns; templates format through filters only."""

from __future__ import annotations

from typing import Any

from ..formulas.capacity import Fit, WeightRow
from ..formulas.config import Model
from ..formulas.conventions import Convention, Ingredients, Utilisation, not_given, ratio_to_6nd
from ..plain_glance import _paper_ratio, conventions_data, mfu_data  # noqa: F401 -- the JSON of both paths
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


def fit_data(model: Model, f: Fit) -> dict[str, Any]:
    return {
        "model": model.name,
        "gpu_memory_bytes": f.capacity,
        "dtype": f.dtype,
        "kv_dtype": f.kv_dtype,
        "overhead_percent": f.overhead_percent,
        "weights_bytes": f.weights,
        "max_seq_at_batch_1": f.max_seq,
        "total_bytes_at_max_seq": f.max_seq_total,
        "max_position_embeddings": f.max_positions,
        "max_seq_by_memory": f.max_seq_by_memory,
        "capped_by_context": f.capped,
        "seq": f.seq,
        "seq_beyond_context": f.seq_beyond_context,
        "max_batch_at_seq": f.max_batch,
        "total_bytes_at_max_batch": f.max_batch_total,
        "unit": "bytes; GiB = 2^30 bytes",
        "note": FIT_NOTE,
    }


FIT_NOTE = (
    "the largest values whose inference memory (weights, scales, KV cache, the stated overhead) is at most "
    "the capacity; null: no limit from memory up to 2^40; max_seq_at_batch_1 is at most the model's context "
    "length (max_position_embeddings, when the config gives it; capped_by_context), max_seq_by_memory is not; "
    "max_batch_at_seq is at the seq asked for, which seq_beyond_context says is longer than the context length"
)
