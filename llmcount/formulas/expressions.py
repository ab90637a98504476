"""The two small languages of a family record, read with Python's ``ast`` and never evaluated as code.

* A **formula** (a term's ``expr`` and ``layers``, attention widths) becomes a sympy expression over the
  glossary's symbols: integers, ``+ - * / **``, parentheses, ``ceil(x)`` and ``floor(x)`` (counts of chunks),
  ``min(a, b)`` (what a window keeps).
* A **condition** (defaults, ``when``, ``[layers]``, ``checks``, ``refuse``) is compiled, node by node, into
  a Python closure over a namespace of values: symbols, config keys and the layer index ``i``. Floats (a config
  value such as ``block_ffn_dim_multiplier``) take part in ``+ - * / //`` as in the modeling code's Python, and
  ``int``, ``floor``, ``ceil`` turn them back into the integers it builds with.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sympy import Expr

MAX_LENGTH = 1000


class RecordError(ValueError):
    """A record's own text is wrong: raised while loading a record, naming the record and the field."""


class Unknown(LookupError):
    """A condition needs a name the namespace does not have (e.g. a required size with no config)."""


def _tree(text: str, where: str) -> ast.expr:
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_LENGTH:
        raise RecordError(f"{where}: expected a non-empty expression of at most {MAX_LENGTH} characters")
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise RecordError(f"{where}: cannot read {text!r}") from None


_ARITHMETIC = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Div: operator.truediv,
}
# The operations that take a float too: + - * / // compute as the modeling code's Python does (IEEE doubles, each
# result rounded once), so that int(), floor() and ceil() of them give the widths transformers builds, bit for bit.
_FLOAT_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv)


def formula(text: str, where: str) -> Expr:
    """A record's formula as sympy: glossary symbols, integers, ``+ - * / **``, parentheses, ``ceil``, ``floor``,
    ``min`` of two. (sympy is imported here, not with the module: conditions, which the numeric path reads, need
    none of it.)"""
    from sympy import Integer, Min

    from .symbols import BY_NAME

    def build(node: ast.expr) -> Expr:
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value <= MAX_LITERAL:
            return Integer(node.value)
        if isinstance(node, ast.Name):
            if node.id not in BY_NAME:
                raise RecordError(f"{where}: {node.id!r} is not a glossary symbol (formulas/symbols.py)")
            return BY_NAME[node.id].symbol
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -build(node.operand)
        if isinstance(node, ast.BinOp):
            left, right = build(node.left), build(node.right)
            ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
            if type(node.op) in ops:
                return ops[type(node.op)](left, right)
            if isinstance(node.op, ast.Pow) and right.is_Integer and 0 <= right <= 8:
                return left**right
        rounding = _rounding(node)
        if rounding is not None:
            return rounding(build(node.args[0]))
        if _is_min(node):
            return Min(*(build(arg) for arg in node.args))
        raise RecordError(f"{where}: {ast.unparse(node)!r} is not allowed in a formula")

    tree = _tree(text, where)
    result = build(tree)
    if _degree(tree) > MAX_DEGREE:  # checked on the text: no product of powers is ever expanded
        raise RecordError(f"{where}: {text.strip()[:60]!r} has degree {_degree(tree)}, more than {MAX_DEGREE}")
    return result


MAX_DEGREE = 16
MAX_LITERAL = 2**64  # a coefficient or a divisor in a formula (the bundled records use small ones)
"""A formula's degree in the sizes (the bundled records reach 8, a FLOP count of a chunked scan): with every size at
most 2**40 its value stays a number a float can hold, and its expansion stays small."""


def _degree(node: ast.expr) -> int:
    """An upper bound of the degree of a formula :func:`formula` has accepted (a quotient counts both sides)."""
    if isinstance(node, ast.Name):
        return 1
    if isinstance(node, ast.UnaryOp):
        return _degree(node.operand)
    if isinstance(node, ast.BinOp):
        left, right = _degree(node.left), _degree(node.right)
        if isinstance(node.op, ast.Pow):
            return left * node.right.value
        return max(left, right) if isinstance(node.op, (ast.Add, ast.Sub)) else left + right
    if isinstance(node, ast.Call):
        return max(_degree(arg) for arg in node.args)
    return 0


def _rounding(node: ast.expr) -> Callable[[Expr], Expr] | None:
    """sympy's ``ceiling`` or ``floor`` for a call ``ceil(x)`` or ``floor(x)`` (one argument, no keywords)."""
    is_call = isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    if is_call and len(node.args) == 1 and not node.keywords:
        from sympy import ceiling, floor

        return {"ceil": ceiling, "floor": floor}.get(node.func.id)
    return None


def _is_min(node: ast.expr) -> bool:
    """A call ``min(a, b)`` of two formulas (what a sliding window keeps: ``min(S, W - 1)``)."""
    is_call = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "min"
    return is_call and len(node.args) == 2 and not node.keywords


Namespace = Mapping[str, Any]
Condition = Callable[[Namespace], Any]


def condition(text: str, where: str) -> Condition:
    """Compile a condition into a function of a namespace; evaluating it raises :class:`Unknown` for a
    missing name and ``ValueError``/``TypeError``/``ZeroDivisionError``/``IndexError`` on bad values."""
    return _compile(_tree(text, where), where)


def _compile(node: ast.expr, where: str) -> Condition:
    if isinstance(node, ast.Constant) and (node.value is None or type(node.value) in (int, str, bool)):
        value = node.value
        return lambda ns: value
    if isinstance(node, ast.Name):
        name = node.id

        def lookup(ns: Namespace) -> Any:
            if name not in ns:
                raise Unknown(name)
            return ns[name]

        return lookup
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):  # a nested key: ffn_config.moe_top_k
        dotted = f"{node.value.id}.{node.attr}"

        def nested(ns: Namespace) -> Any:
            if dotted not in ns:
                raise Unknown(dotted)
            return ns[dotted]

        return nested
    if isinstance(node, ast.List):
        items = [_compile(item, where) for item in node.elts]
        return lambda ns: [item(ns) for item in items]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        operand = _compile(node.operand, where)
        if isinstance(node.op, ast.Not):
            return lambda ns: not operand(ns)
        return lambda ns: -_int(operand(ns))
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        op, left, right = _ARITHMETIC[type(node.op)], _compile(node.left, where), _compile(node.right, where)
        if type(node.op) in _FLOAT_ARITHMETIC:  # a float config value (ffn_dim_multiplier 1.3), as Python computes it
            return lambda ns: op(_number(left(ns)), _number(right(ns)))
        return lambda ns: op(_int(left(ns)), _int(right(ns)))
    if isinstance(node, ast.BoolOp):
        parts = [_compile(value, where) for value in node.values]
        if isinstance(node.op, ast.And):
            return lambda ns: all(part(ns) for part in parts)
        return lambda ns: any(part(ns) for part in parts)
    if isinstance(node, ast.IfExp):
        test, body, orelse = (_compile(n, where) for n in (node.test, node.body, node.orelse))
        return lambda ns: body(ns) if test(ns) else orelse(ns)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _comparison(type(node.ops[0]), _compile(node.left, where), _compile(node.comparators[0], where))
    if isinstance(node, ast.Subscript):
        value, index = _compile(node.value, where), _compile(node.slice, where)

        def item(ns: Namespace) -> Any:
            container = value(ns)
            if isinstance(container, dict):  # a JSON object by key; a key it lacks reads as None
                return container.get(index(ns))
            if not isinstance(container, (list, str)):
                raise TypeError(f"cannot index {type(container).__name__}")
            return container[_int(index(ns))]

        return item
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        return _call(node.func.id, [_compile(arg, where) for arg in node.args], where)
    raise RecordError(f"{where}: {ast.unparse(node)!r} is not allowed in a condition")


def condition_names(text: str) -> list[str]:
    """The names a condition reads, in order of first appearance."""
    seen: dict[str, None] = {}
    tree = ast.parse(text.strip(), mode="eval")
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            seen.setdefault(f"{node.value.id}.{node.attr}")
        elif isinstance(node, ast.Name) and node.id not in _FUNCTIONS and id(node) not in inner:
            seen.setdefault(node.id)
    return list(seen)


def _int(value: Any) -> int:
    if type(value) is int:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {value!r}")
    return value


MAX_NUMBER = 2**64  # operands of the float-capable arithmetic: sizes, never astronomically large


def _number(value: Any) -> int | float:
    """An integer or a finite float, within bounds (a float config value such as ffn_dim_multiplier)."""
    if type(value) is int and -MAX_NUMBER <= value <= MAX_NUMBER:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value!r}")
    if abs(value) > MAX_NUMBER:
        raise OverflowError(f"{value:.3g} is out of range")
    return value


def _to_int(value: Any) -> int:
    """Python's int() of a number: truncation toward zero, as the modeling code's int(2 * d_ff / 3)."""
    return int(_number(value))


def _floor(value: Any) -> int:
    return math.floor(_number(value))


def _ceil(value: Any) -> int:
    return math.ceil(_number(value))


def _sqrt(value: Any) -> float:
    """math.sqrt, as the modeling code's floor(sqrt(num_experts)) computes it (correctly rounded)."""
    return math.sqrt(_number(value))


def _isqrt(value: Any) -> int:
    return math.isqrt(_int(value))


_COMPARISONS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}


def _comparison(kind: type, left: Condition, right: Condition) -> Condition:
    if kind in (ast.In, ast.NotIn):
        negate = kind is ast.NotIn

        def member(ns: Namespace) -> bool:
            container = right(ns)
            if not isinstance(container, (list, str, dict)):  # a dict: its keys (Cohere Compass's rope_parameters)
                raise TypeError(f"'in' needs a list, got {container!r}")
            return (left(ns) in container) != negate

        return member
    op = _COMPARISONS[kind]
    return lambda ns: op(left(ns), right(ns))


_FUNCTIONS: dict[str, tuple[int, Callable[..., Any]]] = {
    "len": (1, len),
    "str": (1, str),  # str(x) == x: x is a string (EXAONE's sliding_window_pattern is an int or "LLLG")
    "min": (2, min),  # min(a, b); min(x) of a list x (its smallest entry)
    "max": (2, max),
    "int": (1, _to_int),  # truncation toward zero, as Python's int(): int(2 * d_ff / 3)
    "floor": (1, _floor),
    "ceil": (1, _ceil),
    "sqrt": (1, _sqrt),  # a float: floor(sqrt(n)) as math.floor(math.sqrt(n))
    "isqrt": (1, _isqrt),  # the exact integer square root
}


def _call(name: str, args: list[Condition], where: str) -> Condition:
    if name in ("min", "max") and len(args) == 1:  # of a list: its smallest or largest entry
        (items,) = args
        function = min if name == "min" else max
        return lambda ns: function(items(ns))
    if name not in _FUNCTIONS or len(args) != _FUNCTIONS[name][0]:
        allowed = "len, str, min, max (of two values or of a list), int, floor, ceil, sqrt and isqrt"
        raise RecordError(f"{where}: only {allowed} may be called (with their number of arguments), not {name}()")
    function = _FUNCTIONS[name][1]
    return lambda ns: function(*(arg(ns) for arg in args))
