"""The weights one GPU holds under tensor parallelism, as each serving engine lays them out
(llmcount/engines/weights.py, the ``[weights]`` table of each engine's record; docs/serving.md).

The expectations are hand derivations from the engines' lines cited in the records: a Llama layer per rank is
column-parallel q/k/v (one key-value head per rank, copied, when there are fewer than tp) and gate/up, row-parallel o
and down, its two norms whole; the embedding and the head hold the vocabulary rows each engine gives a rank:

- vLLM (vocab_parallel_embedding.py): V padded to a multiple of 64, divided by tp (asserted);
- SGLang 0.5.23 (vocab_parallel_embedding.py): the same, but padded to a multiple of 64·tp when tp does not divide the
  64-padded rows;
- TensorRT-LLM (modules/embedding.py LMHead, Embedding in COLUMN mode): ⌈V / tp⌉ rows a rank; modeling_deepseekv3.py's
  embedding is built without tp (all V rows on every rank);
- LMDeploy 0.18.0 (pytorch/models/llama.py: nn.Embedding and build_rowwise_linear without is_tp): all V rows on every
  rank; deepseek_v2.py's ParallelEmbedding and ParallelLMHead(is_tp=True): padded to 64 and divided at tp > 1.

Each test sums the ranks' shards and checks they equal the model's total plus the stated replication (norms on every
rank, copied key-value heads, padded or repeated vocabulary rows). LMDeploy's own ParallelEmbedding and ParallelLMHead
are built on the meta device where the wheel imports (LLMCOUNT_LMDEPLOY_PATH); everything else runs everywhere.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from llmcount import serving
from llmcount.errors import LlmcountError
from llmcount.sources import load


def _llama(tmp_path, d=64, h=4, h_kv=2, d_ff=192, layers=2, vocab=1000, tied=False, model_type="llama"):
    config = {
        "model_type": model_type,
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": d,
        "num_attention_heads": h,
        "num_key_value_heads": h_kv,
        "intermediate_size": d_ff,
        "num_hidden_layers": layers,
        "vocab_size": vocab,
        "tie_word_embeddings": tied,
        "max_position_embeddings": 4096,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    return load(str(tmp_path)), config


def _layer_per_rank(c: dict, tp: int) -> int:
    """One Llama layer on one rank: q and o over h/tp heads, k and v over max(1, h_kv/tp) heads, gate/up/down over
    d_ff/tp, the two norms whole."""
    d, h, h_kv, d_ff = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["intermediate_size"]
    d_h = d // h
    q = o = d * (h // tp) * d_h
    kv = 2 * d * max(1, h_kv // tp) * d_h
    return q + kv + o + 3 * d * (d_ff // tp) + 2 * d


def _total(c: dict) -> int:
    """The model's parameters by hand: embedding, layers, final norm, head (when untied)."""
    d, v = c["hidden_size"], c["vocab_size"]
    head = 0 if c["tie_word_embeddings"] else v * d
    return v * d + c["num_hidden_layers"] * _layer_per_rank(c, 1) + d + head


def _per_gpu(model, tp: int, engine: str | None) -> int:
    return serving.shard(model, serving.Layout(tp=tp, engine=engine), "bf16", seq=16).gpu_parameters


def _replication(c: dict, tp: int, embedding_rows: int, head_rows: int) -> int:
    """What the tp ranks hold beyond the model's total: the norms on every rank, the copied key-value heads, the
    vocabulary rows of all ranks beyond V (padding, or V·(tp − 1) for a table held whole)."""
    d, h, h_kv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    layers, v = c["num_hidden_layers"], c["vocab_size"]
    d_h = d // h
    norms = (tp - 1) * (layers * 2 * d + d)
    copies = layers * 2 * d * d_h * (max(1, h_kv // tp) * tp - h_kv)
    head = 0 if c["tie_word_embeddings"] else (head_rows * tp - v) * d
    return norms + copies + (embedding_rows * tp - v) * d + head


CASES = [
    # engine, tp, (h, h_kv, d), rows per rank of the embedding and of the head for V = 1000
    ("vllm", 4, (4, 2, 64), 256, 256),  # 1,000 → 1,024 (64·16), / 4
    ("sglang", 4, (4, 2, 64), 256, 256),  # 1,024 divisible by 4: as vLLM
    ("sglang", 3, (6, 3, 96), 384, 384),  # 1,024 % 3 ≠ 0: a multiple of 64·3 = 192, 1,152, / 3
    ("tensorrt-llm", 4, (4, 2, 64), 250, 250),  # ⌈1,000 / 4⌉
    ("tensorrt-llm", 3, (6, 3, 96), 334, 334),  # ⌈1,000 / 3⌉, 1,002 over the ranks
    ("lmdeploy", 4, (4, 2, 64), 1000, 1000),  # nn.Embedding and a head without tp: all rows on every rank
    ("lmdeploy", 3, (6, 3, 96), 1000, 1000),
]


@pytest.mark.parametrize(("engine", "tp", "shape", "embedding_rows", "head_rows"), CASES)
def test_ranks_sum_to_total_plus_replication(tmp_path, engine, tp, shape, embedding_rows, head_rows):
    h, h_kv, d = shape
    model, c = _llama(tmp_path, d=d, h=h, h_kv=h_kv)
    assert model.counts.total == _total(c)  # the hand count is the model's
    per_gpu = c["num_hidden_layers"] * _layer_per_rank(c, tp) + d + (embedding_rows + head_rows) * d
    assert _per_gpu(model, tp, engine) == per_gpu
    assert tp * per_gpu == _total(c) + _replication(c, tp, embedding_rows, head_rows)


def test_vllm_refuses_what_sglang_pads(tmp_path):
    """tp = 3 does not divide 1,024 rows: vLLM's divide() asserts, SGLang pads to 64·3."""
    model, _ = _llama(tmp_path, d=96, h=6, h_kv=3)
    with pytest.raises(LlmcountError, match=r"--tp 3 does not divide the vocabulary padded .* 1,024 rows.*vLLM"):
        _per_gpu(model, 3, "vllm")
    assert serving.shard(model, serving.Layout(tp=3, engine="sglang"), seq=16).vocab_padded == 1152


def test_tied_head_is_the_embedding(tmp_path):
    """A tied head adds no rows: per rank the embedding's alone (TensorRT-LLM: 250 rows of 64 at tp = 4)."""
    model, c = _llama(tmp_path, tied=True)
    per_gpu = c["num_hidden_layers"] * _layer_per_rank(c, 4) + 64 + 250 * 64
    assert _per_gpu(model, 4, "tensorrt-llm") == per_gpu
    assert 4 * per_gpu == _total(c) + _replication(c, 4, 250, 0)


def test_tp1_padding(tmp_path):
    """At tp = 1 vLLM and SGLang still pad to 64 rows; TensorRT-LLM and LMDeploy hold V rows."""
    model, c = _llama(tmp_path)
    one = c["num_hidden_layers"] * _layer_per_rank(c, 1) + 64
    assert _per_gpu(model, 1, "vllm") == one + 2 * 1024 * 64
    assert _per_gpu(model, 1, "sglang") == one + 2 * 1024 * 64
    assert _per_gpu(model, 1, "tensorrt-llm") == one + 2 * 1000 * 64 == _total(c)
    assert _per_gpu(model, 1, "lmdeploy") == _total(c)


def test_deepseek_embedding_rows_per_engine():
    """DeepSeek-V3 (V = 129,280 = 64·2,020, d = 7,168) at tp = 8: vLLM 16,160 rows of each a rank; TensorRT-LLM's
    embedding whole (modeling_deepseekv3.py: no tp), its head ⌈V / 8⌉ = 16,160; LMDeploy's ParallelEmbedding and
    ParallelLMHead padded to 64 (no rows added) and / 8, as vLLM."""
    model = load("deepseek-v3")
    vllm = _per_gpu(model, 8, "vllm")
    assert _per_gpu(model, 8, "tensorrt-llm") - vllm == (129_280 - 16_160) * 7_168
    assert _per_gpu(model, 8, "lmdeploy") == vllm


def test_refusals(tmp_path):
    model, _ = _llama(tmp_path, model_type="gemma2")
    with pytest.raises(LlmcountError, match=r"TensorRT-LLM with --tp 2: .*gemma2.*not transcribed"):
        _per_gpu(model, 2, "tensorrt-llm")
    with pytest.raises(LlmcountError, match=r"llama.cpp with --tp 2: .*split-mode"):
        _per_gpu(model, 2, "llama.cpp")
    assert _per_gpu(model, 1, "tensorrt-llm") == model.counts.total  # tp = 1: nothing to lay out


def test_cli_weights_per_gpu(tmp_path):
    """``memory --engine lmdeploy --tp 2 --json``: LMDeploy's per-GPU weights are vLLM's plus the other half of the
    embedding and head rows (Llama-3-8B: 128,256 rows of 4,096, bf16)."""
    from typer.testing import CliRunner

    from llmcount.cli import app

    def weights(engine: str) -> int:
        result = CliRunner().invoke(app, ["memory", "llama-3-8b", "--tp", "2", "--engine", engine, "--json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        assert any("rows" in note for note in data["notes"])
        return data["weights_bytes_per_gpu"]

    assert weights("lmdeploy") - weights("vllm") == 2 * (128_256 // 2) * 4_096 * 2


def _lmdeploy(monkeypatch):
    for path in reversed(os.environ.get("LLMCOUNT_LMDEPLOY_PATH", "").split(os.pathsep)):
        if path and path not in sys.path:
            sys.path.insert(0, path)
    return pytest.importorskip("lmdeploy.pytorch.nn.embedding", reason="lmdeploy is not installed")


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_lmdeploy_parallel_embedding_rows(monkeypatch, tp):
    """LMDeploy's own ParallelEmbedding(is_tp=True) and ParallelLMHead on the meta device, their distributed context
    and kernel backend stubbed, hold the rows llmcount gives a rank under the pad64_if_tp rule (DeepSeek-V2/V3)."""
    import types

    embedding = _lmdeploy(monkeypatch)  # before torch: skipped at once where lmdeploy is not installed

    import torch

    from llmcount.engines.weights import rows

    config = types.SimpleNamespace(get_tp_by_layer=lambda layer_type: (tp, None))
    manager = types.SimpleNamespace(current_context=lambda: None, current_config=lambda: config)
    monkeypatch.setattr(embedding, "get_dist_manager", lambda: manager)
    monkeypatch.setattr(embedding, "get_tp_world_rank", lambda layer_type: (tp, 0))
    monkeypatch.setattr(embedding, "get_dist_group", lambda layer_type: types.SimpleNamespace(gpu_group=None, rank=0))
    monkeypatch.setattr(embedding, "get_backend", lambda: types.SimpleNamespace(build_op=lambda *a, **k: None))
    context = types.SimpleNamespace(enable_deterministic=False)
    monkeypatch.setattr(embedding, "get_build_model_context", lambda: context)
    monkeypatch.setattr(embedding, "MultimemAllGatherer", lambda *a, **k: None)
    for vocab in (129_280, 1_000, 50_257):
        table = embedding.ParallelEmbedding(vocab, 8, None, device=torch.device("meta"), is_tp=True)
        head = embedding.ParallelLMHead(vocab, 8, device=torch.device("meta"))
        want = rows("pad64_if_tp", vocab, tp, "embedding", "LMDeploy", "vocab_size").rows
        assert table.weight.shape[0] == head.weight.shape[0] == want


# --- llama.cpp's --split-mode layer -----------------------------------------------------------------------------------


def _llama_cpp_device(il: int, layers: int, devices: int) -> int:
    """src/llama-model.cpp load_tensors (ggml-org/llama.cpp commit 00342301d01a), in its own float arithmetic: the
    split points are the running sums of equal --tensor-split shares over their total, in float; layer ``il`` (the
    output layer is il = layers) goes to std::upper_bound(splits, float(il) / act_gpu_layers), act_gpu_layers =
    layers + 1 with every layer offloaded."""
    import bisect
    import struct

    def f32(x: float) -> float:
        return struct.unpack("f", struct.pack("f", x))[0]

    sums, total = [], f32(0.0)
    for _ in range(devices):
        total = f32(total + 1.0)
        sums.append(total)
    splits = [f32(x / total) for x in sums]
    return bisect.bisect_right(splits, f32(f32(il) / f32(layers + 1)))


@pytest.mark.parametrize(("layers", "devices"), [(32, 2), (32, 3), (94, 3), (63, 2), (80, 8), (61, 4)])
def test_llama_cpp_layer_split_as_its_upper_bound(layers, devices):
    from llmcount.engines.weights import layer_split

    runs = layer_split(layers, devices)
    assert [list(run) for run in runs] == [
        [il for il in range(layers) if _llama_cpp_device(il, layers, devices) == g] for g in range(devices)
    ]
    assert _llama_cpp_device(layers, layers, devices) == devices - 1  # the output layer on the last GPU


def test_llama_cpp_memory_per_gpu_by_hand():
    """Llama-3-8B over 2 GPUs under llama.cpp: layers 0–16 on GPU 0 (16 · 2 / 33 < 1 ≤ 17 · 2 / 33), 17–31 and the
    output layer on GPU 1, the token embedding in host memory. A layer is 218,112,000 parameters (q, o 4,096²; k, v
    4,096 · 1,024; gate/up/down 3 · 4,096 · 14,336; two norms), the head 128,256 · 4,096, the final norm 4,096; the KV
    cache of a layer at S = 8,192 is 8,192 cells of 1,024 K and 1,024 V elements in f16. GPU 1 is the larger."""
    from typer.testing import CliRunner

    from llmcount.cli import app

    args = [
        "memory",
        "llama-3-8b",
        "--engine",
        "llama.cpp",
        "--gpus",
        "2",
        "--gpu",
        "rtx-4090",
        "--seq",
        "8k",
        "--json",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    layer, head = 218_112_000, 128_256 * 4_096
    assert data["pp"] == 2 and data["stage"] == 2
    assert data["gpu_parameters"] == 15 * layer + 4_096 + head
    assert data["weights_bytes_per_gpu"] == 2 * (15 * layer + 4_096 + head)
    assert data["kv_cache_bytes_per_gpu"] == 15 * 8_192 * 2 * 1_024 * 2
    first = serving.stage_plans(load("llama-3-8b"), serving.Layout(pp=2, engine="llama.cpp"))[0]
    assert first.parameters == 17 * layer  # no embedding: it stays on the CPU
    assert first.parameters + data["gpu_parameters"] == load("llama-3-8b").counts.total - head  # all but the input


def test_llama_cpp_tied_output_is_a_copy_on_the_last_gpu(tmp_path):
    """A tied head: llama.cpp loads token_embd again as the output (TENSOR_DUPLICATED) on the output layer's GPU."""
    model, c = _llama(tmp_path, tied=True, layers=4)
    plans = serving.stage_plans(model, serving.Layout(pp=2, engine="llama.cpp"))
    # 5 slots (4 layers + output) over 2 GPUs: layers 0–2 on GPU 0 (2 · 2 / 5 < 1 ≤ 3 · 2 / 5), layer 3 on GPU 1
    assert plans[0].parameters == 3 * _layer_per_rank(c, 1)
    assert plans[1].parameters == _layer_per_rank(c, 1) + 64 + 1000 * 64


def test_towers_under_another_engine_refused():
    """A composite's vision tower is placed as vLLM places it (vllm_parts.toml); under another engine's tp it is
    refused by name rather than laid out as vLLM's."""
    from refusal import assert_refused, run

    assert_refused(run("memory", "gemma-3-27b-it", "--tp", "2", "--engine", "sglang"), "SGLang", "not transcribed")


def test_llama_cpp_one_gpu_keeps_the_input_layer_on_the_cpu(tmp_path):
    """On one GPU too llama.cpp keeps the token embedding in host memory; a tied head is loaded again as the output,
    on the GPU (so a tied model's GPU holds every parameter once)."""
    model, c = _llama(tmp_path)
    one = serving.stage_plans(model, serving.Layout(engine="llama.cpp"))[0]
    assert one.parameters == _total(c) - c["vocab_size"] * c["hidden_size"]
    assert any("host memory" in note for note in one.notes)
    (tmp_path / "tied").mkdir()
    tied, _ = _llama(tmp_path / "tied", tied=True)
    assert serving.stage_plans(tied, serving.Layout(engine="llama.cpp"))[0].parameters == tied.counts.total
