"""Model-state memory as DeepSpeed's ZeRO estimators give it, beside llmcount's.

Transcribed from microsoft/DeepSpeed (commit in :data:`SOURCE`):

* deepspeed/runtime/zero/stage_1_and_2.py, ``estimate_zero2_model_states_mem_needs``: with the optimizer offloaded
  to the CPU, per GPU 2·P and per CPU P · max(4·G, 16) · 1.5; without, per GPU 2·P + int(18·P / G) and per CPU
  P · 4 · g · 1.5 (G every GPU, g the GPUs of one node, 1.5 the ``additional_buffer_factor``);
* deepspeed/runtime/zero/stage3.py, ``estimate_zero3_model_states_mem_needs``: the largest layer gathered, 4 bytes a
  parameter, plus per GPU int(18·P / G) (nothing offloaded) or int(2·P / G) (the optimizer offloaded) or nothing
  (parameters offloaded too), and per CPU the terms of the zero_init choice.

P is every parameter (a tied one once, as ``model_to_params`` counts ``data_ptr``s) and the largest layer the module
with the most parameters of its own (``recurse=False``). DeepSpeed prints GB of 2³⁰ bytes, two decimals."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import Model

DEEPSPEED_COMMIT = "38327e07f6cd39b63418f60cedd1651b0be3e7c3"
SOURCE = (
    "DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs and "
    f"deepspeed/runtime/zero/stage3.py estimate_zero3_model_states_mem_needs (commit {DEEPSPEED_COMMIT[:10]})"
)
BUFFER = Fraction(3, 2)  # additional_buffer_factor's default


@dataclass(frozen=True)
class ZeroEstimate:
    """One line of DeepSpeed's printed table: its options, bytes per CPU and per GPU (exact; DeepSpeed int()s)."""

    stage: int
    options: str
    cpu: int
    gpu: int


def zero2(params: int, gpus_per_node: int = 1, nodes: int = 1, cpu_offload: bool = True) -> tuple[int, int]:
    """``estimate_zero2_model_states_mem_needs``: (cpu, gpu) bytes."""
    total_gpus = nodes * gpus_per_node
    if cpu_offload:
        return int(params * max(4 * total_gpus, 16) * BUFFER), 2 * params
    return int(params * 4 * gpus_per_node * BUFFER), 2 * params + 18 * params // total_gpus


def zero3(
    params: int,
    largest_layer: int,
    gpus_per_node: int = 1,
    nodes: int = 1,
    cpu_offload: bool = True,
    cpu_offload_params: bool = True,
    zero_init: bool = True,
) -> tuple[int, int]:
    """``estimate_zero3_model_states_mem_needs``: (cpu, gpu) bytes."""
    total_gpus = nodes * gpus_per_node
    gpus_factor = Fraction(1, nodes)
    largest = 4 * largest_layer
    if cpu_offload and cpu_offload_params:
        factor = 18 * gpus_factor if zero_init else max(4 * gpus_per_node, 18 * gpus_factor)
        return int(params * factor * BUFFER), largest
    if cpu_offload:
        factor = 16 * gpus_factor if zero_init else max(4 * gpus_per_node, 16 * gpus_factor)
        return int(params * factor * BUFFER), largest + 2 * params // total_gpus
    cpu = largest_layer * 4 * gpus_per_node * BUFFER if zero_init else params * 4 * gpus_per_node * BUFFER
    return int(cpu), largest + 18 * params // total_gpus


def estimates(params: int, largest_layer: int, gpus_per_node: int = 1, nodes: int = 1) -> list[ZeroEstimate]:
    """Every line DeepSpeed's ``..._all_cold`` functions print, in their order."""
    rows = []
    for offload in (True, False):
        cpu, gpu = zero2(params, gpus_per_node, nodes, offload)
        rows.append(ZeroEstimate(2, f"offload_optimizer={'cpu' if offload else 'none'}", cpu, gpu))
    for offload in (True, False):
        for offload_params in (True, False):
            if not offload and offload_params:
                continue
            for init in (True, False):
                cpu, gpu = zero3(params, largest_layer, gpus_per_node, nodes, offload, offload_params, init)
                options = (
                    f"offload_param={'cpu' if offload_params else 'none'}, "
                    f"offload_optimizer={'cpu' if offload else 'none'}, zero_init={int(init)}"
                )
                rows.append(ZeroEstimate(3, options, cpu, gpu))
    return rows


def largest_layer(model: Model) -> tuple[str, int]:
    """The module with the most parameters of its own (a weight and its bias), by its record path, and that count."""
    from .derivation import evaluate_int

    return largest_of((t.path, evaluate_int(t.expr, model.values, t.path)) for t in model.derivation.terms)


def largest_of(terms: Iterable[tuple[str, int]]) -> tuple[str, int]:
    """:func:`largest_layer` of each term's path and per-layer count."""
    modules: dict[str, int] = {}
    for path, count in terms:
        module = path.removesuffix(".bias").removesuffix(".weight")
        modules[module] = modules.get(module, 0) + count
    name = max(modules, key=modules.__getitem__)
    return name, modules[name]
