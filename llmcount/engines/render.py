"""``memory --engine``: the memory estimate with the engine's KV cache in place of transformers', the engine's
figure per kind of layer beside transformers', and each difference named."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..sizes import gb_gib
from . import TRANSFORMERS, EngineKV, kv_cache


def applied(name: str, model: Any, memory: Any, kv_dtype: str | None, **settings: Any) -> tuple[Any, EngineKV]:
    """``memory`` (an inference :class:`llmcount.formulas.memory.Memory`) with its ``kv_cache`` line as the engine
    keeps it, and the engine's figure."""
    from sympy import Symbol

    from ..formulas.memory import Line

    figure = kv_cache(name, model, memory.seq, memory.batch, kv_dtype, dtype=memory.dtype, **settings)
    if figure.engine.name == TRANSFORMERS:
        return memory, figure
    note = f"as {figure.engine.cited} allocates it, in {figure.kv_dtype} (per kind of layer below)"
    symbol = Symbol(f"KV_{figure.engine.name.replace('.', '')}")
    lines = tuple(
        Line("kv_cache", symbol, figure.bytes, note) if line.name == "kv_cache" else line for line in memory.lines
    )
    return replace(memory, lines=lines, kv_dtype=figure.kv_dtype, kv_per_token_bytes=None), figure


def engine_data(figure: EngineKV) -> dict[str, Any]:
    """The JSON form of an engine's KV cache beside transformers'."""
    eng = figure.engine
    return {
        "name": eng.name,
        "version": eng.version,
        "commit": eng.commit,
        "sources": list(eng.sources),
        "defaults": dict(eng.settings),  # the engine's own settings (block size, gpu_memory_utilization ...)
        "kv_dtype": figure.kv_dtype,
        "tp": figure.tp,
        "settings": dict(figure.settings),
        "kv_cache_bytes": figure.bytes,
        "transformers_kv_cache_bytes": figure.transformers_bytes,
        "transformers_kv_dtype": figure.transformers_kv_dtype,
        "per_layer_kind": [
            {
                "kind": k.kind,
                "engine_kind": k.engine_kind,
                "layers": k.layers,
                "tokens_per_sequence": k.tokens,
                "bytes": k.bytes,
                "transformers_tokens_per_sequence": k.transformers_tokens,
                "transformers_bytes": k.transformers_bytes,
                "rule": k.rule,
            }
            for k in figure.kinds
        ],
        "differences": figure.differences(),
    }


_gb = gb_gib  # bytes as GB and GiB: ``16.00 GB = 14.90 GiB``


def render_engine(figure: EngineKV) -> str:
    """The engine's KV cache per kind of layer beside transformers', with the rule of each and what differs."""
    eng = figure.engine
    if eng.name == TRANSFORMERS:
        return f"\nKV cache as transformers keeps it: {figure.bytes:,} bytes ({_gb(figure.bytes)}), as above."
    head = (
        f"\nKV cache as {eng.cited} allocates it, B = {figure.batch:,}, S = {figure.seq:,}, KV dtype "
        f"{figure.kv_dtype}" + (f", per GPU at tp = {figure.tp}" if figure.tp > 1 else "")
    )
    rows = [("kind", "layers", "tokens/seq", eng.title, "transformers")]
    for k in figure.kinds:
        kind = k.kind + ("" if k.engine_kind == k.kind else f" (run {k.engine_kind})")
        layers = f"{k.layers:,}" if k.layers or k.transformers_bytes else "table"
        rows.append((kind, layers, f"{k.tokens:,}", f"{k.bytes:,}", f"{k.transformers_bytes:,}"))
    rows.append(("total", "", "", f"{figure.bytes:,}", f"{figure.transformers_bytes:,}"))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    table = [
        "  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    ]
    ratio = f" ({figure.bytes / figure.transformers_bytes:.4g}× transformers')" if figure.transformers_bytes else ""
    lines = [head, *table, f"  {eng.title}: {_gb(figure.bytes)}{ratio}"]
    if figure.transformers_kv_dtype not in (figure.kv_dtype, figure.kv_dtype.removeprefix("auto (").rstrip(")")):
        lines.append(f"  transformers' figure in {figure.transformers_kv_dtype}")
    differences = figure.differences()
    lines.append("Differences, term by term:" if differences else "No difference from transformers' figure.")
    lines += [f"  - {d}" for d in differences]
    same = [k for k in figure.kinds if k.bytes == k.transformers_bytes]
    lines += [f"  {k.kind}: the same bytes ({k.rule})" for k in same if k.rule]
    lines.append(f"Sources, {eng.cited}:")
    lines += [f"  - {source}" for source in eng.sources]
    return "\n".join(lines)
