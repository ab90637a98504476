"""Classes of hostile input, each closed where it enters: fields of an index read by type, library warnings kept off
stderr, read-only outputs left alone, names from the file system escaped in every output format."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import warnings
from html.parser import HTMLParser
from pathlib import Path

import pytest
from refusal import assert_refused, run

from llmcount.presets import find

# --- an index's fields are read by type ---------------------------------------------------------------------------


def _index(tmp_path: Path, total_size: object) -> Path:
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": total_size}, "weight_map": {}}))
    return index


@pytest.mark.parametrize(
    ("total_size", "needles"),
    [
        (1e308, ("total_size", "1e+308")),  # a float: was accepted and printed as a 309-digit number
        (2.0**60 + 0.5 * 2**9, ("total_size",)),  # a whole float past 2**53: not exact
        (10**99, ("total_size", "64-bit")),
        (2**64, ("total_size", "64-bit")),
        (1.5, ("total_size",)),
        ("7", ("total_size",)),
        (True, ("total_size",)),
    ],
)
@pytest.mark.parametrize("command", ["verify", "writeup"])
def test_a_total_size_that_is_no_byte_count_is_refused(tmp_path: Path, total_size, needles, command) -> None:
    args = [command, "gpt2-xl", "--index", str(_index(tmp_path, total_size)), "--dtype", "fp32"]
    result = run(*args)
    assert_refused(result, *needles)
    assert len(result.stderr) < 300


def test_a_whole_float_total_size_a_double_holds_exactly_is_read(tmp_path: Path) -> None:
    # gpt2-xl in float32: 1,557,611,200 parameters x 4 bytes (the count of tests/test_presets_classic.py).
    result = run("verify", "gpt2-xl", "--index", str(_index(tmp_path, 6_230_444_800.0)), "--dtype", "fp32")
    assert result.exit_code == 0, result.output
    assert "match" in result.stdout and "1,557,611,200" in result.stdout


# --- library warnings never reach stderr --------------------------------------------------------------------------

ZERO = ("sweep", "qwen3", "--from", "qwen3-8b", "--set", "h=32,64", "--set", "h_d=4096/(h-32)", "--set", "d=1024")


def test_a_zero_denominator_in_a_sweep_is_named_not_a_numpy_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning from numpy would be an exception here
        result = run(*ZERO)
    assert_refused(result, "h_d = 4096/(h - 32)", "divides by zero", "h=32")
    assert "Warning" not in result.stderr


def test_a_zero_denominator_in_a_python_sweep_is_named_not_a_traceback() -> None:
    from llmcount.analysis import subject_and_base
    from llmcount.analysis.parse import parse_setting
    from llmcount.analysis.sweep import sweep
    from llmcount.errors import LlmcountError

    derivation, base, _ = subject_and_base("qwen3", "qwen3-8b")
    settings = [parse_setting(s, "--set", grid=True) for s in ("h=32,64", "h_d=4096/(h-32)", "d=1024")]
    with pytest.raises(LlmcountError, match="divides by zero at h=32"):
        sweep(derivation, settings, base, backend="python")


def test_the_console_entry_silences_library_warnings(monkeypatch, capsys) -> None:
    import llmcount.sources
    from llmcount.cli import main

    real = llmcount.sources.load

    def noisy(*args, **kwargs):
        warnings.warn("a library's warning", RuntimeWarning, stacklevel=1)
        return real(*args, **kwargs)

    monkeypatch.setattr(llmcount.sources, "load", noisy)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")  # as a plain `python -W always` run would print it
        with pytest.raises(SystemExit) as done:
            main(["count", "gpt2", "--json"])
    assert done.value.code in (0, None)
    assert shown == [] and capsys.readouterr().err == ""


# --- an output the user cannot write is left alone ----------------------------------------------------------------


@pytest.mark.parametrize(("command", "name"), [("writeup", "post.md"), ("chart", "chart.svg")])
def test_a_read_only_output_file_is_not_replaced(tmp_path: Path, command: str, name: str) -> None:
    if command == "chart":
        pytest.importorskip("matplotlib")
    target = tmp_path / name
    target.write_text("keep me")
    target.chmod(0o444)
    result = run(command, "gpt2", "-o", str(target))
    assert_refused(result, name, "read-only")
    assert target.read_text() == "keep me"
    assert stat.S_IMODE(target.stat().st_mode) == 0o444
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary file left


def test_a_read_only_chart_beside_a_writable_post_leaves_both_alone(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    post, chart = tmp_path / "post.md", tmp_path / "chart.svg"
    chart.write_text("keep me")
    chart.chmod(0o444)
    assert_refused(run("writeup", "gpt2", "-o", str(post), "--chart", str(chart)), "chart.svg", "read-only")
    assert not post.exists() and chart.read_text() == "keep me"


def test_a_file_turned_read_only_after_the_check_is_not_replaced(tmp_path: Path) -> None:
    from llmcount.errors import LlmcountError
    from llmcount.renderers.writeup import save

    target = tmp_path / "post.md"
    target.write_text("keep me")
    os.chmod(target, 0o444)
    with pytest.raises(LlmcountError, match="read-only"):
        save({target: b"new"})
    assert target.read_text() == "keep me"


# --- names from the file system, escaped in every output format -------------------------------------------------

HOSTILE = "z\n```\n<img src=x onerror=alert(1)>\x1b[2J\u202e"


@pytest.fixture
def hostile_folder(tmp_path: Path) -> Path:
    folder = tmp_path / HOSTILE
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(find("gpt2").config()))
    return folder


def _raw(text: str) -> bool:
    """Whether ``text`` carries the name's control characters or its fence on a line of its own."""
    return "\x1b" in text or "\u202e" in text or "\n```\n<img" in text


@pytest.mark.parametrize("args", [("count",), ("count", "--json"), ("memory",), ("flops",), ("compare",)])
def test_a_hostile_folder_name_is_one_visible_line_in_text_and_json(hostile_folder: Path, args) -> None:
    extra = ["gpt2"] if args[0] == "compare" else []
    result = run(args[0], str(hostile_folder), *extra, *args[1:])
    assert result.exit_code == 0, result.output
    assert not _raw(result.stdout)
    shown = json.loads(result.stdout)["model"] if "--json" in args else result.stdout
    assert "z\\n```\\n<img" in shown  # shown, escaped, not dropped


def test_a_hostile_folder_name_in_csv_is_one_record(hostile_folder: Path) -> None:
    result = run("count", str(hostile_folder), "gpt2", "--csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert len(rows) == 3 and rows[1][0].startswith("z\\n```")


def test_a_name_a_spreadsheet_would_run_is_kept_as_text_in_csv(tmp_path: Path) -> None:
    folder = tmp_path / "=HYPERLINK(1)"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(find("gpt2").config()))
    result = run("count", str(folder), "gpt2", "--csv")
    assert result.exit_code == 0, result.output
    assert list(csv.reader(io.StringIO(result.stdout)))[1][0] == "'=HYPERLINK(1)"


def test_a_hostile_folder_name_in_markdown_is_text(hostile_folder: Path) -> None:
    result = run("writeup", str(hostile_folder))
    assert result.exit_code == 0, result.output
    assert not _raw(result.stdout)
    assert "<img" not in result.stdout.replace("\\<img", "")  # every < of the name is escaped
    title = result.stdout.splitlines()[0]
    assert title.startswith("# How many parameters does z\\\\n\\`\\`\\`")  # the heading stays one line


def test_a_hostile_folder_name_in_latex_is_text(hostile_folder: Path) -> None:
    result = run("writeup", str(hostile_folder), "--format", "latex")
    assert result.exit_code == 0, result.output
    assert not _raw(result.stdout)
    first = result.stdout.splitlines()[0]
    assert first.startswith("% Generated by llmcount: z") and "config.json)" in first  # the comment holds it all


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_a_hostile_folder_name_in_html_is_text(hostile_folder: Path, monkeypatch) -> None:
    import html

    from llmcount.renderers import html as page_html
    from llmcount.renderers.writeup import build

    # The math renderer is not what is tested here: each span is put in as escaped text.
    monkeypatch.setattr(page_html, "katex", lambda spans: ([html.escape(s.tex) for s in spans], ""))
    post = build(str(hostile_folder), "html", sections="tree,params")
    elements = _Elements()
    elements.feed(post.text)
    assert not any(tag == "img" or "onerror" in attrs for tag, attrs in elements.tags)
    assert not _raw(post.text)
    assert "&lt;img src=x onerror=alert(1)&gt;" in post.text
