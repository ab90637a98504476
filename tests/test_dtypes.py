"""One dtype vocabulary for the whole tool: ``memory``, ``verify`` and ``writeup`` accept the same names.

Widths by definition (IEEE 754 binary64/32/16, bfloat16's 1+8+7 bits, OCP FP8 e4m3/e5m2, int8, int4 two per byte),
torch's names as ``torch.<name>`` spells them.
"""

from __future__ import annotations

import json

import pytest
from refusal import assert_refused, run

from llmcount import dtypes
from llmcount.checkpoint import torch_dtype
from llmcount.errors import LlmcountError
from llmcount.formulas import memory

# every name a user may type -> (canonical short name, bits, torch's name or None)
NAMES = {
    "fp64": ("fp64", 64, "float64"),
    "float64": ("fp64", 64, "float64"),
    "double": ("fp64", 64, "float64"),
    "fp32": ("fp32", 32, "float32"),
    "float32": ("fp32", 32, "float32"),
    "float": ("fp32", 32, "float32"),
    "f32": ("fp32", 32, "float32"),
    "fp16": ("fp16", 16, "float16"),
    "float16": ("fp16", 16, "float16"),
    "half": ("fp16", 16, "float16"),
    "bf16": ("bf16", 16, "bfloat16"),
    "bfloat16": ("bf16", 16, "bfloat16"),
    "torch.bfloat16": ("bf16", 16, "bfloat16"),
    "BF16": ("bf16", 16, "bfloat16"),
    "fp8": ("fp8", 8, "float8_e4m3fn"),
    "float8_e4m3fn": ("fp8", 8, "float8_e4m3fn"),
    "f8_e4m3": ("fp8", 8, "float8_e4m3fn"),
    "float8_e5m2": ("fp8_e5m2", 8, "float8_e5m2"),
    "int8": ("int8", 8, "int8"),
    "int4": ("int4", 4, None),
}


@pytest.mark.parametrize("name", list(NAMES))
def test_one_vocabulary(name: str) -> None:
    short, bits, torch_name = NAMES[name]
    found = dtypes.lookup(name)
    assert (found.name, found.bits, found.torch) == (short, bits, torch_name)
    # memory (and verify --index, which reads --dtype through memory.dtype) says the same
    assert memory.dtype(name) == short and memory.BITS[short] == bits
    # writeup --index reads a dtype through checkpoint.torch_dtype: torch's name and whole bytes
    if torch_name is None:
        with pytest.raises(LlmcountError, match="int4"):
            torch_dtype(name, "--dtype")
    else:
        assert torch_dtype(name, "--dtype") == (torch_name, bits // 8)


def test_unknown_names_are_refused_everywhere() -> None:
    for name in ("fp7", "e5m2", "int3", ""):
        with pytest.raises(LlmcountError, match="unknown dtype"):
            dtypes.lookup(name)
        with pytest.raises(LlmcountError, match="unknown dtype"):
            torch_dtype(name, "--dtype")


def test_memory_accepts_torch_names() -> None:
    # Llama-3-8B: 8,030,261,248 parameters (tests/test_conventions.py), 2 bytes each in bfloat16
    for name in ("bf16", "bfloat16", "torch.bfloat16"):
        data = json.loads(run("memory", "llama-3-8b", "--dtype", name, "--json").stdout)
        assert data["dtype"] == "bf16" and data["weights_bytes"] == 2 * 8_030_261_248
    # fp8 by its torch name: 1 byte each, KV cache left in bf16
    data = json.loads(run("memory", "llama-3-8b", "--dtype", "float8_e4m3fn", "--json").stdout)
    assert (data["weights_bytes"], data["kv_dtype"]) == (8_030_261_248, "bf16")


def test_the_refusal_lists_the_vocabulary() -> None:
    assert_refused(run("memory", "llama-3-8b", "--dtype", "fp7"), "'fp7'", "fp32", "bf16", "fp8", "int4")


def test_nbytes_rounds_int4_up() -> None:
    assert (dtypes.nbytes(3, "int4"), dtypes.nbytes(3, "bf16"), dtypes.nbytes(3, "fp8_e5m2")) == (2, 6, 3)
