"""Memory of the parts of a composite model besides its language model (the vision tower and the projector of
``composites.toml``): their weights in inference memory's weights line, and in training their model states, trained
with the language model or frozen (``--freeze-vision``: weights only, without gradients, master copy or optimizer
states). Each part's parameters are its record's count (``formulas/parts.py``), the whole model's as transformers
builds it; a part is named wherever its bytes are added."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sympy import Integer, Symbol

from ..errors import LlmcountError


def part_symbol(role: str) -> Symbol:
    """``P_vision`` for the vision tower, ``P_projector`` for the projector, ``P_audio`` and ``P_audio_proj`` for a
    second tower and its projector: a part's parameters in a formula."""
    words = role.split()
    name = f"{words[0]}_proj" if len(words) > 1 and words[1] == "projector" else words[0]
    return Symbol(f"P_{name}", positive=True, integer=True)


def parts_named(model: Any) -> str:
    """The parts as a phrase: ``the vision tower (SigLIP vision tower, P_vision = 416,866,032) and the projector
    (...)``."""
    named = [
        f"the {part.role} ({part.model.architecture.title}, {part_symbol(part.role)} = {part.model.counts.total:,})"
        for part in model.parts
    ]
    return " and ".join(named)


def with_parts(model: Any, result: Any, overhead_percent: int = 0) -> Any:
    """An inference :class:`~llmcount.formulas.memory.Memory` whose weights line holds the whole model: the language
    model's P and each part's parameters in the weights' dtype (a quantisation scheme's plan is the language
    model's: the parts are kept in the dtype of what it leaves alone, as checkpoints keep their vision towers), the
    stated overhead (``overhead_percent`` of the lines above it) grown with them. ``result`` unchanged for a model
    without parts."""
    if not getattr(model, "parts", ()):
        return result
    from sympy import Add

    from . import memory as mem

    dtype = result.dtype
    lines = [line for line in result.lines if line.name != "overhead"]
    overhead = [line for line in result.lines if line.name == "overhead"]
    at = next((i for i, line in enumerate(lines) if line.name == "weights"), None)
    if at is None:  # no weights line to add to: say so rather than give the language model's alone
        raise LlmcountError(f"{model.name}: the weights of {parts_named(model)} cannot be added here")
    weights = lines[at]
    extra = sum(part.model.counts.total for part in model.parts)
    formula = weights.formula + Add(*(part_symbol(p.role) for p in model.parts)) * Integer(mem.BITS[dtype]) / 8
    scope = "the whole model" if model.whole_total is not None else f"without {model.composite.left_out}"
    note = f"{weights.note}; {scope}: P of the language model, {parts_named(model)}, in {dtype}"
    lines[at] = replace(weights, formula=formula, bytes=weights.bytes + mem.nbytes(extra, dtype), note=note)
    if overhead and overhead_percent:  # the stated overhead is a percent of every line above it: the parts' too
        counted = [line for line in lines if line.in_total]
        base = sum(line.bytes for line in counted)
        grown = Add(*(line.formula for line in counted)) * overhead_percent / 100
        overhead = [replace(overhead[0], formula=grown, bytes=-(-base * overhead_percent // 100))]
    return replace(result, lines=(*lines, *overhead))


def with_parts_training(model: Any, result: Any, optimizer: str, freeze: bool, lora: Any = None) -> Any:
    """A :class:`~llmcount.formulas.training.Training` with the parts' model states added on the GPU counted: their
    weights always, and with gradients, fp32 master copy and optimizer states unless ``freeze`` (or LoRA, which
    trains adapters of the language model only). The parts are not split: under --tp, --pp or --ep they are refused
    by name (how a tower is split or placed is not modelled). Their activations are not counted, and a note says so.
    ``freeze`` on a model without parts is refused."""
    parts = getattr(model, "parts", ())
    if not parts:
        if freeze:
            raise LlmcountError(f"--freeze-vision: {model.name} has no vision tower counted (a language model only)")
        return result
    from . import training as tr

    parallel = result.parallel
    if parallel.tp > 1 or parallel.pp > 1 or parallel.ep > 1:
        raise LlmcountError(
            f"--tp/--pp/--ep with {parts_named(model)}: how the parts are split or placed is not modelled "
            "(llmcount memory MODEL --training counts them on every data-parallel GPU)"
        )
    frozen = freeze or lora is not None
    held = tr.Held()
    for part in parts:
        values = dict(part.model.values)
        for term in part.model.derivation.terms:
            layers = int(term.layers.subs(values))
            if frozen:
                held = held + tr.Held(frozen=int(term.expr.subs(values)) * layers)
            else:
                held = held + tr._held(term, values, tr.Parallel(), optimizer, None).times(layers)
    total = result.held + held
    lines = tuple(tr._state_lines(total, result.dtype, optimizer, parallel))
    extra = sum(part.model.counts.total for part in parts)
    if freeze:
        note = (
            f"--freeze-vision: {parts_named(model)} are frozen ({extra:,} parameters): held as {result.dtype} "
            "weights only, without gradients, master copy or optimizer states"
        )
    elif lora is not None:
        note = f"LoRA: {parts_named(model)} are frozen with the base ({extra:,} parameters, weights only)"
    else:
        note = (
            f"trained with the language model: {parts_named(model)} ({extra:,} parameters), with gradients, master "
            "copy and optimizer states (--freeze-vision: weights only)"
        )
    activations = "activations: the language model's over B × S text tokens; the parts' own are not counted"
    return replace(
        result, parameters=result.parameters + extra, held=total, lines=lines, notes=(*result.notes, note, activations)
    )


__all__ = ["part_symbol", "parts_named", "with_parts", "with_parts_training"]
