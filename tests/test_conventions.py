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

from llmcount.formulas import records
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
    # Chowdhery et al. 2022 App. B: 6N + 12·L·H·Q·T
    "palm": 6 * N_NON_EMBEDDING + 12 * L * H * H_D * S,
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
    # PaLM = 6N + 12LHQT with N the non-embedding count computed by hand above
    assert got["palm"] == 6 * N_NON_EMBEDDING + 12 * L * H * H_D * S
    # PaLM and Kaplan share 6N; Kaplan's attention is a quarter of PaLM's 12·L·H·Q·T (one 2·n_ctx·d_attn, ×3)
    assert got["palm"] - got["kaplan"] == 12 * L * H * H_D * S - 6 * L * S * Q_WIDTH
    # torchtitan minus PaLM: the untied LM head (6·V·d); both count the norms' parameters
    assert got["torchtitan"] - got["palm"] == 6 * EMBED
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
        assert set(c) == {"name", "training_flops_per_token", "formula", "source", "includes"}
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

PALM_4096 = 6 * N_NON_EMBEDDING + 12 * L * H * H_D * 4096  # 48,319,979,520


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
        (["--gpu", "h800", "--tokens-per-second", "1"], ["h800", "h100-sxm", "rtx-4090", "mi300x"]),
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
    assert_refused(run("mfu", "llama-3-8b", *args), *needles)


def test_mfu_needs_a_throughput() -> None:
    result = run("mfu", "llama-3-8b", "--gpu", "h100")
    assert result.exit_code == 2 and result.stdout == "" and "--tokens-per-second" in result.stderr


@pytest.mark.parametrize("preset", sorted(presets()))
def test_every_preset_fits_80_columns_or_is_refused_in_one_line(preset: str) -> None:
    for args in (["flops", preset, "--conventions"], ["mfu", preset, "--tokens-per-second", "1", "--gpu", "b200"]):
        result = run(*args)
        if result.exit_code == 1:  # a family whose record has no [attention] section, or layers with a state
            family = records.family(presets()[preset].config()["model_type"])
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
    assert got["palm"] == 6 * non_embedding + 12 * layers * h * h_d * seq
    # torchtitan: activated parameters (router and shared in full, experts k/n) less the embedding table
    assert got["torchtitan"] == 6 * (non_embedding + vocab * d) + 6 * layers * h * 2 * h_d * seq
