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


# --- Chinchilla, Appendix F, Table A4 --------------------------------------------------------------------------------
# Hoffmann et al. 2022 (arXiv:2203.15556), Table A4: for six model sizes, the ratio of Appendix F's FLOPs per sequence
# to 6ND. The six rows (layers, d_model, ffw_size, heads, kv size) as karpathy/nanoGPT scaling_laws.ipynb (commit
# 0082c4818b) transcribes them, with the ratios the table prints, S = 2048 and Chinchilla's vocabulary of 32,000:
TABLE_A4 = [
    # label, layers, d_model, ffw_size, heads, kv_size, printed ratio
    ("73M", 10, 640, 2560, 10, 64, "1.03"),
    ("305M", 20, 1024, 4096, 16, 64, "1.10"),
    ("552M", 24, 1280, 5120, 10, 128, "1.08"),
    ("1.1B", 26, 1792, 7168, 14, 128, "1.04"),
    ("1.6B", 28, 2048, 8192, 16, 128, "1.03"),
    ("6.8B", 40, 3584, 14336, 28, 128, "0.99"),
]
CHINCHILLA_VOCAB, CHINCHILLA_SEQ = 32000, 2048


def _chinchilla_parameters(layers: int, d: int, ffw: int) -> int:
    """N of the table's 6ND: Chinchilla's parameter count, reconstructed as nanoGPT's chinchilla_params does (its
    reading of Table A9's counts): per layer Q, K, V and the output projection with biases (4·d² + 4·d), the
    Transformer-XL relative-position key projection and its two biases (d² + 2·d), the MLP with biases (2·d·ffw +
    ffw + d), two LayerNorms (4·d); the final LayerNorm (2·d) and the output layer (d·V); the input embedding not
    counted. It differs from the table's rounded column: 73M and 1.1B there give 1.04 and 1.09 (below)."""
    layer = 4 * d * d + 4 * d + d * d + 2 * d + 2 * d * ffw + ffw + d + 4 * d
    return layers * layer + 2 * d + d * CHINCHILLA_VOCAB


def _two_decimals(value: Fraction) -> str:
    hundredths = int(value * 100 + Fraction(1, 2))  # half up, as a table rounds
    return f"{hundredths // 100}.{hundredths % 100:02d}"


def _table_a4_model(layers: int, d: int, ffw: int, heads: int):
    """A config of the row's sizes: GPT-NeoX's dense block (one fused Q/K/V of 3·d·d, an output projection d·d and
    a 2·d·ffw MLP: Appendix F's projections and dense layers; its head size d / heads is the row's kv size)."""
    from llmcount.formulas.config import read_config

    config = {
        "model_type": "gpt_neox",
        **{"num_hidden_layers": layers, "hidden_size": d, "intermediate_size": ffw, "num_attention_heads": heads},
        **{"vocab_size": CHINCHILLA_VOCAB, "max_position_embeddings": CHINCHILLA_SEQ, "rotary_pct": 1.0},
    }
    return read_config(config, f"chinchilla-{layers}x{d}")


def test_chinchilla_table_a4_ratios() -> None:
    from llmcount.formulas.conventions import conventions

    S = CHINCHILLA_SEQ
    for label, layers, d, ffw, heads, kv, printed in TABLE_A4:
        assert d == heads * kv, label
        rows = {c.name: c for c in conventions(_table_a4_model(layers, d, ffw, heads), S)}
        # Appendix F per sequence, by hand, without the embeddings and the final logits: per layer the Q, K, V
        # projections 2·3·S·d·(kv·heads), K·Q logits 2·S²·(kv·heads), softmax 3·heads·S², softmax·V 2·S²·(kv·heads),
        # the output projection 2·S·(kv·heads)·d, the dense block 2·S·2·d·ffw; backward = 2 × forward
        width = kv * heads
        attention = 2 * 3 * S * d * width + 2 * S * S * width + 3 * heads * S * S + 2 * S * S * width
        forward = layers * (attention + 2 * S * width * d + 2 * S * 2 * d * ffw)
        assert rows["chinchilla-table"].training_flops_per_token * S == 3 * forward, label
        n = _chinchilla_parameters(layers, d, ffw)
        ratio = Fraction(3 * forward, 6 * n * S)
        assert _two_decimals(ratio) == printed, (label, float(ratio))
        # Appendix F as written adds 2·S·V·d twice (embeddings, final logits): 1.58 for 73M, not the table's 1.03
        with_logits = rows["chinchilla"].training_flops_per_token * S
        assert with_logits == 3 * (forward + 2 * 2 * S * CHINCHILLA_VOCAB * d), label
    # the table's rounded parameter column as N does not give its ratios: 73M -> 1.04, 1.1B -> 1.09
    first, fourth = TABLE_A4[0], TABLE_A4[3]
    for (label, layers, d, ffw, heads, _kv, _), n, wrong in ((first, 73 * 10**6, "1.04"), (fourth, 11 * 10**8, "1.09")):
        per_token = {c.name: c for c in conventions(_table_a4_model(layers, d, ffw, heads), S)}
        assert _two_decimals(Fraction(per_token["chinchilla-table"].training_flops_per_token, 6 * n)) == wrong, label


def test_chinchilla_as_written_gives_1_58_for_the_73m_row() -> None:
    from llmcount.formulas.conventions import conventions

    _label, layers, d, ffw, heads, _, _ = TABLE_A4[0]
    rows = {c.name: c for c in conventions(_table_a4_model(layers, d, ffw, heads), CHINCHILLA_SEQ)}
    n = _chinchilla_parameters(layers, d, ffw)
    assert _two_decimals(Fraction(rows["chinchilla"].training_flops_per_token, 6 * n)) == "1.58"


# --- Korthikanti et al. 2022, Table 2 --------------------------------------------------------------------------------
# Reducing Activation Recomputation in Large Transformer Models (arXiv:2205.05198), Table 2: activation bytes per
# transformer layer, s sequence, b micro-batch, h hidden size, a heads, t tensor-parallel size. The preset gpt3-175b
# is GPT-3 175B's sizes (Brown et al. 2020, Table 2.1: 96 layers, d_model 12,288, 96 heads, context 2,048) in a GPT-2
# config; t = 8 is the tensor-parallel size Korthikanti et al. train it with.
def _table_2(s: int, b: int, h: int, a: int, t: int) -> dict[str, Fraction]:
    sbh = Fraction(s * b * h)
    return {
        "korthikanti": sbh * (34 + Fraction(5 * a * s, h)),  # no parallelism
        "korthikanti-tp": sbh * (10 + Fraction(24, t) + Fraction(5 * a * s, h * t)),  # tensor parallel (baseline)
        "korthikanti-tp-sp": sbh / t * (34 + Fraction(5 * a * s, h)),  # tensor + sequence parallel
        "korthikanti-tp-selective": sbh * (10 + Fraction(24, t)),  # tensor parallel + selective recomputation
        "korthikanti-tp-sp-selective": sbh * Fraction(34, t),  # tensor + sequence parallel + selective
        "korthikanti-full": 2 * sbh,  # full activation recomputation
    }


def test_korthikanti_table_2_for_gpt_3_175b_by_hand() -> None:
    from llmcount.formulas.activation_conventions import korthikanti

    # GPT-3 175B: sbh = 2048 · 12288 = 25,165,824 and 5as/h = 5 · 96 · 2048 / 12288 = 80, so per layer
    # sbh·114 without parallelism, sbh·(10 + 3 + 10) with t = 8, sbh/8·114 with sequence parallelism, sbh·13 and
    # sbh·34/8 with selective recomputation, 2·sbh with full recomputation
    sbh = 2048 * 12288
    by_hand = {
        "korthikanti": sbh * 114,
        "korthikanti-tp": sbh * 23,
        "korthikanti-tp-sp": sbh * 114 // 8,
        "korthikanti-tp-selective": sbh * 13,
        "korthikanti-tp-sp-selective": sbh * 34 // 8,
        "korthikanti-full": 2 * sbh,
    }
    assert by_hand == _table_2(2048, 1, 12288, 96, 8)
    rows = korthikanti(2048, 1, 12288, 96, 8, sequence_parallel=True)
    assert {r.name: r.bytes_per_layer for r in rows} == by_hand
    assert [r.name for r in rows if r.matches] == ["korthikanti-tp-sp"]
    # MT-NLG 530B (a = 128, h = 20,480, s = 2,048, t = 8): 5as/h = 64
    assert {r.name: r.bytes_per_layer for r in korthikanti(2048, 1, 20480, 128, 8)} == _table_2(2048, 1, 20480, 128, 8)
    assert _table_2(2048, 1, 20480, 128, 8)["korthikanti"] == 2048 * 20480 * (34 + 64)
    # the rows chosen by the options
    chosen = {
        ("none", 1, False): "korthikanti",
        ("none", 8, False): "korthikanti-tp",
        ("selective", 8, False): "korthikanti-tp-selective",
        ("selective", 8, True): "korthikanti-tp-sp-selective",
        ("full", 8, True): "korthikanti-full",
    }
    for (recompute, t, sp), name in chosen.items():
        picked = [r.name for r in korthikanti(2048, 1, 12288, 96, t, sp, recompute) if r.matches]
        assert picked == [name], (recompute, t, sp)


def test_memory_training_conventions_of_gpt3_175b() -> None:
    result = run(
        "memory", "gpt3-175b", "--training", "--tp", "8", "--sequence-parallel", "--conventions", "--seq", "2048",
        "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)["activation_conventions"]
    expected = _table_2(2048, 1, 12288, 96, 8)
    assert {r["name"]: r["bytes_per_layer"] for r in data["rows"]} == expected
    assert all("Table 2" in r["source"] and "2205.05198" in r["source"] for r in data["rows"])
    exact = data["llmcount_bytes_per_layer"]
    # llmcount's exact GPT-2-code figure is below Korthikanti's with dropout off (no masks, no dropout outputs)
    assert 0 < exact < expected["korthikanti-tp-sp"]
    for term in ("dropout", "GELU", "statistics", "fp32"):
        assert term in data["differences"]
    text = run("memory", "gpt3-175b", "--training", "--tp", "8", "--sequence-parallel", "--conventions").stdout
    assert "korthikanti-tp-sp" in text and max(len(line) for line in text.splitlines()) <= 80


def test_memory_conventions_llmcount_row_is_the_layers_own_figure() -> None:
    data = json.loads(run("memory", "gpt2", "--training", "--conventions", "--seq", "1024", "--json").stdout)
    layer = data["per_layer_kind"][0]["bytes_per_layer"]  # one GPU, no parallelism: the whole layer
    assert data["activation_conventions"]["llmcount_bytes_per_layer"] == layer


def test_memory_conventions_needs_training() -> None:
    result = run("memory", "gpt2", "--conventions")
    assert result.exit_code == 2 and "--conventions needs --training" in result.output


# --- docs/papers.md: each figure, our command and our number, from the data above ------------------------------------
PAGE = "docs/papers.md"
PALM_MFU = "mfu palm-540b --seq 2048 --tokens-per-second 238300 --gpus 6144 --peak-tflops 275 --convention palm --json"
GPT3_MEMORY = "memory gpt3-175b --training --attention eager --tp 8 --sequence-parallel --conventions --seq 2048 --json"


def _cli_json(command: str) -> dict:
    result = run(*command.split())
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _command(command: str) -> str:
    return "`llmcount " + command.removesuffix(" --json") + "`"


def _rows() -> list[tuple[str, str, str, str]]:
    """(figure, as printed, our command, our number) for every figure this module reproduces."""
    from llmcount.formulas.conventions import conventions

    rows = []
    palm = _cli_json(PALM_MFU)
    rows.append(("PaLM, Appendix B: PaLM 540B's MFU", "46.2%", _command(PALM_MFU), f"{100 * palm['mfu']:.2f}%"))
    total = load("palm-540b").counts.total
    rows.append(
        (
            "PaLM, Table 1: PaLM 540B's parameters",
            "540.35B",
            _command("count palm-540b"),
            f"{total:,} (PaLM's one norm per layer: {total - PALM_NORM_DIFFERENCE:,})",
        )
    )
    for label, layers, d, ffw, heads, _, printed in TABLE_A4:
        per_token = {c.name: c for c in conventions(_table_a4_model(layers, d, ffw, heads), CHINCHILLA_SEQ)}
        flops = per_token["chinchilla-table"].training_flops_per_token
        n = _chinchilla_parameters(layers, d, ffw)
        config = f"gpt_neox L={layers} d={d} d_ff={ffw} h={heads} V=32000"
        rows.append(
            (
                f"Chinchilla, Table A4: {label}, FLOPs / 6ND",
                printed,
                f"`llmcount flops CONFIG --seq 2048 --conventions` ({config}), chinchilla-table ÷ 6·{n:,}",
                _two_decimals(Fraction(flops, 6 * n)),
            )
        )
    memory = _cli_json(GPT3_MEMORY)["activation_conventions"]
    for row in memory["rows"]:
        rows.append(
            (
                f"Korthikanti et al., Table 2: GPT-3 175B, t = 8, {row['name']}",
                row["formula"].split(":")[0],
                _command(GPT3_MEMORY),
                f"{row['bytes_per_layer']:,} bytes per layer",
            )
        )
    rows.append(
        (
            "llmcount's exact figure for the same layer (transformers' GPT-2 code, dropout off)",
            "",
            _command(GPT3_MEMORY),
            f"{memory['llmcount_bytes_per_layer']:,} bytes per layer",
        )
    )
    return rows


def page() -> str:
    lines = [
        "# Reproducing the papers",
        "",
        "Each published figure llmcount reproduces, the command that gives it and the number it gives. The page is",
        "generated from tests/test_papers.py (`PYTHONPATH=. python tests/test_papers.py` writes it; a test checks",
        "it is current), where each figure is asserted against the paper's printed value, with its section and",
        "table and the reconstruction used where a paper does not state a full config:",
        "",
        "- PaLM 540B: the preset `palm-540b`, a Llama-type config of Table 1's sizes (multi-query attention, SwiGLU,",
        "  tied embedding, no biases); it has two RMSNorm scales per layer where PaLM's parallel block has one",
        "  LayerNorm (118 × 18,432 parameters more). The `palm` convention's N is every parameter (Appendix B).",
        "- Chinchilla Table A4: the six rows as karpathy/nanoGPT `scaling_laws.ipynb` transcribes them, GPT-NeoX",
        "  configs of those sizes (a fused Q/K/V, an output projection and a 2·d·d_ff MLP: Appendix F's dense block),",
        "  the `chinchilla-table` convention (Appendix F without the embedding and final-logit matmuls), and N the",
        "  models' parameter counts as nanoGPT reconstructs them (Transformer-XL relative attention, biases,",
        "  LayerNorms, the output layer; not the input embedding). The table's rounded column (73M, 1.1B) as N gives",
        "  1.04 and 1.09 on two rows; Appendix F as written (`chinchilla`) gives 1.58 for the 73M row.",
        "- Korthikanti et al. 2022 Table 2: its formulas for GPT-3 175B's sizes (s = 2,048, b = 1, h = 12,288, a = 96,",
        "  t = 8), beside llmcount's exact figure for the preset `gpt3-175b` (GPT-2 code); `memory --training",
        "  --conventions` names the terms that differ (dropout masks, GELU's implementation, norm statistics, fp32).",
        "",
        "| figure | as printed | command | llmcount |",
        "|---|---|---|---|",
    ]
    lines += [f"| {figure} | {printed} | {command} | {ours} |" for figure, printed, command, ours in _rows()]
    return "\n".join(lines) + "\n"


def test_the_docs_page_is_current() -> None:
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / PAGE
    assert path.read_text("utf-8") == page(), f"{PAGE} is stale: run PYTHONPATH=. python tests/test_papers.py"


if __name__ == "__main__":
    from pathlib import Path

    target = Path(__file__).resolve().parent.parent / PAGE
    temporary = target.with_suffix(".md.tmp")
    temporary.write_text(page(), "utf-8")
    temporary.replace(target)


def test_gpt3_175b_reconstruction_by_hand() -> None:
    """GPT-3 175B (Brown et al. 2020, Table 2.1) as a GPT-2 config: per layer Q, K, V and the projection with biases
    (4·d² + 4·d), the MLP of 4·d with biases (8·d² + 5·d), two LayerNorms (4·d); the tied embedding (V·d), the
    2,048 learned positions, the final LayerNorm. 174,604,259,328: Table 2.1's 175.0B rounds more than this."""
    L, d, V, positions = 96, 12288, 50257, 2048
    total = L * (12 * d * d + 13 * d) + V * d + positions * d + 2 * d
    assert total == 174_604_259_328
    assert load("gpt3-175b").counts.total == total


def test_paper_presets_have_no_hub_checkpoint_to_verify() -> None:
    result = run("verify", "palm-540b", "--hub")
    assert result.exit_code == 1 and "no checkpoint on the Hub" in result.output


def test_mt_nlg_530b_reconstruction_by_hand() -> None:
    """MT-NLG 530B (Smith et al. 2022, arXiv:2201.11990: 105 layers, hidden 20,480, 128 heads, sequence 2,048) as a
    GPT-2 config with GPT-2's vocabulary: 529,581,506,560, the paper's 530B; Korthikanti's 5as/h for it is 64."""
    L, d, V, positions = 105, 20480, 50257, 2048
    total = L * (12 * d * d + 13 * d) + V * d + positions * d + 2 * d
    assert total == 529_581_506_560 and round(total, -9) == 530 * 10**9
    assert load("mt-nlg-530b").counts.total == total
    data = json.loads(run("memory", "mt-nlg-530b", "--training", "--tp", "8", "--conventions", "--seq", "2048",
                          "--json").stdout)["activation_conventions"]  # fmt: skip
    assert {r["name"]: r["bytes_per_layer"] for r in data["rows"]} == _table_2(2048, 1, 20480, 128, 8)
