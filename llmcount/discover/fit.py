"""Exact fits: a tensor dimension as a polynomial in config values, a derived default as a small expression.

Pure Python and sympy: no torch here, so the fitting is testable on its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from itertools import combinations, combinations_with_replacement

from sympy import Expr, Integer, Mul, Rational, Symbol, ceiling, floor

Sample = tuple[Mapping[Symbol, int], int]  # the values of the symbols, the observed number


def _monomials(variables: Sequence[Symbol], degree: int) -> list[tuple[Symbol, ...]]:
    out: list[tuple[Symbol, ...]] = []
    for g in range(degree + 1):
        out.extend(combinations_with_replacement(variables, g))
    return out


def _solve(rows: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None:
    """The exact least-squares solution (normal equations), None when the columns are dependent."""
    m = len(rows[0])
    a = [
        [sum(r[i] * r[j] for r in rows) for j in range(m)] + [sum(r[i] * y for r, y in zip(rows, rhs, strict=True))]
        for i in range(m)
    ]
    for col in range(m):
        pivot = next((r for r in range(col, m) if a[r][col] != 0), None)
        if pivot is None:
            return None
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(m):
            if r != col and a[r][col] != 0:
                f = a[r][col] / a[col][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col], strict=True)]
    return [a[i][m] / a[i][i] for i in range(m)]


def _independent(rows: list[list[Fraction]]) -> list[int]:
    """The columns of ``rows``, in order, each kept when it is independent of the columns kept before it."""
    basis: list[tuple[int, list[Fraction]]] = []  # (pivot row, reduced column) of the kept columns
    kept = []
    for j in range(len(rows[0])):
        column = [r[j] for r in rows]
        for pivot, reduced in basis:
            if column[pivot]:
                f = column[pivot] / reduced[pivot]
                column = [x - f * y for x, y in zip(column, reduced, strict=True)]
        pivot = next((i for i, x in enumerate(column) if x), None)
        if pivot is not None:
            basis.append((pivot, column))
            kept.append(j)
    return kept


def polynomial(samples: Sequence[Sample], variables: Sequence[Symbol], max_degree: int = 3) -> Expr | None:
    """The polynomial of lowest degree (at most ``max_degree``) in ``variables`` with exact rational coefficients
    that gives every sample's number; None when none does (or the samples cannot tell the monomials apart)."""
    variables = sorted(variables, key=lambda s: s.name)
    for degree in range(max_degree + 1):
        monomials = _monomials(variables, degree)
        if len(monomials) > len(samples):
            return None
        rows = [[Fraction(_product(values, m)) for m in monomials] for values, _ in samples]
        rhs = [Fraction(y) for _, y in samples]
        coefficients = _solve(rows, rhs)
        if coefficients is None:  # monomials the samples cannot tell apart (h² and h with h only 2 or 3): the
            kept = _independent(rows)  # lowest of them, each kept when the samples tell it from those before it
            coefficients = _solve([[r[i] for i in kept] for r in rows], rhs)
            if coefficients is None:
                continue
            monomials = [monomials[i] for i in kept]
            rows = [[r[i] for i in kept] for r in rows]
        if all(
            sum(c * x for c, x in zip(coefficients, row, strict=True)) == y for row, y in zip(rows, rhs, strict=True)
        ):
            return sum(
                (
                    Rational(c.numerator, c.denominator) * Mul(*m)
                    for c, m in zip(coefficients, monomials, strict=True)
                    if c
                ),
                Integer(0),
            )
    return None


def quotient(samples: Sequence[Sample], variables: Sequence[Symbol], max_degree: int = 3) -> Expr | None:
    """A polynomial divided by one of ``variables`` (a size shared out over heads: ``w / h``), when no polynomial
    gives the samples; the first divisor (in name order) that gives every sample's number exactly."""
    for divisor in sorted(variables, key=lambda s: s.name):
        scaled = [(values, y * values[divisor]) for values, y in samples]
        found = polynomial(scaled, variables, max_degree)
        if found is not None and found != 0:
            expr = found / divisor
            if all(expr.subs(values) == y for values, y in samples):
                return expr
    return None


def rounded(samples: Sequence[Sample], variables: Sequence[Symbol], max_degree: int = 2) -> Expr | None:
    """A polynomial in one key (or a product of two) divided by another and rounded down or up (XMOD's adapter width
    ``hidden_size // adapter_reduction_factor``) and in the other keys, when neither a polynomial nor a quotient gives
    the samples: the first pair (in name order, floor before ceil) whose rounded quotient, taken as one more variable,
    makes a polynomial that gives every sample's number."""
    variables = sorted(variables, key=lambda s: s.name)
    ratio = Symbol("_ratio", positive=True, integer=True)
    # the numerator: one key, else a product of two (DeepSeek-V4's num_attention_heads * head_dim // o_groups)
    tops = [(s,) for s in variables] + list(combinations_with_replacement(variables, 2))
    for top in tops:
        for divisor in variables:
            if divisor in top:
                continue
            others = [s for s in variables if s not in (*top, divisor)]
            for rounding, op in ((floor, lambda a, b: a // b), (ceiling, lambda a, b: -(-a // b))):
                points = [({**values, ratio: op(_product(values, top), values[divisor])}, y) for values, y in samples]
                found = polynomial(points, [ratio, *others], max_degree)
                if found is None or ratio not in found.free_symbols:
                    continue
                expr = found.subs(ratio, rounding(Mul(*top) / divisor))
                if all(expr.subs(values) == y for values, y in samples):
                    return expr
    return None


def _product(values: Mapping[Symbol, int], monomial: tuple[Symbol, ...]) -> int:
    out = 1
    for s in monomial:
        out *= values[s]
    return out


def derived(samples: Sequence[Sample], names: Sequence[Symbol]) -> str | None:
    """A default computed from other symbols, as record text: a constant, ``x``, ``c * x``, ``x + y``, ``x // y``,
    ``x // c`` or ``(x + c - 1) // c``; the first
    (in that order, symbols in the order given) that gives every sample's value."""
    observed = [y for _, y in samples]
    if len(set(observed)) == 1:
        return str(observed[0])
    candidates: list[tuple[str, object]] = [(s.name, lambda v, s=s: v[s]) for s in names]
    candidates += [(f"{c} * {s.name}", lambda v, s=s, c=c: c * v[s]) for c in range(2, 9) for s in names]
    # the sum of two (LongCat-Flash's qk_head_dim: qk_nope_head_dim + qk_rope_head_dim unless given)
    candidates += [(f"{a.name} + {b.name}", lambda v, a=a, b=b: v[a] + v[b]) for a, b in combinations(names, 2)]
    candidates += [(f"{a.name} // {b.name}", lambda v, a=a, b=b: v[a] // v[b]) for a in names for b in names if a != b]
    divisors = [*range(2, 17), 32, 64, 128, 256]  # a fixed fraction, rounded down or up (Mamba's ceil(d / 16))
    candidates += [(f"{s.name} // {c}", lambda v, s=s, c=c: v[s] // c) for s in names for c in divisors]
    candidates += [(f"({s.name} + {c - 1}) // {c}", lambda v, s=s, c=c: -(-v[s] // c)) for s in names for c in divisors]
    for text, rule in candidates:
        if all(rule(values) == y for values, y in samples):
            return text
    return None
