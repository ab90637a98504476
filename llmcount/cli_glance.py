"""Costs at a glance: ``flops --conventions``, ``memory --table``, ``memory --gpu-memory`` and ``mfu``.
Each resolves its inputs, calls one library function, prints."""

from __future__ import annotations

from typing import Annotated

import typer

from .cli import JsonOption, ModelArgument, app, fail, print_json
from .errors import LlmcountError
from .gpus import KNOWN
from .sizes import SUFFIX_HELP, parse_bytes, parse_positive, parse_size


def print_conventions(spec: str, seq: str, as_json: bool, mtp: str | None = None) -> None:
    """``flops MODEL --conventions``: every named convention's training FLOPs per token at S."""
    from .formulas.conventions import conventions, ingredients
    from .presets import find
    from .renderers.costs_glance import conventions_data, render_conventions
    from .sources import load

    try:
        seq_ = parse_size(seq, "--seq")
        mtp_layers = 0 if mtp is None else parse_size(mtp, "--mtp", suffixes=False)
        model = load(spec)
        rows = conventions(model, seq_, mtp_layers)
        x = ingredients(model, seq_)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    preset = find(spec)
    paper = preset.six_nd if preset is not None and model.source == f"preset {preset.name}" else None
    if as_json:
        print_json(conventions_data(model, x, rows, paper))
    else:
        typer.echo(render_conventions(model, x, rows, paper).rstrip())


def print_weights_table(spec: str, as_json: bool) -> None:
    """``memory MODEL --table``: the weights in every dtype."""
    from .formulas.capacity import weights_table
    from .quant.report import scheme_table
    from .renderers.costs_glance import render_weights_table, weights_table_data
    from .sources import load

    try:
        model = load(spec)
        parameters = model.counts.total
        rows = weights_table(parameters)
        schemes, refused = scheme_table(model, None)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_json:
        print_json(weights_table_data(model, parameters, rows, schemes, refused))
    else:
        typer.echo(render_weights_table(model, parameters, rows, schemes, refused).rstrip())


def print_fit(
    spec: str,
    gpu_memory: str,
    dtype: str,
    kv_dtype: str | None,
    seq: str,
    overhead: str,
    group_size: str | None,
    scale_dtype: str,
    as_json: bool,
) -> None:
    """``memory MODEL --gpu-memory SIZE``: the longest S at B = 1 and the largest B at S that fit."""
    from .formulas.capacity import fit
    from .renderers.costs_glance import fit_data, render_fit
    from .sources import load

    try:
        capacity = parse_bytes(gpu_memory, "--gpu-memory")
        seq_ = parse_size(seq, "--seq")
        groups = parse_size(group_size, "--group-size", suffixes=False) if group_size is not None else None
        percent = 0 if overhead.strip() == "0" else parse_size(overhead, "--overhead", suffixes=False)
        model = load(spec)
        result = fit(
            model.derivation,
            model.values,
            capacity,
            dtype,
            kv_dtype,
            seq_,
            percent,
            groups,
            scale_dtype,
            model.max_positions,
        )
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_json:
        print_json(fit_data(model, result))
    else:
        typer.echo(render_fit(model, result).rstrip())


@app.command()
def mfu(
    spec: ModelArgument,
    tokens_per_second: Annotated[
        str,
        typer.Option(
            "--tokens-per-second",
            help="Training throughput of all the GPUs together, tokens per second: 3500, 12000.5.",
            metavar="NUMBER",
        ),
    ],
    seq: Annotated[
        str, typer.Option("--seq", "-s", help=f"Training sequence length S: 4096, 8k; {SUFFIX_HELP}.", metavar="SIZE")
    ] = "4096",
    gpu: Annotated[str | None, typer.Option("--gpu", help=f"A GPU type: {KNOWN}.")] = None,
    gpus: Annotated[str, typer.Option("--gpus", help="How many GPUs produce that throughput.", metavar="K")] = "1",
    peak_tflops: Annotated[
        str | None,
        typer.Option("--peak-tflops", help="Dense peak per GPU in TFLOP/s, instead of --gpu.", metavar="NUMBER"),
    ] = None,
    convention: Annotated[
        str,
        typer.Option(
            "--convention",
            help="How training FLOPs per token are counted: palm (default), kaplan, chinchilla, chinchilla-table, "
            "megatron, megatron-recompute, torchtitan, llmcount, llmcount-causal.",
        ),
    ] = "palm",
    dtype: Annotated[str, typer.Option("--dtype", help="The peak to use with --gpu: bf16 or fp8.")] = "bf16",
    as_json: JsonOption = False,
) -> None:
    """Model FLOPs utilisation: tokens/s × training FLOPs per token (by a named convention, PaLM's by default)
    over the dense peak of K GPUs (a cited table of bf16/fp8 peaks, or --peak-tflops).

    Example: llmcount mfu llama-3-8b --seq 4096 --tokens-per-second 28000 --gpu h100-sxm --gpus 8
    """
    from .dtypes import canonical
    from .formulas.conventions import utilisation
    from .gpus import peak as gpu_peak
    from .renderers.costs_glance import mfu_data, render_mfu
    from .sources import load

    try:
        rate = parse_positive(tokens_per_second, "--tokens-per-second")
        seq_ = parse_size(seq, "--seq")
        count = parse_size(gpus, "--gpus", suffixes=False)
        dtype_ = canonical(dtype)
        if dtype_ not in ("bf16", "fp8"):
            raise LlmcountError(f"--dtype: the peaks are of bf16 or fp8, got {dtype!r}")
        peak, name = gpu_peak(gpu, peak_tflops, dtype_)
        model = load(spec)
        result = utilisation(model, seq_, rate, count, peak, name, dtype_, convention)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_json:
        print_json(mfu_data(model, result))
    else:
        typer.echo(render_mfu(model, result).rstrip())
