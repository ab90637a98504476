"""``speed``: the roofline's bounds derived by hand for a dense and a MoE model from their published configs, the
expected-experts formula against an exhaustive count and a seeded simulation of uniform routing, the GPU table, and
bad input."""

from __future__ import annotations

import itertools
import json
import random
from fractions import Fraction

import pytest
from refusal import assert_refused, assert_usage, run

from llmcount import gpus, roofline
from llmcount.cli.speed import _weights
from llmcount.sources import load

H100_BANDWIDTH = 3350 * 10**9  # bytes/s, NVIDIA H100 SXM datasheet: 3.35 TB/s
H100_BF16 = Fraction("989.5") * 10**12  # FLOP/s, datasheet 1,979 with sparsity / 2


def speed(model: str, batches: list[int], seq: int = 4096, tp: int = 1, **options) -> roofline.Roofline:
    m, weights, kv, compute = _weights(model, options.get("quant"), None, options.get("dtype"), None)
    return roofline.roofline(m, weights, gpus.gpu("h100"), batches, seq, kv, compute, tp, options.get("mfu"))


# --- Llama-3-8B (dense), by hand -------------------------------------------------------------------------------------
# config.json: hidden_size d = 4096, num_hidden_layers N = 32, num_attention_heads h = 32, num_key_value_heads
# h_kv = 8, head_dim h_d = 128, intermediate_size d_ff = 14336, vocab_size V = 128256, untied head.
D, N, H, HKV, HD, DFF, V = 4096, 32, 32, 8, 128, 14336, 128256
LAYER_MATMULS = D * H * HD + 2 * D * HKV * HD + H * HD * D + 3 * D * DFF  # q, k, v, o; gate, up, down
LAYER_NORMS = 2 * D
TABLE = V * D  # the token embedding; the untied head is another V·d
# 6,979,584,000 in the layers + final norm + head + embedding = 8,030,261,248, Meta's published count
assert N * (LAYER_MATMULS + LAYER_NORMS) + D + 2 * TABLE == 8_030_261_248
DENSE_READ = 2 * (N * (LAYER_MATMULS + LAYER_NORMS) + D + TABLE)  # bf16; the embedding table is only looked up
KV_PER_TOKEN = 2 * N * HKV * HD * 2  # keys and values, every layer, bf16: 131,072 bytes


def test_dense_decode_by_hand() -> None:
    r = speed("llama-3-8b", [1, 64])
    assert r.weights.dense == DENSE_READ == 15_009_849_344
    assert r.weights.lookup == 2 * TABLE and r.weights.routed == 0 and r.moe is None
    for step in r.decode:
        b = step.batch
        cache = b * 4096 * KV_PER_TOKEN  # B sequences of S = 4,096 tokens
        assert step.cache_bytes == cache
        assert step.bytes == DENSE_READ + cache
        assert step.memory_seconds == Fraction(DENSE_READ + cache, H100_BANDWIDTH)
        # one token: 2 FLOPs per matmul weight, the head, QK^T and AV over the S cached keys in every layer
        per_token = 2 * N * LAYER_MATMULS + 2 * TABLE + N * 2 * (2 * 4096 * H * HD)
        assert step.flops == b * per_token
        assert step.compute_seconds == Fraction(b * per_token) / H100_BF16
        assert step.bound == "memory"
    # B = 1: 15,546,720,256 bytes over 3.35 TB/s: at most 215.5 tokens/s
    assert round(float(1 / r.decode[0].seconds), 1) == 215.5


def test_dense_prefill_by_hand() -> None:
    r = speed("llama-3-8b", [1, 8], mfu=Fraction(2, 5))
    for pre in r.prefill:
        b, s = pre.batch, 4096
        pairs = s * (s + 1) // 2  # causal query-key pairs per sequence
        flops = b * s * 2 * N * LAYER_MATMULS + b * N * 2 * (2 * pairs * H * HD) + b * 2 * TABLE  # head: last only
        assert pre.flops == flops
        assert pre.compute_seconds == Fraction(flops) / H100_BF16
        assert r.prefill_at_mfu(pre) == Fraction(flops) / H100_BF16 / Fraction(2, 5)
        assert pre.bound == "compute"
    assert r.prefill[0].flops == 61_574_775_570_432


def test_tensor_parallel_divides_time_and_says_communication_is_left_out() -> None:
    one, four = speed("llama-3-8b", [8]), speed("llama-3-8b", [8], tp=4)
    assert four.decode[0].seconds == one.decode[0].seconds / 4
    assert four.prefill[0].seconds == one.prefill[0].seconds / 4
    assert any("communication left out" in note for note in four.notes)


# --- Qwen3-30B-A3B (MoE), by hand ------------------------------------------------------------------------------------
# config.json: d = 2048, N = 48, h = 32, h_kv = 4, h_d = 128, num_experts n = 128, num_experts_per_tok k = 8,
# moe_intermediate_size d_moe = 768, V = 151936, untied head, no shared expert.
QD, QN, QH, QHKV, QHD, QE, QK, QDM, QV = 2048, 48, 32, 4, 128, 128, 8, 768, 151936
ROUTED = 2 * QN * QE * 3 * QD * QDM  # bf16 bytes of every expert's gate, up and down: 57,982,058,496
Q_LAYER = QD * QH * QHD * 2 + 2 * QD * QHKV * QHD + 2 * QHD + QD * QE + 2 * QD  # attention, q/k norms, router, norms
Q_DENSE = 2 * (QN * Q_LAYER + QD + QV * QD)  # + final norm + head; the embedding only looked up


def test_moe_decode_reads_the_experts_touched() -> None:
    r = speed("qwen3-30b-a3b", [1, 8, 64])
    assert r.moe == (QE, QK)
    assert (r.weights.routed, r.weights.dense) == (ROUTED, Q_DENSE) == (57_982_058_496, 2_459_856_896)
    for step in r.decode:
        b = step.batch
        untouched = Fraction(QE - QK, QE) ** b  # one expert missed by all B tokens, uniform routing
        assert step.experts == QE * (1 - untouched)
        cache = b * 4096 * 2 * QN * QHKV * QHD * 2
        assert step.bytes == Q_DENSE + (1 - untouched) * ROUTED + cache
        assert step.memory_seconds == step.bytes / H100_BANDWIDTH
    assert r.decode[0].experts == 8  # one token reads its k experts
    # B = 1: 2,459,856,896 + 57,982,058,496 / 16 + 402,653,184 bytes = 6,486,388,736: 516 tokens/s at most
    assert r.decode[0].bytes == 6_486_388_736 and int(1 / r.decode[0].seconds) == 516


def test_moe_prefill_touches_every_expert() -> None:
    r = speed("qwen3-30b-a3b", [1])
    assert r.prefill[0].experts == QE  # 4,096 tokens: (15/16)^4096 < 10^-30, every expert is read
    assert r.prefill[0].weights_bytes == Q_DENSE + ROUTED


def test_mxfp4_experts_as_stored() -> None:
    # gpt-oss-120b's config quantises its experts with MXFP4: 4 bits per weight and one E8M0 byte per 32 weights;
    # 36 layers of 128 experts of 3 · 2880 · 2880 weights = 114,661,785,600: 57,330,892,800 + 3,583,180,800 bytes,
    # and the experts' biases 128 · (2880 + 2 · 2880) · 36 in bf16 = 79,626,240 bytes; 4 experts per token
    r = speed("gpt-oss-120b", [1])
    weights = 114_661_785_600
    assert r.weights.routed == weights // 2 + weights // 32 + 2 * 128 * 8640 * 36
    assert r.moe == (128, 4) and r.decode[0].experts == 4


def test_expected_experts_exhaustive() -> None:
    # n = 6 experts, k = 2 per token, B = 3 tokens: every choice of each token's 2 experts, equally likely
    n, k, b = 6, 2, 3
    choices = list(itertools.combinations(range(n), k))
    counts = [len(set().union(*picks)) for picks in itertools.product(choices, repeat=b)]
    assert Fraction(sum(counts), len(counts)) == roofline.expected_experts(n, k, b)


@pytest.mark.parametrize(("n", "k", "b"), [(16, 2, 1), (16, 2, 8), (64, 4, 16), (128, 8, 64)])
def test_expected_experts_against_a_simulation(n: int, k: int, b: int) -> None:
    rng = random.Random(n * 1000 + b)
    trials = 2000
    seen = [len({e for _ in range(b) for e in rng.sample(range(n), k)}) for _ in range(trials)]
    mean = sum(seen) / trials
    spread = (sum((x - mean) ** 2 for x in seen) / (trials - 1)) ** 0.5
    expected = float(roofline.expected_experts(n, k, b))
    assert abs(mean - expected) <= 4 * spread / trials**0.5 + 1e-9, (mean, expected)


def test_expected_experts_edges() -> None:
    assert roofline.expected_experts(8, 8, 3) == 8
    assert roofline.touched(256, 1, 10**9) == 1  # (255/256)^T far below 10^-30
    with pytest.raises(Exception, match="routing"):
        roofline.touched(8, 9, 1)


# --- the command ------------------------------------------------------------------------------------------------------


def test_command_text_says_it_is_an_upper_bound() -> None:
    result = run("speed", "qwen3-30b-a3b", "--gpu", "h100", "--batch", "1,8,64", "--seq", "4k", "--mfu", "0.4")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "upper bound" in out and "uniform" in out and "GiB" in out and " GB " in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_command_json_and_formula() -> None:
    result = run("speed", "llama-3-8b", "--gpu", "h100", "--tp", "2", "--json", "--formula")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["tp"] == 2 and data["decode"][0]["kv_cache_bytes_read"] == 4096 * KV_PER_TOKEN
    assert data["weights"]["read_every_step_bytes"] == DENSE_READ
    assert any("communication left out" in note for note in data["notes"])
    names = [f["name"] for f in data["formulas"]]
    assert any(name.startswith("decode step") for name in names)
    kv = next(f for f in data["formulas"] if f["name"].startswith("KV cache"))
    assert kv["text"] == "4·B·N·S·h_d·h_kv"  # K and V, 2 bytes each, per layer, head and token


def test_gguf_file_type_bytes_are_memorys() -> None:
    result = run("speed", "qwen3-8b", "--gpu", "rtx-4090", "--quant", "q4_k_m", "--json")
    memory = json.loads(run("memory", "qwen3-8b", "--quant", "q4_k_m", "--json").stdout)
    data = json.loads(result.stdout)
    assert data["weights"]["bytes"] == memory["weights_bytes"] and data["kv_dtype"] == "fp16"


def test_apple_has_bandwidth_but_no_peak() -> None:
    data = json.loads(run("speed", "llama-3-8b", "--gpu", "m4-max", "--json").stdout)
    assert data["peak_tflops"] is None and data["decode"][0]["bound"] == "memory"
    assert data["decode"][0]["memory_seconds"] == pytest.approx((DENSE_READ + 4096 * KV_PER_TOKEN) / 546e9)
    assert_refused(run("mfu", "llama-3-8b", "--gpu", "m4-max", "--tokens-per-second", "1"), "--peak-tflops")


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--gpu", "h100", "--batch", "0"], ["--batch", "zero"]),
        (["--gpu", "h100", "--batch", "1,-8"], ["--batch", "negative"]),
        (["--gpu", "h100", "--batch", "1,8,1000000"], ["--batch", "65,536"]),
        (["--gpu", "h100", "--batch", ",".join(["1"] * 17)], ["--batch", "at most 16"]),
        (["--gpu", "h100", "--seq", "0"], ["--seq", "zero"]),
        (["--gpu", "h100", "--seq", "-4k"], ["--seq", "negative"]),
        (["--gpu", "h100", "--seq", "1000000000"], ["--seq", "16,777,216"]),
        (["--gpu", "h100", "--mfu", "0"], ["--mfu"]),
        (["--gpu", "h100", "--mfu", "1.5"], ["--mfu", "(0, 1]"]),
        (["--gpu", "h100", "--mfu", "40"], ["--mfu", "(0, 1]"]),
        (["--gpu", "h100", "--mfu", "x"], ["--mfu"]),
        (["--gpu", "h100", "--tp", "0"], ["--tp"]),
        (["--gpu", "h100", "--tp", "4096"], ["--tp"]),
        (["--gpu", "h100", "--quant", "bogus"], ["--quant", "bogus"]),
        (["--gpu", "h100", "--kv-dtype", "fp7"], ["fp7"]),
    ],
)
def test_bad_input_is_one_line(args: list[str], needles: list[str]) -> None:
    # a number an option does not take is a usage error (2); a name missing from a table is bad input (1)
    code = 1 if args[-2] in ("--gpu", "--quant", "--kv-dtype") else 2
    assert_refused(run("speed", "llama-3-8b", *args), *needles, code=code)


# --- the GPU table ----------------------------------------------------------------------------------------------------


def test_every_gpu_has_its_figures_and_source() -> None:
    for card in gpus.GPUS.values():
        assert card.source and card.memory_gb > 0 and card.bandwidth_gbs > 0
        assert card.bf16 is None or card.bf16 > 0
        assert card.fp8 is None or (card.bf16 is not None and card.fp8 >= card.bf16)
        assert card.title.split(" (")[0].removeprefix("Apple ").split(" SXM")[0] in gpus.__doc__, card.title


def test_names_and_aliases() -> None:
    assert gpus.gpu("H100").name == "h100-sxm" and gpus.gpu("NVIDIA RTX 5090").name == "rtx-5090"
    assert gpus.gpu("apple m3 ultra").memory_gb == 512 and gpus.gpu("mi355x").bandwidth_gbs == 8000
    assert {"b300", "gb200"} <= set(gpus.closest("gb300"))
    assert gpus.closest("zzzz") == []


def test_unknown_model_still_fails_cleanly() -> None:
    with pytest.raises(Exception):  # noqa: B017 - the library raises LlmcountError, the CLI turns it into one line
        load("no-such-preset-xyz")


def test_a_setup_that_does_not_fit_is_said_so() -> None:
    # Llama-3.1-70B in bf16: 70,553,706,496 parameters = 141.1 GB of weights, above one H100's 80 GB
    out = run("speed", "llama-3.1-70b", "--gpu", "h100").stdout
    assert "does not fit" in out and "80 GB" in out
    assert "does not fit" not in run("speed", "llama-3.1-70b", "--gpu", "h100", "--tp", "4").stdout


@pytest.mark.parametrize("preset", ["llama-3-8b", "gpt-oss-20b", "qwen3-30b-a3b"])
def test_the_formulas_shown_give_the_numbers(preset: str) -> None:
    from llmcount.formulas.symbols import B, S

    model, weights, kv, _ = _weights(preset, None, None, None, None)
    shown = dict(roofline.formulas(model, weights, kv))
    for seq, batch in ((100, 1), (5000, 3)):
        env = {**model.values, S: seq, B: batch}
        assert shown["prefill FLOPs  F_pre"].subs(env) == roofline.prefill_flops(model, seq, batch)
        assert shown["decode FLOPs per token  F_tok"].subs(env) == roofline.decode_flops_per_token(model, seq)
        assert shown["KV cache read  M_KV"].subs(env) == roofline.cache_bytes(model, kv, seq, batch)


def test_a_gguf_file_is_read_as_stored(tmp_path) -> None:
    import gguf
    from gguf_build import write_gguf

    config = dict(
        model_type="qwen3_moe",
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        vocab_size=1000,
        max_position_embeddings=512,
        pad_token_id=0,
        head_dim=16,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
    )
    path = tmp_path / "Tiny-Q8_0.gguf"
    written = write_gguf(config, "qwen3moe", path, ("Q8_0",), file_type=gguf.LlamaFileType.MOSTLY_Q8_0)
    result = run("speed", str(path), "--gpu", "h100", "--batch", "1,3", "--seq", "100", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    weights = data["weights"]
    assert weights["bytes"] == sum(b for _, _, b in written.values())
    # 2 layers of three stacked expert matrices of 4 experts x 64 x 32 in Q8_0: 34 bytes per 32 values
    assert weights["routed_experts_bytes"] == 2 * 3 * 4 * 64 * 32 // 32 * 34
    assert weights["looked_up_bytes"] == written["token_embd.weight"][2]  # untied: the table is only looked up
    # B = 3 tokens, 2 of 4 experts each: 1 - (1/2)^3 = 7/8 of the experts' bytes
    step = data["decode"][1]
    cache = 3 * 100 * 2 * 2 * 2 * 16 * 2  # B·S tokens, K and V, 2 layers, 2 KV heads of 16, f16
    assert step["kv_cache_bytes_read"] == cache
    assert step["bytes_read"] == pytest.approx(
        weights["read_every_step_bytes"] + weights["routed_experts_bytes"] * 7 / 8 + cache
    )
    assert_refused(run("speed", str(path), "--gpu", "h100", "--quant", "q4_k_m"), "GGUF")


def test_speed_imports_no_optional_dependency() -> None:
    from test_lazy_cli import HEAVY, imported

    code, modules = imported("speed", "qwen3-30b-a3b", "--gpu", "h100", "--batch", "1,8")
    assert code == 0 and "llmcount.cli.speed" in modules
    assert not [m for m in modules if m.split(".")[0] in HEAVY], modules
    code, modules = imported("speed", "--help")
    assert code == 0 and "sympy" not in modules, modules


# --- speed --engine: the KV cache a decode step reads as the engine stores it, by hand --------------------------------
# A step at context S reads, per sequence and attention layer, cdiv(S, block) whole blocks of the engine's bytes of
# one token (docs/engines.md): vLLM blocks of 16 tokens, TensorRT-LLM 32, LMDeploy 64; S = 5,000.


def _engine_decode(*args: str) -> dict:
    result = run("speed", "llama-3-8b", "--gpu", "h100", "--batch", "1,8", "--seq", "5000", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_engine_vllm_reads_whole_blocks() -> None:
    """vLLM: 313 blocks of 16 = 5,008 tokens, 8 heads of 128, K and V in bf16: 4,096 bytes a token a layer."""
    data = _engine_decode("--engine", "vllm")
    for step, batch in zip(data["decode"], (1, 8), strict=True):
        assert step["kv_cache_bytes_read"] == batch * N * 5_008 * HKV * HD * 2 * 2
        assert step["memory_seconds"] == pytest.approx((DENSE_READ + step["kv_cache_bytes_read"]) / 3350e9)
    assert any("vLLM 0.33.0 stores it" in note and "blocks of 16" in note for note in data["notes"])


def test_engine_lmdeploy_int8_reads_its_scales() -> None:
    """LMDeploy int8 (quant_policy 8): a block of a layer is K (64, 8, 128) int8 = 65,536 bytes and its scales and
    zeros (64, 8, 2) in bf16 = 2,048, the same for V, each a multiple of 256: 135,168 bytes; cdiv(5,000, 64) = 79
    blocks."""
    data = _engine_decode("--engine", "lmdeploy", "--kv-dtype", "int8")
    assert data["decode"][1]["kv_cache_bytes_read"] == 8 * N * 79 * 2 * (65_536 + 2_048)


def test_engine_tensorrt_llm_under_tp() -> None:
    """TensorRT-LLM at tp = 2: 4 heads a rank, 2,048 bytes a token a layer, 157 blocks of 32 = 5,024 tokens, on both
    GPUs."""
    data = _engine_decode("--engine", "trtllm", "--tp", "2")
    assert data["decode"][0]["kv_cache_bytes_read"] == 2 * N * 5_024 * 4 * HD * 2 * 2


def _read(name: str, *args: str) -> int:
    result = run("speed", name, "--gpu", "h100", "--seq", "5000", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["decode"][0]["kv_cache_bytes_read"]


def test_engine_vllm_sliding_reads_the_window_blocks() -> None:
    """Gemma-2-2B under vLLM, S = 5,000: 4 KV heads of 256, K and V in bf16, 4,096 bytes a token a layer. The 13 full
    layers read cdiv(5,000, 16) = 313 blocks (5,008 tokens); the 13 sliding layers (W = 4,096) the blocks of the
    W − 1 = 4,095 tokens before the new one, positions 905 to 4,999: blocks 56 to 312, 257 blocks (4,112 tokens)."""
    assert 905 // 16 == 56 and 4999 // 16 == 312
    assert _read("gemma-2-2b", "--engine", "vllm") == 13 * 5_008 * 4_096 + 13 * 4_112 * 4_096


def test_engine_vllm_chunked_reads_the_chunk() -> None:
    """Llama-4-Scout under vLLM: 12 full and 36 chunked layers (chunk 8,192), 8 KV heads of 128: 4,096 bytes a token
    a layer. At S = 5,000 the chunk holds all the tokens: every layer reads 313 blocks; at S = 10,000 a chunked layer
    reads the blocks of positions 8,192 to 9,999 (blocks 512 to 624: 113), a full one 625."""
    assert _read("llama-4-scout", "--engine", "vllm") == 48 * 5_008 * 4_096
    result = run("speed", "llama-4-scout", "--gpu", "h100", "--seq", "10000", "--json", "--engine", "vllm")
    assert json.loads(result.stdout)["decode"][0]["kv_cache_bytes_read"] == (12 * 625 + 36 * 113) * 16 * 4_096


def test_engine_hybrid_reads_the_states() -> None:
    """Qwen3-Next-80B-A3B, S = 5,000: 12 full attention layers (2 KV heads of 256: 2,048 bytes a token a layer in bf16)
    and 36 Gated DeltaNet layers, whose states a step reads once per sequence: conv (2 · 16 · 128 + 32 · 128) ·
    (4 − 1) = 24,576 elements, delta-rule state 32 · 128 · 128 = 524,288.
    vLLM: both in bf16 (1,097,728 bytes), attention blocks of 544 tokens (the hybrid alignment): cdiv(5,000, 544) = 10.
    SGLang: conv in bf16, temporal in fp32 (2,146,304 bytes), pages of 1 token.
    llama.cpp: an r row of 24,576 and an s row of 524,288 elements in F32 (2,195,456 bytes); the attention layers view
    n_kv = pad(5,001, 256) = 5,120 cells."""
    assert _read("qwen3-next-80b-a3b", "--engine", "vllm") == 12 * 5_440 * 2_048 + 36 * (24_576 + 524_288) * 2
    assert _read("qwen3-next-80b-a3b", "--engine", "sglang") == 12 * 5_000 * 2_048 + 36 * (24_576 * 2 + 524_288 * 4)
    assert _read("qwen3-next-80b-a3b", "--engine", "llama.cpp") == 12 * 5_120 * 2_048 + 36 * (24_576 + 524_288) * 4


def test_engine_llama_cpp_reads_n_kv_cells() -> None:
    """llama.cpp, Llama-3-8B in f16: a cell of a layer is a K and a V row of 8 · 128 elements, 4,096 bytes. S = 5,000:
    the stream has pad(5,000, 256) = 5,120 cells and a step views n_kv = min(5,120, pad(5,001, 256)) = 5,120 of them;
    S = 4,000: 4,096 cells, n_kv = 4,096. q8_0: 34 bytes a 32 elements, 2 · 8 · 128 / 32 · 34 = 2,176 a cell."""
    assert _read("llama-3-8b", "--engine", "llama.cpp") == 32 * 5_120 * 4_096
    assert _read("llama-3-8b", "--engine", "llama.cpp", "--kv-dtype", "q8_0") == 32 * 5_120 * 2_176
    result = run("speed", "llama-3-8b", "--gpu", "h100", "--seq", "4000", "--json", "--engine", "llama.cpp")
    assert json.loads(result.stdout)["decode"][0]["kv_cache_bytes_read"] == 32 * 4_096 * 4_096


def test_engine_refusals() -> None:
    assert_refused(
        run("speed", "gpt-oss-20b", "--gpu", "h100", "--engine", "sglang"), "sliding attention", "not transcribed"
    )
    assert_refused(run("speed", "gemma-2-2b", "--gpu", "h100", "--engine", "llama.cpp"), "sliding", "cells")
    assert_usage(run("speed", "llama-3-8b", "--gpu", "h100", "--engine", "vlm"), "did you mean vllm")
    assert_usage(run("speed", "llama-3-8b", "--gpu", "h800"), "h800", "closest", "h100-sxm")
    assert_usage(run("speed", "llama-3-8b", "--gpu", "mi350x"), "closest: mi355x")
    assert_refused(run("speed", "llama-3-8b", "--gpu", "h100", "--engine", "vllm", "--kv-dtype", "int8"), "int8")
    assert_refused(run("speed", "llama-3-8b", "--gpu", "h100", "--engine", "vllm", "--formula"), "--formula")
