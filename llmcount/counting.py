"""The numeric path of ``count`` and ``flops --json``: a config read and counted with its family's compiled
snapshot, and its FLOPs evaluated from it, without sympy.

A snapshot (``formulas/compiled/<model_type>.json``, made by :mod:`llmcount.formulas.snapshot` from the checked
record) holds the record's reading rules as condition texts and each term's counts as compiled expressions
(:mod:`llmcount.evaluate`). The config is read by the same generic reader as the sympy path
(:mod:`llmcount.formulas.reading`), so every value is read and checked alike; the counts are Python integers.

Only what this path is sure to read exactly as the sympy path does is read here; anything else raises
:class:`Fallback` before a word is printed, and the caller reads the config through the sympy path
(:func:`llmcount.formulas.config.read_config`), which words every refusal and error: a bad config, a composite
(multimodal) config, a record without a snapshot or whose snapshot is stale, a term the compiled forms cannot take.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache, cached_property, lru_cache
from importlib import resources
from operator import itemgetter
from typing import Any, NamedTuple

from . import evaluate
from .errors import LlmcountError
from .formulas.expressions import Unknown, condition
from .formulas.reading import (
    _ABSENT,
    MAX_LAYERS,
    MAX_LIST,
    MAX_SIZE,
    NONE,
    REQUIRED,
    _condition_names,
    _frozen,
    _layout,
    _nested_keys,
    _Reader,
    check_values,
    read_symbols,
)

try:  # the builtin SHA-256 (hashlib would load OpenSSL first, which costs more than a count)
    from _sha2 import sha256  # Python >= 3.12
except ImportError:
    try:
        from _sha256 import sha256  # Python 3.11
    except ImportError:  # pragma: no cover - a Python built without them
        from hashlib import sha256

FORMAT = 1  # the layout of a snapshot this module reads (formulas/snapshot.py writes it)
ACTIVATED_DEFINITION = (
    "activated = every parameter except the routed experts, plus k/n of the routed experts "
    "(router and shared experts count fully); for dense models activated = total"
)
EMBEDDING_DEFINITION = "embedding = token embedding + learned position table + untied LM head"


_SOURCE_NAME = re.compile(r"v\['([A-Za-z_][A-Za-z0-9_]*)'\]")  # a value by name in a compiled expression


_new = object.__new__
_ENTRIES = {str, int}  # list entries whose tuple keeps their types apart
_INT = {int}
_GIVEN = {int, type(_ABSENT)}


class Fallback(Exception):
    """The compiled path does not take this config (or record): the sympy path reads it, and words any error."""


class Name(str):
    """A glossary symbol by name, as the reader uses it (its name, whether it must be positive). It is the name
    itself (a ``str``), so that the values the reader keys by symbol are the values by name the compiled
    expressions read."""

    name: str
    is_positive: bool

    def __new__(cls, name: str, is_positive: bool = True) -> Name:
        self = super().__new__(cls, name)
        self.name = str(name)
        self.is_positive = is_positive
        return self

    def __repr__(self) -> str:
        return f"Name({str.__repr__(self)}, {self.is_positive})"


@dataclass(frozen=True)
class Spec:
    """How a config gives one symbol (the fields of ``records.SymbolSpec`` the reader uses)."""

    symbol: Name
    key: str
    default: Any = REQUIRED
    default_text: str = ""
    null: Any = None
    strings: dict[str, Any] = field(default_factory=dict)
    zero_is_none: bool = False
    adjust: Any = None
    adjust_text: str = ""
    distinct: bool = False
    summed: bool = False
    same: bool = False
    on: Name | None = None
    absent: Any = None
    absent_text: str = ""
    length: bool = False
    ratio: bool = False
    largest: bool = False
    indices: bool = False

    @property
    def minimum(self) -> int:
        return 1 if self.symbol.is_positive else 0

    @property
    def summed_on(self) -> bool:
        return self.summed and self.on is not None

    @property
    def overridden(self) -> bool:
        return self.on is not None and not self.summed


@dataclass(frozen=True)
class Rule:
    test: Any
    text: str
    message: str


@dataclass(frozen=True)
class Choice:
    path: str
    when: Any
    embedding: bool
    counts: tuple[str, ...]
    variants: dict[str, dict[str, Any]]


def _rule(text: str | None, where: str) -> Any:
    """A condition compiled from its text; REQUIRED, NONE and None as the record's specs hold them."""
    if text is None or text == "none":
        return None if text is None else NONE
    return _condition(text, where)


@lru_cache(maxsize=8192)
def _condition(text: str, where: str) -> Any:
    """A condition compiled once per text (many records share theirs: ``tie_word_embeddings``, ``N``)."""
    return condition(text, where)


class Compiled:
    """One family's snapshot, as the reader and the counts use it."""

    def __init__(self, data: dict[str, Any]):
        self.data = data
        self.name: str = data["name"]
        self.title: str = data["title"]
        self.is_moe: bool = data["is_moe"]
        self.counted: str = data["counted"]
        self.not_counted: str = data["not_counted"]
        self.checked_version: str = data["checked_version"]
        self.aliases = {key: tuple(names) for key, names in data["aliases"].items()}
        self.keys: dict[str, Any] = data["keys"]
        self.per_layer: str = data["per_layer"]
        # the record's [layer_kinds]: key -> (kinds, length, legacy), as reading checks them
        self.layer_kinds = {k: (frozenset(v[0]), v[1], v[2]) for k, v in data.get("layer_kinds", {}).items()}
        where = "a compiled snapshot"
        self.symbols = tuple(self._spec(spec, where) for spec in data["symbols"])
        self.layers = tuple((Name(name), _condition(text, where), text) for name, text in data["layers"])
        self.checks = tuple(Rule(_condition(text, where), text, message) for text, message in data["checks"])
        self.refuse = tuple(Rule(_condition(text, where), text, message) for text, message in data["refuse"])
        self.choices = tuple(
            Choice(c["path"], _rule(c["when"], where), c["embedding"], tuple(c["counts"]), c["variants"])
            for c in data["choices"]
        )
        self.whens = tuple(c.when for c in self.choices)
        self.cost_symbols = frozenset(data["cost_symbols"])
        self.choice_symbols = frozenset(data["choice_symbols"])
        self.layer_symbols = frozenset(data["layer_symbols"])

    @staticmethod
    def _spec(data: dict[str, Any], where: str) -> Spec:
        default = data["default"]
        default = REQUIRED if default == "required" else _rule(default, where)
        entries = data["entries"]
        return Spec(
            Name(data["name"], data["positive"]),
            data["key"],
            default,
            data["default_text"],
            _rule(data["null"], where),
            {text: _rule(rule, where) for text, rule in data["strings"].items()},
            data["zero"],
            _rule(data["adjust"], where),
            data["adjust_text"],
            entries == "distinct",
            entries == "sum",
            entries == "same",
            Name(data["on"]) if data["on"] is not None else None,
            _rule(data["absent"], where),
            data["absent_text"],
            entries == "length",
            data.get("ratio", False),
            entries == "largest",
            entries == "indices",
        )

    @cached_property
    def nested(self) -> frozenset[str]:
        names = [spec.key for spec in self.symbols] + list(self.keys)
        names += [name for key, others in self.aliases.items() for name in (key, *others)]
        return frozenset(name for name in names if "." in name)

    def unseen(self, config: dict[str, Any]) -> tuple[str, ...]:
        """The keys of ``config`` the record was not checked against (``Family.unseen``)."""
        seen = self.data["seen"]
        if seen is None:
            return ()
        known = self._seen
        return tuple(sorted(key for key in config if isinstance(key, str) and key not in known))

    @cached_property
    def _seen(self) -> frozenset[str]:
        return frozenset(self.data["seen"])

    @cached_property
    def _saved(self) -> tuple[tuple[Any, Any, frozenset[str], frozenset[str]], ...]:
        where = "a compiled snapshot"
        return tuple(
            (
                _rule(e["when"], where),
                evaluate.from_source(e["layers"]),
                frozenset(e["symbols"]),
                frozenset(e["layer_symbols"]),
            )
            for e in self.data["saved"]
        )

    def read(self, config: Any, source: str, name: str | None = None) -> Counted:
        """``config`` counted; :class:`Fallback` for anything the sympy path should read."""
        if not isinstance(config, dict) or config.get("model_type") != self.name or self.data.get("composite"):
            raise Fallback  # another record's config, or a composite's of this record (its towers counted too)
        known = None
        if self._read_names is not None:
            known = self._known_key(config)
            found = self._known.get(known) if known is not None else None
            if found is not None:
                counted = self._known_read(config, source, name, found)
                if counted is not None:
                    return counted
        try:
            reader = _Reader(_nested_keys(config, source, self), source, self)
            namespace, values = read_symbols(reader)
        except LlmcountError:
            raise Fallback from None
        names = self._decision_names
        decided = key = None
        if names is not None:
            given = [namespace[name] for name in names]  # every name read_symbols always sets
            key = (*given, *map(type, given))  # each value with its type (1, 1.0 and true differ)
            try:
                decided = self._decided.get(key)
            except TypeError:  # a list of names (layer_types) as a tuple; another list by _inputs; an object: no key
                frozen = (tuple(v) if type(v) is list and set(map(type, v)) <= _ENTRIES else v for v in given)
                key = (*frozen, *map(type, given))
                try:
                    decided = self._decided.get(key)
                except TypeError:
                    key = _inputs(names, namespace)
                    decided = self._decided.get(key) if key is not None else None
        if decided is None:
            try:
                check_values(reader, namespace, values)
            except LlmcountError:
                raise Fallback from None
            by_name = values  # keyed by Name, which is the name
            decided = self._decide(namespace, by_name)
            if key is not None and len(self._decided) < 4096:
                self._decided[key] = decided
        else:
            by_name = values
            by_name.update(decided.layers)
        plan = decided.plan
        numbers = _value(plan.counted, by_name)
        if not _INT.issuperset(map(type, numbers)):  # a Fraction (or a bool): whole ones as ints, else the sympy path
            numbers = tuple(evaluate.whole(number) for number in numbers)
            if None in numbers:
                raise Fallback  # a count that is not a whole number: the sympy path words it
        ordered = {n: by_name[n] for n in decided.shown if n in by_name}
        counted = _new(Counted)  # Counted's fields, without the frozen dataclass's __init__ (a fifth of a read)
        counted.__dict__.update(
            name=name or source,
            source=source,
            architecture=self,
            values=ordered,
            plan=plan,
            numbers=numbers,
            composite=None,
            parts=(),
            config=config,
        )
        if known is not None and len(self._known) < 4096:
            given = tuple(config.get(key, _ABSENT) for key, _, _ in self._free)
            self._known[known] = _Known(dict(by_name), plan, decided.shown, given, numbers, dict(ordered))
        return counted

    def _known_read(self, config: dict[str, Any], source: str, name: str | None, known: _Known) -> Counted | None:
        """``config`` counted from what a config of the same :meth:`_known_key` gave, with the values of
        :attr:`_free` taken from ``config`` (its counts computed again when they differ); None when one of those is
        not an integer in the range the reader takes straight (the config is then read in full)."""
        given = tuple(config.get(key, _ABSENT) for key, _, _ in self._free)
        if given == known.given and _GIVEN.issuperset(map(type, given)):  # true == 1: the types too
            values, numbers = dict(known.shown), known.numbers
        else:
            by_name = dict(known.values)
            for (_, symbol, minimum), value in zip(self._free, given, strict=True):
                if value is _ABSENT:
                    continue  # absent here as in the config read: its default, from the values of the others
                if type(value) is not int or not minimum <= value <= MAX_SIZE:
                    return None
                by_name[symbol] = value
            numbers = _value(known.plan.counted, by_name)
            if not _INT.issuperset(map(type, numbers)):
                return None
            values = {n: by_name[n] for n in known.names if n in by_name}
        counted = _new(Counted)
        counted.__dict__.update(
            name=name or source,
            source=source,
            architecture=self,
            values=values,
            plan=known.plan,
            numbers=numbers,
            composite=None,
            parts=(),
            config=config,
        )
        return counted

    @cached_property
    def _free(self) -> tuple[tuple[str, str, int], ...]:
        """(key, symbol, least value) of each symbol whose key's integer value the reader takes as it is and that
        nothing else reads: no refusal, check, layer condition, choice, activation table or window
        (:attr:`_decision_names`), no other symbol's default, null, adjustment, string or absence rule, and no
        other symbol or [keys] entry from the same key. Its value changes the counts only, so configs that differ in
        these alone share one :attr:`_known` entry."""
        if self._read_names is None:
            return ()
        taken = set(self._decision_names)
        for spec in self.data["symbols"]:
            texts = [spec[field] for field in ("default", "null", "adjust", "absent")]
            texts += list(spec["strings"].values())
            taken.update(n for text in texts if text not in (None, "none", "required") for n in _condition_names(text))
        keys = [spec.key for spec in self.symbols]
        free = []
        for spec in self.symbols:
            plain = not (spec.distinct or spec.length or spec.largest or spec.summed or spec.same or spec.zero_is_none)
            plain = plain and not spec.ratio and spec.adjust is None and spec.on is None
            if not plain or self.aliases.get(spec.key) or spec.key in self.keys or keys.count(spec.key) > 1:
                continue
            if spec.key in taken or spec.symbol.name in taken:
                continue
            free.append((spec.key, spec.symbol.name, spec.minimum))
        return tuple(free)

    @cached_property
    def _read_names(self) -> tuple[str, ...] | None:
        """Every key of a config the reader reads (each symbol's and [keys] key, their aliases, the per-layer object):
        what it reads, checks and counts is a function of their values alone. None for a record with dotted keys
        (read from sub-objects) or a symbol read per layer, whose configs are read in full every time."""
        if self.nested or self._decision_names is None:
            return None
        names = [*self.keys, *(spec.key for spec in self.symbols), self.per_layer]
        names += [alias for name in list(names) for alias in self.aliases.get(name, ())]
        return tuple(dict.fromkeys(name for name in names if name))

    @cached_property
    def _fixed_names(self) -> tuple[str, ...]:
        """:attr:`_read_names` but the keys of :attr:`_free`."""
        free = {key for key, _, _ in self._free}
        return tuple(name for name in self._read_names if name not in free)

    @cached_property
    def _known(self) -> dict[tuple, _Known]:
        """The values, plan and names shown of a config read, by :meth:`_known_key`: a config whose keys the reader
        reads hold the values (and types) of one read before, but for the keys of :attr:`_free`, is counted from
        them (:meth:`_known_read`) without reading and checking its keys again. Only configs that passed every rule
        are kept.
        """
        return {}

    def _known_key(self, config: dict[str, Any]) -> tuple | None:
        """The values of :attr:`_fixed_names` in ``config`` with their types (absent is its own; a list of names or
        layer indices as a tuple, up to the reader's bound on entries), or None when one cannot be a key (an object, a
        longer list: the reader refuses it)."""
        given = [config.get(name, _ABSENT) for name in self._fixed_names]
        given += [key in config for key, _, _ in self._free]  # a key left out reads as its default
        key = (*given, *map(type, given))
        try:
            hash(key)
        except TypeError:
            frozen = (
                tuple(v) if type(v) is list and len(v) <= MAX_LIST and set(map(type, v)) <= _ENTRIES else v
                for v in given
            )
            key = (*frozen, *map(type, given))
            try:
                hash(key)
            except TypeError:
                return None
        return key

    @cached_property
    def _decision_names(self) -> tuple[str, ...] | None:
        """Every name whose value decides more than the counts' values: what the refusals, checks, layer conditions,
        choices, activation tables and sliding window read, and the layer counts. A config is checked and its
        terms are selected once per values of these (:meth:`_decide`, kept in :attr:`_decided`); None for a record
        with a symbol read per layer (from a per-layer object or list the key does not hold), which is checked for
        every config."""
        if any(spec.on is not None for spec in self.symbols):
            return None
        layout = _layout(self)
        names = [*layout.early_names, *layout.late_names, *self._when_names, *self._saved_names, "N"]
        for symbol, _, text in self.layers:
            names += [symbol.name, *(n for n in _condition_names(text) if n != "i")]
        window = self.data["window"]
        if window is not None:
            names += [*window["symbols"], *window["windowed_symbols"]]
            texts = (window["windowed"], window["sliding"], window["cache_sliding"])
            names += [n for text in texts if text is not None for n in _SOURCE_NAME.findall(text)]
        # a name read_symbols does not set (a layer count) is decided by the others
        given = {*self.keys, *(spec.key for spec in self.symbols), *(spec.symbol.name for spec in self.symbols)}
        return tuple(name for name in dict.fromkeys(names) if name in given)

    @cached_property
    def _decided(self) -> dict[tuple, Decided]:
        """What :meth:`_decide` gave, by the values of :attr:`_decision_names` (each with its type): only configs
        that passed every rule are kept, so a config that fails one is checked, refused and worded as before."""
        return {}

    def _decide(self, namespace: dict[str, Any], by_name: dict[str, int]) -> Decided:
        """The terms a config counts (after its rules passed and its layers were counted): its layer counts, the
        :class:`Plan` of the choices that hold, and the names of the values shown."""
        key = _inputs(self._when_names, namespace)
        held = self._held.get(key) if key is not None else None
        if held is None:
            try:
                held = tuple(True if when is None else bool(when(namespace)) for when in self.whens)
            except Exception:
                raise Fallback from None
            if key is not None and len(self._held) < 4096:
                self._held[key] = held
        layers = by_name.get("N")
        states = []
        for symbol, _, _ in self.layers:
            value = by_name.get(symbol.name)
            if value == 0:
                states.append(f"{symbol.name}=0")
            elif value == layers:
                states.append(f"{symbol.name}=N")
        plan = self._plans.get((held, *states))
        if plan is None:
            plan = self._plan(held, states)
            if len(self._plans) < 4096:
                self._plans[(held, *states)] = plan
        left_out = plan.left_out
        if plan.saved:
            left_out = left_out - self._saved_symbols(namespace, by_name)
        if self.data["window"] is not None:
            left_out = left_out | (self._idle_window(by_name) - plan.in_terms)
        counts = tuple((symbol.name, by_name[symbol.name]) for symbol, _, _ in self.layers if symbol.name in by_name)
        return Decided(counts, plan, tuple(n for n in self.order if n not in left_out))

    @cached_property
    def _when_names(self) -> tuple[str, ...]:
        """The names the choices' conditions read: which terms a config selects depends on their values alone."""
        texts = [c["when"] for c in self.data["choices"] if c["when"] not in (None, "none")]
        return tuple(dict.fromkeys(name for text in texts for name in _condition_names(text)))

    @cached_property
    def _held(self) -> dict[tuple, tuple[bool, ...]]:
        """Which choices hold, by the values of :attr:`_when_names` (a batch of one family evaluates them once)."""
        return {}

    @cached_property
    def _saved_names(self) -> tuple[str, ...]:
        """The names :meth:`_saved_symbols` reads: its conditions' and the layer counts of its entries."""
        names = [n for e in self.data["saved"] if e["when"] is not None for n in _condition_names(e["when"])]
        names += [n for e in self.data["saved"] for n in e["layer_symbols"]]
        return tuple(dict.fromkeys(names))

    @cached_property
    def _saved_cache(self) -> dict[tuple, frozenset[str]]:
        return {}

    @cached_property
    def order(self) -> tuple[str, ...]:
        return tuple(self.data["order"])

    @cached_property
    def _plans(self) -> dict[tuple, Plan]:
        return {}

    def _plan(self, held: tuple[bool, ...], states: list[str]) -> Plan:
        """The terms a selection keeps (:class:`Plan`), for the choices that hold and the layer counts that are 0 or
        all N layers (``states``: ``N_dense=0``, ``N_full=N``)."""
        terms: list[tuple[str, str, str, bool]] = []
        layers: list[Any] = []
        mtp: list[Any] = []
        sources: list[str] = []
        used: set[str] = set()
        by_count = dict(state.split("=") for state in states)
        for choice, holds in zip(self.choices, held, strict=True):
            if not holds:
                continue
            variant = choice.variants[",".join(f"{c}={by_count[c]}" for c in choice.counts if c in by_count)]
            if variant.get("drop"):
                continue
            if any(t[0] == choice.path for t in terms):
                raise Fallback  # two terms of one path: the record's error, worded by the sympy path
            terms.append((choice.path, variant["text"], variant["str"], choice.embedding))
            layers.append(variant.get("layers"))
            mtp.append(variant.get("mtp"))
            sources += [variant["total"], variant["activated"]]
            used |= set(variant["used"])
        try:
            distinct = list(dict.fromkeys(sources))  # a dense term's activated count is its total: computed once
            function = evaluate.from_source("(" + "".join(f"{text}, " for text in distinct) + ")")
            counted = function if len(distinct) == len(sources) else _Repeated(function, sources, distinct)
        except evaluate.NotCompiled:
            raise Fallback from None
        selection = "".join("1" if h else "0" for h in held) + "|" + ",".join(states)
        in_terms = frozenset(used)
        left_out = self.choice_symbols - in_terms - self.cost_symbols
        embedding = tuple(i for i, term in enumerate(terms) if term[3])
        return Plan(
            counted, tuple(terms), in_terms, left_out, bool(left_out), embedding, selection, tuple(layers), tuple(mtp)
        )

    def _saved_symbols(self, namespace: dict[str, Any], by_name: dict[str, int]) -> frozenset[str]:
        """The symbols the activation tables read for this config (``Family.saved_symbols``), once per values of
        :attr:`_saved_names` (a symbol's value is in ``by_name`` exactly when the namespace holds it, not None)."""
        key = _inputs(self._saved_names, namespace)
        found = self._saved_cache.get(key) if key is not None else None
        if found is None:
            found = frozenset(self._saved_walk(namespace, by_name))
            if key is not None and len(self._saved_cache) < 4096:
                self._saved_cache[key] = found
        return found

    def _saved_walk(self, namespace: dict[str, Any], by_name: dict[str, int]) -> set[str]:
        used: set[str] = set()
        for when, layers, symbols, layer_symbols in self._saved:
            try:
                if when is not None and not when(namespace):
                    continue
            except (Unknown, ValueError, TypeError, ZeroDivisionError, IndexError):
                pass
            if layer_symbols <= by_name.keys() and _value(layers, by_name) == 0:
                continue
            used |= symbols
        return used - {"S", "B"} - self.layer_symbols

    def _idle_window(self, by_name: dict[str, int]) -> frozenset[str]:
        window = self.data["window"]
        if window is None:
            return frozenset()
        symbols = frozenset(window["symbols"])
        if not symbols <= by_name.keys():
            slides = window["per_kind"] and set(window["windowed_symbols"]) <= by_name.keys()
            if slides and _value(evaluate.from_source(window["windowed"]), by_name) != 0:
                raise Fallback  # refused by the sympy path
            return symbols
        counts = (window["sliding"], window["cache_sliding"])
        if all(c is not None and _value(evaluate.from_source(c), by_name) == 0 for c in counts):
            return symbols
        return frozenset()


class _Repeated:
    """A plan's counts computed from its distinct expressions only, each result placed wherever its expression is."""

    __slots__ = ("function", "pick")

    def __init__(self, function: Any, sources: list[str], distinct: list[str]):
        self.function = function
        at = {text: i for i, text in enumerate(distinct)}
        self.pick = itemgetter(*(at[text] for text in sources))

    def __call__(self, values: dict[str, int]) -> tuple:
        picked = self.pick(self.function(values))
        return picked if type(picked) is tuple else (picked,)


def _inputs(names: tuple[str, ...], namespace: dict[str, Any]) -> tuple | None:
    """The values of ``names`` in ``namespace``, each with its type (1, 1.0 and true differ; absent is its own), as
    a key; None when one cannot be a key (a JSON object)."""
    try:
        return tuple(_frozen(namespace.get(name, _ABSENT)) for name in names)
    except TypeError:
        return None


def _value(function: Any, values: dict[str, int]) -> Any:
    try:
        return function(values)
    except (KeyError, ZeroDivisionError):
        raise Fallback from None


class Decided(NamedTuple):
    """What a config's values of :attr:`Compiled._decision_names` decide: the layers of each kind counted (by
    symbol name), the plan of its terms, and the names whose values a count shows (in the record's order)."""

    layers: tuple[tuple[str, int], ...]
    plan: Plan
    shown: tuple[str, ...]


class _Known(NamedTuple):
    """What a config read in full gave, for :meth:`Compiled._known_read`: every value by name, the plan of its terms,
    the names shown, its values of :attr:`Compiled._free` as given (absent: ``_ABSENT``), its counts and the values
    shown."""

    values: dict[str, int]
    plan: Plan
    names: tuple[str, ...]
    given: tuple
    numbers: tuple[int, ...]
    shown: dict[str, int]


class Plan(NamedTuple):
    """What one selection of terms counts: one compiled function giving every term's total and activated counts (in
    turn), each term's path, formulas and embedding flag, the symbols the terms use, the choice symbols a count leaves
    out of its values unless the activation tables read them (``saved``: whether to ask), the indices of the
    embedding terms, the selection's key in the snapshot, and each term's layers (1 for a term once per model, else
    the layer count's text; None from a snapshot that does not say)."""

    counted: Any
    terms: tuple[tuple[str, str, str, bool], ...]
    in_terms: frozenset[str]
    left_out: frozenset[str]
    saved: bool
    embedding: tuple[int, ...]
    selection: str
    layers: tuple[Any, ...] = ()
    mtp: tuple[Any, ...] = ()  # each term's formula in the MTP module ([sympy's, count's]), None where it has none


class Component(NamedTuple):
    """One term counted: its path, its formula as ``count`` prints it (``text``) and as sympy writes it (``formula``,
    the JSON's), its counts and whether it is an embedding."""

    path: str
    text: str
    formula: str
    count: int
    activated: int
    embedding: bool


@dataclass(frozen=True)
class Counted:
    """A config counted by the compiled path: the fields of a Model and of its Counts that ``count`` shows."""

    name: str
    source: str
    architecture: Compiled
    values: dict[str, int]
    plan: Plan = field(repr=False)
    numbers: tuple[int, ...] = field(repr=False)  # each term's total and activated count, in turn
    composite: None = None
    parts: tuple[()] = ()
    config: Any = field(default=None, repr=False, compare=False)  # the config read (the sympy path reads it again)

    def full(self) -> Any:
        """The :class:`~llmcount.formulas.config.Model` of the sympy path for the same config (imports sympy)."""
        from .formulas.config import read_config

        return read_config(self.config, self.source, self.name)

    @property
    def counts(self) -> Counted:
        return self

    @property
    def selection(self) -> str:
        return self.plan.selection

    @cached_property
    def components(self) -> tuple[Component, ...]:
        numbers = self.numbers
        return tuple(
            Component(path, text, formula, numbers[2 * i], numbers[2 * i + 1], embedding)
            for i, (path, text, formula, embedding) in enumerate(self.plan.terms)
        )

    @property
    def total(self) -> int:
        return sum(self.numbers[0::2])

    @property
    def activated(self) -> int:
        return sum(self.numbers[1::2])

    @property
    def embedding(self) -> int:
        return sum(self.numbers[2 * i] for i in self.plan.embedding)

    @property
    def non_embedding(self) -> int:
        return self.total - self.embedding

    @property
    def shown(self) -> dict[str, str] | None:
        """The whole formula of this selection of terms (``P = ...``, the JSON's total and activated), when the
        snapshot holds it."""
        return self.architecture.data["selections"].get(self.selection)

    def flops(self, seq: int, batch: int, causal: bool = False) -> Any:
        """``Flops(derivation, causal).at(values, seq).evaluate(values, seq, batch)`` of the sympy path, from the
        snapshot's compiled FLOPs formula of this selection of terms: a
        :class:`~llmcount.formulas.flop_counts.FlopCounts` whose components' formulas are text. :class:`Fallback`
        when the snapshot does not hold the formula, or S is past the longest S the record's [attention] describes
        (the sympy path reads what runs there, or refuses it by name)."""
        from fractions import Fraction

        from .formulas.flop_counts import FlopComponent, FlopCounts

        shown = self.shown
        formulas = shown.get("flops") if shown is not None else None
        if formulas is None:
            raise Fallback
        values = {**self.values, "S": seq, "B": batch}
        if formulas["longest"] is not None:
            longest, symbols = formulas["longest"]
            if set(symbols) <= values.keys() and seq > int(_value(evaluate.from_source(longest), values)):
                raise Fallback
        if formulas["window"] is not None and not set(formulas["window"][0]) <= values.keys():
            window, sliding = formulas["window"]  # no window in the config: no layer slides, every layer sees all S
            values.update({name: 0 for name in sliding if name not in values})
            values.update({name: seq for name in window if name not in values})
        chosen = formulas["causal" if causal else "eager"]
        components = []
        for path, text, forward, present in chosen["terms"]:
            layers = evaluate.whole(_value(evaluate.from_source(present), values))
            if layers == 0:
                continue  # no layer of that kind in this config
            count = evaluate.whole(_value(evaluate.from_source(forward), values))
            if layers is None or count is None:
                raise Fallback  # not a whole number: the sympy path words it
            components.append(FlopComponent(path, text, count))
        forward = sum(c.flops for c in components)
        rule = evaluate.whole(_value(evaluate.from_source(formulas["rule_of_thumb"]), values))
        if rule is None:
            raise Fallback
        per_token = Fraction(forward, seq * batch)
        return FlopCounts(
            seq=seq,
            batch=batch,
            forward=forward,
            per_token=per_token.numerator if per_token.denominator == 1 else per_token,
            training=3 * forward,
            rule_of_thumb=rule,
            components=tuple(components),
            convention=chosen["convention"],
        )

    def flops_data(self, counts: Any, causal: bool = False) -> dict[str, Any]:
        """What ``renderers.flops_data`` gives (``flops --json``) for ``counts`` of :meth:`flops`."""
        from .formulas.flop_counts import RULE_DEFINITION, TRAINING_DEFINITION

        chosen = self.shown["flops"]["causal" if causal else "eager"]
        per_token = counts.per_token
        return {
            "model": self.name,
            "family": self.architecture.name,
            "seq": counts.seq,
            "batch": counts.batch,
            "causal": causal,
            "forward_flops": counts.forward,
            "per_token": per_token if isinstance(per_token, int) else float(per_token),
            "training_flops": counts.training,
            "rule_of_thumb_flops": counts.rule_of_thumb,
            "rule_of_thumb_relative_error": float(counts.rule_error),
            "convention": counts.convention,
            "components": [{"path": c.path, "formula": c.formula, "flops": c.flops} for c in counts.components],
            "formula": {"forward": chosen["forward"], "per_token": chosen["per_token"]},
            "definitions": {"training": TRAINING_DEFINITION, "rule_of_thumb": RULE_DEFINITION},
        }

    def summary(self) -> dict[str, Any]:
        """What ``renderers.summary_data`` gives for a model that is not composite."""
        data: dict[str, Any] = {
            "model": self.name,
            "family": self.architecture.name,
            "source": self.source,
            "total": self.total,
            "activated": self.activated,
            "embedding": self.embedding,
            "non_embedding": self.non_embedding,
        }
        if self.architecture.not_counted:
            data["scope"] = {"counted": self.architecture.counted, "not_counted": self.architecture.not_counted}
        return data

    def count_data(self, mtp: bool = False) -> dict[str, Any]:
        """What ``renderers.count_data`` gives (``count --json``, ``--mtp``: the checkpoint's MTP module counted in);
        :class:`Fallback` when the snapshot does not hold this selection's formula, or ``mtp`` finds no module (the
        sympy path words why)."""
        shown = self.shown
        if shown is None:
            raise Fallback
        module = self.mtp_module(mtp)
        data = {
            **self.summary(),
            "components": [
                {"path": c.path, "formula": c.formula, "count": c.count, "activated": c.activated}
                for c in self.components
            ],
            "values": dict(self.values),
            "formula": {"total": shown["total"], "activated": shown["activated"]},
            "definitions": {"activated": ACTIVATED_DEFINITION, "embedding": EMBEDDING_DEFINITION},
        }
        with_mtp(data, self, module, mtp)
        return data

    def mtp_module(self, required: bool = False) -> MtpModule | None:
        """The checkpoint's MTP module of this config (:func:`llmcount.formulas.mtp.module` of the sympy path, from
        the snapshot): N_mtp decoder layers, read as the record's layer with the ``[mtp]`` table's decoder keys, and
        the module's own weights; None when the record has none or the config declares 0 layers. :class:`Fallback`
        for what the sympy path words: a refusal, an own weight under a condition, ``required`` without a module."""
        spec = self.architecture.data["mtp"]
        found = _mtp_module(self, spec) if spec else None
        if found is None and required:
            raise Fallback  # --mtp of a model without a module: the sympy path says why
        return found


MTP_NOT_BUILT = "transformers does not build it (its model class ignores these tensors on load)"


class MtpComponent(NamedTuple):
    """One term of the MTP module counted: its path (``mtp/...``), its formula as sympy writes it (``formula``) and as
    ``count`` prints it (``text``), its counts and whether it is an embedding."""

    path: str
    formula: str
    text: str
    count: int
    activated: int
    embedding: bool


class MtpTotals:
    """The sums of an MTP module's ``components`` (either path's module)."""

    components: tuple[Any, ...]

    @property
    def total(self) -> int:
        return sum(c.count for c in self.components)

    @property
    def activated(self) -> int:
        return sum(c.activated for c in self.components)

    @property
    def embedding(self) -> int:
        return sum(c.count for c in self.components if c.embedding)


@dataclass(frozen=True)
class MtpModule(MtpTotals):
    """The MTP module of one config, counted by the compiled path (the fields ``count`` shows of
    :class:`llmcount.formulas.mtp.MtpModule`)."""

    layers: int
    key: str
    components: tuple[MtpComponent, ...]
    note: str
    source: str


def mtp_summary(found: Any, counted: bool) -> dict[str, Any]:
    """The JSON form of an MTP module (either path's), as ``count --json`` gives it."""
    return {
        "layers": found.layers,
        "key": found.key,
        "total": found.total,
        "activated": found.activated,
        "counted": counted,
        "components": [{"path": c.path, "formula": c.formula, "count": c.count} for c in found.components],
        "note": f"the checkpoint's multi-token-prediction module: {found.note}; {MTP_NOT_BUILT}",
        "source": found.source,
    }


def with_mtp(data: dict[str, Any], counts: Any, module: Any, counted: bool) -> None:
    """``count --json``'s ``data`` with the checkpoint's MTP module (either path's) under ``mtp``; ``counted``
    (``--mtp``): its components after the model's and the totals with it (``total_without_mtp``: ``counts``')."""
    if module is None:
        return
    data["mtp"] = mtp_summary(module, counted)
    if not counted:
        return
    data["components"] += [
        {"path": c.path, "formula": c.formula, "count": c.count, "activated": c.activated} for c in module.components
    ]
    data["total_without_mtp"] = counts.total
    data["activated_without_mtp"] = counts.activated
    data["total"] = counts.total + module.total
    data["activated"] = counts.activated + module.activated
    data["embedding"] = counts.embedding + module.embedding
    data["non_embedding"] = data["total"] - data["embedding"]


def _mtp_module(model: Counted, spec: dict[str, Any]) -> MtpModule | None:
    family = model.architecture
    count = family._spec(spec["count"], "a compiled snapshot")
    try:
        layers = _Reader(model.config, model.source, family).symbol(count, {})
    except LlmcountError:
        raise Fallback from None
    if layers is not None and layers > MAX_LAYERS:
        raise Fallback  # refused by the sympy path, which words it
    if not layers:
        return None
    # lists of one entry per layer describe the model's N layers, not the MTP layer: left out (as formulas.mtp does)
    n = model.values.get("N", 0)
    kept = {k: v for k, v in model.config.items() if not (isinstance(v, list) and len(v) == n > 1)}
    decoder = family.read(kept | spec["decoder"], f"{model.source} (MTP layer)", model.name)
    share = {prefix: Fraction(p, q) for prefix, (p, q) in spec["share"].items()}
    components = []
    numbers = decoder.numbers
    for i, ((path, _, _, embedding), shown) in enumerate(zip(decoder.plan.terms, decoder.plan.mtp, strict=True)):
        if shown is None:
            continue  # the embedding, the final norm and the head: the model's, not the layer's
        found = [prefix for prefix in share if path.startswith(prefix)]
        part = share[max(found, key=len)] if found else 1
        total, activated = layers * numbers[2 * i] * part, layers * numbers[2 * i + 1] * part
        if evaluate.whole(total) is None or evaluate.whole(activated) is None:
            raise Fallback  # not a whole count: the sympy path words it
        components.append(MtpComponent(f"mtp/{path}", *shown, int(total), int(activated), embedding))
    values = {**model.values, "N_mtp": layers}
    for term in spec["terms"]:
        if term["when"] is not None:
            raise Fallback  # an own weight under a condition: read by the sympy path
        total = evaluate.whole(_value(evaluate.from_source(term["total"]), values))
        activated = evaluate.whole(_value(evaluate.from_source(term["activated"]), values))
        if total is None or activated is None:
            raise Fallback
        components.append(MtpComponent(term["path"], term["str"], term["text"], total, activated, term["embedding"]))
    return MtpModule(layers, count.key, tuple(components), spec["note"], spec["source"])


_FOLDER = "compiled"


def _record_bytes(name: str) -> bytes | None:
    base = resources.files("llmcount.formulas")
    for folder in ("families", "remote"):
        try:
            return base.joinpath(folder).joinpath(f"{name}.toml").read_bytes()
        except OSError:
            continue
    return None


@cache
def compiled(model_type: str) -> Compiled | None:
    """The snapshot of ``model_type``'s record, when there is one of this format whose hash is the record's."""
    if not isinstance(model_type, str) or not model_type.replace("_", "").replace("-", "").isalnum():
        return None
    try:
        text = resources.files("llmcount.formulas").joinpath(_FOLDER).joinpath(f"{model_type}.json").read_text("utf-8")
        data = json.loads(text)
    except (OSError, ValueError):
        return None
    if data.get("format") != FORMAT or data.get("name") != model_type:
        return None
    texts = [_record_bytes(name) for name in (model_type, *([data["shares"]] if data.get("shares") else []))]
    if any(t is None for t in texts) or sha256(b"\0".join(texts)).hexdigest() != data.get("hash"):
        return None
    return Compiled(data)


def flops_data(model: Any, seq: int, batch: int, causal: bool) -> dict[str, Any] | None:
    """``flops --json`` of a model :func:`llmcount.sources.load_counted` gave, by the compiled FLOPs formula (no
    sympy); None when the model was read by the sympy path or the snapshot does not take it (the caller evaluates
    the sympy formula, which words any refusal)."""
    if not isinstance(model, Counted):
        return None
    try:
        return model.flops_data(model.flops(seq, batch, causal), causal)
    except Fallback:
        return None


def read(config: Any, source: str, name: str | None = None) -> Counted:
    """A parsed config counted by the compiled path; :class:`Fallback` when the sympy path should read it."""
    family = compiled(config.get("model_type")) if isinstance(config, dict) else None
    if family is None:
        raise Fallback
    return family.read(config, source, name)
