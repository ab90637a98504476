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


def _table(seq: int, batch: int) -> int:
    """ReqToTokenPool (mem_cache/memory_pool.py): an int32 table of max_running_requests + 1 rows (row 0 padded) of
    context_len + 4 (get_req_to_token_extra_context_len without speculative decoding) token locations, with
    --max-running-requests B and --context-length S."""
    return (batch + 1) * (seq + 4) * 4


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
    assert got.bytes == state + 12 * (32768 + 1) * 2 * 256 * 2 * 2 + _table(32768, 1)
    assert got.settings["mamba_slots_per_request"] == 5


def test_qwen3_next_mamba_pool_under_tp_by_hand():
    """tp = 2, 4 sequences, fp8 KV: one KV head a rank; conv (4,096 + 2·16·128)/2 · 3 = 12,288 in bfloat16, temporal
    16·128·128 = 262,144 in float32; 5·4 + 1 = 21 slots. The states do not depend on S or on the KV dtype."""
    got = engines.kv_cache("sglang", load("qwen3-next-80b-a3b"), 131072, 4, "fp8_e4m3", tp=2)
    state = 36 * 21 * (12_288 * 2 + 262_144 * 4)
    assert got.bytes == state + 12 * (4 * 131072 + 1) * 1 * 256 * 2 * 1 + _table(131072, 4)
    short = engines.kv_cache("sglang", load("qwen3-next-80b-a3b"), 1024, 4, "fp8_e4m3", tp=2)
    assert [k.bytes for k in short.kinds if k.kind == "linear_attention"] == [state]


def test_nemotron_h_ssm_dtype_by_hand(tmp_path):
    """NemotronHConfig's defaults: pattern linear_attention, moe, full_attention, mlp (one Mamba-2 layer, one
    attention layer of 8 KV heads of 128); 128 heads of 64, 8 groups, N = 128, K = 4. Conv (128·64 + 2·8·128)·3 =
    30,720 in bfloat16; temporal 128·64·128 = 1,048,576 in float32 by default, in bfloat16 under the config's
    mamba_ssm_dtype (mamba2_state_dtype); vLLM's key mamba_ssm_cache_dtype is not read. Two sequences: 11 slots."""
    attention = (2 * 32768 + 1) * 8 * 128 * 2 * 2 + _table(32768, 2)
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
    assert got.bytes == 32 * 11 * (3_072 * 2 + 131_072 * 4) + 32 * (2 * 20000 + 1) * 4 * 128 * 2 + _table(20000, 2)


def test_gpt_oss_swa_pool_by_hand():
    """GPT-OSS-20B (GptOssForCausalLM, a hybrid-SWA architecture): 24 layers, 12 full and 12 sliding, 8 KV heads of
    64, bf16: 2,048 bytes a token in a layer. Two sequences of 32,768: the full pool B·S = 65,536 tokens + 1, the
    sliding pool int(65,536 · 0.8) = 52,428 tokens + 1, whatever the window of 128."""
    got = engines.kv_cache("sglang", load("gpt-oss-20b"), 32768, 2)
    assert got.bytes == 12 * (65536 + 1) * 2048 + 12 * (52428 + 1) * 2048 + _table(32768, 2)
    sliding = [k for k in got.kinds if k.kind == "sliding_attention"]
    assert [k.bytes for k in sliding] == [12 * 52429 * 2048]


def test_gpt_oss_smallest_swa_pool_sglang_starts_with():
    """validate_swa_pool_size: the model's window sliding_window − 1 = 127 plus page_size 1 must stay below the
    sliding pool. 2 sequences of 81 tokens: full 162, int(162 · 0.8) = 129 sliding: accepted. 2 of 80: int(160 · 0.8)
    = 128 is refused at startup, so the pools are the smallest SGLang starts with: int(161 · 0.8) = 128 still is,
    int(162 · 0.8) = 129 is not: the same 162 and 129 tokens (+ 1 padded slot each), as for one token."""
    expected = 12 * (162 + 1) * 2048 + 12 * (129 + 1) * 2048
    assert engines.kv_cache("sglang", load("gpt-oss-20b"), 81, 2).bytes == expected + _table(81, 2)
    assert engines.kv_cache("sglang", load("gpt-oss-20b"), 80, 2).bytes == expected + _table(80, 2)
    got = engines.kv_cache("sglang", load("gpt-oss-20b"), 1)
    assert got.bytes == expected + _table(1, 1)
    assert all("validate_swa_pool_size" in k.rule for k in got.kinds if k.layers)


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
    assert text.bytes == 48 * (32768 + 1) * per_token + _table(32768, 1)
    composite = {**_preset("llama-4-scout"), "architectures": ["Llama4ForConditionalGeneration"]}
    got = engines.kv_cache("sglang", _written(tmp_path, composite), 32768)
    assert got.bytes == 12 * (32768 + 1) * per_token + 36 * (26214 + 1) * per_token + _table(32768, 1)
    # S = 10,000: int(10,000 · 0.8) = 8,000 <= 8,192 + 1, refused at startup; the smallest full pool SGLang starts
    # with is 10,243 tokens: int(10,242 · 0.8) = 8,193 is not above 8,193, int(10,243 · 0.8) = 8,194 is
    small = engines.kv_cache("sglang", _written(tmp_path, composite), 10000)
    assert small.bytes == 12 * (10243 + 1) * per_token + 36 * (8194 + 1) * per_token + _table(10000, 1)


def test_refusals_by_name(tmp_path):
    """Jamba (no SGLang model), a model of state layers alone, and the sliding pools of hybrid-SWA architectures
    whose split is not transcribed stay refused, each by name."""
    with pytest.raises(LlmcountError, match="no Jamba model"):
        engines.kv_cache("sglang", _written(tmp_path, _class_config("jamba")), 4096)
    eng = engines.engine("sglang")
    assert "step3p5" in set(eng.pooled) - set(eng.swa)


def test_req_to_token_table_by_hand():
    """Llama-3-8B, 4 sequences of 8,192 tokens: the token pool of 32 layers and, beside it, the int32 table of
    (4 + 1) rows of 8,192 + 4 token locations: 163,920 bytes, on every TP rank alike."""
    got = engines.kv_cache("sglang", load("llama-3-8b"), 8192, 4)
    (table,) = [k for k in got.kinds if k.kind == "req_to_token"]
    assert (table.layers, table.tokens, table.bytes) == (0, 8196, 5 * 8196 * 4) == (0, 8196, 163_920)
    assert engines.kv_cache("sglang", load("llama-3-8b"), 8192, 4, tp=8).kinds[-1].bytes == 163_920
    assert any(d.startswith("req_to_token (a table, not a layer)") for d in got.differences())


def test_page_size_per_attention_backend_by_hand():
    """Llama-3-8B, 3 sequences of 1,000 tokens, 4,096 bytes a token a layer (8 KV heads of 128, K and V, bf16).
    trtllm_mha resolves page_size 64 (_mla_backend_page_constraints): each sequence in cdiv(1000, 64) = 16 pages =
    1,024 slots, plus one padded page: 3·1,024 + 64 = 3,136 slots a layer. fa4 (a non-MLA model) 128: 8 pages =
    1,024 slots each, 3·1,024 + 128 = 3,200. fa3 keeps page_size 1: 3,001 slots."""
    model = load("llama-3-8b")
    table = _table(1000, 3)
    mha = engines.kv_cache("sglang", model, 1000, 3, attention_backend="trtllm_mha")
    assert mha.bytes == 32 * 3136 * 4096 + table
    assert mha.settings["page_size"] == 64
    assert engines.kv_cache_bytes("sglang", model, 1000, 3, attention_backend="fa4") == 32 * 3200 * 4096 + table
    assert engines.kv_cache_bytes("sglang", model, 1000, 3, attention_backend="FA3") == 32 * 3001 * 4096 + table


def test_page_size_mla_by_hand():
    """DeepSeek-V3 (61 layers of a 576-element latent, bf16), one sequence of 1,000 tokens: flashmla pages of 64,
    1,024 + 64 = 1,088 slots; fa4 leaves an MLA model's page_size at 1 (_fa4_page_constraint): 1,001 slots."""
    model = load("deepseek-v3")
    table = _table(1000, 1)
    assert engines.kv_cache_bytes("sglang", model, 1000, attention_backend="flashmla") == 61 * 1088 * 1152 + table
    assert engines.kv_cache_bytes("sglang", model, 1000, attention_backend="fa4") == 61 * 1001 * 1152 + table


def test_swa_pools_in_pages_by_hand():
    """GPT-OSS-20B, 2 sequences of 32,768, pages of 64 (trtllm_mha): the full pool 2·32,768 = 65,536 tokens, the
    sliding pool int(65,536 · 0.8) // 64 · 64 = 52,416, each plus one padded page of 64."""
    got = engines.kv_cache("sglang", load("gpt-oss-20b"), 32768, 2, attention_backend="trtllm_mha")
    assert got.bytes == 12 * (65536 + 64) * 2048 + 12 * (52416 + 64) * 2048 + _table(32768, 2)


def test_attention_backend_refused_by_name():
    with pytest.raises(LlmcountError, match="did you mean flashinfer"):
        engines.kv_cache("sglang", load("llama-3-8b"), 4096, attention_backend="flashinfr")
    with pytest.raises(LlmcountError, match="--attention-backend is an SGLang setting, not vLLM's"):
        engines.kv_cache("vllm", load("llama-3-8b"), 4096, attention_backend="fa3")
    with pytest.raises(LlmcountError, match=r"Mamba state tracking .* under page_size 64"):
        engines.kv_cache("sglang", load("qwen3-next-80b-a3b"), 4096, attention_backend="trtllm_mha")


@pytest.mark.parametrize(
    "backend, model, needle",
    [
        ("flashmla", "llama-3-8b", "runs it for MLA models only"),
        ("trtllm_mla", "llama-3-8b", "runs it for MLA models only"),
        ("cutedsl_mla", "llama-3-8b", "runs it for MLA models only"),
        ("trtllm_mha", "deepseek-v3", "runs it for non-MLA models only"),
        ("hpc_ops", "deepseek-v3", "runs it for non-MLA models only"),
    ],
)
def test_attention_backend_for_one_kind_of_model(backend, model, needle):
    """SGLang stops at startup when an MLA-only backend (create_trtllm_mla_backend, create_cutedsl_mla_backend,
    FlashMLABackend reading kv_lora_rank) meets a model without MLA, or a non-MLA backend (create_trtllm_mha_backend,
    create_hpc_ops_backend) an MLA model (layers/attention/attention_registry.py): refused by name, here too."""
    with pytest.raises(LlmcountError, match=f"--attention-backend {backend}: SGLang {needle}"):
        engines.kv_cache("sglang", load(model), 4096, attention_backend=backend)


@pytest.mark.parametrize(
    "args, code, needle",
    [
        (["--engine", "sglang", "--attention-backend", "trtllm_mh"], 1, "did you mean trtllm_mha"),
        (["--engine", "llama.cpp", "--attention-backend", "fa3"], 1, "an SGLang setting, not llama.cpp's"),
        (["--attention-backend", "fa3"], 2, "engine settings: give --engine"),
        (["--engine", "sglang", "--attention-backend", "fa3", "--gpu-memory", "80GB"], 1, "--engine sizes"),
    ],
)
def test_cli_attention_backend_one_line_errors(args, code, needle):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "llmcount", "memory", "llama-3-8b", "--seq", "1000", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == code, done.stderr
    assert done.stdout == ""
    assert needle in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_cli_attention_backend_per_gpu():
    """tp = 2, fa4 (pages of 128): 4 KV heads a rank, 2,048 bytes a token a layer; one sequence of 1,000 tokens in
    8 pages, plus the padded page: 1,152 slots in each of 32 layers, and the table of 2 rows of 1,004."""
    import subprocess
    import sys

    args = ["memory", "llama-3-8b", "--seq", "1000", "--engine", "sglang", "--attention-backend", "fa4", "--tp", "2"]
    done = subprocess.run(
        [sys.executable, "-m", "llmcount", *args, "--json"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["kv_cache_bytes_per_gpu"] == 32 * 1152 * 2048 + _table(1000, 1)
    assert data["engine"]["settings"] == {"attention_backend": "fa4"}


def test_gemma4_swa_pools_by_hand(tmp_path):
    """Gemma4TextConfig's defaults: 30 layers, 5 full (every sixth) and 25 sliding; 4 KV heads; sliding layers
    head_dim 256, full layers global_head_dim 512 (_apply_gemma4_attention_overrides keeps each layer type's own
    shape: the full pool 2 · 4 · 512 · 2 = 8,192 bytes a token, the sliding pool 2 · 4 · 256 · 2 = 4,096). One
    sequence of 32,768: the full pool 32,768 + 1 slots, the sliding pool int(32,768 · 0.8) = 26,214 + 1; the window
    sliding_window − 1 = 511 (gemma4_causal.py) stays below it."""
    got = engines.kv_cache("sglang", _written(tmp_path, _class_config("gemma4_text")), 32768)
    assert got.bytes == 5 * (32768 + 1) * 8192 + 25 * (26214 + 1) * 4096 + _table(32768, 1)
    # S = 600: int(600 · 0.8) = 480 <= 511 + 1 is refused at startup; the smallest full pool SGLang starts with has
    # int(full · 0.8) > 512: int(641 · 0.8) = 512 is not, int(642 · 0.8) = 513 is: 642 and 513 tokens
    small = engines.kv_cache("sglang", _written(tmp_path, _class_config("gemma4_text")), 600)
    assert small.bytes == 5 * (642 + 1) * 8192 + 25 * (513 + 1) * 4096 + _table(600, 1)


def test_gemma4_kv_shared_layers_refused(tmp_path):
    config = _class_config("gemma4_text", num_kv_shared_layers=10)
    with pytest.raises(LlmcountError, match="num_kv_shared_layers = 10"):
        engines.kv_cache("sglang", _written(tmp_path, config), 4096)


def _mimo_checkpoint(**extra) -> dict:
    """MiMoV2FlashConfig's defaults with the checkpoint's own keys SGLang's models/mimo_v2.py reads: the split
    hybrid_layer_pattern (1 = sliding) from layer_types, 8 sliding KV heads of 192 (K) and 128 (V), a window of
    128 (transformers' sliding_window is sliding_window_size + 1 = 129)."""
    base = _class_config("mimo_v2_flash")
    pattern = [1 if kind == "sliding_attention" else 0 for kind in base["layer_types"]]
    keys = {"swa_num_key_value_heads": 8, "swa_head_dim": 192, "swa_v_head_dim": 128, "sliding_window_size": 128}
    return {**base, "hybrid_layer_pattern": pattern, **keys, **extra}


def test_mimo_v2_swa_pools_by_hand(tmp_path):
    """48 layers, 9 full and 39 sliding. The full pool: 4 KV heads of 192 + 128 = 1,280 elements a token, bf16
    2,560 bytes; the sliding pool: 8 heads of 192 + 128 = 2,560 elements, 5,120 bytes. One sequence of 32,768: the
    full pool 32,768 + 1 slots, the sliding pool int(32,768 · 0.8) = 26,214 + 1."""
    got = engines.kv_cache("sglang", _written(tmp_path, _mimo_checkpoint()), 32768)
    assert got.bytes == 9 * (32768 + 1) * 2560 + 39 * (26214 + 1) * 5120 + _table(32768, 1)
    # the window is the checkpoint's sliding_window_size, 128: S = 100 gives int(100 · 0.8) = 80 <= 129, refused at
    # startup; the smallest full pool SGLang starts with: int(162 · 0.8) = 129 is not above 129, int(163 · 0.8) = 130
    small = engines.kv_cache("sglang", _written(tmp_path, _mimo_checkpoint()), 100)
    assert small.bytes == 9 * (163 + 1) * 2560 + 39 * (130 + 1) * 5120 + _table(100, 1)


def test_mimo_v2_refused_without_the_checkpoint_keys(tmp_path):
    with pytest.raises(LlmcountError, match="reads hybrid_layer_pattern from the checkpoint's config"):
        engines.kv_cache("sglang", _written(tmp_path, _class_config("mimo_v2_flash")), 4096)
    with pytest.raises(LlmcountError, match="5,120 elements a token in its sliding_attention pool"):
        engines.kv_cache("sglang", _written(tmp_path, _mimo_checkpoint(swa_num_key_value_heads=16)), 4096)
    pattern = [1] * 48
    with pytest.raises(LlmcountError, match="hybrid_layer_pattern gives 48 sliding_attention layers"):
        engines.kv_cache("sglang", _written(tmp_path, _mimo_checkpoint(hybrid_layer_pattern=pattern)), 4096)
