"""Cost commands: flops, memory, verify (issue 5)."""

from __future__ import annotations

from .cli import app  # noqa: F401
