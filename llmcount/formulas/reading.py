"""The generic reading of a config's keys, which needs no sympy: a family record's (or a compiled snapshot's) symbol
specs, [keys], layer conditions, checks and refusals applied to a parsed ``config.json``, giving the values of the
symbols and of the keys. Every error names the source and the key. :mod:`.config` builds a Model on it (the terms,
in sympy); :mod:`llmcount.counting` counts with it and a record's compiled expressions.

A family here is anything with the attributes the reader uses: ``name``, ``aliases``, ``keys``, ``symbols`` (specs
whose ``symbol`` has a ``name`` and ``is_positive``), ``layers``, ``checks``, ``refuse``, ``per_layer``, ``nested``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import LlmcountError
from .expressions import Unknown, condition_names

REQUIRED = object()  # a symbol's key without a default
NONE = "none"  # null = "none": the symbol then has no value
if TYPE_CHECKING:
    from sympy import Symbol

    from .records import Family, Rule, SymbolSpec

MAX_LAYERS = 10_000  # layers walked one by one (per-layer kinds, pipeline stages, the module tree); real models < 300

MAX_SIZE = 2**40  # any one size (a width, a vocabulary, a layer count): beyond it a config is a typo
MAX_LIST = 100_000  # entries of a list-valued key (layer_types, mlp_only_layers)
_EVALUATION_ERRORS = (Unknown, TypeError, ValueError, IndexError, ZeroDivisionError, OverflowError)


class RuleRefusal(LlmcountError):
    """A config refused by one of its record's ``checks`` or ``refuse`` rules: a stated reason."""


def _list_item(value: Any) -> bool:
    """An entry a config's list may hold: an integer, a finite float (a per-layer RoPE base) or a string."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})"
    if isinstance(value, (list, dict)):
        return f"a {'list' if isinstance(value, list) else 'JSON object'}"
    return f"{type(value).__name__} {value!r}"[:80]


def _ratio(value: Any) -> bool:
    """A finite float in (0, MAX_SIZE] that is not a whole number (those read as integers): the value of a key that a
    symbol with ``ratio = true`` reads and its ``adjust`` turns into a size (1 / downsample_ratio)."""
    return type(value) is float and math.isfinite(value) and 0 < value <= MAX_SIZE and not value.is_integer()


class _Reader:
    """Typed, checked access to one config's keys; every error names the source and the key."""

    def __init__(self, config: Mapping[str, Any], source: str, family: Family):
        self.config, self.source, self.family = config, source, family
        self.defaulted: dict[str, str] = {}  # symbols given by a default: name -> key

    def fail(self, message: str) -> LlmcountError:
        return LlmcountError(f"{self.source}: {message}")

    def present(self, key: str) -> list[str]:
        """The names (the key and its aliases) under which the config gives ``key``; a key of an object (an alias
        ``rope_parameters.partial_rotary_factor``) before the same key at the top level, which it overrides."""
        aliases = self.family.aliases.get(key)
        if not aliases:  # the common case: one name
            return [key] if key in self.config else []
        names = [key, *aliases]
        found = [name for name in names if name in self.config]
        nested = [name for name in found if "." in name]
        found = nested or found
        if len(found) > 1 and len({json.dumps(self.config[name], sort_keys=True) for name in found}) > 1:
            raise self.fail(f"keys {' and '.join(repr(k) for k in found)} name the same value differently")
        return found

    def integer(self, key: str, value: Any, minimum: int) -> int:
        if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SIZE:
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"key '{key}' must be an integer, got {describe(value)}")
        if value < minimum:
            raise self.fail(f"key '{key}' must be {'positive' if minimum == 1 else 'at least 0'}, got {value}")
        if value > MAX_SIZE:
            raise self.fail(f"key '{key}' is {value:.3g}, larger than any model's ({MAX_SIZE:,} at most)")
        return value

    def symbol(self, spec: SymbolSpec, namespace: dict[str, Any]) -> int | None:
        found = self.present(spec.key)
        if spec.distinct and found and self.config[found[0]] is not None:  # a list of names: how many distinct ones
            names = self.config[found[0]]
            if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
                raise self.fail(f"key '{found[0]}' must be a list of names (strings), got {describe(names)}")
            if len(names) > MAX_LIST:
                raise self.fail(f"key '{found[0]}' has {len(names):,} entries, more than {MAX_LIST:,}")
            return self.integer(found[0], len(set(names)), spec.minimum)
        if spec.indices and found and self.config[found[0]] is not None:  # layer indices: how many distinct ones
            indices = self.config[found[0]]
            if not isinstance(indices, list) or len(indices) > MAX_LIST or not all(type(i) is int for i in indices):
                raise self.fail(f"key '{found[0]}' must be a list of layer indices (integers), got {describe(indices)}")
            if any(i < 0 for i in indices):
                raise self.fail(f"key '{found[0]}' must hold layer indices from 0, got {min(indices)}")
            return self.integer(found[0], len(set(indices)), spec.minimum)
        if spec.length and found and isinstance(self.config[found[0]], list):  # a list: how many entries it holds
            if len(self.config[found[0]]) > MAX_LIST:
                raise self.fail(f"key '{found[0]}' has {len(self.config[found[0]]):,} entries, more than {MAX_LIST:,}")
            return self.integer(found[0], len(self.config[found[0]]), spec.minimum)
        if spec.length and found and type(self.config[found[0]]) is int:  # a single entry
            return 1
        if spec.largest and found and isinstance(self.config[found[0]], (dict, list)):  # its largest integer value
            raw = self.config[found[0]]
            values = list(raw.values()) if isinstance(raw, dict) else raw
            if not values and spec.null == NONE:  # no entries: no largest, as a null reads
                return None
            if not values or len(values) > MAX_LIST or not all(type(v) is int for v in values):
                raise self.fail(f"key '{found[0]}' must hold 1 to {MAX_LIST:,} integers, got {describe(raw)}")
            return self.integer(found[0], max(values), spec.minimum)
        if spec.summed and found and self.config[found[0]] is not None:  # one integer per layer: their sum
            return self.summed(found[0], self.config[found[0]], spec, namespace)
        if spec.same and found and isinstance(self.config[found[0]], list):  # one integer per layer, all equal
            return self.same(found[0], self.config[found[0]], spec, namespace)
        if found and isinstance(self.config[found[0]], str) and self.config[found[0]] in spec.strings:
            return self.derived(spec, spec.strings[self.config[found[0]]], namespace)
        if found and spec.zero_is_none and self.config[found[0]] == 0 and not isinstance(self.config[found[0]], bool):
            return None if spec.null in (None, NONE) else self.derived(spec, spec.null, namespace)  # 0 reads as null
        if found and spec.ratio and _ratio(self.config[found[0]]):
            return self.config[found[0]]  # a ratio the adjust turns into a size (InternVL's downsample_ratio 0.5)
        if found and self.config[found[0]] is not None:
            return self.integer(found[0], self.config[found[0]], spec.minimum)
        if found:  # null
            if spec.null is None:
                raise self.fail(
                    f"key '{spec.key}' must be an integer, got null ({self.family.name} has no meaning for null)"
                )
            if spec.null == NONE:
                return None
            return self.derived(spec, spec.null, namespace)
        if spec.default is REQUIRED:
            raise self.fail(f"required key '{spec.key}' is missing (model_type {self.family.name})")
        if spec.default == NONE:
            return None
        self.defaulted[spec.symbol.name] = spec.key
        return self.derived(spec, spec.default, namespace)

    def summed(self, key: str, entries: Any, spec: SymbolSpec, namespace: dict[str, Any]) -> int:
        """The sum of a list of one size per layer (Laguna's heads per layer), each entry checked as a size."""
        if not isinstance(entries, list):
            raise self.fail(f"key '{key}' must be a list of integers, one per layer, got {describe(entries)}")
        self.per_layer_list(key, entries, namespace)
        return self.integer(key, sum(self.integer(f"{key}[{i}]", x, spec.minimum) for i, x in enumerate(entries)), 0)

    def summed_on_layers(self, spec: SymbolSpec, layers: tuple[int, ...], namespace: dict[str, Any]) -> int | None:
        """The sum of a list of one size per layer over the given layers; absent or null: the record's default or
        null, computed once the layers are counted (``N_sliding * h``)."""
        found = self.present(spec.key)
        entries = self.config[found[0]] if found else None
        if entries is None:
            rule = spec.null if found else spec.default
            if rule is REQUIRED or (found and rule is None):
                return self.symbol(replace(spec, on=None), namespace)  # refused as the key's other readings are
            if rule == NONE:
                return None
            return self.derived(spec, rule, namespace)
        if not isinstance(entries, list):
            raise self.fail(f"key '{found[0]}' must be a list of integers, one per layer, got {describe(entries)}")
        self.per_layer_list(found[0], entries, namespace)
        sizes = [self.integer(f"{found[0]}[{i}]", x, spec.minimum) for i, x in enumerate(entries)]
        return sum(sizes[i] for i in layers)

    def same(self, key: str, entries: list[Any], spec: SymbolSpec, namespace: dict[str, Any]) -> int:
        """The one size a list of one size per layer gives every layer (Gemma 3n's intermediate_size); a list whose
        entries differ describes layers of different sizes, which the record does not count."""
        self.per_layer_list(key, entries, namespace)
        sizes = [self.integer(f"{key}[{i}]", x, spec.minimum) for i, x in enumerate(entries)]
        if not sizes:
            raise self.fail(f"key '{key}' is an empty list; it needs one entry per layer")
        if len(set(sizes)) > 1:
            shown = ", ".join(f"{x:,}" for x in sorted(set(sizes))[:3])
            raise RuleRefusal(
                f"{self.source}: key '{key}' gives layers different sizes ({shown}); layers of different "
                f"{spec.symbol.name} are not supported (model_type {self.family.name})"
            )
        return sizes[0]

    def per_layer_list(self, key: str, entries: list[Any], namespace: dict[str, Any]) -> None:
        """A list of one entry per layer: as long as num_hidden_layers (read before it), and bounded."""
        layers = namespace.get("N")
        if isinstance(layers, int) and len(entries) != layers:
            raise self.fail(
                f"key '{key}' has {len(entries)} entries; it needs one per layer (num_hidden_layers: {layers})"
            )
        if len(entries) > MAX_LIST:
            raise self.fail(f"key '{key}' has {len(entries):,} entries, more than {MAX_LIST:,}")

    def derived(self, spec: SymbolSpec, rule: Any, namespace: dict[str, Any]) -> int:
        """A default or null value computed from the symbols read before it."""
        try:
            value = rule(namespace)
        except _EVALUATION_ERRORS as exc:
            raise self.fail(f"key '{spec.key}' is absent and its default cannot be computed: {exc}") from None
        if value is None:  # the expression's None: the symbol has no value for this config
            return None
        if spec.ratio and _ratio(value):  # a ratio the adjust turns into a size
            return value
        what = f"{spec.key} (absent: {spec.default_text}, {self.family.name}'s default)"
        if isinstance(value, int) and not isinstance(value, bool) and value < spec.minimum:
            # the other keys give a size no model has (head_dim = d // h with d < h): a stated reason, not a typo
            raise RuleRefusal(
                f"{self.source}: key {what} is {value} for this config; a {spec.symbol.name} of {value} "
                f"is not supported (model_type {self.family.name})"
            )
        return self.integer(what, value, spec.minimum)

    def adjusted(self, spec: SymbolSpec, value: int, namespace: dict[str, Any]) -> int:
        """The size the model builds from a key's value (LFM2's MLP width from intermediate_size), computed as its
        modeling code computes it; the symbol's name holds the key's value in the expression (and in ``namespace``,
        until the caller sets it to the size)."""
        try:
            namespace[spec.symbol.name] = value  # the key's value, under the name the expression reads it by
            result = spec.adjust(namespace)
        except _EVALUATION_ERRORS as exc:
            raise self.fail(f"key '{spec.key}' ({value}): cannot compute {spec.adjust_text!r}: {exc}") from None
        if isinstance(result, bool) or not isinstance(result, int):
            raise self.fail(f"key '{spec.key}' ({value}): {spec.adjust_text!r} is not an integer ({result!r})")
        if result < spec.minimum:
            raise RuleRefusal(
                f"{self.source}: key '{spec.key}' ({value}) gives {spec.symbol.name} = {result} "
                f"({spec.adjust_text}); a {spec.symbol.name} of {result} is not supported (model_type "
                f"{self.family.name})"
            )
        return self.integer(f"{spec.key} (adjusted)", result, spec.minimum)

    def key(self, key: str, default: Any) -> Any:
        """Another key (a switch, a layer pattern): of the type of its default, or null where the default is."""
        found = self.present(key)
        if not found:
            return default
        value = self.config[found[0]]
        if value is None and isinstance(default, list):
            return default  # a null list is an empty one (mlp_only_layers: null)
        if default is None:
            ok = value is None or (not isinstance(value, (dict, float)))
        elif isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(default, int):
            ok = not isinstance(value, bool) and isinstance(value, int)
        elif isinstance(default, float):  # a float key (a multiplier) takes an integer too, as its config class does
            ok = value is None or (not isinstance(value, bool) and isinstance(value, (int, float)))
            if isinstance(value, float) and not math.isfinite(value):
                raise self.fail(f"key '{key}' must be a finite number, got {value!r}")
        else:
            ok = isinstance(value, type(default)) or value is None
        if not ok:
            raise self.fail(f"key '{key}' must be {_kind(default)}, got {describe(value)}")
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SIZE:
            raise self.fail(f"key '{key}' is {value:.3g}, larger than any model's ({MAX_SIZE:,} at most)")
        if isinstance(value, list):
            if len(value) > MAX_LIST:
                raise self.fail(f"key '{key}' has {len(value):,} entries, more than {MAX_LIST:,}")
            if not all(_list_item(x) for x in value):
                raise self.fail(f"key '{key}' must be a list of numbers or strings")
        return value

    def overrides(self, namespace: Mapping[str, Any]) -> dict[int, tuple[str, dict[str, Any]]] | None:
        """The config's per-layer object (``per_layer_config``: {layer index: {key: value}}) by layer, each entry with
        the index as the config writes it; None when the config has none (null: no layer overrides anything).
        Checked before it is used: indices of existing layers, once each, objects of the keys the record reads."""
        key, family = self.family.per_layer, self.family
        if key not in self.config:
            return None
        table = self.config[key]
        if table is None:
            return {}
        if not isinstance(table, dict):
            raise self.fail(f"key '{key}' must be a JSON object of layer indices and their keys, got {describe(table)}")
        layers = namespace["N"]
        if len(table) > layers:
            raise self.fail(f"key '{key}' has {len(table):,} entries, more than the {layers:,} layers")
        readable = sorted({spec.key for spec in family.symbols if spec.overridden})
        found: dict[int, tuple[str, dict[str, Any]]] = {}
        for index, entry in table.items():
            if not (index.isascii() and index.isdigit() and len(index) <= 9):
                raise self.fail(f"key '{key}' has an entry {index[:20]!r} that is not a layer index")
            where, layer = f"{key}['{index}']", int(index)
            if layer >= layers:
                raise self.fail(f'key "{where}": layer {layer} does not exist (num_hidden_layers: {layers})')
            if layer in found:
                raise self.fail(f"key '{key}' gives layer {layer} twice ('{found[layer][0]}' and '{index}')")
            if not isinstance(entry, dict):
                raise self.fail(f'key "{where}" must be a JSON object (the layer\'s keys), got {describe(entry)}')
            other = sorted(set(entry) - set(readable))
            if other:
                raise RuleRefusal(
                    f"{self.source}: key \"{where}\" gives layer {layer} its own '{other[0][:40]}'; {family.name}'s "
                    f"record reads only {', '.join(readable)} per layer (model_type {family.name})"
                )
            found[layer] = (index, entry)
        return found

    def on_layers(
        self,
        spec: SymbolSpec,
        layers: tuple[int, ...],
        overrides: dict[int, tuple[str, dict[str, Any]]] | None,
        namespace: Mapping[str, Any],
    ) -> int | None:
        """A symbol read ``on`` some layers: the one value its key takes on them (a layer's override, else the
        record's value without a per-layer object, else the key's own); refused when they differ."""
        value = namespace[spec.symbol.name]
        if overrides is None and spec.absent is not None:
            try:
                value = spec.absent(namespace)
            except _EVALUATION_ERRORS as exc:
                raise self.fail(f"key '{spec.key}' on the {spec.on.name} layers cannot be computed: {exc}") from None
            what = f"{spec.key} (without {self.family.per_layer}: {spec.absent_text})"
            value = self.integer(what, value, spec.minimum)
        seen: dict[Any, str] = {}
        for layer in layers:
            index, entry = (overrides or {}).get(layer, ("", {}))
            given = value
            if spec.key in entry:
                given = self.integer(f"{self.family.per_layer}['{index}'].{spec.key}", entry[spec.key], spec.minimum)
            seen.setdefault(given, index)
        if len(seen) > 1:
            shown = ", ".join(str(v) for v in list(seen)[:3])
            raise RuleRefusal(
                f"{self.source}: key '{self.family.per_layer}' gives the {spec.on.name} layers different "
                f"{spec.key} ({shown}); layers of one kind with different {spec.symbol.name} are not supported "
                f"(model_type {self.family.name})"
            )
        return next(iter(seen), value)

    def rule(self, rule: Rule, namespace: Mapping[str, Any]) -> bool:
        try:
            return bool(rule.test(namespace))
        except _EVALUATION_ERRORS as exc:
            raise self.fail(f"{rule.message} (cannot check {rule.text!r}: {exc})") from None


def _kind(default: Any) -> str:
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, int):
        return "an integer"
    if isinstance(default, float):
        return "a number"
    if isinstance(default, list):
        return "a list"
    if isinstance(default, dict):
        return "a JSON object"
    return "a string" if isinstance(default, str) else "a value"


def _nested_keys(config: dict[str, Any], source: str, family: Family) -> dict[str, Any]:
    """The config with the record's dotted keys (``ffn_config.moe_num_experts``) read from their sub-objects: a key
    the sub-object leaves out (or a null or absent sub-object) takes the record's default, the sub-config class's."""
    if not family.nested:
        return config
    flat = {key: value for key, value in config.items() if key not in family.nested}  # no literal "a.b" key
    for key in family.nested:
        head, leaf = key.split(".")
        sub = config.get(head)
        if sub is None:
            continue
        if not isinstance(sub, dict):
            raise LlmcountError(f"{source}: key '{head}' must be a JSON object, got {describe(sub)}")
        if leaf in sub:
            flat[key] = sub[leaf]
    return flat


@lru_cache(maxsize=4096)
def _condition_names(text: str) -> tuple[str, ...]:
    """:func:`condition_names`, parsed once per rule text."""
    return tuple(condition_names(text))


def _check(reader: _Reader, rules: Iterable[Rule], namespace: Mapping[str, Any]) -> None:
    """Refuse the config at the first rule it fails, naming the defaults the rule read."""
    for rule in rules:
        if not reader.rule(rule, namespace):
            defaults = [
                f"{reader.defaulted[name]} ({namespace[name]}, {reader.family.name}'s default when the key is absent)"
                for name in _condition_names(rule.text)
                if name in reader.defaulted
            ]
            raise RuleRefusal(f"{reader.source}: {_message(rule, namespace)}" + "".join(f"; {d}" for d in defaults))


def _message(rule: Rule, namespace: Mapping[str, Any]) -> str:
    """A rule's message with ``{symbol}`` fields filled in from the config's values."""
    try:
        return rule.message.format_map(namespace)
    except (KeyError, ValueError, IndexError, AttributeError):
        return rule.message


def _count_layers(
    reader: _Reader, namespace: dict[str, Any], values: dict[Symbol, int]
) -> dict[Symbol, tuple[int, ...]]:
    """Each layer-count symbol: how many of the N layers satisfy its condition, or, where the condition gives an
    integer instead of a truth value, the sum of those integers over the layers (a weighted count: Inkling 2's
    states attended by its full layers' residuals); returns the layers each counts."""
    indices: dict[Symbol, tuple[int, ...]] = {}
    if not reader.family.layers:
        return indices
    # the layers are the N decoder layers; in a record without N (a tower's), those of its first count symbol (N_vis)
    counts = [s.symbol.name for s in reader.family.symbols if s.symbol.name[:2] == "N_"]
    count = "N" if "N" in namespace else counts[0] if counts else None
    if count is None or namespace.get(count) is None:
        raise reader.fail(f"{reader.family.name} has [layers] but no count of layers (N) to run them over")
    layers = namespace[count]
    if layers > MAX_LAYERS:
        raise reader.fail(f"num_hidden_layers is {layers:,}; layers of several kinds are counted up to {MAX_LAYERS:,}")
    scope = dict(namespace)
    for symbol, test, text in reader.family.layers:
        key = _layers_key(text, layers, scope)
        counted = _LAYERS.get(key) if key is not None else None
        if counted is None:
            try:
                found, total = [], 0
                for i in range(layers):
                    scope["i"] = i
                    weight = test(scope)
                    if weight:
                        found.append(i)
                        total += weight if type(weight) is int and weight > 0 else 1
            except _EVALUATION_ERRORS as exc:
                raise reader.fail(f"cannot tell which layers are {symbol.name} ({text}): {exc}") from None
            counted = (tuple(found), total)
            if key is not None and len(_LAYERS) < 4096:
                _LAYERS[key] = counted
        indices[symbol] = counted[0]
        values[symbol] = namespace[symbol.name] = scope[symbol.name] = counted[1]
    return indices


_LAYERS: dict[tuple, tuple[tuple[int, ...], int]] = {}
"""The layers a condition chose, by the condition's text, the number of layers and the values of the names it reads:
a batch of configs of one family (the same layer_types, another vocabulary) walks its layers once."""
_ABSENT = object()
_ENTRIES = {str, int}  # list entries taken as they are (not bool, not float: _list_item)


def _layers_key(text: str, layers: int, scope: Mapping[str, Any]) -> tuple | None:
    """The key of :data:`_LAYERS` for a condition over ``scope``; None when a value it reads cannot be a key."""
    try:
        given = tuple(_frozen(scope.get(name, _ABSENT)) for name in _condition_names(text) if name != "i")
        key = (text, layers, given)
        hash(key)
    except TypeError:
        return None
    return key


def _frozen(value: Any) -> Any:
    """A value with its type (1, 1.0 and true are different keys), lists as tuples; TypeError for an object."""
    kind = type(value)
    if kind is int or kind is str or kind is bool or kind is float or value is None:
        return (kind, value)
    if isinstance(value, list):
        return ("list", tuple(_frozen(x) for x in value))
    if isinstance(value, dict):
        raise TypeError("an object")
    hash(value)  # a value that cannot be a key fails here, where the callers catch it
    return (kind, value)


def _per_layer_symbols(
    reader: _Reader, namespace: dict[str, Any], values: dict[Symbol, int], indices: Mapping[Symbol, tuple[int, ...]]
) -> None:
    """The symbols read ``on`` the layers of a kind: Gemma 4's head_dim on its full-attention layers, from the
    config's per-layer object; Laguna's query heads summed over its sliding layers, from its list of one per layer."""
    specs = [spec for spec in reader.family.symbols if spec.on is not None]
    if not specs:
        return
    overrides = reader.overrides(namespace) if any(spec.overridden for spec in specs) else None
    for spec in specs:
        if spec.summed_on:
            value = reader.summed_on_layers(spec, indices[spec.on], namespace)
        else:
            value = reader.on_layers(spec, indices[spec.on], overrides, namespace)
        namespace[spec.symbol.name] = value
        if value is None:
            values.pop(spec.symbol, None)
        else:
            values[spec.symbol] = value


class _Layout(NamedTuple):
    """What :func:`read_values` walks for one family, worked out once: its [keys] (with whether the config gives each
    under one name only), its symbols read in order (with the least value of those a plain integer key gives, else
    None), and its checks made before and after the layers are counted."""

    keys: tuple[tuple[str, Any, bool], ...]
    symbols: tuple[tuple[Any, int | None, str, str, Any, Any], ...]  # with its key, name, symbol, computed default
    early: tuple[Any, ...]
    late: tuple[Any, ...]
    early_names: tuple[str, ...]  # the names the refusals and the early checks read
    late_names: tuple[str, ...]  # the names the late checks read
    passed: dict[tuple, bool]  # the values of those names (early or late) for which every rule passed


_LAYOUTS: dict[int, tuple[Any, _Layout]] = {}  # by id of the family, which the entry holds (so the id stays its own)


def _layout(family: Family) -> _Layout:
    found = _LAYOUTS.get(id(family))
    if found is not None and found[0] is family:
        return found[1]
    keys = tuple((key, default, not family.aliases.get(key)) for key, default in family.keys.items())
    symbols = tuple(
        (spec, minimum, spec.key, spec.symbol.name, spec.symbol, spec.default if callable(spec.default) else None)
        for spec in family.symbols
        if not spec.summed_on
        for minimum in (_plain_minimum(family, spec),)
    )
    # a check that names a layer-count symbol (N_full + N_linear == N) or a symbol read on some layers is made once
    # the layers are counted
    counted = {symbol.name for symbol, _, _ in family.layers} | {s.symbol.name for s in family.symbols if s.on}
    late = tuple(rule for rule in family.checks if counted & set(_condition_names(rule.text)))
    early = tuple(rule for rule in family.checks if rule not in late)
    early_names = _rule_names((*family.refuse, *early))
    layout = _Layout(keys, symbols, early, late, early_names, _rule_names(late), {})
    if len(_LAYOUTS) < 4096:
        _LAYOUTS[id(family)] = (family, layout)
    return layout


def _rule_names(rules: Iterable[Rule]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for rule in rules for name in _condition_names(rule.text)))


def _passed(which: str, names: tuple[str, ...], namespace: Mapping[str, Any]) -> tuple | None:
    """The key under which :attr:`_Layout.passed` records that the rules ``which`` (early or late) passed for these
    values of ``names``, each with its type (a rule reads nothing else of a config); None when a value cannot be a
    key (a JSON object). Rules not recorded as passed are checked, and a config that fails one is refused with its
    message: only passes are recorded."""
    try:
        return (which, *(_frozen(namespace.get(name, _ABSENT)) for name in names))
    except TypeError:
        return None


def _plain_minimum(family: Family, spec: SymbolSpec) -> int | None:
    """The least value of a symbol whose key, when the config gives it as an integer, is that integer (under one name,
    not a list, not 0-as-null, not adjusted, not per layer): :meth:`_Reader.symbol` reads such a value as it is when it
    lies in [minimum, MAX_SIZE], so :func:`read_values` takes it straight. None for any other symbol."""
    plain = not (spec.distinct or spec.length or spec.largest or spec.summed or spec.same or spec.zero_is_none)
    plain = plain and not spec.ratio
    if plain and spec.adjust is None and spec.on is None and not family.aliases.get(spec.key):
        return spec.minimum
    return None


def read_values(reader: _Reader) -> tuple[dict[str, Any], dict[Any, int], dict[Any, tuple[int, ...]]]:
    """The config's [keys], symbols and layer counts, checked by the record's rules: ``(namespace, values,
    indices)``; the namespace by key and symbol name, the values and the layers each kind counted by symbol."""
    namespace, values = read_symbols(reader)
    return namespace, values, check_values(reader, namespace, values)


def read_symbols(reader: _Reader) -> tuple[dict[str, Any], dict[Any, int]]:
    """The first half of :func:`read_values`: the config's [keys] and the symbols it gives (not those read per
    layer), each read and checked as a value; the record's rules are not applied yet (:func:`check_values`)."""
    family, config = reader.family, reader.config
    layout = _layout(family)
    namespace: dict[str, Any] = {}
    for key, default, single in layout.keys:
        if single:
            value = config.get(key, _ABSENT)
            if value is _ABSENT:
                namespace[key] = default
                continue
            kind = type(value)
            if kind is type(default) and (
                kind is bool
                or kind is str
                or value is None
                or (kind is int and abs(value) <= MAX_SIZE)
                or (kind is float and math.isfinite(value))
            ):
                namespace[key] = value  # the common case, as reader.key accepts it: a value of its default's type
                continue
            listed = kind is list and (default is None or type(default) is list) and len(value) <= MAX_LIST
            if listed and set(map(type, value)) <= _ENTRIES:  # names or layer indices, as reader.key takes them
                namespace[key] = value
                continue
        namespace[key] = reader.key(key, default)
    values: dict[Any, int] = {}
    for spec, minimum, key, name, symbol, default in layout.symbols:
        if minimum is not None:
            value = config.get(key, _ABSENT)
            if type(value) is int and minimum <= value <= MAX_SIZE:  # the common case, as reader.symbol reads it
                namespace[key] = namespace[name] = values[symbol] = value
                continue
            if value is _ABSENT and default is not None:  # absent, its default computed: as reader.symbol does
                try:
                    value = default(namespace)
                except _EVALUATION_ERRORS:
                    value = None  # reader.symbol words it
                if type(value) is int and minimum <= value <= MAX_SIZE:
                    reader.defaulted[name] = key
                    namespace[key] = namespace[name] = values[symbol] = value
                    continue
        value = reader.symbol(spec, namespace)
        if not spec.length or spec.key not in namespace:  # a list's length: conditions still read the list ([keys])
            namespace[spec.key] = value
        if value is not None and spec.adjust is not None:
            value = reader.adjusted(spec, value, namespace)
        namespace[spec.symbol.name] = value
        if value is not None:
            values[spec.symbol] = value
    kinds = getattr(family, "layer_kinds", None)
    if kinds:
        _layer_kinds(reader, kinds, namespace)
    return namespace, values


LEGACY_KINDS = {
    "mamba": "linear_attention",
    "attention": "full_attention",
    "deepseek_sparse_attention": "indexed_attention",
    "qwen_sparse_attention": "indexed_attention",
}
"""The legacy layer kinds transformers reads as their new names (configuration_utils.py ``_LEGACY_LAYER_TYPE_REMAP``,
transformers 5.24.0), before its validators and the modeling code see them."""


_KIND_TYPES = frozenset({str, int})  # a kind's name or integer code (not true, not 1.0)


def _layer_kinds(reader: _Reader, lists: Mapping[str, Any], namespace: dict[str, Any]) -> None:
    """The record's per-layer lists of kinds (``[layer_kinds]``: layer_types, mlp_layer_types ...) checked as
    transformers checks them: a list of the kinds the modeling class builds, of the length its config class requires;
    a legacy name is read as its new one (in ``namespace``, which the layer conditions read)."""
    counts = [s for s in reader.family.symbols if s.symbol.name == "N" or s.symbol.name[:2] == "N_"]
    for name, (kinds, length, legacy) in lists.items():
        found = reader.present(name)  # absent or null: the record's default (the class's, which its validator
        entries = namespace.get(name)  # accepts; a null list is derived from other keys, as the class derives it)
        if not found or entries is None or reader.config.get(found[0]) is None:
            continue
        allowed, key = ", ".join(sorted(map(str, kinds))), found[0]  # the key by the name the config gives it
        if type(entries) is not list:
            raise reader.fail(f"key '{key}' must be a list of layer kinds ({allowed}), got {describe(entries)}")
        # the layer count as the config gives it (DoryConfig doubles num_hidden_layers and halves it with the list)
        layers = next((namespace.get(s.key) for s in counts if s.symbol.name == "N"), None) if counts else None
        if layers is None and counts:  # a tower's layers: those of its first count (N_vis), as _count_layers takes
            layers = namespace.get(counts[0].key)
        if not entries or (
            type(layers) is int
            and (len(entries) != layers if length == "N" else length != "cycle" and len(entries) < layers)
        ):
            need = f"{'at least ' if length == 'at least N' else ''}one entry per layer (num_hidden_layers: {layers})"
            need = "at least one entry" if length == "cycle" or type(layers) is not int else need
            raise reader.fail(f"key '{key}' has {len(entries)} entries; {reader.family.name} needs {need}")
        try:
            if kinds.issuperset(entries) and _KIND_TYPES.issuperset(map(type, entries)):
                continue
        except TypeError:  # an entry that is not a name
            pass
        read = []
        for i, entry in enumerate(entries):
            if type(entry) in _KIND_TYPES and entry in kinds:
                read.append(entry)
            elif legacy and type(entry) is str and LEGACY_KINDS.get(entry) in kinds:
                read.append(LEGACY_KINDS[entry])
            else:
                raise reader.fail(
                    f"key '{key}' entry {i} is {describe(entry)}, not a layer kind {reader.family.name} builds "
                    f"(allowed: {allowed})"
                )
        namespace[name] = read


def check_values(reader: _Reader, namespace: dict[str, Any], values: dict[Any, int]) -> dict[Any, tuple[int, ...]]:
    """The second half of :func:`read_values`: the record's refusals and checks applied to what
    :func:`read_symbols` read, the layers of each kind counted and the symbols read per layer (both added to
    ``namespace`` and ``values``); returns the layers each kind counted, by symbol."""
    family = reader.family
    layout = _layout(family)
    key = _passed("early", layout.early_names, namespace)
    if key is None or key not in layout.passed:
        for rule in family.refuse:
            if reader.rule(rule, namespace):
                raise RuleRefusal(f"{reader.source}: {_message(rule, namespace)} (model_type {family.name})")
        _check(reader, layout.early, namespace)
        if key is not None and len(layout.passed) < 4096:
            layout.passed[key] = True
    indices = _count_layers(reader, namespace, values)
    _per_layer_symbols(reader, namespace, values, indices)
    key = _passed("late", layout.late_names, namespace)
    if key is None or key not in layout.passed:
        _check(reader, layout.late, namespace)
        if key is not None and len(layout.passed) < 4096:
            layout.passed[key] = True
    return indices
