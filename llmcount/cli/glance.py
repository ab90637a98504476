"""Costs at a glance, as ``flops --conventions``, ``memory --table`` and ``memory --gpu-memory`` print them: each
resolves its inputs, calls one library function, prints."""

from __future__ import annotations

from typing import Any

import typer

from ..errors import LlmcountError
from ..sizes import parse_bytes, parse_size
from .app import fail, print_json


def print_conventions(spec: str, seq: str, as_json: bool, mtp: str | None = None) -> None:
    """``flops MODEL --conventions``: every named convention's training FLOPs per token at S; without sympy where
    the compiled path counts the model and its snapshot holds the ingredients (:mod:`llmcount.plain_glance`)."""
    from ..presets import find
    from ..sources import load_counted

    try:
        seq_ = parse_size(seq, "--seq")
        mtp_layers = 0 if mtp is None else parse_size(mtp, "--mtp", suffixes=False)
        model, x, rows, plain = _conventions(load_counted(spec), seq_, mtp_layers)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    preset = find(spec)
    paper = preset.six_nd if preset is not None and model.source == f"preset {preset.name}" else None
    if as_json:
        from ..plain_glance import conventions_data

        print_json(conventions_data(model, x, rows, paper))
    elif plain:
        from ..plain_glance import render_conventions

        typer.echo(render_conventions(model, x, rows, paper).rstrip())
    else:
        from ..renderers.costs_glance import render_conventions

        typer.echo(render_conventions(model, x, rows, paper).rstrip())


def _conventions(model: Any, seq: int, mtp_layers: int) -> tuple[Any, Any, list, bool]:
    """The model, its ingredients at S and every convention's row, and whether the compiled path gave them (no
    sympy); else the sympy path's, whose model words any refusal."""
    from .. import counting
    from ..formulas import conventions as made
    from ..plain_glance import ingredients

    if not mtp_layers:  # Megatron's MTP layers are read from the record's MTP module by the sympy path
        try:
            x = ingredients(model, seq)
            return model, x, made.rows(x), True
        except counting.Fallback:
            pass
    model = model.full() if isinstance(model, counting.Counted) else model
    return model, made.ingredients(model, seq), made.conventions(model, seq, mtp_layers), False


def print_weights_table(spec: str, as_json: bool) -> None:
    """``memory MODEL --table``: the weights in every dtype."""
    from ..formulas.capacity import weights_table
    from ..quant.report import scheme_table
    from ..renderers.costs_glance import render_weights_table, weights_table_data
    from ..sources import load

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
    if overhead.strip() == "0" and group_size is None and _plain_fit(spec, gpu_memory, dtype, kv_dtype, seq, as_json):
        return
    from ..formulas.capacity import fit
    from ..renderers.costs_glance import fit_data, render_fit
    from ..sources import load
    from ..tower_parallel import whole_memory

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
            whole=whole_memory(model, percent),
        )
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    model = as_whole(model)
    if as_json:
        print_json(fit_data(model, result))
    else:
        typer.echo(render_fit(model, result).rstrip())


def _plain_fit(spec: str, gpu_memory: str, dtype: str, kv_dtype: str | None, seq: str, as_json: bool) -> bool:
    """``memory MODEL --gpu-memory SIZE`` searched over the compiled snapshot without importing sympy
    (:func:`llmcount.plain_memory.fit`); a bad size or a spec that names no model is refused here as
    :func:`print_fit` refuses it. False, having printed nothing, when the compiled path does not take the model or
    its search (the sympy path then answers or words the refusal)."""
    from .. import counting
    from .. import plain_memory as pm
    from ..sources import STDIN, resolve

    if spec == STDIN:
        return False  # stdin is read once: by the sympy path
    try:
        capacity = parse_bytes(gpu_memory, "--gpu-memory")
        seq_ = parse_size(seq, "--seq")
        name, source, config = resolve(spec)  # what print_fit reads first: a spec that names nothing is refused here
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    try:
        model = counting.read(config, source, name)
    except (LlmcountError, counting.Fallback):
        return False
    try:
        result = pm.fit(model, capacity, dtype, kv_dtype, seq_, pm.max_positions(config))
    except counting.Fallback:
        return False
    except LlmcountError as exc:  # a dtype that is none, weights that do not fit: worded as the sympy path words them
        raise fail(str(exc)) from None
    if as_json:
        print_json(pm.fit_data(model, result))
    else:
        typer.echo(pm.render_fit(model, result).rstrip())
    return True


def as_whole(model: Any) -> Any:
    """``model`` named and titled as the whole composite when its parts are counted (``fit`` then holds them)."""
    if not getattr(model, "parts", ()) or model.composite is None:
        return model
    from dataclasses import replace

    from ..tower_parallel import shown_name

    title = model.composite.title if model.composite.whole else model.architecture.title
    return replace(model, name=shown_name(model), architecture=replace(model.architecture, title=title))
