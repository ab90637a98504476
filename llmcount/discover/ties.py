"""Sizes a config class's validators tie together by an equation (Bamba's ``mamba_d_head * mamba_n_heads`` must equal
``mamba_expand * hidden_size``), read from the validator's own source: discovery then draws the other keys freely
and computes the tied one from them, so that transformers accepts the configs.

Pure Python and sympy over ``ast``: nothing here runs the validator or imports torch.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sympy import Expr, Integer, Symbol, solve


@dataclass(frozen=True)
class Tie:
    """``left == right``, which a validator requires (it raises when ``left != right``); ``local`` holds the
    validator's own names assigned before the check (``mamba_intermediate = self.mamba_expand * self.hidden_size``)."""

    left: ast.expr
    right: ast.expr
    local: Mapping[str, ast.expr]
    where: str  # ClassName.method, for notes

    def keys(self, values: Mapping[str, Any]) -> list[str]:
        """The config keys the equation reads under ``values`` (a conditional's branch taken as ``values`` say), in
        the order they appear; [] when it cannot be read."""
        seen: list[str] = []
        for side in (self.left, self.right):
            expr = _sympy(side, self.local, values, None, seen)
            if expr is None:
                return []
        return list(dict.fromkeys(seen))

    def solve(self, values: Mapping[str, Any], key: str) -> int | None:
        """The value of ``key`` that makes the equation hold with the other keys at ``values``: a positive integer,
        else None."""
        unknown = Symbol(key)
        left = _sympy(self.left, self.local, values, key, [])
        right = _sympy(self.right, self.local, values, key, [])
        if left is None or right is None:
            return None
        try:
            found = solve(left - right, unknown)
        except (NotImplementedError, ValueError, TypeError):
            return None
        if len(found) != 1 or not found[0].is_Integer or found[0] <= 0:
            return None
        return int(found[0])

    def holds(self, values: Mapping[str, Any]) -> bool:
        left = _sympy(self.left, self.local, values, None, [])
        right = _sympy(self.right, self.local, values, None, [])
        return left is not None and right is not None and left == right


def ties(config_class: type) -> list[Tie]:
    """The equations between sizes that the class's validators (``validate_*`` methods and ``__post_init__``, of the
    class and its model-specific bases) check with ``if a != b: raise``."""
    out: list[Tie] = []
    for klass, name, body in _validators(config_class):
        out += _checks(body, {}, f"{klass.__name__}.{name}")
    return out


@dataclass(frozen=True)
class Multiple:
    """``key`` must be a multiple of ``of``, which a validator requires (``if self.key % self.of != 0: raise``:
    Inkling-2-Loop's ``loop_layer_index_start`` of ``n_layers_per_attn_res_block``)."""

    key: str
    of: str
    where: str  # ClassName.method, for notes

    def round(self, values: Mapping[str, Any]) -> int | None:
        """The value of ``key`` made a multiple of ``of``: the nearest (at least ``of`` itself; 0 stays 0); None when
        either is not a positive integer or it already is one."""
        value, of = values.get(self.key), values.get(self.of)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (value, of)) or of <= 0 or value % of == 0:
            return None
        return of * max(1, (2 * value + of) // (2 * of))


def multiples(config_class: type) -> list[Multiple]:
    """The keys the class's validators require to be multiples of another key (``if self.a % self.b != 0: raise``
    or ``if self.a % self.b: raise``), in the order of the checks."""
    out: list[Multiple] = []
    for klass, name, body in _validators(config_class):
        for statement in ast.walk(ast.Module(body=body, type_ignores=[])):
            if not isinstance(statement, ast.If) or not any(isinstance(s, ast.Raise) for s in statement.body):
                continue
            test = statement.test
            if (
                isinstance(test, ast.Compare)
                and len(test.ops) == 1
                and isinstance(test.ops[0], ast.NotEq)
                and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value == 0
            ):
                test = test.left
            if isinstance(test, ast.BinOp) and isinstance(test.op, ast.Mod):
                key, of = _self_key(test.left), _self_key(test.right)
                if key and of:
                    out.append(Multiple(key, of, f"{klass.__name__}.{name}"))
    return out


def _self_key(node: ast.expr) -> str | None:
    """``self.key`` -> ``key``; None for any other expression."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _validators(config_class: type) -> list[tuple[type, str, list[ast.stmt]]]:
    """(class, method name, body) of the class's validators: ``validate_*`` methods and ``__post_init__``, of the class
    and its model-specific bases."""
    out = []
    for klass in config_class.__mro__:
        if klass.__module__.startswith("transformers.configuration_utils") or klass is object:
            break
        for name, function in sorted(vars(klass).items()):
            if not (name.startswith("validate") or name == "__post_init__") or not callable(function):
                continue
            try:
                tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
            except (OSError, TypeError, SyntaxError):
                continue
            if tree.body and isinstance(tree.body[0], ast.FunctionDef):
                out.append((klass, name, tree.body[0].body))
    return out


def _checks(body: list[ast.stmt], local: dict[str, ast.expr], where: str) -> list[Tie]:
    out = []
    for statement in body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            local[statement.targets[0].id] = statement.value
        elif isinstance(statement, ast.If):
            test = statement.test
            raises = any(isinstance(s, ast.Raise) for s in statement.body)
            if (
                raises
                and isinstance(test, ast.Compare)
                and len(test.ops) == 1
                and isinstance(test.ops[0], ast.NotEq)
                and _products(test.left)
                and _products(test.comparators[0])
            ):
                out.append(Tie(test.left, test.comparators[0], dict(local), where))
    return out


def _products(node: ast.expr) -> bool:
    """A product of sizes (and names standing for them): no modulo or comparison, which are other checks."""
    return not any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(node)) and any(
        isinstance(n, (ast.Attribute, ast.Name)) for n in ast.walk(node)
    )


def _sympy(
    node: ast.expr, local: Mapping[str, ast.expr], values: Mapping[str, Any], unknown: str | None, seen: list[str]
) -> Expr | None:
    """``node`` as a sympy expression: ``self.key`` is its value in ``values`` (``unknown``: a symbol); None when the
    expression is not integer arithmetic on sizes."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        seen.append(node.attr)
        if node.attr == unknown:
            return Symbol(unknown)
        value = values.get(node.attr)
        return Integer(value) if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(node, ast.Name) and node.id in local:
        return _sympy(local[node.id], {k: v for k, v in local.items() if k != node.id}, values, unknown, seen)
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return Integer(node.value)
    if isinstance(node, ast.IfExp):  # ``a if self.k is None else b``: the branch ``values`` take
        branch = _test(node.test, values)
        if branch is None:
            return None
        return _sympy(node.body if branch else node.orelse, local, values, unknown, seen)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub)):
        left = _sympy(node.left, local, values, unknown, seen)
        right = _sympy(node.right, local, values, unknown, seen)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Mult):
            return left * right
        return left + right if isinstance(node.op, ast.Add) else left - right
    return None


def _test(node: ast.expr, values: Mapping[str, Any]) -> bool | None:
    """``self.k is None`` / ``self.k is not None`` under ``values``; None for any other test."""
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], (ast.Is, ast.IsNot))
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value is None
        and isinstance(node.left, ast.Attribute)
        and isinstance(node.left.value, ast.Name)
        and node.left.value.id == "self"
    ):
        none = values.get(node.left.attr) is None
        return none if isinstance(node.ops[0], ast.Is) else not none
    return None
