"""Sizes typed by a user where a count of tokens or sequences is expected: ``4096``, ``32k``, ``128K``, ``1M``.

k/K and m/M are powers of 1024, as people mean them for context lengths: a "32k context" is 32,768
tokens and Llama 3.1's "128K" is 131,072. (Parameter counts, ``--target 7B``, are decimal: see
analysis.parse.parse_count.)
"""

from __future__ import annotations

import re
from fractions import Fraction

from .errors import OptionError


def gb_gib(size: int | Fraction) -> str:
    """Bytes in both units people use, wherever llmcount shows an amount of memory: ``80.00 GB = 74.51 GiB``
    (GB = 10^9 bytes, GiB = 2^30 bytes, two decimals each)."""
    sign = "-" if size < 0 else ""
    size = abs(size)
    return f"{sign}{float(size) / 10**9:,.2f} GB = {sign}{float(size) / 2**30:,.2f} GiB"


SUFFIXES = {"": 1, "k": 2**10, "K": 2**10, "m": 2**20, "M": 2**20}
MAX_DIGITS = 12  # more is a typo (or a number no machine holds tokens for), not a sequence length
SUFFIX_HELP = "k/K = 1024, M = 1024² (32k = 32,768)"
MAX_TEXT = 40  # characters of a typed size: room for 12 digits, separators, a fraction and a unit
_SIZE = re.compile(r"([0-9]+(?:_[0-9]+)*)([kKmM]?)")
_FRACTION = re.compile(r"[0-9_]*[./eE][0-9_./eE+-]*[kKmM]?")


def shown(text: object) -> str:
    """``text`` as an error message quotes it: repr, cut to :data:`MAX_TEXT` characters."""
    quoted = repr(text)
    return quoted if len(quoted) <= MAX_TEXT else f"{quoted[: MAX_TEXT - 1]}…"


def _bounded(value: str, text: object, option: str) -> None:
    if len(value) > MAX_TEXT:
        raise OptionError(f"{option}: {shown(text)} is longer than {MAX_TEXT} characters")


def parse_size(text: str | int, option: str, suffixes: bool = True) -> int:
    """A positive integer, ``32k`` = 32,768 and ``1M`` = 1,048,576 when ``suffixes``; OptionError (an LlmcountError)
    naming ``option`` for a negative, zero, fractional, over-long or malformed value."""
    if isinstance(text, bool):
        raise OptionError(f"{option} must be a positive integer, got {shown(text)}")
    if isinstance(text, int):
        text = str(text)
    if not isinstance(text, str):
        raise OptionError(f"{option} must be a positive integer, got {shown(text)}")
    value = text.strip()
    _bounded(value, text, option)
    example = " like 4096 or 32k (k = 1024)" if suffixes else ""  # a count of GPUs or a rank has no usual size
    match = _SIZE.fullmatch(value)
    if match is None or (match.group(2) and not suffixes):
        if value.startswith("-"):
            why = "negative"
        elif _FRACTION.fullmatch(value) and any(c.isdigit() for c in value):
            why = "not a whole number"
        else:
            why = "not a number"
        raise OptionError(f"{option} must be a positive integer{example}, got {shown(text)} ({why})")
    digits, suffix = match.group(1).replace("_", ""), match.group(2)
    if len(digits.lstrip("0")) > MAX_DIGITS:
        raise OptionError(f"{option}: {shown(text)} has more than {MAX_DIGITS} digits")
    number = int(digits) * SUFFIXES[suffix]
    if number == 0:
        raise OptionError(f"{option} must be a positive integer{example}, got {shown(text)} (zero)")
    return number


# --- amounts of memory: --gpu-memory 80GiB --------------------------------------------------------------------------

BYTE_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
BYTES_HELP = "a number and a unit: GiB/MiB/TiB = 2^30/2^20/2^40 bytes, GB/MB/TB = 10^9/10^6/10^12 (80GiB, 24GB, 141 GB)"
_BYTES = re.compile(r"([0-9]+(?:_[0-9]+)*(?:\.[0-9]+)?)\s*([A-Za-z]+)")


def parse_bytes(text: str, option: str) -> int:
    """An amount of memory in whole bytes: ``80GiB`` = 80·2^30, ``24GB`` = 24·10^9, ``1.5 TB``; a fraction of a
    byte is dropped (a capacity is never rounded up). The unit is required (``80`` alone is refused: GB or GiB?).
    OptionError naming ``option`` otherwise."""
    value = str(text).strip()
    _bounded(value, text, option)
    match = _BYTES.fullmatch(value)
    example = "like 80GiB (2^30 bytes) or 24GB (10^9 bytes)"
    if match is None:
        why = "negative" if value.startswith("-") else "a number and a unit"
        if why != "negative" and re.fullmatch(r"[0-9_.]+", value):
            why = "no unit"
        raise OptionError(f"{option} must be an amount of memory {example}, got {shown(text)} ({why})")
    number, unit = match.group(1).replace("_", ""), match.group(2).lower()
    if unit not in BYTE_UNITS:
        units = "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB"
        raise OptionError(f"{option}: unknown unit {match.group(2)!r}; choose one of {units}")
    if len(number.partition(".")[0].lstrip("0")) > MAX_DIGITS:
        raise OptionError(f"{option}: {shown(text)} has more than {MAX_DIGITS} digits")
    whole, _, fraction = number.partition(".")
    scale = 10 ** len(fraction)
    amount = (int(whole) * scale + int(fraction or "0")) * BYTE_UNITS[unit] // scale
    if amount <= 0:
        raise OptionError(f"{option} must be a positive amount of memory {example}, got {shown(text)}")
    return amount


_DECIMAL = re.compile(r"[0-9]+(?:_[0-9]+)*(?:\.[0-9]+)?")


def parse_positive(text: str, option: str) -> Fraction:
    """A positive decimal number typed by the user (``3500``, ``989.5``), exactly, as a Fraction; OptionError
    naming ``option`` for zero, a negative, an exponent or anything else."""
    value = str(text).strip()
    _bounded(value, text, option)
    if _DECIMAL.fullmatch(value) is None:
        why = "negative" if value.startswith("-") else "not a decimal number"
        raise OptionError(f"{option} must be a positive number like 3500 or 989.5, got {shown(text)} ({why})")
    if len(value.partition(".")[0].replace("_", "").lstrip("0")) > MAX_DIGITS:
        raise OptionError(f"{option}: {shown(text)} has more than {MAX_DIGITS} digits")
    number = Fraction(value.replace("_", ""))
    if number == 0:
        raise OptionError(f"{option} must be a positive number like 3500 or 989.5, got {shown(text)} (zero)")
    return number
