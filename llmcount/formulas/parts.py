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
    absent: bool = False  # the config has no such sub-config: the part has the composite class's own sizes

    @property
    def read_from(self) -> str:
        """Where the part's sizes come from, as ``count``, its JSON and the write-ups say it."""
        if self.absent:
            return f"the class's default {self.config_key}"
        return self.config_key or "the whole config"


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
    not say, reads the size of an image its config names none of (flops --image-size gives it), or gives no whole
    number (a pixel shuffle of a grid it does not divide: the parameters are counted, the FLOPs refused by name)."""
    if tower.image_tokens is None or not tower.image_tokens.free_symbols <= set(model.values):
        return None
    from .derivation import evaluate_int

    try:
        return evaluate_int(tower.image_tokens, model.values, f"{tower.name} image_tokens")
    except ValueError:
        return None


@dataclass(frozen=True)
class Slot:
    """One tower of a composite with its projector: the sub-config it is read from, the records, and the roles of
    its parts."""

    key: str  # the sub-config: vision_config, or audio_config for an audio encoder
    tower: str  # the record of the tower ("" : none counted)
    projector: str  # the record of its projector ("" : none)
    absent: Mapping[str, Any] | None  # the sub-config when it is absent or null
    any_type: bool  # the sub-config's own model_type picks the tower's record
    top: Mapping[str, Any]  # top-level keys the tower's module reads
    projector_role: str  # "projector" for the first tower, "<kind> projector" for the others
    first: bool  # the composite's first tower (vision, projector, tower_config)
    kind: str = ""  # the tower's name in its role ("": the sub-config's first word, vision or audio)

    @property
    def role(self) -> str:
        return f"{self.kind or self.key.split('_')[0]} tower"


def slots(outer: Composite) -> tuple[Slot, ...]:
    """The towers of a composite in the order its parts are shown: the one ``vision`` names (with ``projector``),
    then those of ``towers``."""
    out = [
        Slot(
            outer.tower_config,
            outer.vision,
            outer.projector,
            outer.vision_absent,
            outer.any_vision,
            outer.vision_top,
            "projector",
            True,
        )
    ]
    for t in outer.towers:
        out.append(Slot(t.config, t.tower, t.projector, t.absent, False, {}, f"{t.kind} projector", False, t.kind))
    return tuple(out)


def read_parts(config: dict[str, Any], source: str, name: str, outer: Composite, language: Model) -> tuple[Part, ...]:
    """The towers and projectors of the composite config ``config`` (empty when the composite names none); a tower
    of an ``optional`` sub-config that is absent or null is not built, and neither is its projector."""
    parts: list[Part] = []
    for slot in slots(outer):
        if slot.key in outer.optional and config.get(slot.key) is None:
            continue
        parts += _slot_parts(config, source, name, outer, language, slot)
    return tuple(parts)


def _slot_parts(
    config: dict[str, Any], source: str, name: str, outer: Composite, language: Model, slot: Slot
) -> tuple[Part, ...]:
    from .config import describe, read_config

    if not slot.tower:  # a projector without a tower (Fuyu's linear patch embedding): read from the whole config
        return _projector(config, source, name, language, slot, None) if slot.projector else ()
    key, role = slot.key, slot.role
    vision = config.get(key)
    absent = vision is None
    if absent:  # absent or null: the composite config class's own tower config
        vision = dict(slot.absent or {})
    elif not isinstance(vision, dict):
        raise LlmcountError(f"{source}: key '{key}' must be a JSON object, got {describe(vision)}")
    for top, default in slot.top.items():  # a top-level key the tower's module reads
        value = config.get(top, default)
        if type(value) is not type(default):
            kind = "true or false" if isinstance(default, bool) else f"a {type(default).__name__}"
            raise LlmcountError(f"{source}: key '{top}' must be {kind}, got {describe(value)}")
        vision = {**vision, top: value}
    vision_type = vision.get("model_type", slot.tower) if slot.any_type else slot.tower
    tower = records.tower(vision_type) if isinstance(vision_type, str) else None
    if tower is None:
        known = ", ".join(n for n in records.tower_names() if not n.endswith("_projector"))
        raise LlmcountError(
            f"{source}: {key} has model_type {vision_type!r}, a {role} llmcount has no record of (towers: {known})"
        )
    tower_model = read_config({**vision, "model_type": vision_type}, f"{source}, {key}", f"{name} ({role})", tower)
    return (
        Part(role, key, tower_model, absent),
        *_projector(config, source, name, language, slot, (tower, tower_model, vision)),
    )


def _projector(
    config: dict[str, Any],
    source: str,
    name: str,
    language: Model,
    slot: Slot,
    tower: tuple[Family, Model, dict[str, Any]] | None,
) -> tuple[Part, ...]:
    """The projector of a tower, read from the whole config with the tower's sub-config (holding the values the
    tower was read with; as given when no tower is counted) and text_config holding the language model's values; ()
    when the tower has none."""
    from .config import read_config

    if not slot.projector:
        return ()
    record = records.tower(slot.projector)
    assert record is not None  # checked when composites.toml is loaded
    key = slot.key
    whole = {k: value for k, value in config.items() if k != "text_config"}
    if tower is not None:
        family, tower_model, vision = tower
        whole[key] = settled(family, tower_model, vision)
        tokens = tower_tokens(family, tower_model) if TOWER_TOKENS in record.nested else None
        if tokens is not None:  # the projector takes the tower's tokens per image (its FLOPs)
            whole[key]["image_tokens"] = tokens
    elif whole.get(key) is None and slot.absent is not None:
        whole[key] = dict(slot.absent)
    whole["text_config"] = settled(language.architecture, language, {})
    whole["model_type"] = slot.projector
    role = slot.projector_role
    return (Part(role, "", read_config(whole, source, f"{name} ({role})", record)),)


def tower_families(outer: Composite) -> tuple[tuple[str, Family], ...]:
    """The records of a composite's parts besides the language model, without a config (its formula): the vision
    tower the composite reads vision_config as by default, and the projector."""
    out = []
    for name, part in part_records(outer).items():
        record = records.tower(part) if part else None
        if record is not None:
            out.append((name, record))
    return tuple(out)


def part_records(outer: Composite) -> dict[str, str]:
    """What ``--part`` names, besides the language model, and the record each reads (``""``: none): ``vision`` and
    ``projector`` (the first tower's, whatever its sub-config), then ``<kind>`` and ``<kind>_projector`` of each
    other tower (``audio``, ``audio_projector``)."""
    out = {"vision": outer.vision, "projector": outer.projector}
    for t in outer.towers:
        out[t.kind] = t.tower
        out[f"{t.kind}_projector"] = t.projector
    return out


def part_roles(outer: Composite) -> dict[str, str]:
    """The role of each part ``--part`` names of the composite (``vq`` -> ``vq tower``, ``vq_projector`` -> ``vq
    projector``), besides the language model."""
    out = {"vision": "vision tower", "projector": "projector"}
    for t in outer.towers:
        out[t.kind] = f"{t.kind} tower"
        out[f"{t.kind}_projector"] = f"{t.kind} projector"
    return out


__all__ = ["Part", "Slot", "part_records", "part_roles", "read_parts", "settled", "slots", "tower_families"]
