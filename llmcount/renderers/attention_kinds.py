"""The four ways of building self-attention a write-up compares: MHA, GQA, MQA and MLA, each with its parameters
per layer (the projections' weights; biases and norms left out) and its KV cache per token per layer, in
elements. The model's own kind is substituted with its values; another kind is substituted where the model's
config gives every size it needs (a GQA model's MHA and MQA: the same d, h and h_d with h_kv = h or 1).

.. math::

    \\text{MHA: } 4\\,d\\,h\\,h_d,\\ 2\\,h\\,h_d \\qquad
    \\text{GQA: } 2\\,d\\,h\\,h_d + 2\\,d\\,h_{kv}\\,h_d,\\ 2\\,h_{kv}\\,h_d \\qquad
    \\text{MQA: } 2\\,d\\,h\\,h_d + 2\\,d\\,h_d,\\ 2\\,h_d

    \\text{MLA: } d\\,r_q + r_q\\,h\\,(d_{nope} + d_{rope}) + d\\,(r_{kv} + d_{rope}) + r_{kv}\\,h\\,(d_{nope} + d_v)
    + h\\,d_v\\,d,\\ r_{kv} + d_{rope}

(MLA without a query rank: :math:`d\\,h\\,(d_{nope} + d_{rope})` in place of the first two terms.) An MLA model's
MHA is the same heads without the latent: queries and keys of :math:`d_{nope} + d_{rope}`, values of :math:`d_v`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from sympy import Add, Expr, Integer

from ..formulas.config import Model
from ..formulas.symbols import d, d_nope, d_rope, d_v, h, h_d, h_kv, r_kv, r_q

KINDS = ("mha", "gqa", "mqa", "mla")


@dataclass(frozen=True)
class Kind:
    """One way of building attention: its terms (reader's order: q, k, v, o; MLA: the low-rank path), its KV cache
    per token per layer, and their values for this model when its config gives every size they need."""

    key: str
    terms: tuple[Expr, ...]
    kv: Expr
    params: int | None
    kv_elements: int | None
    own: bool
    kv_ratio: Fraction | None = None  # its KV cache over the model's own kind's
    params_ratio: Fraction | None = None

    @property
    def groups(self) -> list:
        """For ``ordered_latex``: MLA's terms in the order of its low-rank path; the others' summed (4 d h h_d)."""
        return [(1, list(self.terms) if self.key == "mla" else [Add(*self.terms)])]

    @property
    def kv_bytes(self) -> int | None:
        """In bf16, two bytes per element."""
        return None if self.kv_elements is None else 2 * self.kv_elements


def _mla_terms(q_rank: bool) -> tuple[Expr, ...]:
    query = (d * r_q, r_q * h * (d_nope + d_rope)) if q_rank else (d * h * (d_nope + d_rope),)
    return (*query, d * (r_kv + d_rope), r_kv * h * (d_nope + d_v), h * d_v * d)


def _value(exprs: tuple[Expr, ...], values: dict) -> int | None:
    total = sum(exprs, Integer(0))
    if not total.free_symbols <= set(values):
        return None
    return int(total.subs(values))


def attention_kinds(model: Model, features: dict[str, Any]) -> list[Kind] | None:
    """The four kinds for ``model`` (``features``: :func:`.writeup.features`), or None when its attention is none
    of them in the terms the comparison uses (a fused projection, no key/value head count)."""
    own = "mla" if features["mla"] else features["attention_kind"]
    if own is None or (own != "mla" and h_d not in model.values):
        return None
    values = model.values
    if own == "mla":  # the same heads, each with its own keys and values, no latent
        mha = (d * h * (d_nope + d_rope), d * h * (d_nope + d_rope), d * h * d_v, h * d_v * d)
        mha_kv = h * (d_nope + d_rope + d_v)
    else:
        mha = (d * h * h_d, d * h * h_d, d * h * h_d, h * h_d * d)
        mha_kv = 2 * h * h_d
    table = {
        "mha": (mha, mha_kv),
        "gqa": ((d * h * h_d, d * h_kv * h_d, d * h_kv * h_d, h * h_d * d), 2 * h_kv * h_d),
        "mqa": ((d * h * h_d, d * h_d, d * h_d, h * h_d * d), 2 * h_d),
        "mla": (_mla_terms(features["q_lora"] or own != "mla"), r_kv + d_rope),
    }
    kinds = []
    for key in KINDS:
        terms, kv = table[key]
        applies = key == own or (own != "mla" and key != "mla") or (own == "mla" and key == "mha")
        kinds.append(
            Kind(
                key,
                terms,
                kv,
                _value(terms, values) if applies else None,
                _value((kv,), values) if applies else None,
                key == own,
            )
        )
    mine = next(k for k in kinds if k.own)
    return [
        replace(
            k,
            kv_ratio=None if k.kv_elements is None else Fraction(k.kv_elements, mine.kv_elements),
            params_ratio=None if k.params is None else Fraction(k.params, mine.params),
        )
        for k in kinds
    ]
