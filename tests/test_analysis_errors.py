"""Bad input to approx, check, compare, solve, sweep: one line on stderr naming the problem, exit 1, no number."""

import time
import tracemalloc

import pytest
from typer.testing import CliRunner

from llmcount.cli import app

SOLVE = ("solve", "llama", "--target", "7B", "--for", "d", "--set", "N=32", "--set", "V=32000", "--set", "h_kv=h")
SWEEP = ("sweep", "qwen3", "--from", "qwen3-8b")


def run(*args):
    return CliRunner().invoke(app, list(args))


def assert_refused(result, *needles):
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), "a traceback escaped"
    assert result.stdout == "", "nothing may be printed on stdout for bad input"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_the_base_commands_are_accepted():
    # The commands below break these in one place each, so they must themselves be fine.
    assert run(*SOLVE, "--set", "d_ff=8/3*d").exit_code == 0
    assert run(*SWEEP, "--set", "d=1024:2048:1024").exit_code == 0
    assert run("check", "qwen3-8b", "2*V*d").exit_code == 0


# --- formulas: the safe parser ---------------------------------------------------------------------------------------


def test_code_in_a_formula_is_refused_never_run(tmp_path):
    marker = tmp_path / "pwned"
    result = run("check", "qwen3-8b", f"__import__('os').system('touch {marker}')")
    assert_refused(result, "function call", "only numbers")
    assert not marker.exists()


@pytest.mark.parametrize(
    ("formula", "needles"),
    [
        ("2*V*x", ("'x' is not a symbol of qwen3-8b", "its symbols: N, V, d, d_ff")),
        ("d/0", ("division by zero",)),
        ("V.real", ("attribute",)),
        ("d if N else V", ("not understood",)),
        ("'text'", ("str constant",)),
        ("", ("empty",)),
        ("d**d", ("exponent",)),
        ("2**100000", ("exponent",)),
        ("d // 2", ("'//'",)),
    ],
)
def test_formula_outside_the_grammar(formula, needles):
    assert_refused(run("check", "qwen3-8b", formula), *needles)


def test_formula_symbol_the_model_has_no_value_for():
    assert_refused(run("check", "gpt2", "h_kv*d"), "h_kv", "gpt2 has no value")


# --- approx ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("assume", "needles"),
    [
        ("x=3*d", ("'x' is not a symbol of qwen3-8b", "its symbols")),
        ("d_ff=-1", ("d_ff", "at least 1")),
        ("d_ff=-d", ("d_ff must be positive",)),
        ("d_ff=0*d", ("d_ff must be at least 1",)),
        ("d_ff=d/0", ("division by zero",)),
        ("d_ff=3*d_ff", ("in terms of itself",)),
        ("d=4096", ("width that grows",)),
        ("d_ff", ("SYMBOL=VALUE",)),
    ],
)
def test_approx_bad_assumption(assume, needles):
    assert_refused(run("approx", "qwen3-8b", "--assume", assume), *needles)


def test_approx_family_without_ratios():
    assert_refused(run("approx", "qwen3", "--assume", "d_ff=3*d"), "no ratio for h, h_kv")


def test_approx_circular_assumptions():
    assert_refused(run("approx", "qwen3-8b", "--assume", "d_ff=2*h", "--assume", "h=d_ff/2"), "circular")


def test_approx_over_unknown_model():
    assert_refused(run("approx", "gpt2", "--over", "gpt9"), "unknown preset")


# --- compare ---------------------------------------------------------------------------------------------------------


def test_compare_needs_two_models():
    assert_refused(run("compare", "qwen3-8b"), "at least two")


def test_compare_unknown_model():
    assert_refused(run("compare", "qwen3-8b", "nope-7b"), "nope-7b")


# --- solve -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (("--set", "d_ff=-1"), ("d_ff", "at least 1")),
        (("--set", "d_ff=d/0"), ("division by zero",)),
        (("--set", "d_ff=-d"), ("d_ff must be positive",)),
        (("--set", "q=3"), ("'q' is not a symbol of Llama", "its symbols")),
        (("--set", "d_ff=1:3"), ("ranges and lists are for `llmcount sweep`",)),
        (("--set", "d=4096"), ("cannot also be set",)),
        (("--set", "N=64"), ("N is set twice",)),
        (("--set", "d_ff=2*h_d", "--set", "h_d=d_ff/2"), ("circular",)),
        (("--multiple-of", "0"), ("--multiple-of",)),
    ],
)
def test_solve_bad_settings(extra, needles):
    assert_refused(run(*SOLVE, *extra), *needles)


def test_solve_missing_value():
    assert_refused(run("solve", "llama", "--target", "7B", "--for", "d", "--set", "N=32"), "no value for", "V")


@pytest.mark.parametrize("target", ["7X", "-7B", "0", "seven"])
def test_solve_bad_target(target):
    assert_refused(run(*SOLVE, "--set", "d_ff=4*d", "--target", target), "--target")


def test_solve_unreachable_target():
    # Qwen3-8B's embedding alone is 1.24B: no positive N reaches 1M.
    result = run("solve", "qwen3-8b", "--target", "1M", "--for", "N")
    assert_refused(result, "no positive value of N")


def test_solve_target_below_the_smallest_whole_value():
    # 192,946,432·N + 1,244,663,808 = 1.3B at N ≈ 0.29: positive, but no whole number of layers.
    result = run("solve", "qwen3-8b", "--target", "1.3B", "--for", "N")
    assert_refused(result, "N = 1 already gives 1437610240")


def test_solve_unknown_or_absent_symbol():
    assert_refused(run(*SOLVE, "--set", "d_ff=4*d", "--for", "zz"), "'zz' is not a symbol of Llama")
    assert_refused(run(*SOLVE, "--set", "d_ff=4*d", "--for", "d_v"), "d_v is not in the Llama formula")


def test_solve_count_that_does_not_depend_on_the_symbol():
    args = ("solve", "llama", "--target", "7B", "--for", "h", "--set", "h_kv=h", "--from", "llama-2-7b")
    assert_refused(run(*args, "--set", "h_d=d/h"), "does not depend on h")


# --- sweep -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "needles"),
    [
        ("d=1024:8192:0", ("step must be positive", "0")),
        ("d=1024:8192:-1024", ("step must be positive",)),
        ("d=8192:1024:1024", ("reversed range", "8192", "1024")),
        ("d=1024:2048:512:1", ("start:stop:step",)),
        ("d=0:1024:512", ("at least 1",)),
        ("d=1024,,2048", ("empty",)),
        ("d=1.5,2", ("whole number",)),
        ("x=1:3", ("'x' is not a symbol",)),
    ],
)
def test_sweep_bad_range(setting, needles):
    assert_refused(run(*SWEEP, "--set", setting), *needles)


def test_sweep_grid_too_large_without_force():
    result = run(*SWEEP, "--set", "d=1:10000", "--set", "N=1:1001")
    assert_refused(result, "10,010,000 rows", "--force")


def test_sweep_relation_giving_a_fractional_size():
    result = run(*SWEEP, "--set", "d=1024:2048:1024", "--set", "d_ff=8/3*d")
    assert_refused(result, "d_ff = 8*d/3", "not a whole number", "d=1024")


def test_sweep_relation_giving_a_negative_size():
    result = run(*SWEEP, "--set", "d=1024:2048:1024", "--set", "d_ff=d-1500")
    assert_refused(result, "d_ff = d - 1500", "d=1024", "at least 1")


def test_sweep_without_values_for_the_rest():
    assert_refused(run("sweep", "qwen3", "--set", "d=1024,2048"), "no value for", "--from")


def test_sweep_nothing_to_sweep():
    assert_refused(run(*SWEEP, "--set", "d_ff=3*d"), "nothing to sweep")


# --- QA round: exponents, huge or undefined values, impossible models ------------------------------------------------


@pytest.mark.parametrize(
    ("formula", "needles"),
    [
        ("d**-1", ("exponent", "whole number")),
        ("d**0.5", ("exponent", "whole number")),
        ("(d**64)**64", ("too large",)),
        ("d**64", ("too large",)),
        ("1e400*d", ("too large",)),
        ("d/(N-36)", ("division by zero",)),
        ("1/(h - 32)", ("division by zero",)),
    ],
)
def test_formula_with_a_bad_exponent_or_value(formula, needles):
    assert_refused(run("check", "qwen3-8b", formula), *needles)


# A formula is bounded in degree and in the terms of its expansion before anything expands or solves it:
# (d+V+N+1)**60 has C(63, 3) = 39,711 terms and took a minute to expand; d**17 passes every exponent limit.
EXPANDING = [
    ("(d+V+N+1)**60", ("degree", "60", "at most 16")),
    ("d**17", ("degree", "17")),
    ("d/(h+h_kv)**16", ("degree", "17")),  # a denominator's degree counts
    ("(d+V+N+d_ff+h+h_kv+1)**4", ("more than 200 terms",)),  # C(10, 4) = 210 terms, degree 4
]


@pytest.mark.parametrize(("formula", "needles"), EXPANDING)
@pytest.mark.parametrize(
    "command",
    [
        ("check", "qwen3-8b"),
        (*SOLVE, "--set"),
        ("approx", "qwen3-8b", "--assume"),
        (*SWEEP, "--set", "d=1024,2048", "--set"),
    ],
    ids=["check", "solve", "approx", "sweep"],
)
def test_a_formula_that_would_expand_past_the_bounds_is_refused_quickly(command, formula, needles):
    value = formula if command[0] == "check" else f"d_ff={formula}"
    start = time.process_time()
    result = run(*command, value)
    assert time.process_time() - start < 2
    assert_refused(result, *needles)


def test_a_formula_at_the_bounds_is_read():
    assert run("check", "qwen3-8b", "d**16 + (d+V+N+1)**8").exit_code == 0  # degree 16; 1 + C(11, 3) = 166 terms


@pytest.mark.parametrize("formula", ["d = 3", "d; import os", "d 2", "d²2"])
def test_text_that_is_no_formula_cannot_be_read(formula):
    assert_refused(run("check", "qwen3-8b", formula), "cannot read")


def test_sweep_more_experts_per_token_than_experts():
    result = run("sweep", "qwen3_moe", "--set", "N=1:3", "--set", "k=1000", "--from", "qwen3-30b-a3b", "--csv")
    assert_refused(result, "k = 1000", "n = 128")


def test_sweep_heads_not_divisible_by_kv_heads():
    result = run(*SWEEP, "--set", "h_kv=5,8")  # qwen3-8b: h = 32
    assert_refused(result, "h = 32", "h_kv = 5", "divisible")


def test_solve_more_experts_per_token_than_experts():
    result = run("solve", "qwen3_moe", "--target", "300B", "--for", "k", "--from", "qwen3-30b-a3b", "--activated")
    assert_refused(result, "k", "n = 128")


def test_sweep_huge_range_is_refused_before_it_is_built():
    assert_refused(run(*SWEEP, "--set", "d=1:1e30:1", "--csv"), "values")


def test_solve_huge_target():
    result = run(*SOLVE, "--set", "d_ff=8/3*d", "--target", "1e300")
    assert_refused(result, "--target")


def test_a_target_past_pythons_digit_limit_is_one_short_line():
    result = run(*SOLVE, "--target", "9" * 5000)
    assert_refused(result, "--target", "not a count")
    assert len(result.stderr) < 300


def test_a_listed_axis_is_bounded_before_each_value_is_read():
    start = time.process_time()
    result = run(*SWEEP, "--set", "d=" + ",".join(["1024"] * 100_000))
    assert time.process_time() - start < 2
    assert_refused(result, "100,000 values listed", "more than 1,000", "START:STOP:STEP")
    assert len(result.stderr) < 300


def test_a_range_past_the_grid_limit_is_refused_without_building_it():
    tracemalloc.start()
    try:
        result = run(*SWEEP, "--set", "d=1:99999999")  # as a tuple: 100 million ints, 3 GB
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert_refused(result, "99,999,999 rows", "--force")
    assert peak < 100 * 2**20
