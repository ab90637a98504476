"""A Derivation: the ordered, path-keyed terms of one architecture, their total and activated
counts as sympy expressions, and their exact values for a config."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from sympy import Add, Expr, Integer, Symbol, expand

from .. import evaluate
from ..errors import LlmcountError
from .blocks import Term
from .symbols import N, entries

if TYPE_CHECKING:
    from .records import Family

ACTIVATED_DEFINITION = (
    "activated = every parameter except the routed experts, plus k/n of the routed experts "
    "(router and shared experts count fully); for dense models activated = total"
)
EMBEDDING_DEFINITION = "embedding = token embedding + learned position table + untied LM head"


@dataclass(frozen=True)
class Component:
    """One term evaluated on a config."""

    path: str
    formula: Expr
    count: int
    activated: int
    embedding: bool


@dataclass(frozen=True)
class Counts:
    """A Derivation evaluated on one config: exact integers."""

    total: int
    activated: int
    embedding: int
    components: tuple[Component, ...]
    values: dict[str, int]

    @classmethod
    def of(cls, components: Iterable[Component], values: dict[Symbol, int]) -> Counts:
        """The counts of evaluated components: their sums, and the config's values by symbol name."""
        components = tuple(components)
        return cls(
            total=sum(c.count for c in components),
            activated=sum(c.activated for c in components),
            embedding=sum(c.count for c in components if c.embedding),
            components=components,
            values={s.name: int(v) for s, v in values.items()},
        )

    @property
    def non_embedding(self) -> int:
        return self.total - self.embedding


def _sum(exprs) -> Expr:
    return Add(*exprs) if exprs else Integer(0)


def combine_like_terms(exprs: Iterable[Expr]) -> list[Expr]:
    """Add up terms that differ only by a number (q_proj and o_proj: 2·d·h·h_d), keeping
    first-appearance order and each term's factored form."""
    merged: dict[Expr, Expr] = {}
    for expr in exprs:
        coeff, rest = expr.as_coeff_Mul()
        merged[rest] = merged.get(rest, 0) + coeff
    return [coeff * monomial for monomial, coeff in merged.items() if coeff != 0]


def gather(pairs: Iterable[tuple[Expr, Expr]]) -> list[tuple[Expr, list[Expr]]]:
    """``(layers, per-layer expr)`` pairs as ``[(layers, [per-layer exprs...]), ...]`` for display: gathered
    under their layer count in first-appearance order, like terms combined, like ``N·(...) + d(2V + 1)``."""
    groups: dict[Expr, list[Expr]] = {}
    for layers, expr in pairs:
        groups.setdefault(layers, []).append(expr)
    return [(layers, combine_like_terms(exprs)) for layers, exprs in groups.items()]


def _is_layer_count(layers: Expr) -> bool:
    """A layer count of its own (``N_dense``), as opposed to all layers, the rest of them or the whole model."""
    return layers.is_Symbol and layers != N


def evaluate_int(expr: Expr, values: dict[Symbol, int], what: str) -> int:
    """``expr`` at ``values``, which must be a whole number: counts, FLOPs and bytes stay exact. With int values, the
    expression's compiled form (:mod:`llmcount.evaluate`, built once per expression) computes it in Python's ints;
    anything else (a sympy value, a missing value, a zero divisor) goes to sympy's ``subs``, which words the error."""
    by_name = evaluate.named(values)
    if by_name is not None:
        result = evaluate.value(expr, by_name)
        if result is not None:
            number = evaluate.whole(result)
            if number is not None:
                return number
    value = expr.subs(values)
    if not value.is_Integer:
        raise ValueError(f"{what}: does not evaluate to an integer: {expr} = {value}")
    return int(value)


@dataclass(frozen=True)
class Derivation:
    """The parameter formula of one family: its record's terms, or those a config selects."""

    architecture: Family
    chosen: tuple[Term, ...] | None = field(default=None)

    @cached_property
    def terms(self) -> tuple[Term, ...]:
        return self.architecture.default_terms if self.chosen is None else self.chosen

    @cached_property
    def total(self) -> Expr:
        return expand(_sum(t.total for t in self.terms))

    @cached_property
    def activated(self) -> Expr:
        return expand(_sum(t.activated for t in self.terms))

    @cached_property
    def embedding(self) -> Expr:
        return expand(_sum(t.total for t in self.terms if t.embedding))

    @cached_property
    def layer_counts(self) -> tuple[Symbol, ...]:
        """The layer-count symbols the terms use (``N_dense``; ``N_full`` and ``N_linear``), sorted by name."""
        counted = {s for t in self.terms for s in t.layers.free_symbols if s != N}
        return tuple(sorted(counted, key=str))

    @property
    def has_layers(self) -> bool:
        """Whether some term lies on the N layers (a tower record counts its layers with N_vis: no "one layer" of N)."""
        return any(N in t.layers.free_symbols for t in self.terms)

    @property
    def one_layer_kind(self) -> bool:
        """Whether "one layer" is well defined: the layers are all alike, or of two kinds split by one count."""
        return len(self.layer_counts) <= 1

    @cached_property
    def per_layer(self) -> Expr | None:
        """Parameters of one decoder layer of the main kind (for MoE families, one MoE layer); None when the
        layers are of several kinds (see :attr:`one_layer_kind`)."""
        return _sum(self.layer_terms()) if self.one_layer_kind else None

    @cached_property
    def per_dense_layer(self) -> Expr | None:
        """Parameters of one layer of the other kind (a dense layer of an MoE model), if the model has any."""
        if not self.one_layer_kind or not any(_is_layer_count(t.layers) for t in self.terms):
            return None
        return _sum(self.layer_terms(dense=True))

    def layer_terms(self, dense: bool = False, activated: bool = False) -> list[Expr]:
        """One layer's count as like terms in reader's order: a layer of the main kind (the terms on all N layers
        and on N minus some layers), or with ``dense`` one of the other kind (the terms on N and on a counted
        set of layers, such as N_dense); with ``activated``, k of the n routed experts.
        A model whose layers are of several kinds has no one layer: :class:`LlmcountError` says so."""
        if not self.one_layer_kind:
            kinds = ", ".join(map(str, self.layer_counts))
            raise LlmcountError(
                f"{self.architecture.title} has layers of several kinds ({kinds}): "
                "there is no one layer to take the terms of; see the formula by layer kind"
            )

        def in_layer(layers: Expr) -> bool:
            if layers == N:
                return True
            return _is_layer_count(layers) if dense else _is_layer_count(N - layers)

        return combine_like_terms(t.per_layer(activated) for t in self.terms if in_layer(t.layers))

    @cached_property
    def symbols(self) -> tuple[Symbol, ...]:
        """The glossary symbols this formula uses, in glossary order."""
        used = self.total.free_symbols | self.activated.free_symbols
        return tuple(e.symbol for e in entries() if e.symbol in used)

    def grouped(self, activated: bool = False, terms: Iterable[Term] | None = None) -> list[tuple[Expr, list[Expr]]]:
        """The total (or that of ``terms``, some of this derivation's) as ``[(layers, [per-layer exprs...]), ...]``
        in reader's order, for display: see :func:`gather`."""
        return gather((t.layers, t.per_layer(activated)) for t in (self.terms if terms is None else terms))

    def evaluate(self, values: dict[Symbol, int]) -> Counts:
        """Substitute exact integer values; every count stays a Python int."""
        fast = _evaluate_compiled(self.terms, values)
        if fast is not None:
            return fast
        missing = {s.name for s in self.symbols} - {s.name for s in values}
        if missing:
            raise ValueError(f"no value for {', '.join(sorted(missing))}")
        components = []
        for t in self.terms:
            count = evaluate_int(t.total, values, t.path)
            activated = evaluate_int(t.activated, values, t.path)
            components.append(Component(t.path, t.total, count, activated, t.embedding))
        return Counts.of(components, values)


_COMPILED: dict[int, tuple[tuple[Term, ...], list | None]] = {}


def _compiled_terms(terms: tuple[Term, ...]) -> list[tuple[str, Expr, Callable, Callable, bool]] | None:
    """Each term's path, total, compiled forms (total, activated) and embedding flag; None if a term has a node the
    numeric path does not take. Once per tuple of terms: the configs of a family that select the same terms share
    one tuple (see ``Family.terms_for``), so a batch of thousands of configs compiles a handful."""
    hit = _COMPILED.get(id(terms))
    if hit is not None and hit[0] is terms:
        return hit[1]
    compiled: list | None = []
    for t in terms:
        total, activated = evaluate.compiled(t.total), evaluate.compiled(t.activated)
        if total is None or activated is None:
            compiled = None
            break
        compiled.append((t.path, t.total, total, activated, t.embedding))
    if len(_COMPILED) < 4096:
        _COMPILED[id(terms)] = (terms, compiled)  # the tuple is kept, so its id is not reused while it is a key
    return compiled


def _evaluate_compiled(terms: tuple[Term, ...], values: dict[Symbol, int]) -> Counts | None:
    """:meth:`Derivation.evaluate` by the compiled forms, or None (then ``subs`` decides, and words any error) when
    a term is not compiled, a value is missing or not an int, a divisor is zero or a count is not a whole number."""
    compiled = _compiled_terms(terms)
    by_name = evaluate.named(values) if compiled is not None else None
    if by_name is None:
        return None
    components = []
    try:
        for path, formula, total, activated, embedding in compiled:
            count, active = evaluate.whole(total(by_name)), evaluate.whole(activated(by_name))
            if count is None or active is None:
                return None
            components.append(Component(path, formula, count, active, embedding))
    except (KeyError, ZeroDivisionError):
        return None
    return Counts.of(components, values)
