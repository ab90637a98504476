"""Cost commands: flops, memory, verify, mfu and fit (what fits on GPUs of a named type). Each resolves its inputs,
calls one library function, prints."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import LlmcountError, OptionError
from ..gpus import KNOWN
from ..sizes import SUFFIX_HELP, parse_positive, parse_size
from ..tower_parallel import shown_name
from .app import app, click, fail, print_json, terminal_width
from .inference import engine_name, gpu_name
from .options import (
    SPEC_HELP,
    AttentionBackendOption,
    GpuMemoryUtilizationOption,
    JsonOption,
    ModelArgument,
    positive_int,
)
from .training import (
    AttentionKind,
    AttentionOption,
    DpOption,
    EpOption,
    LoraOption,
    LoraTargetsOption,
    Optimizer,
    OptimizerOption,
    PpOption,
    Recompute,
    RecomputeOption,
    SequenceParallelOption,
    TpOption,
    ZeroOption,
)

if TYPE_CHECKING:
    from ..formulas.config import Model
    from ..formulas.tower_flops import ImageFlops

DEFAULT_SEQ = "4096"
DTYPES_HELP = "fp32, bf16, fp16, fp8, int8 or int4 (also fp64, fp8_e5m2 and torch's names: bfloat16, ...)."

Seq = Annotated[
    str,
    typer.Option(
        "--seq", "-s", help=f"Sequence length S, tokens per sequence: 4096, 32k, 128K; {SUFFIX_HELP}.", metavar="SIZE"
    ),
]
Batch = Annotated[
    str, typer.Option("--batch", "-b", help=f"Batch size B, sequences per pass: 8, 1k; {SUFFIX_HELP}.", metavar="SIZE")
]


def _check_gguf(spec: str) -> None:
    """A GGUF file's header read before the command's imports: a hostile file is one line, at the reader's cost."""
    from ..gguf_file import check_header

    try:
        check_header(spec)
    except LlmcountError as exc:
        raise fail(str(exc)) from None


@app.command()
def flops(
    spec: ModelArgument,
    seq: Seq = DEFAULT_SEQ,
    batch: Batch = "1",
    causal: Annotated[
        bool, typer.Option("--causal", help="Count only the S(S+1)/2 causal query-key pairs, as causal kernels do.")
    ] = False,
    training: Annotated[
        bool, typer.Option("--training", help="Also show forward + backward (3 × forward) and the 6·N·tokens rule.")
    ] = False,
    conventions: Annotated[
        bool,
        typer.Option(
            "--conventions",
            help="Training FLOPs per token at S as Kaplan, Chinchilla, PaLM, Megatron-LM, torchtitan, MaxText and "
            "llmcount count them, side by side, each with its source (uses --seq only).",
        ),
    ] = False,
    mtp: Annotated[
        str | None,
        typer.Option(
            "--mtp",
            help="With --conventions: Megatron-LM's rows with this many multi-token-prediction layers "
            "(mtp_num_layers), from the record's MTP layer.",
            metavar="INT",
        ),
    ] = None,
    images: Annotated[
        str | None,
        typer.Option(
            "--images",
            help="Images per sequence (a composite model with its vision tower): the tower's and projector's FLOPs "
            "per image at the config's image size, times the images, plus the language model over the S text "
            "tokens and the image tokens.",
            metavar="INT",
        ),
    ] = None,
    image_size: Annotated[
        str | None,
        typer.Option(
            "--image-size",
            help="With --images: the image's height and width in pixels (HxW, or one side of a square), for a "
            "tower whose config names no image size (the ViTs of Qwen2-VL, Qwen2.5-VL, MiniMax-M3-VL and Gemma 4 "
            "take any).",
            metavar="HxW",
        ),
    ] = None,
    audio_frames: Annotated[
        str | None,
        typer.Option(
            "--audio-frames",
            help="One audio per sequence of this many log-mel frames (the audio encoder's input_features; 100 a "
            "second at Whisper's hop of 160 samples at 16 kHz): the audio encoder's and projector's FLOPs, plus the "
            "language model over its audio tokens too.",
            metavar="INT",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Forward FLOPs of B sequences of S tokens, per component and per token; with --training the training
    figure (3 × forward) beside the 6·N·tokens rule of thumb. Default convention: full S×S attention matmuls,
    as eager attention computes them and torch's FlopCounterMode counts them. --conventions: the named
    conventions of papers and training frameworks side by side.

    Example: llmcount flops llama-3-8b --seq 2048

    Example: llmcount flops ./gemma-3-27b-it/ --images 1 --seq 4096

    Example: llmcount flops ./Qwen2.5-VL-7B-Instruct/ --images 1 --image-size 448x448

    Example: llmcount flops ./qwen2.5-omni-thinker.json --audio-frames 3000
    """
    if image_size is not None and images is None:  # usage errors (exit 2): the option without its --images, or
        raise click.UsageError(  # a value that is no image size
            "--image-size with flops: the size of the images of --images (flops MODEL --images 1 --image-size 448x448)"
        )
    try:
        size = _image_size(image_size)
    except LlmcountError as exc:
        raise click.UsageError(str(exc)) from None
    if images is not None and (conventions or mtp is not None):
        raise fail("--images with flops: forward FLOPs only, not with --conventions or --mtp")
    if audio_frames is not None and (conventions or mtp is not None):
        raise fail("--audio-frames with flops: forward FLOPs only, not with --conventions or --mtp")
    if mtp is not None and not conventions:
        raise fail("--mtp with flops: Megatron-LM's MTP layers in --conventions (flops MODEL --conventions --mtp 1)")
    if conventions:
        from .glance import print_conventions

        return print_conventions(spec, seq, as_json, mtp)
    from .. import counting
    from ..sources import load_counted

    try:
        seq_, batch_ = parse_size(seq, "--seq"), parse_size(batch, "--batch")
        images_ = _images(images)
        frames = _audio_frames(audio_frames)
        model = load_counted(spec)
        if not images_ and not frames and _plain_flops(model, seq_, batch_, causal, training, as_json):
            return None
        model = model.full() if isinstance(model, counting.Counted) else model
        from ..formulas.flops import Flops
        from ..renderers import flops_data, render_flops

        found = image_flops(model, size) if images_ else None
        heard = audio_flops(model, frames) if frames else None
        text = seq_ + (images_ * found.image_tokens if found else 0)  # the language model's tokens per sequence
        text += heard.image_tokens if heard else 0
        formula = Flops(model.derivation, causal=causal).at(model.values, text)  # the one that holds at S
        counts = formula.evaluate(model.values, text, batch_)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    image_total = found.per_image * images_ * batch_ if found is not None else 0
    audio_total = heard.per_image * batch_ if heard is not None else 0
    if as_json:
        data = flops_data(model, formula, counts)
        if found is not None:
            data.update(text_tokens=seq_, images=found.data(images_, batch_))
        if heard is not None:
            from ..formulas.tower_flops import audio_data

            data.update(text_tokens=seq_, audio=audio_data(heard, frames, batch_))
        if found is not None or heard is not None:
            data.update(whole_forward_flops=counts.forward + image_total + audio_total)
        print_json(data)
    else:
        typer.echo(render_flops(model, formula, counts, training, terminal_width()).rstrip())
        if found is not None and heard is None:
            from ..plain import fit_lines

            lines = image_lines(found, images_, batch_, seq_, counts.forward)
            typer.echo(fit_lines("\n".join(lines), terminal_width()))
        elif heard is not None:
            from ..formulas.tower_flops import render_audio_lines, render_lines
            from ..plain import fit_lines

            lines = ["", *render_lines(found, images_, batch_)] if found is not None else []
            lines += ["", *render_audio_lines(heard, frames, batch_)]
            tokens = f"S = {seq_:,} text"
            tokens += f" + {images_:,} × {found.image_tokens:,} image" if found is not None else ""
            lines.append(f"  language model above: {tokens} + {heard.image_tokens:,} audio tokens")
            whole = counts.forward + image_total + audio_total
            what = "images and audio" if found is not None else "audio"
            lines.append(f"Whole forward (language model + {what}): {whole:,} FLOPs")
            typer.echo(fit_lines("\n".join(lines), terminal_width()))


def _plain_flops(model: object, seq: int, batch: int, causal: bool, training: bool, as_json: bool) -> bool:
    """``flops`` of a model the compiled path counted, printed without importing sympy; False, having printed
    nothing, when the snapshot does not take it."""
    if as_json:
        from ..counting import flops_data

        data = flops_data(model, seq, batch, causal)
        if data is not None:
            print_json(data)
        return data is not None
    from ..plain_flops import flops_text

    text = flops_text(model, seq, batch, causal, training, terminal_width())
    if text is not None:
        typer.echo(text.rstrip())
    return text is not None


def _images(images: str | None) -> int:
    """``--images``: a positive integer up to MAX_IMAGES (0 when not given); LlmcountError naming the option."""
    if images is None:  # the bound's module imports sympy: only when the option is given
        return 0
    from ..formulas.tower_flops import MAX_IMAGES

    return _bounded(images, "--images", MAX_IMAGES, "images per sequence")


def _audio_frames(frames: str | None) -> int:
    """``--audio-frames``: a positive integer up to MAX_AUDIO_FRAMES (0 when not given); LlmcountError naming the
    option."""
    if frames is None:
        return 0
    from ..formulas.tower_flops import MAX_AUDIO_FRAMES

    return _bounded(frames, "--audio-frames", MAX_AUDIO_FRAMES, "frames")


def _bounded(text: str, option: str, most: int, unit: str) -> int:
    """A count option: a positive integer up to ``most``; OptionError (a usage error) naming the option."""
    value = parse_size(text, option, suffixes=False)
    if value > most:
        raise OptionError(f"{option} must be at most {most:,} {unit}, got {value:,}")
    return value


def audio_flops(model: Model, frames: int) -> ImageFlops:
    """The FLOPs of a composite model's audio encoder and projector on one audio (imported when --audio-frames is
    given)."""
    from ..formulas.tower_flops import audio_flops as found

    return found(model, frames)


def _image_size(text: str | None) -> tuple[int, int] | None:
    """``--image-size``: HxW or one side, positive pixels up to 100,000 each (None when not given); LlmcountError
    naming the option."""
    if text is None:
        return None
    import re

    found = re.fullmatch(r"([0-9]{1,6})(?:[xX×]([0-9]{1,6}))?", text.strip())
    if found is None:
        raise LlmcountError(f"--image-size must be HxW in pixels (448x448) or one side (448), got {text[:40]!r}")
    height = int(found.group(1))
    width = int(found.group(2)) if found.group(2) is not None else height
    if not (0 < height <= 100_000 and 0 < width <= 100_000):
        raise LlmcountError(f"--image-size: each side must be 1 to 100,000 pixels, got {height}x{width}")
    return height, width


def image_flops(model: Model, size: tuple[int, int] | None = None) -> ImageFlops:
    """The per-image FLOPs of a composite model's vision tower and projector (imported when --images is given)."""
    from ..formulas.tower_flops import image_flops as found

    return found(model, size)


def image_lines(found: ImageFlops, images: int, batch: int, seq: int, language: int) -> list[str]:
    """The lines ``flops --images`` adds below the language model's: the image parts, the tokens, the whole."""
    from ..formulas.tower_flops import render_lines

    lines = ["", *render_lines(found, images, batch)]
    lines.append(f"  language model above: S = {seq:,} text + {images:,} × {found.image_tokens:,} image tokens")
    lines.append(f"Whole forward (language model + images): {language + found.per_image * images * batch:,} FLOPs")
    return lines


@app.command()
def memory(
    spec: ModelArgument,
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            help="Weights' dtype (default bf16; with a quantisation scheme, the dtype of what it leaves alone, "
            "default the config's): " + DTYPES_HELP,
        ),
    ] = None,
    quant: Annotated[
        str | None,
        typer.Option(
            "--quant",
            help="Weights as a quantisation scheme stores them: fp8-block, fp8, fbgemm-fp8, mxfp4, gptq, awq, nf4, "
            "nf4-double, fp4, int8, nvfp4, mlx; none: ignore the config's own (the default when it has one); or a "
            "llama.cpp file type (q4_k_m, q8_0, q6_k, iq4_xs ...): the ggml type llama-quantize gives each tensor.",
            metavar="SCHEME",
        ),
    ] = None,
    bits: Annotated[
        str | None, typer.Option("--bits", help="With --quant gptq, awq or mlx: bits per weight.", metavar="INT")
    ] = None,
    kv_dtype: Annotated[
        str | None,
        typer.Option("--kv-dtype", help="KV cache dtype (default: the weights' dtype; bf16 for fp8/int8/int4)."),
    ] = None,
    seq: Seq = DEFAULT_SEQ,
    batch: Batch = "1",
    group_size: Annotated[
        str | None,
        typer.Option("--group-size", help="Group quantisation: one scale per this many parameters.", metavar="INT"),
    ] = None,
    scale_dtype: Annotated[str, typer.Option("--scale-dtype", help="dtype of the group scales.")] = "fp16",
    overhead: Annotated[
        str, typer.Option("--overhead", help="A stated overhead, percent of weights + KV cache.", metavar="INT")
    ] = "0",
    training: Annotated[
        bool,
        typer.Option("--training", help="Training memory per GPU: model states and activations (docs/training.md)."),
    ] = False,
    optimizer: OptimizerOption = Optimizer.adamw,
    zero: ZeroOption = "0",
    dp: DpOption = "1",
    tp: TpOption = "1",
    pp: PpOption = "1",
    ep: EpOption = "1",
    lora: LoraOption = None,
    lora_targets: LoraTargetsOption = "attention,mlp",
    attention: AttentionOption = AttentionKind.sdpa,
    recompute: RecomputeOption = Recompute.none,
    sequence_parallel: SequenceParallelOption = False,
    table: Annotated[
        bool, typer.Option("--table", help="The weights in fp32, bf16, fp16, fp8, int8, int4 (+ group scales).")
    ] = False,
    gpu_memory: Annotated[
        str | None,
        typer.Option(
            "--gpu-memory",
            help="A GPU's memory, 80GiB or 24GB: the longest S at B = 1 and the largest B at --seq that fit "
            "(per GPU with --tp/--pp/--dp/--ep).",
            metavar="SIZE",
        ),
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu",
            help=f"A GPU type ({KNOWN}): per GPU the weights and KV shards, what is left, fits or not.",
            callback=gpu_name,
        ),
    ] = None,
    gpus: Annotated[
        str | None,
        typer.Option("--gpus", help="With --gpu: how many (default tp·pp·dp; alone: --tp G).", metavar="G"),
    ] = None,
    gpu_memory_utilization: GpuMemoryUtilizationOption = None,
    freeze_vision: Annotated[
        bool,
        typer.Option(
            "--freeze-vision",
            help="With --training: the vision tower and projector frozen (weights only, no gradients or optimizer "
            "states).",
        ),
    ] = False,
    mtp: Annotated[
        bool,
        typer.Option(
            "--mtp",
            help="Add the checkpoint's multi-token-prediction module (weights and its layers' KV cache), as engines"
            " load it for speculative decoding.",
        ),
    ] = False,
    conventions: Annotated[
        bool,
        typer.Option(
            "--conventions",
            help="With --training: Korthikanti et al. 2022's activations per layer (Table 2: tensor and sequence "
            "parallel, selective and full recomputation) beside llmcount's exact figure.",
        ),
    ] = False,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="The KV cache as a serving engine allocates it, beside transformers' (the default): transformers, "
            "vllm, sglang, llama.cpp, tensorrt-llm, lmdeploy (docs/engines.md). --kv-dtype then takes the engine's "
            "names (vLLM: auto, fp8, fp8_e4m3, fp8_e5m2 ...; llama.cpp: f16, q8_0, q4_0 ...; TensorRT-LLM: auto, "
            "fp8, nvfp4; LMDeploy's quant_policy: auto, int8, int4, fp8 ...).",
            metavar="ENGINE",
            callback=engine_name,
        ),
    ] = None,
    max_num_batched_tokens: Annotated[
        str | None,
        typer.Option(
            "--max-num-batched-tokens",
            help="With --engine vllm: tokens scheduled in one step (default 2048).",
            metavar="SIZE",
        ),
    ] = None,
    ctx: Annotated[
        str | None,
        typer.Option(
            "--ctx", help="With --engine llama.cpp: the context n_ctx in tokens (default B·S).", metavar="SIZE"
        ),
    ] = None,
    attention_backend: AttentionBackendOption = None,
    as_json: JsonOption = False,
) -> None:
    """Memory in exact bytes, GB (10^9) and GiB (2^30): weights + KV cache for B × S tokens (MLA: its latent cache),
    or with --training, per GPU, the weights, gradients and optimizer states (mixed-precision AdamW: 16 bytes
    per parameter; ZeRO, tp/pp/ep sharding, LoRA) and the activations of B × S tokens kept for backward.
    --table: the weights in every dtype side by side; --gpu-memory: what fits in a GPU. Without --training,
    --tp/--pp/--dp/--ep and --gpu NAME give inference memory per GPU as vLLM splits the model (docs/serving.md).

    Example: llmcount memory qwen3-32b --dtype bf16 --batch 8 --seq 32768

    Example: llmcount memory llama-3.1-70b --training --zero 3 --dp 64 --recompute selective

    Example: llmcount memory qwen3-8b --quant q4_k_m

    Example: llmcount memory mistral-7b --seq 32k --engine vllm

    Example: llmcount memory llama-3.1-70b --seq 128k --tp 4 --gpu h100
    """
    _check_gguf(spec)
    from . import training as cli_training

    given = {
        "--optimizer": optimizer,
        "--zero": zero,
        "--dp": dp,
        "--tp": tp,
        "--pp": pp,
        "--ep": ep,
        "--lora": lora,
        "--lora-targets": lora_targets,
        "--attention": attention,
        "--recompute": recompute,
        "--sequence-parallel": sequence_parallel,
        "--freeze-vision": freeze_vision,
    }
    if mtp and (training or table or gpu_memory is not None):
        raise fail("--mtp adds the MTP module to inference memory: not with --training, --table or --gpu-memory")
    if (quant is not None or bits is not None) and (training or table or gpu_memory is not None):
        raise fail("--quant and --bits size inference weights; give them without --training, --table, --gpu-memory")
    if engine is None and (max_num_batched_tokens is not None or ctx is not None or attention_backend is not None):
        raise cli_training.click.UsageError(
            "--max-num-batched-tokens, --ctx and --attention-backend are engine settings: give --engine"
        )
    if engine is not None and (training or table or gpu_memory is not None or mtp):
        raise fail("--engine sizes the inference KV cache: not with --training, --table, --gpu-memory or --mtp")
    if conventions and not training:
        raise cli_training.click.UsageError("--conventions needs --training (FLOPs: llmcount flops --conventions)")
    if scale_dtype != "fp16":  # read only with group scales: a name checked where it is given, whatever else is
        from ..dtypes import lookup

        try:
            lookup(scale_dtype)
        except LlmcountError as exc:
            raise fail(f"--scale-dtype: {exc}") from None
    per_gpu = gpu is not None or gpus is not None or any(v != "1" for v in (tp, pp, dp, ep))
    if gpu_memory_utilization is not None and (training or not per_gpu):
        from .inference import gpu_share

        gpu_share(engine, gpu_memory_utilization)  # a bad value or engine first, as a usage error
        raise fail("--gpu-memory-utilization: the engine's share of a GPU needs --engine and --gpu NAME")
    if not training and per_gpu:
        from .inference import serving_memory

        refused = {"--mtp": mtp or None, "--table": table or None}
        refused |= {"--overhead": None if overhead.strip() == "0" else overhead, "--ctx": ctx}
        if gpu_memory is not None:
            refused |= {"--quant": quant, "--bits": bits, "--group-size": group_size}
        engine_given = {"engine": engine, "max_num_batched_tokens": max_num_batched_tokens}
        engine_given |= {"quant": quant, "bits": bits, "group_size": group_size}
        if attention_backend is not None:
            engine_given["attention_backend"] = attention_backend
        if gpu_memory_utilization is not None:
            engine_given["gpu_memory_utilization"] = gpu_memory_utilization
        return serving_memory(
            spec, given, refused, dtype, kv_dtype, seq, batch, gpu_memory, gpu, gpus, as_json, **engine_given
        )
    if training and (gpu is not None or gpus is not None):
        raise fail("--gpu and --gpus size inference per GPU: not with --training")
    if training and not (table or gpu_memory is not None):
        cli_training.run(spec, dtype or "bf16", seq, batch, given, as_json, conventions)
        return
    if table or gpu_memory is not None:
        from .glance import print_fit, print_weights_table

        if training or (table and gpu_memory is not None):
            raise fail("give only one of --table, --gpu-memory and --training")
        cli_training.refuse_without_training(given)
        if table:
            return print_weights_table(spec, as_json)
        return print_fit(spec, gpu_memory, dtype or "bf16", kv_dtype, seq, overhead, group_size, scale_dtype, as_json)
    cli_training.refuse_without_training(given)
    from ..gguf_quant import is_file_type

    if engine is not None and ((quant is not None and is_file_type(quant)) or spec.lower().endswith(".gguf")):
        raise fail("--engine reads a config.json model; for a GGUF file or type give --kv-dtype without --engine")
    if quant is not None and is_file_type(quant):  # the GGUF llama.cpp's quantizer makes of it
        from .gguf import memory_quant

        return memory_quant(spec, quant, kv_dtype, seq, batch, as_json)
    if spec.lower().endswith(".gguf"):  # the weights as the GGUF file stores them
        from .gguf import memory_gguf

        return memory_gguf(spec, kv_dtype, seq, batch, as_json)
    plain = engine is None and not mtp and quant is None and bits is None and group_size is None
    if plain and overhead.strip() == "0" and ctx is None and _plain_memory(spec, dtype, kv_dtype, seq, batch, as_json):
        return None
    from ..formulas import memory as mem
    from ..quant import report
    from ..renderers import memory_data, render_memory
    from .inference import model_and_scheme

    try:
        serving = False
        if engine is not None:
            from ..engines import TRANSFORMERS
            from ..engines import check as check_engine

            serving = check_engine(engine, kv_dtype).name != TRANSFORMERS
        seq_, batch_ = parse_size(seq, "--seq"), parse_size(batch, "--batch")
        ctx_ = parse_size(ctx, "--ctx") if ctx is not None else None
        batched = (
            None if max_num_batched_tokens is None else parse_size(max_num_batched_tokens, "--max-num-batched-tokens")
        )
        if ctx_ is not None:  # llama.cpp's context is the B sequences' tokens: S = n_ctx / B
            if seq != DEFAULT_SEQ and seq_ != ctx_ // batch_:
                raise LlmcountError(
                    f"--ctx {ctx_:,} holds {batch_:,} sequences of {ctx_ // batch_:,} tokens, not --seq"
                )
            from ..engines import check_count

            seq_ = check_count("--ctx / --batch", ctx_ // batch_)
        groups = positive_int("--group-size", group_size) if group_size is not None else None
        bits_ = positive_int("--bits", bits) if bits is not None else None
        percent = 0 if overhead.strip() == "0" else positive_int("--overhead", overhead)
        model, scheme, config = model_and_scheme(spec, quant, bits_, groups, dtype)
        stored = None if scheme is None else report.model_plan(model, scheme, dtype, spec)
        weights, rows = (None, ()) if stored is None else report.lines(stored)
        weights_dtype = (dtype or "bf16") if stored is None else report.short_dtype(stored.dtype)
        engine_kv_dtype = kv_dtype
        if serving:  # the engine's dtype name; transformers' figure in the dtype llmcount has for it
            from ..engines import transformers_dtype

            kv_dtype = transformers_dtype(kv_dtype, weights_dtype)
        result = mem.inference(
            model.derivation,
            model.values,
            weights_dtype,
            kv_dtype,
            seq_,
            batch_,
            groups if scheme is None else None,
            scale_dtype,
            percent,
            model.max_positions,
            weights=weights,
            scheme=scheme.label if scheme is not None else "",
            stored=rows,
        )
        from ..formulas.tower_memory import with_parts

        result = with_parts(model, result, percent)  # a composite's vision tower and projector: the whole model
        if mtp:
            from ..formulas import mtp as mtp_module

            found = mtp_module.require(model)
            result = mtp_module.with_memory(found, result, seq_, batch_, percent, model.max_positions)
        if engine is not None:
            from ..engines import render as engine_render

            result, engine_kv = engine_render.applied(
                engine,
                model,
                result,
                engine_kv_dtype,
                max_num_batched_tokens=batched,
                ctx=ctx_,
                attention_backend=attention_backend,
            )
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    from .inference import warn_context

    warn_context(model.name, config, model.max_positions, seq_)  # once the answer stands: a refusal is one line
    if as_json:
        data = memory_data(model, result)
        if rows:
            data["scheme"] = result.scheme
            data["stored"] = report.rows_data(rows)
        if engine is not None:
            data["engine"] = engine_render.engine_data(engine_kv)
        print_json(data)
    else:
        typer.echo(render_memory(model, result, terminal_width()).rstrip())
        if engine is not None:
            typer.echo(engine_render.render_engine(engine_kv).rstrip())


_QUICK_MEMORY = {"--seq": "seq", "-s": "seq", "--batch": "batch", "-b": "batch", "--dtype": "dtype"}
_QUICK_MEMORY["--kv-dtype"] = "kv_dtype"


def _quick_memory(args: list[str]):
    """``memory MODEL [--seq S] [--batch B] [--dtype D] [--kv-dtype K] [--json]`` as a call of :func:`memory`
    (returning its exit status), for the root command to make without click's parsing (typer's pydantic validators
    cost more than the answer); None for any other command line, which click parses (another option, one given
    twice, a value starting with ``-``, ``--help``, a MODEL starting with ``-``)."""
    if len(args) < 2 or args[0] != "memory":
        return None
    given: dict[str, str | bool] = {}
    specs = []
    rest = args[1:]
    while rest:
        arg = rest.pop(0)
        if arg == "--json" and "as_json" not in given:
            given["as_json"] = True
            continue
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        option = _QUICK_MEMORY.get(name)
        if option is not None and option not in given:
            if not eq:
                if not rest:
                    return None
                value = rest.pop(0)
            if not value or value.startswith("-"):
                return None
            given[option] = value
            continue
        if not arg or arg.startswith("-"):
            return None
        specs.append(arg)
    if len(specs) != 1:
        return None

    def run() -> int:
        try:
            memory(specs[0], **given)
        except typer.Exit as exc:
            return exc.exit_code
        return 0

    return run


def _plain_memory(spec: str, dtype: str | None, kv_dtype: str | None, seq: str, batch: str, as_json: bool) -> bool:
    """``memory`` of every parameter in one dtype and the KV cache, printed from the compiled snapshot without
    importing sympy (:mod:`llmcount.plain_memory`); False, having printed nothing, when the compiled path does not
    take the model, its config names a quantisation scheme, or an input is bad (the sympy path then words it)."""
    from .. import counting
    from .. import plain_memory as pm
    from ..dtypes import lookup
    from ..quant.config import read_quant
    from ..sources import STDIN, resolve

    if spec == STDIN:
        return False  # stdin is read once: by the sympy path
    try:
        seq_, batch_ = parse_size(seq, "--seq"), parse_size(batch, "--batch")
        name, source, config = resolve(spec)
        model = counting.read(config, source, name)
        if (dtype is None or lookup(dtype).bits >= 16) and read_quant(config, source) is not None:
            return False  # the weights as the config's scheme stores them: the sympy path sizes them
        result = pm.inference(model, dtype or "bf16", kv_dtype, seq_, batch_, pm.max_positions(config))
    except (LlmcountError, counting.Fallback):
        return False
    from .inference import warn_context

    warn_context(model.name, config, pm.max_positions(config), seq_)
    if as_json:
        print_json(pm.memory_data(model, result))
    else:
        typer.echo(pm.render_memory(model, result, terminal_width()).rstrip())
    return True


@app.command()
def verify(
    spec: Annotated[str, typer.Argument(help="A folder with config.json and *.safetensors, or: " + SPEC_HELP)],
    index: Annotated[
        str | None, typer.Option("--index", help="A model.safetensors.index.json: compare its total_size.")
    ] = None,
    checkpoint: Annotated[
        str | None,
        typer.Option("--checkpoint", help="A folder, .safetensors file or index whose shards sit beside it."),
    ] = None,
    hub: Annotated[bool, typer.Option("--hub", help="Read the safetensors headers from the Hugging Face Hub.")] = False,
    dtype: Annotated[
        str | None, typer.Option("--dtype", help="With --index: the checkpoint's dtype (default: the config's).")
    ] = None,
    as_json: JsonOption = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 when the checkpoint's count differs from the formula's.")
    ] = False,
) -> None:
    """Compare the formula with a real checkpoint, reading only safetensors headers or a GGUF file's header (no
    tensors loaded):
    per component, with the reason when a known one explains a difference (tied head stored twice,
    an MTP layer, buffers, quantisation scales, a padded vocabulary).

    Example: llmcount verify ./local-model-dir/

    Example: llmcount verify Qwen3-8B-Q4_K_M.gguf
    """
    _check_gguf(spec)
    from ..checkpoint import verify as verify_checkpoint
    from ..plain_verify import render_verify, verify_data

    try:
        if sum(x is not None for x in (index, checkpoint)) + hub > 1:
            raise LlmcountError("give only one of --index, --checkpoint and --hub")
        if spec.lower().endswith(".gguf") and index is None and checkpoint is None and not hub:
            from ..gguf_model import verify as verify_gguf

            result = verify_gguf(spec)
        else:
            result = verify_checkpoint(spec, index=index, checkpoint=checkpoint, hub=hub, dtype_name=dtype)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(verify_data(result), indent=2))
    else:
        typer.echo(render_verify(result).rstrip())
    if strict and not result.match:
        if result.difference:
            why = f"the checkpoint holds {result.checkpoint_total:,} parameters, the formula {result.formula_total:,}"
        else:
            why = f"the totals agree but {result.differences_count} components differ"
        raise fail(f"{result.model}: {why} (--strict)")


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
    gpu: Annotated[str | None, typer.Option("--gpu", help=f"A GPU type: {KNOWN}.", callback=gpu_name)] = None,
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
    from ..dtypes import canonical
    from ..gpus import peak as gpu_peak
    from ..plain_glance import mfu_data
    from ..sources import load_counted

    try:
        rate = parse_positive(tokens_per_second, "--tokens-per-second")
        seq_ = parse_size(seq, "--seq")
        count = parse_size(gpus, "--gpus", suffixes=False)
        dtype_ = canonical(dtype)
        if dtype_ not in ("bf16", "fp8"):
            raise LlmcountError(f"--dtype: the peaks are of bf16 or fp8, got {dtype!r}")
        peak, name = gpu_peak(gpu, peak_tflops, dtype_)
        model, result, plain = _utilisation(load_counted(spec), seq_, rate, count, peak, name, dtype_, convention)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if as_json:
        print_json(mfu_data(model, result))
    elif plain:
        from ..plain_glance import render_mfu

        typer.echo(render_mfu(model, result).rstrip())
    else:
        from ..renderers.costs_glance import render_mfu

        typer.echo(render_mfu(model, result).rstrip())


def _utilisation(model: object, seq: int, *args: object) -> tuple[object, object, bool]:
    """The model and its MFU (``args``: those of ``conventions.utilisation`` after S), and whether the compiled path
    gave it (no sympy); else the sympy path's, whose model words any refusal."""
    from .. import counting
    from ..formulas.conventions import utilisation
    from ..plain_glance import ingredients

    try:
        return model, utilisation(model, seq, *args, read=ingredients), True
    except counting.Fallback:
        model = model.full() if isinstance(model, counting.Counted) else model
        return model, utilisation(model, seq, *args), False


@app.command()
def fit(
    spec: ModelArgument,
    gpu: Annotated[str, typer.Option("--gpu", help=f"The GPU type: {KNOWN}.", callback=gpu_name)],
    gpus: Annotated[
        str | None,
        typer.Option("--gpus", help="How many GPUs (default tp·pp·dp; alone: tensor parallel over all).", metavar="G"),
    ] = None,
    gpu_memory_utilization: GpuMemoryUtilizationOption = None,
    seq: Annotated[
        str,
        typer.Option(
            "--seq", "-s", help=f"The context at which to count concurrent sequences; {SUFFIX_HELP}.", metavar="SIZE"
        ),
    ] = "4096",
    dtype: Annotated[str | None, typer.Option("--dtype", help="Weights' dtype (default bf16).")] = None,
    kv_dtype: Annotated[str | None, typer.Option("--kv-dtype", help="KV cache dtype (default: the weights').")] = None,
    tp: Annotated[str, typer.Option("--tp", help="Tensor-parallel ranks.", metavar="INT")] = "1",
    pp: Annotated[str, typer.Option("--pp", help="Pipeline stages.", metavar="INT")] = "1",
    dp: Annotated[str, typer.Option("--dp", help="Data-parallel replicas.", metavar="INT")] = "1",
    ep: Annotated[str, typer.Option("--ep", help="Expert-parallel ranks: 1 or tp·dp.", metavar="INT")] = "1",
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="The KV cache as a serving engine allocates it (docs/engines.md): transformers (the default), vllm, "
            "sglang, llama.cpp, tensorrt-llm, lmdeploy; --kv-dtype then takes the engine's names.",
            metavar="ENGINE",
            callback=engine_name,
        ),
    ] = None,
    quant: Annotated[
        str | None,
        typer.Option(
            "--quant",
            help="Weights as a quantisation scheme stores them (fp8-block, mxfp4, gptq, awq, nvfp4 ...; none: "
            "ignore the config's own, which is the default when it has one and --dtype is not given).",
            metavar="SCHEME",
        ),
    ] = None,
    bits: Annotated[
        str | None, typer.Option("--bits", help="With --quant gptq, awq or mlx: bits per weight.", metavar="INT")
    ] = None,
    group_size: Annotated[
        str | None,
        typer.Option("--group-size", help="Group quantisation: one scale per this many parameters.", metavar="INT"),
    ] = None,
    attention_backend: AttentionBackendOption = None,
    as_json: JsonOption = False,
) -> None:
    """The longest context (one sequence) and the most concurrent sequences at --seq that fit on G GPUs of a named
    type, per GPU as vLLM splits the weights (tp/pp/dp/ep; as the checkpoint's quantisation scheme or --quant's
    stores them) with transformers' KV cache (or --engine's); when nothing fits, why, and what would (more GPUs,
    an fp8 KV cache, a shorter context). Activations and the engine's workspace are not counted: the answers are
    upper bounds.

    Example: llmcount fit deepseek-v3 --gpu h200 --gpus 8 --engine vllm
    """
    from .. import serving
    from ..gpus import gpu as find_gpu
    from . import training as cli_training
    from .inference import (
        check_engine_pp,
        config_and_model,
        default_share,
        engine_note,
        engine_rule,
        fit_context,
        fit_data,
        fitted,
        gpu_share,
        layout_from,
        render_fit,
        rule_share,
        stored_note,
        stored_weights,
        warn_context,
        with_reserve,
    )

    if engine is None and attention_backend is not None:
        raise cli_training.click.UsageError("--attention-backend is an engine setting: give --engine sglang")
    share = gpu_share(engine, gpu_memory_utilization)
    try:
        backend = {} if attention_backend is None else {"attention_backend": attention_backend}
        if backend:
            from ..engines import check_backend
            from ..engines import engine as find_engine

            check_backend(find_engine(engine), attention_backend)
        card = find_gpu(gpu)
        seq_ = parse_size(seq, "--seq")
        rule = engine_rule(engine, kv_dtype, **backend)
        layout, notes = layout_from(tp, pp, dp, ep, gpus, engine)
        check_engine_pp(rule, engine, layout)
        share = share if share is not None else default_share(engine, notes)
        config, model = config_and_model(spec, dtype)
        stored = stored_weights(config, spec, model, dtype, quant, bits, group_size)
        notes += stored_note(config, spec, dtype) if stored is None and quant is None else []
        context = fit_context(config, model.max_positions, notes)
        kv, plan_kv_dtype = (None, kv_dtype) if rule is None else rule(model, dtype or "bf16")
        share = rule_share(share, engine, model, card, layout, spec, notes)
        share = with_reserve(share, engine, model, card.title)
        result = serving.fit(
            model,
            card.memory_bytes,
            layout,
            dtype or "bf16",
            plan_kv_dtype,
            seq_,
            context,
            kv=kv,
            gpu=card.title,
            stored=stored,
            share=share,
        )
        if stored is not None:
            notes.append(f"{stored[1]}, split over the ranks in proportion to the parameters each holds")
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    warn_context(model.name, config, model.max_positions, seq_)
    if engine is not None and rule is not None:
        notes.append(engine_note(engine))
    if as_json:
        data = fit_data(shown_name(model), result, notes)
        if rule is not None:
            from ..engines import engine as find_engine

            data["engine"] = find_engine(engine).name
            if backend:
                data["engine_settings"] = backend
        if share is not None:
            from .inference import share_data

            data["gpu_memory_share"] = share_data(share, result.capacity, result.weights_bytes)
        print_json(data)
    else:
        source = "transformers' KV cache split over the ranks" if rule is None else "the engine's KV cache"
        typer.echo(fitted(render_fit(shown_name(model), result, notes, source, share is not None)))
