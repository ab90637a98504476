"""Snapshots of whole write-ups: any change to a template, a filter or the prose shows up as a diff.

Regenerate after an intended change, then review the diff of tests/snapshots/:
    LLMCOUNT_REGEN=1 python -m pytest tests/test_writeup_snapshots.py
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from llmcount.renderers.writeup import build

SNAPSHOTS = Path(__file__).parent / "snapshots" / "writeup"
REGENERATE = "LLMCOUNT_REGEN=1 python -m pytest tests/test_writeup_snapshots.py"
CASES = [
    (spec, fmt, lang)
    for spec in ("qwen3-32b", "qwen3-235b-a22b", "deepseek-v3")
    for fmt in ("markdown", "latex")
    for lang in ("en", "zh")
]


@pytest.mark.parametrize(("spec", "fmt", "lang"), CASES)
def test_writeup_snapshot(spec, fmt, lang):
    path = SNAPSHOTS / f"{spec}.{lang}.{'md' if fmt == 'markdown' else 'tex'}"
    text = build(spec, fmt, lang).text
    if os.environ.get("LLMCOUNT_REGEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    assert path.exists(), f"no snapshot {path.name}; create it with: {REGENERATE}"
    expected = path.read_text("utf-8")
    if text != expected:
        diff = "".join(
            list(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), "snapshot", "now"))[:60]
        )
        pytest.fail(f"{path.name} changed; if intended, regenerate with: {REGENERATE}\n{diff}")
