"""Check a hand-written formula against a model's exact count, term by term.

The user's formula and the exact one are expanded and compared monomial by monomial. Monomials the
user wrote in the model's own symbols are matched first (``2*h*h_d*d`` is q_proj and o_proj). If
what is left on both sides uses different monomials (``11.5*d**2`` against ``d*h*h_d``, ``d*d_ff``,
...), the leftovers are compared again under this config's structural ratios (``d_ff = 3*d``,
``h = d/h_d``, ``h_kv = h/4``), where they become polynomials in d. Each missing monomial is
attributed to the components (derivation term paths) it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass

from sympy import Expr, Integer, Rational, Symbol, expand

from ..errors import LlmcountError
from ..formulas.config import Model
from ..formulas.symbols import d_ff, d_moe
from ..shown import Shown
from . import number, relative
from .parse import Vocabulary, bounded, parse_formula
from .relations import config_ratios, resolve


@dataclass(frozen=True)
class Difference:
    """A monomial one side has and the other has not, the components it comes from, its value here."""

    term: Expr
    components: tuple[str, ...]
    count: Expr

    def data(self) -> dict:
        return {
            "component": ", ".join(self.components),
            "components": list(self.components),
            "term": str(self.term),
            "count": number(self.count),
        }


@dataclass(frozen=True)
class Check(Shown):
    model: str
    formula: str  # as the user typed it
    claimed_formula: Expr
    exact_formula: Expr
    activated: bool
    exact: int
    claimed: Expr  # exact rational: 11.5 is 23/2
    missing: tuple[Difference, ...]
    extra: tuple[Difference, ...]
    ratios: dict[Symbol, Expr]  # non-empty when the leftovers were compared under the config's ratios
    notes: tuple[str, ...] = ()  # how the formula's symbols were read, when not literally

    @property
    def difference(self) -> Expr:
        return self.claimed - self.exact

    @property
    def relative_error(self) -> float:
        return relative(self.claimed, self.exact)

    def data(self) -> dict:
        return {
            "model": self.model,
            "count": "activated" if self.activated else "total",
            "formula": self.formula,
            "parsed": str(self.claimed_formula),
            "exact_formula": str(self.exact_formula),
            "exact": self.exact,
            "claimed": number(self.claimed),
            "difference": number(self.difference),
            "relative_error": self.relative_error,
            "missing": [m.data() for m in self.missing],
            "extra": [e.data() for e in self.extra],
            "compared_under_ratios": {s.name: str(e) for s, e in self.ratios.items()},
            "notes": list(self.notes),
        }


def check(model: Model, formula: str, activated: bool = False) -> Check:
    """Compare ``formula`` (the user's) with the model's exact total, or activated, count."""
    known = Vocabulary.of(model.values, model.name)
    claimed_formula, notes = _expert_width(model, parse_formula(formula, known=known))
    _require_values(model, claimed_formula)
    where = f"formula {formula!r} on {model.name}"
    for term in (claimed_formula, *_monomials(expand(claimed_formula))):
        bounded(term.subs(model.values), where)
    derivation = model.derivation
    exact_formula = derivation.activated if activated else derivation.total
    parts = [(t.path, expand(t.activated if activated else t.total)) for t in derivation.terms]
    missing, extra, ratios = _compare(parts, expand(claimed_formula), model)
    counts = model.counts
    return Check(
        model=model.name,
        formula=formula,
        claimed_formula=claimed_formula,
        exact_formula=exact_formula,
        activated=activated,
        exact=counts.activated if activated else counts.total,
        claimed=claimed_formula.subs(model.values),
        missing=missing,
        extra=extra,
        ratios=ratios,
        notes=notes,
    )


def _expert_width(model: Model, formula: Expr) -> tuple[Expr, tuple[str, ...]]:
    """Blog posts write an expert's width as d_ff; in a model with no dense MLP it can only mean d_moe."""
    if d_ff in formula.free_symbols and d_ff not in model.values and d_moe in model.values:
        note = f"d_ff read as the expert width d_moe = {model.values[d_moe]} ({model.name} has no dense MLP)"
        return formula.subs(d_ff, d_moe), (note,)
    return formula, ()


def _require_values(model: Model, formula: Expr) -> None:
    unknown = sorted(formula.free_symbols - set(model.values), key=str)
    if not unknown:
        return
    names = ", ".join(map(str, unknown))
    known = ", ".join(s.name for s in model.values)
    raise LlmcountError(f"formula uses {names}, which {model.name} has no value for; its symbols: {known}")


def _monomials(expr: Expr) -> dict[Expr, Expr]:
    """``{monomial: coefficient}`` of an expanded sum, without zeros."""
    return {m: c for m, c in expr.as_coefficients_dict().items() if c != 0}


Sources = dict[Expr, list[str]]


def _compare(parts: list[tuple[str, Expr]], claimed: Expr, model: Model):
    """``(missing, extra, ratios)``: first in the raw symbols, then, if both sides keep leftovers, under ratios."""
    exact: dict[Expr, Expr] = {}
    sources: Sources = {}
    for path, expr in parts:
        for m, c in _monomials(expr).items():
            exact[m] = exact.get(m, Integer(0)) + c
            sources.setdefault(m, []).append(path)
    user = _monomials(claimed)
    for m in set(exact) & set(user):
        matched = min(exact[m], user[m]) if exact[m] > 0 and user[m] > 0 else 0
        exact[m] -= matched
        user[m] -= matched
    exact = {m: c for m, c in exact.items() if c != 0}
    user = {m: c for m, c in user.items() if c != 0}
    if not (exact and user):
        return _differences(exact, sources, model), _differences(user, {}, model), {}

    ratios = config_ratios(model.values, model.derivation.symbols)
    resolved = resolve(ratios)
    reduced: dict[Expr, Expr] = {}
    reduced_sources: Sources = {}
    for m, c in exact.items():
        for rm, rc in _monomials(expand(c * m.subs(resolved))).items():
            reduced[rm] = reduced.get(rm, Integer(0)) + rc
            paths = reduced_sources.setdefault(rm, [])
            paths += [p for p in sources.get(m, []) if p not in paths]
    for m, c in user.items():
        for rm, rc in _monomials(expand(c * m.subs(resolved))).items():
            reduced[rm] = reduced.get(rm, Integer(0)) - rc
    missing = {m: c for m, c in reduced.items() if c > 0}
    extra = {m: -c for m, c in reduced.items() if c < 0}
    return _differences(missing, reduced_sources, model), _differences(extra, {}, model), ratios


def _differences(monomials: dict[Expr, Expr], sources: Sources, model: Model) -> tuple[Difference, ...]:
    """Differences in reader's order: by the first component each comes from."""
    paths = [t.path for t in model.derivation.terms]

    def position(m: Expr) -> tuple[int, str]:
        found = sources.get(m)
        return (paths.index(found[0]) if found else len(paths), str(m))

    return tuple(
        Difference(c * m, tuple(sorted(sources.get(m, ()), key=paths.index)), Rational(c * m.subs(model.values)))
        for m, c in sorted(monomials.items(), key=lambda item: position(item[0]))
    )
