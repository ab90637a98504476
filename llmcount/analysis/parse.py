"""Safe reading of what a user types: formulas, ``SYMBOL=VALUE`` settings, grids and counts like ``7B``.

A formula is written as people write it on paper or in a post: ``12 N d^2``, ``12·N·d²``, ``2(d+1)``, ``2d``,
``d×d_ff``, as well as Python's ``12*N*d**2``. A small tokenizer turns the typed text into Python's notation (``^``
and superscript digits into ``**``, ``·`` ``×`` into ``*``, a ``*`` between two factors written side by side); names
are read whole, so ``d_ff``, ``h_kv`` and ``N_sliding`` are never split. The result is read with Python's ``ast`` and
rebuilt node by node into sympy: only numbers, the glossary's symbols, ``+ - * / **`` and parentheses are accepted.
Nothing is ever evaluated as code, so ``__import__('os').system('...')`` is refused as "a function call", never run.
Every number is bounded before it is built (``1e99999999`` is refused from its exponent, not computed).
"""

from __future__ import annotations

import ast
import difflib
import keyword
import operator
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import comb, prod

from sympy import Expr, Pow, Rational, Symbol, nan, oo, zoo

from ..errors import LlmcountError
from ..files import short
from ..formulas.symbols import BY_NAME, OWN

MAX_LENGTH = 2000
MAX_EXPONENT = 64  # d**2, 10**12; a bigger power is a typo or a denial of service
MAX_NUMBER = 10**60  # far beyond any count; a bigger number (or value) is a typo or a denial of service
MAX_NUMBER_DIGITS = 61  # digits before the point of a number of at most MAX_NUMBER
MAX_DECIMALS = 60  # digits after the point (a decimal exponent counts): 1e-61 is a typo, and its 10**61 is work
MAX_VALUES = 10**8  # values on one axis of a sweep; the grid's own limit is checked later
MAX_LISTED = 1000  # values listed one by one on an axis (each is read as a formula); more is a range's job
MAX_COUNT_TEXT = 60  # characters of a target count such as 7B or 6738415616
MAX_COUNT = 10**30  # a target count
MAX_DEGREE = 16  # a count is a polynomial of low degree (the records reach 8); solving or expanding more is slow
MAX_TERMS = 200  # terms of the expanded formula (a hand-written one has a few): (d+V+N+1)**60 has 39,711
MAX_LISTED_SYMBOLS = 40  # an error lists at most this many of a model's symbols

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_REFUSED_OPERATORS = {
    ast.BitXor: "'^'",
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
ALLOWED = (
    "a formula may use only numbers, symbols, + - * / ^ (or **), superscripts such as d² and parentheses; "
    "a product may be written 12 N d^2, 2(d+1), 2d, × or ·"
)


@dataclass(frozen=True)
class Vocabulary:
    """The symbols a formula may name, and whose they are: an error about an unknown name lists these only."""

    symbols: tuple[Symbol, ...]
    owner: str  # "gpt2-xl", "the Qwen3 formula"

    @classmethod
    def of(cls, symbols: Iterable[Symbol], owner: str) -> Vocabulary:
        return cls(tuple(symbols), owner)


# The tokens of a typed formula. Names are ASCII identifiers read whole (d_ff, N_sliding); numbers are Python's
# decimal literals with ASCII digits (a number is never glued to the letters after it: 2d is 2 and d, 2e9 is 10**9).
_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>(?:[0-9]+(?:_[0-9]+)*(?:\.(?:[0-9]+(?:_[0-9]+)*)?)?|\.[0-9]+(?:_[0-9]+)*)
                (?:[eE][+-]?[0-9]+(?:_[0-9]+)*)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<power>\*\*|\^)
  | (?P<superscript>[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)
  | (?P<times>[*·×⋅∙∗])
  | (?P<minus>[−–])
  | (?P<divide>÷)
  | (?P<open>\()
  | (?P<close>\))
  | (?P<bars>\|V\|)
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_SUPERSCRIPT_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_SPELLED = {"power": "**", "times": "*", "minus": "-", "divide": "/", "bars": "V"}
_ENDS_A_FACTOR = {"number", "name", "close", "superscript", "bars"}  # a factor written next to it is multiplied
_STARTS_A_FACTOR = {"name", "open", "bars"}  # a number after a factor is not (d 2, d²2 are refused, never d**22)


def _python(text: str) -> str:
    """The typed formula in Python's notation, for ``ast`` to read: ``12 N d²`` is ``12 *N *d**2 ``.

    A name that is no glossary symbol, followed by ``(``, stays a call (refused as one); Python's keywords
    (``if``, ``lambda`` ...) are never multiplied, so ``d if N else V`` is refused as what it is."""
    out: list[str] = []
    previous = ""  # the kind of the last token that was not a space
    for match in _TOKEN.finditer(text):
        kind, token = match.lastgroup or "other", match.group()
        if kind == "space":
            out.append(token)
            continue
        if kind == "name" and keyword.iskeyword(token):
            kind = "other"
        starts = kind in _STARTS_A_FACTOR
        if kind == "open" and out and previous == "name" and _last_name(out) not in BY_NAME:
            starts = False  # f(x): a call
        if previous in _ENDS_A_FACTOR and starts:
            out.append("*")
        if kind == "superscript":
            out.append(f"**{token.translate(_SUPERSCRIPT_DIGITS)} ")
        else:
            out.append(_SPELLED.get(kind, token))
        previous = kind
    return "".join(out).strip()


def _last_name(out: list[str]) -> str:
    return next(token for token in reversed(out) if token.strip())


def parse_formula(text: str, label: str = "formula", known: Vocabulary | None = None) -> Expr:
    """The sympy expression of a user's formula; :class:`LlmcountError` naming what was not understood.

    Numbers are exact: ``11.5`` is 23/2 and ``1e9`` is 10**9. ``known`` is the model's vocabulary, which an
    error about an unknown name lists (the whole glossary without it).
    """
    where = f"{label} {short(text)}"
    if len(text) > MAX_LENGTH:
        raise LlmcountError(f"{label} is longer than {MAX_LENGTH} characters")
    source = _python(text)
    if not source:
        raise LlmcountError(f"{label} is empty; {ALLOWED}")
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        column = getattr(exc, "offset", None)
        at = f" at {source[column - 1 :]!r}" if column and column <= len(source) else ""
        raise LlmcountError(f"{where}: cannot read it{at}; {ALLOWED}") from None
    try:
        expr = _build(tree.body, source, where, known)
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


def bounded(value: Expr, where: str) -> Expr:
    """``value`` if it is a finite number of at most :data:`MAX_NUMBER` in absolute value; else a clear error."""
    if value.has(zoo, nan, oo, -oo):
        raise LlmcountError(f"{where}: division by zero")
    if value.is_number and abs(value) > MAX_NUMBER:
        raise LlmcountError(f"{where}: a value is too large (more than 10**60)")
    return value


def _build(node: ast.AST, source: str, where: str, known: Vocabulary | None = None) -> Expr:
    """Rebuild one whitelisted ``ast`` node as sympy; refuse every other kind of node."""

    def build(child: ast.AST) -> Expr:
        return _build(child, source, where, known)

    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        literal = ast.get_source_segment(source, node) or repr(node.value)
        return bounded(decimal(literal, f"{where}: the number"), f"{where}: the number {literal!r}")
    if isinstance(node, ast.Name):
        return _symbol(node.id, where, known)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](build(node.operand))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        base, exponent = build(node.left), build(node.right)
        if not exponent.is_Integer or not 0 <= exponent <= MAX_EXPONENT:
            raise LlmcountError(f"{where}: an exponent must be a whole number from 0 to {MAX_EXPONENT}, got {exponent}")
        return _bounded_power(base**exponent, where)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](build(node.left), build(node.right))
    segment = ast.get_source_segment(source, node) or ""
    if isinstance(node, ast.BinOp):
        kind = _REFUSED_OPERATORS.get(type(node.op), f"the operator {type(node.op).__name__}")
    elif isinstance(node, ast.Constant):
        kind = f"a {type(node.value).__name__} constant"
    else:
        kind = _NODE_KINDS.get(type(node), f"a {type(node).__name__} expression")
    raise LlmcountError(f"{where}: {segment!r} is not understood ({kind}); {ALLOWED}")


_DECIMAL = re.compile(r"([0-9_]*)(?:\.([0-9_]*))?(?:[eE]([+-]?[0-9_]+))?")


def decimal(literal: str, what: str) -> Rational:
    """A decimal literal (``12``, ``11.5``, ``6.7e9``, ``1_000``) as an exact Rational, refused from its digits and
    exponent before any power of ten is built: ``1e99999999`` and ``1e-99999999`` are one short error each."""
    match = _DECIMAL.fullmatch(literal.strip())
    if match is None or not any(c.isdigit() for c in (match.group(1) or "") + (match.group(2) or "")):
        raise LlmcountError(f"{what} {short(literal)} is not a number")
    whole, fraction = match.group(1).replace("_", ""), (match.group(2) or "").replace("_", "")
    exponent_text = (match.group(3) or "0").replace("_", "")
    if len(exponent_text.lstrip("+-").lstrip("0")) > 4:  # |exponent| >= 10,000: no need to read it
        raise LlmcountError(f"{what} {short(literal)}: the exponent is out of range")
    exponent = int(exponent_text)
    digits = whole.lstrip("0")
    if digits and len(digits) + exponent > MAX_NUMBER_DIGITS:
        raise LlmcountError(f"{what} {short(literal)} is too large (more than 10**60)")
    if len(fraction) - exponent > MAX_DECIMALS:
        raise LlmcountError(f"{what} {short(literal)} has more than {MAX_DECIMALS} decimal places")
    mantissa = int(whole + fraction or "0")
    scale = exponent - len(fraction)
    return Rational(mantissa * 10**scale) if scale >= 0 else Rational(mantissa, 10**-scale)


def _symbol(name: str, where: str, known: Vocabulary | None, products: bool = True) -> Symbol:
    """The glossary symbol ``name``; an unknown name is refused with this model's symbols and the closest one (a
    product of them too, where a formula is read)."""
    entry = BY_NAME.get(name)
    if entry is not None and (known is None or name not in OWN or entry.symbol in known.symbols):
        return entry.symbol  # another record's own symbol (CTRL's dff) is not this model's
    symbols = known.symbols if known is not None else tuple(e.symbol for e in BY_NAME.values())
    names = [s.name for s in symbols]
    guess = closest(name, names, products)
    hint = f"; did you mean {guess}?" if guess else ""
    whose = f"a symbol of {known.owner}" if known is not None else "a known symbol"
    listed = ", ".join(names[:MAX_LISTED_SYMBOLS]) + (", …" if len(names) > MAX_LISTED_SYMBOLS else "")
    its = f"its symbols: {listed}" if known is not None else f"the glossary's symbols: {listed}"
    raise LlmcountError(f"{where}: {short(name, 40)} is not {whose}{hint} ({its})")


# How papers and posts spell some sizes, and the glossary's symbol for each: only ever suggested, never read as it.
_USUAL_SPELLINGS = {
    "d_model": "d",
    "L": "N",
    "n_layers": "N",
    "n_heads": "h",
    "d_head": "h_d",
    "n_vocab": "V",
    "d_mlp": "d_ff",
    "n_kv_heads": "h_kv",
    "n_experts": "n",
}


def closest(name: str, names: Sequence[str], products: bool = True) -> str | None:
    """The name in ``names`` a typed ``name`` most likely means: the same but for case or underscores (``dff`` is
    d_ff), a usual spelling (``d_model``) or config key (``hidden_size``) of one, several names written together
    (``Nd`` is N*d), else the nearest spelling; None if nothing is close."""
    folded = {n.replace("_", "").lower(): n for n in names}
    key = name.replace("_", "").lower()
    if key in folded:
        return folded[key]
    spelled = {s.replace("_", "").lower(): n for s, n in _USUAL_SPELLINGS.items() if n in names}
    for n in names:
        entry = BY_NAME.get(n)
        for config_key in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", entry.key if entry else ""):
            spelled.setdefault(config_key.replace("_", "").lower(), n)
    if key in spelled:
        return spelled[key]
    split = _split_into(name, set(names)) if products else None
    if split:
        return "*".join(split)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return close[0] if close else None


def _split_into(name: str, names: set[str]) -> list[str] | None:
    """``name`` as two or more of ``names`` written together (``Nd`` as N, d), or None; at most 20 characters."""
    if len(name) > 20:
        return None

    def parts(rest: str) -> list[str] | None:
        if rest in names:
            return [rest]
        for cut in range(len(rest) - 1, 0, -1):  # the longest name first: hkv is h_kv before h*k*v
            if rest[:cut] in names:
                tail = parts(rest[cut:])
                if tail:
                    return [rest[:cut], *tail]
        return None

    found = parts(name)
    return found if found and len(found) > 1 else None


def _bounded_power(power: Expr, where: str) -> Expr:
    """A power such as ``(d**64)**64`` is refused: no symbol's exponent above :data:`MAX_EXPONENT`."""
    degrees = (e for p in power.atoms(Pow) for e in [p.exp] if e.is_number)
    if any(abs(e) > MAX_EXPONENT for e in degrees):
        raise LlmcountError(f"{where}: the power is too large (an exponent above {MAX_EXPONENT})")
    return bounded(power, where)


def symbol_named(name: str, label: str, known: Vocabulary | None = None) -> Symbol:
    """The glossary symbol called ``name``; the error lists ``known``'s symbols (the glossary's without it)."""
    return _symbol(name.strip(), label, known, products=False)


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


def parse_setting(text: str, option: str, grid: bool = False, known: Vocabulary | None = None) -> Setting:
    """Read ``d_ff=8/3*d``, ``N=32`` or, with ``grid``, ``d=1024:8192:1024`` (stop included) and ``N=24,32,48``;
    an unknown name is refused with ``known``'s symbols."""
    name, sep, value = text.partition("=")
    label = f"{option} {short(text)}"
    if not sep or not name.strip() or not value.strip():
        raise LlmcountError(f"{label}: expected SYMBOL=VALUE, e.g. d_ff=4*d or N=32")
    symbol = symbol_named(name, label, known)
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
    expr = parse_formula(value, label, known)
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


_COUNT = re.compile(r"^\s*([0-9][0-9_,]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*([KMBTkmbt]?)\s*$")
_UNITS = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


def parse_count(text: str, label: str) -> Rational:
    """A parameter count as a user writes it: ``7B``, ``1.5T``, ``6.7e9``, ``6738415616`` (exact)."""
    match = _COUNT.match(text) if len(text) <= MAX_COUNT_TEXT else None
    if not match:
        raise LlmcountError(f"{label} {short(text)}: not a count; write e.g. 7B, 1.5T, 6.7e9 or 6738415616")
    value = (
        decimal(match.group(1).replace(",", ""), f"{label} {short(text)}: the number") * _UNITS[match.group(2).upper()]
    )
    if value <= 0:
        raise LlmcountError(f"{label} {short(text)}: a count must be positive")
    if value > MAX_COUNT:
        raise LlmcountError(f"{label} {short(text)}: a count must be at most 10**30")
    return value
