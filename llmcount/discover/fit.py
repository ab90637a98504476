"""Exact fits: a tensor dimension as a polynomial in config values, a derived default as a small expression.

Pure Python and sympy: no torch here, so the fitting is testable on its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from itertools import combinations, combinations_with_replacement
from math import gcd, isqrt

from sympy import Expr, Integer, Mul, Rational, Symbol, ceiling, floor
from sympy import sqrt as _sympy_sqrt

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


def fractions(extra: Sequence[float] = ()) -> list[Fraction]:
    """The constant factors :func:`multiple` tries: first the exact decimals of ``extra`` (the floats of a config that
    shape tensors: xLSTM's ffn_proj_factor 2.667 as 2667/1000, which small samples cannot tell from 8/3), then p/q for
    q up to 8 and p/q up to 4 (LFM2's 2/3)."""
    out: list[Fraction] = []
    for value in extra:
        found = Fraction(repr(float(value)))
        if 0 < found <= 64 and found.denominator <= 10**6 and found not in out:
            out.append(found)
    small = [Fraction(p, q) for q in range(1, 9) for p in range(1, 4 * q + 1) if gcd(p, q) == 1]
    return out + [c for c in small if c not in out]


def multiple(samples: Sequence[Sample], variables: Sequence[Symbol], constants: Sequence[Fraction] = ()) -> Expr | None:
    """A size rounded up to a multiple of one key: ``m * ceil(floor(c * x) / m)`` (LFM2's feed-forward width,
    ``int(2 * intermediate_size / 3)`` rounded up to ``block_multiple_of``), ``m * ceil(c * x / m)``, or ``m *
    floor((c * x + m - 1) / m)`` (xLSTM's ``hidden_size * ffn_proj_factor`` "rounded up" to
    ``ffn_round_up_to_multiple_of`` as ``(x + m - 1) // m * m`` of a float), with ``x`` another key and ``c``
    a constant of ``constants`` (default :func:`fractions`); of two keys only, when neither a polynomial nor a rounded
    quotient gives the samples. The first (``m`` and ``x`` in name order, ``c`` in the order given, floor first) that
    gives every sample's number; None when none does."""
    if len(variables) != 2:
        return None
    constants = list(constants) or fractions()
    variables = sorted(variables, key=lambda s: s.name)
    for m in variables:
        if any(values[m] <= 0 or y % values[m] for values, y in samples):
            continue
        (x,) = [s for s in variables if s != m]
        for c in constants:
            for way in ("floor", "ceil", "shift"):

                def rule(values, c=c, way=way, m=m, x=x):
                    value, step = c * values[x], values[m]
                    if way == "floor":  # int(c * x) of a positive x is floor(c * x)
                        return step * -(-(value.numerator // value.denominator) // step)
                    if way == "ceil":
                        return step * -(-value // step)
                    return step * ((value + step - 1) // step)  # (x + m - 1) // m * m of a float x

                if all(rule(values) == y for values, y in samples):
                    scaled = Rational(c.numerator, c.denominator) * x
                    if way == "floor":
                        return m * ceiling(floor(scaled) / m)
                    if way == "ceil":
                        return m * ceiling(scaled / m)
                    return m * floor((scaled + m - 1) / m)
    return None


def root(samples: Sequence[Sample], variables: Sequence[Symbol], max_degree: int = 2) -> tuple[Expr, Symbol] | None:
    """A polynomial in the integer square root of one key (and in the others): Doge's router, ``2 *
    floor(sqrt(num_experts))`` wide (the product keys of its experts), when no polynomial gives the samples. Returns
    the polynomial in a symbol standing for ``floor(sqrt(key))`` and that key's symbol (the record reads the root as
    a symbol of its own, its value adjusted); None when no key's root gives every sample's number."""
    variables = sorted(variables, key=lambda s: s.name)
    for key in variables:
        rooted = Symbol(f"_root_{key.name}", positive=True, integer=True)
        others = [s for s in variables if s != key]
        points = [({**values, rooted: isqrt(values[key])}, y) for values, y in samples]
        if len({p[0][rooted] for p in points}) < 2:  # one root seen: the samples cannot show it
            continue
        found = polynomial(points, [rooted, *others], max_degree)
        if found is None or rooted not in found.free_symbols:
            continue
        check = found.subs(rooted, floor(_sympy_sqrt(key)))
        if all(check.subs(values) == y for values, y in samples):
            return found, key
    return None


def _product(values: Mapping[Symbol, int], monomial: tuple[Symbol, ...]) -> int:
    out = 1
    for s in monomial:
        out *= values[s]
    return out


def derived(samples: Sequence[Sample], names: Sequence[Symbol]) -> str | None:
    """A default computed from other symbols, as record text: a constant, ``x``, ``c * x``, ``x + y``, ``x // y``,
    ``c * x // y``, ``x // c`` or ``(x + c - 1) // c``; the first
    (in that order, symbols in the order given) that gives every sample's value."""
    observed = [y for _, y in samples]
    if len(set(observed)) == 1:
        return str(observed[0])
    candidates: list[tuple[str, object]] = [(s.name, lambda v, s=s: v[s]) for s in names]
    candidates += [(f"{c} * {s.name}", lambda v, s=s, c=c: c * v[s]) for c in range(2, 9) for s in names]
    # the sum of two (LongCat-Flash's qk_head_dim: qk_nope_head_dim + qk_rope_head_dim unless given)
    candidates += [(f"{a.name} + {b.name}", lambda v, a=a, b=b: v[a] + v[b]) for a, b in combinations(names, 2)]
    candidates += [(f"{a.name} // {b.name}", lambda v, a=a, b=b: v[a] // v[b]) for a in names for b in names if a != b]
    # a multiple's share (Zamba's attention_head_dim: 2 * hidden_size // num_attention_heads unless given)
    candidates += [
        (f"{c} * {a.name} // {b.name}", lambda v, a=a, b=b, c=c: c * v[a] // v[b])
        for c in range(2, 5)
        for a in names
        for b in names
        if a != b
    ]
    divisors = [*range(2, 17), 32, 64, 128, 256]  # a fixed fraction, rounded down or up (Mamba's ceil(d / 16))
    candidates += [(f"{s.name} // {c}", lambda v, s=s, c=c: v[s] // c) for s in names for c in divisors]
    candidates += [(f"({s.name} + {c - 1}) // {c}", lambda v, s=s, c=c: -(-v[s] // c)) for s in names for c in divisors]
    for text, rule in candidates:
        if all(rule(values) == y for values, y in samples):
            return text
    return None
