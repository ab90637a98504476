"""``flops --conventions`` and ``mfu`` without sympy: the ingredients of :mod:`llmcount.formulas.conventions` read
from the snapshot of a model counted by the compiled path (:mod:`llmcount.counting`), the conventions computed by
the same functions as the sympy path's, and their text and JSON.

The text is what the templates ``costs_conventions.txt.j2`` and ``costs_mfu.txt.j2`` render, written out in Python
(``tests/test_plain_glance.py`` holds the texts equal on every preset and every record's defaults); the JSON is made
here for both paths (:mod:`llmcount.renderers.costs_glance` imports it). Anything the snapshot does not hold raises
:class:`~llmcount.counting.Fallback` before a word is printed, and the caller computes through the sympy path, which
words every refusal: a selection of terms without a conventions table, S past the longest the record's [attention]
describes, a value the config lacks, a count that is not whole, Megatron's MTP layers (--mtp).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from . import evaluate
from .counting import Counted, Fallback
from .formulas.conventions import (
    Convention,
    Ingredients,
    Utilisation,
    not_given,
    ratio_to_6nd,
)
from .plain import grouped, table, wrap
from .plain_conventions import _number as _json_number

WIDTH = 80


def _number(source: str, values: dict[str, int]) -> int | Fraction:
    """A compiled expression at ``values``; Fallback where a value is missing or a divisor is zero."""
    try:
        return evaluate.from_source(source)(values)
    except (KeyError, ZeroDivisionError):
        raise Fallback from None


def _whole(value: int | Fraction) -> int:
    """``value``, which must be a whole number; Fallback where it is not (the sympy path words it)."""
    number = evaluate.whole(value)
    if number is None:
        raise Fallback
    return number


def _table(model: Any) -> dict[str, Any]:
    """The snapshot's conventions table of the model's selection of terms; Fallback when there is none."""
    if not isinstance(model, Counted) or model.shown is None:
        raise Fallback
    table = (model.shown.get("flops") or {}).get("conventions")
    if table is None or "V" not in model.values or "d" not in model.values:
        raise Fallback
    return table


def _tied(model: Counted) -> bool:
    """``Model.tied``: the record has an LM head this config leaves out."""
    paths = {term[0] for term in model.plan.terms}
    return any(c.path == "head/lm_head" for c in model.architecture.choices) and "head/lm_head" not in paths


def ingredients(model: Any, seq: int) -> Ingredients:
    """``conventions.ingredients`` of a model counted by the compiled path, from its snapshot."""
    table = _table(model)
    values = model.values
    eager, causal = model.flops(seq, 1).per_token, model.flops(seq, 1, True).per_token  # Fallback past the longest S
    present = [state for state in table["states"] if _whole(_number(state[1], values))]
    megatron = [state for state in present if state[2] is not None]
    groups = {group for state in megatron for group in state[4]}
    weights = router = state_weights = 0
    for group, is_router, source in table["weights"]:
        per_token = _whole(_number(source, values)) // 2
        weights += per_token
        router += per_token if is_router else 0
        state_weights += per_token if group in groups else 0
    attention = table["attention"]
    layers = 0 if attention is None else _whole(_number(attention["layers"], values))
    uneven = "" if attention is None else attention["uneven"]

    def width(key: str) -> int:
        return _whole(_number(attention[key], values)) if layers else 0

    return Ingredients(
        seq=seq,
        non_embedding=model.activated - model.embedding,
        activated=model.activated,
        input_tables=sum(c.count for c in model.components if c.embedding and c.path != "head/lm_head"),
        tied=_tied(model),
        weights=weights,
        router=router,
        layers=layers,
        qk=None if uneven else width("qk"),
        v=None if uneven else width("v"),
        qk_sum=width("qk_sum"),
        v_sum=width("v_sum"),
        heads=values.get("h"),
        hidden=values["d"],
        vocab=values["V"],
        eager_forward=eager,
        causal_forward=causal,
        state_kinds=tuple(dict.fromkeys(state[0] for state in present)),
        state_weights=state_weights,
        megatron_states=sum(_whole(_number(state[1], values) * _number(state[2], values)) for state in megatron),
        megatron_kinds=tuple((state[0], *state[3]) for state in megatron),
        megatron_missing=tuple(dict.fromkeys(state[0] for state in present if state[2] is None)),
        megatron_norms=sum(_whole(_number(source, values)) for source in table["megatron_norms"]),
        uneven=uneven,
        own_ops=tuple(path for path, source in table["own_ops"] if _whole(_number(source, values))),
    )


def _paper_ratio(made: Convention, paper: dict[str, Any]) -> Fraction:
    """A convention's training FLOPs per token over 6·N, N the paper's own (a preset's ``six_nd_parameters``)."""
    return Fraction(made.training_flops_per_token) / (6 * paper["N"])


def render_conventions(model: Any, x: Ingredients, rows: list[Convention], paper: dict[str, Any] | None = None) -> str:
    """``flops --conventions``'s text; ``paper``: a preset's ``six_nd_parameters`` (the N its paper divides by),
    shown as one more ratio column."""
    reference = next(c for c in rows if c.name == "llmcount").training_flops_per_token
    title = (
        f"{model.name} ({model.architecture.title}; {model.source}): training FLOPs per token at S = "
        f"{grouped(x.seq)}, as each convention counts them"
    )
    six_nd = "/ 6ND: over 6 FLOPs per parameter per token, N = P (every activated parameter)"
    out = [wrap(title, WIDTH)]
    if paper:
        cells = [["convention", "FLOPs per token", "/ llmcount", "/ 6ND", "/ 6N'D"]]
        for c in rows:
            per_token = c.training_flops_per_token
            ratios = tuple(map(float, (per_token / reference, ratio_to_6nd(x, c), _paper_ratio(c, paper))))
            cells.append([c.name, grouped(per_token), f"{ratios[0]:.4f}", f"{ratios[1]:.4f}", f"{ratios[2]:.2f}"])
        out += [table(cells, "lrrrr"), six_nd]
        out.append(wrap(f"/ 6N'D: over 6·N' per token, N' = {grouped(paper['N'])}, {paper['source']}", WIDTH, "  "))
    else:
        cells = [["convention", "FLOPs per token", "", "/ llmcount", "/ 6ND"]]
        for c in rows:
            per_token = c.training_flops_per_token
            ratios = tuple(map(float, (per_token / reference, ratio_to_6nd(x, c))))
            cells.append(
                [c.name, grouped(per_token), f"{float(per_token):.3e}", f"{ratios[0]:.4f}", f"{ratios[1]:.4f}"]
            )
        out += [table(cells, "lrrrr"), six_nd]
    out += ["", wrap(_ingredients_line(x), WIDTH, "  ")]
    for c in rows:
        out += ["", wrap(f"{c.name}: {c.formula}", WIDTH, "    ")]
        out += [wrap(f"counts: {c.includes}", WIDTH, "    "), wrap(f"source: {c.source}", WIDTH, "    ")]
    for name, reason in not_given(x).items():
        out += ["", wrap(f"{name}: {reason}", WIDTH, "    ")]
    return "\n".join(out) + "\n"


def _ingredients_line(x: Ingredients) -> str:
    """The line under the conventions' table that gives their ingredients."""
    if x.qk is not None:
        widths = f", h·d_qk = {grouped(x.qk)}, h·d_v = {grouped(x.v)}"
    else:
        widths = f", Σ h·d_qk = {grouped(x.qk_sum)}, Σ h·d_v = {grouped(x.v_sum)} (sums over the layers; {x.uneven})"
    line = (
        f"N = {grouped(x.non_embedding)} (activated non-embedding parameters), P = {grouped(x.activated)} (every "
        f"activated parameter), W = {grouped(x.weights)} (linear weights per token), L = {x.layers} attention layers"
        f"{widths}, d = {grouped(x.hidden)}, V = {grouped(x.vocab)} (V_pad = {grouped(x.padded_vocab)})"
    )
    if x.heads is not None:
        line += f", h = {x.heads}"
    if x.megatron_kinds:
        line += (
            f", W_state = {grouped(x.state_weights)}, M_state = {grouped(x.megatron_states)} (per token: the state "
            "layers' linear weights, and Megatron's FLOPs for those layers)"
        )
    return line


def conventions_data(
    model: Any, x: Ingredients, rows: list[Convention], paper: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``flops --conventions --json`` of a model of either path."""
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
                "training_flops_per_token": _json_number(Fraction(c.training_flops_per_token)),
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


def render_mfu(model: Any, u: Utilisation) -> str:
    """``mfu``'s text."""
    c = u.convention
    title = (
        f"{model.name} ({model.architecture.title}; {model.source}): model FLOPs utilisation at S = "
        f"{grouped(u.seq)}, {c.name} convention"
    )
    rate = f"{float(u.tokens_per_second):g} (all {u.gpus} GPU{'s' if u.gpus != 1 else ''})"
    achieved = f"{float(u.achieved / 10**12):.4g} TFLOP/s ({float(u.achieved / u.gpus / 10**12):.4g} per GPU)"
    peak = f"{u.gpus} × {float(u.peak_tflops):g} TFLOP/s" + (f" ({u.gpu})" if u.gpu else " (--peak-tflops)")
    cells = [
        ["training FLOPs per token", grouped(c.training_flops_per_token)],
        ["tokens per second", rate],
        ["achieved", achieved],
        [f"peak (dense {u.dtype})", peak],
        ["MFU", f"{float(100 * u.mfu):.2f}%"],
    ]
    out = [wrap(title, WIDTH), table(cells, "ll"), ""]
    out += [wrap(f"formula: {c.formula}", WIDTH, "  "), wrap(f"counts: {c.includes}", WIDTH, "  ")]
    out.append(wrap(f"source: {c.source}", WIDTH, "  "))
    definition = (
        "MFU = tokens/s of all GPUs × training FLOPs per token / (GPUs × dense peak FLOP/s per GPU); other "
        "conventions: llmcount flops MODEL --conventions"
    )
    out.append(wrap(definition, WIDTH, "  "))
    return "\n".join(out) + "\n"


def mfu_data(model: Any, u: Utilisation) -> dict[str, Any]:
    """``mfu --json`` of a model of either path."""
    return {
        "model": model.name,
        "seq": u.seq,
        "convention": u.convention.name,
        "training_flops_per_token": _json_number(Fraction(u.convention.training_flops_per_token)),
        "formula": u.convention.formula,
        "includes": u.convention.includes,
        "source": u.convention.source,
        "tokens_per_second": _json_number(u.tokens_per_second),
        "gpus": u.gpus,
        "gpu": u.gpu or None,
        "dtype": u.dtype,
        "peak_tflops_per_gpu": _json_number(u.peak_tflops),
        "achieved_flops_per_second": _json_number(u.achieved),
        "peak_flops_per_second": _json_number(u.peak),
        "mfu": float(u.mfu),
        "mfu_fraction": f"{u.mfu.numerator}/{u.mfu.denominator}",
        "definition": "MFU = tokens/s of all GPUs × training FLOPs per token / (GPUs × dense peak FLOP/s per GPU)",
    }
