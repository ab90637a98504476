"""Training memory: its text table and its JSON form, over a :class:`~llmcount.formulas.training.Training`.

Kept apart from ``renderers/__init__.py``; uses its one Environment through ``render``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sympy import Expr

from ..formulas.activations import ASSUMPTIONS as ACTIVATION_ASSUMPTIONS
from ..formulas.config import Model
from ..formulas.training import OPTIMIZERS, PARALLEL_ASSUMPTIONS, Training
from ..plain_training import parallel_data
from . import render
from .filters import FILTERS

ZERO_NOTE = (
    "ZeRO (Rajbhandari et al. 2020): stage 1 shards the optimizer states and master weights, 2 also the "
    "gradients, 3 also the weights"
)
STATES_NOTE = (
    "bf16/fp16 is mixed precision: weights and gradients in that dtype, fp32 master weights and optimizer states; "
    "fp32: no master copy"
)


@dataclass(frozen=True)
class Row:
    """One printed amount: its formula, exact bytes and note."""

    name: str
    formula: Expr | str
    bytes: int
    note: str = ""

    @property
    def gib(self) -> float:
        return self.bytes / 2**30


def _activation_rows(t: Training) -> list[Row]:
    a = t.activations
    if a is None:
        return []
    rows = []
    for kind in a.per_layer_kind:
        rows.append(Row(f"per layer ({kind.name} = {kind.count})", kind.formula, kind.bytes, "one layer"))
    for path, formula, size in a.model_level:
        rows.append(Row(path, formula, size, "once per model"))
    return rows


def render_training(model: Model, t: Training, seq: int, batch: int, width: int | None = None) -> str:
    """The training-memory table of one GPU, for a terminal of ``width`` columns (``None``: unbounded)."""
    states = [Row(line.name.replace("_", " "), line.formula, line.bytes, line.note) for line in t.lines]
    a = t.activations
    return render(
        "training_memory.txt.j2",
        width=width,
        model=model,
        t=t,
        seq=seq,
        batch=batch,
        states=states,
        states_total=Row("model states", "", t.model_states_bytes),
        activation_rows=_activation_rows(t),
        activations_whole=None if a is None else Row("activations", a.formula, a.bytes),
        activations_gpu=None if a is None else Row("activations per GPU", "", a.per_gpu_bytes),
        total=Row("total per GPU", "", t.total_bytes),
        optimizer_note=OPTIMIZERS[t.optimizer],
        states_note=STATES_NOTE,
        zero_note=ZERO_NOTE,
        parallel_note=PARALLEL_ASSUMPTIONS,
        activation_note=ACTIVATION_ASSUMPTIONS if a is None else a.assumptions,
    )


def training_data(model: Model, t: Training, seq: int, batch: int) -> dict[str, Any]:
    """The JSON form: exact bytes per GPU; formulas as sympy strings (P: parameters on the GPU, P_t: the
    trainable ones, N_dp: ZeRO's ranks; activations in B, S and the glossary's symbols)."""
    p = t.parallel
    names = {line.name: line.bytes for line in t.lines}
    a = t.activations
    activations = None
    if a is not None:
        activations = {
            "activations_bytes": a.bytes,
            "per_gpu_bytes": a.per_gpu_bytes,
            "attention": a.options.attention,
            "recompute": a.options.recompute,
            "formula": str(a.formula),
            "latex": FILTERS["latex"](a.formula),
            "per_layer_kind": [
                {
                    "kind": k.name,
                    "layers": k.count,
                    "formula": str(k.formula),
                    "bytes_per_layer": k.bytes,
                    "components": [{"path": c[0], "formula": str(c[1]), "bytes": c[2]} for c in k.components],
                }
                for k in a.per_layer_kind
            ],
            "model_level": [{"path": path, "formula": str(f), "bytes": size} for path, f, size in a.model_level],
            "per_gpu_note": a.per_gpu_note,
            "assumptions": a.assumptions,
        }
    return {
        "model": model.name,
        "family": model.architecture.name,
        "mode": "training",
        "dtype": t.dtype,
        "kv_dtype": None,
        "optimizer": t.optimizer,
        "seq": seq,
        "batch": batch,
        "parallel": parallel_data(p),
        "parameters": t.parameters,
        "parameters_per_gpu": t.held.parameters,
        "trainable_parameters_per_gpu": t.held.trainable,
        "no_gradient": None
        if not t.no_grad_paths
        else {"parameters": t.no_grad_parameters, "paths": list(t.no_grad_paths)},
        "lora": None
        if t.lora is None
        else {
            "rank": t.lora.rank,
            "targets": list(t.lora.targets),
            "trainable_parameters": t.lora_parameters,
            "formula": str(t.lora_formula),
        },
        "model_states_bytes_per_gpu": t.model_states_bytes,
        "activations_bytes_per_gpu": t.activations_bytes,
        "total_bytes_per_gpu": t.total_bytes,
        "activations_bytes": None if a is None else a.bytes,
        "activations_formula": None if a is None else str(a.formula),
        "per_layer_kind": None if activations is None else activations["per_layer_kind"],
        "weights_bytes": names.get("weights", 0),
        "gradients_bytes": names.get("gradients", 0),
        "optimizer_bytes": sum(size for name, size in names.items() if name not in ("weights", "gradients")),
        "kv_cache_bytes": 0,
        "total_bytes": t.total_bytes,
        "total_gib": t.total_bytes / 2**30,
        "unit": "bytes; GiB = 2^30 bytes",
        "formulas": {line.name: str(line.formula) for line in t.lines},
        "lines": [{"name": line.name, "bytes": line.bytes, "gib": line.gib, "note": line.note} for line in t.lines],
        "activations": activations,
        "activations_refused": t.activations_refused or None,
        "notes": list(t.notes),
        "assumptions": {
            "optimizer": OPTIMIZERS[t.optimizer],
            "model_states": STATES_NOTE,
            "zero": ZERO_NOTE,
            "parallel": PARALLEL_ASSUMPTIONS,
            "activations": ACTIVATION_ASSUMPTIONS,
        },
    }
