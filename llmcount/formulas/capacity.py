"""Memory at a glance: the weights in every dtype side by side, and what fits in a GPU's memory.

* :func:`weights_table`: :math:`\\lceil P\\,b/8 \\rceil` bytes for each dtype of :data:`TABLE_DTYPES`, and int4 with one
  16-bit (fp16) scale per group of :data:`GROUP` = 128 weights, :math:`\\lceil P/2 \\rceil + 2\\lceil P/128 \\rceil`
  bytes: the scales over every parameter, as ``memory --group-size`` counts them (zero points not counted).
* :func:`fit`: the longest S at B = 1 (at most the model's context length, when its config gives one) and the largest
  B at a given S (said to be past the context length when it is: :attr:`Fit.seq_beyond_context`) whose
  :func:`memory.inference` total (weights, scales, KV cache and the stated overhead, exact bytes) is at most the
  capacity. Found by an integer search over
  ``inference`` itself, so whatever the KV cache does with S (sliding windows stop it growing, fixed recurrent states
  don't grow at all) is taken as it is: the total only has to be non-decreasing in S and in B.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sympy import Symbol

from ..dtypes import BITS, nbytes
from ..errors import LlmcountError
from ..plain_memory import Fit, searched, too_small
from . import memory
from .derivation import Derivation, evaluate_int

TABLE_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
GROUP = 128
SCALE_DTYPE = "fp16"


@dataclass(frozen=True)
class WeightRow:
    name: str
    bits: int
    bytes: int
    note: str

    @property
    def gib(self) -> float:
        return self.bytes / 2**30


def weights_table(parameters: int) -> list[WeightRow]:
    """The bytes of ``parameters`` weights in every dtype of :data:`TABLE_DTYPES`, then int4 with group scales."""
    rows = [WeightRow(name, BITS[name], nbytes(parameters, name), f"{BITS[name]} bits each") for name in TABLE_DTYPES]
    scales = nbytes(-(-parameters // GROUP), SCALE_DTYPE)
    note = f"int4 + one {SCALE_DTYPE} scale per {GROUP} weights (4.125 bits each; no zero points)"
    rows.append(WeightRow(f"int4-g{GROUP}", 4, nbytes(parameters, "int4") + scales, note))
    return rows


def searchable(derivation: Derivation, values: dict[Symbol, int], option: str = "--gpu-memory") -> None:
    """LlmcountError naming ``option`` when the cache does not grow with S for this config, so that the longest S
    cannot be searched: layers that keep what a record's ``[[cache]]`` states (it shrinks when a window of tokens is
    folded into one entry), or a cache that changes beyond the longest S its [attention] describes."""
    family = derivation.architecture
    present = [kept.name for kept in family.caches if evaluate_int(kept.layers, values, kept.name)]
    if present:
        kinds = ", ".join(name.replace("_", " ") for name in present)
        raise LlmcountError(
            f"{option} is not derived for {family.title} ({family.name}): the cache of its {kinds} layers "
            "shrinks when a window of tokens is folded into one entry, so the longest S that fits is not searched; "
            "memory --seq gives the bytes at one S"
        )
    spec = family.attention
    if spec is not None and spec.beyond_kv is not None and spec.limit(values) is not None:
        raise LlmcountError(
            f"{option} is not derived for {family.title} ({family.name}): its cache changes beyond S = "
            f"{spec.limit(values):,} ({spec.beyond_note or spec.beyond}), so the total is not searched as S grows; "
            "memory --seq gives the bytes at one S"
        )


def fit(
    derivation: Derivation,
    values: dict[Symbol, int],
    capacity: int,
    dtype_name: str = "bf16",
    kv_dtype: str | None = None,
    seq: int = 4096,
    overhead_percent: int = 0,
    group_size: int | None = None,
    scale_dtype: str = "fp16",
    max_positions: int | None = None,
    whole: Callable[[memory.Memory], memory.Memory] | None = None,
) -> Fit:
    """The longest S (B = 1), at most ``max_positions`` (the model's context length) when given, and the largest B
    (at ``seq``) that fit; LlmcountError when the weights alone don't, or when the config has layers that keep what
    a record's ``[[cache]]`` states or another cache beyond the longest S its [attention] describes (the search
    needs a total that does not decrease as S grows). ``whole``: a composite's inference memory from its language
    model's (the parts' weights added, :func:`llmcount.formulas.tower_memory.with_parts`)."""
    searchable(derivation, values)

    def total(s: int, b: int) -> memory.Memory:
        found = language(s, b)
        return found if whole is None else whole(found)

    def language(s: int, b: int) -> memory.Memory:
        return memory.inference(
            derivation,
            values,
            dtype_name=dtype_name,
            kv_dtype=kv_dtype,
            seq=s,
            batch=b,
            group_size=group_size,
            scale_dtype=scale_dtype,
            overhead_percent=overhead_percent,
        )

    first = total(1, 1)
    weights = first.bytes_of("weights") + first.bytes_of("quantisation_scales")
    if weights > capacity:
        raise too_small(capacity, weights, first.dtype)
    return searched(total, first, weights, capacity, seq, max_positions, overhead_percent)
