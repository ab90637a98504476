"""Invert a formula: which value of one size gives a target count, given the others or relations.

The count, with every other symbol set (numbers from ``--set`` or a base config, relations such as
``d_ff = 8/3*d`` substituted), is a polynomial in the unknown x; its exact real roots of at least 1
are the solutions. Around each, the nearest admissible values (multiples of ``multiple_of`` at which
every related size is a whole positive number) are the candidates, with the exact count each gives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction

from sympy import (
    Dummy,
    Expr,
    Integer,
    Poly,
    PolynomialError,
    Rational,
    Symbol,
    ceiling,
    expand,
    floor,
    fraction,
    together,
    zoo,
)
from sympy import real_roots as sympy_real_roots

from ..errors import LlmcountError
from ..formulas.derivation import Derivation
from . import number
from .parse import Setting, Vocabulary, minimum, symbol_named
from .relations import CONSTRAINTS, head_dim_convention, resolve, split, unknown

MAX_STEPS = 10_000  # how far from a root to look for an admissible value
SKIPPED_SHOWN = 5  # values passed over that the text output lists


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
    problem: str | None = None  # a rule every model obeys, broken (h not divisible by h_kv)

    @property
    def reason(self) -> str:
        if self.problem is not None:
            return self.problem
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
    def skipped_shown(self) -> tuple[Skip, ...]:
        """The first few values passed over: the text output lists these and counts the rest."""
        return self.skipped[:SKIPPED_SHOWN]

    @property
    def skipped_more(self) -> int:
        return len(self.skipped) - len(self.skipped_shown)

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
    name = title or derivation.architecture.title
    x = symbol_named(symbol, f"--for {symbol}", Vocabulary.of(derivation.symbols, name))
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
    admissible = _Admissible(x, formula, {s: e for s, e in resolved.items() if e.free_symbols <= {x}}, numbers)
    candidates: list[Candidate] = []
    for root in (r for r in roots if r >= 1):
        for value in _nearest(root, multiple_of, admissible):
            if value not in [c.value for c in candidates]:
                candidates.append(Candidate(value, int(formula.subs(x, value)), target))
    if not candidates:
        why = (admissible.bounds or [skip.reason for skip in admissible.skipped])[0]
        raise LlmcountError(f"no valid model has a {kind} count near {number(target)}: {why}")
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
        skipped=admissible.skipped,
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


class _Admissible:
    """Which values of ``x`` make a model: every related size a whole positive number, a whole count, and
    the rules of :data:`CONSTRAINTS`. Remembers the values passed over and the bounds met.

    Sizes that do not depend on x are checked once, up front; the others are evaluated exactly with
    Python fractions (the search may try thousands of values).
    """

    def __init__(self, x: Symbol, formula: Expr, checks: dict[Symbol, Expr], numbers: dict[Symbol, int]):
        self.x, self.formula, self.checks = x, formula, checks
        self.passed: dict[Skip, None] = {}  # an ordered set
        self.bounds: list[str] = []
        constant = {s: e for s, e in checks.items() if not e.free_symbols}
        for symbol, size in constant.items():
            if not size.is_Integer or size < minimum(symbol):
                raise LlmcountError(Skip(0, symbol, size, size).reason.replace(f" = {size} = ", " = ", 1))
        self.sizes = {**numbers, **{s: int(e) for s, e in constant.items()}}
        for rule in CONSTRAINTS:
            if rule.a in self.sizes and rule.b in self.sizes and rule.broken(self.sizes[rule.a], self.sizes[rule.b]):
                raise LlmcountError(rule.message(self.sizes[rule.a], self.sizes[rule.b]))
        self.varying = {s: _evaluator(e, x) for s, e in checks.items() if s not in constant}
        self.count = _evaluator(formula, x)

    def __call__(self, value: int) -> bool | None:
        """True if ``value`` is admissible; False if it is passed over; None if it breaks a bound (stop there)."""
        skip, sizes = self._whole(value)
        for rule in CONSTRAINTS if skip is None else ():
            if rule.a in sizes and rule.b in sizes and rule.broken(sizes[rule.a], sizes[rule.b]):
                problem = rule.message(sizes[rule.a], sizes[rule.b])
                if rule.bound:
                    self.bounds.append(problem if self.x in (rule.a, rule.b) else f"at {self.x} = {value}, {problem}")
                    return None
                skip = Skip(value, None, None, Integer(value), problem)
                break
        if skip is None:
            return True
        self.passed[skip] = None
        return False

    @property
    def skipped(self) -> tuple[Skip, ...]:
        return tuple(self.passed)

    def _whole(self, value: int) -> tuple[Skip | None, dict[Symbol, int]]:
        """Why ``x = value`` is no model (a related size or the count not a whole number), and the sizes there."""
        sizes = {**self.sizes, self.x: value}
        for symbol, evaluate in self.varying.items():
            size = evaluate(value)
            if size is None or size.denominator != 1 or size < minimum(symbol):
                exact = zoo if size is None else Rational(size.numerator, size.denominator)
                return Skip(value, symbol, self.checks[symbol], exact), sizes
            sizes[symbol] = int(size)
        count = self.count(value)
        if count is None or count.denominator != 1:
            return Skip(
                value, None, None, zoo if count is None else Rational(count.numerator, count.denominator)
            ), sizes
        return None, sizes


def _evaluator(expr: Expr, x: Symbol) -> Callable[[int], Fraction | None]:
    """``expr`` (a ratio of polynomials in x) at a whole x, exactly, as a Fraction; None where it is undefined."""
    numerator, denominator = (
        [Fraction(int(c.p), int(c.q)) for c in Poly(part, x).all_coeffs()] for part in fraction(together(expr))
    )

    def horner(coefficients: list[Fraction], value: int) -> Fraction:
        result = Fraction(0)
        for c in coefficients:
            result = result * value + c
        return result

    def evaluate(value: int) -> Fraction | None:
        below = horner(denominator, value)
        return horner(numerator, value) / below if below else None

    return evaluate


def _nearest(root: Expr, step: int, admissible: _Admissible) -> list[int]:
    """The admissible multiples of ``step`` just below and just above ``root`` (one if it is one)."""
    below, above = int(floor(root / step)) * step, int(ceiling(root / step)) * step
    found = []
    for start, direction in ((below, -step), (above, step)):
        value = start
        for _ in range(MAX_STEPS):
            if value < max(step, 1):
                break
            verdict = admissible(value)
            if verdict is None:
                break
            if verdict:
                found.append(value)
                break
            value += direction
    return sorted(set(found))
