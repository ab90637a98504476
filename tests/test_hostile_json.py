"""Hostile JSON: every class of bad JSON, in each of the three files llmcount reads as JSON (config.json, a
safetensors index, a safetensors header), is one line on stderr naming the file and the problem, exit 1, nothing on
stdout, quickly. The hostile part sits under a key llmcount never reads: the rules hold for the whole document."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refusal import assert_refused, run

from llmcount.errors import LlmcountError
from llmcount.files import MAX_BYTES, MAX_DEPTH, MAX_DIGITS, MAX_VALUES, parse_json

LLAMA = {
    "model_type": "llama",
    "vocab_size": 1000,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}
CARRIERS = ("config", "index", "header")


def document(carrier: str, hostile: str) -> bytes:
    """A valid document of the carrier's kind with ``hostile`` as the value of a key llmcount does not read."""
    if carrier == "config":
        base = json.dumps(LLAMA)
    elif carrier == "index":
        base = json.dumps({"metadata": {"total_size": 2}, "weight_map": {}})
    else:  # inside a tensor's entry, beside dtype, shape and offsets (the safetensors library ignores such keys)
        base = json.dumps({"w": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}})[:-1]
    return (base[:-1] + ', "unread": ' + hostile + "}" + ("}" if carrier == "header" else "")).encode()


def attack(tmp_path: Path, carrier: str, text: bytes):
    """Run the command that reads ``text`` as the carrier's file; return the CliRunner result and the file."""
    config = tmp_path / "config.json"
    if carrier == "config":
        config.write_bytes(text)
        return run("count", str(config)), config
    config.write_text(json.dumps(LLAMA))
    if carrier == "index":
        index = tmp_path / "model.safetensors.index.json"
        index.write_bytes(text)
        return run("verify", str(config), "--index", str(index), "--dtype", "bf16"), index
    file = tmp_path / "model.safetensors"
    file.write_bytes(struct.pack("<Q", len(text)) + text + bytes(2))
    return run("verify", str(config), "--checkpoint", str(file)), file


def test_the_carriers_accept_a_harmless_extra_key(tmp_path: Path) -> None:
    for carrier in CARRIERS:
        folder = tmp_path / carrier
        folder.mkdir()
        result, _ = attack(folder, carrier, document(carrier, '{"a": [1, 2.5, "x", null, true]}'))
        assert result.exit_code == 0, (carrier, result.output)


HOSTILE = {
    "integer_of_101_digits": ("9" * (MAX_DIGITS + 1), ["101 digits"]),
    "integer_past_pythons_int_limit": ("-" + "9" * 5000, ["5,000 digits"]),
    "float_of_200_characters": ("0." + "1" * 200, ["characters"]),
    "nan": ("NaN", ["NaN", "refused"]),
    "infinity": ("Infinity", ["Infinity"]),
    "minus_infinity": ("-Infinity", ["Infinity"]),
    "float_overflowing_to_infinity": ("1e999", ["1e999", "infinity"]),
    "negative_float_overflowing": ("-1e999", ["-1e999"]),
    "duplicate_key_nested": ('{"a": 1, "b": 2, "a": 3}', ["'a'", "twice"]),
    "nesting_one_level_too_deep": ("[" * MAX_DEPTH + "]" * MAX_DEPTH, ["nested", str(MAX_DEPTH)]),
    "nesting_past_json_recursion": ("[" * 100_000 + "]" * 100_000, ["nested"]),
    "unclosed_nesting_past_json_recursion": ("[" * 100_000, ["nested"]),
    "objects_nested_too_deep": ('{"a":' * 200 + "1" + "}" * 200, ["nested"]),
    "trailing_comma": ("[1, 2,]", ["invalid JSON", "line 1"]),
    "single_quotes": ("{'a': 1}", ["invalid JSON"]),
    "control_character_in_string": ('"a\tb"', ["invalid JSON"]),
    "unpaired_high_surrogate": ('"\\ud800"', ["unpaired surrogate"]),
    "unpaired_low_surrogate_after_a_pair": ('"\\ud83d\\ude00\\udc00"', ["unpaired surrogate"]),
    "unpaired_surrogate_in_a_key": ('{"\\udfff": 1}', ["unpaired surrogate"]),
}


# A config is read as transformers reads it (Python's json): these are floats there, refused only in a key llmcount
# reads (tests/test_config_constants.py). An index and a header stay strict, as the safetensors library is.
NON_FINITE = {"nan", "infinity", "minus_infinity", "float_overflowing_to_infinity", "negative_float_overflowing"}


@pytest.mark.parametrize("carrier", CARRIERS)
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_value_under_an_unread_key(tmp_path: Path, carrier: str, name: str) -> None:
    hostile, needles = HOSTILE[name]
    if carrier == "config" and name in NON_FINITE:
        result, _ = attack(tmp_path, carrier, document(carrier, hostile))
        assert result.exit_code == 0, result.output
        return
    start = time.process_time()
    result, file = attack(tmp_path, carrier, document(carrier, hostile))
    assert time.process_time() - start < 2
    assert_refused(result, file.name, *needles)


def test_paired_surrogates_are_read(tmp_path: Path) -> None:
    result, _ = attack(tmp_path, "config", document("config", '"\\ud83d\\ude00 and \\\\ud800 escaped"'))
    assert result.exit_code == 0, result.output


def test_integer_of_100_digits_is_read(tmp_path: Path) -> None:
    result, _ = attack(tmp_path, "config", document("config", "9" * MAX_DIGITS))
    assert result.exit_code == 0, result.output


def test_nesting_at_the_limit_is_read(tmp_path: Path) -> None:
    depth = MAX_DEPTH - 1  # the document itself is the first level
    result, _ = attack(tmp_path, "config", document("config", "[" * depth + "]" * depth))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("carrier", CARRIERS)
def test_duplicate_key_at_top_level_names_the_key(tmp_path: Path, carrier: str) -> None:
    text = document(carrier, "1").replace(b"1}", b'1, "unread": 2}', 1)
    result, file = attack(tmp_path, carrier, text)
    assert_refused(result, file.name, "'unread'", "twice")


def test_duplicate_key_llmcount_reads_is_not_silently_last_wins(tmp_path: Path) -> None:
    text = json.dumps(LLAMA)[:-1] + ', "hidden_size": 4096}'
    result, _ = attack(tmp_path, "config", text.encode())
    assert_refused(result, "'hidden_size'", "twice", "line 1")


@pytest.mark.parametrize("carrier", CARRIERS)
@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("invalid_utf8", b'{"a": "\xff\xfe"}', "not UTF-8"),
        ("utf16", '{"a": 1}'.encode("utf-16"), "not UTF-8"),
        ("empty", b"", "empty"),
        ("whitespace_only", b"   \n", "empty"),
        ("utf8_bom", b"\xef\xbb\xbf" + json.dumps(LLAMA).encode(), "byte-order mark (BOM)"),
        ("two_documents", b"{} {}", "invalid JSON"),
        ("nul_bytes", b"\0" * 64, "invalid JSON"),
    ],
)
def test_not_json_text(tmp_path: Path, carrier: str, name: str, text: bytes, needle: str) -> None:
    result, file = attack(tmp_path, carrier, text)
    assert_refused(result, file.name, needle)


@pytest.mark.parametrize("carrier", CARRIERS)
def test_too_many_values_refused_before_parsing(tmp_path: Path, carrier: str) -> None:
    hostile = "[" + "0," * MAX_VALUES + "0]"
    start = time.process_time()
    result, file = attack(tmp_path, carrier, document(carrier, hostile))
    assert time.process_time() - start < 2
    assert_refused(result, file.name, "too many JSON values")


@pytest.mark.parametrize("carrier", CARRIERS)
def test_too_many_arrays(tmp_path: Path, carrier: str) -> None:
    hostile = "[" * 600_000  # few values, many containers (and unbalanced)
    result, file = attack(tmp_path, carrier, document(carrier, hostile))
    assert_refused(result, file.name, "too many JSON arrays")


# ---------------------------------------------------------------------------------------------
# files that are not regular files, or too big: refused from their stat, never read


def _not_regular(tmp_path: Path, kind: str, suffix: str = ".json") -> str:
    if kind == "fifo":
        path = tmp_path / f"fifo{suffix}"
        os.mkfifo(path)  # opening it for reading would block forever
        return str(path)
    if kind == "symlink_to_dev_zero":
        path = tmp_path / f"zero{suffix}"
        path.symlink_to("/dev/zero")  # reading it would never end
        return str(path)
    return kind


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "/dev/null", "symlink_to_dev_zero"])
def test_config_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    path = _not_regular(tmp_path, kind)
    assert_refused(run("count", path), path, "not a regular file")


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "symlink_to_dev_zero"])
def test_index_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    path = _not_regular(tmp_path, kind)
    assert_refused(run("verify", "qwen3-8b", "--index", path), path, "not a regular file")


@pytest.mark.parametrize("kind", ["fifo", "symlink_to_dev_zero"])
def test_safetensors_file_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    path = _not_regular(tmp_path, kind, ".safetensors")
    assert_refused(run("verify", "qwen3-8b", "--checkpoint", path), path, "not a regular file")


def test_index_that_is_a_folder(tmp_path: Path) -> None:
    assert_refused(run("verify", "qwen3-8b", "--index", str(tmp_path)), str(tmp_path), "folder")


def test_config_json_that_is_a_folder(tmp_path: Path) -> None:
    (tmp_path / "config.json").mkdir()
    assert_refused(run("count", str(tmp_path)), "config.json", "folder")


@pytest.mark.parametrize("carrier", ["config", "index"])
def test_file_over_the_size_limit_is_not_read(tmp_path: Path, carrier: str) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA))
    big = tmp_path / "big.json"
    with big.open("wb") as file:
        file.truncate(MAX_BYTES + 1)  # sparse: costs no disk, and would cost 100 MB to read
    args = ["count", str(big)] if carrier == "config" else ["verify", str(config), "--index", str(big)]
    start = time.process_time()
    assert_refused(run(*args), "big.json", "over the limit")
    assert time.process_time() - start < 1


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak memory from /proc")
def test_large_hostile_file_in_bounded_time_and_memory(tmp_path: Path) -> None:
    """Just under the limits, the costliest documents still parse (or fail) in ~2 s and well under 500 MB."""
    big = tmp_path / "big.json"
    keys = ",".join(f'"k{i}": {{}}' for i in range(MAX_VALUES // 2 - 10))
    big.write_text("{" + keys + ', "pad": "' + "x" * (MAX_BYTES - len(keys) - 100) + '"}')
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so the child would report pytest's own peak
    script = (
        "import re, sys, time\n"
        "from llmcount.files import read_json\n"
        "start = time.process_time(); read_json(sys.argv[1])\n"
        "peak = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
        "print(time.process_time() - start, int(peak) // 1024)\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", script, str(big)], capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    ]
    seconds = min(float(out.split()[0]) for out in runs)  # the quicker of two: the other tests share the cores
    megabytes = max(int(out.split()[1]) for out in runs)
    assert megabytes < 500, runs
    assert seconds < 3, runs  # CPU seconds (~1.7 on an idle core): wall time depends on the load


# ---------------------------------------------------------------------------------------------
# properties: any bytes parse or give one LlmcountError, quickly


def _check(raw: bytes) -> None:
    start = time.process_time()
    try:
        parse_json(raw, "x.json")
    except LlmcountError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("x.json: ")
    assert time.process_time() - start < 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=512))
def test_any_bytes_parse_or_give_one_error(raw: bytes) -> None:
    _check(raw)


_JSONISH = st.sampled_from([*'{}[],:"\\0123456789-+.eEtrufalsnNIy \n', "NaN", "Infinity", "\\u", "\\ud800"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_JSONISH, max_size=200))
def test_any_json_like_text_parses_or_gives_one_error(tokens: list[str]) -> None:
    _check("".join(tokens).encode())


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(_VALUES, st.integers(min_value=0, max_value=400), st.binary(min_size=1, max_size=3))
def test_valid_json_mutated_parses_or_gives_one_error(value, position: int, junk: bytes) -> None:
    raw = json.dumps(value).encode()  # NaN and Infinity included: they must be refused, not read
    _check(raw)
    at = position % (len(raw) + 1)
    _check(raw[:at] + junk + raw[at:])
