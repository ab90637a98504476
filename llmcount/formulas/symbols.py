"""Every symbol of the formulas, created once, with its meaning and the config key it comes from.

This is the glossary the write-ups print. The Python name, the sympy name and the printed
symbol agree: ``d_ff`` is ``Symbol("d_ff")`` and prints :math:`d_{\\mathrm{ff}}`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sympy import Symbol


@dataclass(frozen=True)
class Entry:
    symbol: Symbol
    latex: str
    key: str  # the Hugging Face config key(s) it is usually read from, verbatim
    meaning: str


def _size(name: str) -> Symbol:
    return Symbol(name, positive=True, integer=True)


def _count(name: str) -> Symbol:
    return Symbol(name, nonnegative=True, integer=True)


N = _size("N")
V = _size("V")
d = _size("d")
d_ff = _size("d_ff")
h = _size("h")
h_kv = _size("h_kv")
h_d = _size("h_d")
n_pos = _size("n_pos")
n = _size("n")
k = _size("k")
d_moe = _size("d_moe")
n_s = _count("n_s")
N_dense = _count("N_dense")
r_q = _size("r_q")
r_kv = _size("r_kv")
d_rope = _size("d_rope")
d_nope = _size("d_nope")
d_v = _size("d_v")
S = _size("S")
B = _size("B")
d_sh = _size("d_sh")
h_lk = _size("h_lk")
h_lv = _size("h_lv")
d_lk = _size("d_lk")
d_lv = _size("d_lv")
k_conv = _size("k_conv")
N_linear = _count("N_linear")

GLOSSARY: tuple[Entry, ...] = (
    Entry(N, "N", "num_hidden_layers (GPT-2: n_layer)", "number of decoder layers"),
    Entry(V, "V", "vocab_size", "vocabulary size"),
    Entry(d, "d", "hidden_size (GPT-2: n_embd)", "hidden size (model width)"),
    Entry(d_ff, r"d_{\mathrm{ff}}", "intermediate_size (GPT-2: n_inner)", "MLP hidden size"),
    Entry(h, "h", "num_attention_heads (GPT-2: n_head)", "number of attention (query) heads"),
    Entry(h_kv, r"h_{\mathrm{kv}}", "num_key_value_heads", "number of key/value heads"),
    Entry(h_d, "h_{d}", "head_dim", "size of one attention head"),
    Entry(n_pos, r"n_{\mathrm{pos}}", "n_positions", "rows of the learned position table"),
    Entry(n, "n", "num_experts / num_local_experts / n_routed_experts", "number of routed experts"),
    Entry(k, "k", "num_experts_per_tok", "routed experts used per token"),
    Entry(d_moe, r"d_{\mathrm{moe}}", "moe_intermediate_size", "hidden size of one expert"),
    Entry(n_s, r"n_{s}", "n_shared_experts", "number of shared experts"),
    Entry(
        N_dense,
        r"N_{\mathrm{dense}}",
        "first_k_dense_replace / mlp_only_layers",
        "layers with a dense MLP instead of MoE",
    ),
    Entry(r_q, "r_{q}", "q_lora_rank", "rank of the low-rank query projection (MLA)"),
    Entry(r_kv, r"r_{\mathrm{kv}}", "kv_lora_rank", "rank of the compressed key/value latent (MLA)"),
    Entry(d_rope, r"d_{\mathrm{rope}}", "qk_rope_head_dim", "per-head query/key size with RoPE (MLA)"),
    Entry(d_nope, r"d_{\mathrm{nope}}", "qk_nope_head_dim", "per-head query/key size without RoPE (MLA)"),
    Entry(d_v, "d_{v}", "v_head_dim", "per-head value size (MLA)"),
    Entry(S, "S", "(none: --seq)", "sequence length, tokens per sequence"),
    Entry(B, "B", "(none: --batch)", "batch size, sequences per forward pass"),
    Entry(d_sh, r"d_{\mathrm{sh}}", "shared_expert_intermediate_size", "hidden size of the shared expert"),
    Entry(h_lk, r"h_{\mathrm{lk}}", "linear_num_key_heads", "query/key heads of a linear-attention layer"),
    Entry(h_lv, r"h_{\mathrm{lv}}", "linear_num_value_heads", "value heads of a linear-attention layer"),
    Entry(d_lk, r"d_{\mathrm{lk}}", "linear_key_head_dim", "size of one linear-attention query/key head"),
    Entry(d_lv, r"d_{\mathrm{lv}}", "linear_value_head_dim", "size of one linear-attention value head"),
    Entry(k_conv, r"k_{\mathrm{conv}}", "linear_conv_kernel_dim", "width of the causal convolution kernel"),
    Entry(N_linear, r"N_{\mathrm{linear}}", "layer_types", "layers with linear attention instead of softmax attention"),
)

BY_NAME: dict[str, Entry] = {entry.symbol.name: entry for entry in GLOSSARY}
LATEX_NAMES: dict[Symbol, str] = {entry.symbol: entry.latex for entry in GLOSSARY}
