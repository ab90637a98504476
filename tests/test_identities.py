"""Symbolic identities: the formulas, as sympy expressions, against derivations done by hand.

No numbers from a model here (test_oracle.py does that): each test states an identity a reader
of the write-ups would check with pencil and paper, and sympy proves it for all sizes.
"""

from __future__ import annotations

import pytest
from sympy import Expr, Integer, Rational, expand, simplify

from llmcount.formulas import records
from llmcount.formulas.derivation import Derivation
from llmcount.formulas.symbols import (
    N,
    N_dense,
    V,
    d,
    d_ff,
    d_moe,
    d_nope,
    d_rope,
    d_v,
    h,
    h_d,
    h_kv,
    k,
    n,
    n_s,
    r_kv,
    r_q,
)


def derivation(family: str, **keys: object) -> Derivation:
    """The family's formula with some config keys set (``attention_bias=True``); every layer kind kept."""
    record = records.family(family)
    namespace = {**record.keys, "q_lora_rank": 1536, **keys}
    return Derivation(record, tuple(c.term for c in record.choices if c.when is None or c.when(namespace)))


def per_layer_sum(deriv: Derivation, prefix: str) -> Expr:
    """One layer's parameters of the terms whose path starts with ``prefix``."""
    return sum((t.expr for t in deriv.terms if t.path.startswith(prefix)), Integer(0))


def assert_identical(got: Expr, expected: Expr) -> None:
    difference = simplify(expand(got - expected))
    assert difference == 0, f"got {expand(got)}\nexpected {expand(expected)}\ndifference {difference}"


CURATED = ("gpt2", "llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "mixtral", "deepseek_v2", "deepseek_v3")
GQA_FAMILIES = sorted(f for f in CURATED if any(c.term.path == "attention/k_proj" for c in records.family(f).choices))
MOE_FAMILIES = sorted(f for f in CURATED if records.family(f).is_moe)


# --- GQA: h_kv = h is multi-head attention, h_kv = 1 is multi-query attention -------------------


@pytest.mark.parametrize("family", GQA_FAMILIES)
def test_gqa_with_as_many_kv_heads_as_heads_is_mha(family: str) -> None:
    # MHA: q, k, v, o are each d x (h h_d): 4 d h h_d, i.e. 4 d^2 when h h_d = d.
    deriv = derivation(family)
    projections = sum(
        (t.expr for t in deriv.terms if t.path in {f"attention/{p}" for p in ("q_proj", "k_proj", "v_proj", "o_proj")}),
        Integer(0),
    )
    assert_identical(projections.subs(h_kv, h), 4 * d * h * h_d)
    assert_identical(projections.subs(h_kv, h).subs(h_d, d / h), 4 * d**2)
    # MQA: one k/v head: 2 d h h_d + 2 d h_d
    assert_identical(projections.subs(h_kv, 1), 2 * d * h * h_d + 2 * d * h_d)


def test_llama_attention_with_biases_and_mha() -> None:
    # attention_bias=true (Llama): biases on q, k, v, o: h h_d + 2 h_kv h_d + d; with h_kv = h, 3 h h_d + d.
    deriv = derivation("llama", attention_bias=True)
    assert_identical(per_layer_sum(deriv, "attention/").subs(h_kv, h), 4 * d * h * h_d + 3 * h * h_d + d)


def test_qwen2_has_qkv_biases_but_no_output_bias() -> None:
    # Qwen2Attention: q/k/v nn.Linear(..., bias=True), o_proj bias=False: h h_d + 2 h_kv h_d.
    deriv = derivation("qwen2")
    biases = sum((t.expr for t in deriv.terms if t.path.endswith(".bias")), Integer(0))
    assert_identical(biases, h * h_d + 2 * h_kv * h_d)


# --- MoE: activated parameters ------------------------------------------------------------------


@pytest.mark.parametrize("family", MOE_FAMILIES)
def test_moe_with_every_expert_active_activates_everything(family: str) -> None:
    deriv = derivation(family)
    assert deriv.activated != deriv.total  # k < n saves something...
    assert_identical(deriv.activated.subs(k, n), deriv.total)  # ...and k = n saves nothing
    # what k < n saves is exactly (n - k)/n of the routed experts
    routed = sum((t.total for t in deriv.terms if t.routed), Integer(0))
    assert_identical(deriv.total - deriv.activated, routed * (n - k) / n)


@pytest.mark.parametrize("family", sorted(set(CURATED) - set(MOE_FAMILIES)))
def test_dense_models_activate_everything(family: str) -> None:
    deriv = derivation(family)
    assert_identical(deriv.activated, deriv.total)


def test_mixtral_experts_are_llama_mlps() -> None:
    # Mixtral: n experts of width intermediate_size (d_ff) + a d x n router; with n = k = 1 the
    # layer is a Llama layer plus the router.
    moe = per_layer_sum(derivation("mixtral"), "moe/")
    assert_identical(moe, 3 * n * d * d_ff + d * n)
    assert_identical(moe.subs(n, 1) - d, per_layer_sum(derivation("llama"), "mlp/"))


def test_deepseek_shared_experts_are_one_wide_mlp() -> None:
    # DeepseekV3MoE: shared_experts = DeepseekV3MLP(intermediate_size=moe_intermediate_size * n_shared_experts)
    assert_identical(per_layer_sum(derivation("deepseek_v3"), "moe/shared_experts"), 3 * d * n_s * d_moe)
    # DeepSeek-V2 with mlp_bias: gate/up biases of width n_s d_moe, down bias d
    assert_identical(
        per_layer_sum(derivation("deepseek_v2", mlp_bias=True), "moe/shared_experts.bias"), 2 * n_s * d_moe + d
    )


# --- MLA (DeepSeek-V2/V3) -----------------------------------------------------------------------
#
# By hand, from DeepseekV3Attention.__init__ (transformers models/deepseek_v3/modeling_deepseek_v3.py;
# DeepseekV2Attention is the same), qk_head_dim = qk_nope_head_dim + qk_rope_head_dim:
#   q_a_proj           = Linear(hidden_size, q_lora_rank, bias=attention_bias)          d r_q
#   q_a_layernorm      = RMSNorm(q_lora_rank)                                           r_q
#   q_b_proj           = Linear(q_lora_rank, num_heads * qk_head_dim, bias=False)       r_q h (d_nope + d_rope)
#   (without a q LoRA, q_lora_rank = null:
#    q_proj            = Linear(hidden_size, num_heads * qk_head_dim, bias=False)       d h (d_nope + d_rope))
#   kv_a_proj_with_mqa = Linear(hidden_size, kv_lora_rank + qk_rope_head_dim,
#                               bias=attention_bias)                                    d (r_kv + d_rope)
#   kv_a_layernorm     = RMSNorm(kv_lora_rank)                                          r_kv
#   kv_b_proj          = Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim),
#                               bias=False)                                             r_kv h (d_nope + d_v)
#   o_proj             = Linear(num_heads * v_head_dim, hidden_size, bias=attention_bias)  h d_v d
# attention_bias adds r_q (q_a_proj), r_kv + d_rope (kv_a_proj_with_mqa) and d (o_proj).

MLA_KV_AND_OUTPUT = d * (r_kv + d_rope) + r_kv + r_kv * h * (d_nope + d_v) + h * d_v * d
MLA_Q_LORA = d * r_q + r_q + r_q * h * (d_nope + d_rope)
MLA_Q_DIRECT = d * h * (d_nope + d_rope)
MLA_BIASES = d + r_kv + d_rope  # kv_a_proj_with_mqa and o_proj; q_a_proj adds r_q


@pytest.mark.parametrize("family", ["deepseek_v2", "deepseek_v3"])
def test_mla_with_q_lora_is_the_hand_derived_formula(family: str) -> None:
    attention = per_layer_sum(derivation(family, q_lora_rank=1536), "attention/")
    assert_identical(attention, MLA_Q_LORA + MLA_KV_AND_OUTPUT)


@pytest.mark.parametrize("family", ["deepseek_v2", "deepseek_v3"])
def test_mla_without_q_lora_is_the_hand_derived_formula(family: str) -> None:
    attention = per_layer_sum(derivation(family, q_lora_rank=None), "attention/")
    assert_identical(attention, MLA_Q_DIRECT + MLA_KV_AND_OUTPUT)


@pytest.mark.parametrize("q_lora", [True, False])
def test_mla_attention_bias(q_lora: bool) -> None:
    plain = per_layer_sum(derivation("deepseek_v3", q_lora_rank=1536 if q_lora else None), "attention/")
    biased = per_layer_sum(
        derivation("deepseek_v3", q_lora_rank=1536 if q_lora else None, attention_bias=True), "attention/"
    )
    assert_identical(biased - plain, MLA_BIASES + (r_q if q_lora else 0))


DEEPSEEK_V3 = {
    N: 61,
    N_dense: 3,
    V: 129280,
    d: 7168,
    d_ff: 18432,
    h: 128,
    r_q: 1536,
    r_kv: 512,
    d_rope: 64,
    d_nope: 128,
    d_v: 128,
    n: 256,
    k: 8,
    d_moe: 2048,
    n_s: 1,
}


def test_mla_at_deepseek_v3_sizes() -> None:
    # 7168·1536 + 1536 + 1536·128·192 + 7168·576 + 512 + 512·128·256 + 128·128·7168 = 187,107,328
    assert (MLA_Q_LORA + MLA_KV_AND_OUTPUT).subs(DEEPSEEK_V3) == 187_107_328
    # the whole model at DeepSeek-V3's sizes: transformers' DeepseekV3ForCausalLM count (no MTP
    # layer, e_score_correction_bias is a buffer), see ORACLE.md
    assert derivation("deepseek_v3").total.subs(DEEPSEEK_V3) == 671_026_404_352


# --- per-layer rules of thumb -------------------------------------------------------------------


def test_gpt2_block_is_12_d_squared_plus_13_d() -> None:
    # By hand, GPT-2 block with d_ff = 4d (attention width h·h_d = d is built in: c_attn is d x 3d):
    #   c_attn  d·3d + 3d      c_proj  d·d + d        (attention: 4d² + 4d)
    #   c_fc    d·4d + 4d      c_proj  4d·d + d       (MLP:       8d² + 5d)
    #   ln_1, ln_2: scale and shift, 2d each          (norms:           4d)
    #   total 12d² + 13d
    per_layer = derivation("gpt2").per_layer
    assert_identical(per_layer.subs(d_ff, 4 * d), 12 * d**2 + 13 * d)


def test_qwen3_layer_is_11_5_d_squared() -> None:
    # By hand, Qwen3 layer with d_ff = 3d, h·h_d = d, h_kv = h/4:
    #   q_proj d·h·h_d = d²;  k_proj, v_proj 2·d·(h/4)·h_d = d²/2;  o_proj h·h_d·d = d²
    #   q_norm, k_norm over one head: 2 h_d
    #   gate/up/down 3·d·3d = 9d²
    #   input/post-attention RMSNorm: 2d
    #   total (1 + 1/2 + 1 + 9) d² + 2d + 2h_d = 11.5 d² + 2d + 2h_d
    per_layer = derivation("qwen3").per_layer
    reduced = per_layer.subs({h_kv: h / 4, d_ff: 3 * d}).subs(h, d / h_d)
    assert_identical(reduced, Rational(23, 2) * d**2 + 2 * d + 2 * h_d)


def test_llama_mha_layer_is_4_d_squared_plus_3_d_dff() -> None:
    # Llama-1/2 7B style (h_kv = h, h·h_d = d): 4d² attention + 3·d·d_ff MLP + 2d norms
    per_layer = derivation("llama").per_layer
    assert_identical(per_layer.subs(h_kv, h).subs(h, d / h_d), 4 * d**2 + 3 * d * d_ff + 2 * d)
