"""Named FLOPs conventions and MFU, against hand derivations from the papers' and frameworks' own formulas.

Llama-3-8B (meta-llama/Meta-Llama-3-8B config.json): num_hidden_layers L = 32, hidden_size d = 4096,
num_attention_heads h = 32, num_key_value_heads 8, head_dim 128 (= 4096 / 32), intermediate_size 14336,
vocab_size V = 128256, tie_word_embeddings false. Every expected number below is derived from those values here.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from refusal import assert_refused, run

from llmcount.formulas.config import read_config
from llmcount.formulas.conventions import CONVENTIONS, conventions, ingredients
from llmcount.presets import presets
from llmcount.sources import load

L, D, H, H_KV, H_D, D_FF, V = 32, 4096, 32, 8, 128, 14336, 128256
S = 2048

# parameters, by hand
EMBED = V * D  # 525,336,576 (and the untied head, the same)
ATTN = D * H * H_D + 2 * D * H_KV * H_D + H * H_D * D  # q, k, v, o: 41,943,040
MLP = 3 * D * D_FF  # gate, up, down: 176,160,768
NORMS = 2 * D  # two RMSNorm scales per layer
W = L * (ATTN + MLP)  # linear weights: 6,979,321,856
N_NON_EMBEDDING = L * (ATTN + MLP + NORMS) + D  # + the final norm: 6,979,588,096
TOTAL = N_NON_EMBEDDING + 2 * EMBED  # 8,030,261,248, Llama 3 8B's published 8.03B
Q_WIDTH = H * H_D  # 4096, h·d_qk = h·d_v

EXPECTED = {
    # Kaplan et al. 2020 §2.1: C_fwd = 2N + 2·n_layer·n_ctx·d_attn, training = 3·C_fwd
    "kaplan": 3 * (2 * N_NON_EMBEDDING + 2 * L * S * Q_WIDTH),
    # Hoffmann et al. 2022 App. F, per token: embeddings 2·V·d; per layer: projections 2·(q,k,v,o weights),
    # K@Q logits 2·S·(key_size·heads), softmax 3·heads·S, softmax@values 2·S·(key_size·heads); dense 2·(MLP
    # weights); final logits 2·d·V; backward = 2 × forward
    "chinchilla": 3
    * (2 * V * D + L * (2 * ATTN + 2 * S * Q_WIDTH + 3 * H * S + 2 * S * Q_WIDTH + 2 * MLP) + 2 * D * V),
    # Chowdhery et al. 2022 App. B: 6N + 12·L·H·Q·T, N the model's parameters (untied: the embedding and the head)
    "palm": 6 * TOTAL + 12 * L * H * H_D * S,
    # Hoffmann et al. 2022 Table A4's variant: Appendix F without the embeddings' 2·V·d and the final logits' 2·d·V
    "chinchilla-table": 3 * L * (2 * ATTN + 2 * S * Q_WIDTH + 3 * H * S + 2 * S * Q_WIDTH + 2 * MLP),
    # Megatron-LM num_floating_point_operations, GQA, swiglu, no MoE/MTP, batch 1 (BSHD):
    #   3·2·[d·(q + k + v) + q·d] per layer + 3·2·d·ffn·3 per layer + 3·2·d·V_pad, all × tokens (= S per sequence)
    #   + seq² · 3·2·q/2·2 per layer (core attention, causal /2); V_pad = 128256 = 1002·128, already a multiple
    #   divided by the S tokens of the sequence
    "megatron": 6 * L * (D * (Q_WIDTH + 2 * H_KV * H_D) + Q_WIDTH * D)
    + 6 * L * D * D_FF * 3
    + 6 * D * V
    + (S * S * 6 * Q_WIDTH // 2 * 2) * L // S,
    # Narayanan et al. 2021 Appendix: full recomputation, the layers 4 times (fwd, recompute fwd, 2× backward),
    # the logit layer 3 times
    "megatron-recompute": 4 * (2 * W + L * S * 2 * Q_WIDTH) + 3 * 2 * D * V,
    # torchtitan get_dense_model_nparams_and_flops: 6·(nparams - nn.Embedding params) + 6·L·H·head_dims·S with
    # head_dims = 2·(dim // n_heads) for llama3; the output projection is an nn.Linear: it stays
    "torchtitan": 6 * (TOTAL - EMBED) + 6 * L * H * (2 * (D // H)) * S,
    # MaxText calculate_tflops_training_per_device, default path, per token: 3·(FFN 2·ffn·d·2 (silu, linear) +
    # 2·ffn·d, QKV 2·d·(h + 2·h_kv)·hd, projection 2·d·h·hd) per layer + 3·2·d·V, + 3·L·4·S·h·hd/2 (causal)
    "maxtext": 3 * (L * (2 * D_FF * D * 2 + 2 * D_FF * D + 2 * D * (H + 2 * H_KV) * H_D + 2 * D * H * H_D) + 2 * D * V)
    + 3 * L * 4 * S * H * H_D // 2,
    # llmcount eager: 3 × (2·W + 2·d·V + L·2·S·(h·d_qk + h·d_v))
    "llmcount": 3 * (2 * W + 2 * D * V + L * 2 * S * 2 * Q_WIDTH),
    # causal: the S(S+1)/2 pairs, (S + 1)·width per token for each of Q·Kᵀ and A·V
    "llmcount-causal": 3 * (2 * W + 2 * D * V + L * (S + 1) * 2 * Q_WIDTH),
}


def test_llama_3_8b_parameters_by_hand_are_the_published_size() -> None:
    assert TOTAL == 8_030_261_248
    assert load("llama-3-8b").counts.total == TOTAL


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_convention_of_llama_3_8b_at_2048_by_hand(name: str) -> None:
    got = {c.name: c.training_flops_per_token for c in conventions(load("llama-3-8b"), S)}
    assert got[name] == EXPECTED[name]


def test_every_convention_has_a_hand_derivation() -> None:
    assert set(CONVENTIONS) == set(EXPECTED)


def test_relations_between_conventions() -> None:
    model = load("llama-3-8b")
    got = {c.name: c.training_flops_per_token for c in conventions(model, S)}
    # PaLM = 6N + 12LHQT with N every parameter, computed by hand above (8,030,261,248)
    assert got["palm"] == 6 * TOTAL + 12 * L * H * H_D * S
    # Kaplan's N leaves out the embedding and the untied head (2·V·d); its attention is a quarter of PaLM's
    # 12·L·H·Q·T (one 2·n_ctx·d_attn, ×3)
    assert got["palm"] - got["kaplan"] == 6 * 2 * EMBED + 12 * L * H * H_D * S - 6 * L * S * Q_WIDTH
    # PaLM minus torchtitan: the input embedding table (6·V·d), which torchtitan leaves out when untied
    assert got["palm"] - got["torchtitan"] == 6 * EMBED
    # recomputation adds exactly one forward pass of the layers (not of the logits)
    assert got["megatron-recompute"] - got["megatron"] == 2 * W + L * S * 2 * Q_WIDTH
    # Megatron's causal core counts S²/2 pairs, llmcount's causal S(S+1)/2: they differ by L·(h·d_qk + h·d_v)·3
    assert got["llmcount-causal"] - got["megatron"] == 3 * L * 2 * Q_WIDTH


def test_ingredients_of_llama_3_8b() -> None:
    x = ingredients(load("llama-3-8b"), S)
    assert (x.non_embedding, x.weights, x.layers, x.qk, x.v, x.heads, x.input_tables) == (
        N_NON_EMBEDDING,
        W,
        L,
        Q_WIDTH,
        Q_WIDTH,
        H,
        EMBED,
    )
    assert x.router == 0 and not x.tied


def test_megatron_pads_the_vocabulary_to_a_multiple_of_128() -> None:
    # GPT-2: vocab_size 50257 -> ceil(50257 / 128)·128 = 393·128 = 50304 (Megatron's own GPT-2 padding)
    assert ingredients(load("gpt2"), 1024).padded_vocab == 50304


def test_torchtitan_keeps_a_tied_embedding() -> None:
    # GPT-2 ties the head: torchtitan's nparams counts the shared table once and does not subtract it
    model = load("gpt2")
    x = ingredients(model, 1024)
    titan = {c.name: c for c in conventions(model, 1024)}["torchtitan"]
    assert x.tied
    assert titan.training_flops_per_token == 6 * model.counts.total + 6 * 12 * 768 * 2 * 1024


def test_conventions_json() -> None:
    result = run("flops", "llama-3-8b", "--seq", "2048", "--conventions", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [c["name"] for c in data["conventions"]] == list(EXPECTED)
    for c in data["conventions"]:
        assert c["training_flops_per_token"] == EXPECTED[c["name"]]
        assert set(c) == {"name", "training_flops_per_token", "formula", "source", "includes", "ratio_to_6nd"}
        assert c["ratio_to_6nd"] == pytest.approx(EXPECTED[c["name"]] / (6 * TOTAL))  # 6ND per token, N = P
        assert c["source"] and c["includes"] and c["formula"]
    sources = " ".join(c["source"] for c in data["conventions"])
    for cited in ("2001.08361", "2203.15556", "2204.02311", "2104.04473", "num_floating_point_operations"):
        assert cited in sources


def test_conventions_text_fits_80_columns_and_cites() -> None:
    result = run("flops", "llama-3-8b", "--seq", "2048", "--conventions")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert f"{EXPECTED['palm']:,}" in result.stdout and "Appendix B" in result.stdout
    assert "get_dense_model_nparams_and_flops" in result.stdout


# --- mfu --------------------------------------------------------------------------------------------------------

PALM_4096 = 6 * TOTAL + 12 * L * H * H_D * 4096  # 54,624,018,432


def test_mfu_by_hand() -> None:
    # 28,000 tokens/s over 8 H100 SXM at 989.5 dense bf16 TFLOP/s each (1,979 with sparsity / 2)
    result = run(
        "mfu", "llama-3-8b", "--seq", "4096", "--tokens-per-second", "28000", "--gpu", "h100-sxm", "--gpus", "8",
        "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    expected = Fraction(28000 * PALM_4096) / (8 * Fraction("989.5") * 10**12)
    assert data["training_flops_per_token"] == PALM_4096
    assert data["mfu_fraction"] == f"{expected.numerator}/{expected.denominator}"
    assert data["mfu"] == pytest.approx(float(expected))
    assert data["achieved_flops_per_second"] == 28000 * PALM_4096


def test_mfu_with_a_given_peak_and_convention() -> None:
    result = run(
        "mfu", "llama-3-8b", "--seq", "2048", "--tokens-per-second", "1000.5", "--peak-tflops", "100",
        "--convention", "torchtitan", "--json",
    )  # fmt: skip
    data = json.loads(result.stdout)
    assert data["mfu_fraction"] == str(Fraction("1000.5") * EXPECTED["torchtitan"] / (100 * 10**12))
    assert data["gpu"] is None and data["gpus"] == 1


def test_mfu_fp8_peak_and_text() -> None:
    result = run("mfu", "llama-3-8b", "--tokens-per-second", "3500", "--gpu", "mi300x", "--dtype", "fp8")
    assert result.exit_code == 0, result.output
    # AMD's datasheet: 2,614.9 dense FP8 TFLOPS
    expected = Fraction(3500 * PALM_4096) / (Fraction("2614.9") * 10**12)
    assert f"{float(100 * expected):.2f}%" in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--gpu", "h100", "--tokens-per-second", "0"], ["--tokens-per-second", "zero"]),
        (["--gpu", "h100", "--tokens-per-second", "-5"], ["--tokens-per-second", "negative"]),
        (["--gpu", "h100", "--tokens-per-second", "fast"], ["--tokens-per-second"]),
        (["--tokens-per-second", "1"], ["--gpu", "--peak-tflops"]),
        (["--gpu", "h100", "--peak-tflops", "900", "--tokens-per-second", "1"], ["--gpu", "--peak-tflops"]),
        (["--gpu", "a100", "--dtype", "fp8", "--tokens-per-second", "1"], ["A100", "fp8"]),
        (["--gpu", "h100", "--dtype", "int4", "--tokens-per-second", "1"], ["--dtype"]),
        (["--gpu", "h100", "--gpus", "0", "--tokens-per-second", "1"], ["--gpus"]),
        (["--gpu", "h100", "--convention", "6n", "--tokens-per-second", "1"], ["--convention", "palm", "megatron"]),
        (["--peak-tflops", "0", "--tokens-per-second", "1"], ["--peak-tflops"]),
    ],
)
def test_mfu_refuses_bad_input(args: list[str], needles: list[str]) -> None:
    code = 2 if {"0", "-5", "fast"} & set(args) else 1  # a number an option does not take: a usage error
    assert_refused(run("mfu", "llama-3-8b", *args), *needles, code=code)


def test_mfu_unknown_gpu_is_a_usage_error() -> None:
    """An unknown --gpu name is a bad option value: exit 2, one line, the closest and the known names."""
    result = run("mfu", "llama-3-8b", "--gpu", "h800", "--tokens-per-second", "1")
    assert result.exit_code == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert all(name in line for name in ("h800", "h100-sxm", "rtx-4090", "mi300x"))


def test_mfu_needs_a_throughput() -> None:
    result = run("mfu", "llama-3-8b", "--gpu", "h100")
    assert result.exit_code == 2 and result.stdout == "" and "--tokens-per-second" in result.stderr


@pytest.mark.parametrize("preset", sorted(presets()))
def test_every_preset_fits_80_columns_or_is_refused_in_one_line(preset: str) -> None:
    for args in (["flops", preset, "--conventions"], ["mfu", preset, "--tokens-per-second", "1", "--gpu", "b200"]):
        result = run(*args)
        if result.exit_code == 1:  # a family whose record has no [attention] section, or layers with a state
            family = read_config(presets()[preset].config(), preset).architecture
            assert_refused(result, "[[state]]" if family.states else "[attention]")
            continue
        assert result.exit_code == 0, result.output
        assert max(len(line) for line in result.stdout.splitlines()) <= 80


def test_moe_conventions_of_qwen3_30b_a3b_by_hand() -> None:
    # Qwen/Qwen3-30B-A3B config.json: 48 layers, hidden 2048, 32 heads of 128, 4 KV heads, 128 experts of
    # moe_intermediate_size 768, 8 per token, vocab 151936, untied
    layers, d, h, h_kv, h_d, n, k, d_moe, vocab = 48, 2048, 32, 4, 128, 128, 8, 768, 151936
    seq = 4096
    attention = d * h * h_d + 2 * d * h_kv * h_d + h * h_d * d
    router = d * n
    experts_per_token = k * 3 * d * d_moe  # k of the n experts, gate/up/down each
    weights = layers * (attention + router + experts_per_token)
    norms = layers * (2 * h_d + 2 * d) + d  # q_norm, k_norm, two RMSNorms per layer; the final norm
    non_embedding = weights + norms
    model = load("qwen3-30b-a3b")
    x = ingredients(model, seq)
    assert (x.weights, x.router, x.non_embedding) == (weights, layers * router, non_embedding)
    got = {c.name: c.training_flops_per_token for c in conventions(model, seq)}
    width = h * h_d  # h·d_qk = h·d_v = 4096
    # Megatron counts the routed experts (topk) and no router GEMM; 151936 = 1187·128 needs no padding
    assert got["megatron"] == 3 * (2 * (weights - layers * router) + layers * seq * 2 * width) + 6 * d * vocab
    # PaLM's N: every activated parameter, the untied embedding and LM head (2·V·d) included
    assert got["palm"] == 6 * (non_embedding + 2 * vocab * d) + 12 * layers * h * h_d * seq
    # torchtitan: activated parameters (router and shared in full, experts k/n) less the embedding table
    assert got["torchtitan"] == 6 * (non_embedding + vocab * d) + 6 * layers * h * 2 * h_d * seq


# Megatron-LM's count of state layers, transcribed from megatron/training/training.py at commit d98e8a64dd:
#   mamba_layer_flops (called by hybrid_flops), per token: 2·d·(2·d_in + 2·G·N + nheads) (in_proj) + 7·d_in·N (scan)
#   + 2·d_in·d (out_proj), d_in = 2·d; gdn_layer_flops, per token: 2·(d·(2·qk_dim + 2·v_dim + 2·h_v) (in_proj)
#   + conv_k·(2·qk_dim + v_dim) + 4·h_v·d_v² (the delta rule) + d·v_dim (out_proj)); the rest as for a transformer:
#   3 × (its layers + 2·d·V_pad), V_pad the vocabulary padded to a multiple of 128; recompute: the layers 4 times.
MAMBA2 = {
    "model_type": "mamba2",
    **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "state_size": 4, "conv_kernel": 3},
    **{"expand": 2, "num_heads": 4, "head_dim": 8, "n_groups": 2, "chunk_size": 4},
}


def megatron_of(config: dict, seq: int = 8) -> tuple[int, int]:
    from llmcount.formulas.config import read_config

    got = {c.name: c.training_flops_per_token for c in conventions(read_config(config, "t"), seq)}
    return got["megatron"], got["megatron-recompute"]


def test_megatron_counts_a_mamba_2_layer_as_mamba_layer_flops() -> None:
    """d = 16, d_in = 2·16 = 32, G = 2 groups, N = 4, 4 heads: in_proj 2·16·(64 + 16 + 4) = 2,688, the scan
    7·32·4 = 896, out_proj 2·32·16 = 1,024: 4,608 per layer, 9,216 for two; logits 2·16·128 = 4,096 (V = 32
    padded). With expand 4 (8 heads of 8) Megatron still takes d_in = 2·d: in_proj 2·16·(64 + 16 + 8) = 2,816,
    4,736 per layer."""
    assert megatron_of(MAMBA2) == (3 * (9_216 + 4_096), 4 * 9_216 + 3 * 4_096)
    assert megatron_of({**MAMBA2, "expand": 4, "num_heads": 8}) == (3 * (9_472 + 4_096), 4 * 9_472 + 3 * 4_096)


def test_megatron_counts_a_gated_deltanet_layer_as_gdn_layer_flops() -> None:
    """Qwen3.5, two layers: layer 0 Gated DeltaNet (2 key heads of 3, 4 value heads of 5, kernel 3), layer 1 full
    attention (4 heads of 4 with the output gate, 2 key/value heads), a gated MLP of 24 in both; d = 16, S = 8.
    GDN: 2·(16·(12 + 40 + 8) + 3·(12 + 20) + 4·4·25 + 16·20) = 2·(960 + 96 + 400 + 320) = 3,552;
    attention: 2·(16·(16 + 16 + 8 + 8) + 16·16) = 2,048 (q, gate, k, v, o) and the causal core 2·8·16 = 256;
    MLPs 2 · 2·3·16·24 = 4,608; logits 4,096. Forward 14,560 per token."""
    config = {
        "model_type": "qwen3_5_text",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "head_dim": 4, "intermediate_size": 24, "full_attention_interval": 2},
        **{"linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 3},
        **{"linear_value_head_dim": 5, "linear_conv_kernel_dim": 3},
    }
    layers = 3_552 + 2_048 + 256 + 4_608
    assert megatron_of(config) == (3 * (layers + 4_096), 4 * layers + 3 * 4_096)


def test_megatron_is_not_given_for_state_layers_it_does_not_count(tmp_path) -> None:
    """Mamba-1 (x_proj, dt_proj) has no Megatron count: the two conventions are left out, named, with the reason."""
    config = {"model_type": "mamba", "vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "state_size": 4}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("flops", str(path), "--seq", "8", "--conventions", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [entry["name"] for entry in data["not_given"]] == ["megatron", "megatron-recompute", "maxtext"]
    reason = data["not_given"][0]["reason"]
    assert "mamba layers" in reason and "mamba_layer_flops" in reason and "d98e8a64dd" in reason
    assert {c["name"] for c in data["conventions"]}.isdisjoint({"megatron", "megatron-recompute"})


def test_a_megatron_layer_formula_is_per_token_and_needs_the_layer_terms() -> None:
    from llmcount.formulas.expressions import RecordError
    from llmcount.formulas.records import _state

    state = {"name": "mamba", "layers": "N", "flops": [], "megatron": {"expr": "2*d", "function": "f", "note": "n"}}
    with pytest.raises(RecordError, match=r"named by its \[\[state.flops\]\]"):
        _state(state, "test")
    op = {"path": "mamba/scan", "expr": "2*B*S*d"}
    with pytest.raises(RecordError, match="without B or S"):
        _state({**state, "flops": [op], "megatron": {"expr": "2*S*d", "function": "f", "note": "n"}}, "test")
    with pytest.raises(RecordError, match="unknown fields"):
        _state({**state, "flops": [op], "megatron": {"expr": "2*d", "source": "f"}}, "test")


def test_sliding_layers_with_widths_of_their_own_sum_over_the_layers(tmp_path) -> None:
    """Gemma 4 as its config class builds it: 30 layers, 25 sliding with 8 heads of 256, 5 full with 8 heads of 512
    (every sixth, per_layer_config). By hand: Σ h·d_qk = Σ h·d_v = 25 · 8 · 256 + 5 · 8 · 512 = 71,680; PaLM's
    attention term at S = 4,096 is 6 · 4,096 · (71,680 + 71,680) FLOPs per token."""
    full = [f"{i:02d}" for i in range(5, 30, 6)]
    config = {
        **{"model_type": "gemma4_text", "num_hidden_layers": 30, "hidden_size": 1536, "intermediate_size": 6144},
        **{"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 262144},
        "layer_types": ["full_attention" if f"{i:02d}" in full else "sliding_attention" for i in range(30)],
        "per_layer_config": {i: {"head_dim": 512} for i in full},
    }
    model = read_config(config, "gemma4")
    x = ingredients(model, 4096)
    assert (x.qk_sum, x.v_sum, x.qk, x.layers) == (71_680, 71_680, None, 30)
    assert x.uneven == "the sliding layers have widths of their own"
    got = {c.name: c.training_flops_per_token for c in conventions(model, 4096)}
    assert got["palm"] - 6 * x.activated == 6 * 4096 * 2 * 71_680
    assert "chinchilla" not in got


def test_the_records_own_operations_are_said_where_they_count(tmp_path) -> None:
    """DeepSeek-V3.2's indexer scores are a record's own [[flops]] operation: llmcount's rows count them (F_ops in the
    formula, their FLOPs in the number: the difference from the same config without an indexer, index_topk past S);
    the papers' conventions and Megatron's do not, and say so."""
    import dataclasses

    from llmcount.formulas.flops import Flops

    config = {
        "model_type": "deepseek_v32",
        **{"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 96, "moe_intermediate_size": 32},
        **{"num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 128, "first_k_dense_replace": 1},
        **{"n_routed_experts": 4, "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1},
        **{"kv_lora_rank": 16, "q_lora_rank": 24, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16},
        **{"index_n_heads": 2, "index_head_dim": 16, "index_topk": 4},
    }
    model = read_config(config, "ds32")
    x = ingredients(model, 32)
    assert x.own_ops == ("attention/indexer.scores",)
    rows = {c.name: c for c in conventions(model, 32)}
    assert rows["llmcount"].formula.endswith("+ F_ops)") and "attention/indexer.scores" in rows["llmcount"].includes
    assert "attention/indexer.scores" in rows["palm"].includes and "not in this convention" in rows["palm"].includes
    # by hand, one sequence of S = 32: in each of the 2 layers the indexer's Q·Kᵀ over 2 heads of 16 (2·S·S·2·16) and
    # the heads' weighting of those scores (2·S·S·2): 2 · 2 · 32 · 32 · 2 · (16 + 1) = 139,264 FLOPs
    counts = Flops(model.derivation).evaluate(model.values, 32, 1)
    assert sum(c.flops for c in counts.components if c.path == "attention/indexer.scores") == 139_264
    without = dataclasses.replace(x, own_ops=())
    assert "F_ops" not in CONVENTIONS["llmcount"](without).formula
