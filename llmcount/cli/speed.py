"""``speed``: prefill time and decode tokens/s as a roofline (an upper bound), per batch size. Resolves the inputs,
calls :func:`llmcount.roofline.roofline`, prints."""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any

import typer

from ..errors import LlmcountError, OptionError
from ..gpus import KNOWN
from ..sizes import SUFFIX_HELP, gb_gib, parse_positive, parse_size
from .app import app, fail, print_json, terminal_width
from .inference import engine_name, gpu_name
from .options import JsonOption, ModelArgument, positive_int


@app.command()
def speed(
    spec: ModelArgument,
    gpu: Annotated[
        str,
        typer.Option(
            "--gpu",
            help=f"A GPU of the table: {KNOWN} (each figure with its datasheet: llmcount/gpus.py).",
            metavar="NAME",
            callback=gpu_name,
        ),
    ],
    batch: Annotated[
        str,
        typer.Option("--batch", "-b", help="Batch sizes, sequences decoded together: 1,8,64.", metavar="B[,B...]"),
    ] = "1",
    seq: Annotated[
        str,
        typer.Option(
            "--seq",
            "-s",
            help=f"Prompt length S per sequence; decode is the step after it. {SUFFIX_HELP}.",
            metavar="SIZE",
        ),
    ] = "4096",
    quant: Annotated[
        str | None,
        typer.Option(
            "--quant",
            help="Weights as a quantisation scheme stores them (mxfp4, fp8-block, gptq, awq, nf4, ...; none: ignore "
            "the config's own), or a llama.cpp file type (q4_k_m, q8_0 ...), as `memory --quant` sizes them.",
            metavar="SCHEME",
        ),
    ] = None,
    bits: Annotated[
        str | None, typer.Option("--bits", help="With --quant gptq, awq or mlx: bits per weight.", metavar="INT")
    ] = None,
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            help="Weights' dtype (default bf16; with a scheme, of what it leaves alone). fp8 weights compute at the "
            "GPU's fp8 peak, all others at its bf16 peak.",
        ),
    ] = None,
    kv_dtype: Annotated[
        str | None,
        typer.Option("--kv-dtype", help="KV cache dtype (default: the weights' dtype; bf16 under quantisation)."),
    ] = None,
    mfu: Annotated[
        str | None,
        typer.Option(
            "--mfu", help="Also the prefill time at this model FLOPs utilisation, in (0, 1]: 0.4.", metavar="X"
        ),
    ] = None,
    tp: Annotated[str, typer.Option("--tp", help="Tensor-parallel GPUs (communication left out).", metavar="N")] = "1",
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="Decode reads the KV cache as this serving engine stores it (its KV dtype, whole blocks: "
            "docs/engines.md): vllm, sglang, tensorrt-llm, lmdeploy, llama.cpp; --kv-dtype then takes the engine's "
            "names.",
            metavar="ENGINE",
            callback=engine_name,
        ),
    ] = None,
    peak_tflops: Annotated[
        str | None,
        typer.Option(
            "--peak-tflops", help="A dense peak per GPU in TFLOP/s, instead of the table's.", metavar="NUMBER"
        ),
    ] = None,
    show_formula: Annotated[bool, typer.Option("--formula", help="Also print the formulas (sympy) used.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Prefill time and decode tokens/s on a GPU, as a roofline: the least work each phase must do (FLOPs over the
    dense peak, bytes read over the memory bandwidth), per batch size. An upper bound on speed; MoE reads the experts
    a step touches (uniform routing); tensor parallelism without its communication.

    Example: llmcount speed qwen3-30b-a3b --gpu h100 --batch 1,8,64 --seq 4k

    Example: llmcount speed gpt-oss-120b --gpu h100 --quant mxfp4

    Example: llmcount speed llama-3-8b --gpu h100 --engine lmdeploy --kv-dtype int8
    """
    from .. import roofline as rl

    try:
        batches = parse_batches(batch)
        seq_ = parse_size(seq, "--seq")
        if seq_ > rl.MAX_SEQ:
            raise OptionError(f"--seq: {seq_:,} tokens is beyond any model's context (at most {rl.MAX_SEQ:,})")
        tp_ = parse_size(tp, "--tp", suffixes=False)
        if tp_ > rl.MAX_TP:
            raise OptionError(f"--tp: {tp_:,} GPUs is more than {rl.MAX_TP:,}")
        mfu_ = parse_mfu(mfu) if mfu is not None else None
        peak_ = parse_positive(peak_tflops, "--peak-tflops") if peak_tflops is not None else None
        from ..gpus import gpu as find_gpu

        card = find_gpu(gpu)
        if engine is not None and show_formula:
            raise LlmcountError(
                "--formula with --engine: the engine's KV read is a rule (whole blocks), not one sympy expression; "
                "give either"
            )
        if engine is not None:
            from ..engines import check

            check(engine, kv_dtype)  # the engine and its KV dtype name first, before any model is read
        model, weights, kv, compute = _weights(spec, quant, bits, dtype, None if engine else kv_dtype)
        if peak_ is None and card.bf16 is not None and compute == "fp8" and card.fp8 is None:
            compute = "bf16"  # a GPU without fp8 tensor cores runs fp8 weights at its bf16 peak
        cache = None
        if engine is not None:
            cache = _engine_cache(engine, model, kv_dtype, dtype, tp_)
            kv = cache(seq_, batches[0])[2]
        result = rl.roofline(
            model,
            weights,
            card,
            batches,
            seq_,
            kv,
            compute,
            tp_,
            mfu_,
            peak_,
            None if cache is None else (lambda s, b: cache(s, b)[:2]),
        )
        shown = rl.formulas(model, weights, kv) if show_formula else None
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_json:
        data = speed_data(result)
        if shown is not None:
            from ..renderers.filters import text

            data["formulas"] = [{"name": name, "sympy": str(expr), "text": text(expr)} for name, expr in shown]
        print_json(data)
        return
    typer.echo(render(result))
    if shown is not None:
        typer.echo(render_formulas(shown))


def _engine_cache(engine: str, model: Any, kv_dtype: str | None, dtype: str | None, tp: int):
    """``(seq, batch) -> (bytes, note, kv dtype)``: the KV cache a decode step reads on all tp GPUs, as ``engine``
    stores it (:func:`llmcount.engines.decode.decode_read` on one rank, times tp)."""
    from ..dtypes import BITS, canonical
    from ..engines.decode import decode_read

    name = canonical(dtype or "bf16")
    model_dtype = name if BITS[name] >= 16 else "bf16"

    def cache(seq: int, batch: int):
        read = decode_read(engine, model, seq, batch, kv_dtype, model_dtype, tp)
        said = read.said + (f"; per GPU, times tp = {tp}" if tp > 1 else "")
        said += "; the weights as stored, without the engine's padded vocabulary rows"
        return read.bytes * tp, said, read.kv_dtype

    return cache


def parse_batches(text: str) -> list[int]:
    """``1,8,64``: positive integers, at most :data:`~llmcount.roofline.MAX_BATCHES` of them, each at most
    :data:`~llmcount.roofline.MAX_BATCH`; OptionError naming --batch otherwise."""
    from ..roofline import MAX_BATCH, MAX_BATCHES

    parts = text.split(",")
    if len(parts) > MAX_BATCHES:
        raise OptionError(f"--batch: {len(parts)} batch sizes; give at most {MAX_BATCHES}")
    batches = []
    for part in parts:
        value = parse_size(part, "--batch")
        if value > MAX_BATCH:
            raise OptionError(f"--batch: {value:,} sequences at once is more than {MAX_BATCH:,}")
        batches.append(value)
    return list(dict.fromkeys(batches))


def parse_mfu(text: str) -> Fraction:
    """A model FLOPs utilisation in (0, 1]: ``0.4``; OptionError naming --mfu otherwise."""
    value = parse_positive(text, "--mfu")
    if value > 1:
        raise OptionError(f"--mfu must be in (0, 1], got {text.strip()[:40]!r} (a fraction: 0.4, not 40)")
    return value


def _weights(spec: str, quant: str | None, bits: str | None, dtype: str | None, kv_dtype: str | None):
    """The model, its weights as stored (by role), the KV dtype and the dtype of the compute peak."""
    from .. import roofline as rl
    from ..dtypes import BITS, canonical
    from ..gguf_quant import is_file_type

    if spec.lower().endswith(".gguf"):  # the weights as the file stores them
        from ..gguf_model import file_type, stored

        if quant is not None or bits is not None or dtype is not None:
            raise LlmcountError(
                "--quant, --bits and --dtype do not apply to a GGUF file: its tensors are stored already"
            )
        g, model, groups = stored(spec)
        rows = [(group.path, group.elements, group.bytes) for group in groups]
        weights = rl.split_weights(model, rows, f"{file_type(g)} (the GGUF file's tensors)")
        return model, weights, canonical(kv_dtype) if kv_dtype else "fp16", "bf16"
    if quant is not None and is_file_type(quant):
        from ..sources import load

        if bits is not None or dtype is not None:
            raise LlmcountError("--bits and --dtype do not apply to a llama.cpp file type (--quant)")
        model = load(spec)
        return model, rl.gguf_weights(model, quant), canonical(kv_dtype) if kv_dtype else "fp16", "bf16"
    from ..quant import report
    from .inference import model_and_scheme

    bits_ = positive_int("--bits", bits) if bits is not None else None
    model, scheme, _ = model_and_scheme(spec, quant, bits_, None, dtype)
    if scheme is None:
        name = canonical(dtype or "bf16")
        kv = canonical(kv_dtype) if kv_dtype else (name if BITS[name] >= 16 else "bf16")
        return model, rl.plain_weights(model, name), kv, "fp8" if name.startswith("fp8") else "bf16"
    plan = report.model_plan(model, scheme, dtype, spec)
    kv = canonical(kv_dtype) if kv_dtype else report.short_dtype(plan.dtype)
    if kv.startswith("fp8") and not kv_dtype:
        kv = "bf16"
    compute = "fp8" if scheme.scheme.name in ("fp8", "fp8-block", "fbgemm-fp8") else "bf16"
    return model, rl.scheme_weights(model, plan), kv, compute


_gb = gb_gib  # bytes as GB and GiB: ``61.07 GB = 56.88 GiB``


def _time(seconds: Fraction | None) -> str:
    if seconds is None:
        return "-"
    s = float(seconds)
    if s >= 1:
        return f"{s:,.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:,.1f} ms"
    return f"{s * 1e6:,.0f} µs"


def _rate(value: Fraction) -> str:
    v = float(value)
    return f"{v:,.0f}" if v >= 100 else f"{v:,.1f}"


def render(r: Any) -> str:
    """The text output: the inputs, one row per batch size, the notes."""
    w = r.weights
    peak = "no matmul peak" if r.peak_tflops is None else f"{float(r.peak_tflops):,.1f} TFLOP/s dense {r.compute_dtype}"
    lines = [
        f"{r.model} on {r.gpu}{f' × {r.tp} (tensor parallel)' if r.tp > 1 else ''}: roofline (an upper bound on speed)",
        f"  GPU: {peak}, {float(r.bandwidth_gbs):,.0f} GB/s ({r.gpu_source})",
        f"  weights: {w.stored_as}: {_gb(w.total)}",
        f"    read every step {_gb(w.dense)}"
        + (f"; routed experts {_gb(w.routed)}, the part touched" if w.routed else "")
        + (f"; looked up only {_gb(w.lookup)}" if w.lookup else ""),
        f"  S = {r.seq:,} tokens per prompt; decode at context S; KV cache {r.kv_dtype}",
        "",
    ]
    mfu = r.mfu is not None and r.peak_tflops is not None
    head = ["B", "prefill", *([f"@MFU {float(r.mfu):g}"] if mfu else []), "step", "tok/s", "tok/s/seq", "bound"]
    if r.moe:
        head.append(f"experts of {r.moe[0]}")
    rows = [head]
    for pre, dec in zip(r.prefill, r.decode, strict=True):
        row = [f"{dec.batch:,}", _time(None if pre.compute_seconds is None else pre.seconds)]
        if mfu:
            row.append(_time(max(r.prefill_at_mfu(pre), pre.memory_seconds)))
        row += [_time(dec.seconds), _rate(dec.batch / dec.seconds), _rate(1 / dec.seconds), dec.bound]
        if r.moe:
            row.append(f"{float(dec.experts):.1f}")
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines += ["  " + "  ".join(cell.rjust(widths[i]) for i, cell in enumerate(row)) for row in rows]
    lines.append("")
    lines.append("  decode step: bytes read, weights + KV cache (per step, all GPUs):")
    for dec in r.decode:
        lines.append(f"    B = {dec.batch:,}: {_gb(dec.weights_bytes)} + {_gb(dec.cache_bytes)}")
    lines.append("")
    lines += [f"  * {note}" for note in r.notes]
    from ..renderers.fit import fit_lines

    return fit_lines("\n".join(lines), terminal_width())


def render_formulas(shown: list[tuple[str, Any]]) -> str:
    from ..renderers.filters import text

    lines = [
        "",
        "formulas (Pi: dense peak, FLOP/s per GPU; BW: bandwidth, bytes/s per GPU;",
        "  tp: GPUs; M_dense: weights read every step; M_experts: routed experts;",
        "  M_pre: weights a prefill reads; all bytes as stored)",
    ]
    lines += [f"  {name} = {text(expr)}" for name, expr in shown]
    from ..renderers.fit import fit_lines

    return fit_lines("\n".join(lines), terminal_width())


def speed_data(r: Any) -> dict[str, Any]:
    """The JSON output: exact integers where the figure is whole, floats for expectations and times."""

    def phase(p: Any, decode: bool) -> dict[str, Any]:
        out = {
            "batch": p.batch,
            "flops": p.flops,
            "bytes_read": float(p.bytes),
            "weights_bytes_read": float(p.weights_bytes),
            "compute_seconds": None if p.compute_seconds is None else float(p.compute_seconds),
            "memory_seconds": float(p.memory_seconds),
            "seconds": float(p.seconds),
            "bound": p.bound,
        }
        if r.moe:
            out["expected_experts_per_layer"] = float(p.experts)
        if decode:
            out["kv_cache_bytes_read"] = p.cache_bytes if isinstance(p.cache_bytes, int) else float(p.cache_bytes)
            out["tokens_per_second"] = float(p.batch / p.seconds)
            out["tokens_per_second_per_sequence"] = float(1 / p.seconds)
        elif r.mfu is not None and p.compute_seconds is not None:
            out["seconds_at_mfu"] = float(max(r.prefill_at_mfu(p), p.memory_seconds))
        return out

    w = r.weights
    return {
        "model": r.model,
        "gpu": r.gpu,
        "gpu_source": r.gpu_source,
        "peak_tflops": None if r.peak_tflops is None else float(r.peak_tflops),
        "compute_dtype": r.compute_dtype,
        "bandwidth_gbs": float(r.bandwidth_gbs),
        "tp": r.tp,
        "seq": r.seq,
        "mfu": None if r.mfu is None else float(r.mfu),
        "kv_dtype": r.kv_dtype,
        "weights": {
            "stored_as": w.stored_as,
            "bytes": w.total,
            "read_every_step_bytes": w.dense,
            "routed_experts_bytes": w.routed,
            "looked_up_bytes": w.lookup,
            "parameters": {"read_every_step": w.parameters[0], "routed": w.parameters[1], "looked_up": w.parameters[2]},
        },
        "moe": None if r.moe is None else {"experts": r.moe[0], "per_token": r.moe[1]},
        "prefill": [phase(p, False) for p in r.prefill],
        "decode": [phase(p, True) for p in r.decode],
        "notes": list(r.notes),
    }
