"""Formulas as people type them (^, superscripts, implicit products, × and ·), with the parser's bounds intact."""

import subprocess
import sys
import time

import pytest
from sympy import Rational
from typer.testing import CliRunner

from llmcount.analysis.parse import Vocabulary, closest, parse_count, parse_formula
from llmcount.cli import app
from llmcount.errors import LlmcountError
from llmcount.formulas.symbols import BY_NAME

N, V, d, d_ff, h, h_kv, h_d = (BY_NAME[n].symbol for n in ("N", "V", "d", "d_ff", "h", "h_kv", "h_d"))
N_sliding, W = BY_NAME["N_sliding"].symbol, BY_NAME["W"].symbol


def run(*args):
    return CliRunner().invoke(app, list(args))


def refused(result, *needles):
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    for needle in needles:
        assert needle in line, (needle, line)
    return line


# Each typed form and the same formula built by hand from the glossary's symbols.
TYPED = [
    ("12*N*d**2", 12 * N * d**2),
    ("12*N*d^2", 12 * N * d**2),
    ("12 N d^2", 12 * N * d**2),
    ("12 N d²", 12 * N * d**2),
    ("12N d²", 12 * N * d**2),
    ("12·N·d²", 12 * N * d**2),
    ("12×N×d^2", 12 * N * d**2),
    ("12 ⋅ N ⋅ d ^ 2", 12 * N * d**2),
    ("2(d+1)", 2 * d + 2),
    ("(d+1)(d+2)", (d + 1) * (d + 2)),
    ("d(d+1)", d * (d + 1)),
    ("2d", 2 * d),
    ("2 d", 2 * d),
    ("d³ + d⁴", d**3 + d**4),
    ("d¹²", d**12),
    ("2²d", 4 * d),
    ("(d+1)² N", (d + 1) ** 2 * N),
    ("d^2 N", d**2 * N),
    ("-d^2", -(d**2)),
    ("2^3^2 d", 2**9 * d),  # ^ is right-associative, as ** and as on paper
    ("V d + 2 V d", 3 * V * d),
    ("2|V|d", 2 * V * d),
    ("8/3 d", Rational(8, 3) * d),  # a product written side by side binds as * does
    ("11.5 d^2 N", Rational(23, 2) * d**2 * N),
    ("6.7e9", 6_700_000_000),
    ("2E d", 2 * BY_NAME["E"].symbol * d),  # E is the glossary's expert count, not an exponent without digits
    ("d − 1", d - 1),
    ("d ÷ 2", d / 2),
]


@pytest.mark.parametrize(("typed", "expected"), TYPED, ids=[t for t, _ in TYPED])
def test_a_formula_is_read_as_people_type_it(typed, expected):
    assert parse_formula(typed) == expected


MULTI_LETTER = [
    ("d_ff d", d_ff * d),
    ("2 h_kv h_d d", 2 * h_kv * h_d * d),
    ("2h_kv h_d", 2 * h_kv * h_d),
    ("N_sliding W", N_sliding * W),
    ("3 d d_ff N", 3 * d * d_ff * N),
    ("h h_d(d+1)", h * h_d * (d + 1)),
    ("h_d²", h_d**2),
    ("d_ff^2", d_ff**2),
]


@pytest.mark.parametrize(("typed", "expected"), MULTI_LETTER, ids=[t for t, _ in MULTI_LETTER])
def test_a_multi_letter_symbol_is_never_split(typed, expected):
    assert parse_formula(typed) == expected


def test_check_reads_the_typed_formula_and_gives_the_same_claim():
    # gpt2-xl: N = 48, d = 1600, so 12·N·d² = 12 · 48 · 2,560,000 = 1,474,560,000.
    for typed in ("12 N d^2", "12 N d²", "12*N*d**2"):
        result = run("check", "gpt2-xl", typed, "--json")
        assert result.exit_code == 0, result.output
        assert '"claimed": 1474560000' in result.stdout


@pytest.mark.parametrize(
    "formula", ["d = 3", "d; import os", "d 2", "d²2", "d^^2", "²d", "sqrt(d)", "d if N else V", "'d'", "d,N"]
)
def test_what_is_still_not_a_formula_is_refused(formula):
    with pytest.raises(LlmcountError):
        parse_formula(formula)


def test_code_is_still_refused_as_a_call_never_multiplied(tmp_path):
    marker = tmp_path / "pwned"
    line = refused(run("check", "qwen3-8b", f"__import__('os').system('touch {marker}')"), "function call")
    assert "*" not in line.split(":", 1)[0]
    assert not marker.exists()


# --- a name that is not a symbol: this model's symbols only, and the closest --------------------------------------


def test_an_unknown_name_lists_this_models_symbols_and_the_closest():
    line = refused(run("check", "gpt2-xl", "12 N dd^2"), "'dd' is not a symbol of gpt2-xl", "did you mean d*d?")
    assert "its symbols: N, V, d, d_ff, h, n_pos)" in line  # GPT-2's symbols, nothing of another family
    assert "d_moe" not in line and "N_sliding" not in line
    assert len(line) < 300


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("check", "qwen3-8b", "2 V dmodel"), ("'dmodel' is not a symbol of qwen3-8b", "did you mean d?")),
        (("check", "qwen3-8b", "3 dff d N"), ("did you mean d_ff?",)),
        (("check", "qwen3-8b", "hkv"), ("did you mean h_kv?",)),
        (("check", "qwen3-8b", "Nd"), ("did you mean N*d?",)),
        (("approx", "qwen3-8b", "--assume", "d_f=3d"), ("'d_f' is not a symbol of qwen3-8b", "did you mean d_ff?")),
        (("sweep", "qwen3", "--from", "qwen3-8b", "--set", "dff=1:3"), ("not a symbol of Qwen3", "d_ff?")),
        (("solve", "llama", "--target", "7B", "--for", "dd"), ("'dd' is not a symbol of Llama", "did you mean d?")),
    ],
)
def test_every_command_names_the_closest_symbol_of_its_model(args, needles):
    line = refused(run(*args), *needles)
    assert "its symbols:" in line and "d_moe" not in line


def test_closest_prefers_case_and_underscores_then_products_then_spelling():
    names = ["N", "V", "d", "d_ff", "h", "h_kv", "h_d"]
    assert closest("D_FF", names) == "d_ff"
    assert closest("hkv", names) == "h_kv"
    assert closest("Vd", names) == "V*d"
    assert closest("Vd", names, products=False) != "V*d"
    assert closest("zzz", names) is None
    assert closest("d_model", names) == "d"
    assert closest("hidden_size", names) == "d"  # the glossary's config key
    assert closest("num_key_value_heads", names) == "h_kv"
    assert closest("d_model", ["N", "V"]) is None  # a spelling of a symbol this model has not


def test_without_a_model_the_glossary_is_listed_cut_short():
    with pytest.raises(LlmcountError) as error:
        parse_formula("qq")
    assert "…" in str(error.value) and len(str(error.value)) < 600


def test_a_vocabulary_names_its_owner():
    with pytest.raises(LlmcountError, match="not a symbol of the Qwen3 formula"):
        parse_formula("x", known=Vocabulary.of([d], "the Qwen3 formula"))


# --- numbers: bounded from their text, before any power of ten is built ---------------------------------------------


HUGE = ["1e99999999", "1e-99999999", "1.5e99999", "9" * 70, "0." + "0" * 70 + "1", "1e61", "1e-61"]


@pytest.mark.parametrize("number", HUGE)
def test_a_number_past_the_bounds_is_refused_from_its_text(number):
    start = time.process_time()
    with pytest.raises(LlmcountError):
        parse_formula(f"{number}*d")
    with pytest.raises(LlmcountError):
        parse_count(number, "--target")
    assert time.process_time() - start < 1


def test_numbers_at_the_bounds_are_exact():
    assert parse_formula("1e60") == 10**60
    assert parse_formula("1e-60 d") == d / 10**60
    assert parse_formula("1_000.5") == Rational(2001, 2)
    assert parse_count("1.5T", "--target") == 1_500_000_000_000
    assert parse_count("6.7e9", "--target") == 6_700_000_000


@pytest.mark.parametrize(
    "args",
    [
        ("check", "gpt2", "1e99999999*d"),
        ("solve", "llama", "--target", "1e99999999", "--for", "d", "--set", "N=32"),
        ("sweep", "qwen3", "--from", "qwen3-8b", "--set", "d=1:1e99999999:1"),
        ("approx", "qwen3-8b", "--assume", "d_ff=1e-99999999 d"),
    ],
    ids=["check", "solve-target", "sweep-range", "approx-assume"],
)
def test_a_huge_exponent_is_refused_quickly_by_every_command(args):
    # In a child process, so that a regression hangs no test run: it is killed after 30 s.
    done = subprocess.run([sys.executable, "-m", "llmcount", *args], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and done.stdout == ""
    assert "exponent is out of range" in done.stderr, done.stderr
