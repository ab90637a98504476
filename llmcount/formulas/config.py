"""The one generic reader: a family record + a parsed ``config.json`` -> the values of the glossary's symbols.

Keys come from the record, verbatim, with the defaults of the family's transformers config class. Nothing
here knows a family by name: what differs between families is data in their records.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Any

from sympy import Symbol

from ..errors import LlmcountError
from . import records
from .blocks import Term
from .derivation import Counts, Derivation
from .expressions import Unknown, condition_names
from .layer_kinds import MAX_LAYERS
from .records import NONE, REQUIRED, Composite, Family, Rule, SymbolSpec
from .symbols import GLOSSARY, entries

MAX_SIZE = 2**40  # any one size (a width, a vocabulary, a layer count): beyond it a config is a typo
MAX_LIST = 100_000  # entries of a list-valued key (layer_types, mlp_only_layers)
_EVALUATION_ERRORS = (Unknown, TypeError, ValueError, IndexError, ZeroDivisionError, OverflowError)


class RuleRefusal(LlmcountError):
    """A config refused by one of its record's ``checks`` or ``refuse`` rules: a stated reason."""


@dataclass(frozen=True)
class Model:
    """A config read with its family's record: the values of the symbols and the terms it has."""

    name: str
    source: str
    architecture: Family
    values: dict[Symbol, int]
    terms: tuple[Term, ...]
    dtype: str | None = None  # the dtype the config names for the weights (dtype, or torch_dtype before v5)
    # the record's [keys] and layer counts, as this config has them (activations.py reads its conditions with them)
    keys: Mapping[str, Any] = field(default_factory=dict)
    layer_indices: Mapping[Symbol, tuple[int, ...]] = field(default_factory=dict)  # which layers each kind counted
    max_positions: int | None = None  # the config's max_position_embeddings (n_positions), when it gives one
    # a composite config (multimodal): the language model, read from text_config, is this model's terms; ``parts``
    # are the other parts counted (vision tower, projector), each read with its own record
    composite: Composite | None = None
    parts: tuple[Any, ...] = ()  # formulas.parts.Part
    whole_name: str = ""  # the whole composite model's name (``name`` is its language model's)

    # the config as read, kept when the record describes a multi-token-prediction module (mtp.py reads it again)
    mtp_config: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)

    @property
    def whole_total(self) -> int | None:
        """The parameters of the whole composite model (language model and parts); None when a part is left out."""
        if self.composite is None or not self.composite.whole:
            return None
        return self.counts.total + sum(part.model.counts.total for part in self.parts)

    @cached_property
    def derivation(self) -> Derivation:
        return Derivation(self.architecture, self.terms)

    @cached_property
    def counts(self) -> Counts:
        return self.derivation.evaluate(self.values)

    @property
    def tied(self) -> bool:
        """Whether the LM head shares the token embedding (the record has a head this config leaves out)."""
        has_head = any(c.term.path == "head/lm_head" for c in self.architecture.choices)
        return has_head and all(t.path != "head/lm_head" for t in self.terms)


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
        names = [key, *self.family.aliases.get(key, ())]
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
        if spec.length and found and isinstance(self.config[found[0]], list):  # a list: how many entries it holds
            if len(self.config[found[0]]) > MAX_LIST:
                raise self.fail(f"key '{found[0]}' has {len(self.config[found[0]]):,} entries, more than {MAX_LIST:,}")
            return self.integer(found[0], len(self.config[found[0]]), spec.minimum)
        if spec.length and found and type(self.config[found[0]]) is int:  # a single entry
            return 1
        if spec.summed and found and self.config[found[0]] is not None:  # one integer per layer: their sum
            return self.summed(found[0], self.config[found[0]], spec, namespace)
        if spec.same and found and isinstance(self.config[found[0]], list):  # one integer per layer, all equal
            return self.same(found[0], self.config[found[0]], spec, namespace)
        if found and isinstance(self.config[found[0]], str) and self.config[found[0]] in spec.strings:
            return self.derived(spec, spec.strings[self.config[found[0]]], namespace)
        if found and spec.zero_is_none and self.config[found[0]] == 0 and not isinstance(self.config[found[0]], bool):
            return None if spec.null in (None, NONE) else self.derived(spec, spec.null, namespace)  # 0 reads as null
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
        modeling code computes it; the symbol's name holds the key's value in the expression."""
        try:
            result = spec.adjust({**namespace, spec.symbol.name: value})
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


def read_config(config: Any, source: str, name: str | None = None, family: Family | None = None) -> Model:
    """Read a parsed ``config.json`` into a :class:`Model`; raise LlmcountError on bad input. ``family``: read it
    with this record (a draft loaded with ``records.load``) instead of the bundled one of its model_type."""
    if not isinstance(config, dict):
        raise LlmcountError(f"{source}: a config must be a JSON object, got {describe(config)}")
    model_type = config.get("model_type")
    if model_type is None:
        raise LlmcountError(f"{source}: required key 'model_type' is missing")
    if family is None and isinstance(model_type, str) and records.family(model_type) is None:
        outer = records.composite(model_type)
        if outer is not None:
            return _read_composite(config, source, name, outer)
    if family is None and isinstance(model_type, str) and records.family(model_type) is None:
        family = _auto_mapped(config, model_type, source)
    family = family or find_family(model_type, source)
    reader = _Reader(_nested_keys(config, source, family), source, family)

    namespace: dict[str, Any] = {}
    for key, default in family.keys.items():
        namespace[key] = reader.key(key, default)
    values: dict[Symbol, int] = {}
    for spec in family.symbols:
        if spec.summed_on:  # read once the layers are counted (_per_layer_symbols)
            continue
        value = reader.symbol(spec, namespace)
        namespace[spec.key] = value
        if value is not None and spec.adjust is not None:
            value = reader.adjusted(spec, value, namespace)
        namespace[spec.symbol.name] = value
        if value is not None:
            values[spec.symbol] = value
    for rule in family.refuse:
        if reader.rule(rule, namespace):
            raise RuleRefusal(f"{source}: {_message(rule, namespace)} (model_type {family.name})")
    # a check that names a layer-count symbol (N_full + N_linear == N) or a symbol read on some layers is made once
    # the layers are counted
    counted = {symbol.name for symbol, _, _ in family.layers} | {s.symbol.name for s in family.symbols if s.on}
    late = [rule for rule in family.checks if counted & set(_condition_names(rule.text))]
    _check(reader, [rule for rule in family.checks if rule not in late], namespace)
    indices = _count_layers(reader, namespace, values)
    _per_layer_symbols(reader, namespace, values, indices)
    _check(reader, late, namespace)
    try:
        terms = family.terms_for(namespace, values)
    except _EVALUATION_ERRORS as exc:
        raise reader.fail(f"a key has a value {family.name}'s record cannot use: {exc}") from None
    used = _used_symbols(terms) | family.cost_symbols
    if family.choice_symbols - used:  # the activation tables keep a symbol only the terms left out would use
        used |= family.saved_symbols(namespace, values)
    # a symbol only the terms this config leaves out use (d_ff of an MoE model without dense layers) is dropped
    left_out = (family.choice_symbols - used) | (_idle_window(family, values) - _used_symbols(terms))
    ordered = {e.symbol: values[e.symbol] for e in entries() if e.symbol in values and e.symbol not in left_out}
    dtype = config.get("dtype", config.get("torch_dtype"))
    dtype = dtype if isinstance(dtype, str) else None
    keys = {key: namespace[key] for key in (*family.keys, *(symbol.name for symbol, _, _ in family.layers))}
    positions = next((config[key] for key in POSITION_KEYS if key in config), None)
    positions = positions if type(positions) is int and positions > 0 else None
    kept = config if family.mtp is not None else None
    return Model(name or source, source, family, ordered, terms, dtype, keys, indices, positions, mtp_config=kept)


def _auto_mapped(config: Mapping[str, Any], model_type: str, source: str) -> Family | None:
    """The record of the modeling class a config's auto_map names, said on stderr in one line; None without one."""
    found = records.by_auto_map(config)
    if found is None:
        return None
    entry, name, family = found
    import sys

    line = (
        f"note: {source}: model_type {model_type[:60]!r} has no record; its auto_map names {name} ({entry[:120]}): "
        f"counted with the {family.name} record"
    )
    print("".join(c if c.isprintable() else "?" for c in line), file=sys.stderr)  # one line, whatever the path holds
    return family


POSITION_KEYS = ("max_position_embeddings", "n_positions")
"""Where a config gives the longest sequence the model was built for (the context length)."""


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


def _read_composite(config: dict[str, Any], source: str, name: str | None, outer: Composite) -> Model:
    """The language model of a composite config: its ``text_config`` read with the record of the text model_type,
    as transformers reads it (the keys of ``outer.top`` from the top level); the model says what is not counted."""
    text = config.get("text_config")
    if text is None:
        text = _text_at_top(config, outer)
    if text is None:  # absent or null: the composite config class's own text config
        text = dict(outer.absent or {})
    elif not isinstance(text, dict):
        raise LlmcountError(f"{source}: key 'text_config' must be a JSON object, got {describe(text)}")
    where = f"{source}, text_config"
    text_type = text.get("model_type", outer.text) if outer.any_text else outer.text
    family = find_family(text_type, where)
    given = {name for key in text for name in (key, *family.aliases.get(key, ()))}
    given |= {key for key, names in family.aliases.items() if given & {key, *names}}
    defaults = {key: value for key, value in records.text_defaults(text_type, outer).items() if key not in given}
    inner = {**defaults, **text, "model_type": text_type}
    for key in outer.text_ignores:  # a key the composite's text config class does not have: its model ignores it
        inner.pop(key, None)
    for key, default in outer.top.items():
        value = config.get(key, default)
        if type(value) is not type(default):
            raise LlmcountError(f"{source}: key '{key}' must be {_kind(default)}, got {describe(value)}")
        if key in outer.either:  # the composite class takes text_config's true when its own is false
            nested = text.get(key, family.keys.get(key, False))
            if not isinstance(nested, bool):
                raise LlmcountError(f"{where}: key '{key}' must be true or false, got {describe(nested)}")
            value = value or nested
        inner[key] = value
    if "dtype" not in inner and "torch_dtype" not in inner:  # the checkpoint's dtype is usually given at the top
        inner.update({k: config[k] for k in ("dtype", "torch_dtype") if k in config})
    # the name says it wherever a command shows it (count, writeup, memory, batch rows): the vision parts are left out
    named = f"{name or source} (language model)"
    model = read_config(inner, where, named, family)
    parts: tuple[Any, ...] = ()
    if outer.vision:
        from .parts import read_parts

        parts = read_parts(config, source, name or source, outer, model)
    _check_composite(config, source, outer, model, parts)
    return replace(model, source=source, composite=outer, parts=parts, whole_name=name or source)


def _check_composite(
    config: dict[str, Any], source: str, outer: Composite, model: Model, parts: tuple[Any, ...] = ()
) -> None:
    """Refuse a composite config at the first of its class's checks it fails (an adapter's width that is not the
    text hidden size), over the text model's symbols, its parts' and the composite's ``keys`` read from the config."""
    namespace: dict[str, Any] = {}
    for part in parts:
        namespace.update({symbol.name: value for symbol, value in part.model.values.items()})
    namespace.update({symbol.name: value for symbol, value in model.values.items()})
    for key, default in outer.keys.items():
        head, _, leaf = key.rpartition(".")
        outer_config = config
        if head:
            outer_config = config.get(head)
            if outer_config is None:  # absent or null: the sub-config class's defaults
                outer_config = {}
            elif not isinstance(outer_config, dict):
                raise LlmcountError(f"{source}: key '{head}' must be a JSON object, got {describe(outer_config)}")
        namespace[key] = outer_config.get(leaf, default)
    for rule in outer.checks:
        try:
            holds = rule.test(namespace)
        except _EVALUATION_ERRORS as exc:
            raise LlmcountError(f"{source}: {rule.message} (cannot check {rule.text!r}: {exc})") from None
        if not holds:
            raise RuleRefusal(f"{source}: {_message(rule, namespace)} (model_type {outer.name})")


def _text_at_top(config: dict[str, Any], outer: Composite) -> dict[str, Any] | None:
    """The text config a composite class builds from the top-level keys when text_config is absent or null (a
    released config.json written flat): all of them, or the keys it names; None when it reads none of them."""
    if outer.text_at_top is True:
        return {key: value for key, value in config.items() if key not in ("model_type", "text_config")}
    given = {key: config[key] for key in outer.text_at_top or () if key in config}
    return given or None


def _idle_window(family: Family, values: Mapping[Symbol, int]) -> frozenset[Symbol]:
    """The symbols of a sliding window this config does not use (no window, or no layer that slides): left out of
    the values, so that memory counts every layer full and a count does not list W = 131072, N_sliding = 0. A window
    the cache alone slides by (``cached_sliding``) is used."""
    spec = family.attention
    if spec is None or spec.window is None:
        return frozenset()
    symbols = spec.window.free_symbols | (spec.sliding.free_symbols if spec.sliding is not None else set())
    if not symbols <= set(values):
        if spec.per_kind and spec.windowed.free_symbols <= set(values) and records.value_at(spec.windowed, values) != 0:
            raise LlmcountError(
                f"{family.title} ({family.name}): a config without a sliding window whose sliding layers have "
                "widths of their own is not modelled"
            )
        return frozenset(symbols)
    if all(count is not None and records.value_at(count, values) == 0 for count in (spec.sliding, spec.cache_sliding)):
        return frozenset(symbols)  # no layer slides, in the scores or in the cache
    return frozenset()


@lru_cache(maxsize=4096)
def _condition_names(text: str) -> tuple[str, ...]:
    """:func:`condition_names`, parsed once per rule text."""
    return tuple(condition_names(text))


_USED: dict[int, tuple[tuple[Term, ...], frozenset[Symbol]]] = {}


def _used_symbols(terms: tuple[Term, ...]) -> frozenset[Symbol]:
    """The symbols the terms' total and activated counts use; once per tuple of terms (``terms_for`` gives the
    configs of a family that select the same terms one tuple, so a batch of thousands asks for a handful)."""
    hit = _USED.get(id(terms))
    if hit is not None and hit[0] is terms:
        return hit[1]
    used = frozenset().union(*(t.activated.free_symbols | t.total.free_symbols for t in terms))
    if len(_USED) < 4096:
        _USED[id(terms)] = (terms, used)  # the tuple is kept, so its id is not reused while it is a key
    return used


def _check(reader: _Reader, rules: list[Rule], namespace: Mapping[str, Any]) -> None:
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
    layers = namespace["N"]
    if layers > MAX_LAYERS:
        raise reader.fail(f"num_hidden_layers is {layers:,}; layers of several kinds are counted up to {MAX_LAYERS:,}")
    scope = dict(namespace)
    for symbol, test, text in reader.family.layers:
        try:
            chosen, total = [], 0
            for i in range(layers):
                scope["i"] = i
                weight = test(scope)
                if weight:
                    chosen.append(i)
                    total += weight if type(weight) is int and weight > 0 else 1
        except _EVALUATION_ERRORS as exc:
            raise reader.fail(f"cannot tell which layers are {symbol.name} ({text}): {exc}") from None
        indices[symbol] = tuple(chosen)
        values[symbol] = namespace[symbol.name] = scope[symbol.name] = total
    return indices


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


def find_family(model_type: Any, source: str, also: str = "") -> Family:
    """The record of a config's model_type; an unknown one is refused by name with the closest known names
    (and ``also``, a further hint)."""
    family = records.family(model_type) if isinstance(model_type, str) else None
    if family is not None:
        return family
    known = records.names()
    close = difflib.get_close_matches(model_type, known, n=3, cutoff=0.6) if isinstance(model_type, str) else []
    hint = f"; closest: {', '.join(close)}" if close else f"; {len(known)} are supported (llmcount list)"
    shown = repr(model_type)[:60]
    raise LlmcountError(f"{source}: unsupported model_type {shown}{hint}{also}")


def config_key(model: Model | Family, symbol: Symbol) -> str:
    """The key (or layer condition) a family's config.json gives ``symbol`` under, verbatim: ``n`` is
    ``num_local_experts`` for Mixtral and ``n_routed_experts`` for DeepSeek."""
    family = model.architecture if isinstance(model, Model) else model
    return family.key_of(symbol) or GLOSSARY_KEYS[symbol]


# The glossary's key column lists every family's name for a symbol; its first name is the common one.
GLOSSARY_KEYS: dict[Symbol, str] = {e.symbol: e.key if e.key.startswith("(") else e.key.split(" ")[0] for e in GLOSSARY}
