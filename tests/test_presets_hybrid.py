"""Published sizes of the hybrid and SSM presets (no exact figure is published for these: within the rounding)."""

from __future__ import annotations

from llmcount.sources import load


def test_qwen3_next_80b_a3b() -> None:
    # Qwen/Qwen3-Next-80B-A3B-Instruct model card: "Number of Parameters: 80B in total and 3B activated",
    # "Number of Parameters (Non-Embedding): 79B" (the multi-token-prediction layer of the checkpoint is not built).
    counts = load("qwen3-next-80b-a3b").counts
    assert abs(counts.total - 80e9) < 0.5e9
    assert abs(counts.non_embedding - 79e9) < 0.5e9
