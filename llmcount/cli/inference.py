"""Serving, as the ``memory`` and ``fit`` commands and ``speed`` ask for it: inference memory per GPU under
tp/pp/dp/ep (``memory --tp ...`` without --training, and ``memory --gpu NAME``), the longest context and the most
sequences that fit on G GPUs, the model and the quantisation scheme its weights are sized in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from ..errors import LlmcountError, OptionError
from ..sizes import parse_size
from ..tower_parallel import shown_name
from .app import fail, print_json, terminal_width

if TYPE_CHECKING:
    from ..serving import Fit, GpuFit, Layout, Shard

MAX_DEGREE = 65_536
"""The largest parallel degree or GPU count taken: more is a typo, not a cluster."""


def degree(option: str, value: str | int) -> int:
    """A parallel degree or GPU count: a positive integer up to :data:`MAX_DEGREE`; OptionError naming the option."""
    number = parse_size(str(value), option, suffixes=False)
    if number > MAX_DEGREE:
        raise OptionError(f"{option} {number:,} is more than {MAX_DEGREE:,}: not a number of GPUs")
    return number


def _bad_name(find: Any, value: str | None) -> str | None:
    from ..errors import UnknownName

    if value is None:
        return None
    try:
        find(value)
    except UnknownName:  # a bad option value: a usage error (exit 2), one line, with the closest names
        raise
    except LlmcountError:  # a known name refused for its own reason: refused by the command, exit 1
        pass
    return value


def engine_name(value: str | None) -> str | None:
    """``--engine``'s callback: an unknown engine name is a usage error (exit 2) naming the closest names; a known
    engine that is refused (TurboMind) is refused by the command, exit 1."""
    from ..engines import engine

    return _bad_name(engine, value)


def gpu_name(value: str | None) -> str | None:
    """``--gpu``'s callback: an unknown GPU name is a usage error (exit 2) naming the closest names."""
    from ..gpus import gpu

    return _bad_name(gpu, value)


LAYER_SPLIT = "llama.cpp"
"""The engine whose GPUs hold whole layers (--split-mode layer): --gpus alone and --pp split its layers."""


def layout_from(
    tp: str, pp: str, dp: str, ep: str, gpus: str | None, engine: str | None = None
) -> tuple[Layout, list[str]]:
    """The layout the options give (the weights laid out as ``engine`` lays them, vLLM's without one), and a note
    when --gpus alone set tp (pp for llama.cpp, which splits whole layers); LlmcountError naming a bad option."""
    from ..serving import Layout

    layout = Layout(degree("--tp", tp), degree("--pp", pp), degree("--dp", dp), degree("--ep", ep), engine)
    notes = []
    if gpus is not None:
        count = degree("--gpus", gpus)
        if layout.gpus == 1 and count > 1 and engine is not None and _engine_name(engine) == LAYER_SPLIT:
            layout = Layout(1, count, 1, 1, engine)
            notes.append(f"--gpus {count} with llama.cpp: its layers split over the GPUs (--split-mode layer)")
        elif layout.gpus == 1 and count > 1:  # G GPUs for one model: tensor parallel over all of them
            layout = Layout(count, 1, 1, count if layout.ep > 1 else 1, engine)
            notes.append(f"--gpus {count} without --tp/--pp/--dp: tensor parallel over all of them (--tp {count})")
        elif layout.gpus != count:
            raise LlmcountError(
                f"--gpus {count} but --tp {layout.tp} × --pp {layout.pp} × --dp {layout.dp} = {layout.gpus} GPUs"
            )
    return layout, notes


def _engine_name(engine: str) -> str:
    from ..engines import engine as find_engine

    return find_engine(engine).name


def check_engine_pp(rule: Any, engine: str | None, layout: Layout) -> None:
    """An engine without pipeline parallelism (its record's ``[refused] pp``) refused by name with --pp, before any
    model is read."""
    if rule is not None and layout.pp > 1:
        from ..engines import engine as find_engine

        refused = find_engine(engine or "").refused.get("pp")
        if refused:
            raise LlmcountError(f"--pp with --engine {find_engine(engine or '').name}: {refused}")


def config_and_model(spec: str, dtype: str | None = None, notes: list[str] | None = None):
    """The config and the model ``spec`` names; ``notes`` gets :func:`stored_note`'s."""
    from ..formulas.config import read_config
    from ..sources import resolve

    name, source, config = resolve(spec)
    model = read_config(config, source, name)
    if notes is not None:
        notes += stored_note(config, source, dtype)
    return config, model


def stored_note(config: Any, source: str, dtype: str | None) -> list[str]:
    """A note when the config names a quantisation scheme and ``--dtype`` is not given: per GPU the weights are
    counted in bf16, not as the scheme stores them (its per-tensor scales are not split over ranks here)."""
    if dtype is not None or not isinstance(config, dict):
        return []
    from ..quant.report import scheme_for

    try:
        scheme = scheme_for(config, source, None, None, None)
    except LlmcountError:
        return []
    if scheme is None:
        return []
    return [
        f"the checkpoint stores its weights as {scheme.label}; per GPU they are counted in bf16 here (--dtype fp8 "
        "or int4 counts every parameter in that dtype; the scheme's scales are not split over the ranks)"
    ]


def model_and_scheme(spec: str, quant: str | None, bits: int | None, groups: int | None, dtype: str | None):
    """The model ``spec`` names, the quantisation scheme ``memory`` sizes its weights in (``--quant``, else the
    config's own unless a uniform ``--dtype`` of fewer than 16 bits or ``--group-size`` asks for the plain estimate)
    and the config read."""
    from ..dtypes import lookup
    from ..formulas.config import read_config
    from ..quant.report import scheme_for
    from ..sources import resolve

    name, source, config = resolve(spec)
    model = read_config(config, source, name)
    uniform = groups is not None or (dtype is not None and lookup(dtype).bits < 16)
    if quant is None and uniform:
        return model, None, config
    if quant is not None and groups is not None and quant not in ("gptq", "awq", "mlx"):
        raise LlmcountError(f"--group-size: the scheme {quant} has no choice of group size")
    return model, scheme_for(config, source, quant, bits, groups), config


def context_of(config: Any, max_positions: int | None) -> tuple[int, str] | None:
    """The context an engine accepts (:func:`llmcount.serving.context_limit`)."""
    from ..serving import context_limit

    return context_limit(config if isinstance(config, dict) else {}, max_positions)


def fit_context(config: Any, max_positions: int | None, notes: list[str]) -> tuple[int, str] | None:
    """:func:`context_of` for ``fit``, with a note in ``notes`` when the config gives no context length, so that the
    longest context is memory's alone."""
    context = context_of(config, max_positions)
    if context is None:
        notes.append(
            "the config gives no max_position_embeddings (n_positions): the longest context is what memory allows,"
            " not capped at the model's context length (transformers takes its config class's default)"
        )
    return context


def warn_context(name: str, config: Any, max_positions: int | None, seq: int) -> tuple[int, str] | None:
    """:func:`context_of`, with a warning on stderr when ``seq`` is beyond it; called once the answer stands, so
    that a refusal stays one line."""
    from ..serving import context_warning

    limit = context_of(config, max_positions)
    warning = context_warning(name, seq, limit)
    if warning:
        typer.echo(warning, err=True)
    return limit


SHARE_OPTION = "--gpu-memory-utilization"


def gpu_share(engine: str | None, value: str | None):
    """``--gpu-memory-utilization F``: the engine's share of each GPU (:class:`llmcount.serving.Share`) under the
    engine's own setting (vLLM's gpu_memory_utilization, SGLang's mem_fraction_static, TensorRT-LLM's
    free_gpu_memory_fraction, LMDeploy's cache_max_entry_count); None when not given. A value outside (0, 1], or
    an engine with no such setting, is a usage error (click.UsageError, exit 2), one line."""
    if value is None:
        return None
    import re
    from fractions import Fraction

    from .. import engines
    from ..serving import Share
    from . import training as cli_training

    usage = cli_training.click.UsageError
    text = str(value).strip()
    if len(text) > 24 or not re.fullmatch(r"(\d+(\.\d*)?|\.\d+)", text):
        raise usage(f"{SHARE_OPTION}: a fraction in (0, 1] such as 0.9, got {str(value)[:40]!r}")
    fraction = Fraction(text)
    if not 0 < fraction <= 1:
        raise usage(f"{SHARE_OPTION}: a fraction in (0, 1], got {text}")
    if engine is None:
        raise usage(f"{SHARE_OPTION} is an engine setting: give --engine (vllm, sglang, tensorrt-llm, lmdeploy)")
    try:
        eng = engines.engine(engine)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    table = eng.memory_share
    if not table:
        what = "transformers' cache is one model's" if eng.name == engines.TRANSFORMERS else eng.title
        raise usage(
            f"{SHARE_OPTION}: {what} has no share-of-memory setting (it allocates the context it is asked for); "
            "name vllm, sglang, tensorrt-llm or lmdeploy"
        )
    if table.get("below_one") and fraction == 1:
        raise usage(f"{SHARE_OPTION}: {eng.title}'s {table['option']} must be below 1 (0 < value < 1), got {text}")
    return Share(eng.title, table["option"], fraction, table["of"], table.get("rounding", "floor"), table["source"])


def default_share(engine: str | None, notes: list[str] | None = None):
    """The engine's share of each GPU at its own default (vLLM's gpu_memory_utilization, TensorRT-LLM's
    free_gpu_memory_fraction, LMDeploy's cache_max_entry_count), for --gpu without --gpu-memory-utilization; None
    for no engine or one without a fixed default (SGLang's is a rule of the device: ``notes`` gets why)."""
    if engine is None:
        return None
    from fractions import Fraction

    from .. import engines
    from ..serving import Share

    table = engines.engine(engine).memory_share
    if "default" not in table:
        if notes is not None and "default_rule" in table and "rule" not in table:
            notes.append(table["default_rule"])
        return None
    title = engines.engine(engine).title
    rounding = table.get("rounding", "floor")
    fraction = Fraction(table["default"])
    return Share(title, table["option"], fraction, table["of"], rounding, table["source"], default=True)


def rule_share(share, engine: str | None, model: Any, card: Any, layout: Any, spec: str, notes: list[str]):
    """``share``, or where it is None and the engine's default share is a rule of the device (SGLang's
    mem_fraction_static: :func:`llmcount.engines.default_share_rule`), that rule applied to ``card`` and ``layout``;
    ``notes`` gets why when the rule is not transcribed for this GPU or model."""
    if share is not None or engine is None or card is None:
        return share
    from fractions import Fraction

    from .. import engines
    from ..serving import Share

    eng = engines.engine(engine)
    table = eng.memory_share
    if "rule" not in table or "default" in table:
        return share
    attention = model.architecture.attention
    latent = attention is not None and attention.kv_expanded is not None
    found = None
    if not model.parts and model.composite is None:  # a multimodal model's own adjustment is not transcribed
        found = engines.default_share_rule(eng.name, card.name, card.memory_bytes, layout.tp, layout.pp, latent, spec)
    if found is None:
        notes.append(table["default_rule"])
        return None
    fraction, said = found
    source = f"{said}; {table['source']}"
    return Share(
        eng.title,
        table["option"],
        Fraction(fraction),
        table["of"],
        table.get("rounding", "floor"),
        source,
        default=True,
    )


def with_reserve(share, engine: str | None, model: Any, gpu_title: str):
    """``share`` with the runtime reserve the engine sets aside before taking it (LMDeploy's
    (max_prefill_token_num + 2 · max_batches) · vocab_size · 2 bytes, max_batches by the GPU's name), when the
    engine's record has one."""
    if share is None or engine is None:
        return share
    from dataclasses import replace

    from .. import engines
    from ..formulas.symbols import V

    table = engines.engine(engine).memory_share
    if "max_prefill_token_num" not in table:
        return share
    name = gpu_title.lower()
    batches = next((n for key, n in table["max_batches"].items() if key in name), table["max_batches_other"])
    vocab = model.values[V]
    reserve = (table["max_prefill_token_num"] + 2 * batches) * vocab * 2
    rule = (
        f"(max_prefill_token_num {table['max_prefill_token_num']:,} + 2 · max_batches {batches:,}) · vocab_size "
        f"{vocab:,} · 2 (_get_runtime_size; max_batches for the {gpu_title}: get_max_batch_size)"
    )
    return replace(share, reserve=reserve, reserve_rule=rule)


def share_data(share, capacity: int, held: int) -> dict[str, Any]:
    """The JSON form of an engine's share of a GPU."""
    return {
        "option": share.option,
        "fraction": float(share.fraction),
        "of": share.of,
        "room_bytes": share.room(capacity, held),
        "reserve_bytes": share.reserve,
        "source": share.source,
        "default": share.default,
    }


def serving_memory(
    spec: str,
    given: dict[str, Any],
    refused: dict[str, Any],
    dtype: str | None,
    kv_dtype: str | None,
    seq: str,
    batch: str,
    gpu_memory: str | None,
    gpu: str | None,
    gpus: str | None,
    as_json: bool,
    engine: str | None = None,
    max_num_batched_tokens: str | None = None,
    quant: str | None = None,
    bits: str | None = None,
    group_size: str | None = None,
    attention_backend: str | None = None,
    gpu_memory_utilization: str | None = None,
) -> None:
    """``memory`` with --tp/--pp/--dp/--ep or --gpu and without --training: per GPU (:func:`memory_per_gpu`, with
    ``engine``'s KV cache per rank when given), or with --gpu-memory what fits GPUs of that memory
    (:func:`fit_memory`). ``given``: the training options as typed (the parallel degrees among them); ``refused``: the
    options that size something else, None when not given."""
    from . import training as cli_training

    degrees = [str(given[option]) for option in ("--tp", "--pp", "--dp", "--ep")]
    others = {k: v for k, v in given.items() if k not in ("--tp", "--pp", "--dp", "--ep")}
    typed = [option for option, value in refused.items() if value is not None]
    if gpu_memory is not None and (gpu is not None or gpus is not None):
        raise fail("give one of --gpu NAME (the datasheet's memory) and --gpu-memory SIZE")
    if typed:
        raise fail(
            f"{typed[0]}: not with --tp/--pp/--dp/--ep/--gpu (inference per GPU: the weights in --dtype and the "
            "KV cache)"
        )
    cli_training.refuse_without_training(others)
    if gpu_memory is not None:
        if attention_backend is not None:
            raise fail("--attention-backend: not with --gpu-memory (give --engine sglang and --gpu)")
        if gpu_memory_utilization is not None:
            raise fail(f"{SHARE_OPTION}: not with --gpu-memory (give --engine and --gpu NAME)")
        return fit_memory(spec, gpu_memory, dtype, kv_dtype, seq, *degrees, as_json)
    engine_given = {"engine": engine, "max_num_batched_tokens": max_num_batched_tokens}
    engine_given |= {"quant": quant, "bits": bits, "group_size": group_size, "attention_backend": attention_backend}
    engine_given["gpu_memory_utilization"] = gpu_memory_utilization
    return memory_per_gpu(spec, dtype, kv_dtype, seq, batch, *degrees, gpu, gpus, as_json, **engine_given)


def memory_per_gpu(
    spec: str,
    dtype: str | None,
    kv_dtype: str | None,
    seq: str,
    batch: str,
    tp: str,
    pp: str,
    dp: str,
    ep: str,
    gpu: str | None,
    gpus: str | None,
    as_json: bool,
    engine: str | None = None,
    max_num_batched_tokens: str | None = None,
    quant: str | None = None,
    bits: str | None = None,
    group_size: str | None = None,
    attention_backend: str | None = None,
    gpu_memory_utilization: str | None = None,
) -> None:
    """``memory MODEL --tp N ... [--gpu NAME [--gpus G]] [--engine E] [--quant S]``: per GPU the weights shard (as
    the checkpoint's quantisation scheme, or ``--quant``'s, stores them), the KV shard (as ``engine`` allocates it
    per tp rank, when given); with a GPU, what is left and whether it fits."""
    from .. import serving

    share = gpu_share(engine, gpu_memory_utilization)
    if share is not None and gpu is None:
        raise fail(f"{SHARE_OPTION}: the engine's share of a GPU needs --gpu NAME")
    try:
        batched = None
        if max_num_batched_tokens is not None:
            batched = parse_size(max_num_batched_tokens, "--max-num-batched-tokens")
        backend = {} if attention_backend is None else {"attention_backend": attention_backend}
        if backend:
            from ..engines import check_backend
            from ..engines import engine as find_engine

            check_backend(find_engine(engine), attention_backend)
        rule = engine_rule(engine, kv_dtype, max_num_batched_tokens=batched, **backend)
        card = None
        if gpu is not None:
            from ..gpus import gpu as find_gpu

            card = find_gpu(gpu)
        elif gpus is not None:
            raise OptionError("--gpus needs --gpu NAME (the type of the GPUs)")
        seq_, batch_ = parse_size(seq, "--seq"), parse_size(batch, "--batch")
        layout, notes = layout_from(tp, pp, dp, ep, gpus, engine)
        check_engine_pp(rule, engine, layout)
        if share is None and card is not None:
            share = default_share(engine, notes)
        config, model = config_and_model(spec, dtype)
        stored = stored_weights(config, spec, model, dtype, quant, bits, group_size)
        notes += stored_note(config, spec, dtype) if stored is None and quant is None else []
        kv, plan_kv_dtype = (None, kv_dtype) if rule is None else rule(model, dtype or "bf16")
        share = rule_share(share, engine, model, card, layout, spec, notes)
        share = with_reserve(share, engine, model, card.title if card is not None else "")
        shard = serving.shard(model, layout, dtype or "bf16", plan_kv_dtype, seq_, batch_, kv=kv, stored=stored)
        if stored is not None:
            from dataclasses import replace

            shard = replace(shard, dtype=stored[2])
            notes.append(
                f"{stored[1]}, split over the ranks in proportion to the parameters each holds (scales and zeros with "
                "the rows or columns they belong to)"
            )
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    warn_context(model.name, config, model.max_positions, seq_)
    if rule is not None:
        notes.append(engine_note(engine))
    checked = None if card is None else serving.GpuFit(card.title, card.memory_bytes, shard, card.source, share)
    if share is not None:
        notes.append(f"{share.said}: {serving.gb(checked.room)} of {serving.gb(checked.capacity)}")
    if as_json:
        data = shard_data(shown_name(model), shard, checked, notes)
        if share is not None:
            data["gpu_memory_share"] = share_data(share, checked.capacity, shard.weights_bytes)
        if rule is not None:
            data["engine"] = _engine_settings(engine, kv_dtype, batched)
            data["engine"]["settings"] |= backend
        print_json(data)
    else:
        source = "transformers' cache" if rule is None else _engine_source(engine, kv_dtype)
        typer.echo(fitted(render_shard(shown_name(model), shard, checked, notes, source)))


def _engine_source(engine: str, kv_dtype: str | None) -> str:
    from ..engines import engine as find_engine

    eng = find_engine(engine)
    return f"{eng.title}'s cache, KV dtype {kv_dtype or eng.default_dtype}"


def _engine_settings(engine: str, kv_dtype: str | None, batched: int | None) -> dict[str, Any]:
    from ..engines import engine as find_engine

    eng = find_engine(engine)
    given = {} if batched is None else {"max_num_batched_tokens": batched}
    kv = kv_dtype or eng.default_dtype
    return {"name": eng.name, "version": eng.version, "commit": eng.commit, "kv_dtype": kv, "settings": given}


def stored_weights(config: Any, spec: str, model: Any, dtype: str | None, quant, bits, group_size):
    """The weights as stored, for :func:`llmcount.serving.shard`: ((path, parameters, bytes) groups, label) under
    ``--quant`` (``none``: none), else under the checkpoint's own scheme unless ``--dtype`` is given; None
    otherwise."""
    from ..gguf_quant import is_file_type
    from .options import positive_int

    if quant is not None and is_file_type(quant):
        raise LlmcountError(
            f"--quant {quant}: a llama.cpp file type per GPU is not modelled (its tensor types differ layer by layer, "
            "so no GPU's share is in proportion to the parameters it holds)"
        )
    if quant is None and (bits is not None or group_size is not None):
        raise LlmcountError("--bits and --group-size need --quant")
    if quant is None and dtype is not None:
        return None
    from ..quant import report

    groups = positive_int("--group-size", group_size) if group_size is not None else None
    scheme = report.scheme_for(config, spec, quant, positive_int("--bits", bits) if bits else None, groups)
    if scheme is None:
        return None
    plan = report.model_plan(model, scheme, dtype, spec)
    rest = report.short_dtype(plan.dtype)
    label = f"the weights as {scheme.label} stores them (the rest in {rest})"
    return [(g.path, g.parameters, g.bytes) for g in plan.groups], label, f"{scheme.label}, the rest {rest}"


def fitted(text: str) -> str:
    """``text`` with each line wrapped to the terminal's width."""
    from ..renderers.fit import fit_lines

    return fit_lines(text, terminal_width())


def shard_data(name: str, shard: Shard, checked: GpuFit | None, notes: list[str]) -> dict[str, Any]:
    layout = shard.layout
    data: dict[str, Any] = {
        "model": name,
        "tp": layout.tp,
        "pp": layout.pp,
        "dp": layout.dp,
        "ep": layout.ep,
        "gpus": layout.gpus,
        "dtype": shard.dtype,
        "kv_dtype": shard.kv_dtype,
        "seq": shard.seq,
        "batch": shard.batch,
        "parameters": shard.parameters,
        "gpu_parameters": shard.gpu_parameters,
        "weights_bytes_per_gpu": shard.weights_bytes,
        "kv_cache_bytes_per_gpu": shard.kv_bytes,
        "total_bytes_per_gpu": shard.total_bytes,
        "stage": shard.stage or None,
        "vocab_padded": shard.vocab_padded,
        "notes": [*notes, *shard.notes],
        "assumptions": shard.assumptions,
    }
    if checked is not None:
        data.update(
            gpu=checked.gpu,
            gpu_memory_bytes=checked.capacity,
            gpu_source=checked.source,
            left_bytes=checked.left,
            fits=checked.fits,
            why=checked.why,
        )
    return data


def render_shard(
    name: str, shard: Shard, checked: GpuFit | None, notes: list[str], source: str = "transformers' cache"
) -> str:
    from ..serving import gb

    layout = shard.layout
    stage = f", stage {shard.stage} of {layout.pp}" if shard.stage else ""
    lines = [
        f"{name}: inference memory per GPU, tp {layout.tp} × pp {layout.pp} × dp {layout.dp} = {layout.gpus} "
        + ("GPU" if layout.gpus == 1 else "GPUs")
        + (f", ep {layout.ep}" if layout.ep > 1 else "")
        + stage,
        f"  weights   {shard.weights_bytes:>20,} bytes  {gb(shard.weights_bytes)}  "
        f"({shard.gpu_parameters:,} of {shard.parameters:,} parameters in {shard.dtype})",
        f"  KV cache  {shard.kv_bytes:>20,} bytes  {gb(shard.kv_bytes)}  "
        f"(B = {shard.batch:,} × S = {shard.seq:,} tokens in {shard.kv_dtype}, {source})",
        f"  total     {shard.total_bytes:>20,} bytes  {gb(shard.total_bytes)}",
    ]
    if checked is not None:
        verdict = "fits" if checked.fits else "does not fit"
        lines.append(f"  {'GPU':<8}  {checked.capacity:>20,} bytes  {gb(checked.capacity)}  ({checked.gpu}, datasheet)")
        if checked.share is not None:
            share = checked.share
            lines.append(
                f"  {'share':<8}  {checked.room:>20,} bytes  {gb(checked.room)}  ({share.engine}'s {share.option} "
                f"{float(share.fraction):g}, {'of the GPU' if share.of == 'total' else 'of what the weights leave'})"
            )
        lines += [
            f"  left      {checked.left:>20,} bytes  {gb(checked.left)}",
            f"{verdict}: {checked.why}",
        ]
    lines += [f"note: {note}" for note in (*notes, *shard.notes)]
    lines.append(f"assumes: {shard.assumptions}")
    return "\n".join(lines)


def engine_note(engine: str) -> str:
    from ..engines import engine as find_engine

    eng = find_engine(engine)
    return f"the KV cache as {eng.title} {eng.version} allocates it per GPU (docs/engines.md)"


def engine_rule(engine: str | None, kv_dtype: str | None, **settings: Any):
    """For ``--engine`` other than transformers: a function of (model, weights' dtype) giving ``serving.fit``'s and
    ``serving.shard``'s KV rule (the engine's cache per tp rank, under the engine ``settings`` given) and the dtype
    transformers' plan is made in; None otherwise. The engine and its KV dtype are checked before any model is
    read."""
    if engine is None:
        return None
    from .. import engines

    if engines.check(engine, kv_dtype).name == engines.TRANSFORMERS:
        return None

    def rule(model, dtype: str):
        def per_plan(plan):
            tp = plan.layout.tp
            if plan.layout.pp == 1:
                return lambda s, b: engines.kv_cache_bytes(
                    engine, model, s, b, kv_dtype, dtype=dtype, tp=tp, **settings
                )

            pp = plan.layout.pp

            def staged(s: int, b: int) -> int:  # the layers of this GPU's stage (llama.cpp: each layer's own device)
                figure = engines.kv_cache(engine, model, s, b, kv_dtype, dtype=dtype, tp=tp, pp=pp, **settings)
                return engines.stage_bytes(figure, plan.layer_counts, plan.sequence, plan.layers)

            return staged

        return per_plan, engines.transformers_dtype(kv_dtype, dtype)

    return rule


def fit_memory(
    spec: str,
    gpu_memory: str,
    dtype: str | None,
    kv_dtype: str | None,
    seq: str,
    tp: str,
    pp: str,
    dp: str,
    ep: str,
    as_json: bool,
) -> None:
    """``memory MODEL --gpu-memory SIZE --tp N ...``: what ``fit`` answers, for GPUs of a stated memory."""
    from .. import serving
    from ..sizes import parse_bytes

    try:
        capacity = parse_bytes(gpu_memory, "--gpu-memory")
        seq_ = parse_size(seq, "--seq")
        layout, notes = layout_from(tp, pp, dp, ep, None)
        config, model = config_and_model(spec, dtype, notes)
        context = fit_context(config, model.max_positions, notes)
        result = serving.fit(
            model, capacity, layout, dtype or "bf16", kv_dtype, seq_, context, gpu=f"GPU of {gpu_memory}"
        )
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    warn_context(model.name, config, model.max_positions, seq_)
    if as_json:
        print_json(fit_data(shown_name(model), result, notes))
    else:
        typer.echo(fitted(render_fit(shown_name(model), result, notes)))


def fit_data(name: str, result: Fit, notes: list[str]) -> dict[str, Any]:
    layout = result.layout
    return {
        "model": name,
        "gpu": result.gpu,
        "gpu_memory_bytes": result.capacity,
        "gpus": layout.gpus,
        "tp": layout.tp,
        "pp": layout.pp,
        "dp": layout.dp,
        "ep": layout.ep,
        "dtype": result.dtype,
        "kv_dtype": result.kv_dtype,
        "weights_bytes_per_gpu": result.weights_bytes,
        "max_seq": result.longest,
        "max_seq_by_memory": result.max_seq,
        "capped_by_context": result.capped,
        "context_length": result.context,
        "seq": result.seq,
        "max_batch": result.max_batch,
        "reason": result.reason or None,
        "would_fit": list(result.would),
        "notes": [*notes, *result.notes],
    }


def render_fit(
    name: str,
    result: Fit,
    notes: list[str],
    kv_source: str = "transformers' KV cache split over the ranks",
    share_given: bool = False,
) -> str:
    from ..serving import gb

    layout = result.layout
    lines = [
        f"{name} on {layout.gpus} × {result.gpu} ({gb(result.capacity)} each): tp {layout.tp} × pp {layout.pp} × "
        f"dp {layout.dp}" + (f", ep {layout.ep}" if layout.ep > 1 else ""),
        f"  weights per GPU  {gb(result.weights_bytes)} in {result.dtype}; KV cache in {result.kv_dtype}",
    ]
    if result.reason:
        lines.append(f"nothing fits: {result.reason}")
        lines += [f"would fit: {alternative}" for alternative in result.would]
    else:
        if result.longest is None:
            longest = "no limit from memory"
        else:
            longest = f"{result.longest:,} tokens"
            if result.capped:
                shown = "no limit" if result.max_seq is None else f"{result.max_seq:,}"
                longest += f" (the context length, {result.context_how}; memory allows {shown})"
        lines.append(f"  longest context, one sequence   {longest}")
        batch = "no limit from memory" if result.max_batch is None else f"{result.max_batch:,}"
        lines.append(f"  concurrent sequences at S = {result.seq:,}   {batch}")
    lines += [f"note: {note}" for note in (*notes, *result.notes)]
    from ..engines import engine

    vllm = engine("vllm")
    share = vllm.settings.get("gpu_memory_utilization")
    if share_given:
        left = "the engine's share of each GPU as noted"
    elif layout.engine is not None:
        left = "the whole GPU (no share of it applied for this engine: see the notes)"
    else:
        left = (
            f"the whole GPU (vLLM {vllm.version} also leaves 1 - gpu_memory_utilization free, {share} by default: "
            "give --engine to apply an engine's share)"
        )
    splits = "vLLM splits them" if layout.engine is None else f"{engine(layout.engine).title} lays them out"
    lines.append(
        f"assumes: per GPU, the weights as {splits} and {kv_source}; activations, CUDA graphs and the "
        f"engine's workspace not counted; {left}"
    )
    return "\n".join(lines)
