"""Safe reading of what a user types: formulas, ``SYMBOL=VALUE`` settings, grids and counts like ``7B``.

A formula is read with Python's ``ast`` and rebuilt node by node into sympy: only numbers, the
glossary's symbols, ``+ - * / **`` and parentheses are accepted. Nothing is ever evaluated as code,
so ``__import__('os').system('...')`` is refused as "a function call", never run.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb, prod

from sympy import Expr, Integer, Pow, Rational, Symbol, nan, oo, zoo

from ..errors import LlmcountError
from ..files import short
from ..formulas.symbols import BY_NAME

KNOWN = ", ".join(BY_NAME)
MAX_LENGTH = 2000
MAX_EXPONENT = 64  # d**2, 10**12; a bigger power is a typo or a denial of service
MAX_NUMBER = 10**60  # far beyond any count; a bigger number (or value) is a typo or a denial of service
MAX_VALUES = 10**8  # values on one axis of a sweep; the grid's own limit is checked later
MAX_LISTED = 1000  # values listed one by one on an axis (each is read as a formula); more is a range's job
MAX_COUNT_TEXT = 60  # characters of a target count such as 7B or 6738415616
MAX_COUNT = 10**30  # a target count
MAX_DEGREE = 16  # a count is a polynomial of low degree (the records reach 8); solving or expanding more is slow
MAX_TERMS = 200  # terms of the expanded formula (a hand-written one has a few): (d+V+N+1)**60 has 39,711

# Conveniences of hand-written formulas: d·d_ff, d², |V|, the unicode minus.
_CONVENIENCES = (("·", "*"), ("×", "*"), ("−", "-"), ("²", "**2"), ("³", "**3"), ("|V|", "V"))
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_REFUSED_OPERATORS = {
    ast.BitXor: "'^' (write ** for a power)",
    ast.FloorDiv: "'//'",
    ast.Mod: "'%'",
    ast.MatMult: "'@'",
}
_NODE_KINDS = {
    ast.Call: "a function call",
    ast.Attribute: "an attribute",
    ast.Subscript: "indexing",
    ast.Compare: "a comparison",
    ast.BoolOp: "a boolean operator",
    ast.Lambda: "a lambda",
    ast.Tuple: "a tuple (a comma)",
    ast.List: "a list",
}
ALLOWED = f"a formula may use only numbers, the symbols {KNOWN}, + - * / ** and parentheses"


def _normalise(text: str) -> str:
    for old, new in _CONVENIENCES:
        text = text.replace(old, new)
    return text.strip()


def parse_formula(text: str, label: str = "formula") -> Expr:
    """The sympy expression of a user's formula; :class:`LlmcountError` naming what was not understood.

    Numbers are exact: ``11.5`` is 23/2 and ``1e9`` is 10**9.
    """
    source = _normalise(text)
    where = f"{label} {short(text)}"
    if not source:
        raise LlmcountError(f"{label} is empty; {ALLOWED}")
    if len(source) > MAX_LENGTH:
        raise LlmcountError(f"{label} is longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        column = getattr(exc, "offset", None)
        at = f" at {source[column - 1 :]!r}" if column and column <= len(source) else ""
        hint = " (write 2*d, not 2d)" if _glued(source) else ""
        raise LlmcountError(f"{where}: cannot read it{at}{hint}; {ALLOWED}") from None
    try:
        expr = _build(tree.body, source, where)
    except RecursionError:
        raise LlmcountError(f"{where}: nested too deeply") from None
    if expr.has(zoo, nan, oo, -oo):
        raise LlmcountError(f"{where}: division by zero")
    _bounded_shape(expr, where)
    return expr


def _bounded_shape(expr: Expr, where: str) -> None:
    """Refuse a formula whose degree or expansion is too large, before anything expands or solves it."""
    try:
        degree, terms = _shape(expr)
    except RecursionError:
        raise LlmcountError(f"{where}: nested too deeply") from None
    if degree > MAX_DEGREE:
        raise LlmcountError(f"{where}: the degree is too large ({degree}, at most {MAX_DEGREE})")
    if terms > MAX_TERMS:
        raise LlmcountError(f"{where}: too large, it expands to more than {MAX_TERMS:,} terms")


def _shape(expr: Expr) -> tuple[int, int]:
    """Upper bounds of ``expr``'s degree in the symbols (a denominator's counts too) and of the number of terms
    its expansion has; the count of terms is capped just above :data:`MAX_TERMS`."""
    if expr.is_Symbol:
        return 1, 1
    if expr.is_Pow and expr.exp.is_Integer:
        degree, terms = _shape(expr.base)
        power = abs(int(expr.exp))
        return degree * power, min(comb(terms + power - 1, power), MAX_TERMS + 1)
    shapes = [_shape(arg) for arg in expr.args]
    if expr.is_Add:
        return max(d for d, _ in shapes), min(sum(t for _, t in shapes), MAX_TERMS + 1)
    if expr.is_Mul:
        return sum(d for d, _ in shapes), min(prod(t for _, t in shapes), MAX_TERMS + 1)
    return max((d for d, _ in shapes), default=0), 1


def _glued(source: str) -> bool:
    """Whether a number is directly followed by a symbol, as in ``2d`` (a word that starts with a digit
    and is not a number)."""

    def is_number(word: str) -> bool:
        try:
            float(word.replace("_", ""))
        except ValueError:
            return False
        return True

    return any(word[0].isdigit() and not is_number(word) for word in re.findall(r"[\w.]+", source))


def bounded(value: Expr, where: str) -> Expr:
    """``value`` if it is a finite number of at most :data:`MAX_NUMBER` in absolute value; else a clear error."""
    if value.has(zoo, nan, oo, -oo):
        raise LlmcountError(f"{where}: division by zero")
    if value.is_number and abs(value) > MAX_NUMBER:
        raise LlmcountError(f"{where}: a value is too large (more than 10**60)")
    return value


def _build(node: ast.AST, source: str, where: str) -> Expr:
    """Rebuild one whitelisted ``ast`` node as sympy; refuse every other kind of node."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        literal = ast.get_source_segment(source, node) or repr(node.value)
        try:
            value = Integer(node.value) if type(node.value) is int else Rational(literal.replace("_", ""))
        except (ValueError, TypeError):
            raise LlmcountError(f"{where}: cannot read the number {literal!r}") from None
        return bounded(value, f"{where}: the number {literal!r}")
    if isinstance(node, ast.Name):
        entry = BY_NAME.get(node.id)
        if entry is None:
            raise LlmcountError(f"{where}: unknown symbol {node.id!r}; known symbols: {KNOWN}")
        return entry.symbol
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_build(node.operand, source, where))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        base, exponent = _build(node.left, source, where), _build(node.right, source, where)
        if not exponent.is_Integer or not 0 <= exponent <= MAX_EXPONENT:
            raise LlmcountError(f"{where}: an exponent must be a whole number from 0 to {MAX_EXPONENT}, got {exponent}")
        return _bounded_power(base**exponent, where)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_build(node.left, source, where), _build(node.right, source, where))
    segment = ast.get_source_segment(source, node) or ""
    if isinstance(node, ast.BinOp):
        kind = _REFUSED_OPERATORS.get(type(node.op), f"the operator {type(node.op).__name__}")
    elif isinstance(node, ast.Constant):
        kind = f"a {type(node.value).__name__} constant"
    else:
        kind = _NODE_KINDS.get(type(node), f"a {type(node).__name__} expression")
    raise LlmcountError(f"{where}: {segment!r} is not understood ({kind}); {ALLOWED}")


def _bounded_power(power: Expr, where: str) -> Expr:
    """A power such as ``(d**64)**64`` is refused: no symbol's exponent above :data:`MAX_EXPONENT`."""
    degrees = (e for p in power.atoms(Pow) for e in [p.exp] if e.is_number)
    if any(abs(e) > MAX_EXPONENT for e in degrees):
        raise LlmcountError(f"{where}: the power is too large (an exponent above {MAX_EXPONENT})")
    return bounded(power, where)


def symbol_named(name: str, label: str) -> Symbol:
    """The glossary symbol called ``name``; the error lists the known ones."""
    entry = BY_NAME.get(name.strip())
    if entry is None:
        raise LlmcountError(f"{label}: unknown symbol {name.strip()!r}; known symbols: {KNOWN}")
    return entry.symbol


def minimum(symbol: Symbol) -> int:
    """The smallest value a symbol may take: 1 for a size, 0 for a count such as ``n_s``."""
    return 1 if symbol.is_positive else 0


@dataclass(frozen=True)
class Setting:
    """One ``SYMBOL=VALUE`` a user gave: numbers (one, or a grid axis) or a relation to other symbols."""

    symbol: Symbol
    text: str
    numbers: Sequence[int] = ()
    relation: Expr | None = None


def parse_setting(text: str, option: str, grid: bool = False) -> Setting:
    """Read ``d_ff=8/3*d``, ``N=32`` or, with ``grid``, ``d=1024:8192:1024`` (stop included) and ``N=24,32,48``."""
    name, sep, value = text.partition("=")
    label = f"{option} {short(text)}"
    if not sep or not name.strip() or not value.strip():
        raise LlmcountError(f"{label}: expected SYMBOL=VALUE, e.g. d_ff=4*d or N=32")
    symbol = symbol_named(name, label)
    value = value.strip()
    if grid and ":" in value:
        return Setting(symbol, text, numbers=_range(symbol, value, label))
    if grid and "," in value:
        items = value.split(",")
        if len(items) > MAX_LISTED:
            raise LlmcountError(
                f"{label}: {len(items):,} values listed, more than {MAX_LISTED:,}; give a range START:STOP:STEP"
            )
        return Setting(symbol, text, numbers=tuple(_integer(symbol, item, label) for item in items))
    if not grid and (":" in value or "," in value):
        raise LlmcountError(f"{label}: ranges and lists are for `llmcount sweep`; give one value or a relation")
    expr = parse_formula(value, label)
    if not expr.free_symbols:
        return Setting(symbol, text, numbers=(_integer(symbol, value, label, expr),))
    return Setting(symbol, text, relation=check_relation(symbol, expr, label))


def check_relation(symbol: Symbol, expr: Expr, label: str) -> Expr:
    """A relation ``symbol = expr`` that can hold: not circular, not negative (or zero for a size)."""
    if symbol in expr.free_symbols:
        raise LlmcountError(f"{label}: {symbol} is defined in terms of itself")
    if expr.is_negative or (symbol.is_positive and expr.is_zero):
        raise LlmcountError(f"{label}: {symbol} must be {'positive' if symbol.is_positive else 'non-negative'}")
    return expr


def _whole(text: str, label: str, what: str) -> int:
    expr = parse_formula(text, label)
    if not expr.is_Integer:
        raise LlmcountError(f"{label}: {what} must be a whole number, got {text.strip()!r}")
    return int(expr)


def _integer(symbol: Symbol, text: str, label: str, expr: Expr | None = None) -> int:
    value = _whole(text, label, str(symbol)) if expr is None or not expr.is_Integer else int(expr)
    if expr is not None and not expr.is_Integer:
        raise LlmcountError(f"{label}: {symbol} must be a whole number, got {text.strip()!r}")
    if value < minimum(symbol):
        raise LlmcountError(f"{label}: {symbol} must be at least {minimum(symbol)}, got {value}")
    return value


def _range(symbol: Symbol, text: str, label: str) -> range:
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise LlmcountError(f"{label}: a range is start:stop:step (stop included), e.g. d=1024:8192:1024")
    start, stop = (_integer(symbol, part, label) for part in parts[:2])
    step = _whole(parts[2], label, "the step") if len(parts) == 3 else 1
    if step <= 0:
        raise LlmcountError(f"{label}: the step must be positive, got {step}")
    if start > stop:
        raise LlmcountError(f"{label}: reversed range, start {start} is greater than stop {stop}")
    if (stop - start) // step + 1 > MAX_VALUES:
        raise LlmcountError(f"{label}: the range has {(stop - start) // step + 1:,} values, more than {MAX_VALUES:,}")
    return range(start, stop + 1, step)  # not a tuple: the grid's size is checked before anything is built


_COUNT = re.compile(r"^\s*(\d[\d_,]*(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*([KMBTkmbt]?)\s*$")
_UNITS = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


def parse_count(text: str, label: str) -> Rational:
    """A parameter count as a user writes it: ``7B``, ``1.5T``, ``6.7e9``, ``6738415616`` (exact)."""
    match = _COUNT.match(text) if len(text) <= MAX_COUNT_TEXT else None
    if not match:
        raise LlmcountError(f"{label} {short(text)}: not a count; write e.g. 7B, 1.5T, 6.7e9 or 6738415616")
    value = Rational(match.group(1).replace(",", "").replace("_", "")) * _UNITS[match.group(2).upper()]
    if value <= 0:
        raise LlmcountError(f"{label} {short(text)}: a count must be positive")
    if value > MAX_COUNT:
        raise LlmcountError(f"{label} {short(text)}: a count must be at most 10**30")
    return value
