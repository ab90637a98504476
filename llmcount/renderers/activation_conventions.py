"""Text and JSON of ``memory --training --conventions`` (:mod:`llmcount.plain_conventions`, which both paths use)."""

from __future__ import annotations

from ..plain_conventions import (
    DEEPSPEED_NOTE,
    conventions_data,
    deepspeed_data,
    megatron_data,
    render_conventions,
    render_deepspeed,
    render_megatron,
)

__all__ = (
    "DEEPSPEED_NOTE",
    "conventions_data",
    "deepspeed_data",
    "megatron_data",
    "render_conventions",
    "render_deepspeed",
    "render_megatron",
)
