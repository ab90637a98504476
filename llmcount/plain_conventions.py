"""Text and JSON of ``memory --training --conventions``: Korthikanti et al.'s activations per layer, Megatron-LM's
and DeepSpeed's estimates beside llmcount's exact figures, without sympy.

Both paths describe their model the same way (:class:`llmcount.formulas.megatron_memory.Described`): the sympy path
from its Model (``megatron_memory.described``), the compiled path from the family's training snapshot
(:func:`described`), so that the estimates are computed and written by the same code.
"""

from __future__ import annotations

import textwrap
from fractions import Fraction
from typing import Any

from . import evaluate
from .counting import Counted, Fallback
from .formulas.activation_conventions import DIFFERENCES, SOURCE, ActivationConvention
from .formulas.megatron_memory import DIFFERENCES as MEGATRON_DIFFERENCES
from .formulas.megatron_memory import SOURCE as MEGATRON_SOURCE
from .formulas.megatron_memory import Described, MegatronMemory, Term

DEEPSPEED_NOTE = (
    "P every parameter (a tied one once), the largest layer the module with the most parameters of its own, as "
    "llmcount's record paths name them; the GPUs the options give (tp·pp·dp·ep), on one node. ZeRO-2 without "
    "offload is 2·P + 18·P/G in this code; DeepSpeed's docs/code-docs/source/memory.rst still print the earlier "
    "4·P + 16·P/G. DeepSpeed counts fp16 weights, fp32 gradients, fp32 weights and Adam moments (18 bytes), "
    "llmcount's mixed-precision AdamW 16 (bf16 gradients); neither counts activations"
)

NUM_BYTES_IN_MEGABYTE = 1024 * 1024


def _number(value: Fraction) -> int | float:
    return int(value) if value.denominator == 1 else float(value)


def _grouped(value: Fraction) -> str:
    return f"{int(value):,}" if value.denominator == 1 else f"{float(value):,.1f}"


def conventions_data(rows: list[ActivationConvention], exact: int | None, sizes: dict[str, int], why: str) -> dict:
    out: dict[str, Any] = {
        "unit": "activation bytes of one layer on one GPU",
        "sizes": sizes,
        "llmcount_bytes_per_layer": exact,
        "llmcount_note": why,
        "rows": [
            {
                "name": r.name,
                "bytes_per_layer": _number(r.bytes_per_layer),
                "formula": r.formula,
                "source": r.source,
                "matches_options": r.matches,
                "llmcount_over_row": None if exact is None else float(Fraction(exact) / r.bytes_per_layer),
            }
            for r in rows
        ],
        "differences": DIFFERENCES,
    }
    return out


def render_conventions(rows: list[ActivationConvention], exact: int | None, sizes: dict[str, int], why: str) -> str:
    width = 80
    head = ", ".join(f"{k} = {v:,}" for k, v in sizes.items())
    lines = textwrap.wrap(
        f"Activations of one layer on one GPU, as Korthikanti et al. 2022 count them ({head}):", width
    )
    name_w = max(len(r.name) for r in rows) + 2
    lines.append(f"{'row':<{name_w}}{'bytes per layer':>18}  {'llmcount / row':>14}")
    for r in rows:
        ratio = "" if exact is None else f"{float(Fraction(exact) / r.bytes_per_layer):.4f}"
        mark = " *" if r.matches else ""
        lines.append(f"{r.name:<{name_w}}{_grouped(r.bytes_per_layer):>18}  {ratio:>14}{mark}")
    lines.append("* the row of the options given (--tp, --sequence-parallel, --recompute)")
    if exact is not None:
        lines += textwrap.wrap(f"llmcount (exact, transformers' autograd): {exact:,} bytes per layer, {why}", width)
    else:
        lines += textwrap.wrap(f"llmcount: not given, {why}", width)
    for r in rows:
        lines += textwrap.wrap(f"{r.name}: {r.formula}", width, subsequent_indent="    ")
    lines += textwrap.wrap(f"source: {SOURCE}", width, subsequent_indent="    ")
    lines += textwrap.wrap(f"why they differ: {DIFFERENCES}", width, subsequent_indent="    ")
    return "\n".join(lines)


def _mb(value: Fraction) -> str:
    """Megatron's unit: MB of 1024² bytes, two decimals, as report_theoretical_memory prints them."""
    return f"{float(value / NUM_BYTES_IN_MEGABYTE):,.2f} MB"


def megatron_data(made: MegatronMemory | str, result) -> dict:
    """Megatron-LM's theoretical memory per GPU beside llmcount's, or why it is not given."""
    if isinstance(made, str):
        return {"source": MEGATRON_SOURCE, "not_given": made}
    a = made.args
    return {
        "source": MEGATRON_SOURCE,
        "unit": "bytes on one GPU of the first pipeline stage (Megatron prints MB of 1024² bytes)",
        "args": {k: getattr(a, k) for k in a.__dataclass_fields__},
        "parameters": made.parameters,
        "left_out": [{"path": path, "parameters": n} for path, n in made.left_out],
        "weight_and_optimizer_bytes": _number(made.weights_and_optimizer),
        "activation_bytes": _number(made.activations),
        "activation_function": made.activation_function,
        "total_bytes": _number(made.total),
        "weight_and_optimizer_mb": float(made.weights_and_optimizer / NUM_BYTES_IN_MEGABYTE),
        "activation_mb": float(made.activations / NUM_BYTES_IN_MEGABYTE),
        "total_mb": float(made.total / NUM_BYTES_IN_MEGABYTE),
        "llmcount_model_states_bytes": result.model_states_bytes,
        "llmcount_activation_bytes": result.activations_bytes,
        "differences": MEGATRON_DIFFERENCES,
    }


def render_megatron(made: MegatronMemory | str, result) -> str:
    width = 80
    if isinstance(made, str):
        return "\n".join(textwrap.wrap(f"megatron: not given: {made}", width, subsequent_indent="    "))
    a = made.args
    head = (
        f"Megatron-LM's theoretical memory on one GPU (tp = {a.tensor_model_parallel_size}, pp = "
        f"{a.pipeline_model_parallel_size}, dp = {a.data_parallel_size}, distributed optimizer "
        f"{'on' if a.use_distributed_optimizer else 'off'}, {made.activation_function}):"
    )
    lines = textwrap.wrap(head, width)
    ours = result.activations_bytes
    rows = [
        ("weight and optimizer", made.weights_and_optimizer, result.model_states_bytes),
        ("activation", made.activations, ours),
        ("total", made.total, None if ours is None else result.model_states_bytes + ours),
    ]
    lines.append(f"{'':<22}{'megatron':>18}  {'llmcount (bytes)':>20}")
    for name, value, mine in rows:
        lines.append(f"{name:<22}{_mb(value):>18}  {'' if mine is None else f'{mine:,}':>20}")
    left = ", ".join(f"{path} {n:,}" for path, n in made.left_out) or "nothing"
    lines += textwrap.wrap(
        f"Megatron's count: {made.parameters:,} parameters (vocabulary padded to {a.padded_vocab_size:,}); "
        f"it leaves out {left}",
        width,
        subsequent_indent="    ",
    )
    lines += textwrap.wrap(f"source: {MEGATRON_SOURCE}", width, subsequent_indent="    ")
    lines += textwrap.wrap(f"why they differ: {MEGATRON_DIFFERENCES}", width, subsequent_indent="    ")
    return "\n".join(lines)


def deepspeed_data(rows, params: int, largest: tuple[str, int], gpus: int) -> dict:
    from .formulas.deepspeed_memory import SOURCE as DEEPSPEED_SOURCE

    return {
        "source": DEEPSPEED_SOURCE,
        "total_params": params,
        "largest_layer": {"path": largest[0], "params": largest[1]},
        "num_gpus_per_node": gpus,
        "num_nodes": 1,
        "rows": [{"stage": r.stage, "options": r.options, "cpu_bytes": r.cpu, "gpu_bytes": r.gpu} for r in rows],
        "note": DEEPSPEED_NOTE,
    }


def render_deepspeed(rows, params: int, largest: tuple[str, int], gpus: int) -> str:
    from .formulas.deepspeed_memory import SOURCE as DEEPSPEED_SOURCE

    width = 80
    lines = textwrap.wrap(
        f"DeepSpeed's ZeRO estimates of model states ({params:,} parameters, largest layer {largest[0]} "
        f"{largest[1]:,}; 1 node, {gpus} GPU{'s' if gpus > 1 else ''}), GB of 2³⁰ bytes as DeepSpeed prints them:",
        width,
    )
    lines.append("ZeRO    per CPU |   per GPU | offload_param, offload_optimizer, zero_init")
    for r in rows:
        options = r.options.replace("offload_", "")
        lines.append(f"{r.stage:<4} {r.cpu / 2**30:8.2f}GB | {r.gpu / 2**30:7.2f}GB | {options}")
    lines += textwrap.wrap(f"source: {DEEPSPEED_SOURCE}", width, subsequent_indent="    ")
    lines += textwrap.wrap(f"note: {DEEPSPEED_NOTE}", width, subsequent_indent="    ")
    return "\n".join(lines)


def described(model: Counted) -> Described:
    """The :class:`Described` of a config the compiled path counted, from its family's training snapshot;
    :class:`Fallback` when the snapshot does not hold its selection of terms or the terms' flags."""
    from .plain_training import snapshot

    data = snapshot(model.architecture.name)
    selection = None if data is None or "states" not in data else data["selections"].get(model.selection)
    if selection is None or any("matmul" not in t for t in selection["terms"]):
        raise Fallback
    values = model.values

    def number(source: str) -> int:
        try:
            value = evaluate.whole(evaluate.from_source(source)(values))
        except (KeyError, ZeroDivisionError):
            raise Fallback from None
        if value is None:
            raise Fallback
        return value

    terms = tuple(
        Term(
            t["path"],
            t["group"],
            t["matmul"],
            number(t["layers"]),
            number(t["expr"]),
            t["embedding"],
            t["vocab_by_d"],
        )
        for t in selection["terms"]
    )
    paths = {t.path for t in terms}
    tied = any(c.path == "head/lm_head" for c in model.architecture.choices) and "head/lm_head" not in paths
    return Described(model.name, data["states"], dict(values), terms, tied, model.total)
