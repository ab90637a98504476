"""The numeric path: a record's expressions as plain Python over exact integers.

An expression the records hold (parsed and checked by the record's safe parser into sympy) is compiled once into a
line of Python source over one mapping of values keyed by symbol name: integers, ``+ - *``, integer powers,
``Fraction`` where it divides (k/n, h_d/2), ``floor``, ``ceil``, ``min`` and ``max``. The source is made by walking
the sympy tree node by node (:func:`source`), never from user text, so it can be kept in a cache and compiled again
(:func:`from_source`) without importing sympy. Evaluating gives an ``int`` or, when a quotient is not whole, a
``Fraction`` (the caller words the refusal); a missing value raises ``KeyError``, a zero divisor
``ZeroDivisionError``.

This module imports no sympy: :func:`source` takes a sympy expression it is handed and reads only its attributes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

Compiled = Callable[[Mapping[str, int]], "int | Fraction"]


class NotCompiled(ValueError):
    """An expression with a node the numeric path does not take (sympy evaluates it)."""


def _floor(x: int | Fraction) -> int:
    return x if type(x) is int else math.floor(x)


def _ceil(x: int | Fraction) -> int:
    return x if type(x) is int else math.ceil(x)


def _inverse(x: int | Fraction) -> Fraction:
    return Fraction(1, x) if type(x) is int else 1 / x


_NAMESPACE: dict[str, Any] = {
    "__builtins__": {},
    "F": Fraction,
    "floor": _floor,
    "ceil": _ceil,
    "inv": _inverse,
    "min": min,
    "max": max,
}
_FUNCTIONS = {"floor": "floor", "ceiling": "ceil", "Min": "min", "Max": "max"}
MAX_SOURCE = 100_000  # characters of one compiled expression (the bundled records' longest is a few hundred)


def source(expr: Any) -> str:
    """Python source of a sympy expression over ``v``, the values by symbol name; :class:`NotCompiled` for a node
    other than an integer, a rational, a symbol, a sum, a product, an integer power, floor, ceiling, Min, Max."""
    text = _source(expr)
    if len(text) > MAX_SOURCE:
        raise NotCompiled(f"an expression of {len(text):,} characters")
    return text


def _source(expr: Any) -> str:
    if expr.is_Integer:
        return f"({int(expr)})"
    if expr.is_Rational:
        return f"F({int(expr.p)}, {int(expr.q)})"
    if expr.is_Symbol:
        return f"v[{expr.name!r}]"
    if expr.is_Add:
        return "(" + " + ".join(_source(arg) for arg in expr.args) + ")"
    if expr.is_Mul:
        return "(" + " * ".join(_source(arg) for arg in expr.args) + ")"
    if expr.is_Pow:
        if not expr.exp.is_Integer:
            raise NotCompiled(f"a power {expr}")
        exponent = int(expr.exp)
        if abs(exponent) > 64:
            raise NotCompiled(f"a power {expr}")
        base = _source(expr.base)
        if exponent == -1:
            return f"inv({base})"
        return f"({base} ** {exponent})" if exponent >= 0 else f"(inv({base}) ** {-exponent})"
    name = _FUNCTIONS.get(type(expr).__name__)
    if name is not None and expr.args:
        return f"{name}(" + ", ".join(_source(arg) for arg in expr.args) + ")"
    raise NotCompiled(f"{type(expr).__name__} in {expr}")


_SAFE = re.compile(r"(?:v\['[A-Za-z_][A-Za-z0-9_]*'\]|[0-9]+|F|inv|floor|ceil|min|max|\*\*|[-+*(), ])*")
"""What :func:`source` writes, and all a text read back from a cache may hold: values by name, integers, the
operators and the functions of the namespace."""


@lru_cache(maxsize=8192)
def from_source(text: str) -> Compiled:
    """The function a :func:`source` text computes, compiled once per text (a cache holds these texts)."""
    if len(text) > MAX_SOURCE or not _SAFE.fullmatch(text):
        raise NotCompiled(f"not a compiled expression: {text[:60]!r}")
    code = compile(f"lambda v: {text}", "<llmcount.evaluate>", "eval")
    # the text is made by source() from a checked record expression (or read back from a cache of such texts)
    return eval(code, _NAMESPACE)


@lru_cache(maxsize=8192)
def compiled(expr: Any) -> Compiled | None:
    """The compiled form of a sympy expression, once per expression; None if it has a node the numeric path does
    not take."""
    try:
        return from_source(source(expr))
    except NotCompiled:
        return None


def whole(value: int | Fraction) -> int | None:
    """``value`` as an int, or None when it is a fraction that is not whole."""
    if type(value) is int:
        return value
    return int(value) if value.denominator == 1 else None


def named(values: Mapping[Any, Any]) -> dict[str, int] | None:
    """Values keyed by symbol (or by name) as values by name, when every one is a plain int (not a bool, not a
    sympy number): what the compiled forms take; None otherwise."""
    try:
        out = {key.name: value for key, value in values.items()}
    except AttributeError:  # keys that are names
        out = {key if type(key) is str else key.name: value for key, value in values.items()}
    for value in out.values():
        if type(value) is not int:
            return None
    return out


def value(expr: Any, values: Mapping[str, int]) -> int | Fraction | None:
    """``expr`` (sympy) at ``values`` (by name, plain ints) by its compiled form: an int or a Fraction; None when the
    expression is not compiled, a value is missing or a divisor is zero (then sympy decides, and words it)."""
    function = compiled(expr)
    if function is None:
        return None
    try:
        return function(values)
    except (KeyError, ZeroDivisionError):
        return None
