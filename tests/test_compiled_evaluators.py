"""The compiled evaluators (plain-Python closures built from each term's sympy expression, built once per distinct
selection of terms) give exactly what sympy's ``subs`` gives: for every term of every family record at drawn
integer values, for every bundled preset's whole count, and through the fallbacks (a value that is not an int, a
missing value, a zero divisor, an expression that is not a polynomial)."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from sympy import Integer, Max, Rational, Symbol, floor

from llmcount.formulas import derivation, records
from llmcount.formulas.derivation import _evaluator, evaluate_int
from llmcount.presets import presets
from llmcount.sources import load


def subs_value(expr, values) -> Fraction:
    value = expr.subs(values)
    assert value.is_Rational, (expr, value)
    return Fraction(int(value.p), int(value.q))


@pytest.mark.parametrize("family", [f.name for f in records.families()])
def test_every_term_of_every_record_agrees_with_subs(family: str) -> None:
    rng = random.Random(family)
    for choice in records.family(family).choices:
        for expr in (choice.term.total, choice.term.activated):
            evaluator = _evaluator(expr)
            assert evaluator is not None, f"{family} {choice.term.path}: {expr} is not compiled"
            for _ in range(5):
                values = {s: rng.choice([1, 2, 3, 7, 64, 4096, 151_936, 2**40]) for s in expr.free_symbols}
                assert Fraction(evaluator(values)) == subs_value(expr, values), (family, choice.term.path, values)


@pytest.mark.parametrize("name", sorted(presets()))
def test_every_preset_counts_the_same_by_subs(name: str, monkeypatch) -> None:
    fast = load(name).counts
    model = load(name)  # a fresh Model: counts is cached per model
    monkeypatch.setattr(derivation, "_evaluate_compiled", lambda terms, values: None)
    slow = model.counts
    assert fast == slow
    assert all(type(c.count) is int and type(c.activated) is int for c in fast.components)


d, n, k = Symbol("d"), Symbol("n"), Symbol("k")


def test_a_fraction_that_is_whole_is_an_int() -> None:
    assert evaluate_int(d * k / n, {d: 6, k: 2, n: 4}, "x") == 3
    assert type(evaluate_int(d * k / n, {d: 6, k: 2, n: 4}, "x")) is int


def test_a_fraction_that_is_not_whole_is_refused_as_before() -> None:
    with pytest.raises(ValueError, match="does not evaluate to an integer: d\\*k/n = 3/2"):
        evaluate_int(d * k / n, {d: 3, k: 2, n: 4}, "x")


def test_values_that_are_not_ints_go_to_subs() -> None:
    assert _evaluator(d * k / n) is not None
    assert evaluate_int(d * k / n, {d: Integer(6), k: 2, n: 4}, "x") == 3


def test_a_missing_value_and_a_zero_divisor_are_refused_by_subs() -> None:
    with pytest.raises(ValueError, match="does not evaluate to an integer"):
        evaluate_int(d * k / n, {d: 6, k: 2}, "x")
    with pytest.raises(ValueError, match="does not evaluate to an integer"):
        evaluate_int(d * k / n, {d: 6, k: 2, n: 0}, "x")


def test_an_expression_that_is_not_a_polynomial_is_left_to_subs() -> None:
    assert _evaluator(floor(d / 2) + Max(d, n)) is None
    assert evaluate_int(floor(d / 2) + Max(d, n), {d: 7, n: 3}, "x") == 3 + 7
    assert _evaluator(Rational(1, 2) * d**2 - d**-1 * n) is not None
    assert evaluate_int(Rational(1, 2) * d**2 - d**-1 * n, {d: 4, n: 8}, "x") == 8 - 2
