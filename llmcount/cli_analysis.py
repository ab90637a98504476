"""Analysis commands: approx, check, compare, solve, sweep (issue 4)."""

from __future__ import annotations

from .cli import app  # noqa: F401
