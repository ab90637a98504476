"""``memory --table`` (the weights in every dtype) and ``memory --gpu-memory`` (what fits), by hand.

Llama-3-8B (L = 32, d = 4096, h = 32, h_kv = 8, h_d = 128, d_ff = 14336, V = 128256, untied):
P = 32·(4·4096² ... ) computed below = 8,030,261,248. Llama-3.1-70B: L = 80, d = 8192, h = 64, h_kv = 8, h_d = 128,
d_ff = 28672, V = 128256, untied. Mistral-7B v0.1: as Llama-2-7B's shapes with h_kv = 8, d_ff = 14336, V = 32000,
sliding_window = 4096.
"""

from __future__ import annotations

import json

import pytest
from refusal import assert_refused, run

from llmcount.formulas import memory
from llmcount.formulas.capacity import fit, weights_table
from llmcount.plain_memory import SEARCH_LIMIT as LIMIT
from llmcount.plain_memory import largest
from llmcount.presets import presets
from llmcount.sources import load


def llama_params(layers: int, d: int, h: int, h_kv: int, h_d: int, d_ff: int, vocab: int) -> int:
    attention = d * h * h_d + 2 * d * h_kv * h_d + h * h_d * d
    mlp = 3 * d * d_ff
    return layers * (attention + mlp + 2 * d) + d + 2 * vocab * d  # + final norm, embedding and untied head


P_8B = llama_params(32, 4096, 32, 8, 128, 14336, 128256)
P_70B = llama_params(80, 8192, 64, 8, 128, 28672, 128256)
P_MISTRAL = llama_params(32, 4096, 32, 8, 128, 14336, 32000)
KV_PER_TOKEN_BF16 = 2 * 32 * 8 * 128 * 2  # K and V, 32 layers, 8 KV heads of 128, 2 bytes: 131,072 (8B and Mistral)
GIB = 2**30


def test_hand_counts_are_the_published_sizes() -> None:
    assert (P_8B, P_70B, P_MISTRAL) == (8_030_261_248, 70_553_706_496, 7_241_732_096)


def test_weights_table_by_hand() -> None:
    rows = {r.name: r.bytes for r in weights_table(P_8B)}
    scales = 2 * (P_8B // 128)  # P_8B = 62,736,416 · 128 exactly: one fp16 scale (2 bytes) per 128 weights
    assert P_8B % 128 == 0
    assert rows == {
        "fp32": 4 * P_8B,
        "bf16": 2 * P_8B,
        "fp16": 2 * P_8B,
        "fp8": P_8B,
        "int8": P_8B,
        "int4": P_8B // 2,
        "int4-g128": P_8B // 2 + scales,
    }


def test_weights_table_rounds_partial_bytes_and_groups_up() -> None:
    rows = {r.name: r.bytes for r in weights_table(129)}
    # 129 int4 values: 64.5 bytes -> 65; 129 weights: 2 groups of 128 -> 2 scales of 2 bytes
    assert (rows["int4"], rows["int4-g128"], rows["fp32"]) == (65, 65 + 4, 516)


def test_memory_table_json_and_text() -> None:
    data = json.loads(run("memory", "llama-3-8b", "--table", "--json").stdout)
    assert data["parameters"] == P_8B
    assert [w["dtype"] for w in data["weights"]] == ["fp32", "bf16", "fp16", "fp8", "int8", "int4", "int4-g128"]
    assert data["weights"][1]["bytes"] == 16_060_522_496  # 2 bytes × 8,030,261,248
    text = run("memory", "llama-3-8b", "--table").stdout
    assert "16,060,522,496" in text and "one fp16 scale per 128 weights" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_longest_context_and_largest_batch_by_hand() -> None:
    capacity = 80 * GIB
    left = capacity - 2 * P_8B  # bf16 weights
    data = json.loads(run("memory", "llama-3-8b", "--gpu-memory", "80GiB", "--json").stdout)
    assert data["weights_bytes"] == 2 * P_8B
    assert data["max_seq_by_memory"] == left // KV_PER_TOKEN_BF16 == 532_827
    # Meta-Llama-3-8B's config.json: max_position_embeddings 8192, which binds first
    assert data["max_position_embeddings"] == 8192 and data["capped_by_context"] is True
    assert data["max_seq_at_batch_1"] == 8192
    assert data["max_batch_at_seq"] == left // (4096 * KV_PER_TOKEN_BF16) == 130
    assert data["total_bytes_at_max_seq"] == 2 * P_8B + 8192 * KV_PER_TOKEN_BF16


def test_overhead_is_taken_before_the_search() -> None:
    # total = base + ceil(base/10) <= capacity  <=>  11·base <= 10·capacity, base = weights + S·KV per token
    capacity = 80 * GIB
    base_limit = 10 * capacity // 11
    expected = (base_limit - 2 * P_8B) // KV_PER_TOKEN_BF16
    data = json.loads(run("memory", "llama-3-8b", "--gpu-memory", "80GiB", "--overhead", "10", "--json").stdout)
    assert data["max_seq_by_memory"] == expected == 473_249


def test_decimal_units_and_a_given_seq() -> None:
    # 24 GB = 24·10^9 bytes; S = 8192: 8192 · 131,072 = 1 GiB of KV cache per sequence
    data = json.loads(run("memory", "llama-3-8b", "--gpu-memory", "24GB", "--seq", "8k", "--json").stdout)
    assert data["max_batch_at_seq"] == (24 * 10**9 - 2 * P_8B) // GIB == 7


def test_a_sliding_window_bounds_the_cache_so_memory_sets_no_limit() -> None:
    # Mistral-7B keeps at most 4095 tokens per layer (transformers' sliding cache): 4095 · 131,072 bytes at most
    weights = 2 * P_MISTRAL
    assert weights + 4096 * KV_PER_TOKEN_BF16 < 16 * 10**9
    data = json.loads(run("memory", "mistral-7b", "--gpu-memory", "16GB", "--json").stdout)
    assert data["max_seq_by_memory"] is None
    # memory sets no limit; mistralai/Mistral-7B-v0.1's config.json: max_position_embeddings 32768
    assert data["max_seq_at_batch_1"] == 32768 and data["capped_by_context"] is True
    # below the window the cache grows with S: the first S that does not fit is below 4095
    data = json.loads(run("memory", "mistral-7b", "--gpu-memory", "15GB", "--json").stdout)
    assert data["max_seq_at_batch_1"] == (15 * 10**9 - weights) // KV_PER_TOKEN_BF16 == 3940
    assert data["capped_by_context"] is False and data["max_seq_by_memory"] == 3940


def test_the_answer_is_the_boundary_of_inference_memory() -> None:
    model = load("qwen3-8b")

    def total(seq: int, batch: int) -> int:
        return memory.inference(model.derivation, model.values, "bf16", None, seq, batch).total_bytes

    for capacity in (17 * GIB, 40 * GIB + 12345, 100 * 10**9):
        result = fit(model.derivation, model.values, capacity, "bf16", seq=2048)  # no context length given
        assert result.max_seq is not None and result.max_batch is not None and not result.capped
        assert total(result.max_seq, 1) <= capacity < total(result.max_seq + 1, 1)
        assert total(2048, result.max_batch) <= capacity < total(2048, result.max_batch + 1)


def test_largest_search() -> None:
    assert largest(lambda x: x <= 1000) == 1000
    assert largest(lambda x: x <= 1) == 1
    assert largest(lambda x: False) == 0
    assert largest(lambda x: True) is None
    assert largest(lambda x: x <= LIMIT - 1) == LIMIT - 1


def test_fit_text_fits_80_columns() -> None:
    text = run("memory", "llama-3-8b", "--gpu-memory", "80GiB").stdout
    flat = " ".join(text.split())  # the sentence wraps
    assert "8,192 tokens, the model's context length" in flat and "would allow 532,827 tokens" in flat
    assert "130 sequences" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_weights_larger_than_the_gpu_say_by_how_much() -> None:
    short = 2 * P_70B - 80 * GIB  # 141,107,412,992 - 85,899,345,920
    assert_refused(
        run("memory", "llama-3.1-70b", "--gpu-memory", "80GiB", "--dtype", "bf16"),
        "--gpu-memory",
        "smaller than the weights",
        f"{short:,} bytes",
    )


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--gpu-memory", "80"], ["--gpu-memory", "no unit"]),
        (["--gpu-memory", "80XB"], ["--gpu-memory", "GiB"]),
        (["--gpu-memory", "-8GiB"], ["--gpu-memory", "negative"]),
        (["--gpu-memory", "0GB"], ["--gpu-memory", "positive"]),
        (["--gpu-memory", "80GiB", "--training"], ["--gpu-memory", "--training"]),
        (["--table", "--training"], ["--table", "--training"]),
        (["--table", "--gpu-memory", "80GiB"], ["--table", "--gpu-memory"]),
        (["--gpu-memory", "80GiB", "--dtype", "fp7"], ["'fp7'", "choices"]),
        (["--gpu-memory", "80GiB", "--seq", "0"], ["--seq"]),
    ],
)
def test_bad_input(args: list[str], needles: list[str]) -> None:
    # a value --gpu-memory or --seq does not take is a usage error (2); the other rows are refused combinations (1)
    code = 2 if args[-2:][0] in ("--gpu-memory", "--seq") and args[-1] not in ("80GiB",) else 1
    assert_refused(run("memory", "llama-3-8b", *args), *needles, code=code)


@pytest.mark.parametrize("preset", sorted(presets()))
def test_every_preset_fits_80_columns_or_is_refused_in_one_line(preset: str) -> None:
    for args in (["memory", preset, "--table"], ["memory", preset, "--gpu-memory", "2TiB"]):
        result = run(*args)
        if result.exit_code == 1:  # a family whose record has no [attention] section yet
            assert_refused(result, "[attention]")
            continue
        assert result.exit_code == 0, result.output
        assert max(len(line) for line in result.stdout.splitlines()) <= 80


def test_a_batch_at_an_s_past_the_context_length_says_so() -> None:
    # Meta-Llama-3-8B: max_position_embeddings 8192. At S = 16,384 a sequence caches 16,384 · 131,072 bytes = 2 GiB,
    # so 80 GiB holds (80 GiB - weights) // 2 GiB sequences: memory's answer, for a length the model was not built for
    data = json.loads(run("memory", "llama-3-8b", "--gpu-memory", "80GiB", "--seq", "16k", "--json").stdout)
    assert data["max_batch_at_seq"] == (80 * GIB - 2 * P_8B) // (16384 * KV_PER_TOKEN_BF16) == 32
    assert data["seq_beyond_context"] is True and data["max_position_embeddings"] == 8192
    text = " ".join(run("memory", "llama-3-8b", "--gpu-memory", "80GiB", "--seq", "16k").stdout.split())
    assert "32 sequences" in text and "but S is longer than the model's context length, 8,192 tokens" in text
    # at the context length itself, nothing to say
    data = json.loads(run("memory", "llama-3-8b", "--gpu-memory", "80GiB", "--seq", "8k", "--json").stdout)
    assert data["seq_beyond_context"] is False
    assert "longer than the model's context" not in run("memory", "llama-3-8b", "--gpu-memory", "80GiB").stdout


@pytest.mark.parametrize(
    ("preset", "capacity", "seq"),
    [
        ("llama-3-8b", 24 * GIB, 8192),  # a context-length S that B = 1 fits
        ("llama-3-8b", 31 * GIB // 2, 8192),  # S within the context length but past what B = 1 fits: no batch
        ("llama-3.1-70b", 160 * GIB, 131072),
        ("mistral-7b", 16 * GIB, 65536),  # sliding windows: the cache stops growing at W - 1 tokens
        ("gpt-oss-20b", 40 * GIB, 131072),
    ],
)
def test_largest_batch_agrees_with_the_longest_sequence(preset: str, capacity: int, seq: int) -> None:
    """B = 1 fits at S exactly when S is within the longest S memory allows, and the largest B is the last batch
    whose exact total fits: the two answers of --gpu-memory agree with each other and with memory itself."""
    model = load(preset)
    got = fit(model.derivation, model.values, capacity, seq=seq, max_positions=model.max_positions)
    assert (got.max_batch >= 1) == (got.max_seq_by_memory is None or seq <= got.max_seq_by_memory)

    def total(batch: int) -> int:
        return memory.inference(model.derivation, model.values, "bf16", seq=seq, batch=batch).total_bytes

    assert got.max_batch == 0 or total(got.max_batch) <= capacity
    assert total(got.max_batch + 1) > capacity
    assert got.seq_beyond_context == (seq > got.max_positions)
