"""The papers' own printed figures, reproduced by llmcount's commands: each test asserts the number the paper prints
(not ours), with the paper's section and table, and says which reconstruction of the model it uses where the paper
does not state a full config. ``PUBLISHED`` is the data of docs/papers.md ("Reproducing the papers"), which
``test_the_docs_page_is_current`` keeps in step."""

from __future__ import annotations

import json
from fractions import Fraction

from refusal import run

from llmcount.sources import load

# --- PaLM, Appendix B ------------------------------------------------------------------------------------------------
# Chowdhery et al. 2022 (arXiv:2204.02311), Table 1: PaLM 540B, 118 layers, d_model 18432, 48 heads of d_head 256,
# 540.35B parameters; section 2: SwiGLU (d_ff = 4·d_model = 73,728), parallel layers, multi-query attention (one key
# and value head), RoPE, shared input-output embeddings, no biases, a 256k SentencePiece vocabulary.
# Appendix B: MFU with 6N + 12LHQT FLOPs per token, N the model's parameters; PaLM 540B trains at 238.3K tokens/s on
# 6144 TPU v4 chips of 275 peak bf16 TFLOP/s, sequence length 2048: "46.2%" model FLOPs utilisation.
# The preset palm-540b is a Llama-type reconstruction (LlamaForCausalLM, tie_word_embeddings, one KV head): it has
# two RMSNorm scales per layer where PaLM's parallel block has one LayerNorm, 118 · 18,432 = 2,174,976 more.
PALM_L, PALM_D, PALM_H, PALM_HD, PALM_FF, PALM_V = 118, 18432, 48, 256, 73728, 256000
PALM_LAYER = (
    PALM_D * PALM_H * PALM_HD  # q
    + 2 * PALM_D * PALM_HD  # k, v: one head (multi-query)
    + PALM_H * PALM_HD * PALM_D  # o
    + 3 * PALM_D * PALM_FF  # SwiGLU: gate, up, down
    + 2 * PALM_D  # the reconstruction's two RMSNorm scales (PaLM: one LayerNorm)
)
PALM_TOTAL = PALM_L * PALM_LAYER + PALM_V * PALM_D + PALM_D  # tied embedding once, the final norm: 540,358,649,856
PALM_NORM_DIFFERENCE = PALM_L * PALM_D  # 2,174,976: the second norm per layer PaLM's parallel block has not


def test_palm_540b_parameters_are_table_1s_540_35b() -> None:
    assert PALM_TOTAL == 540_358_649_856
    assert load("palm-540b").counts.total == PALM_TOTAL
    # Table 1 prints 540.35B: both the reconstruction and PaLM's own block (one norm fewer per layer) read so
    for total in (PALM_TOTAL, PALM_TOTAL - PALM_NORM_DIFFERENCE):
        assert total // 10**7 == 54_035


def test_palm_appendix_b_mfu_is_46_2_percent() -> None:
    result = run(
        "mfu", "palm-540b", "--seq", "2048", "--tokens-per-second", "238300", "--gpus", "6144", "--peak-tflops", "275",
        "--convention", "palm", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # by hand: 6N + 12·L·H·Q·T with N = every parameter, T = 2048
    flops = 6 * PALM_TOTAL + 12 * PALM_L * PALM_H * PALM_HD * 2048
    assert data["training_flops_per_token"] == flops
    assert Fraction(data["mfu_fraction"]) == Fraction(238300 * flops, 6144 * 275 * 10**12)
    assert f"{100 * data['mfu']:.1f}%" == "46.2%"  # Appendix B's printed figure
    text = run(
        "mfu", "palm-540b", "--seq", "2048", "--tokens-per-second", "238300", "--gpus", "6144", "--peak-tflops", "275",
    ).stdout  # fmt: skip
    assert "46.23%" in text  # palm is the default convention
