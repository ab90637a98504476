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
# Chinchilla 70B (main text, Table 4): 80 layers, 64 heads of key/value size 128, d_model 8192; ffw_size 4·d_model
CHINCHILLA_70B = ("70B", 80, 8192, 32768, 64, 128)


def _preset(label: str) -> str:
    """The preset of a Table A4 row (or of Chinchilla 70B): chinchilla-73m, ..., chinchilla-70b."""
    return f"chinchilla-{label.lower()}"


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


def _neox_tied_parameters(layers: int, d: int, ffw: int) -> int:
    """The presets' own count, by hand: GPT-NeoX per layer the fused Q/K/V and output projection with biases
    (4·d² + 4·d), the MLP with biases (2·d·ffw + ffw + d), two LayerNorms (4·d); the final LayerNorm (2·d) and one
    shared V·d embedding (rotary positions have no parameters)."""
    return layers * (4 * d * d + 4 * d + 2 * d * ffw + ffw + d + 4 * d) + 2 * d + CHINCHILLA_VOCAB * d


def test_chinchilla_presets_give_table_a4s_ratios() -> None:
    """``flops chinchilla-73m --seq 2048 --conventions``: both Chinchilla rows, each over 6·N·D with N the paper's
    (nanoGPT's reconstruction of Table A9's counts, the preset's six_nd_parameters), for all six rows."""
    for label, layers, d, ffw, _heads, _kv, printed in TABLE_A4:
        name = _preset(label)
        assert load(name).counts.total == _neox_tied_parameters(layers, d, ffw), name
        data = _cli_json(f"flops {name} --seq 2048 --conventions --json")
        n = _chinchilla_parameters(layers, d, ffw)
        assert data["paper_6nd"]["N"] == n, name
        # the preset's parameters differ from the paper's N by the relative-position projection and biases only
        assert n - load(name).counts.total == layers * (d * d + 2 * d), name
        rows = {r["name"]: r for r in data["conventions"]}
        assert _two_decimals(Fraction(rows["chinchilla-table"]["ratio_to_paper_6nd_fraction"])) == printed, name
        text = run("flops", name, "--seq", "2048", "--conventions").stdout
        table = {line.split()[0]: line.split()[-1] for line in text.splitlines()[3:12]}
        assert table["chinchilla-table"] == printed, (name, text)
    first = _cli_json("flops chinchilla-73m --seq 2048 --conventions --json")
    rows = {r["name"]: r for r in first["conventions"]}
    assert _two_decimals(Fraction(rows["chinchilla"]["ratio_to_paper_6nd_fraction"])) == "1.58"  # as written


def test_chinchilla_70b_preset() -> None:
    """Chinchilla 70B (Table 4): nanoGPT's reconstruction counts 70,065,209,344, the paper's "70B"; the GPT-NeoX
    preset is 80·(8192² + 2·8192) below it (the relative-position key projection and its biases)."""
    _label, layers, d, ffw, heads, kv = CHINCHILLA_70B
    assert d == heads * kv
    n = _chinchilla_parameters(layers, d, ffw)
    assert n == 70_065_209_344 and round(n, -9) == 70 * 10**9
    total = load(_preset("70b")).counts.total
    assert total == _neox_tied_parameters(layers, d, ffw) == n - layers * (d * d + 2 * d)
    data = _cli_json("flops chinchilla-70b --seq 2048 --conventions --json")
    assert data["paper_6nd"]["N"] == n
    # Appendix F without embeddings and logits, by hand: per layer 2·S·(3·d² + d²) projections, 4·S²·d for the
    # logits and values, 3·h·S² softmax, 2·S·2·d·ffw dense; training 3×, per token ÷ S
    S = CHINCHILLA_SEQ
    forward = layers * (2 * S * 4 * d * d + 4 * S * S * d + 3 * heads * S * S + 2 * S * 2 * d * ffw)
    rows = {r["name"]: r for r in data["conventions"]}
    assert rows["chinchilla-table"]["training_flops_per_token"] * S == 3 * forward


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


# Section 5 (selective activation recomputation): with the attention's 5as/h term recomputed, a layer keeps sbh·34
# instead of sbh·(34 + 5as/h): "70%" less activation memory for GPT-3 (5as/h = 80) and "65%" for MT-NLG (5as/h = 64),
# as the paper prints them. Through memory --training --conventions on the presets, one GPU (t = 1).
SELECTIVE_SAVINGS = [("gpt3-175b", "GPT-3 175B", "70%"), ("mt-nlg-530b", "MT-NLG 530B", "65%")]


def _selective_saving(preset: str) -> Fraction:
    command = f"memory {preset} --training --conventions --seq 2048 --recompute selective --json"
    rows = {r["name"]: r for r in _cli_json(command)["activation_conventions"]["rows"]}
    assert rows["korthikanti-tp-selective"]["matches_options"]  # t = 1: sbh·(10 + 24)
    return 1 - Fraction(rows["korthikanti-tp-selective"]["bytes_per_layer"], rows["korthikanti"]["bytes_per_layer"])


def test_korthikanti_section_5_selective_recomputation_saves_70_and_65_percent() -> None:
    for preset, _model, printed in SELECTIVE_SAVINGS:
        saving = _selective_saving(preset)
        # by hand: 1 - 34/(34 + 5as/h), 5as/h = 5·96·2048/12288 = 80 (GPT-3), 5·128·2048/20480 = 64 (MT-NLG)
        assert saving == {"gpt3-175b": Fraction(80, 114), "mt-nlg-530b": Fraction(64, 98)}[preset]
        assert f"{round(100 * saving)}%" == printed, (preset, float(saving))


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


# --- Megatron-LM, megatron/training/theoretical_memory_usage.py ---------------------------------------------------
# report_theoretical_memory at commit d98e8a64dd, run on the args below (outside the tests: the module alone, its
# .utils stubbed with is_hybrid_model -> False), printed "Theoretical memory footprints: weight and optimizer=... MB,
# activation=... MB, total=... MB". The first is Megatron's own example, examples/gpt3/train_gpt3_175b_distributed.sh
# (96 layers, hidden 12288, 96 heads, seq 2048, micro-batch 1, TP 8, PP 16; Megatron's defaults: LayerNorm, a GELU MLP
# of 4h, a tied embedding, GPT-2's vocabulary padded to 51,200, no distributed optimizer, no sequence parallelism);
# the second the same model with TP 8, DP 8, the distributed optimizer (6 + 12/DP bytes per parameter, docs/user-
# guide/features/dist_optimizer.md), sequence parallelism and selective recomputation; the third Llama-3-8B's sizes
# (32 layers, 4096 hidden, 32 heads, 8 query groups, SwiGLU of 14336, RMSNorm, untied, vocabulary 128,256) at seq 8192
# over DP 8 with the distributed optimizer.
MEGATRON_PRINTED = [
    ("memory gpt3-175b --training --conventions --seq 2048 --tp 8 --pp 16", ("24683.09", "31853.06", "56536.15")),
    (
        "memory gpt3-175b --training --conventions --seq 2048 --tp 8 --dp 8 --zero 1 --sequence-parallel "
        "--recompute selective",
        ("156116.43", "9857.00", "165973.43"),
    ),
    ("memory llama-3-8b --training --conventions --seq 8192 --dp 8 --zero 1", ("57436.90", "38761.87", "96198.77")),
]


def test_megatron_theoretical_memory_as_megatron_prints_it() -> None:
    for command, printed in MEGATRON_PRINTED:
        data = _cli_json(command + " --json")["megatron_memory"]
        mb = 1024 * 1024
        ours = tuple(
            f"{float(Fraction(data[key]) / mb):.2f}"
            for key in ("weight_and_optimizer_bytes", "activation_bytes", "total_bytes")
        )
        assert ours == printed, command


def test_megatron_example_by_hand() -> None:
    """The GPT-3 example's figures from Megatron's formula, written out: the first of 16 stages holds 96/16 layers of
    12·d² TP-split weights and the V_pad·d embedding over TP 8, and 96/16 layers of two LayerNorms (4·d) plus the
    final one (2·d) replicated, 18 bytes each; activations sbh·(10 + 24/8) per layer over 96 layers, the embedding's
    input (8·s·b·pp) and dropout (s·b·h·pp), × 1.05 (no output-layer term at PP > 1)."""
    d, L, V_pad, s, pp, tp = 12288, 96, 51200, 2048, 16, 8
    weights = (Fraction(L * 12 * d * d, pp) + V_pad * d) / tp + Fraction(L * 4 * d + 2 * d, pp)
    activations = (s * d * (10 + Fraction(24, tp)) * L + 8 * s * pp + s * d * pp) * Fraction(105, 100)
    data = _cli_json(MEGATRON_PRINTED[0][0] + " --json")["megatron_memory"]
    assert Fraction(data["weight_and_optimizer_bytes"]) == 18 * weights
    assert Fraction(data["activation_bytes"]) == activations
    assert data["activation_function"] == "compute_activation_memory_without_sp"
    assert data["left_out"][0]["path"] == "embedding/wpe"  # GPT-2's learned positions: not in Megatron's count
    # the distributed optimizer's 6 + 12/DP bytes per parameter (dist_optimizer.md: bf16 parameters, fp32 gradients)
    sharded = _cli_json(MEGATRON_PRINTED[1][0] + " --json")["megatron_memory"]
    unsharded = _cli_json(MEGATRON_PRINTED[1][0].replace(" --zero 1", "") + " --json")["megatron_memory"]
    ratio = Fraction(sharded["weight_and_optimizer_bytes"]) / Fraction(unsharded["weight_and_optimizer_bytes"])
    assert ratio == Fraction(6 + Fraction(12, 8), 18)


def test_megatron_memory_refuses_what_its_dense_formula_does_not_describe() -> None:
    for preset, words in (("mixtral-8x7b", "moe"), ("qwen3-next-80b-a3b", "state layers")):
        data = _cli_json(f"memory {preset} --training --conventions --seq 1024 --json")["megatron_memory"]
        assert words in data["not_given"], data
    text = run("memory", "gpt3-175b", "--training", "--conventions", "--tp", "8", "--pp", "16").stdout
    assert "Megatron-LM's theoretical memory" in text and max(len(line) for line in text.splitlines()) <= 80


def _megatron_deepseek_v3(seq: int, mtp: int = 0) -> int:
    """Megatron-LM's num_floating_point_operations (megatron/training/training.py, commit d98e8a64dd) for DeepSeek-V3
    per token at S = seq (BSHD), written out: 61 layers, the first 3 dense (MLP 18,432) and 58 MoE (8 of 256 experts
    of 2,048 and one shared of 2,048), SwiGLU (3 matrices), MLA with q_lora_rank 1,536, kv_lora_rank 512, 128 heads,
    qk_head_dim 128, qk_pos_emb_head_dim 64, v_head_dim 128, d = 7,168, vocabulary 129,280 (a multiple of 128); MLA's
    q and kv terms carry "+ 1" for their latent norms. ``mtp`` MTP layers: MoE layers (the last layer is MoE), their
    norms and projection (3·d + 2·d²), one more logit layer."""
    d, h, r_q, r_kv, d_nope, d_rope, d_v, vocab = 7168, 128, 1536, 512, 128, 64, 128, 129280
    dense, moe = 3, 58 + mtp
    layers = 61 + mtp
    mlp = d * (18432 * 3 * dense + (2048 * 8 * 3 + 2048 * 3) * moe)
    q_term = r_q * (d + h * (d_nope + d_rope) + 1)
    attention = q_term + r_kv * (d + h * (d_nope + d_v) + 1) + d * d_rope + h * d_v * d
    core = h * (d_nope + d_rope) // 2 + h * d_v // 2  # per pair, "/2 for the causal mask"
    extra = mtp * (3 * d + 2 * d * d)
    return 6 * (mlp + layers * attention + extra + d * vocab * (mtp + 1)) + 6 * layers * core * seq


def test_megatron_flops_count_mla_latent_norms() -> None:
    """DeepSeek-V3 at S = 4096: Megatron's count includes 6·61·(1,536 + 512) = 749,568 FLOPs per token for MLA's q and
    kv latent norms (the record's megatron_weight terms)."""
    data = _cli_json("flops deepseek-v3 --seq 4096 --conventions --json")
    rows = {r["name"]: r for r in data["conventions"]}
    assert rows["megatron"]["training_flops_per_token"] == _megatron_deepseek_v3(4096)
    assert "P_norm" in rows["megatron"]["formula"] and "latent norms" in rows["megatron"]["includes"]
    assert 6 * 61 * (1536 + 512) == 749_568


def test_megatron_flops_with_one_mtp_layer() -> None:
    """``flops deepseek-v3 --conventions --mtp 1``: Megatron's mtp_num_layers = 1 (DeepSeek-V3 trains with one MTP
    layer): one more MoE layer, 3·d + 2·d² of norms and projection, one more logit layer; +4.1% on the megatron row."""
    plain = {r["name"]: r for r in _cli_json("flops deepseek-v3 --seq 4096 --conventions --json")["conventions"]}
    data = _cli_json("flops deepseek-v3 --seq 4096 --conventions --mtp 1 --json")
    rows = {r["name"]: r for r in data["conventions"]}
    assert rows["megatron"]["training_flops_per_token"] == _megatron_deepseek_v3(4096, mtp=1)
    ratio = Fraction(rows["megatron"]["training_flops_per_token"], plain["megatron"]["training_flops_per_token"])
    assert f"{float(ratio - 1):.1%}" == "4.1%"
    assert rows["llmcount"]["training_flops_per_token"] == plain["llmcount"]["training_flops_per_token"]
    assert "MTP layer(s) of --mtp not counted" in rows["llmcount"]["includes"]
    refused = run("flops", "llama-3-8b", "--conventions", "--mtp", "1")
    assert refused.exit_code == 1 and "no multi-token-prediction layers" in refused.stderr
    assert run("flops", "deepseek-v3", "--mtp", "1").exit_code != 0


# --- DeepSpeed's ZeRO estimators --------------------------------------------------------------------------------------
# docs/code-docs/source/memory.rst (microsoft/DeepSpeed, commit 38327e07f6) prints what
# estimate_zero{2,3}_model_states_mem_needs_all_cold print for total_params=2851e6 (t5-3b), largest_layer_params=32e6,
# 8 GPUs on 1 node: "per CPU | per GPU | Options", GB of 2**30 bytes.
DEEPSPEED_ZERO3_PRINTED = [
    ("offload_param=cpu, offload_optimizer=cpu, zero_init=1", "71.69", "0.12"),
    ("offload_param=cpu, offload_optimizer=cpu, zero_init=0", "127.45", "0.12"),
    ("offload_param=none, offload_optimizer=cpu, zero_init=1", "63.72", "0.78"),
    ("offload_param=none, offload_optimizer=cpu, zero_init=0", "127.45", "0.78"),
    ("offload_param=none, offload_optimizer=none, zero_init=1", "1.43", "6.09"),
    ("offload_param=none, offload_optimizer=none, zero_init=0", "127.45", "6.09"),
]
DEEPSPEED_ZERO2_PRINTED = [("offload_optimizer=cpu", "127.45", "5.31"), ("offload_optimizer=none", "127.45", "15.93")]


def test_deepspeed_estimators_print_the_docs_figures() -> None:
    from llmcount.formulas.deepspeed_memory import estimates

    rows = estimates(2_851_000_000, 32_000_000, gpus_per_node=8, nodes=1)
    got = {(r.stage, r.options): (f"{r.cpu / 2**30:.2f}", f"{r.gpu / 2**30:.2f}") for r in rows}
    for options, cpu, gpu in DEEPSPEED_ZERO3_PRINTED:
        assert got[(3, options)] == (cpu, gpu), options
    assert got[(2, "offload_optimizer=cpu")] == DEEPSPEED_ZERO2_PRINTED[0][1:]
    # ZeRO-2 without offload: the code at this commit gives 2·P + int(18·P/8) = 11.28GB; the docs' 15.93GB is the
    # formula they state, 4·P + 16·P/G (by hand: 4·2851e6 + 16·2851e6/8 = 17,106,000,000 bytes)
    assert got[(2, "offload_optimizer=none")] == ("127.45", "11.28")
    assert f"{(4 * 2_851_000_000 + 16 * 2_851_000_000 // 8) / 2**30:.2f}" == DEEPSPEED_ZERO2_PRINTED[1][2]


def test_deepspeed_rows_of_memory_training_conventions() -> None:
    """GPT-2 over 8 GPUs: P = 124,439,808 (tied), the largest module wte (50,257 · 768 = 38,597,376); ZeRO-3 without
    offload per GPU 4·38,597,376 + int(18·P/8), ZeRO-2 without offload 2·P + int(18·P/8)."""
    data = _cli_json("memory gpt2 --training --conventions --dp 8 --json")["deepspeed_memory"]
    P, largest = 124_439_808, 50257 * 768
    assert data["total_params"] == P and data["largest_layer"] == {"path": "embedding/wte", "params": largest}
    rows = {(r["stage"], r["options"]): r for r in data["rows"]}
    assert (
        rows[(3, "offload_param=none, offload_optimizer=none, zero_init=1")]["gpu_bytes"] == 4 * largest + 18 * P // 8
    )
    assert rows[(2, "offload_optimizer=none")]["gpu_bytes"] == 2 * P + 18 * P // 8
    assert rows[(2, "offload_optimizer=cpu")]["cpu_bytes"] == P * 32 * 3 // 2  # max(4·8, 16) · 1.5
    assert "deepspeed/runtime/zero/stage3.py" in data["source"]


# --- MaxText, src/maxtext/utils/maxtext_utils.py calculate_tflops_training_per_device (commit e591f30cbb) ------------
def _maxtext_per_token(L: int, d: int, mlp: int, activations: int, h: int, h_kv: int, hd: int, V: int, S: int) -> int:
    """Its default (dense) path written out, per token (it computes per device and step, B·S tokens): 3 × (the FFN,
    2·S·mlp·d per entry of mlp_activations plus 2·S·mlp·d; QKV 2·S·d·(h + 2·h_kv)·hd; the projection 2·S·d·h·hd;
    the unembedding 2·S·d·V) + 3 × L × causal attention (4·S²·h·hd / 2)."""
    ffn = 2 * S * mlp * d * activations + 2 * S * mlp * d
    qkv, projection, embedding = 2 * S * d * (h + 2 * h_kv) * hd, 2 * S * d * h * hd, 2 * S * d * V
    attention = 4 * S * S * h * hd // 2
    return (3 * ((ffn + qkv + projection) * L + embedding) + 3 * attention * L) // S


def test_maxtext_default_path() -> None:
    # Llama-3-8B (mlp_activations ["silu", "linear"]) at S = 8192; GPT-2 (["gelu"]) at S = 1024, V unpadded
    for command, expected in (
        ("flops llama-3-8b --seq 8192", _maxtext_per_token(32, 4096, 14336, 2, 32, 8, 128, 128256, 8192)),
        ("flops gpt2 --seq 1024", _maxtext_per_token(12, 768, 3072, 1, 12, 12, 64, 50257, 1024)),
    ):
        rows = {r["name"]: r for r in _cli_json(command + " --conventions --json")["conventions"]}
        assert rows["maxtext"]["training_flops_per_token"] == expected, command
        assert "e591f30cbb" in rows["maxtext"]["source"]
    skipped = {r["name"]: r["reason"] for r in _cli_json("flops deepseek-v3 --conventions --json")["not_given"]}
    assert "MoE layers" in skipped["maxtext"] and "MLA" in skipped["maxtext"]


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
    for label, *_, printed in TABLE_A4:
        command = f"flops {_preset(label)} --seq 2048 --conventions --json"
        data = _cli_json(command)
        ratios = {r["name"]: Fraction(r["ratio_to_paper_6nd_fraction"]) for r in data["conventions"]}
        rows.append(
            (
                f"Chinchilla, Table A4: {label}, FLOPs / 6ND",
                printed,
                _command(command),
                f"chinchilla-table {_two_decimals(ratios['chinchilla-table'])} "
                f"(chinchilla, as written: {_two_decimals(ratios['chinchilla'])}), N = {data['paper_6nd']['N']:,}",
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
    labels = ("its GPT-3 175B example, TP 8, PP 16", "GPT-3 175B, TP 8, DP 8, distributed optimizer, SP, selective",
              "Llama-3-8B's sizes, S = 8192, DP 8, distributed optimizer")  # fmt: skip
    for (command, printed), label in zip(MEGATRON_PRINTED, labels, strict=True):
        data = _cli_json(command + " --json")["megatron_memory"]
        mb = 1024 * 1024
        rows.append(
            (
                f"Megatron-LM report_theoretical_memory, {label}: weight and optimizer / activation / total",
                " / ".join(f"{v} MB" for v in printed),
                _command(command),
                " / ".join(
                    f"{float(Fraction(data[k]) / mb):.2f} MB"
                    for k in ("weight_and_optimizer_bytes", "activation_bytes", "total_bytes")
                ),
            )
        )
    from llmcount.formulas.deepspeed_memory import estimates

    cold = {(r.stage, r.options): r for r in estimates(2_851_000_000, 32_000_000, 8, 1)}
    for stage, printed_rows in ((2, DEEPSPEED_ZERO2_PRINTED), (3, DEEPSPEED_ZERO3_PRINTED)):
        for options, cpu, gpu in printed_rows:
            r = cold[(stage, options)]
            note = (
                " (the docs' 4·P + 16·P/G; the code: 2·P + 18·P/G)"
                if (stage, options) == (2, "offload_optimizer=none")
                else ""
            )
            rows.append(
                (
                    f"DeepSpeed memory.rst, ZeRO-{stage} all_cold (2851M params, 32M largest layer, 8 GPUs): {options}",
                    f"{cpu}GB per CPU, {gpu}GB per GPU",
                    "`llmcount.formulas.deepspeed_memory.estimates(2_851_000_000, 32_000_000, 8, 1)`",
                    f"{r.cpu / 2**30:.2f}GB, {r.gpu / 2**30:.2f}GB{note}",
                )
            )
    maxtext_llama = _maxtext_per_token(32, 4096, 14336, 2, 32, 8, 128, 128256, 8192)
    for command, printed in (("flops llama-3-8b --seq 8192 --conventions --json", maxtext_llama),):
        rows_ = {r["name"]: r for r in _cli_json(command)["conventions"]}
        rows.append(
            (
                "MaxText calculate_tflops_training_per_device (e591f30cbb), default path: Llama-3-8B, S = 8192",
                f"{printed:,} (its formula, written out)",
                _command(command),
                f"{rows_['maxtext']['training_flops_per_token']:,} FLOPs per token",
            )
        )
    for mtp in (0, 1):
        command = "flops deepseek-v3 --seq 4096 --conventions" + (" --mtp 1" if mtp else "") + " --json"
        rows_ = {r["name"]: r for r in _cli_json(command)["conventions"]}
        rows.append(
            (
                "Megatron-LM num_floating_point_operations (d98e8a64dd): DeepSeek-V3, S = 4096"
                + (", one MTP layer" if mtp else " (MLA's latent norms included)"),
                f"{_megatron_deepseek_v3(4096, mtp):,} (its formula, written out)",
                _command(command),
                f"{rows_['megatron']['training_flops_per_token']:,} FLOPs per token",
            )
        )
    for preset, model, printed in SELECTIVE_SAVINGS:
        command = f"memory {preset} --training --conventions --seq 2048 --recompute selective --json"
        rows.append(
            (
                f"Korthikanti et al., Section 5: {model}, selective recomputation's saving (t = 1)",
                printed,
                _command(command),
                f"{100 * float(_selective_saving(preset)):.1f}% (1 − korthikanti-tp-selective / korthikanti)",
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
        "- Chinchilla Table A4: the six rows as karpathy/nanoGPT `scaling_laws.ipynb` transcribes them, as presets",
        "  `chinchilla-73m` ... `chinchilla-6.8b` (and `chinchilla-70b`, Table 4): GPT-NeoX configs of those sizes (a",
        "  fused Q/K/V, an output projection and a 2·d·d_ff MLP: Appendix F's dense block; one shared embedding), the",
        "  `chinchilla-table` convention (Appendix F without the embedding and final-logit matmuls), and N the",
        "  models' parameter counts as nanoGPT reconstructs them (Transformer-XL relative attention, biases,",
        "  LayerNorms, the output layer; not the input embedding), the column / 6N'D of `flops --conventions`. The",
        "  presets have L·(d² + 2d) parameters fewer than that N: transformers has no Transformer-XL relative",
        "  attention. The table's rounded column (73M, 1.1B) as N gives 1.04 and 1.09 on two rows; Appendix F as",
        "  written (`chinchilla`) gives 1.58 for the 73M row.",
        "- Korthikanti et al. 2022 Table 2: its formulas for GPT-3 175B's sizes (s = 2,048, b = 1, h = 12,288, a = 96,",
        "  t = 8), beside llmcount's exact figure for the preset `gpt3-175b` (GPT-2 code); `memory --training",
        "  --conventions` names the terms that differ (dropout masks, GELU's implementation, norm statistics, fp32).",
        "  Section 5's savings of selective recomputation (70% for GPT-3, 65% for MT-NLG 530B) are 1 − 34/(34 + 5as/h)",
        "  on one GPU, from the rows of the presets `gpt3-175b` and `mt-nlg-530b` (GPT-2 configs of their sizes).",
        "- Megatron-LM's `report_theoretical_memory` (megatron/training/theoretical_memory_usage.py, commit",
        "  d98e8a64dd), as its own code printed it on its GPT-3 175B example (TP 8, PP 16), with the distributed",
        "  optimizer and sequence parallelism, and on Llama-3-8B's sizes: the `megatron` part of `memory --training",
        "  --conventions`, its parameter count (no biases, no position table, the padded vocabulary) named beside",
        "  ours.",
        "- DeepSpeed's `estimate_zero2/3_model_states_mem_needs` (commit 38327e07f6): the tables its docs print for",
        "  2851M parameters, 32M largest layer, 8 GPUs; `memory --training --conventions` gives them for the model's",
        "  own P and largest module. Its ZeRO-2 row without offload is 2·P + 18·P/G in the code, 4·P + 16·P/G in the",
        "  docs (15.93GB there, 11.28GB by the code).",
        "- MaxText's `calculate_tflops_training_per_device` (commit e591f30cbb), its default dense path, as the",
        "  `maxtext` row of `flops --conventions` (MoE, MLA, hybrid and per-block paths not given, by name);",
        "  torchtitan's row is `get_dense_model_nparams_and_flops` (commit b5bcd76c66).",
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
