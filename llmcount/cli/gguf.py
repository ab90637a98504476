"""``memory`` and ``count`` of a GGUF file: the weights as the file stores them, per component and ggml type."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from ..errors import LlmcountError
from ..sizes import parse_size
from .app import fail, print_json

DEFAULT_KV = "fp16"  # llama.cpp's default cache type (common/arg.cpp: --cache-type-k/-v f16)


def memory_data(spec: str, kv_dtype: str | None, seq: int, batch: int) -> dict[str, Any]:
    """Stored bytes per component (by ggml type), the KV cache for ``batch`` × ``seq`` tokens, and the total."""
    from ..formulas import memory as mem
    from ..gguf_model import file_type, stored

    g, model, groups = stored(spec)
    kv = mem.inference(model.derivation, model.values, "bf16", kv_dtype or DEFAULT_KV, seq, batch)
    cache = [line for line in kv.lines if line.name in ("kv_cache", "state")]
    weights = sum(group.bytes for group in groups)
    return {
        "model": model.name,
        "file": g.path,
        "architecture": g.architecture,
        "record": model.architecture.name,
        "file_type": file_type(g),
        "parameters": model.counts.total,
        "tensor_elements": sum(group.elements for group in groups),
        "weights_bytes": weights,
        "file_bytes": g.file_bytes,
        "groups": [
            {
                "component": group.path,
                "elements": group.elements,
                "bytes": group.bytes,
                "bits_per_weight": round(group.bits_per_weight, 4),
                "types": {name: {"elements": e, "bytes": b} for name, (e, b) in group.types.items()},
            }
            for group in groups
        ],
        "kv_dtype": kv.kv_dtype,
        "seq": seq,
        "batch": batch,
        "cache": [{"name": line.name, "bytes": line.bytes, "note": line.note} for line in cache],
        "total_bytes": weights + sum(line.bytes for line in cache),
    }


def quant_data(spec: str, quant: str, kv_dtype: str | None, seq: int, batch: int) -> dict[str, Any]:
    """``memory MODEL --quant q4_k_m``: the GGUF llama-quantize makes of the model, per component and ggml type."""
    from ..formulas import memory as mem
    from ..gguf_quant import FILE_TYPES, file_type, gguf_arch, predict
    from ..sources import load

    ftype = file_type(quant)
    model = load(spec)
    arch = gguf_arch(model)
    groups: dict[str, dict[str, list[int]]] = {}
    for q in predict(model, arch, ftype):
        slot = groups.setdefault(q.tensor.path, {}).setdefault(q.type, [0, 0])
        slot[0] += q.tensor.elements
        slot[1] += q.bytes
    kv = mem.inference(model.derivation, model.values, "bf16", kv_dtype or DEFAULT_KV, seq, batch)
    cache = [line for line in kv.lines if line.name in ("kv_cache", "state")]
    rows = []
    for path, kinds in groups.items():
        elements, nbytes = sum(v[0] for v in kinds.values()), sum(v[1] for v in kinds.values())
        rows.append(
            {
                "component": path,
                "elements": elements,
                "bytes": nbytes,
                "bits_per_weight": round(8 * nbytes / elements, 4) if elements else 0,
                "types": {
                    k: {"elements": v[0], "bytes": v[1]} for k, v in sorted(kinds.items(), key=lambda kv: -kv[1][1])
                },
            }
        )
    weights = sum(r["bytes"] for r in rows)
    return {
        "model": model.name,
        "file": f"{ftype.upper()} as llama.cpp's llama-quantize makes it (from a BF16 conversion; "
        "rules of 007dbbf3fd17, checked against files 0c1e57098bba wrote)",
        "architecture": arch,
        "record": model.architecture.name,
        "file_type": FILE_TYPES[ftype][0],
        "parameters": model.counts.total,
        "tensor_elements": sum(r["elements"] for r in rows),
        "weights_bytes": weights,
        "file_bytes": None,
        "groups": rows,
        "kv_dtype": kv.kv_dtype,
        "seq": seq,
        "batch": batch,
        "cache": [{"name": line.name, "bytes": line.bytes, "note": line.note} for line in cache],
        "total_bytes": weights + sum(line.bytes for line in cache),
    }


def _show(build: Callable[[], dict[str, Any]], as_json: bool) -> None:
    """Print ``build()``'s stored-weights table (or its JSON); a refusal on the way is one line on stderr."""
    try:
        data = build()
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_json:
        print_json(data)
    else:
        typer.echo(render(data))


def memory_quant(spec: str, quant: str, kv_dtype: str | None, seq: str, batch: str, as_json: bool) -> None:
    _show(lambda: quant_data(spec, quant, kv_dtype, parse_size(seq, "--seq"), parse_size(batch, "--batch")), as_json)


def _gib(n: int) -> str:
    from ..sizes import gb_gib

    return gb_gib(n)


def render(data: dict[str, Any]) -> str:
    from ..renderers.filters import table

    lines = [
        f"{data['model']}: {data['file']} (GGUF {data['architecture']}, read as {data['record']}; {data['file_type']})",
        "",
        "weights as stored, per component:",
    ]
    rows = [["component", "elements", "bytes", "bits/weight", "ggml types"]]
    for group in data["groups"]:
        kinds = ", ".join(f"{name} {v['bytes']:,}" for name, v in group["types"].items())
        rows.append(
            [
                group["component"],
                f"{group['elements']:,}",
                f"{group['bytes']:,}",
                f"{group['bits_per_weight']:.4g}",
                kinds,
            ]
        )
    elements = data["tensor_elements"]
    bits = 8 * data["weights_bytes"] / elements if elements else 0
    rows.append(["weights", f"{elements:,}", f"{data['weights_bytes']:,}", f"{bits:.4g}", _gib(data["weights_bytes"])])
    lines.append(table(rows, "lrrrl"))
    lines.append("")
    for line in data["cache"]:
        lines.append(
            f"{line['name']:<9} {line['bytes']:>18,} bytes  {_gib(line['bytes'])}  "
            f"({data['kv_dtype']}, B = {data['batch']:,}, S = {data['seq']:,}; {line['note']})"
        )
    lines.append(f"{'total':<9} {data['total_bytes']:>18,} bytes  {_gib(data['total_bytes'])}")
    if data["file_bytes"] is not None:
        lines.append(
            f"(the file: {data['file_bytes']:,} bytes, tensor data plus header and alignment; "
            f"{data['parameters']:,} parameters in the formula)"
        )
    else:
        lines.append(f"(tensor data only; the file adds its header and alignment; {data['parameters']:,} parameters)")
    return "\n".join(lines)


def memory_gguf(spec: str, kv_dtype: str | None, seq: str, batch: str, as_json: bool) -> None:
    _show(lambda: memory_data(spec, kv_dtype, parse_size(seq, "--seq"), parse_size(batch, "--batch")), as_json)


def count_gguf(spec: str, model: Any, as_json: bool, width: int) -> str:
    """``count`` of a GGUF file: the formula's count of the config its metadata stands for, and its tensors' logical
    elements against it (equal, or the difference and where ``verify`` names it)."""
    import json

    from ..gguf_model import verify
    from ..renderers import count_data, render_count

    result = verify(spec)
    if as_json:
        data = count_data(model)
        data["gguf"] = {
            "tensor_elements": result.checkpoint_total,
            "match": result.match,
            "differences": len(result.differences) + len(result.unmapped),
        }
        return json.dumps(data, indent=2)
    if result.match:
        line = f"GGUF tensors: {result.checkpoint_total:,} logical elements, exactly the formula's count"
    else:
        line = (
            f"GGUF tensors: {result.checkpoint_total:,} logical elements, the formula {model.counts.total:,} "
            f"(differs by {result.difference:+,} in {result.differences_count} places; `llmcount verify {spec}` "
            "names each)"
        )
    return render_count(model, width).rstrip() + "\n" + line
