"""Class defaults that transformers cannot build, and the values that make them build, read from the refusal itself.

Two kinds of refusal are repaired, both without any table of model types:

- a ``KeyError`` naming a kind of layer (``'full_attention'``) that a mapping of the config indexes by layer kind
  (Cohere Compass's ``rope_parameters``, ``{}`` by default): the mapping gets an entry per kind of layer, ``None``
  (transformers' own word for a kind given no parameters of its own) first, ``{}`` else. A config lacking the entry
  for a kind of layer it has cannot be built, so the draft refuses it by name.
- an ``AttributeError`` naming a key a sub-config does not have (DBRX's ``DbrxAttentionConfig`` and ``rope_theta``):
  the key is set inside that sub-config to the value the config holds under the same name (``rope_theta``, or an
  entry of ``rope_parameters``). Such a key must shape no tensor (checked by the builds): the class defaults are then
  counted as they are, and checked against transformers with the key set.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_KEY_ERROR = re.compile(r"^KeyError: ['\"](\w+)['\"]$")
_NO_ATTRIBUTE = re.compile(r"^AttributeError: '(\w+)' object has no attribute '(\w+)'")


@dataclass(frozen=True)
class Repair:
    """A value given to ``key`` in every build (a dotted key: inside its sub-config) that transformers needs."""

    key: str
    value: Any
    kinds: tuple[str, ...] = ()  # an entry per kind of layer: the draft refuses a config missing one it has
    why: str = ""


def missing_entries(
    refusal: str, defaults: Mapping[str, Any], kinds: Mapping[str, Sequence[str]], source: str
) -> list[Repair]:
    """Repairs for ``KeyError: 'kind'`` where ``kind`` is a kind of layer (an entry of one of the per-layer lists
    ``kinds``, key -> its kinds) and a mapping of the defaults that the modeling ``source`` indexes
    (``config.rope_parameters[layer_type]``) has no entry for it: that mapping with an entry per kind, each ``None``
    or ``{}`` (the repairs in that order; the first that builds is kept)."""
    match = _KEY_ERROR.match(refusal.strip())
    if match is None:
        return []
    missing = match.group(1)
    every = [k for values in kinds.values() for k in values]
    if missing not in every:
        return []
    named = list(dict.fromkeys([*every, missing]))
    out = []
    for key, value in defaults.items():
        if not isinstance(value, dict) or missing in value or not re.search(rf"\.{re.escape(key)}\[", source):
            continue
        for entry in (None, {}):
            why = f"{key} has no entry for {missing}, which the {missing} layers read"
            out.append(Repair(key, {**value, **{k: entry for k in named if k not in value}}, tuple(named), why))
    return out


def missing_attribute(
    refusal: str, defaults: Mapping[str, Any], subconfigs: Mapping[str, str], attributes: Mapping[str, Any]
) -> list[Repair]:
    """Repairs for ``AttributeError: 'XConfig' object has no attribute 'k'`` where ``XConfig`` is the class of the
    sub-config under a key of the defaults (``subconfigs``: key -> class name): ``k`` set in that sub-config to the
    value the config holds under the same name (``attributes``, the config's own attribute values), else to the entry
    of that name in a mapping of the defaults (``rope_parameters['rope_theta']``). None found: no repair."""
    match = _NO_ATTRIBUTE.match(refusal.strip())
    if match is None:
        return []
    owner, name = match.groups()
    holders = [key for key, cls in subconfigs.items() if cls == owner and isinstance(defaults.get(key), dict)]
    value = attributes.get(name)
    if value is None:
        value = next(
            (v[name] for v in defaults.values() if isinstance(v, dict) and v.get(name) is not None),
            None,
        )
    if value is None:
        return []
    why = f"{owner} has no {name} by default, which the modeling code reads: the config's own {name} ({value!r})"
    return [Repair(f"{key}.{name}", value, (), why) for key in holders]


def with_repair(values: dict[str, Any], repair: Repair) -> dict[str, Any]:
    """``values`` with the repair's key set (a dotted key inside its sub-config, the sub-config's other keys kept
    from ``values`` or else left out for the class to default)."""
    head, _, leaf = repair.key.partition(".")
    if not leaf:
        return {**values, head: repair.value}
    sub = values.get(head)
    return {**values, head: {**(sub if isinstance(sub, dict) else {}), leaf: repair.value}}


def refusals(repair: Repair, per_layer: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """The draft's refusals for a mapping repaired with an entry per kind of layer: a config that has a layer of a
    kind (one of the ``per_layer`` lists names it) and no entry for that kind in the mapping cannot be built."""
    out = []
    for kind in repair.kinds:
        lists = [key for key, kinds in per_layer.items() if kind in kinds]
        if not lists:  # no list gives a layer this kind
            continue
        has = " or ".join(f"'{kind}' in {key}" for key in lists)
        test = f"({has}) and ({repair.key} is None or not ('{kind}' in {repair.key}))"
        why = (
            f"{repair.key} has no entry for {kind}, which the {kind} layers read (transformers cannot build the model"
            " without it)"
        )
        out.append((test, why))
    return out
