"""The parts of a composite model besides its language model (vision tower, projector: ``formulas/parts.py``) on
each GPU of an inference engine's layout, as vLLM places them (``engines/vllm_parts.toml``): under tensor
parallelism each part's terms split as the record there says (a column-parallel layer's weight and bias, a
row-parallel layer's weight over the tp ranks, the rest whole on every rank), under pipeline parallelism the parts
on the first stage only. Without tp or pp a part is whole on the GPU. What the table does not state for a
composite or a part is refused by name, never left out."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .errors import LlmcountError

TABLE = Path(__file__).parent / "engines" / "vllm_parts.toml"


@dataclass(frozen=True)
class Placement:
    """The parts' parameters on a GPU of the first pipeline stage (the later stages hold none when pp > 1) and the
    words that say how they were placed."""

    parameters: int  # on one GPU of the first stage
    whole: int  # of the whole parts (every rank's share together, each part once)
    note: str


@cache
def table() -> dict[str, Any]:
    """``engines/vllm_parts.toml``, parsed once, its expressions checked against the part records it names."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    from .formulas import records
    from .formulas.expressions import formula

    data = tomllib.loads(TABLE.read_text("utf-8"))
    parts: dict[str, Any] = {}
    for name, spec in data["parts"].items():
        record = records.tower(name)
        if record is None:
            raise LlmcountError(f"{TABLE.name}: [parts.{name}] names no tower or projector record")
        paths = {choice.term.path for choice in record.choices}
        split = {}
        for path, text in spec.get("split", {}).items():
            if path not in paths:
                raise LlmcountError(f"{TABLE.name}: [parts.{name}.split] {path} is not a term of the record")
            split[path] = formula(text, f"{TABLE.name} [parts.{name}.split] {path}")
        symbols = {spec_.symbol.name: spec_ for spec_ in record.symbols}
        for symbol in spec.get("divides", []):
            if symbol not in symbols:
                raise LlmcountError(f"{TABLE.name}: [parts.{name}] divides {symbol}, not a symbol of the record")
        keys = {
            s: f"{symbols[s].key} as {symbols[s].adjust_text}" if symbols[s].adjust is not None else symbols[s].key
            for s in spec.get("divides", [])
        }
        parts[name] = {**spec, "split": split, "keys": keys}
    return {**data, "parts": parts}


def placement(model: Any, tp: int, pp: int) -> Placement | None:
    """Where the parts of ``model`` sit on a GPU of a tp × pp layout (None for a model without parts);
    LlmcountError naming the composite, the part or the config key when vLLM's placement is not recorded or the
    layout does not divide what vLLM splits."""
    parts = getattr(model, "parts", ())
    if not parts:
        return None
    from .formulas.derivation import evaluate_int
    from .formulas.tower_memory import part_symbol, parts_named

    whole = sum(part.model.counts.total for part in parts)
    if tp == 1 and pp == 1:
        return Placement(whole, whole, f"the whole model on the GPU: {parts_named(model)}")
    data = table()
    kind = model.composite.name
    known = ", ".join(sorted(data["composites"]))
    flags = " ".join(f"--{name} {degree}" for name, degree in (("tp", tp), ("pp", pp)) if degree > 1)
    composite = data["composites"].get(kind)
    if composite is None:
        raise LlmcountError(
            f"{flags}: how vLLM places {parts_named(model)} of {model.whole_name or model.name} ({kind}) is not "
            f"recorded (engines/{TABLE.name}: {known})"
        )
    held, told = 0, []
    for part in parts:
        record = part.model.architecture.name
        spec = data["parts"].get(record)
        if spec is None:
            raise LlmcountError(
                f"{flags}: how vLLM splits the {part.role} of {model.whole_name or model.name} "
                f"({part.model.architecture.title}, record {record}) is not recorded (engines/{TABLE.name})"
            )
        values = dict(part.model.values)
        paths = {term.path for term in part.model.derivation.terms}
        skipped = set(composite.get("not_loaded", {}).get(record, ())) & paths  # vLLM builds none of them
        built = ""
        if "feature_layer" in composite and part.config_key:  # the tower, built up to its deepest feature layer
            symbol = next(s for s in values if s.name == "N_vis")
            layers = _built_layers(model, composite, values[symbol], flags)
            if layers != values[symbol]:
                built = f"{layers} of its {values[symbol]} layers (up to vision_feature_layer)"
            values[symbol] = layers
        missing = sorted(paths & set(composite.get("not_built", {}).get(record, ())))
        if missing:
            raise LlmcountError(
                f"{flags}: the {part.role} of {model.whole_name or model.name} has {', '.join(missing)}, which vLLM's "
                f"{kind} class does not build ({composite['source'].split(':')[0]}): its weights are not loaded there"
            )
        plain = record in composite.get("whole_parts", ())  # plain modules in this composite's class: whole
        for symbol, key in ({} if plain else spec["keys"]).items():
            value = next(v for s, v in values.items() if s.name == symbol)
            if value % tp:
                given = f"{part.config_key}.{key} = {value}" if " as " not in key else f"{symbol} = {value} ({key})"
                raise LlmcountError(
                    f"--tp {tp} does not divide {given}, the {part.role}'s {symbol}: vLLM asserts it does "
                    f"({spec['source'].split(':')[0]})"
                )
        share = 0
        for term in part.model.derivation.terms:
            if term.path in skipped:
                continue
            layers = evaluate_int(term.layers, values, term.path)
            each = evaluate_int(term.expr, values, term.path)
            splits = {} if plain else spec["split"]
            split = evaluate_int(splits[term.path], values, term.path) if term.path in splits else 0
            if not 0 <= split <= each or split % tp:
                raise LlmcountError(
                    f"--tp {tp} does not divide the {split:,} parameters of the {part.role}'s {term.path} it splits"
                )
            share += (split // tp + each - split) * layers
        held += share
        told.append(f"{part_symbol(part.role)}: {share:,} of {part.model.counts.total:,} per GPU")
        if built or skipped:
            left = [built] if built else []
            left += [f"no {', '.join(sorted(skipped))}"] if skipped else []
            told[-1] += f" (vLLM builds {'; '.join(left)}: those weights of the checkpoint are not loaded)"
    where = []
    if tp > 1:
        where.append(
            f"split over the {tp} tp ranks as vLLM {data['version']} splits them (mm_encoder_tp_mode "
            f"{data['mm_encoder_tp_mode']!r}: column-parallel weights and biases and row-parallel weights divided, "
            "the rest whole on every rank)"
        )
    if pp > 1:
        where.append(" ".join(data["pp"].split()))
    note = f"{parts_named(model)}: {'; '.join(told)}, " + "; ".join(where)
    return Placement(held, whole, note)


def _built_layers(model: Any, composite: dict[str, Any], layers: int, flags: str) -> int:
    """How many of the tower's ``layers`` vLLM builds: up to the layer vision_feature_layer names, the deepest of a
    list (llava.py _get_num_hidden_layers with utils.py get_layer_index: f for f >= 0, layers + f + 1 for f < 0);
    LlmcountError naming the key when vLLM's class cannot take it."""
    given = next((p.model.config.get("vision_feature_layer") for p in model.parts if not p.config_key), None)
    chosen = composite["feature_layer"] if given is None else given
    features = [chosen] if type(chosen) is int else chosen
    source = composite["source"].split(":")[0]
    if not isinstance(features, list) or not features or any(type(f) is not int for f in features):
        raise LlmcountError(f"{flags}: vision_feature_layer must be an integer or a list of them, got {chosen!r}")
    if len(features) > 1 and composite.get("one_feature_layer"):
        raise LlmcountError(
            f"{flags}: vision_feature_layer names {len(features)} layers; vLLM's projector takes one layer's width "
            f"({source}), so the checkpoint's linear_1 would not load"
        )
    built = max(f if f >= 0 else layers + f + 1 for f in features)
    if not 0 <= built <= layers:
        raise LlmcountError(f"{flags}: vision_feature_layer {chosen!r} names no layer of the tower's {layers}")
    return built


__all__ = ["Placement", "placement", "shown_name", "table", "whole_memory"]


def shown_name(model: Any) -> str:
    """The name a per-GPU answer gives ``model``: the whole composite's when every part is counted with the language
    model (``name`` then says "language model"), else ``name``."""
    composite = getattr(model, "composite", None)
    if getattr(model, "parts", ()) and composite is not None and composite.whole and model.whole_name:
        return model.whole_name
    return model.name


def whole_memory(model: Any, percent: int):
    """For a composite whose parts are counted: its inference memory from its language model's, the parts' weights
    added (:func:`llmcount.formulas.tower_memory.with_parts`, ``percent`` the stated overhead), for
    :func:`llmcount.formulas.capacity.fit`'s ``whole``; None otherwise."""
    if not getattr(model, "parts", ()):
        return None
    from .formulas.tower_memory import with_parts

    return lambda found: with_parts(model, found, percent)
