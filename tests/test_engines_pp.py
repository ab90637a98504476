"""Pipeline parallelism under an engine (memory/fit --engine E --pp N): the layers of each stage as the engine splits
them, and the KV cache the GPU of each stage keeps.

The splits against the engines' own functions where they import on a CPU (vLLM's get_pp_indices from the vllm 0.33.0
wheel named by LLMCOUNT_VLLM_PATH; TensorRT-LLM's Mapping.pp_layers is torch.tensor_split, called here), SGLang's by
its get_pp_indices written out; the per-stage bytes by hand derivation from the cited lines.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
import torch
from refusal import assert_refused, run

from llmcount import engines, serving
from llmcount.sources import load

SPLITS = [(26, 4), (32, 3), (61, 4), (62, 2), (7, 7), (48, 5)]


def vllm_pp_indices():
    for path in reversed(os.environ.get("LLMCOUNT_VLLM_PATH", "").split(os.pathsep)):
        if path and path not in sys.path:
            sys.path.insert(0, path)
    module = pytest.importorskip("vllm.distributed.utils", reason="vllm is not installed (pip install --no-deps)")
    return module.get_pp_indices


@pytest.mark.parametrize(("layers", "pp"), SPLITS)
def test_vllm_stages_are_get_pp_indices(layers, pp, monkeypatch):
    """vllm/distributed/utils.py get_pp_indices (0.33.0), VLLM_PP_LAYER_PARTITION unset."""
    monkeypatch.delenv("VLLM_PP_LAYER_PARTITION", raising=False)
    get_pp_indices = vllm_pp_indices()
    expected = [range(*get_pp_indices(layers, rank, pp)) for rank in range(pp)]
    assert engines.pipeline_stages("vllm", layers, pp) == expected
    assert engines.pipeline_stages(None, layers, pp) == expected  # no engine: vLLM's


@pytest.mark.parametrize(("layers", "pp"), SPLITS)
def test_tensorrt_llm_stages_are_tensor_split(layers, pp):
    """tensorrt_llm/mapping.py Mapping.pp_layers: torch.tensor_split(torch.arange(num_layers), pp_size)[pp_rank]."""
    expected = [chunk.tolist() for chunk in torch.tensor_split(torch.arange(layers), pp)]
    assert [list(run) for run in engines.pipeline_stages("tensorrt-llm", layers, pp)] == expected


@pytest.mark.parametrize(("layers", "pp"), SPLITS)
def test_sglang_stages_by_its_get_pp_indices(layers, pp):
    """python/sglang/srt/distributed/utils.py get_pp_indices (commit 1107be112815), SGLANG_PP_LAYER_PARTITION unset:
    base = N // pp, remainder = N % pp; a rank ≥ pp − remainder starts at rank · (base + 1) − (pp − remainder) and
    holds base + 1 layers, the others start at rank · base and hold base."""
    base, remainder = divmod(layers, pp)
    expected = []
    for rank in range(pp):
        if rank >= pp - remainder:
            start = rank * (base + 1) - (pp - remainder)
            expected.append(range(start, start + base + 1))
        else:
            expected.append(range(rank * base, rank * base + base))
    assert engines.pipeline_stages("sglang", layers, pp) == expected


def stage_figures(name: str, engine: str, seq: int, batch: int, pp: int, tp: int = 1, **kw) -> list[int]:
    """The engine's KV cache on each stage's GPU, as memory --pp computes it."""
    model = load(name)
    plans = serving.stage_plans(model, serving.Layout(tp=tp, pp=pp, engine=engine))
    figure = engines.kv_cache(engine, model, seq, batch, tp=tp, pp=pp, **kw)
    return [engines.stage_bytes(figure, p.layer_counts, p.sequence, p.layers) for p in plans]


def test_vllm_gemma2_stages_by_hand():
    """Gemma-2-2B, 26 layers (even ones slide, W = 4,096), 4 KV heads of 256: a page is 16 · 4 · 512 · 2 = 65,536
    bytes. pp = 2: stages of 13 layers; stage 1 holds 7 sliding and 6 full layers, stage 2 6 and 7. The whole
    model's KV cache groups are one of the 13 full and one of the 13 sliding layers (G = 13), so a block of a stage's
    pool holds max(7, 6) = 7 pages, and a sequence takes its blocks in both groups: full cdiv(32,768, 16) = 2,048,
    sliding cdiv(min(4,095 + 3 · 2,048, 32,768), 16) + 1 = 641 (pp + 1 = 3 steps in flight)."""
    page = 16 * 4 * 512 * 2
    assert -(-(4095 + 3 * 2048) // 16) + 1 == 641
    assert stage_figures("gemma-2-2b", "vllm", 32768, 1, 2) == [7 * page * (2048 + 641)] * 2
    data = json.loads(run("memory", "gemma-2-2b", "--seq", "32k", "--pp", "2", "--engine", "vllm", "--json").stdout)
    assert data["kv_cache_bytes_per_gpu"] == 7 * page * (2048 + 641)


def test_vllm_sliding_reservation_under_pp_matches_its_spec():
    """SlidingWindowSpec.max_memory_usage_bytes (vllm 0.33.0) with max_in_flight_tokens = max_concurrent_batches ·
    max_num_batched_tokens, max_concurrent_batches = pp + 1 (config/vllm.py, async scheduling on the V2 model runner):
    the blocks a sliding layer of Gemma-2-2B keeps at pp = 4."""
    from types import SimpleNamespace

    for path in reversed(os.environ.get("LLMCOUNT_VLLM_PATH", "").split(os.pathsep)):
        if path and path not in sys.path:
            sys.path.insert(0, path)
    kvi = pytest.importorskip("vllm.v1.kv_cache_interface", reason="vllm is not installed (pip install --no-deps)")
    spec = kvi.SlidingWindowSpec(
        block_size=16, num_kv_heads=4, head_size=256, dtype=torch.bfloat16, sliding_window=4096
    )
    config = SimpleNamespace(
        model_config=SimpleNamespace(max_model_len=32768),
        parallel_config=SimpleNamespace(decode_context_parallel_size=1, pipeline_parallel_size=4),
        max_in_flight_tokens=(4 + 1) * 2048,
    )
    figure = engines.kv_cache("vllm", load("gemma-2-2b"), 32768, 1, pp=4)
    (sliding,) = [k for k in figure.kinds if k.kind == "sliding_attention"]
    assert sliding.blocks * sliding.page == spec.max_memory_usage_bytes(config)


def test_vllm_gemma3_groups_projected_on_a_stage_by_hand():
    """Gemma-3-27B: 62 layers, layer i full where (i + 1) % 6 == 0 (10 full, 52 sliding, W = 1,024), 16 KV heads of
    128: a page is 16 · 16 · 256 · 2 = 131,072 bytes. The whole model's groups: G = 10, the full layers one group,
    the 52 sliding layers cdiv(52, 10) = 6 groups, group i the sliding layers i, i + 6, ... (layers[i::6]). pp = 2:
    stage 1 holds layers 0-30, 5 full and the sliding ordinals 0-25, so the groups hold 5 | 5, 5, 4, 4, 4, 4 of its
    layers: a block holds 5 pages. A sequence takes full cdiv(32,768, 16) = 2,048 blocks and six sliding groups of
    cdiv(min(1,023 + 3 · 2,048, 32,768), 16) + 1 = 449: 5 · 131,072 · (2,048 + 6 · 449). Stage 2 (layers 31-61: 5 full,
    sliding ordinals 26-51, 5, 5, 4, 4, 4, 4 again) the same."""
    page = 16 * 16 * 256 * 2
    blocks = 2048 + 6 * (-(-(1023 + 3 * 2048) // 16) + 1)
    assert stage_figures("gemma-3-27b-it", "vllm", 32768, 1, 2) == [5 * page * blocks] * 2


def test_vllm_stage_of_all_layers_is_the_whole_figure():
    """The projection of the groups onto every layer gives the whole model's figure (pp = 1), groups padded as they
    are: Gemma-3-1B (22 sliding and 4 full layers) and Gemma-2-2B."""
    for name in ("gemma-3-1b-it", "gemma-2-2b", "qwen3-next-80b-a3b"):
        model = load(name)
        (plan,) = serving.stage_plans(model, serving.Layout(engine="vllm"))
        figure = engines.kv_cache("vllm", model, 8192, 2)
        sequence = serving.stage_plans(model, serving.Layout(pp=2, engine="vllm"))[0].sequence
        assert engines.stage_bytes(figure, plan.layer_counts, sequence, range(len(sequence))) == figure.bytes


@pytest.mark.parametrize(
    ("name", "engine", "tp"),
    [
        ("llama-3-8b", "vllm", 2),  # one kind of layer: one group
        ("deepseek-v3", "vllm", 8),  # MLA
        ("llama-3-8b", "sglang", 1),
        ("gpt-oss-20b", "sglang", 1),  # hybrid SWA pools
        ("qwen3-next-80b-a3b", "sglang", 2),  # MambaPool
        ("llama-3-8b", "tensorrt-llm", 2),
        ("gemma-2-2b", "tensorrt-llm", 1),
    ],
)
def test_stages_sum_to_the_whole_model(name, engine, tp):
    """Per stage, the layers' caches of that stage: summed over the stages, the whole model's figure, plus one copy a
    stage of what is not a layer's (SGLang's ReqToTokenPool, on every stage)."""
    model = load(name)
    figure = engines.kv_cache(engine, model, 8192, 3, tp=tp, pp=3)
    tables = sum(k.bytes for k in figure.kinds if not k.layers)
    assert sum(stage_figures(name, engine, 8192, 3, 3, tp)) == figure.bytes + 2 * tables


def test_sglang_stage_by_hand():
    """SGLang, Llama-3-8B (32 layers, 8 KV heads of 128, bf16: 4,096 bytes a token a layer), B = 2, S = 1,000, pp = 3:
    stages of 10, 11, 11 layers (the last ones longer); each layer's pool B·S + 1 slots, and the ReqToTokenPool
    (B + 1) · (S + 4) int32 on every stage."""
    table = 3 * 1004 * 4
    assert stage_figures("llama-3-8b", "sglang", 1000, 2, 3) == [
        layers * 2001 * 4096 + table for layers in (10, 11, 11)
    ]


def test_tensorrt_llm_stage_by_hand():
    """TensorRT-LLM, Llama-3-8B at tp 2 (4 KV heads a rank: 2 · 4 · 128 · 2 = 2,048 bytes a token a layer), S = 1,000:
    cdiv(1,000, 32) = 32 blocks of 32 tokens; pp = 3: 11, 11, 10 layers (the first ones longer)."""
    assert stage_figures("llama-3-8b", "tensorrt-llm", 1000, 1, 3, tp=2) == [
        layers * 32 * 32 * 2048 for layers in (11, 11, 10)
    ]


def test_memory_pp_refusals_in_one_line():
    assert_refused(run("memory", "llama-3-8b", "--pp", "2", "--engine", "lmdeploy"), "no pipeline parallelism")
    assert_refused(run("fit", "llama-3-8b", "--gpu", "h100", "--pp", "2", "--engine", "lmdeploy"), "lmdeploy")


def test_vllm_data_parallel_attention_with_mla():
    """vLLM's DP with expert parallelism (--data-parallel-size 8 --enable-expert-parallel, tp 1): each GPU runs the
    attention of its own sequences with the whole MLA weights and keeps their latent, 61 layers · cdiv(32,768, 16)
    blocks · 16 · (512 + 64) · 2 bytes; the routed experts are divided over the 8 ranks (EP size = TP × DP)."""
    model = load("deepseek-v3")
    routed = 58 * 256 * 3 * 7168 * 2048  # 58 MoE layers of 256 experts, gate/up/down of 7,168 × 2,048
    args = ("memory", "deepseek-v3", "--seq", "32k", "--dp", "8", "--ep", "8", "--engine", "vllm", "--dtype", "bf16")
    data = json.loads(run(*args, "--json").stdout)
    assert data["kv_cache_bytes_per_gpu"] == 61 * 2048 * 16 * 576 * 2
    assert data["gpu_parameters"] == model.counts.total - routed + routed // 8


@pytest.mark.parametrize("engine", ["sglang", "tensorrt-llm", "lmdeploy"])
def test_data_parallel_experts_refused_by_name_where_not_transcribed(engine):
    """SGLang's --dp-size (replicas, or --enable-dp-attention inside the tp GPUs), TensorRT-LLM's enable_attention_dp
    and LMDeploy's dp with ep lay the experts out otherwise than over the tp·dp ranks: refused, naming why."""
    assert_refused(run("memory", "qwen3-30b-a3b", "--dp", "2", "--ep", "2", "--engine", engine), "--dp with routed")


def test_data_parallel_dense_replicas_under_an_engine():
    """A dense model under --dp: replicas, each GPU the whole weights and its own sequences' cache, the same as dp 1."""
    one = json.loads(run("memory", "llama-3-8b", "--seq", "8k", "--engine", "sglang", "--tp", "2", "--json").stdout)
    two = json.loads(
        run("memory", "llama-3-8b", "--seq", "8k", "--engine", "sglang", "--tp", "2", "--dp", "2", "--json").stdout
    )
    assert (two["weights_bytes_per_gpu"], two["kv_cache_bytes_per_gpu"], two["gpus"]) == (
        one["weights_bytes_per_gpu"],
        one["kv_cache_bytes_per_gpu"],
        4,
    )
