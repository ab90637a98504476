"""Sizes within the reader's bounds (a size may be up to 2**40) that would drive a walk over the layers: the
commands that walk layers one by one (the module tree of a write-up, pipeline stages) bound the walk, and the
others never start one. Each run is a fresh process under a 2 GB address-space limit, so a walk that builds a
list of 10**9 layers fails the test instead of the machine."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

LIMIT = 2 * 2**30

LLAMA = {
    "model_type": "llama",
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
}


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def llmcount(tmp_path: Path, layers: int, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    """Run the installed command on a Llama config of ``layers`` layers; the result and its CPU seconds."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**LLAMA, "num_hidden_layers": layers}))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(
        [sys.executable, "-m", "llmcount", args[0], str(config), *args[1:]],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limited,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@pytest.mark.parametrize(
    ("layers", "args"),
    [
        (10**9, ["memory", "--training"]),  # the layer kinds were told layer by layer: 4 GB
        (10**9, ["writeup"]),  # the module tree listed every layer
        (10**9, ["writeup", "--training"]),
        (20_000, ["writeup"]),  # and looked each one up in a tuple of all of them: 30 s
    ],
)
def test_many_layers_are_counted_without_walking_them(tmp_path: Path, layers: int, args: list[str]) -> None:
    result, seconds = llmcount(tmp_path, layers, *args)
    assert result.returncode == 0, result.stderr
    assert seconds < 4  # the interpreter's start and imports take about one


def test_pipeline_stages_of_too_many_layers_are_refused_before_the_walk(tmp_path: Path) -> None:
    result, seconds = llmcount(tmp_path, 10**9, "memory", "--training", "--pp", "4")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "llmcount: error: --pp 4: 1,000,000,000 layers; layers are split in pipeline stages up to 10,000"
    ]
    assert seconds < 4


def test_pipeline_stages_at_the_bound_are_split(tmp_path: Path) -> None:
    result, _ = llmcount(tmp_path, 10_000, "memory", "--training", "--pp", "4")
    assert result.returncode == 0, result.stderr
