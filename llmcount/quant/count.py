"""The ``stored:`` lines of ``count``: a quantised checkpoint's bytes as its scheme stores them, beside the parameters
as the model defines them (never the packed tensors' element counts).

The parameters come from the record and the config, as ``count`` always gives them; the bytes from the scheme's plan
(:func:`llmcount.quant.stored.plan`) for a safetensors scheme (the config's ``quantization_config`` or ``--quant``),
or from llama.cpp's choice of ggml type per tensor (:func:`llmcount.gguf_quant.predict`) for a llama.cpp file type.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import LlmcountError


@dataclass(frozen=True)
class Part:
    """Some of the stored bytes: what they hold, the parameters they hold (0 for scales and other storage)."""

    what: str
    parameters: int
    bytes: int


@dataclass(frozen=True)
class Summary:
    """A model's weights as one quantised checkpoint stores them, in a few lines."""

    scheme: str  # the scheme in words, as the config sets it: "AWQ int4 (GEMM), group 128"
    name: str  # the scheme's name (as --quant takes it) or the llama.cpp file type
    source: str  # the file and version the layout is transcribed from
    parameters: int  # as the model defines them (the record's count of the config)
    parts: tuple[Part, ...]
    notes: tuple[str, ...] = ()

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.parts)

    @property
    def bits(self) -> Fraction:
        """Bits per parameter, scales and other storage included."""
        return Fraction(8 * self.bytes, self.parameters) if self.parameters else Fraction(0)


def declares(config: Any) -> bool:
    """Whether a config declares a quantisation (transformers' ``quantization_config``, also in ``text_config``;
    MLX's ``quantization``); an empty one declares none."""
    if not isinstance(config, dict):
        return False
    text = config.get("text_config")
    nested = isinstance(text, dict) and bool(text.get("quantization_config"))
    return bool(config.get("quantization_config")) or bool(config.get("quantization")) or nested


def summary(
    model: Any, config: Any, where: str, quant: str | None, bits_text: str | None, group_text: str | None,
    dtype: str | None,
) -> Summary | None:  # fmt: skip
    """The stored weights of ``model``: under ``--quant`` (``quant``; ``none``: no line), else under the config's
    own quantisation; None when there is neither. ``--bits`` and ``--group-size`` as typed."""
    from ..sizes import parse_size

    bits = None if bits_text is None else parse_size(bits_text, "--bits", suffixes=False)
    group = None if group_text is None else parse_size(group_text, "--group-size", suffixes=False)
    if quant is not None and quant != "none":
        from ..gguf_quant import is_file_type

        if is_file_type(quant):
            if bits is not None or group is not None or dtype is not None:
                raise LlmcountError(f"--quant {quant}: a llama.cpp file type has no --bits, --group-size or --dtype")
            return gguf_summary(model, quant)
    from .report import scheme_for

    if group is not None and quant not in ("gptq", "awq", "mlx"):
        raise LlmcountError(f"--group-size: the scheme {quant} has no choice of group size")
    scheme = scheme_for(config, where, quant, bits, group)
    if scheme is None:
        if dtype is not None:
            raise LlmcountError("--dtype: count sizes stored weights only under a quantisation scheme (--quant)")
        return None
    return scheme_summary(model, scheme, dtype, where)


def scheme_summary(model: Any, quant: Any, dtype: str | None, where: str) -> Summary:
    """``model``'s weights as a safetensors checkpoint stores them under ``quant``: the quantised parameters' packed
    weights, the scheme's storage (scales, zeros, ...), and what it leaves in the checkpoint dtype."""
    from .report import model_plan

    stored = model_plan(model, quant, dtype, where)
    converted = kept = packed = storage = kept_bytes = 0
    storage_names: dict[str, None] = {}
    weight_names: dict[str, None] = {}
    for group in stored.groups:
        for t in group.tensors:
            if t.suffix == "":
                kept += t.shape[0]
                kept_bytes += t.bytes
            elif t.weight:
                packed += t.bytes
                weight_names[t.suffix.lstrip("._")] = None
            else:
                storage += t.bytes
                storage_names[t.suffix.lstrip("._").removeprefix("weight.")] = None
        converted += group.parameters - sum(t.shape[0] for t in group.tensors if t.suffix == "")
    parts = []
    if converted:
        parts.append(Part(f"quantised ({', '.join(weight_names)})", converted, packed))
    if storage:
        parts.append(Part(", ".join(storage_names), 0, storage))
    if kept:
        parts.append(Part(f"kept in {stored.dtype}", kept, kept_bytes))
    notes = list(stored.notes)
    if model.parts:
        notes.append("the language model's weights only; the other parts of the model are not in these bytes")
    if stored.parameters != model.counts.total:  # every term is planned: a difference is a bug, said, never hidden
        notes.append(f"the plan holds {stored.parameters:,} parameters, the count {model.counts.total:,}")
    return Summary(quant.label, quant.name, quant.scheme.source, model.counts.total, tuple(parts), tuple(notes))


def gguf_summary(model: Any, quant: str) -> Summary:
    """``model``'s weights in the GGUF llama.cpp's ``llama-quantize`` makes of it for the file type ``quant``,
    grouped by ggml type (tensor data; the file adds its header and alignment)."""
    from ..gguf_quant import FILE_TYPES, file_type, gguf_arch, predict

    ftype = file_type(quant)
    types: dict[str, list[int]] = {}
    for q in predict(model, gguf_arch(model), ftype):
        slot = types.setdefault(q.type, [0, 0])
        slot[0] += q.tensor.elements
        slot[1] += q.bytes
    parts = tuple(Part(name, e, b) for name, (e, b) in sorted(types.items(), key=lambda kv: -kv[1][1]))
    notes = []
    elements = sum(p.parameters for p in parts)
    if elements != model.counts.total:
        notes.append(
            f"the GGUF's tensors hold {elements:,} elements, the count {model.counts.total:,} "
            f"({elements - model.counts.total:+,}: tensors llama.cpp's converter writes or leaves out)"
        )
    notes.append("tensor data only; the file adds its header and alignment")
    return Summary(
        f"llama.cpp {ftype.upper()} ({FILE_TYPES[ftype][0]})",
        ftype,
        "llama.cpp 007dbbf3fd17 src/llama-quant.cpp, checked against files 0c1e57098bba wrote (llmcount/gguf_quant.py)",
        model.counts.total,
        parts,
        tuple(notes),
    )


STORED_FIELDS = ("stored_scheme", "stored_bytes", "stored_bits_per_parameter")
"""A batch row's stored-bytes columns (``count A B --quant ... --csv``): the scheme (as --quant names it, or the
llama.cpp file type), the bytes, and bits per parameter (scales and kept tensors included)."""


def check_options(quant: str | None, bits_text: str | None, group_text: str | None, dtype: str | None) -> None:
    """A batch's --quant, --bits, --group-size and --dtype checked once, before any model is read."""
    from ..sizes import parse_size

    bits = None if bits_text is None else parse_size(bits_text, "--bits", suffixes=False)
    group = None if group_text is None else parse_size(group_text, "--group-size", suffixes=False)
    if quant is None or quant == "none":
        return
    from ..gguf_quant import is_file_type

    if is_file_type(quant):
        if bits is not None or group is not None or dtype is not None:
            raise LlmcountError(f"--quant {quant}: a llama.cpp file type has no --bits, --group-size or --dtype")
        return
    if group is not None and quant not in ("gptq", "awq", "mlx"):
        raise LlmcountError(f"--group-size: the scheme {quant} has no choice of group size")
    from .config import from_options

    from_options(quant, bits, group)


def with_stored(
    results: Any, quant: str | None, bits: str | None, group: str | None, dtype: str | None
) -> Any:  # fmt: skip
    """Each batch result with its stored-bytes columns: under ``--quant`` for every model, else for a config that
    declares its quantisation; a model the scheme cannot size is one failed result naming why."""
    from ..batch import Result

    for result in results:
        if result.model is None:
            yield result
            continue
        try:
            yield Result(result.spec, result.model, stored=_stored_row(result, quant, bits, group, dtype))
        except LlmcountError as exc:
            message = str(exc)
            yield Result(result.spec, error=message if message.startswith(result.spec) else f"{result.spec}: {message}")


def _stored_row(result: Any, quant: str | None, bits: str | None, group: str | None, dtype: str | None) -> Any:
    from ..counting import Counted
    from ..sources import STDIN, resolve

    if result.spec.lower().endswith(".gguf"):
        if quant is not None or bits is not None or group is not None or dtype is not None:
            raise LlmcountError("--quant: a GGUF file's tensors are stored in its own types (memory FILE shows them)")
        return None
    if result.spec == STDIN:  # read once, by the count
        if quant is not None:
            raise LlmcountError("--quant in a batch sizes configs named by path or preset, not stdin")
        return None
    if isinstance(result.model, Counted):  # the config the compiled path counted, read once
        where, config = result.model.source, result.model.config
    else:
        _, where, config = resolve(result.spec)
    if quant is None and not declares(config):
        if bits is not None or group is not None:
            raise LlmcountError("--bits and --group-size need --quant")
        return None
    model = result.model.full() if isinstance(result.model, Counted) else result.model
    s = summary(model, config, where, quant, bits, group, dtype)
    if s is None:
        return None
    return {"stored_scheme": s.name, "stored_bytes": s.bytes, "stored_bits_per_parameter": float(s.bits)}


def with_note(s: Summary, note: str) -> Summary:
    """``s`` with one more note (the MTP module counted above and not in these bytes, say)."""
    from dataclasses import replace

    return replace(s, notes=(*s.notes, note))


def _gib(n: int) -> str:
    return f"{n / 2**30:,.2f} GiB"


def render(s: Summary, width: int | None = None) -> str:
    """The ``stored:`` lines under ``count``'s table, lines longer than ``width`` wrapped."""
    from ..renderers.fit import fit_lines

    lines = [
        f"stored: {s.bytes:,} bytes ({_gib(s.bytes)}), {float(s.bits):.4g} bits per parameter, as {s.scheme}",
        f"  {s.parameters:,} parameters as the model defines them, not packed elements",
    ]
    held_width = max(len(f"{p.parameters:,}") for p in s.parts)
    bytes_width = max(len(f"{p.bytes:,}") for p in s.parts)
    for p in s.parts:
        held = f"{p.parameters:,} parameters" if p.parameters else ""
        lines.append(f"  {held:>{held_width + 11}}  {p.bytes:>{bytes_width},} bytes  {p.what}")
    lines += [f"  ({note})" for note in s.notes]
    return fit_lines("\n".join(lines), width)


def data(s: Summary) -> dict[str, Any]:
    """The JSON form: exact integers, bits per parameter as a fraction's float."""
    return {
        "scheme": s.scheme,
        "name": s.name,
        "source": s.source,
        "bytes": s.bytes,
        "parameters": s.parameters,
        "bits_per_parameter": float(s.bits),
        "parts": [{"what": p.what, "parameters": p.parameters, "bytes": p.bytes} for p in s.parts],
        "notes": list(s.notes),
    }
