"""A :class:`~llmcount.quant.stored.Plan` as ``memory`` and ``verify`` show it: memory lines (stored weights,
quantisation storage) and one row per tensor group with its bits per weight."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sympy import Rational, Symbol

from ..errors import LlmcountError
from ..formulas.config import Model
from ..formulas.memory import Line
from .config import Quant, from_options, read_quant
from .stored import CODE_BITS, Plan, plan, rest_dtype

P_q = Symbol("P_q", positive=True, integer=True)
"""The parameters a scheme converts (quantised weights)."""
P_k = Symbol("P_k", positive=True, integer=True)
"""The parameters it leaves in the checkpoint's dtype."""


@dataclass(frozen=True)
class Row:
    """One tensor group as stored."""

    path: str
    parameters: int
    stored_as: str
    bytes: int
    storage: int  # of which quantisation storage (scales, zeros, ...)

    @property
    def bits(self) -> Fraction:
        """Bits per parameter, storage included."""
        return Fraction(self.bytes * 8, self.parameters) if self.parameters else Fraction(0)


def scheme_for(config: Any, where: str, name: str | None, bits: int | None, group_size: int | None) -> Quant | None:
    """The scheme ``memory`` sizes: ``--quant NAME`` (``none``: none), else the config's own."""
    if name is not None:
        if name == "none":
            if bits is not None:
                raise LlmcountError("--bits needs --quant")
            return None
        return from_options(name, bits, group_size)
    if bits is not None:
        raise LlmcountError("--bits needs --quant")
    return read_quant(config, where)


def lines(stored: Plan) -> tuple[tuple[Line, ...], tuple[Row, ...]]:
    """Memory lines: the weights as stored (packed and kept tensors) and the quantisation storage, each with a
    formula over P_q (converted parameters) and P_k (kept ones); and one row per tensor group."""
    converted = kept = packed = storage = kept_bytes = 0
    rows = []
    for group in stored.groups:
        for t in group.tensors:
            if t.suffix == "":
                kept += t.shape[0]
                kept_bytes += t.bytes
            elif t.weight:
                packed += t.bytes
            else:
                storage += t.bytes
        converted_here = group.parameters - sum(t.shape[0] for t in group.tensors if t.suffix == "")
        converted += converted_here
        rows.append(Row(group.path, group.parameters, group.stored_as, group.bytes, group.storage_bytes))
    label = stored.quant.label
    dtype_bits = CODE_BITS[stored.dtype]
    weights_formula = Rational(dtype_bits, 8) * P_k
    if converted:
        ratio = Rational(packed, converted)
        weights_formula += ratio * P_q if ratio.q <= 4096 else Rational(packed)
    note = (
        f"as stored: {label} for P_q = {converted:,} parameters, {stored.dtype} for the other P_k = {kept:,} "
        f"({stored.quant.scheme.source})"
    )
    if stored.notes:
        note += "; " + "; ".join(stored.notes)
    out = [Line("weights", weights_formula, packed + kept_bytes, note)]
    if storage:
        what = ", ".join(
            dict.fromkeys(t.suffix.lstrip("._") for g in stored.groups for t in g.tensors if t.suffix and not t.weight)
        )
        storage_note = f"{label}: {what}, as the quantiser writes them (per tensor group: memory --json)"
        ratio = Rational(storage, converted) if converted else None
        # per parameter when that is a plain fraction (MXFP4: P_q/32); else the exact bytes (ceilings at the edges)
        formula = ratio * P_q if ratio is not None and ratio.q <= 4096 else Rational(storage)
        out.append(Line("quantisation_scales", formula, storage, storage_note))
    return tuple(out), tuple(rows)


def model_plan(model: Model, quant: Quant, dtype: str | None, where: str) -> Plan:
    """The plan of ``model`` under ``quant``, its unquantised tensors in ``dtype`` (else the config's); skip-list
    entries that name no module of the model are said on stderr (:func:`warn_unmatched`)."""
    code, note = rest_dtype(quant, model.dtype, dtype, where)
    stored = plan(model, quant, code, note)
    warn_unmatched(stored, model, where)
    return stored


_WARNED: set[tuple[str, tuple[str, ...]]] = set()


def unmatched_message(stored: Plan, model: Model, where: str) -> str:
    """The line that says which skip-list entries match no module of ``model`` ("" when all match)."""
    if not stored.unmatched or not stored.quant.stated:
        return ""
    key = {"bitsandbytes": "llm_int8_skip_modules", "compressed-tensors": "ignore"}
    name = key.get(stored.quant.scheme.method, "modules_to_not_convert")
    entries = ", ".join(repr(e) for e in stored.unmatched[:5]) + (
        f" and {len(stored.unmatched) - 5} more" if len(stored.unmatched) > 5 else ""
    )
    return (
        f"llmcount: warning: {where}: quantization_config.{name}: {entries} "
        f"{'matches' if len(stored.unmatched) == 1 else 'match'} no module of the "
        f"{model.architecture.name} model (its modules are named as transformers names them), so they leave "
        "nothing unconverted"
    )


def warn_unmatched(stored: Plan, model: Model, where: str) -> None:
    """:func:`unmatched_message` on stderr, once per config and entries."""
    import sys

    message = unmatched_message(stored, model, where)
    if message and (where, stored.unmatched) not in _WARNED:
        _WARNED.add((where, stored.unmatched))
        print(" ".join(message.split()), file=sys.stderr)


def short_dtype(code: str) -> str:
    """llmcount's short name of a safetensors dtype code (``BF16`` -> ``bf16``)."""
    from .stored import DTYPE_CODES

    return next(short for short, c in DTYPE_CODES.items() if c == code)


def rows_data(rows: tuple[Row, ...]) -> list[dict[str, Any]]:
    return [
        {
            "path": r.path,
            "parameters": r.parameters,
            "stored_as": r.stored_as,
            "bytes": r.bytes,
            "storage_bytes": r.storage,
            "bits_per_parameter": float(r.bits),
        }
        for r in rows
    ]


TABLE_SCHEMES = (
    ("fp8-block", None, None),
    ("nvfp4", None, None),
    ("mxfp4", None, None),
    ("gptq", 4, 128),
    ("awq", 4, 128),
    ("nf4", None, None),
    ("nf4-double", None, None),
    ("int8", None, None),
    ("mlx", 4, 64),
    ("mlx", 8, 64),
)
"""The schemes ``memory --table`` sets side by side, with their usual sizes."""

TABLE_FILE_TYPES = ("q8_0", "q6_k", "q5_k_m", "q4_k_m", "iq4_xs")
"""The llama.cpp file types ``memory --table`` adds (llama.cpp's choice of type per tensor; tensor data only)."""


@dataclass(frozen=True)
class SchemeRow:
    name: str  # as --quant takes it, with bits and group: awq-int4-g128
    label: str
    parameters: int
    converted: int  # parameters the scheme quantises
    bytes: int

    @property
    def bits(self) -> Fraction:
        return Fraction(self.bytes * 8, self.parameters)

    @property
    def gib(self) -> float:
        return self.bytes / 2**30


def scheme_table(model: Model, dtype: str | None) -> tuple[list[SchemeRow], list[str]]:
    """The model's weights under each scheme of :data:`TABLE_SCHEMES` (what a scheme leaves alone in ``dtype``,
    else the config's, else bf16), and a line per scheme that cannot store it (a width its packer refuses)."""
    rows, refused = [], []
    for name, bits, group in TABLE_SCHEMES:
        quant = from_options(name, bits, group)
        shown = name if bits is None else f"{name}-int{bits}-g{group}" if name != "mlx" else f"mlx-{bits}bit-g{group}"
        try:
            stored = model_plan(model, quant, dtype or model.dtype or "bf16", shown)
        except LlmcountError as exc:
            refused.append(f"{shown}: {exc}")
            continue
        converted = sum(g.parameters for g in stored.groups if g.stored_as != stored.dtype)
        rows.append(SchemeRow(shown, quant.label, stored.parameters, converted, stored.bytes))
    for ftype in TABLE_FILE_TYPES:
        try:
            rows.append(_file_type_row(model, ftype))
        except LlmcountError as exc:
            refused.append(f"{ftype}: {exc}")
    return rows, refused


def _file_type_row(model: Model, ftype: str) -> SchemeRow:
    """The GGUF llama.cpp's llama-quantize makes for ``ftype``: every tensor in the type llama.cpp picks for it
    (:func:`llmcount.gguf_quant.predict`), bytes from gguf's GGML_QUANT_SIZES; parameters as the model defines them."""
    from .count import gguf_summary

    summary = gguf_summary(model, ftype)
    kept = sum(p.parameters for p in summary.parts if p.what in ("F32", "F16", "BF16"))
    return SchemeRow(ftype, summary.scheme, model.counts.total, model.counts.total - kept, summary.bytes)
