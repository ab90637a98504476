"""LMDeploy's KV cache on its PyTorch engine (llmcount.engines, memory --engine lmdeploy).

The bytes of one block come from LMDeploy's own code where it imports (LLMCOUNT_LMDEPLOY_PATH, a path list: the
unpacked 0.18.0 wheel and its small pure-Python dependencies, installed with ``pip install --no-deps --target``):
``ModelConfig.from_hf_config`` reads the config as the engine does (heads per rank, head_dim, the MLA latent) and
``build_block_cache_plan(...).logical_block_nbytes`` allocates one block of every layer on the meta device. The
number of blocks is a hand derivation from the lines cited in llmcount/engines/lmdeploy.toml:

- strategies/ar/engine.py get_prealloc_size: a decoding schedule preallocates prefill_interval = 16 tokens, so a
  sequence's last schedule, at S − 1 tokens, holds cdiv(S − 1 + 16, 64) blocks
  (default_block_manager.py num_required_blocks);
- engine/engine.py _get_max_session_len: a session of S tokens needs (blocks − reserved) · 64 − 64 ≥ S;
- engine/config_builder.py: num_reserved_gpu_blocks = 1.

The hand derivations below run everywhere; the oracle tests skip where the wheel is not unpacked (CI unpacks it).
"""

from __future__ import annotations

import json
import os
import sys
from functools import cache

import pytest

from llmcount import engines
from llmcount.errors import LlmcountError
from llmcount.sources import load


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def blocks(seq: int, batch: int) -> int:
    """The pool for B sequences of S tokens, by hand from the lines cited above."""
    return max(batch * _cdiv(seq - 1 + 16, 64), _cdiv(seq, 64) + 1) + 1


def _written(tmp_path, config: dict):
    (tmp_path / "config.json").write_text(json.dumps(config))
    return load(str(tmp_path))


# ---------------------------------------------------------------- hand derivations (run everywhere)


def test_dense_gqa_by_hand():
    """Llama-3-8B, bf16: 32 layers, 8 KV heads of 128. A block of a layer: K and V of 64 · 8 · 128 · 2 = 131,072
    bytes each (whole multiples of 256). Four sequences of 8,192 tokens: 4 · cdiv(8191 + 16, 64) = 4 · 129 = 516
    blocks, plus the reserved one."""
    got = engines.kv_cache("lmdeploy", load("llama-3-8b"), 8192, 4)
    assert got.bytes == 32 * 517 * 2 * 131_072
    assert blocks(8192, 4) == 517
    (kind,) = got.kinds
    assert kind.tokens == 129 * 64
    assert got.engine.settings["cache_max_entry_count"] == 0.8


def test_one_sequence_needs_the_session_block_by_hand():
    """B = 1, S = 100: the last schedule holds cdiv(99 + 16, 64) = 2 blocks, but LMDeploy admits a session of 100
    tokens only when (blocks − 1) · 64 − 64 ≥ 100, i.e. 3 blocks besides the reserved one: 4 in all."""
    got = engines.kv_cache("lmdeploy", load("llama-3-8b"), 100, 1)
    assert got.bytes == 32 * 4 * 2 * 131_072
    assert "session length" in got.kinds[0].rule


def test_int4_and_int8_scales_by_hand():
    """quant_policy 4 on Llama-3-8B at tp = 8 (one head a rank): K and V of 64 · 1 · 128 / 2 = 4,096 bytes each,
    their scales and zeros of 64 · 1 · 2 · 2 = 256 bytes each; quant_policy 8: 8,192 bytes each and the same scales;
    fp8 (16): 8,192 each, no scales. One sequence of 4,096 tokens: cdiv(4095 + 16, 64) = 65 blocks, + 1."""
    model = load("llama-3-8b")
    n = 32 * 66
    assert engines.kv_cache_bytes("lmdeploy", model, 4096, 1, "int4", tp=8) == n * (2 * 4096 + 2 * 256)
    assert engines.kv_cache_bytes("lmdeploy", model, 4096, 1, "8", tp=8) == n * (2 * 8192 + 2 * 256)
    assert engines.kv_cache_bytes("lmdeploy", model, 4096, 1, "fp8", tp=8) == n * 2 * 8192
    # TurboQuant (42): K at 4 bits, V at 2 bits, K scales 2 and V scales 1 element a head (128 bytes, padded to 256)
    assert engines.kv_cache_bytes("lmdeploy", model, 4096, 1, "turbo_quant", tp=8) == n * (4096 + 2048 + 256 + 256)


def test_mla_latent_by_hand():
    """DeepSeek-V3: one key head of 512 + 64 = 576 elements and no V (v_head_dim 0): 64 · 576 · 2 = 73,728 bytes a
    block per layer, 61 layers, the same on every rank (the one head replicated to tp)."""
    model = load("deepseek-v3")
    got = engines.kv_cache("lmdeploy", model, 5000)
    assert got.bytes == 61 * blocks(5000, 1) * 73_728
    assert engines.kv_cache_bytes("lmdeploy", model, 5000, tp=8) == got.bytes


def test_refusals_by_name(tmp_path):
    """A window LMDeploy gives every layer (Mistral-7B-v0.1's sliding_window), a config builder not transcribed, a
    head count tp does not divide, an unknown quant policy: one LlmcountError naming it."""
    with pytest.raises(LlmcountError, match="every layer of mistral the window sliding_window = 4096"):
        engines.kv_cache("lmdeploy", load("mistral-7b"), 8192)
    with pytest.raises(LlmcountError, match="config builder gives falcon"):
        engines.kv_cache("lmdeploy", load("falcon-7b"), 8192)
    with pytest.raises(LlmcountError, match="--tp 3 does not divide"):
        engines.kv_cache("lmdeploy", load("llama-3-8b"), 8192, tp=3)
    # 64 query heads over 16 ranks divide, 8 KV heads are replicated; 40 query heads over 16 do not
    engines.kv_cache("lmdeploy", load("llama-3.1-70b"), 8192, tp=16)
    config = {**json.loads(engines.HERE.parent.joinpath("presets", "llama-3-8b.json").read_text())}
    config.update(num_attention_heads=40, hidden_size=5120, num_key_value_heads=8)
    with pytest.raises(LlmcountError, match="--tp 16 does not divide the 40 query heads"):
        engines.kv_cache("lmdeploy", _written(tmp_path, config), 8192, tp=16)
    with pytest.raises(LlmcountError, match="no KV cache dtype 'q8_0'"):
        engines.check("lmdeploy", "q8_0")


def test_gpt_oss_sliding_layers_run_full():
    """GPT-OSS: LMDeploy's config builder sets sliding_window = -1, so its sliding layers keep every token."""
    model = load("gpt-oss-20b")
    got = engines.kv_cache("lmdeploy", model, 32768)
    sliding = next(k for k in got.kinds if k.kind == "sliding_attention")
    assert sliding.engine_kind == "full_attention"
    assert "sliding_window = -1" in sliding.rule
    # 24 layers of 8 KV heads of 64: K and V of 64 · 8 · 64 · 2 = 65,536 bytes a block each
    assert got.bytes == 24 * blocks(32768, 1) * 2 * 65_536


def test_cli_json():
    """memory --engine lmdeploy --json: kv_cache_bytes is the engine's figure."""
    from typer.testing import CliRunner

    from llmcount.cli.app import app

    args = ["memory", "llama-3-8b", "--seq", "8k", "--batch", "4", "--engine", "lmdeploy", "--kv-dtype", "int8"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # int8: K and V of 64 · 8 · 128 one-byte elements, scales and zeros of 64 · 8 · 2 · 2 bytes each
    assert data["kv_cache_bytes"] == 32 * 517 * (2 * 65_536 + 2 * 2048)
    assert data["engine"]["name"] == "lmdeploy"


# ---------------------------------------------------------------- against LMDeploy's own code


@cache
def lmdeploy_oracle():
    for path in reversed(os.environ.get("LLMCOUNT_LMDEPLOY_PATH", "").split(os.pathsep)):
        if path and path not in sys.path:
            sys.path.insert(0, path)
    pytest.importorskip("lmdeploy.pytorch.engine.cache_engine.plan", reason="lmdeploy is not installed")
    import lmdeploy.pytorch.config as config

    # _update_torch_dtype asks CUDA whether bf16 runs (compute capability 8 or more); on older GPUs it falls back to
    # float16, two bytes too, so the answer does not change the bytes
    config.is_bf16_supported = lambda *args, **kwargs: True
    # FlashMLA needs a GPU of its own kind; with it the block size must be 64, the default, and the layout is the same
    import lmdeploy.pytorch.configurations.deepseek_v2 as deepseek_v2

    deepseek_v2.flash_mla_available = lambda: False
    return config


def lmdeploy_block_bytes(config_dict: dict, tp: int, quant_policy: int) -> int:
    """logical_block_nbytes of LMDeploy's own plan for this config.json at tp ranks: one block of every layer."""
    lm = lmdeploy_oracle()
    import transformers
    from lmdeploy.messages import QuantPolicy
    from lmdeploy.pytorch.engine.cache_engine.plan import build_block_cache_plan

    hf = transformers.AutoConfig.for_model(**config_dict)
    model_config = lm.ModelConfig.from_hf_config(hf, dist_config=lm.DistConfig(tp=tp))
    cache_config = lm.CacheConfig(
        max_batches=8, block_size=64, num_cpu_blocks=0, num_gpu_blocks=0, quant_policy=QuantPolicy(quant_policy)
    )
    return build_block_cache_plan(model_config, cache_config, world_size=tp).logical_block_nbytes


LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 640,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "num_hidden_layers": 3,
    "intermediate_size": 1024,
    "vocab_size": 1000,
    "torch_dtype": "bfloat16",
}
MIXTRAL = {
    **LLAMA,
    "model_type": "mixtral",
    "architectures": ["MixtralForCausalLM"],
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "sliding_window": None,
}
QWEN3 = {**LLAMA, "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "head_dim": 96}
DEEPSEEK = {
    "model_type": "deepseek_v3",
    "architectures": ["DeepseekV3ForCausalLM"],
    "hidden_size": 256,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "num_hidden_layers": 2,
    "intermediate_size": 512,
    "moe_intermediate_size": 128,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
    "kv_lora_rank": 96,
    "q_lora_rank": 64,
    "qk_rope_head_dim": 32,
    "qk_nope_head_dim": 32,
    "v_head_dim": 32,
    "vocab_size": 1000,
    "torch_dtype": "bfloat16",
}
NAMES = {0: "auto", 4: "int4", 8: "int8", 16: "fp8", 17: "fp8_e5m2", 42: "turbo_quant"}


@pytest.mark.parametrize(
    ("config", "tp", "policy"),
    [
        (LLAMA, 1, 0),
        (LLAMA, 2, 4),  # heads split
        (LLAMA, 4, 8),  # heads replicated: 2 heads over 4 ranks
        (MIXTRAL, 1, 16),
        (QWEN3, 2, 42),  # head_dim from the config, not hidden / heads
        (QWEN3, 1, 17),
        (DEEPSEEK, 1, 0),  # the MLA latent, no V
        (DEEPSEEK, 2, 4),  # int4 latent: scales for K and for the empty V
    ],
)
def test_block_bytes_against_lmdeploy(tmp_path, config, tp, policy):
    """The engine's figure is the hand-derived block count times LMDeploy's own bytes of one block of all layers."""
    one_block = lmdeploy_block_bytes(config, tp, policy)
    model = _written(tmp_path, config)
    for seq, batch in ((1000, 3), (64, 1), (4097, 2)):
        got = engines.kv_cache("lmdeploy", model, seq, batch, NAMES[policy], tp=tp)
        assert got.bytes == blocks(seq, batch) * one_block, (seq, batch)
