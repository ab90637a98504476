"""The one generic reader: a family record + a parsed ``config.json`` -> the values of the glossary's symbols.

Keys come from the record, verbatim, with the defaults of the family's transformers config class. Nothing
here knows a family by name: what differs between families is data in their records.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from sympy import Symbol

from ..errors import LlmcountError
from . import records
from .blocks import Term
from .derivation import Counts, Derivation
from .reading import (  # noqa: F401 -- re-exported: the reader's names, as other modules import them from here
    _EVALUATION_ERRORS,
    MAX_LIST,
    MAX_SIZE,
    RuleRefusal,
    _check,
    _kind,
    _message,
    _nested_keys,
    _Reader,
    describe,
    read_values,
)
from .records import Composite, Family
from .symbols import GLOSSARY, entries


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
    text_from: str = ""  # where a composite's language model was read: text_config, the whole config, the defaults

    # the config as read, kept when the record describes a multi-token-prediction module (mtp.py reads it again)
    mtp_config: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    # the config as read (renderers/tree.py prints its eps, dropout and activation as print(model) does)
    config: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

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


def read_config(config: Any, source: str, name: str | None = None, family: Family | None = None) -> Model:
    """Read a parsed ``config.json`` into a :class:`Model`; raise LlmcountError on bad input. ``family``: read it
    with this record (a draft loaded with ``records.load``) instead of the bundled one of its model_type."""
    if not isinstance(config, dict):
        raise LlmcountError(f"{source}: a config must be a JSON object, got {describe(config)}")
    model_type = config.get("model_type")
    if model_type is None:
        raise LlmcountError(f"{source}: required key 'model_type' is missing")
    if family is None and isinstance(model_type, str):
        outer = records.composite(model_type)
        # a composite whose language model is the family of its own model_type (a flat config: Chameleon's) is read
        # as the composite, with that family for its text config
        if outer is not None and (outer.text == model_type or records.family(model_type) is None):
            return _read_composite(config, source, name, outer)
    if family is None and isinstance(model_type, str) and records.family(model_type) is None:
        family = _auto_mapped(config, model_type, source)
    family = family or find_family(model_type, source)
    reader = _Reader(_nested_keys(config, source, family), source, family)

    namespace, values, indices = read_values(reader)
    try:
        terms = family.terms_for(namespace, values)
    except _EVALUATION_ERRORS as exc:
        raise reader.fail(f"a key has a value {family.name}'s record cannot use: {exc}") from None
    used = _used_symbols(terms) | family.cost_symbols
    if family.choice_symbols - used:  # the activation tables keep a symbol only the terms left out would use
        used |= family.saved_symbols(namespace, values)
    # a symbol only the terms this config leaves out use (d_ff of an MoE model without dense layers) is dropped
    left_out = (family.choice_symbols - used) | (_idle_window(family, values) - _used_symbols(terms))
    order = {e.symbol: i for i, e in enumerate(entries())}  # the glossary's, then the symbols records declared
    kept = sorted((order[s], s) for s in values if s in order and s not in left_out)
    ordered = {s: values[s] for _, s in kept}
    dtype = config.get("dtype", config.get("torch_dtype"))
    dtype = dtype if isinstance(dtype, str) else None
    keys = {key: namespace[key] for key in (*family.keys, *(symbol.name for symbol, _, _ in family.layers))}
    positions = next((config[key] for key in POSITION_KEYS if key in config), None)
    positions = positions if type(positions) is int and positions > 0 else None
    kept = config if family.mtp is not None else None
    return Model(
        name or source, source, family, ordered, terms, dtype, keys, indices, positions, mtp_config=kept, config=config
    )


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


def _read_composite(config: dict[str, Any], source: str, name: str | None, outer: Composite) -> Model:
    """The language model of a composite config: its ``text_config`` read with the record of the text model_type,
    as transformers reads it (the keys of ``outer.top`` from the top level); the model says what is not counted."""
    text, text_from = config.get(outer.text_key), outer.text_key
    if text is None:
        text, text_from = _text_at_top(config, outer), "the whole config"
    if text is None:  # absent or null: the composite config class's own text config
        text, text_from = dict(outer.absent or {}), f"{outer.model}'s defaults"
    elif not isinstance(text, dict):
        raise LlmcountError(f"{source}: key '{outer.text_key}' must be a JSON object, got {describe(text)}")
    where = f"{source}, {outer.text_key}"
    text_type = text.get("model_type", outer.text) if outer.any_text else outer.text
    family = find_family(text_type, where)
    given = {name for key in text for name in (key, *family.aliases.get(key, ()))}
    given |= {key for key, names in family.aliases.items() if given & {key, *names}}
    defaults = {key: value for key, value in records.text_defaults(text_type, outer).items() if key not in given}
    inner = {**defaults, **text, "model_type": text_type}
    for key in outer.text_ignores:  # a key the composite's text config class does not have: its model ignores it
        inner.pop(key, None)
    inner.update(outer.text_fixed)  # the text model behaves so, whatever the config says
    for key, (_, compute) in outer.text_computed.items():  # computed by the text model from other keys when absent
        if inner.get(key) is None:
            try:
                value = compute(inner)
            except _EVALUATION_ERRORS:  # a key it is computed from is bad: the record names that key
                continue
            if type(value) is int and value > 0:
                inner[key] = value
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
    for key, (path, default) in outer.text_from.items():  # set by the composite class from another sub-config
        head, _, leaf = path.partition(".")
        sub = config.get(head)
        if sub is None:
            sub = outer.vision_absent if head == outer.tower_config and outer.vision_absent else {}
        elif not isinstance(sub, dict):
            raise LlmcountError(f"{source}: key '{head}' must be a JSON object, got {describe(sub)}")
        value = sub.get(leaf, default)
        if type(value) is not int or value <= 0:  # named where the user gave it, not where the class copies it
            raise LlmcountError(f"{source}: key '{path}' must be a positive integer, got {describe(value)}")
        inner[key] = value
    if outer.untied:  # the class ties no weights: the LM head is its own, whatever tie_word_embeddings says
        inner["tie_word_embeddings"] = False
    if "dtype" not in inner and "torch_dtype" not in inner:  # the checkpoint's dtype is usually given at the top
        inner.update({k: config[k] for k in ("dtype", "torch_dtype") if k in config})
    # the name says it wherever a command shows it (count, writeup, memory, batch rows): the vision parts are left out
    named = f"{name or source} (language model)"
    model = read_config(inner, where, named, family)
    parts: tuple[Any, ...] = ()
    if outer.vision or outer.projector or outer.towers:
        from .parts import read_parts

        parts = read_parts(config, source, name or source, outer, model)
    _check_composite(config, source, outer, model, parts)
    return replace(model, source=source, composite=outer, parts=parts, whole_name=name or source, text_from=text_from)


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


def find_family(model_type: Any, source: str, also: str = "") -> Family:
    """The record of a config's model_type; an unknown one is refused by name with the closest known names
    (and ``also``, a further hint)."""
    family = records.family(model_type) if isinstance(model_type, str) else None
    if family is not None:
        return family
    reason = records.refused(model_type) if isinstance(model_type, str) else None
    if reason:
        raise LlmcountError(f"{source}: model_type {model_type!r} is not counted: {reason}")
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
