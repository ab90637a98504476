"""The one dtype vocabulary of llmcount: the names a user may type anywhere a dtype is asked for.

``memory --dtype``, ``memory --kv-dtype``, ``verify --dtype`` and ``writeup --dtype`` all read a name through
:func:`lookup`: a short name (``bf16``), torch's name (``bfloat16``, also as ``torch.bfloat16``) or one of the
usual aliases (``half``, ``float``), case-insensitive. Each dtype has one canonical short name, its width in
bits and, where torch has the dtype, torch's name (which is also what a config's ``torch_dtype`` says).

Widths: an fp8 value is 8 bits whatever its exponent/mantissa split (e4m3 or e5m2); int4 is 4 bits, two values
per byte. (The dtypes a safetensors header names, ``BF16``, ``F8_E4M3``, ... are a file format's codes and live
with the reader in ``checkpoint.py``.)
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import LlmcountError


@dataclass(frozen=True)
class DType:
    """One dtype: its canonical short name, width, torch's name (``None``: torch has no such dtype) and aliases."""

    name: str
    bits: int
    torch: str | None
    aliases: tuple[str, ...] = ()


DTYPES: tuple[DType, ...] = (
    DType("fp64", 64, "float64", ("f64", "double")),
    DType("fp32", 32, "float32", ("f32", "float")),
    DType("fp16", 16, "float16", ("f16", "half")),
    DType("bf16", 16, "bfloat16"),
    DType("fp8", 8, "float8_e4m3fn", ("f8_e4m3", "float8", "fp8_e4m3")),
    DType("fp8_e5m2", 8, "float8_e5m2", ("f8_e5m2",)),
    DType("int8", 8, "int8", ("i8",)),
    DType("int4", 4, None, ("i4",)),
)
"""Every dtype llmcount knows, widest first."""

BY_NAME: dict[str, DType] = {t.name: t for t in DTYPES}
BITS: dict[str, int] = {t.name: t.bits for t in DTYPES}
"""Bits per value, by canonical short name."""
TORCH_NAMES: dict[str, str] = {t.torch: t.name for t in DTYPES if t.torch}
"""torch's name of a dtype -> llmcount's short name."""

_NAMES: dict[str, DType] = {}
for _t in DTYPES:
    for _key in (_t.name, *([_t.torch] if _t.torch else []), *_t.aliases):
        _NAMES[_key] = _t


def choices() -> str:
    """The canonical names, for an error message: ``fp64, fp32, ..., int4``."""
    return ", ".join(BITS)


def lookup(name: object) -> DType:
    """The dtype a user or a config names (``bf16``, ``bfloat16``, ``torch.bfloat16``, ``half``, ``BF16``);
    LlmcountError listing the choices otherwise."""
    key = str(name).strip().lower().removeprefix("torch.")
    found = _NAMES.get(key)
    if found is None:
        raise LlmcountError(f"unknown dtype {name!r}; choices: {choices()} (or torch's names: bfloat16, ...)")
    return found


def canonical(name: object) -> str:
    """The canonical short name of a dtype (``bfloat16`` -> ``bf16``)."""
    return lookup(name).name


def nbytes(elements: int, name: str) -> int:
    """Bytes of ``elements`` values of the dtype ``name``, a partly used last byte counted whole (int4)."""
    return -(-elements * lookup(name).bits // 8)
