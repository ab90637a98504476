"""``flops``'s table of a model counted by the compiled path (:mod:`llmcount.counting`), without sympy: what the
template ``costs_flops.txt.j2`` renders for the sympy path's formula, written out in Python from the snapshot's
formulas as the terminal prints them (``tests/test_numeric_path.py`` holds the two texts equal)."""

from __future__ import annotations

from typing import Any

from .counting import Counted, Fallback
from .formulas.flop_counts import RULE_DEFINITION, TRAINING_DEFINITION, FlopCounts
from .plain import fit_table, flops, grouped, percent, wrap


def _texts(model: Counted, causal: bool) -> tuple[dict[str, str], str]:
    """Each term's forward FLOPs as ``flops`` prints it, by path, and the per-token sum in reader's order;
    :class:`Fallback` when the snapshot holds neither."""
    chosen = model.shown["flops"]["causal" if causal else "eager"]
    if "texts" not in chosen:
        raise Fallback
    return {term[0]: text for term, text in zip(chosen["terms"], chosen["texts"], strict=True)}, chosen["grouped"]


def render_flops(model: Counted, counts: FlopCounts, causal: bool, training: bool, width: int | None = None) -> str:
    """The FLOPs table of ``flops`` for ``counts`` of :meth:`Counted.flops`, for a terminal of ``width`` columns
    (``None``: unbounded); ``training`` adds the training figure and the 6·N·tokens rule of thumb."""
    texts, per_token = _texts(model, causal)
    c = counts
    title = (
        f"{model.name} ({model.architecture.title}; {model.source}): forward FLOPs of B = {c.batch} "
        f"sequence{'s' if c.batch != 1 else ''} of S = {grouped(c.seq)} tokens{' (causal attention)' if causal else ''}"
    )
    rows: list[list[str]] = [["component", "formula", "FLOPs", "", "share"]]
    for comp in c.components:
        share = percent(comp.flops, c.forward)
        rows.append([comp.path, texts[comp.path], grouped(comp.flops), flops(comp.flops), share])
    rows.append(["", "", "", "", ""])
    rows.append(["forward", "", grouped(c.forward), flops(c.forward), ""])
    rows.append(["per token", "forward / (B·S)", grouped(c.per_token), flops(c.per_token), ""])
    if training:
        rows.append(["training", "3 × forward", grouped(c.training), flops(c.training), ""])
    out = [wrap(title, width, "  "), fit_table(rows, "llrrr", width, 1), ""]
    out.append(wrap(f"F/(B·S) = {per_token}", width, "    "))
    if training:
        rule = (
            f"rule of thumb 6·P_act·B·S = {grouped(c.rule_of_thumb)} ({flops(c.rule_of_thumb)}), "
            f"{c.rule_error_percent:+.2f}% against the training count"
        )
        out.append(wrap(rule, width, "  "))
        out.append(wrap(f"  ({RULE_DEFINITION})", width, "   "))
        out.append(wrap(TRAINING_DEFINITION, width, "  "))
    out.append(wrap(f"convention: {c.convention}", width, "  "))
    return "\n".join(out) + "\n"


def flops_text(model: Any, seq: int, batch: int, causal: bool, training: bool, width: int | None) -> str | None:
    """``flops``'s text for a model :func:`llmcount.sources.load_counted` gave, without sympy; None when the model
    was read by the sympy path or the snapshot does not take it (the caller renders the sympy formula, which words
    any refusal)."""
    if not isinstance(model, Counted):
        return None
    try:
        return render_flops(model, model.flops(seq, batch, causal), causal, training, width)
    except Fallback:
        return None
