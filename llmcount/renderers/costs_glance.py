"""Text and JSON of the cost views at a glance: FLOPs conventions side by side, MFU, the weights in every
dtype, and what fits in a GPU's memory. Text fits 80 columns; templates format through filters only."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..formulas.capacity import Fit, WeightRow
from ..formulas.config import Model
from ..formulas.conventions import Convention, Ingredients, Utilisation, not_given, ratio_to_6nd
from ..plain_memory import fit_data as fit_data  # the JSON of memory --gpu-memory, shared with the numeric path
from . import render

WIDTH = 80


def _number(value: Fraction) -> int | float:
    """An exact int when the fraction is whole, else a float: for JSON."""
    return int(value) if value.denominator == 1 else float(value)


def _paper_ratio(made: Convention, paper: dict[str, Any]) -> Fraction:
    """A convention's training FLOPs per token over 6·N, N the paper's own (a preset's ``six_nd_parameters``)."""
    return Fraction(made.training_flops_per_token) / (6 * paper["N"])


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


def conventions_data(
    model: Model, x: Ingredients, rows: list[Convention], paper: dict[str, Any] | None = None
) -> dict[str, Any]:
    data = {
        "model": model.name,
        "family": model.architecture.name,
        "seq": x.seq,
        "unit": "training FLOPs per token (forward + backward), exact",
        "ingredients": {
            "N_non_embedding_activated": x.non_embedding,
            "W_linear_weights_per_token": x.weights,
            "W_router": x.router,
            "L_attention_layers": x.layers,
            "h_d_qk": x.qk,
            "h_d_v": x.v,
            "sum_h_d_qk": x.qk_sum,
            "sum_h_d_v": x.v_sum,
            "widths_differ": x.uneven or None,
            "h": x.heads,
            "d": x.hidden,
            "V": x.vocab,
            "V_pad": x.padded_vocab,
            "P_activated": x.activated,
            "input_embedding_tables": x.input_tables,
            "tied": x.tied,
            "state_layer_kinds": list(x.state_kinds),
            "W_state_megatron": x.state_weights,
            "M_state_megatron": x.megatron_states,
        },
        "conventions": [
            {
                "name": c.name,
                "training_flops_per_token": _number(Fraction(c.training_flops_per_token)),
                "formula": c.formula,
                "source": c.source,
                "includes": c.includes,
                "ratio_to_6nd": float(ratio_to_6nd(x, c)),
            }
            for c in rows
        ],
        "not_given": [{"name": name, "reason": reason} for name, reason in not_given(x).items()],
    }
    if paper:
        data["paper_6nd"] = {"N": paper["N"], "source": paper["source"]}
        for made, row in zip(rows, data["conventions"], strict=True):
            ratio = _paper_ratio(made, paper)
            row["ratio_to_paper_6nd"] = float(ratio)
            row["ratio_to_paper_6nd_fraction"] = f"{ratio.numerator}/{ratio.denominator}"
    return data


def render_mfu(model: Model, u: Utilisation) -> str:
    return render("costs_mfu.txt.j2", model=model, u=u, width=WIDTH)


def mfu_data(model: Model, u: Utilisation) -> dict[str, Any]:
    return {
        "model": model.name,
        "seq": u.seq,
        "convention": u.convention.name,
        "training_flops_per_token": _number(Fraction(u.convention.training_flops_per_token)),
        "formula": u.convention.formula,
        "includes": u.convention.includes,
        "source": u.convention.source,
        "tokens_per_second": _number(u.tokens_per_second),
        "gpus": u.gpus,
        "gpu": u.gpu or None,
        "dtype": u.dtype,
        "peak_tflops_per_gpu": _number(u.peak_tflops),
        "achieved_flops_per_second": _number(u.achieved),
        "peak_flops_per_second": _number(u.peak),
        "mfu": float(u.mfu),
        "mfu_fraction": f"{u.mfu.numerator}/{u.mfu.denominator}",
        "definition": "MFU = tokens/s of all GPUs × training FLOPs per token / (GPUs × dense peak FLOP/s per GPU)",
    }


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
