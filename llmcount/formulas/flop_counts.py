"""The result of a FLOPs formula evaluated on one config (:class:`FlopCounts`), apart from the formulas
(:mod:`.flops`, in sympy), so that the numeric path (:mod:`llmcount.counting`) gives the same object without sympy."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..shown import Shown

TRAINING_DEFINITION = (
    "training = forward + backward = 3 × forward (the backward pass computes gradients with respect to "
    "activations and to weights, each as costly as the forward); no activation recomputation"
)
RULE_DEFINITION = "rule of thumb = 6 · activated parameters · B · S (all activated parameters, embeddings included)"


@dataclass(frozen=True)
class FlopComponent:
    path: str
    formula: Any  # the term's forward FLOPs: a sympy expression, or its text from a compiled snapshot
    flops: int


@dataclass(frozen=True)
class FlopCounts(Shown):
    """A FLOPs formula evaluated on one config, sequence length and batch: exact integers."""

    seq: int
    batch: int
    forward: int
    per_token: int | Fraction  # forward / (B·S): a Fraction when B·S does not divide it (windows, convolutions)
    training: int
    rule_of_thumb: int
    components: tuple[FlopComponent, ...]
    convention: str

    @property
    def rule_error(self) -> Fraction:
        """Relative error of the 6·N·tokens rule against the training count: rule / training - 1."""
        return Fraction(self.rule_of_thumb, self.training) - 1

    @property
    def rule_error_percent(self) -> float:
        return float(100 * self.rule_error)
