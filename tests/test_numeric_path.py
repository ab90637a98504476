"""The numeric path's output is the sympy path's: ``count``'s text written in Python (plain.render_count) is what the
template renders for the same model, and ``count MODEL... [--json|--csv|--jsonl]`` run without click's parsing prints
what the parsed command prints."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from llmcount import counting, plain
from llmcount.presets import presets
from llmcount.renderers import render_count


@pytest.mark.parametrize("name", sorted(presets()))
def test_count_text_is_the_templates(name: str) -> None:
    try:
        counted = counting.read(presets()[name].config(), f"preset {name}", name)
    except counting.Fallback:
        pytest.skip("read by the sympy path")
    model = counted.full()
    for width in (None, 120, 80, 40, 12):
        try:
            ours = plain.render_count(counted, width)
        except counting.Fallback:
            pytest.skip("shown by the sympy path")
        assert ours == render_count(model, width, None)


def _run(*args: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "llmcount", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "90"},
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("qwen3-32b",),
        ("deepseek-v3", "--json"),
        ("qwen3-32b", "no-such-model", "--csv"),
        ("gpt2", "llama-3-8b", "--jsonl"),
        ("gpt2", "llama-3-8b"),
        ("no-such-model",),
    ],
)
def test_count_without_clicks_parsing_prints_what_the_parsed_command_prints(args: tuple[str, ...]) -> None:
    # after "--" every word is a MODEL: the command line is click's to parse
    quick = _run("count", *args)
    parsed = _run("count", *[a for a in args if a.startswith("-")], "--", *[a for a in args if not a.startswith("-")])
    assert quick == parsed
    assert quick[1] or quick[2]
