"""Relations between sizes: the structural ratios of a config, and the settings a user gives.

A relation ``symbol = expr`` (``d_ff = 3·d``, ``h_kv = h/4``) is substituted into a formula before it
is approximated, solved or swept. Relations may refer to each other; :func:`resolve` reduces them to
expressions in the symbols no relation defines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sympy import Expr, Integer, Rational, Symbol

from ..errors import LlmcountError
from ..formulas.derivation import Derivation
from ..formulas.symbols import GLOSSARY, d, d_ff, d_moe, d_nope, d_rope, d_v, h, h_d, h_kv, k, n, n_s, r_kv, r_q
from .parse import Setting


@dataclass(frozen=True)
class Constraint:
    """A rule every model obeys, as ``count`` refuses a config breaking it (the family records).

    ``broken(a, b)`` works on ints and elementwise on numpy arrays.
    """

    a: Symbol
    b: Symbol
    broken: Callable[[Any, Any], Any]
    problem: str  # with {a} and {b}, the two values
    bound: bool  # solve: past a value that breaks a bound (k > n), values only break it more; stop there

    def message(self, a: int, b: int) -> str:
        return self.problem.format(a=a, b=b)


CONSTRAINTS = (
    Constraint(k, n, lambda a, b: a > b, "k = {a} experts per token is more than n = {b} experts", True),
    Constraint(
        h, h_kv, lambda a, b: a % b != 0, "h = {a} query heads is not divisible by h_kv = {b} key/value heads", False
    ),
)

SCALING = frozenset({d_ff, d_moe, h, h_kv, r_q, r_kv})  # the sizes that grow with the width d
_ORDER = {entry.symbol: i for i, entry in enumerate(GLOSSARY)}


def ordered(relations: dict[Symbol, Expr]) -> dict[Symbol, Expr]:
    """Relations in glossary order, for display."""
    return dict(sorted(relations.items(), key=lambda item: _ORDER[item[0]]))


def config_ratios(values: dict[Symbol, int], used: Iterable[Symbol]) -> dict[Symbol, Expr]:
    """The ratios that hold on one config, stated the way a designer states them.

    :math:`d_{ff} = (d_{ff}/d)\\,d`, :math:`d_{moe} = (d_{moe}/d)\\,d`, :math:`h = (h h_d/d)\\,d/h_d`,
    :math:`h_{kv} = (h_{kv}/h)\\,h`; for MLA :math:`h = (h d_v/d)\\,d/d_v`, the head sizes
    :math:`d_{nope}, d_{rope}` relative to :math:`d_v`, the ranks :math:`r_q, r_{kv}` relative to d;
    the expert counts n, k, n_s as their numbers. Head sizes, N, V stay free.
    """
    used = set(used)
    relations: dict[Symbol, Expr] = {}

    def ratio(symbol: Symbol, base: Symbol) -> None:
        if symbol in used and symbol in values and base in values:  # a record may read no h (JetMoE) or no d
            relations[symbol] = Rational(values[symbol], values[base]) * base

    for symbol in (d_ff, d_moe, r_q, r_kv):
        ratio(symbol, d)
    head = next((s for s in (h_d, d_v) if s in used and s in values), None)
    if head is not None and h in used and {h, d} <= set(values):
        relations[h] = Rational(values[h] * values[head], values[d]) * d / head
    ratio(h_kv, h)
    if h_kv in used and h_kv in values and h not in values:  # no query head count to relate it to: its number
        relations[h_kv] = Integer(values[h_kv])
    if head == d_v:
        for symbol in (d_nope, d_rope):
            ratio(symbol, d_v)
    for symbol in (n, k, n_s):
        if symbol in used and symbol in values:
            relations[symbol] = Integer(values[symbol])
    return ordered(relations)


def resolve(relations: dict[Symbol, Expr]) -> dict[Symbol, Expr]:
    """Substitute relations into each other until each is in undefined symbols; refuse a cycle."""
    resolved = dict(relations)
    for _ in range(len(resolved) + 1):
        step = {symbol: expr.subs(resolved) for symbol, expr in resolved.items()}
        for symbol, expr in step.items():
            if symbol in expr.free_symbols:
                given = ", ".join(f"{s} = {e}" for s, e in relations.items())
                raise LlmcountError(f"the relations {given} are circular: {symbol} depends on itself")
        if step == resolved:
            return resolved
        resolved = step
    raise LlmcountError("the relations could not be resolved")  # pragma: no cover (a cycle is caught above)


def head_dim_convention(derivation: Derivation, given: Iterable[Symbol]) -> dict[Symbol, Expr]:
    """``h_d = d/h`` (transformers' default head size) when a formula needs h_d and nothing sets it."""
    if h_d in derivation.symbols and h_d not in set(given):
        return {h_d: d / h}
    return {}


def split(settings: Iterable[Setting]) -> tuple[dict[Symbol, Sequence[int]], dict[Symbol, Expr]]:
    """Settings as ``(numbers, relations)``; a symbol set twice is refused."""
    numbers: dict[Symbol, Sequence[int]] = {}
    relations: dict[Symbol, Expr] = {}
    for setting in settings:
        if setting.symbol in numbers or setting.symbol in relations:
            raise LlmcountError(f"--set {setting.text!r}: {setting.symbol} is set twice")
        if setting.relation is None:
            numbers[setting.symbol] = setting.numbers
        else:
            relations[setting.symbol] = setting.relation
    return numbers, relations


def unknown(symbols: Iterable[Symbol], what: str) -> LlmcountError:
    names = ", ".join(sorted(s.name for s in symbols))
    return LlmcountError(f"no value for {names} in {what}: give --set SYMBOL=VALUE or --from PRESET")
