"""Evaluate a family over a grid of sizes, exactly and fast.

The total and activated counts, with the fixed sizes and the relations substituted, are rational
functions of the swept symbols; each is written as an integer-coefficient numerator over a
denominator and compiled once with sympy's ``lambdify``. With numpy the whole grid is evaluated in
int64 arrays when a bound on every value (the numerator's coefficients in absolute value, at the
largest swept values) stays below 2**63; otherwise, or without numpy, in Python ints, which are exact
at any size. A row whose count (or a related size) is not a whole number is refused, never rounded.
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from sympy import Expr, Poly, PolynomialError, Symbol, expand, fraction, lambdify, together

from ..errors import LlmcountError
from ..formulas.derivation import Derivation
from ..formulas.symbols import N, N_dense
from .parse import Setting, minimum
from .relations import CONSTRAINTS, Constraint, head_dim_convention, resolve, split, unknown

MAX_ROWS = 10**7
INT64_LIMIT = 2**63


@dataclass(frozen=True)
class Sweep:
    title: str
    axes: tuple[tuple[Symbol, Sequence[int]], ...]  # the first varies slowest
    fixed: dict[Symbol, int]
    relations: dict[Symbol, Expr]
    assumed: dict[Symbol, Expr]
    formulas: dict[str, Expr]  # "total" and "activated" in the swept symbols
    columns: dict[str, Sequence[int]]  # one value per row: each swept symbol, total, activated
    backend: str  # "numpy" or "python"

    @property
    def header(self) -> list[str]:
        return list(self.columns)

    def __len__(self) -> int:
        return math.prod(len(values) for _, values in self.axes)

    def rows(self) -> Iterator[tuple[int, ...]]:
        """The grid as tuples of Python ints, in the order of :attr:`header`."""
        return zip(*(_as_list(column) for column in self.columns.values()), strict=True)

    def data(self) -> dict[str, Any]:
        header = self.header
        return {
            "model": self.title,
            "swept": [s.name for s, _ in self.axes],
            "fixed": {s.name: v for s, v in self.fixed.items()},
            "relations": {s.name: str(e) for s, e in {**self.relations, **self.assumed}.items()},
            "formulas": {name: str(e) for name, e in self.formulas.items()},
            "rows": [dict(zip(header, row, strict=True)) for row in self.rows()],
        }


def write_csv(result: Sweep, stream: TextIO) -> None:
    """A header naming the swept symbols, then total and activated; one row per grid point."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(result.header)
    writer.writerows(result.rows())


def sweep(
    derivation: Derivation,
    settings: Iterable[Setting],
    base: dict[Symbol, int] | None = None,
    force: bool = False,
    title: str = "",
    backend: str = "auto",
) -> Sweep:
    """Total and activated counts at every point of the grid the settings span (the rest from ``base``)."""
    axes, relations = split(settings)
    if not axes:
        raise LlmcountError("nothing to sweep: give --set SYMBOL=START:STOP:STEP or --set SYMBOL=A,B,C")
    size = math.prod(len(values) for values in axes.values())
    if size > MAX_ROWS and not force:
        raise LlmcountError(f"the grid has {size:,} rows, more than {MAX_ROWS:,}; pass --force to evaluate it anyway")
    name = title or derivation.architecture.title
    used = set(derivation.symbols)
    fixed = {s: v for s, v in (base or {}).items() if s in used and s not in axes and s not in relations}
    symbols = list(axes)
    hidden = _dense_layers(axes, fixed)  # on the grid, not in the output
    constants = {s: v for s, v in fixed.items() if s not in hidden}
    assumed = head_dim_convention(derivation, [*fixed, *axes, *relations])
    resolved = {s: expand(e.subs(constants)) for s, e in resolve({**relations, **assumed}).items()}
    formulas = {
        "total": expand(derivation.total.subs(resolved).subs(constants)),
        "activated": expand(derivation.activated.subs(resolved).subs(constants)),
    }
    missing = set().union(*(f.free_symbols for f in formulas.values())) - set(symbols) - set(hidden)
    if missing:
        raise unknown(missing, f"the {name} formula")

    grid = _Grid([*symbols, *hidden], [axes[s] for s in symbols] + [(v,) for v in hidden.values()], size, backend)
    grid.cap(N_dense, N)
    sizes: dict[Symbol, Any] = {**constants, **dict(zip(grid.symbols, grid.columns, strict=True))}
    for symbol, expr in resolved.items():  # every related size must be a whole number on every row
        if expr.free_symbols <= set(grid.symbols):
            what = f"{symbol} = {relations.get(symbol, assumed.get(symbol))}"
            sizes[symbol] = grid.evaluate(expr, what, minimum(symbol))
    for constraint in CONSTRAINTS:
        if constraint.a in sizes and constraint.b in sizes:
            grid.require(constraint, sizes[constraint.a], sizes[constraint.b])
    columns = {s.name: grid.columns[i] for i, s in enumerate(symbols)}
    for key, formula in formulas.items():
        columns[key] = grid.evaluate(formula, f"the {key} count", 0)
    return Sweep(name, tuple((s, axes[s]) for s in symbols), fixed, relations, assumed, formulas, columns, grid.backend)


def _dense_layers(axes: dict[Symbol, Sequence[int]], fixed: dict[Symbol, int]) -> dict[Symbol, int]:
    """The fixed ones of N and N_dense when the other is swept: they go onto the grid (one value each, so no
    more rows), where :meth:`_Grid.cap` makes N_dense ``min(N_dense, N)`` on each row, as ``count`` reads more
    dense layers than layers (first_k_dense_replace > num_hidden_layers) as every layer dense."""
    if not {N, N_dense} <= {*axes, *fixed} or not {N, N_dense} & set(axes):
        return {}
    return {s: fixed[s] for s in (N_dense, N) if s in fixed}


def _as_list(column: Sequence[int]) -> list[int]:
    return column.tolist() if hasattr(column, "tolist") else list(column)


def _numpy():
    try:
        import numpy
    except ImportError:  # numpy is optional: Python ints are exact, only slower
        return None
    return numpy


class _Grid:
    """The grid's columns (numpy int64 arrays, or Python lists) and exact evaluation over them."""

    def __init__(self, symbols: list[Symbol], values: list[Sequence[int]], size: int, backend: str):
        self.symbols, self.values, self.size = symbols, values, size
        self.np = _numpy() if backend in ("auto", "numpy") else None
        if backend == "numpy" and self.np is None:
            raise LlmcountError("numpy is not installed")
        self.maxima = [max(v) for v in values]
        if self.np is not None and max(self.maxima) < INT64_LIMIT:
            arrays = [self.np.asarray(v, dtype=self.np.int64) for v in values]
            self.columns: list[Any] = [a.ravel() for a in self.np.meshgrid(*arrays, indexing="ij")]
            self.backend = "numpy"
        else:
            self.columns = [list(c) for c in zip(*itertools.product(*values), strict=True)] if size else []
            self.backend = "python"

    def evaluate(self, expr: Expr, what: str, least: int) -> Sequence[int]:
        """``expr`` on every row as exact integers; refuse a row where it is fractional or below ``least``."""
        numerator, denominator = (self._polynomial(part, what) for part in fraction(together(expr)))
        fits = self.backend == "numpy" and all(self._bound(p) < INT64_LIMIT for p in (numerator, denominator))
        top = [self._compile(p, fits) for p in (numerator, denominator)]
        if fits:
            np = self.np
            num, den = (np.broadcast_to(np.asarray(f(*self.columns), dtype=np.int64), (self.size,)) for f in top)
            zero = np.flatnonzero(den == 0)
            if zero.size:  # checked here, by name, rather than as numpy's divide-by-zero warning
                self._refuse(int(zero[0]), what, least, num, den)
            with np.errstate(all="ignore"):  # numpy's own warnings never reach stderr: every bad row is named below
                quotient, remainder = np.divmod(num, den)
            bad = np.flatnonzero((remainder != 0) | (quotient < least))
            if bad.size:
                self._refuse(int(bad[0]), what, least, num, den)
            return quotient
        num, den = (self._python_column(f) for f in top)
        values = []
        for i, (a, b) in enumerate(zip(num, den, strict=True)):
            if b == 0:
                self._refuse(i, what, least, num, den)
            q, r = divmod(a, b)
            if r or q < least:
                self._refuse(i, what, least, num, den)
            values.append(q)
        if self.backend == "numpy":  # too large for int64: keep exact Python ints in an object array
            return self.np.array(values, dtype=object)
        return values

    def cap(self, symbol: Symbol, by: Symbol) -> None:
        """``symbol``'s column becomes ``min(symbol, by)`` on every row, when both are on the grid."""
        if symbol in self.symbols and by in self.symbols:
            i, j = self.symbols.index(symbol), self.symbols.index(by)
            a, b = self.columns[i], self.columns[j]
            self.columns[i] = self.np.minimum(a, b) if self.backend == "numpy" else list(map(min, a, b))

    def require(self, constraint: Constraint, a: Any, b: Any) -> None:
        """Refuse the first row where ``constraint`` is broken (``a``, ``b``: columns or fixed numbers)."""
        if self.backend == "numpy":
            np = self.np
            a, b = (np.broadcast_to(np.asarray(c), (self.size,)) for c in (a, b))
            bad = np.flatnonzero(constraint.broken(a, b))
            row = int(bad[0]) if bad.size else None
        else:
            a, b = ([c] * self.size if isinstance(c, int) else c for c in (a, b))
            row = next((i for i, pair in enumerate(zip(a, b, strict=True)) if constraint.broken(*pair)), None)
        if row is not None:
            raise LlmcountError(f"{constraint.message(int(a[row]), int(b[row]))} at {self._at(row)}")

    def _at(self, row: int) -> str:
        return ", ".join(f"{s}={int(c[row])}" for s, c in zip(self.symbols, self.columns, strict=True))

    def _python_column(self, f: Callable) -> list[int]:
        columns = [_as_list(c) for c in self.columns]
        return [int(f(*row)) for row in zip(*columns, strict=True)] if columns else []

    def _polynomial(self, expr: Expr, what: str) -> Poly:
        try:
            poly = Poly(expand(expr), *self.symbols)
        except PolynomialError:
            poly = None
        if poly is None or not poly.domain.is_ZZ:
            raise LlmcountError(f"{what} is not a polynomial with whole coefficients in the swept sizes: {expr}")
        return poly

    def _bound(self, poly: Poly) -> int:
        """An upper bound on |poly| over the grid (every swept value is at least 0)."""
        return sum(
            abs(int(c)) * math.prod(m**e for m, e in zip(self.maxima, powers, strict=True))
            for powers, c in poly.terms()
        )

    def _compile(self, poly: Poly, vectorised: bool) -> Callable:
        return lambdify(self.symbols, poly.as_expr(), modules="numpy" if vectorised else "math")

    def _refuse(self, row: int, what: str, least: int, num: Sequence, den: Sequence) -> None:
        at = self._at(row)
        a, b = int(num[row]), int(den[row])
        if b == 0:
            raise LlmcountError(f"{what} divides by zero at {at}")
        if a % b:
            raise LlmcountError(f"{what} is not a whole number at {at} ({a}/{b})")
        raise LlmcountError(f"{what} is {a // b} at {at}; it must be at least {least}")
