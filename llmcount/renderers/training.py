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
from ..plain_training import training_json
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
    lora = None
    if t.lora is not None:
        lora = {
            "rank": t.lora.rank,
            "targets": list(t.lora.targets),
            "trainable_parameters": t.lora_parameters,
            "formula": str(t.lora_formula),
        }
    assumptions = {
        "optimizer": OPTIMIZERS[t.optimizer],
        "model_states": STATES_NOTE,
        "zero": ZERO_NOTE,
        "parallel": PARALLEL_ASSUMPTIONS,
        "activations": ACTIVATION_ASSUMPTIONS,
    }
    latex = None if t.activations is None else FILTERS["latex"](t.activations.formula)
    return training_json(model, t, seq, batch, latex, lora, assumptions)
