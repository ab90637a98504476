"""Count a written draft record with llmcount's generic reader and compare it with transformers on the meta device."""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass
from typing import Any

from ..errors import LlmcountError
from ..formulas import records
from ..formulas.config import read_config
from ..formulas.expressions import RecordError
from . import probe, repairs, ties
from .core import Discoverer

RANDOM_CONFIGS = 5


@dataclass(frozen=True)
class Check:
    name: str
    expected: int | None  # transformers' count
    got: int | None  # llmcount's count with the draft record
    error: str = ""
    where: str = ""  # a mismatch: the first term whose count differs, and the config's values, in words
    refused: str = ""  # transformers refuses the config and so does llmcount: both reasons, agreed

    @property
    def exact(self) -> bool:
        return bool(self.refused) or (self.expected is not None and self.expected == self.got)

    def line(self) -> str:
        if self.refused and self.expected is not None:  # transformers builds it; the draft refuses it by name
            return f"{self.name}: {self.refused}"
        if self.refused:
            return f"{self.name}: refused by both: {self.refused}"
        if self.error:
            return f"{self.name}: {self.error}"
        verdict = "exact" if self.exact else f"MISMATCH (llmcount - transformers = {self.got - self.expected:+,})"
        where = f"; {self.where}" if self.where else ""
        return f"{self.name}: {verdict}: llmcount {self.got:,}, transformers {self.expected:,}{where}"


def first_failure(checks: list[Check]) -> str:
    """The first check that is not exact, in words ("" when all are): what was checked, where it differs, the
    draft's and transformers' numbers."""
    for check in checks:
        if check.exact:
            continue
        if check.error:
            return f"{check.name}: {check.error}"
        where = f"; {check.where}" if check.where else ""
        return (
            f"on the {check.name} the draft counts {check.got:,} and transformers {check.expected:,}"
            f" ({check.got - check.expected:+,}){where}"
        )
    return ""


def random_config(discoverer: Discoverer, rng: random.Random) -> dict[str, Any]:
    """Small random sizes for the record's keys, a few layers, switches drawn, some keys left to their defaults; a
    dotted key inside its sub-config's mapping, as a config.json holds it."""
    sizes = list(discoverer.symbols)
    config: dict[str, Any] = {"model_type": discoverer.model_type, discoverer.layer_key: rng.randint(1, LAYERS_MAX)}
    config.update(dict.fromkeys(discoverer.tokens, 0))
    for key, value in discoverer.draw(sizes).items():
        # else absent: the record's default must be transformers' default. Head counts are always given: the sizes
        # are drawn as multiples of them, and a class default beside small drawn sizes makes a share of 0 or a
        # fraction (d // h with h = 16, d = 12) that no real config has
        if rng.random() < 0.8 or "heads" in key or key.endswith("_head"):
            config[key] = value
    unit = 2 * math.lcm(*(v for k, v in config.items() if isinstance(v, int) and ("heads" in k or k.endswith("_head"))))
    for key in sizes:  # a large size left out keeps its default only where the drawn heads divide it (d = 2048, h = 3)
        default = discoverer.defaults.get(key)
        if key not in config and isinstance(default, int) and default >= 64 and default % unit:
            config[key] = unit * max(1, default // unit)
    for key in getattr(discoverer, "activation_keys", []):  # validators may pin it (ZAYA: 1 expert per token)
        default = discoverer.defaults.get(key)
        if key in config and isinstance(default, int) and rng.random() < 0.5:
            config[key] = default
    for key in sorted(discoverer.switches_read):
        config[key] = rng.random() < 0.5
    for repair in getattr(discoverer, "repairs", []):  # values the class defaults lack that transformers needs
        config = repairs.with_repair(config, repair)
    for key, value in getattr(discoverer, "pinned", {}).items():  # a count of some layers the builds kept small
        config[key] = value
    for key in discoverer.parts:  # counts of layer groups: the layer count is their sum
        config[key] = rng.randint(1 if discoverer.defaults[key] else 0, 2)
    if discoverer.parts:
        config[discoverer.layer_key] = max(1, sum(config[k] for k in discoverer.parts))
    for key, kinds in discoverer.per_layer.items():  # one entry per layer, drawn from the default's kinds
        config[key] = [rng.choice(kinds) for _ in range(config[discoverer.layer_key])]
    for key, tie in discoverer.dependent.items():  # a size a validator's equation ties: computed from the others
        solved = tie.solve({**discoverer.defaults, **config}, key)
        if solved is not None:
            config[key] = solved
    for key, values in sorted(discoverer.layer_values.items()):  # which layers carry which tensors
        if key in discoverer.parts or key in discoverer.per_layer:
            continue
        if rng.random() < 0.5:
            continue
        if isinstance(values[0], int):
            config[key] = rng.randint(1, config[discoverer.layer_key])
        elif all(isinstance(x, int) for v in values for x in v):
            config[key] = [i for i in range(config[discoverer.layer_key]) if rng.random() < 0.5]
    return probe.nested(_multiples(discoverer, config))


def _multiples(discoverer: Discoverer, config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with each layer key drawn above that a validator requires to be a multiple of another key (see
    :func:`.ties.multiples`) made the nearest such multiple."""
    layer_keys = getattr(discoverer, "layer_values", {})
    if not layer_keys:
        return config
    for multiple in ties.multiples(probe.config_class(discoverer.model_type)):
        if multiple.key in layer_keys:
            rounded = multiple.round({**discoverer.defaults, **config})
            if rounded is not None:
                config[multiple.key] = rounded
    return config


LAYERS_MAX = 3


def verify(discoverer: Discoverer, path: str | os.PathLike[str], seed: int = 1) -> list[Check]:
    """The class defaults and random configs, counted by llmcount with the record at ``path`` and by transformers."""
    try:
        family = records.load(path)
    except (OSError, RecordError) as error:
        return [Check("record", None, None, f"cannot load the draft: {error}")]
    rng = random.Random(seed)
    defaults = {**probe.class_defaults(discoverer.model_type), "model_type": discoverer.model_type}
    checks = []
    try:
        outside = getattr(discoverer, "outside", None)
        configs = [("class defaults", defaults, probe.build(discoverer.model_type, _kwargs(defaults), outside=outside))]
    except probe.Refused as error:  # the class's own defaults do not build: the draft must refuse them too
        repaired = _repaired_defaults(discoverer, defaults)
        configs = [] if repaired is None else [("class defaults", defaults, repaired)]
        if repaired is None:
            checks.append(_both_refuse("class defaults", defaults, family, str(error)))
    refused = ""
    for _ in range(ATTEMPTS):
        if len(configs) + len(checks) == 1 + RANDOM_CONFIGS:
            break
        config = random_config(discoverer, rng)
        try:
            built = probe.build(discoverer.model_type, _kwargs(config), outside=getattr(discoverer, "outside", None))
        except probe.Refused as error:
            refused = refused or str(error)
            continue
        configs.append((f"random config {len(configs) + len(checks)}", config, built))
    randoms = len(configs) - (0 if checks else 1)  # checks: the class defaults, refused by both
    for name, config, built in configs:
        try:
            counts = read_config(config, name, family=family).counts
        except (LlmcountError, ValueError) as error:
            checks.append(_unset_activation(discoverer, name, config, family, built.total, str(error)))
            continue
        where = "" if counts.total == built.total else _where(discoverer, counts, built, config)
        checks.append(Check(name, built.total, counts.total, where=where))
    if randoms < RANDOM_CONFIGS:
        checks.append(
            Check(
                "random configs",
                None,
                None,
                f"transformers accepted {randoms} of {ATTEMPTS} drawn; the first refusal: {_cut(refused)}",
            )
        )
    return checks


def _repaired_defaults(discoverer: Discoverer, defaults: dict[str, Any]) -> probe.Build | None:
    """What transformers builds for the class defaults with the repairs that shape no tensor (a sub-config key the
    modeling code reads and the class does not default, see :mod:`.repairs`): the draft counts the defaults as they
    are. None when there are none, or transformers still refuses."""
    inert = [r for r in getattr(discoverer, "repairs", []) if not r.kinds]
    if not inert:
        return None
    for repair in inert:
        defaults = repairs.with_repair(defaults, repair)
    try:
        return probe.build(discoverer.model_type, _kwargs(defaults))
    except probe.Refused:
        return None


def _both_refuse(name: str, config: dict[str, Any], family, theirs: str) -> Check:
    """A config transformers refuses: agreed when llmcount's reader refuses it too (by name), else not exact."""
    try:
        counts = read_config(config, name, family=family).counts
    except (LlmcountError, ValueError) as error:
        return Check(name, None, None, refused=f"transformers: {_cut(theirs, 120)}; llmcount: {_cut(str(error), 120)}")
    return Check(name, None, counts.total, f"transformers refuses it ({_cut(theirs, 120)}); the draft counts it")


def _unset_activation(discoverer: Discoverer, name: str, config: dict[str, Any], family, total: int, why: str):
    """A config transformers builds and the draft refuses. Agreed when the refusal is for a key that shapes no tensor
    and is unset (DeepSeek-V2's num_experts_per_tok, None by default: the active parameters need it): then the total
    is checked with the key set to 1, which changes no tensor; else not exact."""
    unset = [k for k in getattr(discoverer, "null_activations", []) if config.get(k) is None and k in why]
    if not unset:
        return Check(name, total, None, f"llmcount refuses it: {why}")
    try:
        counts = read_config({**config, **dict.fromkeys(unset, 1)}, name, family=family).counts
    except (LlmcountError, ValueError) as error:
        return Check(name, total, None, f"llmcount refuses it: {why}; with {unset[0]} set: {error}")
    if counts.total != total:
        return Check(name, total, counts.total, f"with {unset[0]} set the draft counts {counts.total:,}")
    return Check(
        name,
        total,
        counts.total,
        refused=f"the total ({total:,}) is exact with {', '.join(unset)} set; unset, llmcount refuses it by name: "
        + _cut(why, 120),
    )


ATTEMPTS = 40  # random configs drawn before giving up on finding RANDOM_CONFIGS that transformers accepts


def _where(discoverer: Discoverer, counts, built: probe.Build, config: dict[str, Any]) -> str:
    """The first term (in the record's order) whose count differs from the tensors transformers builds for it, with
    the tensors and the config's values that shape it."""
    term_of = getattr(discoverer, "term_of", {})
    built = discoverer.split(built, config)  # kinds of one name on layers of other kinds, named as the draft names them
    theirs: dict[str, int] = {}
    tensors: dict[str, list[str]] = {}
    for t in built.tensors:
        path = term_of.get(t.key, "")
        theirs[path] = theirs.get(path, 0) + math.prod(t.shape)
        if t.key not in tensors.setdefault(path, []):
            tensors[path].append(t.key)
    values = ", ".join(
        f"{k}={_value(config, k)}" for k in [discoverer.layer_key, *discoverer.symbols] if _value(config, k) is not None
    )
    for component in counts.components:
        if component.count != theirs.get(component.path, 0):
            named = ", ".join(tensors.get(component.path, [])[:3]) or "no tensor of transformers"
            return (
                f"term {component.path} ({named}): the draft {component.count:,}, transformers"
                f" {theirs.get(component.path, 0):,}{_why(discoverer, component.path, built)} with {values}"
            )
    if theirs.get(""):
        return f"tensors the draft has no term for: {', '.join(tensors[''][:3])} ({theirs['']:,} with {values})"
    return f"with {values}"


def _value(config: dict[str, Any], key: str) -> Any:
    """The config's value of ``key`` (a dotted key inside its sub-config's mapping); None when it has none."""
    head, dot, leaf = key.partition(".")
    sub = config.get(head) if dot else config
    return sub.get(leaf if dot else key) if isinstance(sub, dict) else None


def _why(discoverer: Discoverer, path: str, built: probe.Build) -> str:
    """Why a term may differ, in words: a tensor of it the draft has no formula for, or the layers that carry its
    tensors in transformers' build beside the draft's layer count for it."""
    term_of = getattr(discoverer, "term_of", {})
    kinds = [k for k, p in term_of.items() if p == path]
    unfitted = getattr(discoverer, "unfitted", {})
    for kind in kinds:
        if kind in unfitted:
            return f" (the draft has no formula for {kind}: {unfitted[kind]})"
    layers = sorted({t.layer for t in built.tensors if t.layer is not None and term_of.get(t.key) == path})
    counted = getattr(discoverer, "term_layers", {}).get(path)
    if not layers and counted is not None and counted != "every layer":
        return f" (transformers builds it on none of {built.layers} layers; the draft on {counted})"
    if layers and counted is not None:
        where = _ranges(layers)
        return f" (transformers builds it on {len(layers)} of {built.layers} layers ({where}); the draft on {counted})"
    return ""


def _ranges(layers: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2, 5``; at most six ranges."""
    out: list[str] = []
    start = previous = layers[0]
    for i in [*layers[1:], None]:
        if i is not None and i == previous + 1:
            previous = i
            continue
        out.append(str(start) if start == previous else f"{start}-{previous}")
        if i is not None:
            start = previous = i
    return ", ".join(out[:6]) + (", ..." if len(out) > 6 else "")


def _cut(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kwargs(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k != "model_type"}
