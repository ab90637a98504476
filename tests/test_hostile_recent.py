"""Hostile input, by class, on the serving, quantisation, verify and training options: each bad value is refused in
one line naming the option or key, never read as if it were left out or as a kind the count does not know."""

from __future__ import annotations

import pytest
from refusal import run

# --- an empty dtype is refused, not read as the default of an option left out --------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("memory", "qwen3-8b", "--kv-dtype", ""),
        ("memory", "qwen3-8b", "--engine", "transformers", "--kv-dtype", ""),
        ("memory", "qwen3-8b", "--dtype", " "),
        ("memory", "qwen3-8b", "--quant", "gptq", "--bits", "4", "--scale-dtype", ""),
        ("fit", "qwen3-8b", "--gpu", "h100-sxm", "--dtype", ""),
        ("fit", "qwen3-8b", "--gpu", "h100-sxm", "--kv-dtype", ""),
        ("speed", "qwen3-8b", "--gpu", "h100-sxm", "--kv-dtype", ""),
        ("count", "qwen3-8b", "--quant", "gptq", "--dtype", ""),
    ],
    ids=lambda a: "-".join(x or "EMPTY" for x in a[::2] if x is not None)[:60],
)
def test_an_empty_dtype_is_a_usage_error(args: tuple[str, ...]) -> None:
    result = run(*args)
    assert result.exit_code in (1, 2), result.output  # 2 from the option's check; 1 where a fast path reads it
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    option = next(a for a in args if a.endswith("dtype"))
    assert option in lines[0] or "unknown dtype ''" in lines[0].replace("' '", "''"), lines[0]
