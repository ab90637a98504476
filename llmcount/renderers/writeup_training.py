"""The write-up's training-memory section (``writeup --training``): model states per optimizer and ZeRO stage,
activations per layer kind, the total per GPU, computed here for ``templates/writeup/training_*.j2``.

Everything numeric is an exact integer (or a sympy Rational when a ZeRO shard does not divide evenly, to say so);
the templates only format. The numbers are :func:`llmcount.formulas.training.estimate`'s, the ones
``llmcount memory --training`` prints for the same options.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sympy import Add, Expr, Integer, Rational, expand

from ..formulas.activations import NotDerived, table
from ..formulas.config import Model
from ..formulas.symbols import B, S
from ..formulas.training import F, Lora, N_dp, P, P_m, P_o, P_t, Parallel, Training, estimate, held_values


@dataclass(frozen=True)
class Settings:
    """What the training section is asked for: ``llmcount writeup --training`` and its options."""

    batch: int = 1
    optimizer: str = "adamw"
    parallel: Parallel = field(default_factory=Parallel)
    attention: str = "sdpa"
    recompute: str = "none"
    dtype: str = "bf16"  # the compute dtype (bf16/fp16: mixed precision)
    lora: Lora | None = None  # LoRA adapters: only they train


@dataclass(frozen=True)
class State:
    """One model-state line on the GPU: its formula in P (P_t, P_m, P_o, F; / N_dp when sharded), exact bytes."""

    name: str  # weights, gradients, master_weights, adam_m, adam_v, adam_m_v_8bit, adam_absmax, momentum, ...
    formula: Expr
    bytes: int
    sharded: bool


@dataclass(frozen=True)
class Kind:
    """The activations of one layer of one kind: its tensors and the derivation of their sum."""

    layers: Expr  # how many layers are of this kind (N, N_dense, N - N_dense)
    count: int
    components: tuple[tuple[str, Expr, int], ...]  # (tensor, bytes formula, bytes) in one layer
    groups: list  # the sum in reader's order, for the derive macro: [(B·S, [...]), (S, [...]), (1, [...])]
    bytes: int

    @property
    def compound(self) -> bool:
        """Whether the count is a sum (N - N_dense), to be bracketed as a factor."""
        return isinstance(self.layers, Add)


@dataclass(frozen=True)
class TrainingPart:
    """The training section's numbers (``t``: the library's result, for its options and notes)."""

    t: Training
    batch: int
    seq: int
    states: tuple[State, ...]
    states_groups: list  # the model states' sum, for the derive macro
    states_values: dict  # P, P_t ... and N_dp, for substitution
    states_exact: Rational  # the formula's value before ZeRO's shards are rounded up to whole bytes
    symbols: tuple[tuple[str, Expr, int], ...]  # (name, symbol, value) of the state formulas' symbols
    trainable_is_all: bool  # P_t = P (no LoRA): the formulas say P
    kinds: tuple[Kind, ...] = ()
    model_level: tuple[tuple[str, Expr, int], ...] = ()
    model_groups: list | None = None
    model_bytes: int = 0
    total_groups: list | None = None  # the activations of the model: each kind's count times its layer + the rest
    values: dict = field(default_factory=dict)  # the config's values with B and S
    refused: str = ""  # why the activations are not derived for this config ("": the record has no table)
    attention_free: bool = False  # the table has no attention entries: no S×S tensor under any option

    @property
    def activations(self):
        return self.t.activations


def ordered(formulas: list[Expr]) -> list:
    """``formulas`` summed in the order they come, like terms combined where they first appear, gathered as
    ``[(B·S, per-token terms), (S, per-position terms), (1, the rest)]`` (empty groups left out)."""
    buckets: dict[Expr, dict[Expr, Expr]] = {B * S: {}, S: {}, Integer(1): {}}
    for f in formulas:
        for monomial in Add.make_args(expand(f)):
            scale = next(s for s in buckets if s == 1 or expand(monomial / s).as_numer_denom()[1] == 1)
            coefficient, rest = expand(monomial / scale).as_coeff_Mul()
            bucket = buckets[scale]
            bucket[rest] = bucket.get(rest, Integer(0)) + coefficient
    groups = []
    for scale, bucket in buckets.items():
        terms = [c * m for m, c in bucket.items() if c != 0]
        if terms:
            groups.append((scale, terms))
    return groups


def _refusal(model: Model, why: str) -> str:
    """The reason a table refuses this config; "" when the activations are refused for want of a table."""
    if not why or table(model.architecture) is None:
        return ""
    return why.removeprefix(NotDerived.prefix(model.architecture))


def _attention_free(model: Model) -> bool:
    parsed = table(model.architecture)
    return parsed is not None and not any(saved.core for saved in parsed.saved)


def training_part(model: Model, settings: Settings, seq: int) -> TrainingPart:
    """The training section of ``model`` for ``settings`` at S = ``seq``; LlmcountError on a bad option."""
    t = estimate(
        model,
        settings.dtype,
        seq,
        settings.batch,
        settings.optimizer,
        settings.parallel,
        settings.lora,
        settings.attention,
        settings.recompute,
    )
    held = held_values(t.held)
    trainable_is_all = t.held.trainable == t.held.parameters
    rename = {P_t: P} if trainable_is_all else {}
    states = tuple(
        State(line.name, line.formula.subs(rename), line.bytes, N_dp in line.formula.free_symbols) for line in t.lines
    )
    values = {**held, N_dp: t.parallel.dp}
    total = Add(*(s.formula for s in states))
    used = total.free_symbols
    names = (("P", P), ("P_t", P_t), ("P_m", P_m), ("P_o", P_o), ("F", F), ("N_dp", N_dp))
    symbols = tuple((name, symbol, values[symbol]) for name, symbol in names if symbol in used)
    exact = total.subs(values)
    part = TrainingPart(
        t=t,
        batch=settings.batch,
        seq=seq,
        states=states,
        states_groups=[(1, list(Add.make_args(total)) if len(used) > 1 else [total])],
        states_values=values,
        states_exact=exact,
        symbols=symbols,
        trainable_is_all=trainable_is_all,
        values={**model.values, B: settings.batch, S: seq},
        refused=_refusal(model, t.activations_refused),
        attention_free=_attention_free(model),
    )
    a = t.activations
    if a is None:
        return part
    kinds = tuple(
        Kind(k.layers, k.count, k.components, ordered([f for _, f, _ in k.components]), k.bytes)
        for k in a.per_layer_kind
    )
    model_level = a.model_level
    model_groups = ordered([f for _, f, _ in model_level])
    return TrainingPart(
        **{
            **part.__dict__,
            "kinds": kinds,
            "model_level": model_level,
            "model_groups": model_groups,
            "model_bytes": sum(size for _, _, size in model_level),
        }
    )


def training_json(model: Model, part: TrainingPart) -> dict[str, Any]:
    """The section's numbers for ``writeup --json``: ``memory --training --json``'s."""
    from .training import training_data

    return training_data(model, part.t, part.seq, part.batch)
