"""Usage errors through the real entry point (``main``): one line ``llmcount: error: ...`` on stderr naming the
option or argument, exit 2, nothing on stdout; a value that looks like an option says to put ``--`` before it.
A value refused by our own parsers (``--seq x``, ``--images x``, ``--gpus -1``: a number that is malformed or out of
the option's range, raised as OptionError) is a usage error as much as one click's types refuse (``--max-files x``)."""

from __future__ import annotations

import json
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

    def broken(spec, *args):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(llmcount.sources, "resolve", broken)  # every way count reads a model starts there
    code, out, err = invoke(capsys, "count", "qwen3-8b")
    assert code == 1 and out == ""
    assert err.strip().splitlines() == ["llmcount: internal error: ZeroDivisionError: boom (a bug; please report it)"]


def test_the_console_script_path(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "llmcount", "check", "qwen3-8b", "-2*d"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


# --- Every command, every entry point ------------------------------------------------------------------------
# One row per (command, kind of usage error). Each row runs through the console entry point (`main`), typer's
# CliRunner on `app`, and `app()` itself; the `python -m llmcount` path runs one row per command below.

USAGE_CASES = [
    # (command, kind, args, a word the line must name)
    ("", "unknown_option", ("--nope",), "--nope"),
    ("", "unknown_command", ("nosuch",), "'nosuch'"),
    ("count", "unknown_option", ("count", "qwen3-8b", "--nope"), "--nope"),
    ("count", "missing_argument", ("count",), "MODEL"),
    ("count", "flag_given_a_value", ("count", "qwen3-8b", "--csv=1"), "--csv"),
    ("formula", "unknown_option", ("formula", "qwen3", "--nope"), "--nope"),
    ("formula", "missing_argument", ("formula",), "FAMILY|MODEL"),
    ("formula", "bad_choice", ("formula", "qwen3", "-f", "html"), "'html'"),
    ("list", "unknown_option", ("list", "--nope"), "--nope"),
    ("list", "extra_argument", ("list", "extra"), "extra"),
    ("approx", "unknown_option", ("approx", "qwen3-8b", "--nope"), "--nope"),
    ("approx", "missing_argument", ("approx",), "Missing argument"),
    ("approx", "option_without_its_value", ("approx", "qwen3-8b", "--over"), "--over"),
    ("check", "unknown_option", ("check", "qwen3-8b", "12*d", "--nope"), "--nope"),
    ("check", "missing_argument", ("check", "qwen3-8b"), "FORMULA"),
    ("compare", "unknown_option", ("compare", "qwen3-8b", "--nope"), "--nope"),
    ("compare", "missing_argument", ("compare",), "MODEL"),
    ("solve", "unknown_option", ("solve", "qwen3-8b", "--nope"), "--nope"),
    ("solve", "missing_option", ("solve", "qwen3-8b", "--for", "d"), "--target"),
    (
        "solve",
        "bad_integer",
        ("solve", "qwen3-8b", "--target", "8B", "--for", "d", "--multiple-of", "x"),
        "--multiple-of",
    ),
    ("sweep", "unknown_option", ("sweep", "qwen3-8b", "--nope"), "--nope"),
    ("sweep", "missing_argument", ("sweep",), "Missing argument"),
    ("scan", "unknown_option", ("scan", ".", "--nope"), "--nope"),
    ("scan", "missing_argument", ("scan",), "Missing argument"),
    ("scan", "bad_integer", ("scan", ".", "--max-files", "x"), "--max-files"),
    ("scan", "below_minimum", ("scan", ".", "--max-depth", "-1"), "--max-depth"),
    ("flops", "unknown_option", ("flops", "qwen3-8b", "--nope"), "--nope"),
    ("flops", "missing_argument", ("flops",), "Missing argument"),
    ("flops", "option_without_its_value", ("flops", "qwen3-8b", "--seq"), "--seq"),
    ("flops", "bad_image_size", ("flops", "qwen3-8b", "--images", "1", "--image-size", "big"), "--image-size"),
    ("flops", "image_size_out_of_range", ("flops", "qwen3-8b", "--images", "1", "--image-size", "0x28"), "0x28"),
    ("flops", "image_size_without_images", ("flops", "qwen3-8b", "--image-size", "448"), "--images"),
    ("flops", "bad_size", ("flops", "qwen3-8b", "--seq", "x"), "--seq"),  # our own parsers' values, as click's
    ("flops", "bad_images", ("flops", "qwen3-8b", "--images", "x"), "--images"),
    ("flops", "bad_audio_frames", ("flops", "qwen3-8b", "--audio-frames", "x"), "--audio-frames"),
    ("flops", "too_many_images", ("flops", "qwen3-8b", "--images", "100000000"), "--images"),
    ("mfu", "unknown_option", ("mfu", "llama-3-8b", "--nope"), "--nope"),
    ("mfu", "missing_argument", ("mfu",), "Missing argument"),
    (
        "mfu",
        "negative_count",
        ("mfu", "llama-3-8b", "--tokens-per-second", "1", "--gpu", "h100", "--gpus", "-1"),
        "--gpus",
    ),
    (
        "mfu",
        "bad_decimal",
        ("mfu", "llama-3-8b", "--tokens-per-second", "fast", "--gpu", "h100"),
        "--tokens-per-second",
    ),
    ("speed", "unknown_option", ("speed", "qwen3-8b", "--gpu", "h100", "--nope"), "--nope"),
    ("speed", "missing_argument", ("speed",), "Missing argument"),
    ("speed", "option_without_its_value", ("speed", "qwen3-8b", "--gpu"), "--gpu"),
    ("speed", "out_of_range", ("speed", "qwen3-8b", "--gpu", "h100", "--mfu", "40"), "--mfu"),
    ("fit", "unknown_option", ("fit", "qwen3-8b", "--gpu", "h100", "--nope"), "--nope"),
    ("fit", "missing_argument", ("fit",), "Missing argument"),
    ("fit", "option_without_its_value", ("fit", "qwen3-8b", "--gpu"), "--gpu"),
    ("fit", "bad_size", ("fit", "qwen3-8b", "--gpu", "h100", "--seq", "0"), "--seq"),
    ("memory", "unknown_option", ("memory", "qwen3-8b", "--nope"), "--nope"),
    ("memory", "missing_argument", ("memory",), "Missing argument"),
    ("memory", "bad_choice", ("memory", "qwen3-8b", "--training", "--optimizer", "sgdx"), "--optimizer"),
    ("memory", "bad_size", ("memory", "qwen3-8b", "--seq", "x"), "--seq"),  # the fast path's parser too
    ("memory", "negative_gpus", ("memory", "qwen3-8b", "--gpu", "h100", "--gpus", "-1"), "--gpus"),
    ("memory", "gpus_without_gpu", ("memory", "qwen3-8b", "--gpus", "-1"), "--gpu NAME"),
    ("memory", "bad_amount", ("memory", "qwen3-8b", "--gpu-memory", "80"), "--gpu-memory"),
    ("verify", "unknown_option", ("verify", "qwen3-8b", "--nope"), "--nope"),
    ("verify", "missing_argument", ("verify",), "Missing argument"),
    ("completion", "unknown_option", ("completion", "bash", "--nope"), "--nope"),
    ("completion", "missing_argument", ("completion",), "SHELL"),
    ("completion", "bad_choice", ("completion", "tcsh"), "'tcsh'"),
    ("writeup", "unknown_option", ("writeup", "qwen3-8b", "--nope"), "--nope"),
    ("writeup", "missing_argument", ("writeup",), "Missing argument"),
    ("writeup", "bad_choice", ("writeup", "qwen3-8b", "--lang", "xx"), "'xx'"),
    ("writeup", "bad_size", ("writeup", "qwen3-8b", "--seq", "2.5"), "--seq"),
    ("chart", "unknown_option", ("chart", "qwen3-8b", "-o", "x.svg", "--nope"), "--nope"),
    ("chart", "missing_argument", ("chart", "-o", "x.svg"), "MODEL"),
    ("chart", "missing_option", ("chart", "qwen3-8b"), "--output"),
]

CASE_IDS = [f"{command or 'root'}-{kind}" for command, kind, _, _ in USAGE_CASES]


def check_one_usage_line(code, out: str, err: str, args: tuple[str, ...], needle: str) -> None:
    assert code == 2, (args, code, err)
    assert out == "", (args, out)
    lines = err.strip().splitlines()
    assert len(lines) == 1, (args, err)
    assert lines[0].startswith("llmcount: error: "), lines[0]
    assert "Usage:" not in err and "Traceback" not in err, err
    assert needle in lines[0], (needle, lines[0])
    assert "--help`)" in lines[0], lines[0]  # and where to read more


USAGE_COMMANDS = {command: True for command, *_ in USAGE_CASES if command}


def test_the_table_covers_every_command() -> None:
    import typer

    from llmcount.cli import app, load_commands

    load_commands()
    registered = set(typer.main.get_command(app).commands)
    assert registered == set(USAGE_COMMANDS), registered ^ set(USAGE_COMMANDS)


@pytest.mark.parametrize(("command", "kind", "args", "needle"), USAGE_CASES, ids=CASE_IDS)
def test_main_gives_one_line(capsys, command, kind, args, needle) -> None:
    check_one_usage_line(*invoke(capsys, *args), args, needle)


@pytest.mark.parametrize(("command", "kind", "args", "needle"), USAGE_CASES, ids=CASE_IDS)
def test_cli_runner_gives_one_line(command, kind, args, needle) -> None:
    from typer.testing import CliRunner

    from llmcount.cli import app

    result = CliRunner().invoke(app, list(args))
    assert isinstance(result.exception, SystemExit), result.exception
    check_one_usage_line(result.exit_code, result.stdout, result.stderr, args, needle)


@pytest.mark.parametrize(("command", "kind", "args", "needle"), USAGE_CASES, ids=CASE_IDS)
def test_calling_app_gives_one_line(capsys, monkeypatch, command, kind, args, needle) -> None:
    from llmcount.cli import app

    monkeypatch.setattr(sys, "argv", ["llmcount", *args])
    with pytest.raises(SystemExit) as caught:
        app()
    check_one_usage_line(caught.value.code, *capsys.readouterr(), args, needle)


FIRST_PER_COMMAND = [case for i, case in enumerate(USAGE_CASES) if case[0] not in [c[0] for c in USAGE_CASES[:i]]]


@pytest.mark.parametrize(
    ("command", "kind", "args", "needle"),
    FIRST_PER_COMMAND,
    ids=[f"{c[0] or 'root'}-{c[1]}" for c in FIRST_PER_COMMAND],
)
def test_python_dash_m_gives_one_line(command, kind, args, needle) -> None:
    done = subprocess.run([sys.executable, "-m", "llmcount", *args], capture_output=True, text=True, timeout=60)
    check_one_usage_line(done.returncode, done.stdout, done.stderr, args, needle)


def test_cli_runner_still_runs_a_command() -> None:
    from typer.testing import CliRunner

    from llmcount.cli import app

    result = CliRunner().invoke(app, ["count", "qwen3-8b", "--json"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert json.loads(result.stdout)["total"] == 8_190_735_360  # Qwen3-8B: transformers' meta count (published 8.2B)
