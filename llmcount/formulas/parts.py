"""The parts of a composite model besides its language model: the vision tower read from ``vision_config`` with a
record of ``towers/``, and the projector read from the whole config, as ``composites.toml`` composes them.

Each part is a :class:`~llmcount.formulas.config.Model` of its own record (same format as a family's), so that its
formula, components and values are shown like a language model's; the whole model is the language model plus them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import LlmcountError
from . import records

if TYPE_CHECKING:
    from .config import Model
    from .records import Composite, Family


@dataclass(frozen=True)
class Part:
    """One part of a composite model besides the language model."""

    role: str  # "vision tower", "projector"
    config_key: str  # where the config gives it: "vision_config", or "" (the whole config)
    model: Model


def settled(family: Family, model: Model, raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` (a config as given) with the keys of the symbols ``model`` read set to their values (defaults filled
    in): what a projector reads of a sub-config. A symbol computed from its key (``adjust``) keeps the key as given."""
    out = dict(raw)
    for spec in family.symbols:
        if spec.adjust is None and not spec.length and "." not in spec.key and spec.symbol in model.values:
            out[spec.key] = model.values[spec.symbol]
    return out


TOWER_TOKENS = "vision_config.image_tokens"
"""The key a projector record reads the vision tower's tokens per image from (the tower record's ``image_tokens``)."""


def tower_tokens(tower: Family, model: Model) -> int | None:
    """The tokens per image the tower ``model`` (read with the record ``tower``) puts out; None when its record does
    not say."""
    if tower.image_tokens is None:
        return None
    from .derivation import evaluate_int

    return evaluate_int(tower.image_tokens, model.values, f"{tower.name} image_tokens")


def read_parts(config: dict[str, Any], source: str, name: str, outer: Composite, language: Model) -> tuple[Part, ...]:
    """The vision tower and the projector of the composite config ``config`` (empty when the composite names none)."""
    from .config import describe, read_config

    if not outer.vision:  # a projector without a tower (Fuyu's linear patch embedding): read from the whole config
        return _projector(config, source, name, outer, language, None) if outer.projector else ()
    key = outer.tower_config  # vision_config, or audio_config for an audio encoder
    role = f"{key.split('_')[0]} tower"
    vision = config.get(key)
    if vision is None:  # absent or null: the composite config class's own tower config
        vision = dict(outer.vision_absent or {})
    elif not isinstance(vision, dict):
        raise LlmcountError(f"{source}: key '{key}' must be a JSON object, got {describe(vision)}")
    for top, default in outer.vision_top.items():  # a top-level key the tower's module reads
        value = config.get(top, default)
        if type(value) is not type(default):
            kind = "true or false" if isinstance(default, bool) else f"a {type(default).__name__}"
            raise LlmcountError(f"{source}: key '{top}' must be {kind}, got {describe(value)}")
        vision = {**vision, top: value}
    vision_type = vision.get("model_type", outer.vision) if outer.any_vision else outer.vision
    tower = records.tower(vision_type) if isinstance(vision_type, str) else None
    if tower is None:
        known = ", ".join(n for n in records.tower_names() if not n.endswith("_projector"))
        raise LlmcountError(
            f"{source}: {key} has model_type {vision_type!r}, a {role} llmcount has no record of (towers: {known})"
        )
    tower_model = read_config({**vision, "model_type": vision_type}, f"{source}, {key}", f"{name} ({role})", tower)
    return (
        Part(role, key, tower_model),
        *_projector(config, source, name, outer, language, (tower, tower_model, vision)),
    )


def _projector(
    config: dict[str, Any],
    source: str,
    name: str,
    outer: Composite,
    language: Model,
    tower: tuple[Family, Model, dict[str, Any]] | None,
) -> tuple[Part, ...]:
    """The projector of a composite config, read from the whole config with the tower's sub-config (when there is a
    tower) and text_config holding the values they were read with; () when the composite names none."""
    from .config import read_config

    if not outer.projector:
        return ()
    record = records.tower(outer.projector)
    assert record is not None  # checked when composites.toml is loaded
    key = outer.tower_config
    whole = {k: value for k, value in config.items() if k not in ("text_config", key)}
    if tower is not None:
        family, tower_model, vision = tower
        whole[key] = settled(family, tower_model, vision)
        tokens = tower_tokens(family, tower_model) if TOWER_TOKENS in record.nested else None
        if tokens is not None:  # the projector takes the tower's tokens per image (its FLOPs)
            whole[key]["image_tokens"] = tokens
    whole["text_config"] = settled(language.architecture, language, {})
    whole["model_type"] = outer.projector
    return (Part("projector", "", read_config(whole, source, f"{name} (projector)", record)),)


def tower_families(outer: Composite) -> tuple[tuple[str, Family], ...]:
    """The records of a composite's parts besides the language model, without a config (its formula): the vision
    tower the composite reads vision_config as by default, and the projector."""
    out = []
    for role, part in (("vision", outer.vision), ("projector", outer.projector)):
        record = records.tower(part) if part else None
        if record is not None:
            out.append((role, record))
    return tuple(out)


__all__ = ["Part", "read_parts", "settled", "tower_families"]
