"""Layer kinds: which of a record's per-layer amounts one decoder layer carries, for each kind of layer.

A record's ``layers`` fields are linear in :math:`N` and its layer-count symbols (``N_dense``, ``N_full``,
``N_linear`` ...). When those counts partition the N layers (each layer is of exactly one counted kind, or of
none: "the rest", :math:`N - \\sum` counts), a term with ``layers`` = :math:`aN + \\sum_c b_c\\,c` is carried
:math:`a + b_c` times by a layer of kind :math:`c` and :math:`a` times by a layer of the rest
(``N - N_dense``: 0 times in a dense layer, once in the others). Amounts whose ``layers`` hold no layer symbol
are model-level (the embedding, the final norm, the head): carried once by the model, by no layer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sympy import Expr, Integer, Symbol

from ..errors import LlmcountError
from .reading import MAX_LAYERS
from .symbols import N

if TYPE_CHECKING:
    from .records import Family


@dataclass(frozen=True)
class Kind:
    """One kind of layer: its name (the count symbol, or the rest as ``N - N_dense``), how many layers are of
    it in this config, and the count as an expression."""

    name: str
    count: int
    count_expr: Expr
    where: dict[Symbol, int]  # the substitution that gives a term's multiplicity in one layer of this kind
    members: frozenset[str] | None = None  # when the counts overlap: the counts whose layers include this kind's

    def times(self, layers: Expr) -> int:
        """How many times one layer of this kind carries an amount spread over ``layers`` layers."""
        value = layers.subs(self.where)
        if not value.is_Integer or value < 0:
            raise LlmcountError(f"layers {layers}: not a whole number of times per layer of kind {self.name}")
        return int(value)


def is_model_level(layers: Expr, counted: Iterable[Symbol]) -> bool:
    """Whether an amount belongs to the model (no layer symbol in its ``layers``)."""
    return not (layers.free_symbols & ({N} | set(counted)))


def kinds(
    layer_exprs: Iterable[Expr],
    values: Mapping[Symbol, int],
    family: Family | None = None,
    keys: Mapping[str, object] | None = None,
) -> tuple[Kind, ...]:
    """The kinds of layer of one config, with at least one layer each. When the layer-count symbols overlap (an
    attention kind and an MLP kind), a kind is each combination of counts some layer is in, told layer by layer
    from the ``family``'s [layers] conditions; LlmcountError when they cannot tell it."""
    exprs = list(layer_exprs)
    counted = sorted({s for e in exprs for s in e.free_symbols if s != N}, key=str)
    total = values[N]
    for symbol in counted:
        if symbol not in values:
            raise LlmcountError(f"no value for the layer count {symbol}")
    rest = total - sum(values[c] for c in counted)
    sets = (
        None if family is None or not counted else _memberships(family, values, keys or {}, [c.name for c in counted])
    )
    if rest < 0 or (sets is not None and any(len(s) > 1 for s in sets)):  # a layer of two counted kinds
        return _overlapping(counted, values, sets)
    found = [Kind(str(c), values[c], c, {N: 1, **{o: int(o == c) for o in counted}}) for c in counted if values[c] > 0]
    if rest > 0:
        rest_expr = N - sum(counted, Integer(0))
        found.append(Kind(str(rest_expr), rest, rest_expr, {N: 1, **{c: 0 for c in counted}}))
    return tuple(found)


def _overlapping(
    counted: Sequence[Symbol], values: Mapping[Symbol, int], sets: list[frozenset[str]] | None
) -> tuple[Kind, ...]:
    names = [c.name for c in counted]
    if sets is None or any(sum(c.name in s for s in sets) != values[c] for c in counted):
        raise LlmcountError(
            f"the layer counts {' + '.join(names)} add up to more than N = {values[N]} and the record's [layers] "
            "conditions do not tell which layers are of which kinds"
        )
    found = []
    for members in dict.fromkeys(sets):  # each combination once, in the order of its first layer
        excluded = [n for n in names if n not in members and any(members | {n} <= s for s in sets)]
        name = " & ".join(sorted(members)) if members else "none of " + ", ".join(names)
        if members and excluded:
            name += ", not " + ", ".join(excluded)
        where = {N: 1, **{c: int(c.name in members) for c in counted}}
        found.append(Kind(name, sets.count(members), Integer(sets.count(members)), where, members))
    return tuple(found)


def _memberships(
    family: Family, values: Mapping[Symbol, int], keys: Mapping[str, object], names: Iterable[str]
) -> list[frozenset[str]] | None:
    """For each layer i, which of the counts ``names`` its [layers] condition puts it in; None when a count has no
    condition or a condition needs what the config does not give."""
    tests = [(symbol.name, test) for symbol, test, _ in family.layers if symbol.name in set(names)]
    if len(tests) < len(set(names)):
        return None
    scope: dict[str, object] = dict(keys)
    for spec in family.symbols:
        scope[spec.symbol.name] = scope[spec.key] = values.get(spec.symbol)
    sets = []
    try:
        for i in range(values[N]):
            scope["i"] = i
            sets.append(frozenset(name for name, test in tests if test(scope)))
    except Exception:  # a condition the config cannot answer
        return None
    return sets


def stages(layers: int, pp: int, before_last: bool = False) -> list[range]:
    """Pipeline stages: contiguous runs of layers, as even as possible, the first ``layers mod pp`` one longer;
    with ``before_last``, the ``layers mod pp`` stages before the last one longer, as vLLM's ``get_pp_indices``
    splits them (vllm/distributed/utils.py: ``partitions[-i] += 1`` for i from 2, keeping the last stage, which
    also holds the head, short). A stage's layers are then walked one by one: LlmcountError past
    :data:`MAX_LAYERS` layers."""
    if layers > MAX_LAYERS:
        raise LlmcountError(f"--pp {pp}: {layers:,} layers; layers are split in pipeline stages up to {MAX_LAYERS:,}")
    size, extra = divmod(layers, pp)
    longer = set(range(pp - 1 - extra, pp - 1)) if before_last else set(range(extra))
    runs, start = [], 0
    for stage in range(pp):
        end = start + size + (stage in longer)
        runs.append(range(start, end))
        start = end
    return runs


def layer_sequence(
    family: Family, values: Mapping[Symbol, int], keys: Mapping[str, object], found: Sequence[Kind]
) -> list[str] | None:
    """The kind of each layer i (names of ``found``), from the record's [layers] conditions; None when it cannot
    be told (no condition for a kind, a layer of two kinds, a condition that needs what the config does not give)."""
    if any(kind.members is not None for kind in found):  # overlapping counts: kinds() told each layer's already
        by_members = {kind.members: kind.name for kind in found}
        sets = _memberships(family, values, keys, {name for kind in found for name in kind.members or ()})
        return None if sets is None else [by_members[s] for s in sets]
    names = {kind.name for kind in found}
    tested = {symbol.name for symbol, _, _ in family.layers} & names
    rest = [kind.name for kind in found if kind.name not in tested]
    if len(rest) > 1:
        return None
    sets = _memberships(family, values, keys, tested)
    if sets is None or any(len(s) > 1 or (not s and not rest) for s in sets):
        return None
    sequence = [next(iter(s)) if s else rest[0] for s in sets]
    counts = {kind.name: kind.count for kind in found}
    return sequence if all(sequence.count(name) == count for name, count in counts.items()) else None
