"""Text that fits a terminal: a table whose one long column wraps, and lines that wrap with a hanging
indent. Widths count characters (``·``, ``²`` and ``…`` are one column each). Registered as filters."""

from __future__ import annotations

from ..plain import (  # noqa: F401 -- the functions need no sympy: they live in llmcount.plain, shared with count
    MIN_WRAPPED,
    STACK_INDENT,
    fit_columns,
    fit_lines,
    fit_table,
    wrap,
    wrap_lines,
)
from .filters import FILTERS

FILTERS.update(wrap=wrap, fit_table=fit_table, fit_columns=fit_columns)
