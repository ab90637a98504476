"""A name taken from the file system (a folder called with a fence, an HTML element, TeX commands) is text in every
output format of every command that prints it, not only in the write-up: ``formula`` in Markdown and LaTeX, of the
parameters and of the FLOPs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from refusal import run

from llmcount.presets import find

HOSTILE = "z\n```\n<img src=x onerror=alert(1)>$\\input{x}$%_&#~^"


@pytest.fixture
def hostile_folder(tmp_path: Path) -> Path:
    folder = tmp_path / HOSTILE
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(find("gpt2").config()))
    return folder


@pytest.mark.parametrize("flops", [False, True], ids=["parameters", "flops"])
def test_a_hostile_folder_name_in_a_markdown_formula_is_text(hostile_folder: Path, flops: bool) -> None:
    result = run("formula", str(hostile_folder), "--format", "markdown", *(["--flops"] if flops else []))
    assert result.exit_code == 0, result.output
    heading = result.stdout.splitlines()[0]
    assert heading.startswith("## z\\\\n\\`\\`\\`\\\\n\\<img src=x onerror=alert(1)\\>\\$"), heading
    assert "<img" not in result.stdout.replace("\\<img", "")  # every < of the name is escaped
    assert "\n```" not in result.stdout and "$\\input" not in result.stdout


@pytest.mark.parametrize("flops", [False, True], ids=["parameters", "flops"])
def test_a_hostile_folder_name_in_a_latex_formula_is_a_comment(hostile_folder: Path, flops: bool) -> None:
    result = run("formula", str(hostile_folder), "--format", "latex", *(["--flops"] if flops else []))
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[0]
    assert first.startswith("% z\\textbackslash{}n") and "\\textbackslash{}input\\{x\\}" in first
    assert "\\input{" not in result.stdout and "\n```" not in result.stdout


def test_a_family_title_in_a_markdown_formula_is_unchanged() -> None:
    result = run("formula", "qwen3", "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "## Qwen3: total parameters"
