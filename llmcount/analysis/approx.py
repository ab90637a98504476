"""Leading-order approximations: what "12·d² per layer" means, exactly, and how good it is on a model.

Hold the structural ratios fixed (:math:`d_{ff} = 3d`, :math:`h h_d = d`, :math:`h_{kv} = h/4`, ...)
and let the width grow: each per-layer count becomes a polynomial in d whose top-degree term is the
*leading term*; the rest is the exact *remainder*. For a classic block (LayerNorm, MHA with biases,
a 4d MLP with biases) that is :math:`12d^2 + 13d`; for Qwen3's ratios :math:`11.5d^2 + 2d + 2h_d`.

The total's leading part is the layers' leading terms times their layer counts, plus the embedding
(:math:`V d` per table: the leading term as V grows, which no blog leaves out).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from sympy import Add, Expr, Integer, Rational, Symbol, cancel, expand

from ..errors import LlmcountError
from ..formulas.config import Model
from ..formulas.derivation import Derivation
from ..formulas.symbols import N, N_dense, d
from ..shown import Shown
from . import number, relative
from .parse import Setting
from .relations import SCALING, config_ratios, ordered, resolve


def degree(expr: Expr, x: Symbol = d) -> Expr:
    """The highest power of ``x`` in an expanded sum (other symbols held fixed)."""
    return max(term.as_coeff_exponent(x)[1] for term in Add.make_args(expand(expr)))


def top_terms(terms: Iterable[Expr], order: Callable[[Expr], object]) -> list[Expr]:
    """The terms of the highest ``order``, in their order (the write-up's leading part of a layer uses it too)."""
    terms = list(terms)
    top = max(map(order, terms))
    return [term for term in terms if order(term) == top]


def leading(expr: Expr, x: Symbol = d) -> Expr:
    """The top-degree part in ``x``: :math:`23d^2/2` of :math:`23d^2/2 + 2d + 2h_d`."""
    return Add(*top_terms(Add.make_args(expand(expr)), lambda term: term.as_coeff_exponent(x)[1]))


@dataclass(frozen=True)
class Evaluation:
    """The approximation evaluated on one model, next to the exact count."""

    model: str
    approx: Expr
    exact: int

    @property
    def relative_error(self) -> float:
        return relative(self.approx, self.exact)

    def data(self) -> dict:
        return {
            "model": self.model,
            "approx": number(self.approx),
            "exact": self.exact,
            "relative_error": self.relative_error,
        }


@dataclass(frozen=True)
class Share:
    """A group's share of the count: in the limit d → ∞ (exact) and on the model (if there is one)."""

    group: str
    asymptotic: Expr
    actual: Rational | None

    @property
    def asymptotic_value(self) -> float | None:
        """The limit as a float, or None while it still depends on layer counts (a family without a config)."""
        return float(self.asymptotic) if self.asymptotic.is_number else None


@dataclass(frozen=True)
class Approximation(Shown):
    title: str
    moe: bool
    activated: bool
    embedding: bool
    relations: dict[Symbol, Expr]
    assumed: frozenset[Symbol]
    per_layer: Expr  # exact, under the relations
    leading_per_layer: Expr
    leading_total: Expr
    per_dense_layer: Expr | None = None
    leading_per_dense_layer: Expr | None = None
    evaluations: tuple[Evaluation, ...] = ()  # the model itself first, then --over
    shares: tuple[Share, ...] = field(default=())

    @property
    def remainder_per_layer(self) -> Expr:
        return expand(self.per_layer - self.leading_per_layer)

    def data(self) -> dict:
        data = {
            "model": self.title,
            "count": "activated" if self.activated else "total",
            "embedding_included": self.embedding,
            "ratios": {s.name: str(e) for s, e in self.relations.items()},
            "assumed": [s.name for s in self.relations if s in self.assumed],
            "exact_per_layer": str(self.per_layer),
            "leading_per_layer": str(self.leading_per_layer),
            "remainder_per_layer": str(self.remainder_per_layer),
            "leading_total": str(self.leading_total),
        }
        if self.per_dense_layer is not None:
            data["exact_per_dense_layer"] = str(self.per_dense_layer)
            data["leading_per_dense_layer"] = str(self.leading_per_dense_layer)
        if self.evaluations:
            data.update(self.evaluations[0].data())
            data["model"] = self.title
            data["over"] = [e.data() for e in self.evaluations[1:]]
        data["shares"] = {
            s.group: {
                "asymptotic": str(s.asymptotic),
                "asymptotic_float": s.asymptotic_value,
                "actual": None if s.actual is None else float(s.actual),
            }
            for s in self.shares
        }
        return data


def _relations(derivation: Derivation, model: Model | None, assume: Iterable[Setting]) -> dict[Symbol, Expr]:
    relations = config_ratios(model.values, derivation.symbols) if model is not None else {}
    for setting in assume:
        if setting.symbol == d:
            raise LlmcountError(f"--assume {setting.text!r}: d is the width that grows; it cannot be assumed")
        relations[setting.symbol] = setting.relation if setting.relation is not None else Integer(setting.numbers[0])
    return ordered(relations)


def approximate(
    derivation: Derivation,
    model: Model | None = None,
    assume: Iterable[Setting] = (),
    over: Iterable[Model] = (),
    activated: bool = False,
    embedding: bool = True,
    title: str = "",
) -> Approximation:
    """Leading terms per layer and in total under the config's ratios (or ``assume``d ones)."""
    assume = list(assume)
    relations = _relations(derivation, model, assume)
    resolved = resolve(relations)

    def reduce(expr: Expr) -> Expr:
        return expand(expr.subs(resolved))

    per_layer = reduce(Add(*derivation.layer_terms(activated=activated)))
    unscaled = sorted((per_layer.free_symbols & SCALING) - {d}, key=str)
    if unscaled:
        names = ", ".join(map(str, unscaled))
        raise LlmcountError(
            f"no ratio for {names}: give a config, or --assume for each (e.g. --assume d_ff=4*d --assume h=d/h_d)"
        )
    dense = derivation.per_dense_layer
    per_dense = None if dense is None else reduce(Add(*derivation.layer_terms(dense=True, activated=activated)))

    kinds: dict[Expr, Expr] = {}  # the per-layer body of each kind of layer (N, N - N_dense, N_dense, 1)
    groups: dict[str, Expr] = {}
    for t in derivation.terms:
        if not t.embedding:
            kinds[t.layers] = kinds.get(t.layers, Integer(0)) + t.per_layer(activated)
        group = "embedding" if t.embedding else t.group
        groups[group] = groups.get(group, Integer(0)) + (t.activated if activated else t.total)
    reduced = {layers: reduce(body) for layers, body in kinds.items()}
    top = max(degree(body) for body in reduced.values())
    body = Add(*[layers * leading(e) for layers, e in reduced.items() if degree(e) == top])
    leading_total = body + (reduce(derivation.embedding) if embedding else 0)

    evaluations = tuple(_evaluate(leading_total, m, activated, embedding) for m in [model, *over] if m is not None)
    return Approximation(
        title=title or (model.name if model else derivation.architecture.title),
        moe=derivation.architecture.is_moe,
        activated=activated,
        embedding=embedding,
        relations=relations,
        assumed=frozenset(s.symbol for s in assume),
        per_layer=per_layer,
        leading_per_layer=leading(per_layer),
        leading_total=leading_total,
        per_dense_layer=per_dense,
        leading_per_dense_layer=None if per_dense is None else leading(per_dense),
        evaluations=evaluations,
        shares=_shares({g: reduce(e) for g, e in groups.items()}, top, model, activated),
    )


def _shares(groups: dict[str, Expr], top: Expr, model: Model | None, activated: bool) -> tuple[Share, ...]:
    """Each group's share of the d^top coefficient (with this model's layer counts), and of the exact count."""
    layers = {s: v for s, v in model.values.items() if s in (N, N_dense)} if model else {}
    coefficients = {g: expand(e).coeff(d, top).subs(layers) for g, e in groups.items()}
    whole = Add(*coefficients.values())
    actual: dict[str, int] = {}
    if model is not None:
        for c in model.counts.components:
            group = "embedding" if c.embedding else c.path.split("/")[0]
            actual[group] = actual.get(group, 0) + (c.activated if activated else c.count)
    total = sum(actual.values())
    return tuple(
        Share(g, cancel(coefficient / whole), Rational(actual[g], total) if model else None)
        for g, coefficient in coefficients.items()
    )


def _evaluate(leading_total: Expr, model: Model, activated: bool, embedding: bool) -> Evaluation:
    approx = leading_total.subs(model.values)
    if approx.free_symbols:
        names = ", ".join(sorted(map(str, approx.free_symbols)))
        raise LlmcountError(f"{model.name}: the approximation uses {names}, which this model has no value for")
    counts = model.counts
    exact = counts.activated if activated else counts.total
    return Evaluation(model.name, approx, exact if embedding else exact - counts.embedding)
