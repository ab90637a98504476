"""Packed weights in safetensors headers that only the config's scheme can read: MLX's uint32 weights and
compressed-tensors' ``weight_packed``. Each is replaced by the logical weight it holds (its shape unpacked by the
packing factor, container bits / bits), before :func:`llmcount.checkpoint.dequantise` reads the formats it knows
from names alone; their scales, biases, zero points and shapes stay as storage tensors.

* MLX (mlx 0.29 ``QuantizedLinear``/``QuantizedEmbedding``): ``weight`` uint32 (…, in·bits/32) beside
  ``scales`` -> (…, in), bits from the config's ``quantization`` (a module's own entry first);
* compressed-tensors pack-quantized (0.20.0 ``pack_to_int32``): ``weight_packed`` int32 (out, ceil(in·bits/32)) ->
  (out, columns · 32/bits); nvfp4- and mxfp4-pack-quantized: uint8 (out, in/2) -> (out, 2 · columns).
  ``weight_shape`` holds the exact (out, in) in its data, which a header does not show: a width that is not a
  multiple of the packing factor is counted up to one.
"""

from __future__ import annotations

from ..checkpoint import Tensor
from ..errors import LlmcountError
from ..files import short
from .config import Quant


def unpack(tensors: list[Tensor], quant: Quant | None) -> tuple[list[Tensor], str]:
    """The tensors with packed weights replaced by their logical shapes, and the rounding caveat when one may be
    counted up (compressed-tensors widths); tensors of other formats pass through."""
    if quant is None or quant.scheme.method not in ("mlx", "compressed-tensors"):
        return tensors, ""
    names = {t.name for t in tensors}
    out: list[Tensor] = []
    caveat = ""
    for tensor in tensors:
        base, _, leaf = tensor.name.rpartition(".")
        if quant.scheme.method == "mlx" and leaf == "weight" and tensor.dtype == "U32" and f"{base}.scales" in names:
            bits = _mlx_bits(quant, base)
            out.append(Tensor(tensor.name, f"MLX{bits}", (*tensor.shape[:-1], tensor.shape[-1] * 32 // bits)))
        elif quant.scheme.method == "compressed-tensors" and leaf == "weight_packed":
            if len(tensor.shape) != 2:
                raise LlmcountError(f"tensor {short(tensor.name)}: weight_packed must be 2-D, got {list(tensor.shape)}")
            if tensor.dtype == "I32":
                pack = 32 // quant.sizes.get("bits", 4)
            elif tensor.dtype == "U8" and quant.scheme.name in ("nvfp4", "ct-mxfp4"):
                pack = 2
            else:
                raise LlmcountError(
                    f"tensor {short(tensor.name)}: weight_packed {tensor.dtype} does not fit the config's {quant.label}"
                )
            rows, columns = tensor.shape
            out.append(Tensor(f"{base}.weight", f"packed{32 // pack if pack != 2 else 4}", (rows, columns * pack)))
            caveat = (
                f"compressed-tensors widths read as weight_packed's columns × {pack} (weight_shape's values are in "
                "the data, not the header)"
            )
        else:
            out.append(tensor)
    return out, caveat


def _mlx_bits(quant: Quant, module: str) -> int:
    for name in (module, module.removeprefix("model."), f"model.{module}"):
        entry = quant.overrides.get(name)
        if isinstance(entry, dict):
            return entry.get("bits", quant.sizes["bits"])
    return quant.sizes["bits"]


def stored_bytes(tensors: list[Tensor], path_of) -> tuple[tuple[str, int], ...]:
    """The bytes each component takes as stored: every tensor's bytes (from its dtype and shape) under the path of
    the weight it belongs to, scales, zero points and packing bookkeeping included (``path_of``: tensor name ->
    component path or None)."""
    from ..checkpoint import DTYPE_BITS

    out: dict[str, int] = {}
    for tensor in tensors:
        owner = _owner(tensor.name)
        path = path_of(owner) or path_of(tensor.name) or "unmapped"
        out[path] = out.get(path, 0) + tensor.elements * DTYPE_BITS[tensor.dtype] // 8
    return tuple(out.items())


_LEAVES = (
    "qweight", "qzeros", "scales", "biases", "g_idx", "weight_scale", "weight_scale_inv", "weight_packed",
    "weight_shape", "weight_zero_point", "weight_global_scale", "input_global_scale", "input_scale",
    "activation_scale", "SCB", "weight_format", "absmax", "quant_map", "nested_absmax", "nested_quant_map",
)  # fmt: skip


def _owner(name: str) -> str:
    """The weight a quantisation tensor belongs to: ``m.qweight`` -> ``m.weight``, ``m.weight.absmax`` ->
    ``m.weight``, ``x_blocks`` -> ``x``; other names are their own."""
    if ".quant_state." in name:
        return name.split(".quant_state.")[0]
    base, _, leaf = name.rpartition(".")
    if leaf in _LEAVES:
        return base if base.endswith(".weight") else f"{base}.weight"
    for suffix in ("_blocks", "_scales", "_scale_inv"):
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name
