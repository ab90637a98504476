"""SGLang's Mamba state pool and hybrid sliding-window pool (llmcount.engines, memory --engine sglang).

SGLang needs a GPU to import its memory pools, so every figure here is a hand derivation from the lines of the
sglang 0.5.23 wheel cited in llmcount/engines/sglang.toml:

- mem_cache/memory_pool.py MambaPool: conv and temporal buffers of (mamba layers, max_mamba_cache_size + 1, ...);
  configs/mamba_utils.py Mamba2StateShape.create: groups extended to tp when tp does not divide them, conv
  ((I + 2·groups·N)/tp, K − 1) in bfloat16 (SGLANG_MAMBA_CONV_DTYPE), temporal (H/tp, head_dim, N) in float32 unless
  the config says mamba_ssm_dtype;
- mem_cache/kv_cache_configurator.py _calculate_mamba_ratio: 3 slots a running request with the radix cache, 2 more
  under the extra_buffer strategy with the overlap schedule (the default for Qwen3-Next, Nemotron-H, Falcon-H1);
- model_executor/pool_configurator.py HybridSWAPoolConfigurator: the full layers' pool of B·S tokens, the sliding
  layers' pool of int(B·S · 0.8) tokens, each plus page_size (1) padded slot; SGLang refuses to start when the
  sliding window + page_size reaches the sliding pool, so below that the pools are the smallest it starts with.
"""

from __future__ import annotations

import json

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


def _preset(name: str) -> dict:
    from pathlib import Path

    return json.loads((Path(__file__).parents[1] / "llmcount" / "presets" / f"{name}.json").read_text())


def test_qwen3_next_mamba_pool_by_hand():
    """Qwen3-Next-80B-A3B, bf16, tp = 1, one sequence of 32,768 tokens. Gated DeltaNet on Mamba2StateShape.create
    (configs/qwen3_next.py): I = 32·128 = 4,096, groups = 16 key heads, N = 128, K = 4: conv (4,096 + 2·16·128)·3
    = 24,576 elements · 2 bytes = 49,152; temporal 32·128·128 = 524,288 · 4 = 2,097,152; 2,146,304 bytes a slot in
    each of 36 layers; 5 slots for the one request plus the padded slot: 6. The 12 attention layers: B·S + 1 slots
    of 2 KV heads of 256, K and V, bf16."""
    got = engines.kv_cache("sglang", load("qwen3-next-80b-a3b"), 32768)
    state = 36 * 6 * (24_576 * 2 + 524_288 * 4)
    assert state == 463_601_664
    assert got.bytes == state + 12 * (32768 + 1) * 2 * 256 * 2 * 2
    assert got.settings["mamba_slots_per_request"] == 5


def test_qwen3_next_mamba_pool_under_tp_by_hand():
    """tp = 2, 4 sequences, fp8 KV: one KV head a rank; conv (4,096 + 2·16·128)/2 · 3 = 12,288 in bfloat16, temporal
    16·128·128 = 262,144 in float32; 5·4 + 1 = 21 slots. The states do not depend on S or on the KV dtype."""
    got = engines.kv_cache("sglang", load("qwen3-next-80b-a3b"), 131072, 4, "fp8_e4m3", tp=2)
    state = 36 * 21 * (12_288 * 2 + 262_144 * 4)
    assert got.bytes == state + 12 * (4 * 131072 + 1) * 1 * 256 * 2 * 1
    short = engines.kv_cache("sglang", load("qwen3-next-80b-a3b"), 1024, 4, "fp8_e4m3", tp=2)
    assert [k.bytes for k in short.kinds if k.kind == "linear_attention"] == [state]


def test_nemotron_h_ssm_dtype_by_hand(tmp_path):
    """NemotronHConfig's defaults: pattern linear_attention, moe, full_attention, mlp (one Mamba-2 layer, one
    attention layer of 8 KV heads of 128); 128 heads of 64, 8 groups, N = 128, K = 4. Conv (128·64 + 2·8·128)·3 =
    30,720 in bfloat16; temporal 128·64·128 = 1,048,576 in float32 by default, in bfloat16 under the config's
    mamba_ssm_dtype (mamba2_state_dtype); vLLM's key mamba_ssm_cache_dtype is not read. Two sequences: 11 slots."""
    attention = (2 * 32768 + 1) * 8 * 128 * 2 * 2
    base = engines.kv_cache("sglang", _written(tmp_path, _class_config("nemotron_h")), 32768, 2)
    assert base.bytes == attention + 11 * (30_720 * 2 + 1_048_576 * 4)
    other = tmp_path / "vllm_key"
    other.mkdir()
    ignored = engines.kv_cache(
        "sglang", _written(other, _class_config("nemotron_h", mamba_ssm_cache_dtype="bfloat16")), 32768, 2
    )
    assert ignored.bytes == base.bytes
    half = tmp_path / "bf16"
    half.mkdir()
    got = engines.kv_cache("sglang", _written(half, _class_config("nemotron_h", mamba_ssm_dtype="bfloat16")), 32768, 2)
    assert got.bytes == attention + 11 * (30_720 * 2 + 1_048_576 * 2)


def test_falcon_h1_groups_extended_to_tp_by_hand(tmp_path):
    """FalconH1Config's defaults: 32 layers, each with attention (8 KV heads of 4,096/32 = 128) and Mamba-2
    (mamba_d_ssm 1,024, 128 heads of 8, one group, N = 256, K = 4). At tp = 2 the one group is extended to 2:
    conv (1,024 + 2·2·256)/2 · 3 = 3,072 in bfloat16, temporal 64·8·256 = 131,072 in float32; 2 sequences: 11
    slots. Attention: 4 heads a rank, fp8 (one byte)."""
    got = engines.kv_cache("sglang", _written(tmp_path, _class_config("falcon_h1")), 20000, 2, "fp8_e4m3", tp=2)
    assert got.bytes == 32 * 11 * (3_072 * 2 + 131_072 * 4) + 32 * (2 * 20000 + 1) * 4 * 128 * 2


def test_gpt_oss_swa_pool_by_hand():
    """GPT-OSS-20B (GptOssForCausalLM, a hybrid-SWA architecture): 24 layers, 12 full and 12 sliding, 8 KV heads of
    64, bf16: 2,048 bytes a token in a layer. Two sequences of 32,768: the full pool B·S = 65,536 tokens + 1, the
    sliding pool int(65,536 · 0.8) = 52,428 tokens + 1, whatever the window of 128."""
    got = engines.kv_cache("sglang", load("gpt-oss-20b"), 32768, 2)
    assert got.bytes == 12 * (65536 + 1) * 2048 + 12 * (52428 + 1) * 2048
    sliding = [k for k in got.kinds if k.kind == "sliding_attention"]
    assert [k.bytes for k in sliding] == [12 * 52429 * 2048]


def test_gpt_oss_smallest_swa_pool_sglang_starts_with():
    """validate_swa_pool_size: the model's window sliding_window − 1 = 127 plus page_size 1 must stay below the
    sliding pool. 2 sequences of 81 tokens: full 162, int(162 · 0.8) = 129 sliding: accepted. 2 of 80: int(160 · 0.8)
    = 128 is refused at startup, so the pools are the smallest SGLang starts with: int(161 · 0.8) = 128 still is,
    int(162 · 0.8) = 129 is not: the same 162 and 129 tokens (+ 1 padded slot each), as for one token."""
    expected = 12 * (162 + 1) * 2048 + 12 * (129 + 1) * 2048
    assert engines.kv_cache("sglang", load("gpt-oss-20b"), 81, 2).bytes == expected
    assert engines.kv_cache("sglang", load("gpt-oss-20b"), 80, 2).bytes == expected
    got = engines.kv_cache("sglang", load("gpt-oss-20b"), 1)
    assert got.bytes == expected
    assert all("validate_swa_pool_size" in k.rule for k in got.kinds)


def test_fit_under_sglang_with_a_sliding_pool():
    """fit searches S and B through the same pools: every size has a figure, the smallest ones included."""
    from llmcount import serving
    from llmcount.serving import Layout

    model = load("gpt-oss-20b")
    rule = lambda plan: lambda s, b: engines.kv_cache_bytes("sglang", model, s, b, tp=plan.layout.tp)  # noqa: E731
    result = serving.fit(model, 80 * 10**9, Layout(), seq=4096, kv=rule)
    assert result.max_batch > 0 and not result.reason


def test_llama4_pools_by_architecture(tmp_path):
    """Llama 4 Scout's text config, 48 layers of 8 KV heads of 128, 36 of them chunked (8,192 tokens).
    is_hybrid_swa_model lists Llama4ForConditionalGeneration only: under Llama4ForCausalLM every layer shares the
    full pool (S + 1 slots); under Llama4ForConditionalGeneration get_hybrid_layer_ids gives the 36 layers with
    (i + 1) % 4 != 0 the sliding pool of int(32,768 · 0.8) = 26,214 tokens + 1."""
    per_token = 8 * 128 * 2 * 2
    text = engines.kv_cache("sglang", load("llama-4-scout"), 32768)
    assert text.bytes == 48 * (32768 + 1) * per_token
    composite = {**_preset("llama-4-scout"), "architectures": ["Llama4ForConditionalGeneration"]}
    got = engines.kv_cache("sglang", _written(tmp_path, composite), 32768)
    assert got.bytes == 12 * (32768 + 1) * per_token + 36 * (26214 + 1) * per_token
    # S = 10,000: int(10,000 · 0.8) = 8,000 <= 8,192 + 1, refused at startup; the smallest full pool SGLang starts
    # with is 10,243 tokens: int(10,242 · 0.8) = 8,193 is not above 8,193, int(10,243 · 0.8) = 8,194 is
    small = engines.kv_cache("sglang", _written(tmp_path, composite), 10000)
    assert small.bytes == 12 * (10243 + 1) * per_token + 36 * (8194 + 1) * per_token


def test_refusals_by_name(tmp_path):
    """Jamba (no SGLang model), a model of state layers alone, and the sliding pools of hybrid-SWA architectures
    whose split is not transcribed stay refused, each by name."""
    with pytest.raises(LlmcountError, match="no Jamba model"):
        engines.kv_cache("sglang", _written(tmp_path, _class_config("jamba")), 4096)
    eng = engines.engine("sglang")
    assert {"mimo_v2_flash", "step3p5", "gemma4_text"} <= set(eng.pooled) - set(eng.swa)
