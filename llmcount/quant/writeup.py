"""The quantisation section of a write-up: the scheme the config declares (or ``--quant`` names) and a table of bits
per weight by tensor class: the packed weights, each storage tensor (scales, zero points, ...), and what the scheme
leaves in the checkpoint dtype, from :func:`llmcount.quant.stored.plan`. Exact integers and Fractions; the
templates format them."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import LlmcountError
from .count import declares  # noqa: F401  (the write-up asks whether a config declares a quantisation)


@dataclass(frozen=True)
class TensorClass:
    """One kind of stored tensor: its name (the suffix the quantiser writes, or the dtype of what is kept), its
    dtype, its shape per weight (out, in) as the scheme writes it, its bytes and bits per parameter it covers."""

    name: str
    dtype: str
    shape: str
    bytes: int
    parameters: int  # the parameters whose bits it counts: the quantised ones, or the kept ones
    weight: bool  # the tensor holding the weights (packed or kept), not storage

    @property
    def bits(self) -> Fraction:
        return Fraction(8 * self.bytes, self.parameters) if self.parameters else Fraction(0)


@dataclass(frozen=True)
class QuantPart:
    scheme: str  # in words, as the config sets it
    name: str
    source: str
    parameters: int
    quantised: int  # parameters the scheme converts
    kept: int
    kept_dtype: str
    kept_paths: tuple[str, ...]  # components left wholly in the checkpoint dtype
    classes: tuple[TensorClass, ...]
    bytes: int
    notes: tuple[str, ...]
    plan: Any = None  # the llmcount.quant.stored.Plan the numbers come from (the speed paragraph reads its bytes)

    @property
    def bits(self) -> Fraction:
        return Fraction(8 * self.bytes, self.parameters)

    @property
    def scheme_zh(self) -> str:
        """The scheme in Chinese, for the zh write-up."""
        return self.plan.quant.label_zh if self.plan is not None else self.scheme

    @property
    def quantised_bits(self) -> Fraction:
        """Bits per quantised parameter: the packed weight and its storage."""
        total = sum(c.bytes for c in self.classes if c.name != self.kept_dtype)
        return Fraction(8 * total, self.quantised) if self.quantised else Fraction(0)


def _shape(text: str, sizes: dict[str, int]) -> str:
    """A scheme's shape formula for reading: its sizes substituted, ``cdiv(a, b)`` as ⌈a/b⌉, ``*`` as ·."""
    import re

    text = re.sub(r"\b(bits|g|b0|b1|bs|p)\b", lambda m: str(sizes.get(m.group(1), m.group(1))), text)
    text = text.replace("out_f", "out").replace("in_f", "in").replace(" * ", "·").replace(" // ", "/")
    while True:  # the innermost first
        done = re.sub(r"cdiv\(([^(),]+), ([^(),]+)\)", r"⌈\1/\2⌉", text)
        if done == text:
            return text
        text = done


@dataclass(frozen=True)
class _Label:
    label: str
    label_zh: str


@dataclass(frozen=True)
class _Group:
    path: str
    parameters: int
    bytes: int


@dataclass(frozen=True)
class GgufPlan:
    """A GGUF file's tensors as the speed paragraph reads a plan: per component its elements and stored bytes, the
    file type as the scheme's label."""

    quant: _Label
    groups: tuple[_Group, ...]
    dtype: str


FLOAT_TYPES = ("F64", "F32", "F16", "BF16")
"""ggml types that hold each value whole: what a GGUF file keeps unquantised."""


def gguf_part(spec: str) -> QuantPart:
    """The section's numbers for a GGUF file: its tensors by ggml type, as the file stores them (the gguf package's
    GGML_QUANT_SIZES), the file type as the scheme."""
    from ..gguf_model import file_type, stored

    g, _model, groups = stored(spec)
    name = file_type(g).removeprefix("MOSTLY_")
    by_type: dict[str, list[int]] = {}
    for group in groups:
        for kind, (elements, size) in group.types.items():
            slot = by_type.setdefault(kind, [0, 0])
            slot[0] += elements
            slot[1] += size
    kept_types = [k for k in by_type if k in FLOAT_TYPES]
    kept = sum(by_type[k][0] for k in kept_types)
    quantised = sum(v[0] for k, v in by_type.items() if k not in FLOAT_TYPES)
    classes = tuple(
        TensorClass(kind, kind, "", size, elements, True)  # each type's bits over the values it holds
        for kind, (elements, size) in sorted(by_type.items(), key=lambda kv: (kv[0] in FLOAT_TYPES, -kv[1][1]))
    )
    kept_dtype = "/".join(kept_types) or "-"
    plan = GgufPlan(
        _Label(f"{name} (the GGUF file's tensors)", f"{name}（GGUF 文件中的张量）"),
        tuple(_Group(group.path, group.elements, group.bytes) for group in groups),
        kept_dtype,
    )
    return QuantPart(
        f"{name} (the GGUF file's tensors)",
        "gguf",
        "the ggml type of each tensor as the file stores it, bytes from the gguf package's GGML_QUANT_SIZES",
        quantised + kept,
        quantised,
        kept,
        kept_dtype,
        (),
        classes,
        sum(group.bytes for group in groups),
        (),
        plan,
    )


def quant_part(model: Any, config: Any, where: str, dtype: str | None = None, spec: Any = None) -> QuantPart:
    """The section's numbers for the scheme ``config`` declares, or a GGUF file's (``spec`` naming one); refused by
    name when it declares none."""
    from ..gguf_file import is_gguf
    from .config import read_quant
    from .report import model_plan

    if is_gguf(spec):
        return gguf_part(spec)
    quant = read_quant(config, where)
    if quant is None:
        raise LlmcountError(f"--sections quant: {where} declares no quantisation (quantization_config)")
    stored = model_plan(model, quant, dtype, where)
    sizes = {**(quant.scheme.sizes or {}), **quant.sizes}
    shapes = {t.suffix.lstrip("._"): ", ".join(_shape(x, sizes) for x in t.shape) for t in quant.scheme.tensors}
    by_name: dict[str, list] = {}
    converted = kept = 0
    kept_paths = []
    for group in stored.groups:
        held = sum(t.shape[0] for t in group.tensors if t.suffix == "")
        converted += group.parameters - held
        kept += held
        if group.stored_as == stored.dtype:
            kept_paths.append(group.path)
        for t in group.tensors:
            name = t.suffix.lstrip("._") or stored.dtype
            slot = by_name.setdefault(name, [t.dtype, 0, t.weight])
            slot[1] += t.bytes
    classes = []
    for name, (code, size, weight) in by_name.items():
        is_kept = name == stored.dtype
        base = name.removeprefix("weight.").split(".quant_state.")[0]
        shape = shapes.get(name, shapes.get(base, "")) if not is_kept else ""
        classes.append(TensorClass(name, code, shape, size, kept if is_kept else converted, weight))
    classes.sort(key=lambda c: (c.name == stored.dtype, not c.weight))  # packed weight, storage, then kept
    return QuantPart(
        quant.label,
        quant.name,
        quant.scheme.source,
        stored.parameters,
        converted,
        kept,
        stored.dtype,
        tuple(kept_paths),
        tuple(classes),
        stored.bytes,
        stored.notes,
        stored,
    )


def part_data(part: QuantPart) -> dict[str, Any]:
    """The JSON form of the section."""
    return {
        "scheme": part.scheme,
        "name": part.name,
        "source": part.source,
        "bytes": part.bytes,
        "parameters": part.parameters,
        "quantised_parameters": part.quantised,
        "kept_parameters": part.kept,
        "kept_dtype": part.kept_dtype,
        "kept_components": list(part.kept_paths),
        "bits_per_parameter": float(part.bits),
        "tensors": [
            {"tensor": c.name, "dtype": c.dtype, "shape": c.shape, "bytes": c.bytes, "bits": float(c.bits)}
            for c in part.classes
        ],
    }
