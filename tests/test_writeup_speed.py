"""The roofline speed in the write-up's memory section (llmcount.roofline on an H100 SXM): the figures derived by
hand here, the formula from sympy, English and Chinese, and the default post without it."""

from __future__ import annotations

from fractions import Fraction

import pytest

from llmcount.renderers.writeup import build

# NVIDIA H100 datasheet (llmcount.gpus): H100 SXM, 3.35 TB/s, 989.5 TFLOPS dense bf16
BANDWIDTH = 3_350 * 10**9


def test_llama_3_8b_decode_bound_by_hand():
    """Llama-3-8B in bf16, one sequence at S = 4,096: a decode step reads every weight but the untied embedding
    table (looked up at one row: not counted): 2 · (8,030,261,248 − 128,256 · 4,096) = 15,009,849,344 bytes, plus
    the KV cache of 32 layers · 8 KV heads · 128 · 2 (K, V) · 2 bytes · 4,096 tokens = 536,870,912 bytes. Its
    FLOPs (about 2 · 7.5·10^9 per token) take 15 µs at the peak, far below the 4.6 ms the bytes take: memory-bound,
    3.35·10^12 / 15,546,720,256 = 215.5 tokens/s."""
    read = 2 * (8_030_261_248 - 128_256 * 4_096) + 32 * 8 * 128 * 2 * 2 * 4_096
    assert read == 15_546_720_256
    post = build("llama-3-8b", sections="memory")
    assert "**215** tokens/s for one sequence (memory-bound: a step reads 15.55 GB" in post.text
    roofline = post.data["memory"]["roofline"]
    assert roofline["gpu"] == "H100 SXM"
    assert roofline["decode_tokens_per_second"] == pytest.approx(float(Fraction(BANDWIDTH, read)), rel=1e-12)
    assert r"t_{\mathrm{dec}} = \max\left(\frac{M_{\mathrm{dec}}}{\mathrm{BW}}" in post.text


def test_moe_experts_touched_in_the_prose():
    """Qwen3-30B-A3B: 128 experts, 8 a token; 64 tokens routed uniformly leave an expert untouched with probability
    (1 − 8/128)^64, so 128 · (1 − (15/16)^64) = 126.4 experts a layer are read on average."""
    expected = 128 * (1 - Fraction(15, 16) ** 64)
    assert f"{float(expected):.3g}" == "126"
    post = build("qwen3-30b-a3b", sections="memory")
    assert "64 tokens touch 126 of the 128 experts of a layer on average" in post.text
    zh = build("qwen3-30b-a3b", sections="memory", lang="zh")
    assert "64 个 token 平均用到每层 128 个专家中的 126 个" in zh.text


def test_latex_and_the_default_post():
    tex = build("llama-3-8b", "latex", sections="memory")
    assert r"\textbf{215} tokens/s" in tex.text and r"\max\left(" in tex.text
    default = build("llama-3-8b")
    assert "roofline" not in default.text and "roofline" not in default.data.get("memory", {})
