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
d_rope = _count("d_rope")  # 0 where partial RoPE turns no channel of a small head
d_nope = _size("d_nope")
d_v = _size("d_v")
S = _size("S")
B = _size("B")
N_full = _count("N_full")
N_linear = _count("N_linear")
N_sliding = _count("N_sliding")
h_lk = _size("h_lk")
h_lv = _size("h_lv")
d_lk = _size("d_lk")
d_lv = _size("d_lv")
d_conv = _size("d_conv")
d_sh = _size("d_sh")
d_emb = _size("d_emb")
m_ff = _size("m_ff")
d_s = _count("d_s")
N_attn = _count("N_attn")
N_mamba = _count("N_mamba")
N_moe = _count("N_moe")
E = _size("E")
d_state = _size("d_state")
r_dt = _size("r_dt")
d_ssm = _size("d_ssm")
h_m = _size("h_m")
g = _size("g")
d_mh = _size("d_mh")
d_lat = _size("d_lat")
W = _size("W")
n_type = _size("n_type")
n_task = _size("n_task")
d_out = _size("d_out")
n_pron = _size("n_pron")
d_pron = _size("d_pron")
n_shape = _size("n_shape")
d_shape = _size("d_shape")
h_idx = _size("h_idx")
d_idx = _size("d_idx")
d_att = _size("d_att")
N_recurrent = _count("N_recurrent")
N_conv = _count("N_conv")
n_pk = _size("n_pk")
d_qk = _size("d_qk")
d_val = _size("d_val")
n_lang = _size("n_lang")
d_ad = _size("d_ad")
d_rnn = _size("d_rnn")
k_conv = _size("k_conv")
Q = _size("Q")
p_train = _count("p_train")
p_pad = _count("p_pad")
N_index = _count("N_index")
n_zero = _count("n_zero")
n_hc = _size("n_hc")
r_g = _size("r_g")
n_mem = _size("n_mem")
r_a = _size("r_a")
h_tot = _size("h_tot")
h_tot_sw = _count("h_tot_sw")
S_full = _size("S_full")
b_blk = _size("b_blk")
r_blk = _count("r_blk")
d_hk = _size("d_hk")
d_hv = _size("d_hv")
d_router = _size("d_router")
n_bkt = _size("n_bkt")
n_seg = _size("n_seg")
n_prompt = _size("n_prompt")
l_prompt = _size("l_prompt")
k_dw = _size("k_dw")
k_gr = _size("k_gr")
h_sw = _size("h_sw")
h_kv_sw = _size("h_kv_sw")
h_d_sw = _size("h_d_sw")
r_q_sw = _size("r_q_sw")
r_kv_sw = _size("r_kv_sw")
d_rope_sw = _count("d_rope_sw")
d_nope_sw = _size("d_nope_sw")
d_v_sw = _size("d_v_sw")
d_rel = _size("d_rel")
n_rel = _size("n_rel")
V_dec = _size("V_dec")
V_out = _size("V_out")
d_cross = _size("d_cross")
N_cross = _count("N_cross")
N_bi = _count("N_bi")
S_mem = _size("S_mem")
N_vis = _size("N_vis")
d_vis = _size("d_vis")
d_ff_vis = _size("d_ff_vis")
p_vis = _size("p_vis")
n_patch = _size("n_patch")
C_img = _size("C_img")
H_img = _size("H_img")
W_img = _size("W_img")
L_aud = _size("L_aud")
h_vis = _size("h_vis")
p_t = _size("p_t")
m_vis = _size("m_vis")
d_vout = _size("d_vout")
N_ds = _count("N_ds")
n_feat = _size("n_feat")
t_vis = _size("t_vis")
n_drop = _count("n_drop")
n_pos_vis = _size("n_pos_vis")
d_ff_proj = _size("d_ff_proj")
d_pin = _size("d_pin")
d_pout = _size("d_pout")
d_vfeat = _size("d_vfeat")
d_reg = _size("d_reg")
f_coord = _size("f_coord")
d_coord = _size("d_coord")
f_size = _size("f_size")
d_size = _size("d_size")
d_ff_reg = _size("d_ff_reg")
N_gvis = _count("N_gvis")
n_tile = _size("n_tile")
n_ar = _size("n_ar")
n_img = _count("n_img")
N_aud = _size("N_aud")
d_aud = _size("d_aud")
d_ff_aud = _size("d_ff_aud")
h_aud = _size("h_aud")
h_d_aud = _size("h_d_aud")
d_glu = _size("d_glu")
d_sep = _size("d_sep")
m_dw = _size("m_dw")
k_aud = _size("k_aud")
s_sub = _size("s_sub")
f_sub = _size("f_sub")
C_sub = _size("C_sub")
n_bucket = _size("n_bucket")
r_down = _size("r_down")
n_gram = _size("n_gram")
V_pl = _size("V_pl")
d_pl = _size("d_pl")
n_alt = _size("n_alt")
r_lau = _size("r_lau")
N_shared = _count("N_shared")
N_kv_sliding = _count("N_kv_sliding")
N_act_sparse = _count("N_act_sparse")
N_kv = _count("N_kv")
Q_idx = _size("Q_idx")
n_loc = _count("n_loc")
h_d_full = _size("h_d_full")
h_kv_full = _size("h_kv_full")
L_enc = _size("L_enc")
d_enc = _size("d_enc")
h_enc = _size("h_enc")
h_kv_enc = _size("h_kv_enc")
h_d_enc = _size("h_d_enc")
d_ff_enc = _size("d_ff_enc")
L_dec = _size("L_dec")
d_dec = _size("d_dec")
h_dec = _size("h_dec")
h_kv_dec = _size("h_kv_dec")
h_d_dec = _size("h_d_dec")
d_ff_dec = _size("d_ff_dec")
L_pat = _size("L_pat")
d_pat = _size("d_pat")
h_pat = _size("h_pat")
h_kv_pat = _size("h_kv_pat")
h_d_pat = _size("h_d_pat")
d_ff_pat = _size("d_ff_pat")
V_enc = _size("V_enc")
V_pat = _size("V_pat")
c_enc = _size("c_enc")
c_dec = _size("c_dec")
c_k = _size("c_k")
d_hg = _size("d_hg")
V_hash = _size("V_hash")
n_hash = _size("n_hash")
m_csa = _size("m_csa")
m_hca = _size("m_hca")
g_o = _size("g_o")
r_o = _size("r_o")
N_csa = _count("N_csa")
N_hca = _count("N_hca")
N_hashed = _count("N_hashed")
N_first = _count("N_first")
h_kv_c = _size("h_kv_c")
c_H = _size("c_H")
c_L = _count("c_L")
N_rope = _count("N_rope")
N_nope = _count("N_nope")
M_res = _count("M_res")
L_res = _size("L_res")
V_u = _size("V_u")
n_sk = _count("n_sk")
N_mtp = _count("N_mtp")
N_in = _count("N_in")
N_out = _count("N_out")
N_rec = _count("N_rec")
N_rec_sliding = _count("N_rec_sliding")
c_rec = _size("c_rec")
c_kv = _size("c_kv")
i_start = _size("i_start")
i_end = _size("i_end")
r_loop = _size("r_loop")
M_loop = _count("M_loop")
n_query = _size("n_query")
N_proj = _count("N_proj")
r_mlp = _size("r_mlp")

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
    Entry(
        d_rope,
        r"d_{\mathrm{rope}}",
        "qk_rope_head_dim / partial_rotary_factor",
        "per-head query/key size with RoPE (MLA; the rotated part of a head under partial RoPE)",
    ),
    Entry(d_nope, r"d_{\mathrm{nope}}", "qk_nope_head_dim", "per-head query/key size without RoPE (MLA)"),
    Entry(d_v, "d_{v}", "v_head_dim", "per-head value size (MLA)"),
    Entry(S, "S", "(none: --seq)", "sequence length, tokens per sequence"),
    Entry(B, "B", "(none: --batch)", "batch size, sequences per forward pass"),
    Entry(N_full, r"N_{\mathrm{full}}", "layer_types", "layers with full softmax attention"),
    Entry(N_linear, r"N_{\mathrm{linear}}", "layer_types", "layers with linear attention (a recurrent mixer)"),
    Entry(
        N_sliding,
        r"N_{\mathrm{sliding}}",
        "layer_types",
        "attention layers with a sliding window or attention chunk (their cache keeps at most W - 1 tokens)",
    ),
    Entry(h_lk, r"h_{\mathrm{lk}}", "linear_num_key_heads", "number of query/key heads of linear attention"),
    Entry(h_lv, r"h_{\mathrm{lv}}", "linear_num_value_heads", "number of value heads of linear attention"),
    Entry(d_lk, r"d_{\mathrm{lk}}", "linear_key_head_dim", "size of one query/key head of linear attention"),
    Entry(d_lv, r"d_{\mathrm{lv}}", "linear_value_head_dim", "size of one value head of linear attention"),
    Entry(
        d_conv,
        r"d_{\mathrm{conv}}",
        "linear_conv_kernel_dim / conv_kernel",
        "kernel width of the causal depthwise convolution",
    ),
    Entry(d_sh, r"d_{\mathrm{sh}}", "shared_expert_intermediate_size", "hidden size of the shared expert"),
    Entry(
        d_emb,
        r"d_{\mathrm{emb}}",
        "word_embed_proj_dim (ELECTRA, RoFormer: embedding_size; RemBERT: input_embedding_size)",
        "width of the token embedding, projected to and from d when it differs",
    ),
    Entry(m_ff, r"m_{\mathrm{ff}}", "intermediate_multiple_size", "MLP width as a multiple of d (d_ff = m_ff · d)"),
    Entry(
        d_s,
        "d_{s}",
        "shared_expert_intermediate_size",
        "hidden size of the shared expert (when it has its own key; 0: none)",
    ),
    Entry(N_attn, r"N_{\mathrm{attn}}", "attn_layer_period / layers_block_type", "layers with softmax attention"),
    Entry(N_mamba, r"N_{\mathrm{mamba}}", "attn_layer_period / layers_block_type", "layers with a Mamba mixer"),
    Entry(N_moe, r"N_{\mathrm{moe}}", "expert_layer_period / layers_block_type", "layers with a routed MoE block"),
    Entry(E, "E", "expand / mamba_expand", "Mamba expansion factor: the inner width is E·d"),
    Entry(d_state, r"d_{\mathrm{state}}", "state_size / mamba_d_state", "SSM state size per channel"),
    Entry(r_dt, r"r_{\Delta}", "time_step_rank / mamba_dt_rank", "rank of the time-step (Δ) projection"),
    Entry(d_ssm, r"d_{\mathrm{ssm}}", "mamba_d_ssm / intermediate_size", "inner width of the Mamba mixer"),
    Entry(h_m, r"h_{\mathrm{m}}", "mamba_n_heads / num_heads / n_mamba_heads", "number of Mamba heads"),
    Entry(g, "g", "mamba_n_groups / n_groups", "number of groups sharing the Mamba-2 B and C"),
    Entry(d_mh, r"d_{\mathrm{mh}}", "mamba_head_dim / head_dim", "size of one Mamba-2 head"),
    Entry(d_lat, r"d_{\mathrm{lat}}", "moe_latent_size", "latent width the routed experts work in"),
    Entry(W, "W", "sliding_window", "sliding-window size: the tokens a query attends to on a sliding layer"),
    Entry(n_type, r"n_{\mathrm{type}}", "type_vocab_size", "rows of the token-type (segment) embedding table"),
    Entry(n_task, r"n_{\mathrm{task}}", "task_type_vocab_size", "rows of the task-type embedding table (ERNIE)"),
    Entry(d_out, r"d_{\mathrm{out}}", "output_embedding_size", "width of the LM head's output embedding (RemBERT)"),
    Entry(n_pron, r"n_{\mathrm{pron}}", "pronunciation_vocab_size", "rows of the pronunciation table (RoCBert)"),
    Entry(d_pron, r"d_{\mathrm{pron}}", "pronunciation_embed_dim", "width of the pronunciation embedding (RoCBert)"),
    Entry(n_shape, r"n_{\mathrm{shape}}", "shape_vocab_size", "rows of the glyph-shape embedding table (RoCBert)"),
    Entry(d_shape, r"d_{\mathrm{shape}}", "shape_embed_dim", "width of the glyph-shape embedding (RoCBert)"),
    Entry(h_idx, r"h_{\mathrm{idx}}", "index_n_heads", "heads of the sparse-attention indexer (DeepSeek-V3.2)"),
    Entry(d_idx, r"d_{\mathrm{idx}}", "index_head_dim", "size of one indexer head (DeepSeek-V3.2)"),
    Entry(
        d_att,
        r"d_{\mathrm{att}}",
        "attention_hidden_size",
        "width of the attention block: its keys, values and receptance (RWKV), its input (Zamba: 2·d)",
    ),
    Entry(N_recurrent, r"N_{\mathrm{recurrent}}", "block_types", "layers with a recurrent (RG-LRU) block"),
    Entry(N_conv, r"N_{\mathrm{conv}}", "layer_types", "layers with a gated short convolution (LFM2, LFM3)"),
    Entry(
        n_pk,
        r"n_{\mathrm{pk}}",
        "num_experts",
        "product keys of a CDMoE router, floor(sqrt(num_experts)) per half (Doge)",
    ),
    Entry(d_qk, r"d_{\mathrm{qk}}", "hidden_size · qk_dim_factor", "width of the mLSTM queries and keys (xLSTM)"),
    Entry(
        d_val, r"d_{\mathrm{val}}", "hidden_size · v_dim_factor", "width of the mLSTM values and output gate (xLSTM)"
    ),
    Entry(
        n_lang,
        r"n_{\mathrm{lang}}",
        "languages (XLM: n_langs)",
        "languages: with an adapter of their own (X-MOD), rows of the language embedding (XLM)",
    ),
    Entry(d_ad, r"d_{\mathrm{ad}}", "hidden_size // adapter_reduction_factor", "adapter bottleneck width (X-MOD)"),
    Entry(d_rnn, r"d_{\mathrm{rnn}}", "lru_width", "width of the RG-LRU recurrence"),
    Entry(k_conv, r"k_{\mathrm{conv}}", "linear_conv_kernel_dim", "width of the causal convolution kernel"),
    Entry(
        Q,
        "Q",
        "chunk_size / mamba_chunk_size / block_size",
        "chunk length of a chunked scan in transformers' torch path (Mamba-2's state space duality, MiniMax's "
        "lightning attention, xLSTM's mLSTM): FLOPs, and the activations of Mamba-2 mixers and of xLSTM",
    ),
    Entry(
        p_train,
        r"p_{\mathrm{train}}",
        "mode",
        "1 in xLSTM's train modes (a single token goes through the chunkwise kernel too), 0 in its inference mode (a "
        "single token takes the recurrent step kernel): FLOPs and activations",
    ),
    Entry(
        p_pad,
        r"p_{\mathrm{pad}}",
        "mode",
        "1 in xLSTM's train_with_padding mode (whose training forward fails in transformers), 0 in its other modes: "
        "activations only",
    ),
    Entry(
        N_index,
        r"N_{\mathrm{index}}",
        "indexer_types",
        "layers that run their own sparse-attention indexer (the others reuse the previous one's top-k)",
    ),
    Entry(
        n_zero,
        r"n_{\mathrm{zero}}",
        "zero_expert_num",
        "zero-computation experts: the router may pick them, and they return their input unchanged",
    ),
    Entry(
        n_hc,
        r"n_{\mathrm{hc}}",
        "hc_mult",
        "residual streams of the hyper-connections: the hidden state is kept as n_hc copies that each layer mixes",
    ),
    Entry(r_g, "r_{g}", "gated_norm_rank", "rank of the low-rank MLP whose sigmoid gates a gated RMSNorm's output"),
    Entry(
        n_mem,
        r"n_{\mathrm{mem}}",
        "num_mem_blocks",
        "distinct shared transformer blocks, used in turn by the hybrid layers (Zamba2)",
    ),
    Entry(r_a, "r_{a}", "adapter_rank", "rank of the low-rank adapters a hybrid layer adds to a shared block (Zamba2)"),
    Entry(
        h_tot,
        r"h_{\mathrm{tot}}",
        "num_attention_heads_per_layer (summed)",
        "attention (query) heads summed over the layers, when each layer has its own count",
    ),
    Entry(
        S_full,
        r"S_{\mathrm{full}}",
        "(5 + 2·num_random_blocks)·block_size (BigBird, attention_type block_sparse)",
        "the longest sequence run with full attention; beyond it the model runs another attention (block-sparse)",
    ),
    Entry(b_blk, r"b_{\mathrm{blk}}", "block_size (BigBird)", "tokens per block of block-sparse attention"),
    Entry(r_blk, r"r_{\mathrm{blk}}", "num_random_blocks (BigBird)", "random key blocks per query block"),
    Entry(
        h_tot_sw,
        r"h_{\mathrm{tot,sw}}",
        "num_attention_heads_per_layer (summed over the sliding layers)",
        "attention (query) heads summed over the sliding-window layers, when each layer has its own count",
    ),
    Entry(
        d_hk,
        r"d_{\mathrm{hk}}",
        "qk_dim // num_heads (xLSTM: d · qk_dim_factor rounded up to a multiple of 64)",
        "size of one mLSTM key head in the recurrent state (xLSTM's cache)",
    ),
    Entry(
        d_hv,
        r"d_{\mathrm{hv}}",
        "v_dim // num_heads (xLSTM: d · v_dim_factor rounded up to a multiple of 64)",
        "size of one mLSTM value head in the recurrent state (xLSTM's cache)",
    ),
    Entry(d_router, r"d_{\mathrm{router}}", "router_hidden_size", "width of the router's own MLP (ZAYA)"),
    Entry(
        n_bkt,
        r"n_{\mathrm{bkt}}",
        "position_bias_num_buckets (CPM-Ant; ProphetNet: num_buckets)",
        "relative-position buckets of a learned attention bias (per head)",
    ),
    Entry(n_seg, r"n_{\mathrm{seg}}", "segment_types", "segment types (CPM-Ant: rows of the segment embedding)"),
    Entry(n_prompt, r"n_{\mathrm{prompt}}", "prompt_types", "prompt types, each with its own learned prompt (CPM-Ant)"),
    Entry(l_prompt, r"l_{\mathrm{prompt}}", "prompt_length", "tokens of one learned prompt (CPM-Ant)"),
    Entry(
        k_dw,
        r"k_{\mathrm{dw}}",
        "cca_time0",
        "kernel width of the depthwise convolution over the queries and keys (ZAYA's CCA)",
    ),
    Entry(
        k_gr,
        r"k_{\mathrm{gr}}",
        "cca_time1",
        "kernel width of the grouped (per-head) convolution over the queries and keys (ZAYA's CCA)",
    ),
    Entry(h_sw, r"h_{\mathrm{sw}}", "swa_num_attention_heads", "attention (query) heads of a sliding-window layer"),
    Entry(h_kv_sw, r"h_{\mathrm{kv,sw}}", "swa_num_key_value_heads", "key/value heads of a sliding-window layer"),
    Entry(h_d_sw, r"h_{d,\mathrm{sw}}", "swa_head_dim", "size of one attention head of a sliding-window layer"),
    Entry(
        d_rel,
        r"d_{\mathrm{rel}}",
        "d_rel",
        "per-head width of the relative states that mix a bank of relative-position bias profiles (Inkling)",
    ),
    Entry(
        n_rel,
        r"n_{\mathrm{rel}}",
        "rel_extent",
        "backward distance, in tokens, of the relative-position bias of a full-attention layer (Inkling)",
    ),
    Entry(
        V_dec,
        r"V_{\mathrm{dec}}",
        "decoder_vocab_size",
        "vocabulary of the decoder's token embedding, when it differs from the LM head's V (Marian)",
    ),
    Entry(
        V_out,
        r"V_{\mathrm{out}}",
        "vocab_size",
        "logits per token, the LM head's rows: V, or V_dec when the head is the decoder's embedding (Marian, tied)",
    ),
    Entry(
        d_cross,
        r"d_{\mathrm{cross}}",
        "cross_attention_hidden_size",
        "width of the encoder outputs that the cross-attention's keys and values read (TrOCR)",
    ),
    Entry(
        N_cross,
        r"N_{\mathrm{cross}}",
        "cross_attention_layers",
        "layers that cross-attend to the vision states instead of self-attending (Mllama)",
    ),
    Entry(
        N_bi,
        r"N_{\mathrm{bi}}",
        "attn_type",
        "layers whose relative positions run both ways, 2·S of them (XLNet's attn_type 'bi'; 'uni': S + 1)",
    ),
    Entry(S_mem, r"S_{\mathrm{mem}}", "mem_len / reuse_len", "past hidden states XLNet keeps per layer (mems)"),
    Entry(N_vis, r"N_{\mathrm{vis}}", "vision_config.num_hidden_layers", "layers of the vision encoder"),
    Entry(d_vis, r"d_{\mathrm{vis}}", "vision_config.hidden_size", "hidden size of the vision encoder"),
    Entry(d_ff_vis, r"d_{\mathrm{ff,vis}}", "vision_config.intermediate_size", "MLP width of the vision encoder"),
    Entry(h_vis, r"h_{\mathrm{vis}}", "vision_config.num_attention_heads", "attention heads of the vision encoder"),
    Entry(p_vis, r"p_{\mathrm{vis}}", "vision_config.patch_size", "side of one image patch, in pixels"),
    Entry(
        n_patch,
        r"n_{\mathrm{patch}}",
        "(vision_config.image_size // patch_size)²",
        "patches per image at the config's image size, one learned position each (SigLIP, CLIP, GIT)",
    ),
    Entry(C_img, r"C_{\mathrm{img}}", "vision_config.num_channels", "colour channels of an input image"),
    Entry(H_img, r"H_{\mathrm{img}}", "flops --image-size", "height of an input image in pixels (a tower without one)"),
    Entry(W_img, r"W_{\mathrm{img}}", "flops --image-size", "width of an input image in pixels (a tower without one)"),
    Entry(L_aud, r"L_{\mathrm{aud}}", "flops --audio-frames", "log-mel frames of one input audio (input_features)"),
    Entry(
        p_t,
        r"p_{t}",
        "vision_config.temporal_patch_size",
        "frames one patch spans in time: the patch convolution is 3-D (Qwen2-VL, Qwen2.5-VL, Qwen3-VL)",
    ),
    Entry(
        m_vis,
        r"m_{\mathrm{vis}}",
        "vision_config.spatial_merge_size",
        "side of the square of patches the merger folds into one token: m_vis² patches per image token (Qwen-VL)",
    ),
    Entry(
        d_vout,
        r"d_{\mathrm{vout}}",
        "vision_config.out_hidden_size (Qwen2-VL: hidden_size; PaliGemma: projection_dim)",
        "width of the image tokens a tower or projector outputs, which must be the language model's hidden size",
    ),
    Entry(
        N_ds,
        r"N_{\mathrm{ds}}",
        "vision_config.deepstack_visual_indexes",
        "vision layers whose features a DeepStack merger of their own feeds to the language model (Qwen3-VL)",
    ),
    Entry(
        n_feat,
        r"n_{\mathrm{feat}}",
        "vision_feature_layer",
        "vision layers whose features the projector concatenates: 1 for a single layer, else the list's length (LLaVA)",
    ),
    Entry(
        t_vis,
        r"t_{\mathrm{vis}}",
        "the vision tower's image_tokens (vision_config.image_tokens, as the composite passes it to the projector)",
        "tokens per image the vision tower puts out, which the projector takes (CLIP: patches and the class token)",
    ),
    Entry(
        n_drop,
        r"n_{\mathrm{drop}}",
        "vision_feature_select_strategy",
        "tokens of the tower's output the projector does not take: 1 (the first) with 'default', 0 with 'full' (LLaVA)",
    ),
    Entry(
        n_pos_vis,
        r"n_{\mathrm{pos,vis}}",
        "vision_config.num_position_embeddings",
        "rows of the vision tower's learned position table, interpolated to the image's grid (Qwen3-VL)",
    ),
    Entry(
        d_ff_proj,
        r"d_{\mathrm{ff,proj}}",
        "alignment_intermediate_size",
        "width of a gated projector's first linear: half of it gates the other half into the second (Aya Vision)",
    ),
    Entry(
        d_pin,
        r"d_{\mathrm{p,in}}",
        "vision_config.projector_input_dim",
        "width the vision adapter's first linear maps the pixel-shuffled patches to (Llama 4)",
    ),
    Entry(
        d_pout,
        r"d_{\mathrm{p,out}}",
        "vision_config.projector_output_dim",
        "width of the vision adapter's second linear, in and out (Llama 4)",
    ),
    Entry(
        d_vfeat,
        r"d_{\mathrm{vfeat}}",
        "vision_config.vision_output_dim",
        "width of the image features the multimodal projector takes from the vision model (Llama 4)",
    ),
    Entry(
        d_reg, r"d_{\mathrm{reg}}", "region_config.dim", "width of the region head's encoders and decoders (Moondream)"
    ),
    Entry(
        f_coord,
        r"f_{\mathrm{coord}}",
        "region_config.coord_feat_dim",
        "Fourier features of one coordinate the region head encodes: half of them learned frequencies (Moondream)",
    ),
    Entry(
        d_coord,
        r"d_{\mathrm{coord}}",
        "region_config.coord_out_dim",
        "outputs of the coordinate decoder: bins of a point's coordinate (Moondream)",
    ),
    Entry(
        f_size,
        r"f_{\mathrm{size}}",
        "region_config.size_feat_dim",
        "Fourier features of a box's width and height the region head encodes (Moondream)",
    ),
    Entry(
        d_size,
        r"d_{\mathrm{size}}",
        "region_config.size_out_dim",
        "outputs of the size decoder: bins of a box's width and height (Moondream)",
    ),
    Entry(
        d_ff_reg,
        r"d_{\mathrm{ff,reg}}",
        "region_config.inner_dim",
        "hidden width of the region head's two decoder MLPs (Moondream)",
    ),
    Entry(
        N_gvis,
        r"N_{\mathrm{gvis}}",
        "vision_config.num_global_layers",
        "gated global layers of the vision encoder, after its local ones (Mllama)",
    ),
    Entry(n_tile, r"n_{\mathrm{tile}}", "vision_config.max_num_tiles", "tiles an image is cut into, at most (Mllama)"),
    Entry(
        n_ar,
        r"n_{\mathrm{ar}}",
        "vision_config.supported_aspect_ratios",
        "tile layouts (aspect ratios) the vision encoder embeds, one row each and one for none (Mllama)",
    ),
    Entry(n_img, r"n_{\mathrm{img}}", "num_image_with_embedding", "video frames with a temporal embedding each (GIT)"),
    Entry(
        n_query,
        r"n_{\mathrm{query}}",
        "query_num",
        "learned queries of a resampler or cross-attention projector: the tokens it puts out per image (slice)",
    ),
    Entry(
        N_proj,
        r"N_{\mathrm{proj}}",
        "projector_config.depth - 2",
        "hidden linears of an MLP projector between its first and its last (DeepSeek-VL2)",
    ),
    Entry(
        r_mlp,
        r"r_{\mathrm{mlp}}",
        "projector_config.mlp_ratio",
        "width of an MLP projector's hidden linears, per d (DeepSeek-VL2)",
    ),
    Entry(N_aud, r"N_{\mathrm{aud}}", "audio_config.num_blocks", "conformer blocks of the audio encoder"),
    Entry(d_aud, r"d_{\mathrm{aud}}", "audio_config.hidden_size", "hidden size of the audio encoder"),
    Entry(
        d_ff_aud,
        r"d_{\mathrm{ff,aud}}",
        "audio_config.intermediate_size",
        "MLP width of the audio encoder's feed-forward modules (Phi-4-multimodal)",
    ),
    Entry(h_aud, r"h_{\mathrm{aud}}", "audio_config.num_attention_heads", "attention heads of the audio encoder"),
    Entry(
        h_d_aud,
        r"h_{d,\mathrm{aud}}",
        "audio_config.head_dim (hidden_size // num_attention_heads)",
        "size of one attention head of the audio encoder (Phi-4-multimodal)",
    ),
    Entry(
        d_glu,
        r"d_{\mathrm{glu}}",
        "audio_config.ext_pw_out_channel",
        "channels of the conformer convolution module's GLU and output pointwise convolutions (Phi-4-multimodal)",
    ),
    Entry(
        d_sep,
        r"d_{\mathrm{sep}}",
        "audio_config.depthwise_separable_out_channel",
        "output channels of the conformer's depthwise-separable convolution (Phi-4-multimodal)",
    ),
    Entry(
        m_dw,
        r"m_{\mathrm{dw}}",
        "audio_config.depthwise_multiplier",
        "channels per input channel of the conformer's depthwise convolution (Phi-4-multimodal)",
    ),
    Entry(k_aud, r"k_{\mathrm{aud}}", "audio_config.kernel_size", "kernel of the conformer's depthwise convolution"),
    Entry(
        s_sub,
        r"s_{\mathrm{sub}}",
        "int(log2(audio_config.time_reduction))",
        "stride-2 convolution stages of the audio encoder's subsampling (Phi-4-multimodal)",
    ),
    Entry(
        f_sub,
        r"f_{\mathrm{sub}}",
        "audio_config.nemo_final_size (ceil(input_size / 2^s_sub))",
        "feature bins left after the audio subsampling's stages (nemo_final_size, Phi-4-multimodal)",
    ),
    Entry(
        C_sub,
        r"C_{\mathrm{sub}}",
        "audio_config.nemo_conv_channels",
        "channels of the audio encoder's subsampling convolutions (Phi-4-multimodal)",
    ),
    Entry(
        n_bucket,
        r"n_{\mathrm{bucket}}",
        "audio_config.bias_max_distance (twice, unless bias_symmetric)",
        "relative-position buckets of the audio encoder's attention bias (Phi-4-multimodal)",
    ),
    Entry(
        r_down,
        r"r_{\mathrm{down}}",
        "audio_config.downsample_rate",
        "audio frames stacked into one before the projection to the language model (Phi-4-multimodal)",
    ),
    Entry(
        n_gram,
        r"n_{\mathrm{gram}}",
        "ngram",
        "future tokens predicted at each position, one embedding each (ProphetNet)",
    ),
    Entry(
        V_pl,
        r"V_{\mathrm{pl}}",
        "vocab_size_per_layer_input",
        "rows of the per-layer embedding table: each token gets a small embedding for every layer (Gemma 3n)",
    ),
    Entry(
        d_pl, r"d_{\mathrm{pl}}", "hidden_size_per_layer_input", "width of one layer's per-layer embedding (Gemma 3n)"
    ),
    Entry(
        n_alt,
        r"n_{\mathrm{alt}}",
        "altup_num_inputs",
        "copies of the hidden state that AltUp (alternating updates) keeps and predicts; a layer updates one",
    ),
    Entry(
        r_lau, r"r_{\mathrm{laurel}}", "laurel_rank", "rank of the low-rank learned residual (LAuReL) beside each layer"
    ),
    Entry(
        N_shared,
        r"N_{\mathrm{shared}}",
        "num_kv_shared_layers",
        "last layers that reuse the keys and values of an earlier layer of their kind (KV sharing): no k_proj, "
        "v_proj or cache of their own",
    ),
    Entry(
        N_kv_sliding,
        r"N_{\mathrm{sliding}}^{\mathrm{kv}}",
        "layer_types, num_kv_shared_layers",
        "sliding-window layers that compute and cache keys and values of their own (before the shared layers)",
    ),
    Entry(
        N_kv,
        r"N^{\mathrm{kv}}",
        "num_kv_shared_layers",
        "layers that compute keys and values of their own: the N - N_shared before the KV-shared ones",
    ),
    Entry(
        Q_idx,
        r"Q_{\mathrm{idx}}",
        "index_block_size",
        "key block length of a block-sparse lightning indexer (MiniMax-M3): each query scores blocks of Q_idx keys",
    ),
    Entry(
        n_loc,
        r"n_{\mathrm{local}}",
        "index_local_blocks",
        "key blocks next to each query that a block-sparse indexer always keeps (MiniMax-M3)",
    ),
    Entry(
        N_act_sparse,
        r"N_{\mathrm{sparse}}^{\mathrm{act}}",
        "activation_sparsity_pattern",
        "layers whose MLP zeroes the gate outputs below a Gaussian quantile cutoff (activation sparsity > 0)",
    ),
    Entry(
        h_d_full,
        r"h_{d}^{\mathrm{full}}",
        "head_dim on the full-attention layers (Gemma 4: global_head_dim, or per_layer_config)",
        "size of one attention head on the full-attention layers, when it differs from the sliding ones'",
    ),
    Entry(
        h_kv_full,
        r"h_{\mathrm{kv}}^{\mathrm{full}}",
        "num_key_value_heads on the full-attention layers (Gemma 4: num_global_key_value_heads, or per_layer_config)",
        "number of key/value heads on the full-attention layers, when it differs from the sliding ones'",
    ),
    Entry(L_enc, r"L_{\mathrm{enc}}", "encoder_config.num_hidden_layers", "layers of BLT's local encoder"),
    Entry(d_enc, r"d_{\mathrm{enc}}", "encoder_config.hidden_size", "hidden size of BLT's local encoder"),
    Entry(h_enc, r"h_{\mathrm{enc}}", "encoder_config.num_attention_heads", "attention heads of BLT's local encoder"),
    Entry(
        h_kv_enc, r"h_{\mathrm{kv,enc}}", "encoder_config.num_key_value_heads", "key/value heads of BLT's local encoder"
    ),
    Entry(
        h_d_enc,
        r"h_{d,\mathrm{enc}}",
        "encoder_config.hidden_size // num_attention_heads",
        "size of one attention head of BLT's local encoder",
    ),
    Entry(
        d_ff_enc, r"d_{\mathrm{ff,enc}}", "encoder_config.intermediate_size", "MLP hidden size of BLT's local encoder"
    ),
    Entry(L_dec, r"L_{\mathrm{dec}}", "decoder_config.num_hidden_layers", "layers of BLT's local decoder"),
    Entry(d_dec, r"d_{\mathrm{dec}}", "decoder_config.hidden_size", "hidden size of BLT's local decoder"),
    Entry(h_dec, r"h_{\mathrm{dec}}", "decoder_config.num_attention_heads", "attention heads of BLT's local decoder"),
    Entry(
        h_kv_dec, r"h_{\mathrm{kv,dec}}", "decoder_config.num_key_value_heads", "key/value heads of BLT's local decoder"
    ),
    Entry(
        h_d_dec,
        r"h_{d,\mathrm{dec}}",
        "decoder_config.hidden_size // num_attention_heads",
        "size of one attention head of BLT's local decoder",
    ),
    Entry(
        d_ff_dec, r"d_{\mathrm{ff,dec}}", "decoder_config.intermediate_size", "MLP hidden size of BLT's local decoder"
    ),
    Entry(L_pat, r"L_{\mathrm{pat}}", "patcher_config.num_hidden_layers", "layers of BLT's entropy patcher"),
    Entry(d_pat, r"d_{\mathrm{pat}}", "patcher_config.hidden_size", "hidden size of BLT's entropy patcher"),
    Entry(h_pat, r"h_{\mathrm{pat}}", "patcher_config.num_attention_heads", "attention heads of BLT's entropy patcher"),
    Entry(
        h_kv_pat,
        r"h_{\mathrm{kv,pat}}",
        "patcher_config.num_key_value_heads",
        "key/value heads of BLT's entropy patcher",
    ),
    Entry(
        h_d_pat,
        r"h_{d,\mathrm{pat}}",
        "patcher_config.hidden_size // num_attention_heads",
        "size of one attention head of BLT's entropy patcher",
    ),
    Entry(
        d_ff_pat, r"d_{\mathrm{ff,pat}}", "patcher_config.intermediate_size", "MLP hidden size of BLT's entropy patcher"
    ),
    Entry(V_enc, r"V_{\mathrm{enc}}", "encoder_config.vocab_size", "byte vocabulary of BLT's local encoder"),
    Entry(V_pat, r"V_{\mathrm{pat}}", "patcher_config.vocab_size", "byte vocabulary of BLT's entropy patcher"),
    Entry(
        c_enc,
        r"c_{\mathrm{enc}}",
        "encoder_config.cross_attn_k",
        "patch copies per patch in the cross attention of BLT's local encoder",
    ),
    Entry(
        c_dec,
        r"c_{\mathrm{dec}}",
        "decoder_config.cross_attn_k",
        "patch copies per patch in the cross attention of BLT's local decoder",
    ),
    Entry(
        c_k, r"c_{k}", "cross_attn_k", "patch copies per patch the global transformer receives from BLT's local encoder"
    ),
    Entry(
        d_hg,
        r"d_{\mathrm{hg}}",
        "decoder_config.hidden_size_global",
        "width of the global patch states BLT's local decoder reads",
    ),
    Entry(
        V_hash,
        r"V_{\mathrm{hash}}",
        "encoder_hash_byte_group_vocab",
        "rows of one hashed byte n-gram embedding table (BLT)",
    ),
    Entry(
        n_hash,
        r"n_{\mathrm{hash}}",
        "encoder_hash_byte_group_nb_functions × len(encoder_hash_byte_group_size)",
        "hashed byte n-gram embedding tables (BLT): hash functions times n-gram sizes",
    ),
    Entry(
        m_csa,
        r"m_{\mathrm{csa}}",
        "compress_rates.compressed_sparse_attention",
        "tokens a compressed-sparse-attention layer folds into one compressed key/value entry (DeepSeek-V4)",
    ),
    Entry(
        m_hca,
        r"m_{\mathrm{hca}}",
        "compress_rates.heavily_compressed_attention",
        "tokens a heavily-compressed-attention layer folds into one compressed key/value entry (DeepSeek-V4)",
    ),
    Entry(g_o, "g_{o}", "o_groups", "groups of heads whose outputs are projected apart (grouped output projection)"),
    Entry(r_o, "r_{o}", "o_lora_rank", "width each head group's output is projected to before the output mixing"),
    Entry(N_csa, r"N_{\mathrm{csa}}", "layer_types", "layers with compressed sparse attention (DeepSeek-V4)"),
    Entry(N_hca, r"N_{\mathrm{hca}}", "layer_types", "layers with heavily compressed attention (DeepSeek-V4)"),
    Entry(N_hashed, r"N_{\mathrm{hashed}}", "mlp_layer_types", "layers whose MoE routes by token id (DeepSeek-V4)"),
    Entry(N_first, r"N_{\mathrm{first}}", "num_hidden_layers", "the first layer, holding a module the others lack"),
    Entry(
        r_q_sw,
        r"r_{q,\mathrm{sw}}",
        "swa_q_lora_rank",
        "rank of the low-rank query projection of a sliding-window layer (MLA)",
    ),
    Entry(
        r_kv_sw,
        r"r_{\mathrm{kv,sw}}",
        "swa_kv_lora_rank",
        "rank of the compressed key/value latent of a sliding-window layer (MLA)",
    ),
    Entry(
        d_rope_sw,
        r"d_{\mathrm{rope,sw}}",
        "swa_qk_rope_head_dim",
        "per-head query/key size with RoPE of a sliding-window layer (MLA)",
    ),
    Entry(
        d_nope_sw,
        r"d_{\mathrm{nope,sw}}",
        "swa_qk_nope_head_dim",
        "per-head query/key size without RoPE of a sliding-window layer (MLA)",
    ),
    Entry(d_v_sw, r"d_{v,\mathrm{sw}}", "swa_v_head_dim", "per-head value size of a sliding-window layer (MLA)"),
    Entry(
        h_kv_c,
        r"h_{\mathrm{kv}}^{\mathrm{cache}}",
        "num_kv_heads (Falcon: num_attention_heads with new_decoder_architecture, 1 with multi_query)",
        "number of key/value heads the cache keeps, where it differs from h_kv (Falcon expands grouped heads to h)",
    ),
    Entry(c_H, r"c_{H}", "H_cycles", "high-level cycles of HRM: passes through its H stack (after c_L through the L)"),
    Entry(c_L, r"c_{L}", "L_cycles", "low-level cycles of HRM: passes through the L stack in each high-level cycle"),
    Entry(N_rope, r"N_{\mathrm{rope}}", "layer_rope_theta", "layers with RoPE at the largest base"),
    Entry(N_nope, r"N_{\mathrm{nope}}", "layer_rope_theta", "layers without rotary position embedding (a base of 0)"),
    Entry(
        M_res,
        r"M_{\mathrm{res}}",
        "n_layers_per_attn_res_block",
        "block states the extra queries of the full layers' attention residuals attend over, summed over the layers",
    ),
    Entry(
        L_res,
        r"L_{\mathrm{res}}",
        "n_layers_per_attn_res_block",
        "layers per block of the attention residuals: each block's input joins the states later layers attend over",
    ),
    Entry(
        V_u,
        r"V_{u}",
        "unpadded_vocab_size",
        "logits kept for the loss: the first min(unpadded_vocab_size, V), the rows that hold real tokens",
    ),
    Entry(
        n_sk,
        r"n_{\mathrm{sk}}",
        "hc_sinkhorn_iters",
        "Sinkhorn iterations that make a hyper-connection's mixing matrix doubly stochastic (DeepSeek-V4)",
    ),
    Entry(
        N_mtp,
        r"N_{\mathrm{mtp}}",
        "num_nextn_predict_layers / mtp_num_hidden_layers",
        "decoder layers of the checkpoint's multi-token-prediction (MTP) module, which transformers does not build",
    ),
    Entry(N_in, r"N_{\mathrm{in}}", "n_input_layers", "layers run once before the looped ones (Dory)"),
    Entry(N_out, r"N_{\mathrm{out}}", "n_output_layers", "layers run once after the looped ones (Dory)"),
    Entry(N_rec, r"N_{\mathrm{rec}}", "n_recurrent_layers", "layers run again in every loop (Dory's recurrent block)"),
    Entry(N_rec_sliding, r"N_{\mathrm{rec}}^{\mathrm{sliding}}", "layer_types", "looped layers with sliding attention"),
    Entry(c_rec, r"c_{\mathrm{rec}}", "n_recurrent_loops", "passes through the looped layers (Dory's loops)"),
    Entry(
        c_kv,
        r"c_{\mathrm{kv}}",
        "recurrent_kv_cache_mode",
        "cache slots of a looped layer: one per loop (per_loop), or one the last loop writes (last_loop)",
    ),
    Entry(i_start, r"i_{\mathrm{start}}", "loop_layer_index_start", "index of the first looped layer (Inkling 2 Loop)"),
    Entry(i_end, r"i_{\mathrm{end}}", "loop_layer_index_end", "index after the last looped layer (Inkling 2 Loop)"),
    Entry(
        r_loop,
        r"r_{\mathrm{loop}}",
        "loop_gate_rank",
        "rank of a message gate: 2·d down to r_loop, then back to d for its forget and its message gate",
    ),
    Entry(
        M_loop,
        r"M_{\mathrm{loop}}",
        "n_layers_per_attn_res_block",
        "query-state pairs of the looped layers' attention residuals, summed over them (run again in every later pass)",
    ),
)

BY_NAME: dict[str, Entry] = {entry.symbol.name: entry for entry in GLOSSARY}
LATEX_NAMES: dict[Symbol, str] = {entry.symbol: entry.latex for entry in GLOSSARY}


OWN: dict[str, Entry] = {}
"""Symbols records declare for config keys the glossary has none for (``[glossary]``), by name."""


def declare(name: str, meaning: str) -> Symbol:
    """A record's own size symbol, named after its config key (or a count of layers, ``N_`` and a word): added to
    :data:`BY_NAME` (and the LaTeX names) once;
    ValueError when the name is a glossary symbol's."""
    entry = BY_NAME.get(name)
    if entry is not None and name not in OWN:
        raise ValueError(f"{name!r} is a glossary symbol already")
    if entry is None:
        symbol = _count(name) if name.startswith("N_") else _size(name)
        entry = Entry(symbol, r"\mathrm{" + name.replace("_", r"\_") + "}", name, meaning)
        OWN[name] = BY_NAME[name] = entry
        LATEX_NAMES[symbol] = entry.latex
    return entry.symbol


def entries() -> tuple[Entry, ...]:
    """The glossary in its order, then the symbols records declared (:data:`OWN`)."""
    return GLOSSARY + tuple(OWN.values())
