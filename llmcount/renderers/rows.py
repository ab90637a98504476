"""One line per model (``count`` of several models, ``scan``): a compact text table, CSV, JSON lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .filters import count, grouped, table

HEADER = ("model", "family", "total", "activated", "embedding")
ALIGN = "llrrr"


def text_table(rows: Sequence[Mapping[str, Any]], width: int = 80) -> str:
    """The rows as an aligned table: exact total, human activated and embedding; model names shortened
    with '…' when the table would be wider than ``width`` (the exact rows are in CSV and JSON lines)."""
    cells = [
        [str(r["model"]), str(r["family"]), grouped(r["total"]), count(r["activated"]), count(r["embedding"])]
        if r["total"] is not None
        else [  # a composite with a part left out: its language model's counts, marked so
            str(r["model"]),
            str(r["family"]),
            grouped(r["language_model_total"]) + " (LM only)",
            count(r["language_model_activated"]),
            count(r["language_model_embedding"]),
        ]
        for r in rows
    ]
    others = sum(max(len(row[i]) for row in [HEADER, *cells]) + 2 for i in range(1, len(HEADER)))
    room = max(len(HEADER[0]), width - 2 - others)
    for row in cells:
        if len(row[0]) > room:
            row[0] = row[0][: room - 1] + "…"
    return table([HEADER, *cells], ALIGN)


# a batch's rows as CSV and JSON lines need no renderer (no sympy): they live with the batch
from ..batch import csv_cell, csv_line, jsonl_line  # noqa: E402,F401
