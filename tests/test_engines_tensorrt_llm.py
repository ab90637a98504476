"""TensorRT-LLM's KV cache (llmcount.engines, memory --engine tensorrt-llm).

TensorRT-LLM needs a GPU and its own C++ bindings to build a KVCacheManager, so every figure here is a hand
derivation from the lines cited in llmcount/engines/tensorrt-llm.toml:

- tensorrt_llm/_torch/pyexecutor/resource_manager.py (commit d2a5560abdad) KVCacheManager: heads per rank
  (num_kv_heads + tp - 1) // tp; kv_factor 2 (K and V), 1 for MLA (CacheType.SELFKONLY, one head of
  kv_lora_rank + qk_rope_head_dim on every rank); a request of S tokens holds ceil(S / tokens_per_block) blocks
  (get_needed_resource_to_completion); one window, max_seq_len, for every layer unless the user sets
  kv_cache_config.max_attention_window; NVFP4: half a byte an element plus one FP8 scale per 16 elements
  (get_cache_bytes_per_token);
- tensorrt_llm/llmapi/llm_args.py KvCacheConfig: tokens_per_block = 32, free_gpu_memory_fraction = 0.9.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from llmcount import engines
from llmcount.errors import LlmcountError
from llmcount.sources import load


def _written(tmp_path, config: dict):
    (tmp_path / "config.json").write_text(json.dumps(config))
    return load(str(tmp_path))


def _class_config(model_type: str, **extra) -> dict:
    import transformers

    return {**transformers.AutoConfig.for_model(model_type).to_dict(), **extra}


def test_dense_gqa_by_hand():
    """Llama-3.1-70B, bf16: 80 layers, 8 KV heads of 8192 / 64 = 128, K and V: 2 · 8 · 128 · 2 = 4,096 bytes a token
    a layer. Three sequences of 1,000 tokens: ceil(1000 / 32) = 32 blocks = 1,024 token slots each."""
    got = engines.kv_cache("tensorrt-llm", load("llama-3.1-70b"), 1000, 3)
    assert got.bytes == 3 * 80 * 1024 * 4096
    (kind,) = got.kinds
    assert (kind.tokens, kind.token_bytes) == (1024, 4096)
    assert got.settings["tokens_per_block"] == 32
    assert got.engine.settings["free_gpu_memory_fraction"] == 0.9
    # a whole number of blocks: the same bytes as transformers' cache
    same = engines.kv_cache("tensorrt-llm", load("llama-3.1-70b"), 32768)
    assert same.bytes == same.transformers_bytes == 80 * 32768 * 4096
    assert same.differences() == []


def test_dense_gqa_under_tp_by_hand():
    """tp = 4: (8 + 3) // 4 = 2 heads a rank, a quarter of the cache; tp = 16: (8 + 15) // 16 = 1 head a rank, the
    heads replicated, an eighth of it; fp8 halves the bytes."""
    model = load("llama-3.1-70b")
    assert engines.kv_cache_bytes("tensorrt-llm", model, 4096, 2, tp=4) == 2 * 80 * 4096 * 2 * 2 * 128 * 2
    assert engines.kv_cache_bytes("tensorrt-llm", model, 4096, 2, tp=16) == 2 * 80 * 4096 * 2 * 1 * 128 * 2
    assert engines.kv_cache_bytes("tensorrt-llm", model, 4096, 2, "fp8", tp=4) == 2 * 80 * 4096 * 2 * 2 * 128
    with pytest.raises(LlmcountError, match="--tp 3 does not divide the 8 key/value heads"):
        engines.kv_cache("tensorrt-llm", model, 4096, tp=3)


def test_mla_deepseek_v3_by_hand():
    """DeepSeek-V3: 61 layers of one latent head of 512 + 64 = 576 elements, K only (SELFKONLY), the same on every
    TP rank. bf16, S = 5,000: ceil(5000 / 32) = 157 blocks = 5,024 slots; tp = 8 changes nothing per GPU."""
    model = load("deepseek-v3")
    got = engines.kv_cache("tensorrt-llm", model, 5000)
    assert got.bytes == 61 * 5024 * 576 * 2
    assert engines.kv_cache_bytes("tensorrt-llm", model, 5000, tp=8) == got.bytes
    assert engines.kv_cache_bytes("trtllm", model, 32768, 4, "fp8") == 4 * 61 * 32768 * 576


def test_sliding_window_runs_full_by_hand():
    """Gemma-2-2B: 26 layers of 4 KV heads of 256, half of them with a 4,096-token window in transformers' cache.
    TensorRT-LLM keeps max_seq_len tokens in every layer (max_attention_window defaults to None): at S = 32,768,
    1,024 blocks of 32 in each of the 26 layers, 2 · 4 · 256 · 2 = 4,096 bytes a token a layer."""
    got = engines.kv_cache("tensorrt-llm", load("gemma-2-2b"), 32768)
    assert got.bytes == 26 * 32768 * 4096
    sliding = next(k for k in got.kinds if k.kind == "sliding_attention")
    assert (sliding.engine_kind, sliding.layers, sliding.tokens) == ("full_attention", 13, 32768)
    assert sliding.transformers_tokens == 4095
    assert "max_attention_window" in sliding.rule
    assert any("sliding_attention (13 layers)" in d for d in got.differences())


def test_nvfp4_by_hand():
    """NVFP4 KV: 2 · 8 · 128 = 2,048 elements a token a layer of Llama-3-8B at half a byte, plus 2,048 / 16 = 128
    FP8 scales: 1,152 bytes. S = 100: ceil(100 / 32) = 4 blocks = 128 slots."""
    got = engines.kv_cache("tensorrt-llm", load("llama-3-8b"), 100, kv_dtype="nvfp4")
    assert got.bytes == 32 * 128 * 1152
    assert got.kinds[0].token_bytes == 1152


def test_refused_by_name(tmp_path):
    with pytest.raises(LlmcountError, match="MambaHybridCacheManager"):
        engines.kv_cache("tensorrt-llm", load("qwen3-next-80b-a3b"), 4096)
    with pytest.raises(LlmcountError, match="one head_dim for every layer"):
        engines.kv_cache("tensorrt-llm", _written(tmp_path, _class_config("mimo_v2_flash")), 4096)
    with pytest.raises(LlmcountError, match="--max-num-batched-tokens is a vLLM setting, not TensorRT-LLM's"):
        engines.kv_cache("tensorrt-llm", load("llama-3-8b"), 4096, max_num_batched_tokens=8192)
    with pytest.raises(LlmcountError, match=r"--ctx is llama\.cpp's context size, not TensorRT-LLM's"):
        engines.kv_cache("tensorrt-llm", load("llama-3-8b"), 4096, ctx=8192)
    with pytest.raises(LlmcountError, match="TensorRT-LLM has no KV cache dtype 'fp8_e5m2'"):
        engines.check("tensorrt-llm", "fp8_e5m2")
    with pytest.raises(LlmcountError, match="did you mean tensorrt-llm"):
        engines.engine("tensorrt")


def test_names():
    for alias in ("TensorRT-LLM", "trtllm", "trt-llm", "tensorrt_llm"):
        assert engines.engine(alias).name == "tensorrt-llm"


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--engine", "tensorrt-llm", "--kv-dtype", "q8_0"], "--kv-dtype: TensorRT-LLM has no KV cache dtype 'q8_0'"),
        (["--engine", "tensorrt-llm", "--max-num-batched-tokens", "4096"], "not TensorRT-LLM's"),
        (["--engine", "tensorrt-lm"], "did you mean tensorrt-llm"),
    ],
)
def test_cli_one_line_errors(args, needle):
    done = subprocess.run(
        [sys.executable, "-m", "llmcount", "memory", "llama-3-8b", "--seq", "4096", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == (2 if "did you mean" in needle else 1), done.stderr  # an unknown name: usage
    assert done.stdout == ""
    assert needle in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_cli_json():
    done = subprocess.run(
        [sys.executable, "-m", "llmcount", "memory", "deepseek-v3", "--seq", "32k", "--engine", "trtllm", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["kv_cache_bytes"] == 61 * 32768 * 576 * 2
    assert data["engine"]["name"] == "tensorrt-llm"
    assert data["engine"]["defaults"]["tokens_per_block"] == 32
