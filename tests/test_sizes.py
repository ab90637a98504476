"""Size suffixes where a count of tokens or sequences is expected: one parser, powers of 1024."""

import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.errors import LlmcountError
from llmcount.sizes import parse_bytes, parse_positive, parse_size

runner = CliRunner()


def run(*args):
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4096", 4096),
        ("32k", 32_768),  # a "32k context"
        ("128K", 131_072),  # Llama 3.1's 128K context: max_position_embeddings = 131072 in its config.json
        ("1M", 1_048_576),
        ("1m", 1_048_576),
        ("8", 8),
        (" 2k ", 2048),
        ("32_768", 32_768),
        ("999999999999", 999_999_999_999),  # 12 digits
        (4096, 4096),
    ],
)
def test_sizes(text, value):
    assert parse_size(text, "--seq") == value


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("0", "zero"),
        ("0k", "zero"),
        ("-1", "negative"),
        ("-32k", "negative"),
        ("1.5k", "not a whole number"),
        ("2.5", "not a whole number"),
        ("1e3", "not a whole number"),
        ("1/2", "not a whole number"),
        ("1000000000000", "more than 12 digits"),
        ("32kk", "not a number"),
        ("1G", "not a number"),
        ("", "not a number"),
        ("k", "not a number"),
        ("٣", "not a number"),  # an Arabic-Indic digit: int() takes it, a size does not
    ],
)
def test_refused_sizes_name_the_option_and_the_reason(text, why):
    with pytest.raises(LlmcountError) as error:
        parse_size(text, "--seq")
    message = str(error.value)
    assert message.startswith("--seq") and why in message and "\n" not in message


def test_suffixes_can_be_refused():
    assert parse_size("64", "--group-size", suffixes=False) == 64
    with pytest.raises(LlmcountError, match="--group-size"):
        parse_size("1k", "--group-size", suffixes=False)


@pytest.mark.parametrize("option", ["--pp", "--dp", "--tp", "--lora"])
def test_counts_without_suffixes_give_no_token_count_as_example(option):
    """A degree of parallelism or a rank is not a length of context: its message offers no "like 4096 or 32k"."""
    with pytest.raises(LlmcountError) as error:
        parse_size("abc", option, suffixes=False)
    assert str(error.value) == f"{option} must be a positive integer, got 'abc' (not a number)"


@given(st.integers(min_value=1, max_value=10**12 - 1), st.sampled_from(["", "k", "K", "m", "M"]))
def test_every_suffix_is_a_power_of_1024(number, suffix):
    power = {"": 0, "k": 1, "K": 1, "m": 2, "M": 2}[suffix]
    assert parse_size(f"{number}{suffix}", "--batch") == number * 1024**power


def test_seq_and_batch_take_suffixes_in_memory_and_flops():
    # Llama-2-7B's KV cache in bf16, by hand: 2 (K and V) · N=32 · h_kv=32 · h_d=128 · 2 bytes
    # = 524,288 bytes per token; 4k tokens · 2 sequences = 8,192 tokens -> 4,294,967,296 bytes (4 GiB).
    data = json.loads(run("memory", "llama-2-7b", "--seq", "4k", "--batch", "2", "--json").stdout)
    assert (data["seq"], data["batch"]) == (4096, 2)
    assert data["kv_cache_per_token_bytes"] == 524_288
    assert data["kv_cache_bytes"] == 4 * 2**30
    flops = json.loads(run("flops", "llama-2-7b", "--seq", "2k", "--json").stdout)
    assert flops["seq"] == 2048


@pytest.mark.parametrize("command", ["flops", "memory"])
@pytest.mark.parametrize("value", ["-2k", "0", "1.5k", "1234567890123"])
def test_bad_sizes_are_one_line(command, value):
    result = run(command, "gpt2", "--seq", value)
    assert result.exit_code == 2  # a value --seq does not take: a usage error
    assert result.stderr.count("\n") == 1 and "--seq" in result.stderr and "Traceback" not in result.stderr


def test_help_says_k_is_1024():
    out = " ".join(run("memory", "--help").stdout.split())
    assert "k/K = 1024" in out and "32k = 32,768" in out


# --- amounts of memory and positive decimals ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("80GiB", 80 * 2**30),  # an H100's 80 GB are 80 GiB: 85,899,345,920 bytes
        ("80 GiB", 80 * 2**30),
        ("80gib", 80 * 2**30),
        ("24GB", 24 * 10**9),
        ("141 GB", 141 * 10**9),
        ("1.5TB", 1_500_000_000_000),
        ("0.5GiB", 2**29),
        ("512MiB", 2**29),
        ("1KB", 1000),
        ("1B", 1),
        ("1.0000000001GB", 10**9),  # a fraction of a byte is dropped
    ],
)
def test_byte_amounts(text, value):
    assert parse_bytes(text, "--gpu-memory") == value


@pytest.mark.parametrize(
    ("text", "why"),
    [("80", "no unit"), ("-80GiB", "negative"), ("0GiB", "positive"), ("80XB", "unknown unit"), ("GiB", "unit")],
)
def test_bad_byte_amounts(text, why):
    with pytest.raises(LlmcountError) as error:
        parse_bytes(text, "--gpu-memory")
    assert str(error.value).startswith("--gpu-memory") and why in str(error.value)


def test_positive_decimals_are_exact():
    assert parse_positive("989.5", "--peak-tflops") == Fraction(1979, 2)
    assert parse_positive("3500", "--tokens-per-second") == 3500
    for text, why in (("0", "zero"), ("-1", "negative"), ("1e3", "not a decimal"), ("", "not a decimal")):
        with pytest.raises(LlmcountError, match=why):
            parse_positive(text, "--tokens-per-second")
