"""The compiled forms (:mod:`llmcount.evaluate`: plain Python generated from each term's sympy expression, built
once per expression) give exactly what sympy's ``subs`` gives: for every term of every family record at drawn
integer values, for every bundled preset's whole count, and through the fallbacks (a value that is not an int, a
missing value, a zero divisor, a node the numeric path does not take)."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from sympy import Function, Integer, Max, Min, Rational, Symbol, ceiling, floor

from llmcount import evaluate
from llmcount.formulas import derivation, records
from llmcount.formulas.derivation import evaluate_int
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
            evaluator = evaluate.compiled(expr)
            assert evaluator is not None, f"{family} {choice.term.path}: {expr} is not compiled"
            for _ in range(5):
                values = {s: rng.choice([1, 2, 3, 7, 64, 4096, 151_936, 2**40]) for s in expr.free_symbols}
                by_name = {s.name: v for s, v in values.items()}
                assert Fraction(evaluator(by_name)) == subs_value(expr, values), (family, choice.term.path, values)


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
    assert evaluate.compiled(d * k / n) is not None
    assert evaluate.named({d: Integer(6), k: 2, n: 4}) is None
    assert evaluate.named({d: True}) is None
    assert evaluate_int(d * k / n, {d: Integer(6), k: 2, n: 4}, "x") == 3


def test_a_missing_value_and_a_zero_divisor_are_refused_by_subs() -> None:
    with pytest.raises(ValueError, match="does not evaluate to an integer"):
        evaluate_int(d * k / n, {d: 6, k: 2}, "x")
    with pytest.raises(ValueError, match="does not evaluate to an integer"):
        evaluate_int(d * k / n, {d: 6, k: 2, n: 0}, "x")


@pytest.mark.parametrize(
    "expr",
    [
        floor(d / 2) + Max(d, n),
        ceiling(d / 3) * Min(n, k - 1),
        Rational(1, 2) * d**2 - d**-1 * n,
        floor((d - 1) / k) - ceiling(-n / 3),
    ],
)
def test_roundings_and_extremes_are_compiled_and_agree_with_subs(expr) -> None:
    assert evaluate.compiled(expr) is not None
    rng = random.Random(str(expr))
    for _ in range(20):
        values = {s: rng.choice([1, 2, 3, 5, 7, 64, 4097]) for s in (d, n, k)}
        by_name = {s.name: v for s, v in values.items()}
        assert Fraction(evaluate.value(expr, by_name)) == subs_value(expr, values), values


def test_a_node_the_numeric_path_does_not_take_is_left_to_subs() -> None:
    assert evaluate.compiled(Function("f")(d) + d) is None
    assert evaluate.compiled(d ** Rational(1, 2)) is None
    assert evaluate_int(d ** Rational(1, 2), {d: 49}, "x") == 7


def test_a_cached_text_that_is_not_what_source_writes_is_refused() -> None:
    for text in ("__import__('os')", "v.clear()", "[1][0]", "v['d'].bit_length()", "'a' * 9"):
        with pytest.raises(evaluate.NotCompiled):
            evaluate.from_source(text)
    assert evaluate.from_source(evaluate.source(d * k / n))({"d": 6, "k": 2, "n": 4}) == 3


def test_reading_and_counting_a_config_calls_no_subs_once_its_records_are_loaded(monkeypatch) -> None:
    """Every preset read and counted with sympy's ``subs`` made to fail: the numbers come from the compiled forms
    (the activation tables' sizes are not evaluated for a count). The first pass loads the records and builds each
    selection's terms (a symbolic substitution of layer counts, once per selection)."""
    from sympy.core.basic import Basic

    first = {name: load(name).counts for name in presets()}

    def no_subs(self, *args, **kwargs):
        raise AssertionError(f"subs on {self}")

    monkeypatch.setattr(Basic, "subs", no_subs)
    again = {name: load(name).counts for name in presets()}
    assert again == first
