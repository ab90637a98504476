"""Usage errors through the real entry point (``main``): one line ``llmcount: error: ...`` on stderr naming the
option or argument, exit 2, nothing on stdout; a value that looks like an option says to put ``--`` before it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from llmcount.cli import main


def invoke(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as caught:
        main(list(args))
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def assert_usage_error(capsys, args: tuple[str, ...], *needles: str) -> str:
    code, out, err = invoke(capsys, *args)
    assert code == 2, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("llmcount: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.mark.parametrize(
    ("name", "args", "needles"),
    [
        ("unknown_command", ("nosuch",), ["'nosuch'", "llmcount --help"]),
        ("unknown_long_option", ("count", "qwen3-8b", "--nope"), ["--nope", "llmcount count --help"]),
        ("unknown_short_option", ("count", "qwen3-8b", "-z"), ["-z"]),
        ("missing_argument", ("count",), ["MODEL"]),
        ("extra_argument", ("formula", "qwen3", "extra"), ["extra"]),  # count takes several models; formula one
        ("bad_choice", ("formula", "qwen3", "--format", "html"), ["--format", "'html'", "latex"]),
        ("option_without_its_value", ("writeup", "qwen3-8b", "-o"), ["-o"]),
        ("missing_required_option", ("chart", "qwen3-8b"), ["--output"]),
        ("flag_given_a_value", ("count", "qwen3-8b", "--json=yes"), ["--json"]),
    ],
)
def test_usage_error_is_one_line(capsys, name: str, args: tuple[str, ...], needles: list[str]) -> None:
    assert_usage_error(capsys, args, *needles)


@pytest.mark.parametrize("value", ["-2*d", "-d*h", "-(d+1)", "-12*d^2"])
def test_formula_starting_with_minus_says_to_put_double_dash_before_it(capsys, value: str) -> None:
    line = assert_usage_error(capsys, ("check", "qwen3-8b", value), "put -- before it")
    assert f"llmcount check qwen3-8b -- '{value}'" in line


def test_formula_after_double_dash_is_read(capsys) -> None:
    code, _, err = invoke(capsys, "check", "qwen3-8b", "--", "-2*d")
    assert code in (0, 1), err  # read as a formula: a verdict, or a refusal of the formula itself
    assert "No such option" not in err


def test_help_still_works(capsys) -> None:
    code, out, err = invoke(capsys, "count", "--help")
    assert code == 0 and "MODEL" in out and err == ""


def test_bad_input_still_exits_1(capsys, tmp_path) -> None:
    code, out, err = invoke(capsys, "count", str(tmp_path / "nope.json"))
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1


def test_success_exits_0(capsys) -> None:
    code, out, err = invoke(capsys, "count", "qwen3-8b")
    assert code == 0 and out and err == ""


def test_internal_error_is_one_line_not_a_traceback(capsys, monkeypatch) -> None:
    import llmcount.sources

    def broken(spec):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(llmcount.sources, "load", broken)
    code, out, err = invoke(capsys, "count", "qwen3-8b")
    assert code == 1 and out == ""
    assert err.strip().splitlines() == ["llmcount: internal error: ZeroDivisionError: boom (a bug; please report it)"]


def test_the_console_script_path(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "llmcount", "check", "qwen3-8b", "-2*d"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
