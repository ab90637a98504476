"""A term: the count of one weight (or bias) of one layer, and how many layers carry it.

Paths are ``group/module`` with the module named as in the Hugging Face code, so a term can be matched
with the model's own parameter names. Family records (``families/``) list their terms in reader's order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sympy import Expr, Integer

from .symbols import k, n

ONE = Integer(1)
ZERO = Integer(0)


@dataclass(frozen=True)
class Term:
    """One weight or bias: ``expr`` parameters in each of ``layers`` layers."""

    path: str
    expr: Expr
    note: str
    layers: Expr = ONE
    routed: bool = False  # a routed expert weight: only k of n of it is activated per token
    embedding: bool = False  # a vocabulary or position table, or an untied LM head (counted as embedding)
    text: str = field(default="", compare=False)  # expr as the record writes it: a weight's in·out factor order
    matmul: bool = True  # false: parameters no matrix multiplication uses (gpt-oss's per-head sink logits)
    runs: Expr | None = None  # the layers that run it, when a weight counted in ``layers`` is shared by more
    grad: bool = True  # false: no gradient in a training step of the counted model (not run, or requires_grad off)
    tp: str = ""  # "split" or "replicated": how tensor parallelism treats it, where its sizes do not tell ("": they do)
    # a norm scale Megatron-LM's num_floating_point_operations counts like a GEMM weight, 6 training FLOPs per
    # parameter per token (MLA's latent norms: the "+ 1" in its q_lora_rank and kv_lora_rank terms)
    megatron_weight: bool = False

    @property
    def run_layers(self) -> Expr:
        """The layers that run the weight: ``runs`` for a weight several layers share, else ``layers``."""
        return self.layers if self.runs is None else self.runs

    @property
    def group(self) -> str:
        return self.path.split("/", 1)[0]

    @property
    def total(self) -> Expr:
        return self.layers * self.expr

    @property
    def activated(self) -> Expr:
        return self.layers * self.per_layer(activated=True)

    def per_layer(self, activated: bool = False) -> Expr:
        """Parameters in one layer, or with ``activated`` the part of them one token uses
        (:math:`\\tfrac{k}{n}` of a routed expert weight; none of a routed weight no matmul reads, the rows of experts
        that compute nothing, which a token routed to them never uses)."""
        if activated and self.routed:
            return self.expr * k / n if self.matmul else ZERO
        return self.expr
