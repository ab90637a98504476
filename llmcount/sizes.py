"""Sizes typed by a user where a count of tokens or sequences is expected: ``4096``, ``32k``, ``128K``, ``1M``.

k/K and m/M are powers of 1024, as people mean them for context lengths: a "32k context" is 32,768
tokens and Llama 3.1's "128K" is 131,072. (Parameter counts, ``--target 7B``, are decimal: see
analysis.parse.parse_count.)
"""

from __future__ import annotations

import re

from .errors import LlmcountError

SUFFIXES = {"": 1, "k": 2**10, "K": 2**10, "m": 2**20, "M": 2**20}
MAX_DIGITS = 12  # more is a typo (or a number no machine holds tokens for), not a sequence length
SUFFIX_HELP = "k/K = 1024, M = 1024² (32k = 32,768)"
_SIZE = re.compile(r"([0-9]+(?:_[0-9]+)*)([kKmM]?)")
_FRACTION = re.compile(r"[0-9_]*[./eE][0-9_./eE+-]*[kKmM]?")


def parse_size(text: str | int, option: str, suffixes: bool = True) -> int:
    """A positive integer, ``32k`` = 32,768 and ``1M`` = 1,048,576 when ``suffixes``; LlmcountError
    naming ``option`` for a negative, zero, fractional, over-long or malformed value."""
    if isinstance(text, bool):
        raise LlmcountError(f"{option} must be a positive integer, got {text!r}")
    if isinstance(text, int):
        text = str(text)
    if not isinstance(text, str):
        raise LlmcountError(f"{option} must be a positive integer, got {text!r}")
    value = text.strip()
    example = "4096 or 32k (k = 1024)" if suffixes else "4096"
    match = _SIZE.fullmatch(value)
    if match is None or (match.group(2) and not suffixes):
        if value.startswith("-"):
            why = "negative"
        elif _FRACTION.fullmatch(value) and any(c.isdigit() for c in value):
            why = "not a whole number"
        else:
            why = "not a number"
        raise LlmcountError(f"{option} must be a positive integer like {example}, got {text!r} ({why})")
    digits, suffix = match.group(1).replace("_", ""), match.group(2)
    if len(digits.lstrip("0")) > MAX_DIGITS:
        raise LlmcountError(f"{option}: {text!r} has more than {MAX_DIGITS} digits")
    number = int(digits) * SUFFIXES[suffix]
    if number == 0:
        raise LlmcountError(f"{option} must be a positive integer like {example}, got {text!r} (zero)")
    return number
