"""Discovery: a draft family record from the model code, by building it on the meta device under many configs.

Steps: the config class's defaults give candidate size keys (integers) and switches (booleans); one key is changed
at a time to see which tensors it shapes; each tensor dimension is fitted as an exact polynomial in the size keys
over random configs and checked on fresh ones; defaults (constant or derived, ``d // h``) are read from configs
that leave a key out; tensors are grouped into ``group/module`` terms in reader's order.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from itertools import combinations, product
from typing import Any

from sympy import Expr, Integer, Mul, Symbol, expand, floor, sqrt
from sympy import factor as factorize

from ..formulas.expressions import condition
from ..formulas.symbols import BY_NAME, GLOSSARY
from . import fit, probe, repairs, ties

LAYERS = 3  # decoder layers of every build: enough to see the first layers differ, small enough to be fast
WIDE = LAYERS + 2  # layers of the builds that look for a period or an offset of more than the first layers
FIT_SAMPLES = 18
CHECK_SAMPLES = 6
MAX_FIT_SAMPLES = 60  # the most random configs a fit draws (a quadratic in 9 keys has 55 monomials)
PASSES = 3  # the most passes of the steps while builds still find kinds to split by layer kind (see run)
ATTEMPTS = 40  # random draws per sample before giving up on a config transformers accepts
_LAYER_COUNT = re.compile(r"(^|_)(n|num)_(\w+_)?layers?$|^(\w+_)?layers$|^n_layers?$")
_SIZE_NAME = re.compile(r"(_dim|_size|_rank|experts|_per_tok|heads)$")
_WORD = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
GROUP_ORDER = {"embedding": 0, "attention": 1, "mlp": 2, "moe": 2, "norms": 3, "head": 4}


def glossary_keys() -> dict[str, Symbol]:
    """Config key -> glossary symbol, from the glossary's own key column (its first mention wins)."""
    out: dict[str, Symbol] = {}
    for entry in GLOSSARY:
        if entry.key.startswith("("):
            continue
        for word in _WORD.findall(entry.key):
            out.setdefault(word, entry.symbol)
    return out


@dataclass
class Factor:
    """One factor of a tensor's per-layer count: how many such tensors, or one dimension of its shape."""

    deps: set[str] = field(default_factory=set)
    expr: Expr | None = None


@dataclass
class Kind:
    """A tensor kind (its name with indices as ``*``), what shapes it and the conditions under which it exists."""

    key: str
    module: str
    norm: bool
    embedding: bool
    in_layer: bool
    order: int
    factors: list[Factor] = field(default_factory=list)
    when: list[str] = field(default_factory=list)
    shared: bool = False  # one module several layers run (its copies counted once): see Discoverer.gather_shared

    @property
    def expr(self) -> Expr | None:
        if any(f.expr is None for f in self.factors):
            return None
        return Mul(*(f.expr for f in self.factors))


@dataclass
class Discovery:
    model_type: str
    text: str
    notes: list[str]
    symbols: dict[str, Symbol]  # size key -> symbol
    fixed: dict[str, Any]
    switches: dict[str, bool]  # switch -> class default, for the switches the record reads


def _factors(shapes: list[tuple[int, ...]], key: str = "", layer: int | None = None) -> tuple[int, ...]:
    if len({s for s in shapes}) != 1:
        where = f" ({key}{'' if layer is None else f' in layer {layer}'})" if key else ""
        raise ValueError(f"tensors under one name differ in shape{where}: {sorted(set(shapes))}")
    return (len(shapes), *shapes[0])


def _per_kind(b: probe.Build) -> dict[str, tuple[int, ...]]:
    """Tensor kind -> its factors in the first layer that has it."""
    out: dict[str, tuple[int, ...]] = {}
    for (key, _layer), shapes in sorted(b.table().items(), key=lambda x: (x[0][0], -1 if x[0][1] is None else x[0][1])):
        out.setdefault(key, _factors(shapes, key, _layer))
    return out


class Discoverer:
    def __init__(self, model_type: str, log: Callable[[str], None] = print):
        self.model_type = model_type
        self.log = log
        self.notes: list[str] = []
        self.defaults = probe.class_defaults(model_type)
        self.aliases = probe.attribute_map(model_type)
        self.layer_key = self.find_layer_key()
        self.fixed: dict[str, Any] = {self.layer_key: LAYERS}
        for key, value in self.defaults.items():
            if key == self.layer_key or not isinstance(value, int) or isinstance(value, bool):
                continue
            # every integer given explicitly: changing one key must not recompute another (num_key_value_heads)
            self.fixed[key] = 0 if key.endswith("_token_id") else value  # token ids index small vocabularies
        self.tokens = {k for k in self.fixed if k.endswith("_token_id")}
        self.rng = random.Random(0)
        self.dependent: dict[str, ties.Tie] = {}
        self.splits: dict[str, str] | None = None  # set by the first build: see find_splits
        self.reshaped: dict[str, set[str]] = {}  # switch -> the kinds whose shape it changes: see alternates
        self.reference: dict[str, bool] = {}  # switch -> its value in the fitting builds
        self.derived: set[str] = set()  # sizes the class derives from another, left out of the builds: see partner
        self.tie_sizes()
        self.tie_layers()
        self.free_multiples()
        self.nested_sizes()

    # ---- sizes inside sub-configs ------------------------------------------------------------------------
    def nested_sizes(self) -> None:
        """The integer keys of the sub-configs (DBRX's ``attn_config.kv_n_heads``, ``ffn_config.moe_num_experts``) as
        dotted keys among the defaults, given in every build like the others, so that discovery varies them as it
        varies top-level keys. A sub-config whose keys, all changed at once, change no tensor (one the causal LM does
        not build) is left out, and so is one that, given explicitly at its defaults, transformers refuses or builds
        otherwise (Moshi's ``depth_decoder_config``, whose audio_vocab_size the config fills in from another
        sub-config); so is each key of the others that, changed alone, changes no tensor and is accepted (DBRX's
        ``ffn_config.hidden_size``, which the config overwrites with ``d_model``)."""
        found = {k: v for k, v in probe.subconfig_sizes(self.model_type).items() if not k.endswith("_token_id")}
        if not found:
            return
        base = _shapes(self.build({}))
        kept: dict[str, int] = {}
        for head in dict.fromkeys(k.partition(".")[0] for k in found):
            keys = {k: v for k, v in found.items() if k.startswith(head + ".")}
            if not self._as_default(keys, base) or not self._reshapes(keys, base):
                continue
            kept.update({k: v for k, v in keys.items() if len(keys) == 1 or self._reshapes({k: v}, base)})
        if kept:
            self.defaults = {**self.defaults, **kept}
            self.fixed.update(kept)
            self.note(f"{', '.join(kept)}: sizes inside sub-configs, varied as dotted keys")

    def _as_default(self, values: dict[str, int], base: list) -> bool:
        """Whether ``values`` (a sub-config's keys at their defaults) given explicitly build what ``base`` is."""
        try:
            return _shapes(self.build(values)) == base
        except probe.Refused:
            return False

    def _reshapes(self, values: dict[str, int], base: list) -> bool:
        """Whether ``values`` changed (each doubled, 0 to 1) build other tensors than ``base``, or are refused."""
        try:
            built = self.build({k: 2 * v if v else 1 for k, v in values.items()})
        except probe.Refused:
            return True
        return _shapes(built) != base

    # ---- sizes the config's validators tie by an equation ------------------------------------------------
    def tie_sizes(self) -> None:
        """For each equation between sizes that a validator checks (``mamba_d_head * mamba_n_heads ==
        mamba_expand * hidden_size``), the key computed from the others in every build: the first (in the
        equation's order) whose value, solved from random draws of the others, is always a positive integer. It is
        then no size key of its own: the draft reads the others, which give it."""
        values = {**self.defaults, **self.fixed}
        for tie in ties.ties(probe.config_class(self.model_type)):
            keys = [k for k in tie.keys(values) if k not in self.dependent and k != self.layer_key]
            if len(keys) < 2 or not tie.holds(values):
                continue
            draws = [{**values, **self.draw(keys)} for _ in range(6)]
            for key in keys:
                if all(tie.solve(draw, key) is not None for draw in draws):
                    self.dependent[key] = tie
                    self.note(
                        f"{key}: tied to {', '.join(k for k in keys if k != key)} by {tie.where}'s equation;"
                        " builds compute it from them"
                    )
                    break

    def solve_ties(self, values: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
        """``values`` with each tied key (not in ``given``) computed from the others by its equation."""
        out = dict(values)
        for key, tie in self.dependent.items():
            if key in given:
                continue
            solved = tie.solve({**self.defaults, **out}, key)
            if solved is not None:
                out[key] = solved
        return out

    # ---- the layer count ------------------------------------------------------------------------------------
    def find_layer_key(self) -> str:
        """The config key of the number of layers: the glossary's (``num_hidden_layers``, ``n_layer``); else the
        name the class's attribute_map gives it (GPT-Neo's ``num_layers``) when no other integer key names layers;
        else the one of those keys whose value is the number of layers built (BART's causal LM is its decoder: of
        ``encoder_layers`` and ``decoder_layers``, the second)."""
        names = glossary_keys()
        named = next((k for k in self.defaults if names.get(k) is not None and names[k].name == "N"), None)
        if named is not None:
            return self._builds_layers(named) or named
        # the class's own name for it, by its attribute_map
        alias = next((a for a in self.aliases if names.get(a) is not None and names[a].name == "N"), None)
        named = self.aliases.get(alias) if self.aliases.get(alias) in self.defaults else None
        counts = [
            k
            for k, v in self.defaults.items()
            if _LAYER_COUNT.search(k) and isinstance(v, int) and not isinstance(v, bool) and v > 0 and k != named
        ]
        if named is not None and not counts:
            return named
        for key in [named, *counts] if named is not None else counts:
            try:
                if all(probe.build(self.model_type, {key: n}).layers == n for n in (1, 2)):
                    if key != named:
                        self.note(f"{key}: the number of layers built (the key the causal LM reads)")
                    return key
            except probe.Refused:
                continue
        if named is not None:  # validators refuse a bare change of it: tie_layers finds the keys tied to it
            return named
        length = self._length_of_list(names)
        if length is not None:
            return length
        raise ValueError(
            f"{self.model_type}: no config key for the number of layers (glossary symbol N; tried"
            f" {', '.join(counts) or 'no integer key naming layers'})"
        )

    def _length_of_list(self, names: dict[str, Symbol]) -> str | None:
        """The glossary's layer-count key when the config has none and counts its layers as the entries of a
        per-layer list (Nemotron-H's ``layers_block_type``: one block per entry, ``num_hidden_layers`` a property
        computed from it): the draft reads N with the list's length as its default. None when no list does."""
        key = next((k for k, v in names.items() if v.name == "N" and k.startswith("num_")), None)
        for name, value in self.defaults.items():
            if not (isinstance(value, list) and len(value) > 1 and all(isinstance(x, str) for x in value)):
                continue
            try:
                built = [probe.build(self.model_type, {name: value[:n]}).layers for n in (1, 2)]
            except probe.Refused:
                continue
            if built == [1, 2] and key is not None:
                self.length_of = name
                self.defaults = {**self.defaults, key: len(value)}
                self.note(f"{key}: the number of entries of {name} (the config has no layer count of its own)")
                return key
        return None

    def _builds_layers(self, named: str) -> str | None:
        """``named`` when the model builds as many layers as it says (or a validator refuses a bare change of it);
        else the integer key naming layers that does (HRM's ``num_layers_per_stack``: its ``num_hidden_layers`` is a
        count of layer applications, which builds nothing); None when no key does."""

        given = {  # every integer given explicitly, as the builds give them
            k: 0 if k.endswith("_token_id") else v
            for k, v in self.defaults.items()
            if isinstance(v, int) and not isinstance(v, bool)
        }

        def follows(key: str) -> bool | None:
            try:
                return all(probe.build(self.model_type, {**given, key: n}).layers == n for n in (1, 2))
            except probe.Refused:
                return None

        if follows(named) is not False:
            return named
        others = [
            k
            for k, v in self.defaults.items()
            if "layer" in k and k != named and isinstance(v, int) and not isinstance(v, bool) and v > 0
        ]
        for key in others:
            if follows(key):
                self.note(f"{key}: the number of layers built ({named} builds none: a count of their applications)")
                return key
        return named

    # ---- layer counts the config's validators accept ------------------------------------------------------
    def tie_layers(self) -> None:
        """Find the keys the config class ties to the layer count and build with small values that agree: lists
        with one entry per layer (``layer_types``: the default's kinds, each once, in order, cycled), and counts
        of layer groups that sum to it (``n_input_layers + n_recurrent_layers + ... == num_hidden_layers``: the
        keys named in the validator's error, or those whose defaults sum to the default layer count)."""
        layers = self.defaults[self.layer_key]
        self.per_layer: dict[str, list[Any]] = {}  # key -> its kinds in order of first appearance
        self.null_lists: dict[str, list[Any]] = {}  # those of them None by default: see fill_lists
        self.pinned: dict[str, int] = {}  # counts of some layers kept small in every build: see pin_counts
        self.parts: list[str] = []
        if not isinstance(layers, int) or isinstance(layers, bool):
            return
        for key, value in self.defaults.items():
            entries = isinstance(value, list) and len(value) == layers > 1 and all(isinstance(x, str) for x in value)
            if entries:  # a list of layer indices (mlp_only_layers) is not one entry per layer
                self.per_layer[key] = list(dict.fromkeys(value))
        try:
            self.build({})
            return
        except probe.Refused as error:
            refusal = str(error)
        if self.fill_nulls() or self.fill_lists(refusal) or self.repair_defaults(refusal):
            return
        counts = [
            k
            for k, v in self.defaults.items()
            if k != self.layer_key
            and k not in self.tokens
            and isinstance(v, int)
            and not isinstance(v, bool)
            and 0 <= v <= layers
        ]
        named = [k for k in counts if re.search(rf"\b{re.escape(k)}\b", refusal)]
        if sum(self.defaults[k] for k in named) == layers and len(named) > 1:
            self.parts = named
        else:
            for size in (2, 3, 4):
                found = [
                    c
                    for c in combinations([k for k in counts if "layer" in k], size)
                    if sum(self.defaults[k] for k in c) == layers
                ]
                if found:
                    self.parts = list(found[0])
                    break
        for key in self.parts:
            self.fixed[key] = 1 if self.defaults[key] else 0
        if self.parts:
            self.fixed[self.layer_key] = max(1, sum(self.fixed[k] for k in self.parts))
        lists = self.per_layer
        # the lists cycled, their kinds turned by one (see _turned), else left for the class to compute from the count
        for self.per_layer in (lists, *_turned(lists), {}):
            try:
                self.build({})
                break
            except probe.Refused as error:
                refusal = str(error)
        else:
            self.per_layer = lists
            if self.pin_counts(counts, layers):
                return
            if not self.parts and not lists:
                raise RuntimeError(
                    f"{self.model_type}: transformers refuses its class defaults given explicitly with"
                    f" {self.fixed[self.layer_key]} layers ({_cut(refusal)}); no key tied to {self.layer_key} found"
                )
            raise RuntimeError(
                f"{self.model_type}: transformers refuses a build with {self.fixed[self.layer_key]} layers"
                f" ({_cut(refusal)}); no keys tied to {self.layer_key} were found that make it accept one"
            ) from None
        if self.parts or self.per_layer:
            tied = ", ".join([*self.parts, *self.per_layer])
            self.note(f"{tied} tied to {self.layer_key} by the config's validators: builds keep them in agreement")

    def free_multiples(self) -> None:
        """The keys a validator requires a layer key to be a multiple of (Inkling-2-Loop's
        ``n_layers_per_attn_res_block``, 6 by default, of which ``loop_layer_index_start`` and ``_end`` must be
        multiples) that shape no tensor: 1 in every build and random config (``self.bases``), so that the layer keys
        take any value a build of a few layers can show (a loop from layer 1). A base that shapes a tensor is left."""
        self.bases: dict[str, int] = {}
        for multiple in ties.multiples(probe.config_class(self.model_type)):
            base = self.fixed.get(multiple.of)
            if multiple.of in self.bases or "layer" not in multiple.key or not _count(base) or base <= 1:
                continue
            try:
                same = _same_tensors(self.build({}), self.build({multiple.of: 1}))
            except probe.Refused:
                continue
            if same:
                self.fixed[multiple.of] = self.bases[multiple.of] = self.pinned[multiple.of] = 1
                self.note(
                    f"{multiple.of}: {multiple.key} must be a multiple of it ({multiple.where}), and it shapes no"
                    " tensor: builds and random configs give 1"
                )

    def pin_counts(self, counts: list[str], layers: int) -> bool:
        """When no build of a few layers is accepted because a count of some of the layers crowds them out (Gemma 3n's
        num_kv_shared_layers, 15 of 35: with 3 layers every one shares a cache no layer of its kind produces): the
        first such count (an integer key naming layers, below the default layer count) that at 0 (else 1) makes the
        build accepted is kept there in every build and random config. True when one did."""
        for key in counts:
            if "layer" not in key or not 0 < self.defaults[key] < layers:
                continue
            for value in (0, 1):
                self.fixed[key] = value
                try:
                    self.build({})
                except probe.Refused:
                    continue
                self.pinned[key] = value
                self.note(
                    f"{key}: {self.defaults[key]} by default, more than a build of {self.fixed[self.layer_key]}"
                    f" layers can take: builds and random configs give {value}"
                )
                return True
            self.fixed[key] = self.defaults[key]
        return False

    def fill_nulls(self) -> bool:
        """When the class's own defaults do not build (Ministral's ``head_dim`` None, Dots1's expert counts None):
        give the size keys that default to None a value, the fewest that make transformers accept the config
        (kept in every build; the draft then has no default for them, and refuses their absence as the class
        does). True when that made it build."""
        names = glossary_keys()
        nulls = [
            k
            for k, v in self.defaults.items()
            if v is None and k not in self.tokens and (k in names or _SIZE_NAME.search(k))
        ]
        if not nulls:
            return False
        for value in (8, 64):
            try:
                self.build(dict.fromkeys(nulls, value))
            except probe.Refused:
                continue
            needed = list(nulls)
            for key in nulls:  # the fewest: each left at None in turn, kept out when it still builds
                trial = [k for k in needed if k != key]
                try:
                    self.build(dict.fromkeys(trial, value))
                except probe.Refused:
                    continue
                needed = trial
            self.fixed.update(dict.fromkeys(needed, value))
            self.note(
                f"{', '.join(needed)}: None by default, and transformers cannot build without"
                f" {'it' if len(needed) == 1 else 'them'}: builds give {value}; the draft has no default"
            )
            return True
        return False

    def fill_lists(self, refusal: str) -> bool:
        """When the class's defaults do not build because a per-layer list of kinds is None (LFM2-MoE's
        ``layer_types``: no default pattern): the list's kinds are the names the modeling code compares its entries
        with (``layer_types[layer_idx] != "conv"``), and transformers' first allowed kind for the others
        (``full_attention``); builds cycle them over the layers like any per-layer list, and the draft refuses the
        list absent or null, as the class does. True when that made it build."""
        source = probe.modeling_source(self.model_type)
        allowed = probe.layer_kind_names()
        for key, value in self.defaults.items():
            if value is not None or not re.search(rf"\b{re.escape(key)}\[", source):
                continue
            compared = re.findall(rf"\b{re.escape(key)}\[[^\]]*\]\s*(?:==|!=)\s*[\"'](\w+)[\"']", source)
            named = list(dict.fromkeys(x for x in compared if x in allowed))
            if not named:
                continue
            other = next((x for x in allowed if x not in named), None)
            for kinds in ([*named, other], named) if other else (named,):
                self.per_layer[key] = kinds
                try:
                    self.build({})
                except probe.Refused:
                    continue
                self.null_lists[key] = kinds
                self.note(
                    f"{key}: None by default, and transformers cannot build without it ({_cut(refusal, 80)}): builds"
                    f" give its kinds {', '.join(kinds)} (the names the modeling code compares it with) cycled over the"
                    " layers; the draft refuses it absent"
                )
                return True
            del self.per_layer[key]
        return False

    def repair_defaults(self, refusal: str) -> bool:
        """When the class's defaults do not build for want of a value the refusal itself points at (a mapping with no
        entry for a kind of layer; a sub-config without a key the modeling code reads): the repairs of
        :mod:`.repairs`, each kept in every build and random config once transformers accepts it (up to three in
        turn, each for the next refusal). True when the defaults then build."""
        self.repairs: list[repairs.Repair] = []
        for _ in range(3):
            found = repairs.missing_entries(
                refusal, self.defaults, self.per_layer, probe.modeling_source(self.model_type)
            )
            found += repairs.missing_attribute(
                refusal, self.defaults, probe.subconfig_classes(self.model_type), self.defaults
            )
            for repair in found:
                trial = repairs.with_repair(self.fixed, repair)
                try:
                    base = probe.build(self.model_type, self.consistent(trial, {}))
                except probe.Refused as error:
                    if str(error) != refusal:  # past this refusal, stopped by another: repair that one next
                        self.fixed, refusal = trial, str(error)
                        self.repairs.append(repair)
                        break
                    continue
                if not repair.kinds and not self._inert(repair, trial, base):
                    continue  # a value that shapes tensors is no repair the draft could leave out
                self.fixed = trial
                self.repairs.append(repair)
                for done in self.repairs:
                    self.note(f"{done.key}: {done.why}; builds and random configs give {done.value!r}")
                return True
            else:
                break
        if self.repairs:  # repaired in part only: the builds go back to the class defaults
            for repair in self.repairs:
                head = repair.key.partition(".")[0]
                self.fixed.pop(head, None)
            self.repairs = []
        return False

    def _inert(self, repair: repairs.Repair, values: dict[str, Any], base: probe.Build) -> bool:
        """Whether another value of a repaired key builds the same tensors (it shapes none)."""
        if isinstance(repair.value, bool) or not isinstance(repair.value, (int, float)):
            return False
        other = repairs.Repair(repair.key, repair.value * 2 + 1)
        try:
            built = probe.build(self.model_type, self.consistent(repairs.with_repair(values, other), {}))
        except probe.Refused:
            return False
        return _shapes(built) == _shapes(base)

    def consistent(self, values: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
        """``values`` with the keys tied to the layer count made to agree with it: the layer count follows the
        group counts (or a per-layer list) that ``given`` sets; else the group counts share it out and the lists
        take their kinds cycled to its length."""
        out = dict(values)
        n = self.layer_key
        if self.parts:
            if n not in given and any(k in given for k in self.parts):
                out[n] = sum(int(out.get(k) or 0) for k in self.parts)
            elif n in given and not any(k in given for k in self.parts) and isinstance(out[n], int):
                share = dict.fromkeys(self.parts, 0)
                positive = [k for k in self.parts if self.defaults[k]] or self.parts
                for i in range(out[n]):
                    share[positive[i % len(positive)]] += 1
                out.update(share)
        elif n not in given:
            lengths = {len(v) for k, v in given.items() if k in self.per_layer and isinstance(v, list)}
            if len(lengths) == 1:
                out[n] = lengths.pop()
        for key, kinds in self.per_layer.items():
            if key not in given and isinstance(out.get(n), int):
                out[key] = [kinds[i % len(kinds)] for i in range(out[n])]
        return self.solve_ties(out, given)

    def note(self, text: str) -> None:
        self.notes.append(text)

    # ---- builds -------------------------------------------------------------------------------------------
    def build(
        self, overrides: dict[str, Any], drop: tuple[str, ...] = (), repair: set[str] | None = None
    ) -> probe.Build:
        """What the class defaults with ``overrides`` build (every integer key given explicitly). ``repair`` (the
        keys that must keep their values): when a validator refuses the config naming other keys (XLNet's
        ``d_head`` must equal ``d_model // n_head``), build once more with those left for the class to compute."""
        values = self.consistent({**self.fixed, **overrides}, overrides)
        outside = getattr(self, "outside", None)
        try:
            built = probe.build(self.model_type, values, drop, outside)
        except probe.Refused as error:
            rounded = self.round_multiples(values, str(error), keep=repair or set())
            named = _named_keys(str(error), values) - (repair or set()) - {self.layer_key, *self.parts}
            if rounded is not None:
                values = rounded
                built = probe.build(self.model_type, values, drop, outside)
            elif repair is None or not named:
                raise
            else:
                drop = (*drop, *sorted(named))
                built = probe.build(self.model_type, values, drop, outside)
        if outside is None and built.lists:
            built = self.lists_outside(built, values, drop)
        if self.splits is None:
            self.splits = self.find_splits(built, values)
        elif getattr(self, "forming", False):  # every build of the run is evidence
            more = self.find_splits(built, values, skip=set(self.splits))
            if more:
                self.splits.update(more)
                self.resplit = True
        return self.split(built, values)

    def round_multiples(
        self, values: dict[str, Any], refusal: str, keep: set[str] = frozenset()
    ) -> dict[str, Any] | None:
        """``values`` with each key that the refusal names and a validator requires to be a multiple of another
        (Inkling-2-Loop's ``loop_layer_index_start`` of ``n_layers_per_attn_res_block``, see :func:`.ties.multiples`)
        made the nearest such multiple, except the keys to ``keep`` (a build that tries another value of a key keeps
        it); None when none is named or each already is one."""
        if not hasattr(self, "multiples"):
            self.multiples = ties.multiples(probe.config_class(self.model_type))
        out = dict(values)
        for multiple in self.multiples:
            if multiple.key not in keep and re.search(rf"\b{re.escape(multiple.key)}\b", refusal):
                rounded = multiple.round({**self.defaults, **out})
                if rounded is not None:
                    out[multiple.key] = rounded
        return out if out != values else None

    def lists_outside(self, built: probe.Build, values: dict[str, Any], drop: tuple[str, ...]) -> probe.Build:
        """The ModuleLists of single modules (Linears, norms) that lie outside the layers: those whose length stays
        the same in a build of one more layer (Gemma 3n's ``altup_projections``, ``altup_num_inputs - 1`` of them:
        its index is no layer index; XLM's ``layer_norm1``, one per layer, is a part of each layer). Found once, from
        the first build that has such lists; ``built`` again with their tensors outside the layers."""
        n = self.layer_key
        self.outside: frozenset[str] = frozenset()
        if not isinstance(values.get(n), int) or isinstance(values.get(n), bool):
            return built
        more = self.consistent({**values, n: values[n] + 1}, {n: values[n] + 1})
        try:
            wider = probe.build(self.model_type, more, drop)
        except probe.Refused:
            return built
        self.outside = frozenset(k for k, length in built.lists.items() if wider.lists.get(k) == length)
        if not self.outside:
            return built
        self.note(
            f"{', '.join(sorted(self.outside))}: a list of modules outside the layers (as long with one more layer):"
            " its index is no layer index"
        )
        return probe.build(self.model_type, values, drop, self.outside)

    def find_splits(self, built: probe.Build, values: dict[str, Any], skip: set[str] = frozenset()) -> dict[str, str]:
        """Tensor kinds of one name with other shapes on other layers (Kimi-Linear's ``self_attn.q_proj``, of its
        linear and of its MLA attention): each -> the per-layer list whose kinds tell them apart (``layer_types``),
        the shape being one within each kind. Every build then names them after the kind: ``q_proj_full_attention``."""
        table = built.table()
        out: dict[str, str] = {}
        for key in sorted({k for k, layer in table if layer is not None} - skip):
            shapes = [table.get((key, i)) for i in range(built.layers)]
            if len({str(s) for s in shapes if s is not None}) < 2:
                continue
            named = [n for n in self.per_layer if _partitions(values.get(n), shapes)]
            if len(named) > 1:  # lists that agree on these layers (Kimi's layer_types, mlp_layer_types): each
                named = [n for n in named if self._still_partitions(key, n, values)] or named  # turned by one
            if named:
                out[key] = named[0]
                self.note(f"{key}: other shapes on layers of other {named[0]}: a kind of its own for each")
        return out

    def _still_partitions(self, key: str, name: str, values: dict[str, Any]) -> bool:
        """Whether the list ``name``, its entries turned by one layer, still tells apart the shapes of ``key``."""
        entries = values[name]
        turned = {**values, name: entries[1:] + entries[:1]}
        try:
            table = probe.build(self.model_type, turned, outside=getattr(self, "outside", None)).table()
        except probe.Refused:
            return False
        return _partitions(turned[name], [table.get((key, i)) for i in range(len(entries))])

    def split(self, built: probe.Build, values: dict[str, Any]) -> probe.Build:
        """``built`` with the tensor kinds of ``self.splits`` named after their layer's kind, and the kinds a switch
        reshapes named after the switch where it differs from the fitting builds' value (Falcon's
        ``query_key_value_no_multi_query``): one name, one shape."""
        built = self.gather_shared(built)
        reshaped = getattr(self, "reshaped", {})
        flipped = [s for s in sorted(reshaped) if bool(values.get(s, self.reference[s])) != self.reference[s]]
        if not self.splits and not flipped:
            return built
        tensors = []
        for t in built.tensors:
            entries = values.get((self.splits or {}).get(t.key, ""))
            if t.layer is not None and isinstance(entries, list) and t.layer < len(entries):
                parts = t.key.split(".")
                parts[-2] += "_" + re.sub(r"\W+", "_", str(entries[t.layer]))
                t = replace(t, key=".".join(parts))
            named = [("" if values.get(s) else "no_") + s for s in flipped if t.key in reshaped[s]]
            if named and "." in t.key:
                parts = t.key.split(".")
                parts[-2] += "_" + "_".join(named)
                t = replace(t, key=".".join(parts))
            tensors.append(t)
        return replace(built, tensors=tuple(tensors))

    def gather_shared(self, built: probe.Build) -> probe.Build:
        """``built`` with the tensors of a module whose Parameters several layers share (Zamba's ``shared_transf``,
        one block every hybrid layer runs) taken out of the layers: listed once per distinct copy (transformers' count,
        ``model.parameters()``, holds each Parameter once) under a name of their own (``q_proj_shared``), with
        ``uses`` giving the layers that run them (for the condition on those layers). A build with one layer of the
        kind cannot tell a shared module from a module of that layer's own: there it keeps its name (one copy either
        way); so do copies on several layers that share no Parameter (Zamba untied: each hybrid layer its own block)."""
        if not built.uses:
            return built
        present: dict[str, set[int]] = {}
        for t in built.tensors:
            if t.key in built.uses and t.layer is not None:
                present.setdefault(t.key, set()).add(t.layer)
        gathered = set(present)
        tensors = tuple(
            replace(t, key=_shared_key(t.key), layer=None) if t.key in gathered else t for t in built.tensors
        )
        uses = {_shared_key(k): tuple(sorted(present[k] | set(built.uses.get(k, ())))) for k in gathered}
        return replace(built, tensors=tensors, uses=uses)

    def switches(self) -> dict[str, tuple[set[str], set[str]]]:
        """Each boolean key that changes which tensors exist: (kinds it adds, kinds it removes) when flipped."""
        built = self.build({})
        self.classes = (built.model_class, built.config_class)
        self.prefix = built.prefix
        base = set(_per_kind(built))
        effects = {}
        self.tied: dict[str, tuple[str, str]] = {}  # kind -> (the kind it shares, the switch that ties it)
        for key, value in sorted(self.defaults.items()):
            if not isinstance(value, bool):
                continue
            try:
                b = self.build({key: not value})
                flipped = set(_per_kind(b))
                self.tied.update({k: (v, key) for k, v in b.shared.items()})
            except probe.Refused as error:
                self.note(f"switch {key}={not value}: transformers refuses it ({str(error)[:100]}); left out")
                continue
            if flipped != base:
                effects[key] = (flipped - base, base - flipped)
        for kind, other in built.shared.items():  # tied under the defaults: the switch whose flip unties it
            for key, (added, _) in effects.items():
                if kind in added:
                    self.tied[kind] = (other, key)
        return effects

    # ---- the main steps -----------------------------------------------------------------------------------
    def run(self) -> Discovery:
        """The draft record. A tensor kind found with other shapes on other layers only once the kinds were formed
        (Inkling's ``k_proj``, alike on every layer at the class defaults): the steps once more, with it split. Every
        build of a pass is evidence (a random config with other head widths splits ``q_proj``, one with other head
        counts ``r_proj`` too); a pass that splits more runs once more, up to ``PASSES`` in all."""
        notes = list(self.notes)
        self.resplit = False
        self.forming = True
        found = self.steps()
        passes = 1
        while self.resplit:
            self.log(f"kinds split by layer kind once formed ({', '.join(sorted(self.splits or {}))}): once more")
            self.notes = list(notes)
            passes += 1
            self.resplit = False
            self.forming = passes < PASSES  # the last pass: its kinds stay as they are
            found = self.steps()
        return found

    def steps(self) -> Discovery:
        names = glossary_keys()
        effects = self.switches()
        # fitting builds set every switch that only adds tensors, so that every tensor kind is seen
        self.on: dict[str, bool] = {}
        for key, (added, removed) in effects.items():
            if added and not removed:
                trial = {**self.on, key: not self.defaults[key]}
                try:
                    self.build(trial)
                    self.on = trial
                except probe.Refused:
                    self.note(f"switch {key} cannot be combined with {sorted(self.on)}: its tensors are not fitted")
        self.layer_values = self.find_layer_keys()
        self.floats = self.shaping_floats()
        self.switches_on_layers(effects)
        base_build = self.build(self.on)
        base = _per_kind(base_build)
        kinds = self.kinds(base_build)
        self.layer_conditions = self.conditions(kinds)
        alternates, literals = self.alternates(kinds, effects)
        self.alternate_conditions(kinds, alternates)
        for key, (added, removed) in sorted(effects.items()):
            flipped = not self.defaults[key]
            for k in added:
                if k in kinds and not (k in literals and key in self.replacing):
                    kinds[k].when.append(key if flipped else f"not {key}")
            for k in removed:
                if k in kinds and not (k in literals and key in self.replacing):
                    kinds[k].when.append(key if not flipped else f"not {key}")
        for k, found in literals.items():
            kinds[k].when.extend(found)

        for k, factors in base.items():
            kinds[k].factors = [Factor() for _ in factors]
        for _, per_kind in alternates:
            for k, factors in per_kind.items():
                if not kinds[k].factors:
                    kinds[k].factors = [Factor() for _ in factors]
        self.settings = [setting for setting, _ in alternates]
        sizes, self.layer_keys = self.size_keys(kinds)
        self.symbols: dict[str, Symbol] = {}
        self.own: dict[str, str] = {}  # symbol name -> meaning, for the symbols the glossary has not
        for key in sizes:
            symbol = names.get(key) or next(
                (names[a] for a, k in self.aliases.items() if k == key and a in names), None
            )
            if symbol is None:  # named after its key, declared in the record's [glossary]
                symbol = Symbol(self.own_name(key), positive=True, integer=True)
                meaning = probe.docstring_meaning(self.model_type, key) or f"the config's {key}"
                self.own[symbol.name] = meaning
                self.log(f"glossary: no symbol for config key {key!r}; the record declares its own: {meaning}")
            self.symbols[key] = symbol
        self.fit(kinds, sizes)
        defaults = self.defaults_of(sizes, kinds)
        self.activation_keys: list[str] = []  # symbols that shape no tensor (k): drawn near the class default
        self.null_activations: list[str] = []  # those of them None by default: the draft refuses them unset
        if any(".experts." in k for k in kinds):  # routed experts: the activated count needs k, which shapes nothing
            for key, value in sorted(self.defaults.items()):
                symbol = names.get(key) or next(
                    (names[a] for a, k in self.aliases.items() if k == key and a in names), None
                )  # ERNIE's moe_k, by its attribute_map
                if symbol is not None and symbol.name == "k" and key not in self.symbols:
                    self.symbols[key] = symbol
                    self.activation_keys.append(key)
                    # None by default (DeepSeek-V2): absent or null it has no value, and the draft refuses the
                    # config by name (the active count needs it); verify checks the total with it set
                    defaults[key] = ("none", "none") if value is None else (str(value), None)
                    if value is None:
                        self.null_activations.append(key)
        text = self.write(kinds, defaults, effects)
        switches = {k: self.defaults[k] for k in effects}
        self.switches_read = sorted(effects)
        return Discovery(self.model_type, text, self.notes, dict(self.symbols), dict(self.fixed), switches)

    def own_name(self, key: str) -> str:
        """The name of a symbol of the record's own for ``key``: the key itself; for a dotted key its last part
        (``kv_n_heads``), or the whole key with ``_`` for the dot where that part names a top-level key, a glossary
        symbol or a symbol taken already (``encoder_config_hidden_size``)."""
        head, dot, leaf = key.rpartition(".")
        if not dot:
            return key
        taken = {*self.defaults, *self.aliases, *BY_NAME, *(s.name for s in self.symbols.values())}
        return f"{head}_{leaf}" if leaf in taken else leaf

    def alternates(
        self, kinds: dict[str, Kind], effects: dict[str, tuple[set[str], set[str]]]
    ) -> tuple[list[tuple[dict[str, Any], dict[str, tuple[int, ...]]]], dict[str, list[str]]]:
        """Switches whose flip builds tensor kinds the fitting builds lack: one that replaces tensors (Falcon's
        new_decoder_architecture: ln_attn and ln_mlp for input_layernorm) or reshapes one (multi_query: the width of
        query_key_value, which then takes a name of its own, see ``split``). Every combination of them flipped (of up
        to three; else each alone) is built, each also with one of the switches the fitting builds turn on set back
        (ln_attn needs parallel_attn, which they turn off); the kinds seen only there join ``kinds``, and each kind that
        is not in every build gets the conjunction of switch values (or its negation) that says in which it is.
        Returns the settings that have kinds of their own (each fitted on random configs of its own) with those kinds'
        factors, and the conditions found (kind -> conditions, all of which hold)."""
        base = _per_kind(self.build(self.on))
        self.reference = {k: bool(self.on.get(k, v)) for k, v in self.defaults.items() if isinstance(v, bool)}
        replacing = self.replacing = []
        for key, value in sorted(self.reference.items()):
            try:
                flipped = _per_kind(self.build({**self.on, key: not value}))
            except probe.Refused:
                continue
            reshaped = {k for k in set(flipped) & set(base) if flipped[k] != base[k]}
            if reshaped:
                self.reshaped[key] = reshaped
            if reshaped or set(flipped) - set(base):
                replacing.append(key)
        if not replacing:
            return [], {}
        subsets = [c for size in range(len(replacing) + 1) for c in combinations(replacing, size)]
        if len(replacing) > 3:
            subsets = [(), *((key,) for key in replacing)]
        backs = [k for k in sorted(self.on) if k in self.reference and k not in replacing]
        table = [*replacing, *backs]
        self.replacing = table
        seen: list[tuple[dict[str, bool], set[str]]] = []
        out = []
        for subset, back in product(subsets, [(), *((k,) for k in backs)]):
            flip = (*subset, *back)
            setting = {**self.on, **{k: not self.reference[k] for k in flip}}
            try:
                built = self.build(setting) if flip else None
            except probe.Refused:
                continue
            per_kind = _per_kind(built) if built is not None else base
            seen.append(({k: bool(setting.get(k, self.reference[k])) for k in table}, set(per_kind)))
            new = {k: f for k, f in per_kind.items() if k not in kinds}
            if new and built is not None:
                order = len(kinds)
                for k, kind in self.kinds(built).items():
                    if k in new:
                        kinds[k] = replace(kind, order=kind.order + order, when=[])
                out.append((setting, new))
                self.note(f"{', '.join(flip)} flipped: {len(new)} tensor kinds of their own, fitted too")
        literals: dict[str, list[str]] = {}
        for k in kinds:
            member = [k in present for _, present in seen]
            if all(member):
                continue
            found = _conjunction(table, [values for values, _ in seen], member)
            if found is not None:
                literals[k] = found
            else:
                self.note(f"{k}: no condition on {', '.join(table)} says where it exists: TODO")
        for key in replacing:  # read by the draft: random configs flip them
            effects.setdefault(key, (set(), set()))
        return out, literals

    def alternate_conditions(self, kinds: dict[str, Kind], alternates: list[tuple[dict[str, Any], Any]]) -> None:
        """The layer conditions of the kinds only a setting of switches builds, found in builds of that setting (Zamba
        untied, tie_word_embeddings false: a copy of the shared block on each hybrid layer, not on every layer)."""
        seen = dict(getattr(self, "seen", {}))
        on = self.on
        try:
            for setting, new in alternates:
                self.on = setting
                found = self.conditions({k: kinds[k] for k in new if k in kinds})
                self.layer_conditions.update({k: v for k, v in found.items() if k not in self.layer_conditions})
                seen.update({k: v for k, v in getattr(self, "seen", {}).items() if k not in seen})
        finally:
            self.on = on
            self.seen = seen

    def shaping_floats(self) -> dict[str, float]:
        """The float keys whose other value changes a tensor's shape (LFM2's block_ffn_dim_multiplier, xLSTM's
        ffn_proj_factor): random configs keep them at their defaults, so the draft is fitted there only and refuses
        another value by name."""
        base = _per_kind(self.build(self.on))
        out = {}
        for key, value in sorted(self.defaults.items()):
            if not isinstance(value, float) or key in self.on:
                continue
            try:
                changed = _per_kind(self.build({**self.on, key: value * 2 if value else 0.5}))
            except probe.Refused:
                continue
            if changed != base:
                out[key] = value
                self.note(f"{key}: a float that shapes tensors; fitted at its default {value!r} only (others refused)")
        return out

    def switches_on_layers(self, effects: dict[str, tuple[set[str], set[str]]]) -> None:
        """The switches' effects once more with the layer keys that show every tensor kind: a switch's tensors on
        layers the first builds did not have (DeepSeek-V2's dense-MLP biases with mlp_bias, on the layers before
        first_k_dense_replace, which is 0 by default) exist only with it."""
        if not any(k in self.layer_values for k in self.on):
            return
        for key, (added, removed) in effects.items():
            try:
                off = set(_per_kind(self.build({**self.on, key: self.defaults[key]})))
                on = set(_per_kind(self.build({**self.on, key: not self.defaults[key]})))
            except probe.Refused:
                continue
            effects[key] = (added | (on - off), removed | (off - on))

    def find_layer_keys(self) -> dict[str, list[Any]]:
        """Keys that change which layers carry which tensors (decoder_sparse_step, mlp_only_layers,
        first_k_dense_replace, layer_types), each with the values tried; fitting builds then take a value that
        shows every tensor kind (Qwen3-MoE's dense MLP appears only off the sparse step). A key whose every other
        value a validator refuses beside another layer key's default (Jamba's attn_layer_period: the offset 4 must
        stay below it) is tried once more with the values chosen for the keys found first."""
        base = self.build(self.on)
        found: dict[str, list[Any]] = {}
        most = len(_per_kind(base))
        self.wide: set[str] = set()  # layer keys seen to act only with more layers (a period of 3 or more)
        for rounds in range(2):
            new = self._layer_keys(self.build(self.on), skip=set(found), beside=found if rounds else None)
            if rounds:  # small counts that change nothing on LAYERS layers (Jamba's expert_layer_period 2 or 3)
                try:  # a per-layer list chosen for LAYERS layers cannot take more (Kimi's layer_types): none then
                    reference = self.build({**self.on, self.layer_key: WIDE})
                except probe.Refused:
                    reference = None
                if reference is not None:
                    wider = self._layer_keys(reference, set(found) | set(new), WIDE)
                    self.wide |= set(wider)
                    new.update(wider)
            if not new:
                break
            found.update(new)
            for key in new:
                self.fixed[key] = getattr(self, "pinned", {}).get(key, self.defaults[key])
            # each layer key in turn takes the value whose build shows the most tensor kinds (kept when it adds some)
            for key, values in new.items():
                for value in values:
                    try:
                        count = len(_per_kind(self.build({**self.on, key: value})))
                    except probe.Refused:
                        continue
                    if count > most:
                        most, chosen = count, value
                        self.on = {**self.on, key: chosen}
        return found

    def _layer_keys(
        self, base: probe.Build, skip: set[str], layers: int | None = None, beside: dict[str, list[Any]] | None = None
    ) -> dict[str, list[Any]]:
        """The keys (not in ``skip``) that change which layers carry which tensors against ``base``; with ``layers``,
        only small counts of layers (a period, an offset: keys that name layers), tried on that many layers. A key
        naming layers whose every trial transformers refuses is tried once more beside each other value of a
        layer-count key of ``beside`` (Inkling-2-Loop's loop_layer_index_end, below the default start of the loop
        only with another start): that value is then kept beside it in every build of its values (``self.beside``)."""
        found: dict[str, list[Any]] = {}
        self.beside: dict[str, dict[str, Any]] = getattr(self, "beside", {})
        for key, value in sorted(self.defaults.items()):
            if key == self.layer_key or key in self.tokens or isinstance(value, bool) or key in skip:
                continue
            if key in getattr(self, "bases", {}):  # 1 everywhere: see free_multiples
                continue
            if layers is not None and not (isinstance(value, int) and 0 < value <= 16 and "layer" in key):
                continue
            value = getattr(self, "pinned", {}).get(key, value)  # kept small in every build: see pin_counts
            nulls = getattr(self, "null_lists", {})
            if key in nulls:  # None by default: its kinds, as for a list given
                value = [nulls[key][i % len(nulls[key])] for i in range(LAYERS)]
            if isinstance(value, int):
                trials = [v for v in range(0, LAYERS + 1) if v != value]
            elif isinstance(value, list) and all(isinstance(x, int) for x in value):
                trials = [[0], [1], [0, 2], []]
            elif isinstance(value, list) and value and all(isinstance(x, str) for x in value):
                kinds = sorted(set(value))
                trials = [[kinds[(i + j) % len(kinds)] for i in range(LAYERS)] for j in range(len(kinds))]
                # then every layer of one kind: where the builds' own list is the first trial and transformers refuses
                # the others (Zamba: one hybrid layer cannot tie the block the hybrid layers share)
                trials += [[x] * LAYERS for x in kinds]
            else:
                continue
            width = {self.layer_key: layers} if layers else {}
            acts = self._acts(key, trials, base, width, value)
            others = [
                {other: v}
                for other, values in (beside or {}).items()
                if "layer" in other and other != key and _count(values[0])
                for v in values[1:]
            ]
            for extra in others if acts is None and "layer" in key else ():
                try:
                    near = self.build({**self.on, **extra, **width})
                except probe.Refused:
                    continue
                acts = self._acts(key, trials, near, {**width, **extra}, value)
                if acts is not None:
                    self.beside[key] = extra
                    break
            if acts:
                found[key] = [value, *(t for t in trials if t != value)]
        return found

    def _acts(self, key: str, trials: list[Any], base: probe.Build, extra: dict[str, Any], value: Any) -> bool | None:
        """Whether a trial value of ``key`` (with ``extra``) changes which layers carry which tensors against
        ``base``; None when transformers refuses every trial."""
        accepted = False
        for trial in trials:
            try:
                b = self.build({**self.on, **extra, key: trial})
            except probe.Refused:
                continue
            accepted = True
            # a count whose only other effect is on every layer alike (num_experts 0: no MoE anywhere) is a size,
            # not a key of which layers carry what: its trials must make the layers differ
            seen, before = _membership(b), _membership(base)
            changed = {k for k in set(seen) | set(before) if seen.get(k) != before.get(k)}
            if isinstance(value, int):  # judged on the kinds it changes (hybrids' attention kinds always differ)
                uneven = any(any(seen[k]) and not all(seen[k]) for k in changed if k in seen)
            else:
                uneven = _uneven(b) or _uneven(base)
            if changed and uneven:
                return True
        return False if accepted else None

    def conditions(self, kinds: dict[str, Kind]) -> dict[str, str]:
        """Each in-layer tensor kind that is not on every layer: the condition on the layer index ``i`` that says
        which layers carry it, fitted over builds that vary one layer key at a time; "" when none is found."""
        positional = not self.layer_values and _uneven(self.build(self.on))  # RWKV's pre_ln on the first layer only
        if not self.layer_values and not positional:
            return {}
        observations = []  # (the layer keys' values and N, {kind: membership over the layers})
        beside = getattr(self, "beside", {})
        settings = [{}] + [{key: v, **beside.get(key, {})} for key, values in self.layer_values.items() for v in values]
        wide = getattr(self, "wide", set())
        settings += [{key: v, self.layer_key: WIDE} for key in sorted(wide) for v in self.layer_values[key]]
        settings += [{self.layer_key: WIDE}] if wide else []
        if positional:  # which layers, by their index alone: seen over several layer counts
            settings += [{self.layer_key: n} for n in (2, LAYERS + 2)]
        pinned, nulls = getattr(self, "pinned", {}), getattr(self, "null_lists", {})
        for setting in settings:
            values = {k: pinned.get(k, self.defaults[k]) for k in self.layer_values if k not in nulls} | {
                k: v for k, v in self.on.items() if k in self.layer_values
            }
            values.update(setting)
            try:
                b = self.build({**self.on, **values})
            except probe.Refused:
                continue
            given = {**self.on, **values}  # a list None by default: the entries the build gave it
            filled = self.consistent({**self.fixed, **given}, given)
            values.update({k: filled.get(k) for k in nulls if k not in values})
            values.pop(self.layer_key, None)
            observations.append(({**values, "N": b.layers}, _membership(b)))
        out = {}
        self.seen: dict[str, list] = {}
        in_layers = {k for k, kind in kinds.items() if kind.in_layer or kind.shared}
        for kind in sorted(in_layers):
            seen = [(values, member.get(kind, [False] * values["N"])) for values, member in observations]
            if all(all(m) for _, m in seen):
                continue
            self.seen[kind] = seen
            out[kind] = next((text for text in self.candidates() if _explains(text, seen)), "")
            if not out[kind]:
                self.note(f"{kind}: no condition found for the layers that carry it: TODO")
        return out

    def candidates(self) -> list[str]:
        single = []
        for key, values in sorted(self.layer_values.items()):
            if isinstance(values[0], int):
                single += [f"i < {key}", f"i >= {key}", f"(i + 1) % {key} != 0", f"(i + 1) % {key} == 0"]
                single += [f"i % {key} == 0", f"i % {key} != 0", f"i <= {key}", f"i > {key}"]
                single += [f"i < N - {key}", f"i >= N - {key}"]  # the last layers (Gemma 3n's KV-sharing ones)
            elif all(isinstance(x, int) for v in values for x in v):
                single += [f"i in {key}", f"i not in {key}"]
            elif key in getattr(self, "per_layer", {}) or len(self.defaults[key]) == self.defaults[self.layer_key]:
                single += [f"{key}[i] == '{x}'" for x in sorted({x for v in values for x in v})]
            else:  # a pattern shorter than the layers, repeated over them (RecurrentGemma's block_types)
                single += [f"{key}[i % len({key})] == '{x}'" for x in sorted({x for v in values for x in v})]
        # one key the period, another the offset within it (Jamba's attention on i % attn_layer_period ==
        # attn_layer_offset): each ordered pair of integer layer keys
        periodic = [k for k, values in sorted(self.layer_values.items()) if isinstance(values[0], int)]
        for a in periodic:
            single += [f"i % {a} {op} {b}" for b in periodic if b != a for op in ("==", "!=")]
        positional = ["i == 0", "i != 0", "i == N - 1", "i != N - 1"]
        single += positional  # by position alone, after the keys
        pairs = [f"{a} {op} {b}" for i, a in enumerate(single) for b in single[i + 1 :] for op in ("or", "and")]
        out = single + [p for p in pairs if len({w for w in _WORD.findall(p)}) > 1]
        # a key's condition beside a position (Inkling 2's attention_input: on "hybrid" layers but the first, which
        # has none): pairs of one key's condition and one by position
        out += [f"{a} {op} {b}" for a in single if a not in positional for b in positional for op in ("and", "or")]
        # three integer keys that together bound the layers (ERNIE-4.5-MoE: every moe_layer_interval-th layer from
        # moe_layer_start_index to moe_layer_end_index): each key's condition, all three holding, or not
        ints = {  # each key's own conditions (not the period-and-offset pairs: the triples would grow as their cube)
            k: [c for c in single if re.search(rf"\b{k}\b", c) and len(set(_WORD.findall(c))) == 1]
            for k in self.layer_values
        }
        ints = {k: v for k, v in ints.items() if isinstance(self.layer_values[k][0], int)}
        triples = [
            f"{a} and {b} and {c}"
            for x, y, z in combinations(sorted(ints), 3)
            for a in ints[x]
            for b in ints[y]
            for c in ints[z]
        ]
        return out + [t for three in triples for t in (three, f"not ({three})")]

    def kinds(self, b: probe.Build) -> dict[str, Kind]:
        out: dict[str, Kind] = {}
        for i, t in enumerate(b.tensors):
            if t.key not in out:
                out[t.key] = Kind(t.key, t.module, t.norm, t.embedding, t.layer is not None, i, shared=t.key in b.uses)
        return out

    def variations(self, value: Any) -> list[Any]:
        if value is None:
            return [96, 64]  # 64 is often what the model computes itself (2048 // 32)
        candidates = [2 * value, value // 2, value + 1] if value else [1, 2]
        return [v for i, v in enumerate(candidates) if v >= 1 and v != value and v not in candidates[:i]]

    def size_keys(self, kinds: dict[str, Kind]) -> tuple[list[str], list[str]]:
        """The integer keys that change a tensor's shape (and, for each factor, which ones), and those that change
        which layers carry which tensors. A key that defaults to None and shapes a tensor when set (Mixtral's
        head_dim) is set in every later build, so that the keys it is computed from show as shaping it."""
        candidates = [
            (key, value)
            for key, value in sorted(self.defaults.items())
            if key != self.layer_key
            and key not in self.tokens
            and key not in self.layer_values
            and key not in self.dependent
            and key not in getattr(self, "bases", {})
            and (value is None or (isinstance(value, int) and not isinstance(value, bool)))
        ]
        # keys the glossary knows that the class does not list, read by the model code (Qwen3-MoE's head_dim)
        unlisted = sorted(set(glossary_keys()) - set(self.defaults) - set(self.aliases) - set(self.layer_values))
        candidates += [(key, None) for key in unlisted]
        base = _per_kind(self.build(self.on))
        self.null_switches: dict[str, list[str]] = {}  # None by default; set, other tensors exist (q_lora_rank)
        for key, value in candidates:
            if value is None:
                found = self.effect(key, value, base)
                if found is not None and found[1] is None and key in self.defaults:
                    built = set(_per_kind(self.build({**self.on, key: found[0]})))
                    self.null_switches[key] = sorted(built ^ set(base))
                    self.note(f"{key}: set, it changes which tensors exist; the draft refuses it set")
                    continue
                if found is not None:
                    self.fixed[key] = found[0]
                    base = _per_kind(self.build(self.on))
        sizes, layer_keys = [], []
        on = self.on
        try:  # the fitting builds' switches, then each setting of switches that has tensor kinds of its own
            for setting in [on, *getattr(self, "settings", [])]:
                self.on = setting
                base = _per_kind(self.build(self.on))
                for key, value in candidates:
                    if key in self.null_switches or key in self.derived:
                        continue
                    found = self.effect(key, self.fixed.get(key, value), base)
                    if found is None:
                        continue
                    _, changed = found
                    if changed is None:
                        if setting is on:
                            layer_keys.append(key)
                        continue
                    if key not in sizes:
                        sizes.append(key)
                    for k, j in changed:
                        if k in kinds and j < len(kinds[k].factors):
                            kinds[k].factors[j].deps.add(key)
        finally:
            self.on = on
        self.grows_with_layers(kinds, sizes)
        self.layer_keys_shaping(kinds, sizes)
        return sizes, [k for k in layer_keys if k not in self.derived]

    def grows_with_layers(self, kinds: dict[str, Kind], sizes: list[str]) -> None:
        """A tensor outside the layers whose shape follows the layer count (Gemma 3n's embed_tokens_per_layer, one
        slice per layer): the layer key is then one more size key of it, drawn in the random configs."""
        lists = {k: v for k, v in self.on.items() if k not in self.per_layer and k not in self.layer_values}
        try:
            base = _per_kind(self.build(lists))
            wider = _per_kind(self.build({**lists, self.layer_key: WIDE}))
        except probe.Refused:
            return
        changed = [
            (k, j)
            for k, kind in kinds.items()
            if not kind.in_layer and not kind.shared and k in base and k in wider and len(base[k]) == len(kind.factors)
            for j, (x, y) in enumerate(zip(base[k], wider[k], strict=True))
            if x != y
        ]
        if not changed:
            return
        sizes.append(self.layer_key)
        for k, j in changed:
            kinds[k].factors[j].deps.add(self.layer_key)
        self.note(f"{', '.join(sorted({k for k, _ in changed}))}: shaped by {self.layer_key} (outside the layers)")

    def layer_keys_shaping(self, kinds: dict[str, Kind], sizes: list[str]) -> None:
        """A layer key that also shapes a tensor outside the layers (Inkling-2-Loop's message_input, a row of queries
        per looped layer: loop_layer_index_end - loop_layer_index_start rows): one more size key of it, drawn within
        the layers of a build in the random configs (see ``draw``)."""
        for key, values in self.layer_values.items():
            if "layer" not in key:  # an index or a count of layers
                continue
            extra = getattr(self, "beside", {}).get(key, {})  # a value the key's trials need beside them
            now = self.on.get(key, self.fixed.get(key))
            try:
                base = _per_kind(self.build({**self.on, **extra}))
            except probe.Refused:
                continue
            for value in values if _count(now) else ():
                if value == now or not _count(value):
                    continue
                try:
                    other = _per_kind(self.build({**self.on, **extra, key: value}))
                except probe.Refused:
                    continue
                changed = [
                    (k, j)
                    for k, kind in kinds.items()
                    if not kind.in_layer and not kind.shared and len(base.get(k, ())) == len(other.get(k, ())) > 0
                    for j, (x, y) in enumerate(zip(base[k], other[k], strict=True))
                    if x != y and j < len(kind.factors)
                ]
                if changed:
                    sizes.append(key)
                    for k, j in changed:
                        kinds[k].factors[j].deps.add(key)
                    self.note(f"{', '.join(sorted({k for k, _ in changed}))}: shaped by {key} (outside the layers)")
                    break

    def effect(self, key: str, value: Any, base: dict[str, tuple[int, ...]]):
        """The first other value of ``key`` that changes the build: (that value, the (kind, factor) pairs it
        changes, or None when it changes which tensors exist); None when no value changes anything."""
        for trial in self.variations(value):
            try:
                changed = _per_kind(self.build({**self.on, key: trial}, repair={key, *self.on}))
            except probe.Refused:
                continue
            if set(changed) != set(base):
                changed = self.partner(key, trial, base)
                if changed is None:
                    return trial, None
            touched = [
                (k, j)
                for k, factors in changed.items()
                for j, (x, y) in enumerate(zip(factors, base[k], strict=True))
                if x != y
            ]
            if touched:
                return trial, touched
        return None

    def partner(self, key: str, trial: Any, base: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]] | None:
        """When another value of ``key`` builds other tensors only because a key the class derives from it was given
        at the old value (RoFormer's embedding_size, hidden_size unless given: a projection between them appears): that
        key, left for the class to compute in every later build, and what the trial then builds; None when no key
        does. Only sizes (a default of 16 or more) that equal ``key``'s default are tried."""
        value = self.defaults.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 16:
            return None
        for other in sorted(k for k, v in self.fixed.items() if k != key and v == value and self.defaults.get(k) == v):
            if other == self.layer_key or other in self.tokens or other in self.parts or other in self.dependent:
                continue
            try:
                changed = _per_kind(self.build({**self.on, key: trial}, (other,), repair={key, *self.on}))
                again = _per_kind(self.build(self.on, (other,)))
            except probe.Refused:
                continue
            if set(changed) == set(base) and again == base:
                del self.fixed[other]
                self.derived.add(other)
                self.note(f"{other}: {key} unless given (the class computes it): left for the class in every build")
                return changed
        return None

    def draw(self, sizes: list[str]) -> dict[str, int]:
        """Random small values: head counts dividing each other, the large sizes multiples of 2·lcm(heads)."""
        # head counts even where they shape no tensor (GPT-2's n_head): the sizes must stay divisible by them
        candidates = (set(sizes) | {k for k in self.fixed if k not in self.tokens}) - set(self.dependent)
        heads = sorted(
            (k for k in candidates if "heads" in k or k.endswith("_head")), key=lambda k: (self.defaults.get(k) or 0, k)
        )
        values: dict[str, int] = {}
        previous = 1
        for key in heads:
            previous = values[key] = previous * self.rng.choice([1, 2, 3])
        unit = 2 * math.lcm(*values.values()) if values else 2
        for key in sizes:
            if key in values or key in self.dependent:
                continue
            default = self.defaults.get(key)
            if key in getattr(self, "layer_values", {}):  # a layer key that shapes a tensor: within the layers built
                values[key] = self.rng.randint(1, LAYERS)
            elif default is None or default >= 64:
                values[key] = unit * self.rng.randint(2, 9)
            else:
                values[key] = self.rng.randint(2, 9)
        return values

    def sample(self, sizes: list[str], drop: tuple[str, ...] = (), null: tuple[str, ...] = ()):
        """A random config transformers accepts, and what it builds."""
        first = ""
        for _ in range(ATTEMPTS):
            values = self.draw(sizes)
            overrides = {**self.on, **{k: v for k, v in values.items()}, **dict.fromkeys(null)}
            try:
                return values, self.build(overrides, drop, repair={*sizes, *self.on, *null})
            except probe.Refused as error:
                first = first or f"{_cut(str(error), 160)} with {_values(overrides, sizes)}"
                continue
        raise RuntimeError(f"{self.model_type}: no random config accepted in {ATTEMPTS} attempts; the first: {first}")

    def fit(self, kinds: dict[str, Kind], sizes: list[str]) -> None:
        """Each factor as a polynomial over random configs, checked on fresh ones. A factor in many keys (Mamba's
        in_proj width, quadratic in five) needs more configs than monomials of degree 2: as many are drawn."""
        self.unfitted: dict[str, str] = {}  # tensor kind -> why it has no formula, in words
        self.roots: dict[Symbol, Expr] = {}  # the glossary's symbol of a key's integer root -> floor(sqrt(key))
        self.root_keys: dict[Symbol, str] = {}  # that symbol -> the key
        widest = max((len(f.deps) for kind in kinds.values() for f in kind.factors), default=0)
        needed = math.comb(widest + 2, 2) + 2  # the monomials of degree <= 2 in that many keys, and two more
        fitting = min(MAX_FIT_SAMPLES, max(FIT_SAMPLES, needed))
        samples = [self.sample(sizes) for _ in range(fitting + CHECK_SAMPLES)]
        on = getattr(self, "on", {})
        try:  # the kinds of a setting of switches of their own, on random configs of that setting
            for setting in getattr(self, "settings", []):
                self.on = setting
                samples += [self.sample(sizes) for _ in range(fitting + CHECK_SAMPLES)]
        finally:
            self.on = on
        self.fit_samples = fitting
        for kind in kinds.values():
            observed = []
            for values, b in samples:
                found = _per_kind(b).get(kind.key)
                if found is not None:
                    observed.append(({self.symbols[k]: v for k, v in values.items() if k in self.symbols}, found))
            if len(observed) < len(samples):
                self.note(f"{kind.key}: absent from some random configs; fitted on those that have it")
            fitting, checking = observed[: self.fit_samples], observed[self.fit_samples :]
            for j, factor in enumerate(kind.factors):
                variables = [self.symbols[k] for k in sorted(factor.deps)]
                points = [(values, f[j]) for values, f in fitting]
                factor.expr = fit.polynomial(points, variables) if variables else Integer(points[0][1])
                if factor.expr is None and len(variables) > 1:  # a share per head: lru_width / num_attention_heads
                    factor.expr = fit.quotient(points, variables)
                if factor.expr is None and len(variables) > 1:  # a share rounded: hidden_size // reduction_factor
                    factor.expr = fit.rounded(points, variables)
                if factor.expr is None and len(variables) == 2:  # rounded up to a multiple of a key (through a float)
                    factor.expr = fit.multiple(points, variables, self.constants())
                if factor.expr is None:  # in the integer root of a key: 2 * floor(sqrt(num_experts))
                    factor.expr = self.rooted(points, variables)
                if factor.expr is None:
                    why = f"{_dimension(j)} is no polynomial of degree <= 3 in {', '.join(sorted(factor.deps))}"
                    self.note(f"{kind.key}: {why}")
                    self.unfitted[kind.key] = why + f" (e.g. {_example(points, variables)})"
                    continue
                for values, f in checking:
                    if factor.expr.subs(self.roots).subs(values) != f[j]:
                        self.note(f"{kind.key}: factor {j} = {factor.expr} fails on a fresh config")
                        self.unfitted[kind.key] = f"{_dimension(j)} = {factor.expr} fails on a fresh config"
                        factor.expr = None
                        break

    def constants(self) -> list:
        """The constant factors a width rounded up to a multiple may take: the defaults of the floats that shape
        tensors (a factor the class multiplies a size by: xLSTM's ffn_proj_factor), then small fractions. Such a float
        is fitted at its default only: the draft refuses other values of it (see ``shaping_floats``)."""
        return fit.fractions(list(getattr(self, "floats", {}).values()))

    def rooted(self, points: list, variables: list[Symbol]) -> Expr | None:
        """A factor that is a polynomial in the integer root of a key (Doge's router: ``2 * floor(sqrt(num_experts))``
        product keys), written with the glossary's symbol for that root (an entry whose key column is the key and whose
        meaning names ``floor(sqrt(key))``); the root is then a symbol of the draft read from the key and adjusted.
        None when no root fits or the glossary has no symbol for it."""
        found = fit.root(points, variables)
        if found is None:
            return None
        expr, symbol = found
        key = next(k for k, s in self.symbols.items() if s == symbol)
        name = next(
            (
                e.symbol
                for e in GLOSSARY
                if key in _WORD.findall(e.key) and f"floor(sqrt({key}))" in e.meaning.replace(" ", "")
            ),
            None,
        )
        if name is None:
            self.note(f"{key}: a size is a polynomial in floor(sqrt({key})), which has no glossary symbol: not fitted")
            return None
        self.roots[name] = floor(sqrt(symbol))
        self.root_keys[name] = key
        return expr.subs(Symbol(f"_root_{symbol.name}", positive=True, integer=True), name)

    def defaults_of(self, sizes: list[str], kinds: dict[str, Kind]) -> dict[str, tuple[str | None, str | None]]:
        """Each size key: (its default when absent, its value when null) as record text; None: refused."""
        out = {}
        by_symbol = [self.symbols[k] for k in sorted(sizes, key=self._rank)]
        for key in sizes:
            if key == self.layer_key:  # the draft's N, with its own default
                out[key] = (None, None)
                continue
            others = [s for s in by_symbol if s != self.symbols[key]]
            found = []
            for drop, null in (((key,), ()), ((), (key,))):
                points = []
                for _ in range(4):
                    try:
                        values, b = self.sample(sizes, drop=drop, null=null)
                    except RuntimeError:
                        break
                    value = b.attributes.get(key)
                    if value is None:
                        value = self.implied(key, values, b, kinds)
                    if value is None:
                        break
                    points.append(({self.symbols[k]: v for k, v in values.items() if k in self.symbols}, value))
                if len(points) < 4:
                    # no config without it is accepted (a divisibility check against the others' draws): the
                    # class's own default, a constant, which the random configs that leave it out then check
                    value = self.defaults.get(key)
                    kept = drop and isinstance(value, int) and not isinstance(value, bool)
                    found.append(str(value) if kept else None)
                    continue
                text = fit.derived(points, others)
                if text is None:
                    self.note(f"{key}: {'absent' if drop else 'null'} gives values no rule here explains: TODO")
                found.append(text)
            out[key] = (found[0], found[1])
        return out

    def implied(self, key: str, values: dict[str, int], b: probe.Build, kinds: dict[str, Kind]) -> int | None:
        """The value the model used for a key its config leaves at None: from a tensor factor linear in it."""
        symbol = self.symbols[key]
        got = _per_kind(b)
        for kind in kinds.values():
            for j, factor in enumerate(kind.factors):
                if factor.expr is None or kind.key not in got or factor.expr.as_poly(symbol) is None:
                    continue
                poly = expand(factor.expr)
                if poly.as_poly(symbol).degree() != 1:
                    continue
                a, c = poly.coeff(symbol, 1), poly.coeff(symbol, 0)
                at = {self.symbols[k]: v for k, v in values.items() if k != key and k in self.symbols}
                slope = a.subs(at)
                if slope.free_symbols or slope == 0:
                    continue
                value = (got[kind.key][j] - c.subs(at)) / slope
                if value.is_Integer:
                    return int(value)
        return None

    def _rank(self, key: str) -> tuple[int, str]:
        order = [e.symbol for e in GLOSSARY]
        symbol = self.symbols[key]
        return (order.index(symbol) if symbol in order else len(order), key)

    # ---- the record ---------------------------------------------------------------------------------------
    def path(self, kind: Kind, kinds: dict[str, Kind]) -> tuple[str, bool]:
        """``group/module`` (and whether it is an embedding or untied head) for a tensor kind."""
        parts = kind.key.split(".")
        if parts[0] in ("model", "transformer", self.prefix):
            parts = parts[1:]
        leaf = parts[-1]
        bias = ".bias" if leaf == "bias" and not kind.norm else ""
        if not kind.in_layer and not kind.shared:
            modules = parts[:-1]
            name = ".".join(modules) or leaf
            if kind.embedding:
                return f"embedding/{name}", True
            if modules and modules[-1] == "lm_head":
                return f"head/lm_head{bias}", True
            if kind.norm:
                return f"norms/{name}", False
            return f"other/{name}{bias}", False
        sub = parts[parts.index("*") + 1 :]
        modules = [m for m in sub[:-1] if m != "*"]
        if not modules:
            return f"other/{leaf}", False
        first = modules[0]
        if kind.norm and len(modules) == 1:
            return f"norms/{first}", False
        block = kind.key.split(".*.", 1)[0] + ".*." + first + "."
        experts = [k for k in kinds if k.startswith(block) and ".experts." in k]
        conditions = getattr(self, "layer_conditions", {})
        # a block with experts is MoE on the layers that carry them; Qwen3-MoE's dense mlp.gate_proj is elsewhere
        if experts and conditions.get(kind.key, "") == conditions.get(experts[0], ""):
            group = "moe"
        elif "attn" in first or "attention" in first:
            group = "attention"
        elif first in ("mlp", "feed_forward", "ffn"):
            group = "mlp"
        else:
            group = first
        rest = modules[1:]
        if "experts" in rest:
            return f"{group}/experts", False
        if "shared_experts" in rest:
            return f"{group}/shared_experts{bias}", False
        name = ".".join(rest) if rest else (leaf if leaf not in ("weight", "bias") else first)
        if group == "moe" and name in ("gate", "router"):
            name = "router"
        return f"{group}/{name}{bias}", False

    def qualified(self, path: str, kind: Kind) -> str:
        """``path`` with the whole module chain of the layer, to tell apart modules of one name in two blocks; a
        bias keeps its ``.bias`` (a norm's too: ModernBERT's norm biases exist only with norm_bias)."""
        parts = kind.key.split(".*.", 1)[-1].split(".")
        modules = [m for m in parts[:-1] if m != "*"]
        bias = ".bias" if path.endswith(".bias") or parts[-1] == "bias" else ""
        return f"{path.split('/')[0]}/{'.'.join(modules)}{bias}"

    def layer_counts(self, kinds: dict[str, Kind]) -> dict[str, str]:
        """Kind -> its ``layers`` text; fills ``self.layer_symbols`` (symbol -> condition) for ``[layers]``. A
        condition and its complement share one symbol: ``N_dense`` and ``N - N_dense``. The symbol is the glossary's
        count symbol whose key column names the condition's key, given to the condition of the dense MLP."""
        self.layer_symbols: dict[str, str] = {}
        out: dict[str, str] = {}
        names = glossary_keys()
        by_condition: dict[str, list[str]] = {}
        for key in sorted(self.layer_conditions, key=lambda k: kinds[k].order):
            if self.layer_conditions[key]:
                by_condition.setdefault(self.layer_conditions[key], []).append(key)
        done: set[str] = set()
        for text, members in by_condition.items():
            if text in done:
                continue
            negated = [(v, [not x for x in m]) for v, m in self.seen[members[0]]]
            other = next((t for t in by_condition if t not in done and t != text and _explains(t, negated)), None)
            pair = [text] if other is None else [text, other]
            done.update(pair)
            groups = {t: {self.path(kinds[k], kinds)[0].split("/")[0] for k in by_condition[t]} for t in pair}
            named = next((t for t in pair if "mlp" in groups[t]), pair[0])
            words = [w for w in _WORD.findall(named) if w in names and not names[w].is_positive]
            if words and names[words[0]].name in self.layer_symbols:  # taken by another condition on the same key
                words = []  # (Nemotron-H's layers_block_type: one kind per condition): the config's own word
            if words:
                symbol = names[words[0]].name
            else:  # the config's own word: layer_types[i] == 'full_attention' -> N_full (N_full_attention if taken)
                quoted = re.findall(r"'([A-Za-z0-9]+)", named)
                symbol = "N_" + (quoted[0] if quoted else sorted(groups[named])[0]).lower()
                if symbol in self.layer_symbols:
                    whole = re.findall(r"'([A-Za-z0-9_]+)'", named)
                    symbol = "N_" + (whole[0].lower() if whole else f"{symbol[2:]}_{len(self.layer_symbols)}")
                if symbol not in BY_NAME:  # declared in the record's [glossary]
                    self.own[symbol] = f"number of layers where {named}"
                    self.log(f"glossary: no layer-count symbol for {named!r}; the record declares {symbol!r}")
            if words and other is None and "mlp" not in groups[named]:  # MoE layers only: N - N_dense
                self.layer_symbols[symbol] = f"not ({named})"
                for k in by_condition[named]:
                    out[k] = f"N - {symbol}"
                continue
            self.layer_symbols[symbol] = named
            for t in pair:
                for k in by_condition[t]:
                    out[k] = symbol if t == named else f"N - {symbol}"
        return out

    def write(self, kinds: dict[str, Kind], defaults: dict, effects: dict) -> str:
        terms: dict[str, dict[str, Any]] = {}
        self.term_of: dict[str, str] = {}  # tensor kind -> the path of the term counting it
        self.term_layers: dict[str, str] = {}  # term -> the layers the draft counts it on, in words
        n_symbol = next((s for s in self.symbols.values() if s.name == "n"), None)
        counts = self.layer_counts(kinds)
        for kind in sorted(kinds.values(), key=lambda k: k.order):
            path, embedding = self.path(kind, kinds)
            when = " and ".join(sorted(kind.when))
            layers = counts.get(kind.key, "N") if kind.in_layer else "1"
            runs = ""
            if kind.shared:  # counted once (as many as its distinct copies), run by the layers that use it
                layers, runs = "1", counts.get(kind.key, "N")
                when = " and ".join(sorted([*kind.when, *([f"{runs} > 0"] if runs != "N" else [])]))
            path = self.own_path(path, kind, when, layers, terms)
            term = terms.setdefault(
                path,
                {
                    "exprs": [],
                    "layers": layers,
                    "when": when,
                    "embedding": embedding,
                    "kinds": [],
                    "runs": runs,
                },
            )
            if term["when"] != when:
                self.note(f"{path}: tensors with different conditions ({term['when']!r}, {when!r}); kept the first")
            if kind.in_layer and kind.key in self.layer_conditions:  # the condition found for its layers, or none
                found = self.layer_conditions[kind.key] or "no condition found for them"
                self.term_layers[path] = f"{term['layers']} layers: {found}"
            elif kind.in_layer:
                self.term_layers[path] = "every layer"
            if kind.shared:
                found = self.layer_conditions.get(kind.key) or "every layer"
                self.term_layers[path] = f"once, shared by the {runs} layers that run it ({found})"
            term["exprs"].append(kind.expr)
            term["kinds"].append(kind)
            self.term_of[kind.key] = path
        ordered = sorted(
            terms.items(), key=lambda item: (GROUP_ORDER.get(item[0].split("/")[0], 5), item[1]["kinds"][0].order)
        )
        lines = self.header(kinds, defaults, effects, [t for _, t in ordered])
        for path, term in ordered:
            lines.append("")
            lines.append("[[terms]]")
            lines.append(f"path = {_q(path)}")
            if any(e is None for e in term["exprs"]):
                lines.append(
                    'expr = "0"  # TODO: no exact polynomial found for ' + ", ".join(k.key for k in term["kinds"])
                )
                expr = None
            else:
                expr = factorize(sum(term["exprs"], Integer(0)))
                lines.append(f"expr = {_q(_formula(expr))}")
            if term["layers"] != "1":
                lines.append(f"layers = {_q(term['layers'])}")
            if term["runs"]:
                lines.append(f"runs = {_q(term['runs'])}")
            if term["when"]:
                lines.append(f"when = {_q(term['when'])}")
            routed = (
                expr is not None
                and path.endswith("/experts")
                and n_symbol is not None
                and all(n_symbol in m.free_symbols for m in expand(expr).as_ordered_terms())
            )
            if routed:
                lines.append("routed = true")
            if term["embedding"]:
                lines.append("embedding = true")
            lines.append(f"note = {_q(self.describe(path, term['kinds']))}")
        lines += ["", "[checked]", f"transformers = {_q(probe.transformers.__version__)}"]
        return "\n".join(lines) + "\n"

    def own_path(self, path: str, kind: Kind, when: str, layers: str, terms: dict[str, dict[str, Any]]) -> str:
        """``path``, or another when a term of that path counts tensors under another condition or on other layers:
        GPT-2's crossattention.c_attn beside attn.c_attn, OLMo-Hybrid's linear_attn.q_proj beside self_attn.q_proj (a
        term of their own, named by their module chain); DORY's lm_head.logit_scale beside lm_head.weight, which tied
        embeddings remove (one module: named by its parameter)."""

        def clash(p: str) -> bool:
            return p in terms and (terms[p]["when"] != when or terms[p]["layers"] != layers)

        if clash(path):
            path = self.qualified(path, kind)
        if clash(path):
            path = f"{path.removesuffix('.bias')}.{kind.key.rsplit('.', 1)[-1]}"
        return path

    def describe(self, path: str, kinds: list[Kind]) -> str:
        parts = []
        for kind in kinds:
            dims = ", ".join(_formula(f.expr) if f.expr is not None else "?" for f in kind.factors[1:])
            count = kind.factors[0].expr if kind.factors else None
            many = "" if count == 1 else f"{_formula(count) if count is not None else '?'} x "
            parts.append(f"{many}{kind.module} {kind.key.rsplit('.', 1)[-1]} ({dims})")
        text = "; ".join(parts)
        for kind in kinds:
            if kind.key in self.tied:
                other, switch = self.tied[kind.key]
                text += f"; with {switch} it is {other} (the same Parameter), counted once"
        if any(kind.shared for kind in kinds):
            text += "; one module the layers that run it share (the same Parameters on each), counted once"
        return text

    def header(self, kinds, defaults, effects, terms) -> list[str]:
        name = self.model_type
        routed = any(k.key.count(".experts.") for k in kinds.values())
        model_class, config_class = self.classes
        title = config_class.removesuffix("Config") or name
        lines = [
            f"# {title}: transformers {model_class} ({probe.transformers.__version__}), drafted by "
            f"`python -m llmcount.discover {name}`: review the names, notes and defaults",
            f"model_type = {_q(name)}",
            f"title = {_q(title)}",
            f"kind = {_q('moe' if routed else 'dense')}",
        ]
        nulls = getattr(self, "null_switches", {})
        unset = getattr(self, "null_activations", [])
        floats = getattr(self, "floats", {})
        lists = getattr(self, "null_lists", {})
        entries = [  # a mapping the class defaults leave without an entry a kind of layer reads: see repairs
            line for r in getattr(self, "repairs", []) for line in repairs.refusals(r, getattr(self, "per_layer", {}))
        ]
        # set (or unset, or off their default), they build tensors the draft was not fitted on: refused by name
        if nulls or unset or floats or lists or entries:
            lines.append("refuse = [")
            for test, why in entries:
                lines.append(f"  [{_q(test)}, {_q(why)}],")
            for key in lists:
                why = (
                    f"{key} is absent or null (the config class's default): transformers cannot build the model"
                    " without it; give one entry per layer"
                )
                lines.append(f"  [{_q(f'{key} is None')}, {_q(why)}],")
            for key, value in floats.items():
                why = (
                    f"{key} is not {value!r} (the config class's default): it shapes tensors, and this discovered"
                    " record was fitted at the default only"
                )
                lines.append(f"  [{_q(_off_default(key, value))}, {_q(why)}],")
            for key, changed in nulls.items():
                why = f"{key} is set ({self.defaults[key]!r} by default): with it transformers builds other tensors"
                why += f" ({', '.join(changed[:3])}), which this discovered record does not describe"
                lines.append(f"  [{_q(f'{key} is not None')}, {_q(why.replace('None', 'null'))}],")
            for key in unset:  # it shapes no tensor: the total does not need it, the active count does
                why = (
                    f"{key} is absent or null (the config class's default): the active parameters need it (it shapes"
                    " no tensor, so the total does not); set it to count"
                )
                lines.append(f"  [{_q(f'{self.symbols[key].name} is None')}, {_q(why)}],")
            lines.append("]")
        read = sorted(self.symbols, key=self._rank)
        used = {w for t in terms for w in re.findall(r"[A-Za-z_]\w*", t["when"]) if w not in ("not", "and", "or")}
        used -= {"N", *getattr(self, "layer_symbols", {})}  # a shared module's users (N_attn > 0): no config key
        aliases = {
            key: sorted(a for a, k in self.aliases.items() if k == key)
            for key in [self.layer_key, *read, *sorted(used)]
            if any(k == key for k in self.aliases.values())
        }
        if aliases:
            lines += ["", "[aliases]"]
            lines += [f"{key} = [{', '.join(_q(a) for a in names)}]" for key, names in aliases.items()]
        if self.own:
            lines += ["", "[glossary]  # symbols of this record's own, named after their keys (meaning: the docstring)"]
            lines += [f"{key} = {{ meaning = {_q(meaning)} }}" for key, meaning in self.own.items()]
        length = getattr(self, "length_of", None)
        layers = _q(f"len({length})") if length else self.defaults[self.layer_key]
        lines += ["", "[symbols]", f"N = {{ key = {_q(self.layer_key)}, default = {layers} }}"]
        for key in _topological([k for k in read if k != self.layer_key], defaults, self.symbols):
            default, null = defaults[key]
            fields = [f"key = {_q(key)}"]
            if default is not None:
                fields.append(f"default = {_toml_value(default)}")
            if null is not None:
                fields.append(f"null = {_toml_value(null)}")
            lines.append(f"{self.symbols[key].name} = {{ {', '.join(fields)} }}")
        for symbol, key in getattr(self, "root_keys", {}).items():  # read from the key, its integer root
            default, null = defaults.get(key, (None, None))
            fields = [f"key = {_q(key)}"]
            if default is not None and default.isdigit():
                fields.append(f"default = {default}")
            fields.append(f"adjust = {_q(f'floor(sqrt({symbol.name}))')}")
            lines.append(f"{symbol.name} = {{ {', '.join(fields)} }}")
        used |= set(self.layer_values) | set(nulls) | set(floats)
        used |= {
            key for r in getattr(self, "repairs", []) if r.kinds for key in (r.key, *getattr(self, "per_layer", {}))
        }
        if used:
            lines += ["", "[keys]"]
            lines += [f"{key} = {_toml(self.defaults[key])}" for key in sorted(used)]
        if self.layer_symbols:
            lines += ["", "[layers]"]
            lines += [f"{symbol} = {_q(text)}" for symbol, text in self.layer_symbols.items()]
        if self.layer_keys or "" in self.layer_conditions.values():
            lines.append("")
            lines.append(
                "# TODO [layers]: " + ", ".join(self.layer_keys or self.layer_values) + " change which layers carry "
                "which tensors in ways not found here; write those layer-count conditions by hand"
            )
        return lines


def _count(value: Any) -> bool:
    """Whether ``value`` is an integer (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _same_tensors(a: probe.Build, b: probe.Build) -> bool:
    """Whether two builds hold the same tensors, of the same shapes, on the same layers."""
    return sorted((t.key, t.layer, t.shape) for t in a.tensors) == sorted((t.key, t.layer, t.shape) for t in b.tensors)


def _off_default(key: str, value: float) -> str:
    """The condition that a float key is not at its default: ``key != p / q`` (a condition has no float literals; the
    quotient of the default's exact decimal is the same double)."""
    exact = Fraction(repr(value))
    return f"{key} != {exact.numerator}" + (f" / {exact.denominator}" if exact.denominator > 1 else "")


def _conjunction(keys: list[str], settings: list[dict[str, bool]], member: list[bool]) -> list[str] | None:
    """The fewest switch values (``multi_query``, ``not new_decoder_architecture``) that all hold in exactly the
    settings where ``member`` is true, or the negation of such a conjunction (``not (parallel_attn and
    new_decoder_architecture)``); None when neither does."""
    for size in range(1, len(keys) + 1):
        for chosen in combinations(keys, size):
            for values in product((True, False), repeat=size):
                holds = [all(s[k] == v for k, v in zip(chosen, values, strict=True)) for s in settings]
                words = [k if v else f"not {k}" for k, v in zip(chosen, values, strict=True)]
                if holds == member:
                    return words
                if size > 1 and [not x for x in holds] == member:  # of one switch: its other value, above
                    return [f"not ({' and '.join(words)})"]
    return None


def _partitions(entries: Any, shapes: list[Any]) -> bool:
    """Whether a per-layer list gives one shape per entry kind (layers without the tensor aside)."""
    if not isinstance(entries, list) or len(entries) != len(shapes):
        return False
    by_kind: dict[Any, set[str]] = {}
    for entry, shape in zip(entries, shapes, strict=True):
        if shape is not None:
            by_kind.setdefault(str(entry), set()).add(str(shape))
    return all(len(v) == 1 for v in by_kind.values())


def _named_keys(text: str, keys) -> set[str]:
    """The keys of ``keys`` that a refusal's message names (as whole words, or in backquotes)."""
    return {k for k in keys if re.search(rf"(?<![A-Za-z0-9_]){re.escape(k)}(?![A-Za-z0-9_])", text)}


def _membership(b: probe.Build) -> dict[str, list[bool]]:
    """In-layer tensor kind -> whether each layer carries it."""
    out: dict[str, list[bool]] = {}
    for t in b.tensors:
        if t.layer is not None:
            out.setdefault(t.key, [False] * b.layers)[t.layer] = True
    for key, layers in b.uses.items():  # a module several layers share: on each layer that runs it
        for i in layers:
            out.setdefault(key, [False] * b.layers)[i] = True
    return out


def _turned(lists: dict[str, list[Any]]) -> list[dict[str, list[Any]]]:
    """The per-layer lists with their kinds turned by one, then more, up to each list's length: the order that cycles
    a later kind onto more of a few layers (Zamba's ``layers_block_type``, [linear_attention, hybrid] cycled over 3
    layers, has one hybrid layer, and the block its hybrid layers share needs two to be tied: [hybrid,
    linear_attention, hybrid] has them)."""
    most = max((len(v) for v in lists.values()), default=0)
    return [{k: v[j % len(v) :] + v[: j % len(v)] for k, v in lists.items()} for j in range(1, most)]


def _shared_key(key: str) -> str:
    """The name of a tensor kind whose module several layers share: ``...self_attn.q_proj_shared.weight``."""
    parts = key.split(".")
    if len(parts) > 1:
        parts[-2] += "_shared"
    return ".".join(parts)


def _shapes(b: probe.Build) -> list[tuple[str, int | None, tuple[int, ...]]]:
    """Every tensor of a build by name, layer and shape, in order."""
    return sorted((t.key, t.layer, t.shape) for t in b.tensors)


def _uneven(b: probe.Build) -> bool:
    """Some tensor kind is on some layers and not on others."""
    return any(not all(m) for m in _membership(b).values())


def _explains(text: str, seen: list[tuple[dict[str, Any], list[bool]]]) -> bool:
    test = condition(text, "discover")
    try:
        return all(bool(test({**values, "i": i})) == m for values, member in seen for i, m in enumerate(member))
    except (TypeError, ValueError, IndexError, ZeroDivisionError, LookupError):
        return False


def _topological(keys: list[str], defaults: dict, symbols: dict[str, Symbol]) -> list[str]:
    """Keys in glossary order, each after the symbols its default or null uses."""
    out: list[str] = []
    pending = list(keys)
    while pending:
        for key in pending:
            needs = {w for text in defaults[key] if text for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", str(text))} - {
                symbols[key].name
            }
            placed = {symbols[k].name for k in out}
            if needs <= placed or not needs & {symbols[k].name for k in pending}:
                out.append(key)
                pending.remove(key)
                break
        else:  # a cycle: keep the order
            out += pending
            break
    return out


def _dimension(j: int) -> str:
    """Factor ``j`` of a tensor kind in words (factor 0 counts the tensors of one name in a layer)."""
    return "the number of such tensors" if j == 0 else f"dimension {j - 1}"


def _example(points: list, variables: list[Symbol]) -> str:
    """One observed point of a fit, in words: ``d=96, h=3 -> 31``."""
    values, y = points[0]
    return ", ".join(f"{v}={values[v]}" for v in variables if v in values) + f" -> {y}"


def _values(overrides: dict[str, Any], keys: list[str]) -> str:
    return ", ".join(f"{k}={overrides[k]}" for k in keys if k in overrides) or "the class defaults"


def _cut(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _formula(expr: Expr) -> str:
    return str(expr).replace(" ", "").replace("ceiling(", "ceil(")  # the record's word for sympy's ceiling


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _toml_value(text: str) -> str:
    return text if text.lstrip("-").isdigit() else _q(text)


def _toml(value: Any) -> str:
    if value is None:
        return _q("null")  # the reader's word for a class default of None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _q(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)
