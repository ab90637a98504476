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

    def times(self, layers: Expr) -> int:
        """How many times one layer of this kind carries an amount spread over ``layers`` layers."""
        value = layers.subs(self.where)
        if not value.is_Integer or value < 0:
            raise LlmcountError(f"layers {layers}: not a whole number of times per layer of kind {self.name}")
        return int(value)


def is_model_level(layers: Expr, counted: Iterable[Symbol]) -> bool:
    """Whether an amount belongs to the model (no layer symbol in its ``layers``)."""
    return not (layers.free_symbols & ({N} | set(counted)))


def kinds(layer_exprs: Iterable[Expr], values: Mapping[Symbol, int]) -> tuple[Kind, ...]:
    """The kinds of layer of one config, with at least one layer each; LlmcountError when the layer-count
    symbols do not partition the N layers (some layer would be of two kinds)."""
    exprs = list(layer_exprs)
    counted = sorted({s for e in exprs for s in e.free_symbols if s != N}, key=str)
    total = values[N]
    found = []
    for symbol in counted:
        if symbol not in values:
            raise LlmcountError(f"no value for the layer count {symbol}")
        if values[symbol] > 0:
            where = {N: 1, **{c: int(c == symbol) for c in counted}}
            found.append(Kind(str(symbol), values[symbol], symbol, where))
    rest = total - sum(values[c] for c in counted)
    if rest < 0:
        names = " + ".join(map(str, counted))
        raise LlmcountError(f"the layer counts {names} add up to more than N = {total}: layers of several kinds")
    if rest > 0:
        rest_expr = N - sum(counted, Integer(0))
        found.append(Kind(str(rest_expr), rest, rest_expr, {N: 1, **{c: 0 for c in counted}}))
    return tuple(found)


def stages(layers: int, pp: int) -> list[range]:
    """Pipeline stages: contiguous runs of layers, as even as possible, the first ``layers mod pp`` one longer."""
    size, extra = divmod(layers, pp)
    runs, start = [], 0
    for stage in range(pp):
        end = start + size + (stage < extra)
        runs.append(range(start, end))
        start = end
    return runs


def layer_sequence(
    family: Family, values: Mapping[Symbol, int], keys: Mapping[str, object], found: Sequence[Kind]
) -> list[str] | None:
    """The kind of each layer i (names of ``found``), from the record's [layers] conditions; None when it cannot
    be told (no condition for a kind, a layer of two kinds, a condition that needs what the config does not give)."""
    names = {kind.name for kind in found}
    tests = [(symbol.name, test) for symbol, test, _ in family.layers if symbol.name in names]
    rest = [kind.name for kind in found if kind.name not in {name for name, _ in tests}]
    if len(rest) > 1:
        return None
    scope: dict[str, object] = dict(keys)
    for spec in family.symbols:
        scope[spec.symbol.name] = scope[spec.key] = values.get(spec.symbol)
    sequence = []
    try:
        for i in range(values[N]):
            scope["i"] = i
            held = [name for name, test in tests if test(scope)]
            if len(held) > 1 or (not held and not rest):
                return None
            sequence.append(held[0] if held else rest[0])
    except Exception:  # a condition the config cannot answer: fall back to the stated bound
        return None
    counts = {kind.name: kind.count for kind in found}
    return sequence if all(sequence.count(name) == count for name, count in counts.items()) else None
