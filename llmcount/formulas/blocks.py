"""Building blocks: pure functions that return the parameter terms of one module.

Each term is the count of one weight (or bias) of one layer; the architecture says how many
layers carry it. Paths are ``group/module`` with the module named as in the Hugging Face code,
so a term can be matched with the model's own parameter names.
"""

from __future__ import annotations

from dataclasses import dataclass

from sympy import Expr, Integer

from .symbols import V, d, d_nope, d_rope, d_v, h, h_d, h_kv, k, n, n_pos, n_s, r_kv, r_q

ONE = Integer(1)


@dataclass(frozen=True)
class Term:
    """One weight or bias: ``expr`` parameters in each of ``layers`` layers."""

    path: str
    expr: Expr
    note: str
    layers: Expr = ONE
    routed: bool = False  # a routed expert weight: only k of n of it is activated per token
    embedding: bool = False  # a vocabulary or position table (counted as embedding)

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
        (:math:`\\tfrac{k}{n}` of a routed expert weight)."""
        return self.expr * k / n if activated and self.routed else self.expr


def token_embedding(name: str = "embed_tokens") -> list[Term]:
    """Token embedding table: :math:`V d`."""
    return [Term(f"embedding/{name}", V * d, "token embedding table, V rows of size d", embedding=True)]


def position_embedding(name: str = "wpe") -> list[Term]:
    """Learned absolute position table: :math:`n_{pos} d`."""
    return [Term(f"embedding/{name}", n_pos * d, "learned position table, n_pos rows of size d", embedding=True)]


def lm_head(tied: bool) -> list[Term]:
    """Output projection to the vocabulary: :math:`V d`, or nothing when tied to the embedding."""
    if tied:
        return []
    return [Term("head/lm_head", V * d, "LM head, d to V, not tied to the embedding", embedding=True)]


def rms_norm(name: str, width: Expr = d, group: str = "norms") -> list[Term]:
    """RMSNorm: one scale per feature, :math:`w`."""
    return [Term(f"{group}/{name}", width, "RMSNorm scale")]


def layer_norm(name: str, width: Expr = d, group: str = "norms") -> list[Term]:
    """LayerNorm: a scale and a shift per feature, :math:`2w`."""
    return [Term(f"{group}/{name}", 2 * width, "LayerNorm scale and shift")]


def linear(path: str, fan_in: Expr, fan_out: Expr, bias: bool, note: str) -> list[Term]:
    """A linear map: :math:`f_{in} f_{out}` weights, plus :math:`f_{out}` when it has a bias."""
    terms = [Term(path, fan_in * fan_out, note)]
    if bias:
        terms.append(Term(f"{path}.bias", fan_out, f"bias of {path.split('/')[-1]}"))
    return terms


def fused_attention(width: Expr = d) -> list[Term]:
    """GPT-2 attention, q/k/v fused in one projection with biases: :math:`4d^2 + 4d`."""
    return [
        *linear("attention/c_attn", width, 3 * width, True, "fused q, k, v projection (d to 3d)"),
        *linear("attention/c_proj", width, width, True, "output projection (d to d)"),
    ]


def attention(qkv_bias: bool = False, o_bias: bool = False, qk_norm: bool = False) -> list[Term]:
    """Multi-head attention with grouped key/value heads (MHA when :math:`h_{kv}=h`, MQA when 1).

    :math:`d\\,h h_d + 2 d\\,h_{kv} h_d + h h_d\\,d`, plus :math:`h h_d + 2 h_{kv} h_d` for q/k/v biases,
    :math:`d` for an output bias and :math:`2 h_d` for per-head QK-norm.
    """
    terms = [
        *linear("attention/q_proj", d, h * h_d, qkv_bias, "query projection, d to h heads of h_d"),
        *linear("attention/k_proj", d, h_kv * h_d, qkv_bias, "key projection, d to h_kv heads of h_d"),
        *linear("attention/v_proj", d, h_kv * h_d, qkv_bias, "value projection, d to h_kv heads of h_d"),
        *linear("attention/o_proj", h * h_d, d, o_bias, "output projection, h heads of h_d back to d"),
    ]
    if qk_norm:
        terms += [
            Term("attention/q_norm", h_d, "RMSNorm on each query head (shared across heads)"),
            Term("attention/k_norm", h_d, "RMSNorm on each key head (shared across heads)"),
        ]
    return terms


def mla(q_lora: bool, bias: bool = False) -> list[Term]:
    """Multi-head latent attention (DeepSeek-V2/V3).

    Queries: :math:`d\\,h(d_{nope}+d_{rope})` directly, or through a rank-:math:`r_q` bottleneck
    :math:`d\\,r_q + r_q + r_q h (d_{nope}+d_{rope})`. Keys and values: a shared latent
    :math:`d(r_{kv}+d_{rope}) + r_{kv}`, expanded by :math:`r_{kv} h (d_{nope}+d_v)`;
    output :math:`h d_v d`. ``bias`` adds biases to the down projections and the output.
    """
    qk_head = d_nope + d_rope
    if q_lora:
        q_terms = [
            *linear("attention/q_a_proj", d, r_q, bias, "query down-projection, d to rank r_q"),
            *rms_norm("q_a_layernorm", r_q, group="attention"),
            *linear("attention/q_b_proj", r_q, h * qk_head, False, "query up-projection to h heads"),
        ]
    else:
        q_terms = linear("attention/q_proj", d, h * qk_head, False, "query projection to h heads")
    return [
        *q_terms,
        *linear(
            "attention/kv_a_proj_with_mqa",
            d,
            r_kv + d_rope,
            bias,
            "key/value down-projection to the latent, plus the shared RoPE key",
        ),
        *rms_norm("kv_a_layernorm", r_kv, group="attention"),
        *linear("attention/kv_b_proj", r_kv, h * (d_nope + d_v), False, "latent up-projection to keys and values"),
        *linear("attention/o_proj", h * d_v, d, bias, "output projection, h heads of d_v back to d"),
    ]


def classic_mlp(width: Expr) -> list[Term]:
    """GPT-2 MLP with biases: :math:`2 d\\,d_{ff} + d_{ff} + d`."""
    return [
        *linear("mlp/c_fc", d, width, True, "up-projection, d to d_ff"),
        *linear("mlp/c_proj", width, d, True, "down-projection, d_ff to d"),
    ]


def gated_mlp(width: Expr, bias: bool = False, group: str = "mlp", note: str = "") -> list[Term]:
    """Gated (SwiGLU) MLP: :math:`3 d\\,d_{ff}`, plus :math:`2 d_{ff} + d` with biases."""
    return [
        *linear(f"{group}/gate_proj", d, width, bias, f"gate projection, d to {note or 'd_ff'}"),
        *linear(f"{group}/up_proj", d, width, bias, f"up projection, d to {note or 'd_ff'}"),
        *linear(f"{group}/down_proj", width, d, bias, f"down projection, {note or 'd_ff'} to d"),
    ]


def router() -> list[Term]:
    """MoE router (gate): :math:`d\\,n`, one score per expert, no bias."""
    return [Term("moe/router", d * n, "router, d to one logit per routed expert")]


def routed_experts(width: Expr) -> list[Term]:
    """Routed experts, each a gated MLP: :math:`3 n\\,d\\,d_{moe}`; k of the n are used per token."""
    return [Term("moe/experts", 3 * n * d * width, "n routed experts, each a gated MLP", routed=True)]


def shared_experts(width: Expr, bias: bool = False) -> list[Term]:
    """Shared experts, one gated MLP of width :math:`n_s d_{moe}`: :math:`3 n_s d\\,d_{moe}`."""
    width = n_s * width
    terms = [Term("moe/shared_experts", 3 * d * width, "shared experts, one gated MLP of n_s times the expert width")]
    if bias:
        terms.append(Term("moe/shared_experts.bias", 2 * width + d, "biases of the shared experts"))
    return terms
