"""Invert a formula: which value of one size gives a target count, given the others or relations.

The count, with every other symbol set (numbers from ``--set`` or a base config, relations such as
``d_ff = 8/3*d`` substituted), is a polynomial in the unknown x; its exact real roots of at least 1
are the solutions. Around each, the nearest admissible values (multiples of ``multiple_of`` at which
every related size is a whole positive number) are the candidates, with the exact count each gives.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sympy import Dummy, Expr, Poly, PolynomialError, Symbol, ceiling, expand, floor, fraction, together
from sympy import real_roots as sympy_real_roots

from ..errors import LlmcountError
from ..formulas.derivation import Derivation
from . import number
from .parse import Setting, minimum, symbol_named
from .relations import head_dim_convention, resolve, split, unknown

MAX_STEPS = 10_000  # how far from a root to look for an admissible value


@dataclass(frozen=True)
class Candidate:
    value: int
    total: int
    target: Expr

    @property
    def difference(self) -> Expr:
        return self.total - self.target

    def data(self) -> dict:
        return {"value": self.value, "total": self.total, "difference": number(self.difference)}


@dataclass(frozen=True)
class Skip:
    """A value passed over: a related size (or the count itself, when ``symbol`` is None) is not whole there."""

    value: int
    symbol: Symbol | None
    relation: Expr | None
    size: Expr

    @property
    def reason(self) -> str:
        if self.symbol is None:
            return f"the count {self.size} is not a whole number"
        return f"{self.symbol} = {self.relation} = {self.size} is not a whole number of at least {minimum(self.symbol)}"


@dataclass(frozen=True)
class Solution:
    title: str
    symbol: Symbol
    target: Expr
    activated: bool
    multiple_of: int
    numbers: dict[Symbol, int]
    relations: dict[Symbol, Expr]
    assumed: dict[Symbol, Expr]  # conventions applied because nothing set them
    formula: Expr  # the count as a polynomial in the symbol
    roots: tuple[Expr, ...]
    candidates: tuple[Candidate, ...]
    skipped: tuple[Skip, ...]  # values passed over, and why

    @property
    def exact(self) -> Expr:
        return self.roots[0]

    def data(self) -> dict:
        return {
            "model": self.title,
            "count": "activated" if self.activated else "total",
            "symbol": self.symbol.name,
            "target": number(self.target),
            "values": {s.name: v for s, v in self.numbers.items()},
            "relations": {s.name: str(e) for s, e in {**self.relations, **self.assumed}.items()},
            "assumed": [s.name for s in self.assumed],
            "formula": str(self.formula),
            "exact": str(self.exact),
            "exact_float": float(self.exact),
            "solutions": [str(r) for r in self.roots],
            "multiple_of": self.multiple_of,
            "candidates": [c.data() for c in self.candidates],
            "skipped": [{"value": skip.value, "reason": skip.reason} for skip in self.skipped],
        }


def solve(
    derivation: Derivation,
    symbol: str,
    target: Expr,
    settings: Iterable[Setting] = (),
    base: dict[Symbol, int] | None = None,
    activated: bool = False,
    multiple_of: int = 1,
    title: str = "",
) -> Solution:
    """Solve ``count = target`` for ``symbol``; every other symbol comes from ``settings`` or ``base``."""
    x = symbol_named(symbol, "--for")
    name = title or derivation.architecture.title
    if x not in derivation.symbols:
        used = ", ".join(s.name for s in derivation.symbols)
        raise LlmcountError(f"--for {symbol}: {x} is not in the {name} formula; its symbols: {used}")
    if multiple_of < 1:
        raise LlmcountError(f"--multiple-of {multiple_of}: must be at least 1")
    numbers_given, relations = split(settings)
    if x in numbers_given or x in relations:
        raise LlmcountError(f"--for {x} and --set {x}=...: the symbol solved for cannot also be set")
    numbers = {s: v for s, v in (base or {}).items() if s != x and s in derivation.symbols}
    numbers.update({s: values[0] for s, values in numbers_given.items()})
    for s in relations:
        numbers.pop(s, None)
    assumed = head_dim_convention(derivation, [*numbers, *relations, x])
    resolved = {s: expand(e.subs(numbers)) for s, e in resolve({**relations, **assumed}).items()}
    count = derivation.activated if activated else derivation.total
    formula = expand(count.subs(resolved).subs(numbers))
    missing = formula.free_symbols - {x}
    if missing:
        raise unknown(missing, f"the {name} formula")
    if x not in formula.free_symbols:
        raise LlmcountError(f"the {name} count does not depend on {x} with these settings")

    roots = _roots(formula - target, x)
    kind = "activated" if activated else "total"
    if not roots:
        raise LlmcountError(f"no positive value of {x} gives a {kind} count of {number(target)}")
    if all(r < 1 for r in roots):
        at_one = number(formula.subs(x, 1))
        raise LlmcountError(f"no whole {x} gives a {kind} count of {number(target)}: {x} = 1 already gives {at_one}")
    checks = {s: e for s, e in resolved.items() if e.free_symbols <= {x}}
    candidates: list[Candidate] = []
    skipped: list[Skip] = []
    for root in (r for r in roots if r >= 1):
        for value in _nearest(root, multiple_of, formula, checks, x, skipped):
            if value not in [c.value for c in candidates]:
                candidates.append(Candidate(value, int(formula.subs(x, value)), target))
    return Solution(
        title=name,
        symbol=x,
        target=target,
        activated=activated,
        multiple_of=multiple_of,
        numbers=numbers,
        relations=relations,
        assumed=assumed,
        formula=formula,
        roots=tuple(roots),
        candidates=tuple(candidates),
        skipped=tuple(skipped),
    )


def _roots(expr: Expr, x: Symbol) -> list[Expr]:
    """The exact positive real roots of ``expr`` (a polynomial in x once denominators are cleared)."""
    real = Dummy(x.name, positive=True)  # x itself is an integer: sympy would find no root
    numerator, _ = fraction(together(expr.subs(x, real)))
    try:
        poly = Poly(numerator, real)
    except PolynomialError:
        raise LlmcountError(f"the count is not a polynomial in {x} with these settings; cannot solve") from None
    if poly.free_symbols - {real}:
        raise unknown(poly.free_symbols - {real}, "the formula")
    roots = sorted({r for r in sympy_real_roots(poly) if r > 0}, key=float)
    return [r.subs(real, x) for r in roots]


def _nearest(root: Expr, step: int, formula: Expr, checks: dict[Symbol, Expr], x: Symbol, skipped: list) -> list[int]:
    """The admissible multiples of ``step`` just below and just above ``root`` (one if it is one)."""
    below, above = int(floor(root / step)) * step, int(ceiling(root / step)) * step
    found = []
    for start, direction in ((below, -step), (above, step)):
        value = start
        for _ in range(MAX_STEPS):
            if value < max(step, 1):
                break
            skip = _inadmissible(value, formula, checks, x)
            if skip is None:
                found.append(value)
                break
            if skip not in skipped:
                skipped.append(skip)
            value += direction
    return sorted(set(found))


def _inadmissible(value: int, formula: Expr, checks: dict[Symbol, Expr], x: Symbol) -> Skip | None:
    """Why ``x = value`` makes no model (a related size that is not a whole positive number), or None."""
    for symbol, expr in checks.items():
        size = expr.subs(x, value)
        if not size.is_Integer or size < minimum(symbol):
            return Skip(value, symbol, expr, size)
    count = formula.subs(x, value)
    return None if count.is_Integer else Skip(value, None, None, count)
