"""A closed pipe (`llmcount count qwen3-8b | head -1`) ends llmcount quietly: no traceback, status 141."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmcount._pipes import EXIT_BROKEN_PIPE

ROOT = Path(__file__).resolve().parent.parent
ENTRY = "import sys; sys.argv[0] = 'llmcount'; from llmcount.cli import main; main()"


def run_into_closed_pipe(*args):
    """Run llmcount with its stdout a pipe whose reader is already gone: the first write fails."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", ENTRY, *args], stdout=write_end, stderr=subprocess.PIPE, cwd=ROOT, timeout=120
        )
    finally:
        os.close(write_end)
    return proc


@pytest.mark.parametrize(
    "args",
    [
        ["count", "qwen3-8b"],  # one write of the whole table
        ["count", "gpt2", "qwen3-8b", "--csv"],  # rows written one by one
        ["list"],
        ["--version"],
    ],
)
def test_a_closed_pipe_is_quiet(args):
    proc = run_into_closed_pipe(*args)
    assert proc.stderr == b""
    assert proc.returncode == EXIT_BROKEN_PIPE == 141


def test_head_1_through_a_shell():
    script = f'{sys.executable} -c "{ENTRY}" count gpt2 qwen3-8b llama-2-7b --jsonl | head -c 1'
    proc = subprocess.run(["bash", "-c", script], capture_output=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and proc.stdout == b"{"
    assert b"Traceback" not in proc.stderr and b"BrokenPipe" not in proc.stderr


def test_other_exits_are_unchanged():
    proc = subprocess.run(
        [sys.executable, "-c", ENTRY, "count", "no-such-preset"], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
