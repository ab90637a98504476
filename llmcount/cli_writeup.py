"""Write-up commands: writeup, chart (issue 3)."""

from __future__ import annotations

from .cli import app  # noqa: F401
