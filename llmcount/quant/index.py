"""``verify --index`` on a quantised checkpoint: ``metadata.total_size`` against the bytes the config's scheme
predicts for the model's parameters, and every byte of the difference attributed to what the index's tensor names
show (a tied head stored again, buffers, layers past ``num_hidden_layers``), or named as unexplained.

Without shapes an index tells names only, so each item's bytes come from the record and the known layouts:
a head stored again is V·d values in the checkpoint dtype; ``e_score_correction_bias`` is (n,) float32 in
DeepSeek's released checkpoints; the layers past N (multi-token prediction) take what is left, their tensors named.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..checkpoint import ComponentCheck, Verification, findings, named, part_note, part_places, read_index, total_size
from .config import Quant

if TYPE_CHECKING:
    from ..formulas.config import Model


def explain(
    model: Model, names: list[str], difference: int, head: int, bias: int | None, dtype: str
) -> list[ComponentCheck]:
    """The items the index's names show and what is left of ``difference``: to the layers past N when there are
    some, else unexplained. ``head``: units one value of the head takes (its bytes, or 1 when the totals are
    parameters); ``bias``: units one float32 buffer value takes (None: not a whole number of them)."""
    checks: list[ComponentCheck] = []
    explained = 0
    found = findings(model, names)
    values = named(model)
    for finding in found:
        if finding.kind == "tied_head":
            amount = values["V"] * values["d"] * head
            note = f"the head is tied (tie_word_embeddings) and stored again: V·d = {finding.params:,} values in "
            checks.append(ComponentCheck("head/lm_head", 0, amount, note + dtype))
            explained += amount
        elif finding.kind == "missing_head":
            amount = values["V"] * values["d"] * head
            checks.append(ComponentCheck("head/lm_head", amount, 0, "no lm_head.weight in the index's weight_map"))
            explained -= amount
        elif finding.kind == "buffers":
            biases = [name for name in names if name.endswith("e_score_correction_bias")]
            if biases and bias is not None and "n" in values and len(biases) == finding.count:
                amount = len(biases) * values["n"] * bias
                note = f"{len(biases)} routing-bias buffers e_score_correction_bias, (n,) float32 each: not parameters"
                checks.append(ComponentCheck("buffer/e_score_correction_bias", 0, amount, note))
                explained += amount
    remainder = difference - explained
    extra = next((f for f in found if f.kind == "extra_layers"), None)
    unsized = [f for f in found if f.kind == "buffers" and not any(c.path.startswith("buffer/") for c in checks)]
    if extra is not None:
        layers = ", ".join(map(str, extra.layers))
        also = f", with {unsized[0].count} buffers ({unsized[0].examples[0]} ...)" if unsized else ""
        note = (
            f"layers {layers}, past num_hidden_layers ({extra.count} tensors, e.g. {extra.examples[0]}){also}: a "
            "multi-token-prediction module the model code does not build; its size is what total_size holds "
            "beyond the rest (an index gives no shapes)"
        )
        checks.append(ComponentCheck(f"extra/layers.{extra.layers[0]}", 0, remainder, note))
    elif unsized and remainder:
        buffers = unsized[0]
        note = (
            f"{buffers.count} buffers saved with the weights (e.g. {buffers.examples[0]}), not parameters: their "
            "size is what total_size holds beyond the rest (an index gives no shapes)"
        )
        checks.append(ComponentCheck("buffer/saved", 0, remainder, note))
    elif remainder:
        note = "no tensor name of the index accounts for this (other dtypes, a layout, tensors the record lacks)"
        checks.append(ComponentCheck("unexplained", 0, remainder, note))
    return checks


TOWER_MODULES = ("vision_model", "vision_tower", "visual", "multi_modal_projector", "audio_tower", "mm_projector")
"""Top-level modules of a composite checkpoint's parts beside the language model, after an optional ``model.``
(transformers 5's ``model.vision_tower``, transformers 4's and Qwen-VL's ``vision_tower`` and ``visual``)."""


def stored_parts(model: Model, names: list[str], unit: int, dtype: str) -> tuple[list[ComponentCheck], list[str]]:
    """A composite's parts (vision tower, projector, audio tower, as :mod:`llmcount.formulas.parts` counts them)
    against the index's names: a row per part, its parameters at ``unit`` per value in ``dtype`` in the formula, and
    in the checkpoint when the index names some of its tensors (none: the row says it is missing); and the names
    left to the language model. Where nothing names each part's modules, one row for the parts together when the
    index holds tensors of the usual modules (:data:`TOWER_MODULES`); none for a model without parts."""
    place = part_places(model)
    if place is not None:
        return _placed_parts(place, names, unit, dtype)
    parts = getattr(model, "parts", ())
    if not parts:
        return [], names
    composite = getattr(model, "composite", None)
    own = tuple(composite.parts_modules) if composite is not None else ()
    found = []
    for name in names:
        modules = name.split(".")
        top = modules[1] if modules[0] == "model" and len(modules) > 2 else modules[0]
        if top in TOWER_MODULES or top in own:
            found.append(name)
    if not found:
        return [], names
    params = sum(part.model.counts.total for part in parts)
    named = " and ".join(
        f"the {part.role} ({part.model.architecture.title}, {part.model.counts.total:,} parameters)" for part in parts
    )
    note = f"{named}, in {dtype}: the index names {len(found):,} of their tensors (e.g. {found[0]})"
    return [ComponentCheck("parts", params * unit, params * unit, note)], names


def _placed_parts(place: Any, names: list[str], unit: int, dtype: str) -> tuple[list[ComponentCheck], list[str]]:
    """:func:`stored_parts` where ``place`` (:func:`llmcount.checkpoint.part_places`) maps names to parts."""
    listed: dict[str, list[str]] = {}
    rest = []
    for name in names:
        path = place(name)
        if path is None:
            rest.append(name)
        else:
            listed.setdefault("/".join(path.split("/")[:2]), []).append(name)
    rows = []
    for name, part in place.parts.items():
        path, count = f"parts/{name}", part.model.counts.total
        found = listed.get(path, [])
        if found:
            note = f"the {part.role} ({part.model.architecture.title}, {count:,} parameters) in {dtype}: the index "
            note += f"names {len(found):,} of its tensors (e.g. {found[0]})"
            rows.append(ComponentCheck(path, count * unit, count * unit, note))
        else:
            note = part_note(part, place.modules[name], count, 0, "the index")
            rows.append(ComponentCheck(path, count * unit, 0, note))
    return rows, rest


def verify_index(model: Model, path: Path, quant: Quant, dtype: str | None) -> Verification:
    """The index at ``path`` against ``model`` stored as ``quant`` (see the module docstring); totals in bytes."""
    from .report import lines, model_plan
    from .stored import CODE_BITS

    index = read_index(path)
    size = total_size(path, index)
    stored = model_plan(model, quant, dtype, str(path))
    predicted = stored.bytes
    names = list(index["weight_map"])
    width = CODE_BITS[stored.dtype] // 8
    parts, names = stored_parts(model, names, width, stored.dtype)  # in the dtype of what the scheme leaves alone
    predicted += sum(c.formula for c in parts)
    missing = sum(c.formula - c.checkpoint for c in parts)  # parts the index lists no tensor of, each a row
    checks = parts + explain(model, names, size - predicted + missing, width, 4, stored.dtype)
    caveat = next((n for n in stored.notes if "names none of the parts" in n), None)
    if caveat is not None and parts and size != predicted:
        checks = [
            c if c.path != "unexplained" else ComponentCheck(c.path, c.formula, c.checkpoint, f"{c.note}; {caveat}")
            for c in checks
        ]
    weights = lines(stored)[0]
    described = "; ".join(f"{line.name.replace('_', ' ')} {line.bytes:,} bytes" for line in weights)
    return Verification(
        model=(model.whole_name or model.name) if parts else model.name,
        source=str(path),
        mode="index",
        formula_total=predicted,
        checkpoint_total=size,
        components=tuple(checks),
        note=f"bytes, not parameters: the model's {stored.parameters:,} parameters stored as {quant.label} "
        f"({described}) against metadata.total_size",
        unit="bytes",
    )
