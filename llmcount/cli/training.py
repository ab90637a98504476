"""``memory --training``: the options and the one function the ``memory`` command delegates to.

The options are declared here and used by ``memory`` and ``writeup --training``; ``run`` resolves them, calls the
library (:mod:`.formulas.training`, :mod:`.formulas.activations`) and prints.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from ..errors import LlmcountError
from ..sizes import parse_size
from .app import fail, print_json, terminal_width

try:  # typer >= 0.26 vendors click
    from typer._click import exceptions as click
except ImportError:  # pragma: no cover - older typer, on the real click
    from click import exceptions as click


class Optimizer(str, Enum):
    adamw = "adamw"
    adamw8bit = "adamw8bit"
    sgd = "sgd"
    sgd_momentum = "sgd-momentum"
    adafactor = "adafactor"
    muon = "muon"


class Recompute(str, Enum):
    none = "none"
    selective = "selective"
    full = "full"


class AttentionKind(str, Enum):
    sdpa = "sdpa"
    eager = "eager"
    flash = "flash"


OptimizerOption = Annotated[
    Optimizer,
    typer.Option(
        "--optimizer",
        help="With --training: adamw (2+2+12 bytes/parameter in bf16), adamw8bit, sgd (no momentum, PyTorch's "
        "default), sgd-momentum, adafactor (factored second moments), muon (AdamW for embedding, head, norms).",
    ),
]
ZeroOption = Annotated[
    str, typer.Option("--zero", help="With --training: ZeRO stage 0-3 over --dp ranks.", metavar="STAGE")
]
DpOption = Annotated[
    str,
    typer.Option(
        "--dp",
        help="Data-parallel ranks (with --training ZeRO shards over them; without, inference replicas).",
        metavar="INT",
    ),
]
TpOption = Annotated[
    str,
    typer.Option(
        "--tp",
        help="Tensor-parallel ranks (heads, MLP, vocabulary); without --training, inference per GPU as vLLM splits.",
        metavar="INT",
    ),
]
PpOption = Annotated[
    str, typer.Option("--pp", help="Pipeline stages (layers split; with --training 1F1B).", metavar="INT")
]
EpOption = Annotated[
    str,
    typer.Option(
        "--ep", help="Expert-parallel ranks (routed experts split; inference: 1 or tp·dp, as vLLM).", metavar="INT"
    ),
]
LoraOption = Annotated[
    str | None, typer.Option("--lora", help="With --training: LoRA rank r; only the adapters train.", metavar="R")
]
LoraTargetsOption = Annotated[
    str,
    typer.Option(
        "--lora-targets",
        help="With --lora: comma-separated groups or modules to adapt (attention, mlp, q_proj, v_proj ...).",
    ),
]
AttentionOption = Annotated[
    AttentionKind,
    typer.Option(
        "--attention",
        help="With --training: sdpa (transformers' default; its fused kernel keeps no S×S probabilities), eager "
        "(keeps the S×S probabilities) or flash (flash_attention_2; keeps what sdpa keeps).",
    ),
]
RecomputeOption = Annotated[
    Recompute,
    typer.Option(
        "--recompute",
        help="With --training: none, selective (recompute core attention, Megatron) or full (keep layer inputs).",
    ),
]
SequenceParallelOption = Annotated[
    bool, typer.Option("--sequence-parallel", help="With --training and --tp: split norms' activations over tp too.")
]

DEFAULTS = {
    "--optimizer": Optimizer.adamw,
    "--zero": "0",
    "--dp": "1",
    "--tp": "1",
    "--pp": "1",
    "--ep": "1",
    "--lora": None,
    "--lora-targets": "attention,mlp",
    "--attention": AttentionKind.sdpa,
    "--recompute": Recompute.none,
    "--sequence-parallel": False,
    "--freeze-vision": False,
}


def refuse_without_training(given: dict[str, object]) -> None:
    """A usage error (exit 2) naming the first training option given without --training."""
    for option, value in given.items():
        if value != DEFAULTS[option]:
            raise click.UsageError(f"{option} needs --training")


def _degree(option: str, value: str) -> int:
    return parse_size(value, option, suffixes=False)


def parallel_from(options: dict[str, object]):
    """The parallel degrees and ZeRO stage the options give; LlmcountError naming a bad one."""
    from ..formulas import training as tr

    zero_text = str(options["--zero"]).strip()
    if zero_text not in ("0", "1", "2", "3"):
        raise LlmcountError(f"--zero {zero_text!r}: choices: 0, 1, 2, 3")
    return tr.Parallel(
        tp=_degree("--tp", options["--tp"]),
        pp=_degree("--pp", options["--pp"]),
        dp=_degree("--dp", options["--dp"]),
        ep=_degree("--ep", options["--ep"]),
        zero=int(zero_text),
        sequence_parallel=bool(options["--sequence-parallel"]),
    )


def lora_from(options: dict[str, object]):
    """The LoRA adapters --lora and --lora-targets ask for (None without --lora); a usage error for --lora-targets
    alone, LlmcountError naming a bad rank or an empty target list."""
    from ..formulas import training as tr

    if options["--lora"] is None:
        if options["--lora-targets"] != DEFAULTS["--lora-targets"]:
            raise click.UsageError("--lora-targets needs --lora")
        return None
    targets = tuple(t.strip() for t in str(options["--lora-targets"]).split(",") if t.strip())
    if not targets:
        raise LlmcountError("--lora-targets: give at least one group or module name")
    return tr.Lora(_degree("--lora", options["--lora"]), targets)


def run(
    spec: str, dtype: str, seq: str, batch: str, options: dict[str, object], as_json: bool, conventions: bool = False
) -> None:
    """Resolve the inputs, compute model states and activations per GPU, print; with ``conventions``, Korthikanti
    et al.'s activations per layer beside llmcount's."""
    if _plain(spec, dtype, seq, batch, options, as_json, conventions):
        return
    from ..formulas import training as tr
    from ..renderers.training import render_training, training_data
    from ..sources import load

    try:
        seq_, batch_ = parse_size(seq, "--seq"), parse_size(batch, "--batch")
        parallel = parallel_from(options)
        lora = lora_from(options)
        model = load(spec)
        _scheme_note(model, dtype)
        result = tr.estimate(
            model,
            dtype,
            seq_,
            batch_,
            options["--optimizer"].value,
            parallel,
            lora,
            options["--attention"].value,
            options["--recompute"].value,
        )
        from ..formulas.tower_memory import with_parts_training

        freeze = bool(options.get("--freeze-vision", False))
        result = with_parts_training(model, result, options["--optimizer"].value, freeze, lora)
    except LlmcountError as exc:
        raise fail(str(exc)) from None
    if conventions:
        from ..formulas.megatron_memory import described

        beside = _beside(described(model), result, seq_, batch_, parallel, options)
    else:
        beside = None
    if as_json:
        _print_json(training_data(model, result, seq_, batch_), beside)
    else:
        _print_text(render_training(model, result, seq_, batch_, terminal_width()).rstrip(), beside)


def _beside(model, result, seq: int, batch: int, parallel, options: dict[str, object]):
    """What ``--conventions`` prints beside the estimate, for a model described by
    :class:`llmcount.formulas.megatron_memory.Described`: Korthikanti's rows, Megatron's and DeepSpeed's estimates."""
    extra = _conventions(model, result, seq, batch, parallel, options)
    megatron = _megatron(model, result, seq, batch, parallel, options)
    return extra, megatron, _deepspeed(model, parallel)


def _print_json(data: dict, beside) -> None:
    if beside is not None:
        from ..plain_conventions import conventions_data, deepspeed_data, megatron_data

        extra, megatron, deepspeed = beside
        data["activation_conventions"] = conventions_data(*extra)
        data["megatron_memory"] = megatron_data(*megatron)
        data["deepspeed_memory"] = deepspeed_data(*deepspeed)
    print_json(data)


def _print_text(text: str, beside) -> None:
    typer.echo(text)
    if beside is not None:
        from ..plain_conventions import render_conventions, render_deepspeed, render_megatron

        extra, megatron, deepspeed = beside
        typer.echo("\n" + render_conventions(*extra))
        typer.echo("\n" + render_megatron(*megatron))
        typer.echo("\n" + render_deepspeed(*deepspeed))


def _scheme_note(model, dtype: str) -> None:
    """A note that training memory does not read the config's own quantisation scheme (a bad one is refused as
    ``count`` refuses it): the weights, their gradients and optimizer states are sized in the compute dtype."""
    from ..quant.config import read_quant
    from ..sources import emit_note

    scheme = read_quant(model.config, model.source)  # a bad scheme: LlmcountError
    if scheme is not None:
        emit_note(
            f"note: {model.source}: the config's quantisation ({scheme.label}) is not applied to training "
            f"memory: the weights are counted in {dtype}, as when training from the unquantised checkpoint"
        )


def _plain(
    spec: str, dtype: str, seq: str, batch: str, options: dict[str, object], as_json: bool, conventions: bool = False
) -> bool:
    """The estimate of :func:`run` by the compiled path (:mod:`llmcount.plain_training`, no sympy), printed; False,
    having printed nothing, for what it does not take (then :func:`run` computes through sympy, which words every
    error): a model or an option set its snapshots do not hold (a composite model, and so any --freeze-vision it
    can take), any input to refuse."""
    from .. import plain_training as plain
    from ..counting import Fallback, read
    from ..quant.config import read_quant
    from ..sources import resolve, unseen_note

    if spec == "-":
        return False
    try:
        lora = None
        if options["--lora"] is not None:
            targets = tuple(t.strip() for t in str(options["--lora-targets"]).split(",") if t.strip())
            if not targets:
                return False
            lora = plain.Lora(_degree("--lora", options["--lora"]), targets)
        elif options["--lora-targets"] != DEFAULTS["--lora-targets"]:
            return False
        zero = str(options["--zero"]).strip()
        if zero not in ("0", "1", "2", "3"):
            return False
        parallel = plain.Parallel(
            tp=_degree("--tp", options["--tp"]),
            pp=_degree("--pp", options["--pp"]),
            dp=_degree("--dp", options["--dp"]),
            ep=_degree("--ep", options["--ep"]),
            zero=int(zero),
            sequence_parallel=bool(options["--sequence-parallel"]),
        )
        seq_, batch_ = parse_size(seq, "--seq"), parse_size(batch, "--batch")
        found, source, config = resolve(spec)
        model = read(config, source, found)
        read_quant(config, source)  # a bad scheme: worded by the sympy path
        result = plain.estimate(
            model,
            dtype,
            seq_,
            batch_,
            options["--optimizer"].value,
            parallel,
            options["--attention"].value,
            options["--recompute"].value,
            lora,
        )
        if conventions:
            from ..plain_conventions import described

            model_described = described(model)
    except (LlmcountError, Fallback):
        return False
    if options.get("--freeze-vision"):  # the compiled path reads language models only (formulas.tower_memory)
        raise fail(f"--freeze-vision: {model.name} has no vision tower counted (a language model only)")
    _scheme_note(model, dtype)
    note = unseen_note(model, config)
    if note:
        typer.echo(note, err=True)
    beside = _beside(model_described, result, seq_, batch_, parallel, options) if conventions else None
    if as_json:
        _print_json(plain.training_data(model, result, seq_, batch_), beside)
    else:
        _print_text(plain.render_training(model, result, seq_, batch_, terminal_width()).rstrip(), beside)
    return True


def _deepspeed(model, parallel):
    """DeepSpeed's ZeRO-2 and ZeRO-3 estimates for the model's parameters over every GPU of the options, one node."""
    from ..formulas.deepspeed_memory import estimates, largest_of

    name, largest = largest_of((t.path, t.count) for t in model.terms)
    gpus = parallel.gpus
    return estimates(model.total, largest, gpus, 1), model.total, (name, largest), gpus


def _megatron(model, result, seq: int, batch: int, parallel, options: dict[str, object]):
    """Megatron-LM's theoretical memory for the options (or why it is not given), and llmcount's bytes per GPU."""
    from ..formulas.megatron_memory import megatron_memory

    try:
        made = megatron_memory(
            model,
            seq,
            batch,
            tp=parallel.tp,
            pp=parallel.pp,
            dp=parallel.dp,
            sequence_parallel=parallel.sequence_parallel,
            recompute=options["--recompute"].value,
            distributed_optimizer=parallel.zero >= 1,
        )
    except LlmcountError as exc:
        return str(exc), result
    return made, result


def _conventions(model, result, seq: int, batch: int, parallel, options: dict[str, object]):
    """Korthikanti's rows for the model's sizes and llmcount's exact bytes of its heaviest layer on the GPU."""
    from ..formulas.activation_conventions import korthikanti

    if "h" not in model.values:
        raise fail(
            f"{model.name}: --conventions: Korthikanti's 5as/h needs the attention heads a; this family has none"
        )
    sizes = {"s": seq, "b": batch, "h": model.values["d"], "a": model.values["h"], "t": parallel.tp}
    recompute = options["--recompute"].value
    rows = korthikanti(seq, batch, sizes["h"], sizes["a"], parallel.tp, parallel.sequence_parallel, recompute)
    a = result.activations
    if a is None or not a.per_gpu_layer_bytes:
        return rows, None, sizes, result.activations_refused or "no activations derived"
    heaviest = max(range(len(a.per_gpu_layer_bytes)), key=a.per_gpu_layer_bytes.__getitem__)
    kinds = len(a.per_gpu_layer_bytes)
    which = f"its heaviest layer kind ({a.per_layer_kind[heaviest].name})" if kinds > 1 else "each of its layers"
    how = f"{options['--attention'].value} attention, --recompute {recompute}"
    return rows, a.per_gpu_layer_bytes[heaviest], sizes, f"{which}, {how}"
