"""Engines' KV cache conventions (llmcount.engines, memory --engine).

vLLM: its own KVCacheSpec classes (vllm/v1/kv_cache_interface.py of the vllm 0.33.0 wheel, commit 4ba787ec9) are
the oracle where vllm imports (``pip install --no-deps vllm==0.33.0``, or an unpacked wheel folder named by
LLMCOUNT_VLLM_PATH); which layers slide, and the key/value heads per rank, are transcribed in :func:`vllm_layers`
from vLLM's model files. SGLang and llama.cpp, and vLLM where it does not import: hand derivations from the cited
source lines, written out below.
"""

from __future__ import annotations

import json
import os
import sys
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import pytest
from refusal import assert_refused, assert_usage, run

from llmcount import engines
from llmcount.sources import load

PRESETS = Path(__file__).parents[1] / "llmcount" / "presets"
GIB = 2**30


def preset(name: str) -> dict:
    return json.loads((PRESETS / f"{name}.json").read_text())


# ---------------------------------------------------------------- vLLM, against its own classes


@cache
def vllm_interface():
    for path in reversed(os.environ.get("LLMCOUNT_VLLM_PATH", "").split(os.pathsep)):
        if path and path not in sys.path:
            sys.path.insert(0, path)
    return pytest.importorskip("vllm.v1.kv_cache_interface", reason="vllm is not installed (pip install --no-deps)")


def vllm_config(max_model_len: int, batched: int):
    """The parts of a VllmConfig the specs read. max_in_flight_tokens transcribed from vllm/config/vllm.py (0.33.0,
    lines 588-609): max_concurrent_batches = 2 under async scheduling (on by default) at pp = 1, times
    max_num_batched_tokens. (vllm.config itself needs cbor2, zmq, aiohttp ... to import.)"""
    return SimpleNamespace(
        model_config=SimpleNamespace(max_model_len=max_model_len),
        parallel_config=SimpleNamespace(decode_context_parallel_size=1, pipeline_parallel_size=1),
        max_in_flight_tokens=2 * batched,
    )


def vllm_layers(name: str, config: dict, tp: int, cache_dtype: str, extra: dict | None = None):
    """One vLLM KVCacheSpec per layer, as vLLM's model file builds them (0.33.0):
    llama.py / mistral: a layer slides only where config.layer_types says so (getattr(config, "layer_types"));
    mixtral.py: no window; gemma2.py: config.layer_types (Gemma2Config fills it); gpt_oss.py: the even layers slide;
    llama4.py: ChunkedLocalAttention where no_rope_layers[i] != 0; deepseek_v2.py: MLAAttentionSpec of one head of
    kv_lora_rank + qk_rope_head_dim. Heads per rank: max(1, total_num_kv_heads // tp) (llama.py line 156)."""
    import torch
    import transformers

    kvi = vllm_interface()
    dtypes = {"auto": torch.bfloat16, "bfloat16": torch.bfloat16, "fp8": torch.uint8, "fp8_e5m2": torch.uint8}
    dtype = dtypes[cache_dtype]  # vllm/utils/torch_utils.py STR_DTYPE_TO_TORCH_DTYPE: fp8 kinds stored as uint8
    config = {**config, **(extra or {})}
    text = config.get("text_config", config)
    n = text["num_hidden_layers"]
    if "kv_lora_rank" in text:
        spec = kvi.MLAAttentionSpec(
            block_size=16, num_kv_heads=1, head_size=text["kv_lora_rank"] + text["qk_rope_head_dim"], dtype=dtype
        )
        return [spec] * n
    heads = text.get("num_key_value_heads") or text["num_attention_heads"]
    head_dim = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
    full = kvi.FullAttentionSpec(block_size=16, num_kv_heads=max(1, heads // tp), head_size=head_dim, dtype=dtype)
    model_type = text["model_type"]
    window = text.get("sliding_window")
    if model_type == "gemma2":
        kinds = transformers.Gemma2Config(**{k: v for k, v in text.items() if k != "model_type"}).layer_types
        sliding = [kind == "sliding_attention" for kind in kinds]
    elif model_type == "gpt_oss":
        sliding = [i % 2 == 0 for i in range(n)]
    elif model_type == "llama4_text":
        chunk = text["attention_chunk_size"]
        rope = transformers.Llama4TextConfig(num_hidden_layers=n).no_rope_layers
        spec = kvi.ChunkedLocalAttentionSpec(
            block_size=16, num_kv_heads=full.num_kv_heads, head_size=head_dim, dtype=dtype, attention_chunk_size=chunk
        )
        return [spec if rope[i] else full for i in range(n)]
    elif model_type == "mixtral":
        sliding = [False] * n
    else:
        keys = {k: v for k, v in text.items() if k != "model_type"}
        kinds = getattr(transformers.AutoConfig.for_model(model_type, **keys), "layer_types", None)
        sliding = [kind == "sliding_attention" for kind in kinds] if kinds else [False] * n
    spec = kvi.SlidingWindowSpec(
        block_size=16, num_kv_heads=full.num_kv_heads, head_size=head_dim, dtype=dtype, sliding_window=window or 1
    )
    return [spec if slides and window else full for slides in sliding]


VLLM_CASES = [
    # (preset, S, B, tp, kv dtype, max_num_batched_tokens, extra config keys)
    ("llama-2-7b", 4096, 3, 1, "auto", None, None),  # dense MHA
    ("llama-3-8b", 32768, 1, 1, "auto", None, None),  # GQA
    ("llama-3-8b", 32768, 2, 4, "fp8", None, None),  # GQA split over TP
    ("llama-3-8b", 10000, 1, 16, "auto", None, None),  # 8 KV heads replicated over 16 ranks
    ("qwen3-30b-a3b", 8000, 4, 1, "fp8_e5m2", None, None),  # MoE
    ("mixtral-8x7b", 32768, 1, 1, "auto", None, None),  # MoE, no window in vLLM's mixtral.py
    ("deepseek-v3", 32768, 2, 8, "auto", None, None),  # MLA: the latent on every rank
    ("deepseek-v2-lite", 5000, 1, 1, "fp8", None, None),
    ("mistral-7b", 32768, 1, 1, "auto", None, None),  # no layer_types: every layer full
    ("mistral-7b", 32768, 1, 1, "auto", 8192, {"layer_types": ["sliding_attention"] * 32}),
    ("gemma-2-2b", 32768, 1, 1, "auto", None, None),  # sliding
    ("gemma-2-2b", 32768, 2, 1, "bfloat16", 8192, None),
    ("gemma-2-2b", 3000, 1, 1, "auto", None, None),  # the window beyond S
    ("gpt-oss-20b", 20000, 1, 1, "auto", 512, None),  # sliding window 128, MoE
    ("llama-4-scout", 32768, 1, 1, "auto", None, None),  # chunked local attention
    ("gemma-3-1b-it", 32768, 3, 1, "fp8", None, None),  # 5 sliding layers to 1 full
    ("phi-3-mini", 8192, 1, 1, "auto", None, None),  # Phi3ForCausalLM is llama.py's: no layer_types, no window
]


def _model(name: str, extra: dict | None, tmp_path: Path):
    if not extra:
        return load(name)
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**preset(name), **extra}))
    return load(str(folder))


def vllm_grouped(layers, config) -> int:
    """One sequence's bytes as vLLM 0.33.0's startup check counts them (vllm/v1/core/kv_cache_planning.py
    _max_memory_usage_bytes_from_groups, with _get_kv_cache_groups_uniform_page_size's groups; the module needs
    xgrammar and more to import, so its grouping is transcribed here): layers of equal specs form one kind; G is the
    fewest layers of a kind, or the most when that is under 1.5 times the fewest; a kind of N layers is split into
    cdiv(N, G) groups, a block of the pool holds G layers' pages (_get_kv_cache_bytes_per_block), so the kind
    takes cdiv(N, G) · G times its spec's max_memory_usage_bytes."""
    kinds: dict = {}  # repr(spec) -> [spec, layers]: equal specs, one kind (same_type_layers)
    for spec in layers:
        kinds.setdefault(repr(spec), [spec, 0])[1] += 1
    fewest, most = min(n for _, n in kinds.values()), max(n for _, n in kinds.values())
    group = most if most < fewest * 1.5 else fewest
    return sum(-(-n // group) * group * spec.max_memory_usage_bytes(config) for spec, n in kinds.values())


@pytest.mark.parametrize(("name", "seq", "batch", "tp", "dtype", "batched", "extra"), VLLM_CASES)
def test_vllm_matches_its_kv_cache_specs(name, seq, batch, tp, dtype, batched, extra, tmp_path):
    layers = vllm_layers(name, preset(name), tp, dtype, extra)
    config = vllm_config(seq, batched or 2048)
    expected = batch * vllm_grouped(layers, config)
    got = engines.kv_cache(
        "vllm", _model(name, extra, tmp_path), seq, batch, dtype, tp=tp, max_num_batched_tokens=batched
    )
    assert got.bytes == expected, f"vLLM 0.33.0's specs: {expected:,}"


# ---------------------------------------------------------------- vLLM, by hand (runs without vllm)


def test_vllm_mistral_runs_every_layer_full_by_hand():
    """vLLM 0.33.0: FullAttentionSpec.max_memory_usage_bytes = cdiv(max_model_len, 16) · page_size_bytes,
    page_size_bytes = 16 · num_kv_heads · (head_size + head_size_v) · 2 bytes (bf16); Mistral-7B-v0.1: 32 layers,
    8 KV heads of 128; transformers keeps W − 1 = 4,095 tokens on each."""
    got = engines.kv_cache("vllm", load("mistral-7b"), 32768, 1)
    assert got.bytes == 32 * (32768 // 16) * (16 * 8 * (128 + 128) * 2) == 4 * GIB
    assert got.transformers_bytes == 32 * 4095 * 8 * 256 * 2
    assert got.bytes / got.transformers_bytes == pytest.approx(8.0, rel=1e-3)
    (kind,) = got.kinds
    assert kind.engine_kind == "full_attention" and "no layer_types" in kind.rule


def test_vllm_gemma2_sliding_by_hand():
    """SlidingWindowSpec: (cdiv(min(W − 1 + 2 · max_num_batched_tokens, S), 16) + 1) pages; Gemma-2-2B: 13 sliding
    and 13 full layers (even layers slide), 4 KV heads of 256, W = 4096."""
    page = 16 * 4 * 512 * 2
    got = engines.kv_cache("vllm", load("gemma-2-2b"), 32768, 1, max_num_batched_tokens=8192)
    sliding = -(-min(4095 + 16384, 32768) // 16) + 1
    assert sliding == 1281
    assert got.bytes == 13 * 2048 * page + 13 * sliding * page


def test_vllm_mla_latent_by_hand():
    """MLAAttentionSpec: one head of kv_lora_rank + qk_rope_head_dim = 512 + 64, head_size_v = 0; DeepSeek-V3: 61
    layers; the same on every TP rank."""
    one = engines.kv_cache("vllm", load("deepseek-v3"), 32768, 1, tp=8).bytes
    assert one == 61 * 2048 * 16 * 576 * 2


def test_vllm_refuses_sliding_layers_of_model_files_not_transcribed():
    with pytest.raises(engines.LlmcountError, match="starcoder2 runs with a window"):
        engines.kv_cache("vllm", load("starcoder2-7b"), 4096)


# ---------------------------------------------------------------- vLLM, hybrid models against its own code


@cache
def vllm_mamba():
    """vLLM's state calculators and Platform._align_hybrid_block_size; they import vllm.config, which needs pyzmq,
    cbor2, aiohttp, openai ... (``pip install --no-deps --target DIR`` them and add DIR to LLMCOUNT_VLLM_PATH)."""
    vllm_interface()
    try:
        from vllm.model_executor.layers.mamba import mamba_utils
        from vllm.platforms.interface import Platform
    except ImportError as error:
        pytest.skip(f"vllm's mamba_utils do not import here ({error})")
    return mamba_utils, Platform


def vllm_state(model_type: str, text: dict, tp: int):
    """The state shapes and dtypes of one layer as the model file's get_mamba_state_shape_from_config and
    get_mamba_state_dtype_from_config give them (vLLM 0.33.0; config values read as those files read them), and
    whether its mixer keeps a prefill checkpoint block (MambaMixer2.get_kv_cache_spec)."""
    import torch

    utils, _ = vllm_mamba()
    shapes, dtypes = utils.MambaStateShapeCalculator, utils.MambaStateDtypeCalculator
    bf16 = torch.bfloat16
    if model_type == "jamba":  # jamba.py
        shape = shapes.mamba1_state_shape(
            tp, text["mamba_expand"] * text["hidden_size"], text["mamba_d_state"], text["mamba_d_conv"]
        )
        return shape, dtypes.mamba1_state_dtype(bf16, "auto", "auto"), 0
    if model_type == "nemotron_h":  # nemotron_h.py; NemotronHForCausalLMConfig: ssm dtype float32 by default
        shape = shapes.mamba2_state_shape(
            tp,
            text["mamba_num_heads"] * text["mamba_head_dim"],
            text["n_groups"],
            text["mamba_num_heads"],
            text["mamba_head_dim"],
            text["ssm_state_size"],
            text["conv_kernel"],
        )
        ssm = text.get("mamba_ssm_cache_dtype") or "float32"
        return shape, dtypes.mamba2_state_dtype(bf16, "auto", ssm), 1
    if model_type == "falcon_h1":  # falcon_h1.py
        inner = text["mamba_d_ssm"] or int(text["mamba_expand"] * text["hidden_size"])
        shape = shapes.mamba2_state_shape(
            tp,
            inner,
            text["mamba_n_groups"],
            text["mamba_n_heads"],
            text["mamba_d_head"],
            text["mamba_d_state"],
            text["mamba_d_conv"],
        )
        return shape, dtypes.mamba2_state_dtype(bf16, "auto", "auto"), 1
    assert model_type == "qwen3_next"  # qwen3_next.py
    shape = shapes.gated_delta_net_state_shape(
        tp,
        text["linear_num_key_heads"],
        text["linear_num_value_heads"],
        text["linear_key_head_dim"],
        text["linear_value_head_dim"],
        text["linear_conv_kernel_dim"],
    )
    return shape, dtypes.gated_delta_net_state_dtype(bf16, "auto", "auto"), 0


def vllm_hybrid_bytes(config: dict, seq: int, batch: int, tp: int, cache_dtype: str) -> tuple[int, int]:
    """B sequences' bytes as vLLM 0.33.0 reserves them for a hybrid model, and its attention block size: vLLM's own
    Platform._align_hybrid_block_size (FlashAttention's kernel blocks MultipleOf(16), mamba_cache_mode align) sets
    the block size and the padded state page; FullAttentionSpec and MambaSpec of each layer sum
    max_memory_usage_bytes."""
    import torch
    import transformers

    kvi = vllm_interface()
    _, platform = vllm_mamba()
    from vllm.model_executor import models
    from vllm.v1.attention.backend import MultipleOf

    model_type = config["model_type"]
    keys = {k: v for k, v in config.items() if k != "model_type"}
    text = transformers.AutoConfig.for_model(model_type, **keys).to_dict()
    shape, dtypes, checkpoint = vllm_state(model_type, text, tp)
    kinds = {
        "jamba": lambda c: c.layers_block_type,
        "nemotron_h": lambda c: ["mamba" if k == "linear_attention" else k for k in c.layers_block_type],
        "qwen3_next": lambda c: c.layer_types,
        "falcon_h1": lambda c: ["attention", "mamba"] * c.num_hidden_layers,  # every layer has both
    }[model_type](transformers.AutoConfig.for_model(model_type, **keys))
    heads = max(1, text["num_key_value_heads"] // tp)
    head_size = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
    dtype = {"auto": torch.bfloat16, "fp8": torch.uint8}[cache_dtype]

    class Backend:  # FlashAttention on CUDA (flash_attn.py): kernel blocks MultipleOf(16), no packing
        customize_spec = staticmethod(lambda spec: spec)
        get_supported_kernel_block_sizes = staticmethod(lambda spec=None: [MultipleOf(16)])

    class Model:
        get_mamba_state_shape_from_config = classmethod(lambda cls, c: shape)
        get_mamba_state_dtype_from_config = classmethod(lambda cls, c: dtypes)

    class Cuda(platform):
        _find_non_ssm_backends = classmethod(lambda cls, c: [Backend])

    cache_config = SimpleNamespace(
        cache_dtype=cache_dtype, block_size=16, mamba_cache_mode="align", mamba_page_size_padded=None
    )
    model_config = SimpleNamespace(
        dtype=torch.bfloat16, use_mla=False, architecture=model_type, get_head_size=lambda: head_size
    )
    model_config.get_num_kv_heads = lambda parallel: heads
    config = SimpleNamespace(
        cache_config=cache_config,
        model_config=model_config,
        parallel_config=SimpleNamespace(decode_context_parallel_size=1, pipeline_parallel_size=1),
        compilation_config=SimpleNamespace(static_forward_context={}),
    )
    resolve = models.ModelRegistry.resolve_model_cls
    models.ModelRegistry.resolve_model_cls = lambda *a, **k: (Model, model_type)
    try:
        Cuda._align_hybrid_block_size(config, Backend)
    finally:
        models.ModelRegistry.resolve_model_cls = resolve
    block = cache_config.block_size
    attention = kvi.FullAttentionSpec(block_size=block, num_kv_heads=heads, head_size=head_size, dtype=dtype)
    state = kvi.MambaSpec(
        block_size=block,
        shapes=shape,
        dtypes=dtypes,
        page_size_padded=cache_config.mamba_page_size_padded,
        mamba_cache_mode="align",
        num_prefill_checkpoint_blocks=checkpoint,
    )
    config.model_config.max_model_len = seq
    per_kind = {"attention": attention, "full_attention": attention, "mamba": state, "linear_attention": state}
    total = vllm_grouped([per_kind[k] for k in kinds if k in per_kind], config)
    return batch * total, block


def _class_config(model_type: str, **extra) -> dict:
    import transformers

    return {**transformers.AutoConfig.for_model(model_type).to_dict(), **extra}


HYBRID_CASES = [
    # (config, S, B, tp, kv dtype)
    (lambda: _class_config("jamba"), 32768, 1, 1, "auto"),  # Mamba-1, 4 attention layers in 32
    (lambda: _class_config("jamba"), 10000, 3, 4, "fp8"),
    (lambda: _class_config("nemotron_h"), 32768, 2, 1, "auto"),  # Mamba-2, SSM state in float32
    (lambda: _class_config("nemotron_h", mamba_ssm_cache_dtype="bfloat16"), 8000, 1, 2, "auto"),
    (lambda: _class_config("falcon_h1"), 20000, 1, 1, "auto"),  # attention and Mamba-2 in every layer
    (lambda: _class_config("falcon_h1"), 20000, 2, 2, "fp8"),  # one group, extended to tp groups
    (lambda: preset("qwen3-next-80b-a3b"), 32768, 1, 1, "auto"),  # Gated DeltaNet
    (lambda: preset("qwen3-next-80b-a3b"), 131072, 4, 2, "fp8"),
]


def _random_hybrid(count: int = 6, seed: int = 29):
    import random

    rng = random.Random(seed)
    for i in range(count):
        tp = rng.choice([1, 2, 4])
        kv = rng.choice([1, 2, 4, 8])
        if i % 2:
            extra = {
                "linear_num_key_heads": 4 * rng.choice([1, 2, 4]),
                "linear_num_value_heads": 8 * rng.choice([1, 2, 4]),
                "linear_key_head_dim": rng.choice([64, 128]),
                "linear_value_head_dim": rng.choice([64, 128]),
                "linear_conv_kernel_dim": rng.choice([2, 4]),
                "num_key_value_heads": kv,
                "head_dim": rng.choice([128, 256]),
            }
            make = (lambda e: lambda: {**preset("qwen3-next-80b-a3b"), **e})(extra)
        else:
            heads = 8 * rng.choice([4, 8, 16])
            extra = {
                "mamba_num_heads": heads,
                "mamba_head_dim": rng.choice([32, 64]),
                "n_groups": rng.choice([1, 2, 8]),
                "ssm_state_size": rng.choice([64, 128]),
                "num_key_value_heads": kv,
                "num_attention_heads": 32,
            }
            make = (lambda e: lambda: _class_config("nemotron_h", **e))(extra)
        yield make, rng.randint(1, 100000), rng.randint(1, 4), tp, rng.choice(["auto", "fp8"])


@pytest.mark.parametrize(("make", "seq", "batch", "tp", "dtype"), HYBRID_CASES + list(_random_hybrid()))
def test_vllm_hybrid_matches_its_own_alignment_and_specs(make, seq, batch, tp, dtype, tmp_path):
    config = make()
    expected, block = vllm_hybrid_bytes(config, seq, batch, tp, dtype)
    (tmp_path / "config.json").write_text(json.dumps(config))
    got = engines.kv_cache("vllm", load(str(tmp_path)), seq, batch, dtype, tp=tp)
    assert got.settings["block_size"] == block, f"vLLM 0.33.0's block size: {block}"
    assert got.bytes == expected, f"vLLM 0.33.0's specs: {expected:,}"


def test_vllm_qwen3_next_by_hand():
    """Qwen3-Next-80B-A3B, bf16, tp = 1: a Gated DeltaNet state of conv (2·16·128 + 32·128) · (4 − 1) = 24,576 and
    temporal 32·128·128 = 524,288 elements, 2 bytes each: 1,097,728 bytes. One attention token: 2 KV heads of 256,
    K and V, 2 bytes: 2,048 bytes, so the block is 16 · cdiv(1,097,728, 16 · 2,048) = 544 tokens and a page
    1,114,112 bytes. 12 attention layers of cdiv(32768, 544) = 61 pages, 36 state layers of 2 pages."""
    got = engines.kv_cache("vllm", load("qwen3-next-80b-a3b"), 32768)
    assert got.settings["block_size"] == 544
    assert got.bytes == 12 * 61 * 1_114_112 + 36 * 2 * 1_114_112


def test_vllm_refuses_models_it_no_longer_runs(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(_class_config("bamba")))
    with pytest.raises(engines.LlmcountError, match=r"BambaForCausalLM until 0\.23\.0"):
        engines.kv_cache("vllm", load(str(tmp_path)), 4096)


def test_sglang_refuses_state_layers_it_has_no_shapes_for(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(_class_config("jamba")))
    with pytest.raises(engines.LlmcountError, match="MambaPool"):
        engines.kv_cache("sglang", load(str(tmp_path)), 4096)


def test_llama_cpp_recurrent_states_by_hand():
    """llama_memory_recurrent (src/llama-memory-recurrent.cpp, llama-hparams.cpp): one row per sequence of
    n_embd_r = (d_conv − 1)·(d_inner + 2·n_group·d_state) and n_embd_s = d_state·d_inner F32 elements per state layer.
    Qwen3-Next-80B-A3B as convert_hf_to_gguf.py writes it: d_inner = 128·32 = 4,096, d_state = 128, n_group = 16,
    d_conv = 4: n_embd_r = 3·(4,096 + 2·16·128) = 24,576, n_embd_s = 128·4,096 = 524,288; 36 such layers. The 12
    attention layers keep n_ctx = 32,768 cells of 2 KV heads of 256, K and V in f16."""
    got = engines.kv_cache("llama.cpp", load("qwen3-next-80b-a3b"), 32768, 1, ctx=32768)
    assert got.bytes == 36 * (24_576 + 524_288) * 4 + 12 * 32768 * 2 * 2 * 256 * 2


def test_llama_cpp_mamba1_states_by_hand(tmp_path):
    """Jamba's class defaults: d_inner = 2·4,096 = 8,192, d_state 16, d_conv 4, no groups (Mamba-1): n_embd_r = 3 ·
    8,192, n_embd_s = 16 · 8,192; 28 Mamba layers and 4 attention layers of 8 KV heads of 128; two sequences, each
    a stream of pad(4,096, 256) = 4,096 cells."""
    (tmp_path / "config.json").write_text(json.dumps(_class_config("jamba")))
    got = engines.kv_cache("llama.cpp", load(str(tmp_path)), 4096, 2)
    assert got.bytes == 2 * 28 * (3 * 8192 + 16 * 8192) * 4 + 4 * 2 * 4096 * 2 * 8 * 128 * 2


# ---------------------------------------------------------------- SGLang, by hand


def test_sglang_pool_by_hand():
    """MHATokenToKVPool (python/sglang/srt/mem_cache/memory_pool.py, commit 000ccdba): per layer k and v buffers of
    (size + page_size, head_num, head_dim), page_size 1; size = B · S tokens here. Llama-3-8B: 32 layers, 8 KV heads
    of 128, bf16; at tp = 4, two heads per rank."""
    table = (4 + 1) * (8192 + 4) * 4  # ReqToTokenPool: int32, B + 1 rows of S + 4 (tests/test_engines_sglang.py)
    got = engines.kv_cache("sglang", load("llama-3-8b"), 8192, 4)
    assert got.bytes == 32 * (4 * 8192 + 1) * 8 * 128 * 2 * 2 + table
    assert engines.kv_cache("sglang", load("llama-3-8b"), 8192, 4, tp=4).bytes == (got.bytes - table) // 4 + table
    fp8 = engines.kv_cache("sglang", load("llama-3-8b"), 8192, 4, "fp8_e4m3")  # stored as uint8: one byte
    assert fp8.bytes == (got.bytes - table) // 2 + table


def test_sglang_mla_by_hand():
    """MLATokenToKVPool: one buffer of (size + page_size, 1, kv_lora_rank + qk_rope_head_dim) per layer."""
    table = 3 * (4096 + 4) * 4
    assert engines.kv_cache("sglang", load("deepseek-v3"), 4096, 2).bytes == 61 * (2 * 4096 + 1) * 576 * 2 + table


def test_sglang_gives_gemma2s_sliding_layers_the_full_pool_by_hand():
    """configs/model_config.py is_hybrid_swa_model lists no Gemma-2 architecture: one MHATokenToKVPool for all 26
    layers, (S + 1) slots of 4 KV heads of 256, keys and values, bf16."""
    got = engines.kv_cache("sglang", load("gemma-2-2b"), 32768)
    assert got.bytes == 26 * (32768 + 1) * 4 * 256 * 2 * 2 + 2 * (32768 + 4) * 4
    assert {k.engine_kind for k in got.kinds} == {"full_attention", "req_to_token"}


def test_sglang_gives_hybrid_swa_architectures_a_sliding_pool():
    """tests/test_engines_sglang.py derives the figures."""
    got = engines.kv_cache("sglang", load("gpt-oss-20b"), 32768)
    assert any("swa_full_tokens_ratio" in k.rule for k in got.kinds)


# ---------------------------------------------------------------- llama.cpp, by hand

# ggml block sizes (ggml/src/ggml.c type_traits): q8_0 32 elements in 34 bytes, q4_0 32 in 18, q4_1 32 in 20,
# q5_0 32 in 22, q5_1 32 in 24, iq4_nl 32 in 18; f16 and bf16 2 bytes, f32 4.
GGML = {"q8_0": 34 / 32, "q4_0": 18 / 32, "q4_1": 20 / 32, "q5_0": 22 / 32, "q5_1": 24 / 32, "iq4_nl": 18 / 32}
GGML |= {"f16": 2, "bf16": 2, "f32": 4}


@pytest.mark.parametrize("kv_dtype", sorted(GGML))
def test_llama_cpp_kv_types_by_hand(kv_dtype):
    """Qwen3-32B: 64 layers, 8 KV heads of 128: a K row and a V row of 1,024 elements per cell; --ctx 32768 is
    already a multiple of 256."""
    got = engines.kv_cache("llama.cpp", load("qwen3-32b"), 32768, 1, kv_dtype, ctx=32768)
    assert got.bytes == int(64 * 32768 * 2 * 1024 * GGML[kv_dtype])


def test_llama_cpp_pads_the_context_and_sizes_swa_by_hand():
    """llama-context.cpp: n_ctx = GGML_PAD(30000, 256) = 30208; llama-kv-cache-iswa.cpp: the SWA layers keep
    GGML_PAD(min(n_ctx, W + n_ubatch), 256) = GGML_PAD(4096 + 512, 256) = 4608 cells. Gemma-2-2B in f16: 13 + 13
    layers, 4 KV heads of 256."""
    got = engines.kv_cache("llama.cpp", load("gemma-2-2b"), 30000, 1, ctx=30000)
    cell = 2 * 4 * 256 * 2
    assert got.bytes == 13 * 30208 * cell + 13 * 4608 * cell


def test_llama_cpp_streams_per_sequence_by_hand():
    """Without --kv-unified: n_ctx = pad(10000, 256) = 10240, n_ctx_seq = pad(10240 / 3, 256) = pad(3413, 256) =
    3584 cells in each of 3 streams. Llama-2-7B: 32 layers, 32 heads of 128, f16."""
    got = engines.kv_cache("llama.cpp", load("llama-2-7b"), 3333, 3, ctx=10000)
    assert got.bytes == 32 * 3 * 3584 * 2 * 4096 * 2


def test_llama_cpp_runs_mistral_without_a_window():
    got = engines.kv_cache("llama.cpp", load("mistral-7b"), 8192, 1)
    assert got.bytes == 32 * 8192 * 2 * 1024 * 2


# ---------------------------------------------------------------- transformers and the CLI


def test_transformers_engine_is_todays_cache():
    plain = json.loads(run("memory", "gemma-2-2b", "--seq", "32k", "--json").stdout)
    given = json.loads(run("memory", "gemma-2-2b", "--seq", "32k", "--json", "--engine", "transformers").stdout)
    assert given["kv_cache_bytes"] == plain["kv_cache_bytes"] == given["engine"]["kv_cache_bytes"]
    assert given["total_bytes"] == plain["total_bytes"]


def test_json_gives_the_engines_kv_cache():
    plain = json.loads(run("memory", "mistral-7b", "--seq", "32k", "--json").stdout)
    data = json.loads(run("memory", "mistral-7b", "--seq", "32k", "--json", "--engine", "vllm").stdout)
    assert data["kv_cache_bytes"] == 4 * GIB == data["engine"]["kv_cache_bytes"]
    assert data["engine"]["transformers_kv_cache_bytes"] == plain["kv_cache_bytes"]
    assert data["total_bytes"] == plain["total_bytes"] - plain["kv_cache_bytes"] + 4 * GIB
    assert data["engine"]["commit"] and data["engine"]["differences"]


def test_text_names_each_difference():
    out = run("memory", "gemma-2-2b", "--seq", "32k", "--engine", "vllm", "--max-num-batched-tokens", "8192").stdout
    assert "sliding_attention (13 layers)" in out and "max_num_batched_tokens 8,192" in out
    assert "  - vllm/v1/kv_cache_interface.py" in out


def test_ctx_sets_the_sequence():
    data = json.loads(run("memory", "qwen3-32b", "--engine", "llama.cpp", "--ctx", "32k", "--json").stdout)
    assert data["seq"] == 32768 and data["engine"]["settings"]["n_ctx"] == 32768


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--engine", "vllm", "--kv-dtype", "q8_0"), ("vLLM has no KV cache dtype", "fp8_e4m3")),
        (("--engine", "llama.cpp", "--kv-dtype", "fp8"), ("llama.cpp has no KV cache dtype", "q4_0")),
        (("--engine", "sglang", "--kv-dtype", "fp4_e2m1"), ("SGLang",)),
        (("--engine", "vllm", "--max-num-batched-tokens", "0"), ("--max-num-batched-tokens",)),
        (("--engine", "vllm", "--max-num-batched-tokens", "-8"), ("--max-num-batched-tokens",)),
        (("--engine", "vllm", "--max-num-batched-tokens", "9" * 20), ("--max-num-batched-tokens",)),
        (("--engine", "llama.cpp", "--ctx", "0"), ("--ctx",)),
        (("--engine", "llama.cpp", "--ctx", "99999999999"), ("--ctx",)),
        (("--engine", "llama.cpp", "--ctx", "8k", "--seq", "2k"), ("--ctx",)),
        (("--engine", "llama.cpp", "--max-num-batched-tokens", "512"), ("vLLM setting",)),
        (("--engine", "vllm", "--ctx", "512"), ("llama.cpp's context",)),
        (("--engine", "vllm", "--training"), ("--engine",)),
    ],
)
def test_bad_engine_input_is_refused_in_one_line(args, needles):
    malformed = args[-1] in ("0", "-8", "9" * 20)  # no positive integer of at most 12 digits: a usage error
    assert_refused(run("memory", "mistral-7b", *args), *needles, code=2 if malformed else 1)


@pytest.mark.parametrize(
    ("command", "args", "needles"),
    [
        (("memory",), ("--engine", "vlm"), ("unknown engine", "did you mean vllm")),
        (("memory",), ("--engine", "lama.cpp"), ("did you mean llama.cpp",)),
        (("memory",), ("--engine", "vlm", "--tp", "2"), ("unknown engine",)),
        (("memory",), ("--gpu", "h1000"), ("unknown GPU", "closest: h100-sxm")),
        (("fit",), ("--gpu", "h100", "--engine", "sglng"), ("did you mean sglang",)),
        (("fit",), ("--gpu", "a10O"), ("closest: a10",)),
        (("speed",), ("--gpu", "h100", "--engine", "trtllm2"), ("unknown engine",)),
        (("mfu",), ("--gpu", "rtx4000", "--tokens-per-second", "1"), ("unknown GPU",)),
    ],
)
def test_unknown_engine_and_gpu_names_are_usage_errors_with_the_closest(command, args, needles):
    """An unknown --engine or --gpu name is a bad option value: exit 2, one line, the closest names suggested."""
    assert_usage(run(*command, "mistral-7b", *args), *needles)


def test_a_known_engine_not_transcribed_is_refused_not_a_usage_error():
    assert_refused(run("memory", "mistral-7b", "--engine", "turbomind"), "TurboMind")


def test_engine_settings_without_engine_are_a_usage_error():
    result = run("memory", "mistral-7b", "--ctx", "4096")
    assert result.exit_code == 2 and result.stdout == "" and "Traceback" not in result.output


def test_window_rules_follow_the_config_classes():
    """vLLM reads a Mistral layer's window from config.layer_types alone: transformers' MistralConfig has no such key
    (so a config.json without it runs full); Gemma-2's config class fills it."""
    import transformers

    assert getattr(transformers.MistralConfig(), "layer_types", None) is None
    assert transformers.Gemma2Config().layer_types[0] == "sliding_attention"
    assert "mistral" in engines.engine("vllm").needs_layer_types


def test_transformers_engine_takes_llmcounts_dtypes():
    data = json.loads(run("memory", "mistral-7b", "--engine", "transformers", "--kv-dtype", "fp8", "--json").stdout)
    assert data["kv_cache_bytes"] == 32 * 4095 * 8 * 256 == data["engine"]["kv_cache_bytes"]
    assert_refused(run("memory", "mistral-7b", "--engine", "transformers", "--kv-dtype", "q8_0"), "q8_0")


def test_plain_function_for_fit():
    """kv_cache_bytes is an int per GPU; 8 KV heads over tp = 2 ranks: 4 each, half the bytes."""
    model = load("llama-3-8b")
    whole = engines.kv_cache_bytes("vllm", model, 4096, 2)
    assert isinstance(whole, int) and whole == 2 * 32 * 256 * 16 * 8 * 256 * 2
    assert engines.kv_cache_bytes("vllm", model, 4096, 2, tp=2) * 2 == whole
    with pytest.raises(engines.LlmcountError, match="--tp 3"):
        engines.kv_cache_bytes("vllm", model, 4096, 2, tp=3)
    with pytest.raises(engines.LlmcountError, match="split-mode"):
        engines.kv_cache_bytes("llama.cpp", model, 4096, 2, tp=2)
    with pytest.raises(engines.LlmcountError, match="uint32"):
        engines.kv_cache_bytes("llama.cpp", model, 2**31, 4)


def test_engines_refuse_the_cross_attention_of_an_encoder_decoder(tmp_path):
    import transformers

    (tmp_path / "config.json").write_text(json.dumps(transformers.BartConfig().to_dict()))
    assert_refused(run("memory", str(tmp_path), "--engine", "vllm"), "cross-attention", "BART")


def _random_cases(count: int = 12, seed: int = 26):
    import random

    rng = random.Random(seed)
    for _ in range(count):
        n = rng.randint(1, 6)
        kv = rng.choice([1, 2, 4, 8])
        yield (
            {
                "num_hidden_layers": n,
                "num_key_value_heads": kv,
                "num_attention_heads": kv * rng.choice([1, 2, 4]),
                "head_dim": rng.choice([64, 80, 128, 256]),
                "sliding_window": rng.randint(2, 9000),
                "layer_types": [rng.choice(["sliding_attention", "full_attention"]) for _ in range(n)],
            },
            rng.randint(1, 70000),
            rng.randint(1, 5),
            rng.choice([1, 2, 4, 8]),
            rng.randint(1, 20000),
        )


@pytest.mark.parametrize(("extra", "seq", "batch", "tp", "batched"), list(_random_cases()))
def test_vllm_matches_its_specs_on_random_configs(extra, seq, batch, tp, batched, tmp_path):
    """Mistral configs with random heads, head sizes, windows and layer_types (llama.py's rule: a layer slides
    where layer_types says), random S, B, TP and max_num_batched_tokens."""
    layers = vllm_layers("mistral-7b", preset("mistral-7b"), tp, "auto", extra)
    expected = batch * vllm_grouped(layers, vllm_config(seq, batched))
    model = _model("mistral-7b", extra, tmp_path)
    got = engines.kv_cache("vllm", model, seq, batch, tp=tp, max_num_batched_tokens=batched)
    assert got.bytes == expected, f"vLLM 0.33.0's specs: {expected:,}"


@pytest.mark.parametrize(
    "args",
    [
        ("memory", "mistral-7b", "--engine", "llama.cpp", "--kv-dtype", "q8_0"),
        ("memory", "qwen3-8b", "--quant", "q4_k_m"),
    ],
)
def test_without_the_gguf_package_one_line_names_the_extra(args) -> None:
    """A plain install has no gguf: llama.cpp's block sizes are refused with the install hint, not a traceback."""
    import subprocess

    code = f"import sys; sys.modules['gguf'] = None\nfrom llmcount.cli import main\nmain({list(args)!r})"
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and "pip install 'llmcount[gguf]'" in done.stderr


# ---------------------------------------------------------------- memory --engine per GPU


def test_memory_per_gpu_takes_the_engines_cache_per_rank():
    """memory --engine E --tp N: the KV line per GPU is the engine's figure at tp = N (Mistral-7B-v0.1 under vLLM,
    every layer full: 32 layers · 2048 blocks · 16 tokens · 8 KV heads · 256 · 2 bytes = 4 GiB, 2 GiB per rank)."""
    args = ("memory", "mistral-7b", "--seq", "32k", "--engine", "vllm", "--json")
    data = json.loads(run(*args, "--tp", "2", "--gpu", "h100").stdout)
    assert data["kv_cache_bytes_per_gpu"] == 2 * GIB
    assert data["kv_cache_bytes_per_gpu"] == engines.kv_cache_bytes("vllm", load("mistral-7b"), 32768, 1, tp=2)
    assert data["engine"]["name"] == "vllm" and data["total_bytes_per_gpu"] == data["weights_bytes_per_gpu"] + 2 * GIB
    plain = json.loads(run("memory", "mistral-7b", "--seq", "32k", "--json", "--tp", "2").stdout)
    assert plain["weights_bytes_per_gpu"] == data["weights_bytes_per_gpu"]
    assert plain["kv_cache_bytes_per_gpu"] < data["kv_cache_bytes_per_gpu"]  # transformers keeps the window
    text = run(*args[:-1], "--tp", "2").stdout
    assert "vLLM's cache" in text and "transformers' cache" not in text


def test_memory_per_gpu_passes_the_engines_settings():
    """Gemma-2-2B's sliding layers under vLLM hold the window plus 2 · max_num_batched_tokens: the setting reaches
    the per-GPU figure."""
    args = ("memory", "gemma-2-2b", "--seq", "32k", "--engine", "vllm", "--gpu", "h100", "--json")
    data = json.loads(run(*args, "--max-num-batched-tokens", "8192").stdout)
    model = load("gemma-2-2b")
    assert data["kv_cache_bytes_per_gpu"] == engines.kv_cache_bytes("vllm", model, 32768, max_num_batched_tokens=8192)
    assert data["kv_cache_bytes_per_gpu"] != json.loads(run(*args).stdout)["kv_cache_bytes_per_gpu"]


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--engine", "lmdeploy", "--tp", "2", "--pp", "2"), ("--pp", "no pipeline parallelism")),
        (("--engine", "llama.cpp", "--tp", "2"), ("split-mode",)),
        (("--engine", "llama.cpp", "--gpu", "h100", "--ctx", "8192"), ("--ctx",)),
        (("--engine", "vllm", "--tp", "3"), ("--tp 3",)),
    ],
)
def test_memory_per_gpu_with_an_engine_refuses_in_one_line(args, needles):
    assert_refused(run("memory", "mistral-7b", *args), *needles)


@pytest.mark.parametrize(("kv_dtype", "row"), [("f16", 576 * 2), ("q8_0", 576 // 32 * 34), ("q4_0", 576 // 32 * 18)])
def test_llama_cpp_mla_keeps_one_latent_row_by_hand(kv_dtype, row):
    """llama.cpp runs DeepSeek's MLA as one K head of kv_lora_rank + qk_rope_head_dim = 512 + 64 = 576 elements per
    cell and allocates no V (src/llama-kv-cache.cpp: has_v = !is_mla). DeepSeek-V3: 61 layers; --ctx 32768 is a
    multiple of 256."""
    got = engines.kv_cache("llama.cpp", load("deepseek-v3"), 32768, 1, kv_dtype, ctx=32768)
    assert got.bytes == 61 * 32768 * row


def test_vllm_kv_cache_groups_pad_gemma3_by_hand():
    """vLLM's KV cache groups (kv_cache_planning.py _get_kv_cache_groups_uniform_page_size): Gemma-3-1B has 4 full
    and 22 sliding layers, so G = 4 and the sliding layers fill cdiv(22, 4) = 6 groups of 4: 24 layers' memory.
    One KV head of 256, bf16: a page of 16 · 1 · 512 · 2 = 16,384 bytes. S = 32,768: full layers 2,048 pages; sliding
    layers (window 512) cdiv(min(511 + 2 · 2,048, 32,768), 16) + 1 = 289 pages."""
    got = engines.kv_cache("vllm", load("gemma-3-1b-it"), 32768)
    assert got.bytes == 4 * 2048 * 16384 + 24 * 289 * 16384
    assert got.settings["kv_cache_group_size"] == 4
    sliding = next(k for k in got.kinds if k.kind == "sliding_attention")
    assert sliding.layers == 22 and "pad the 22 layers of this kind to 24" in sliding.rule


def _gemma4_text(tmp_path, **extra):
    import transformers

    config = {**transformers.AutoConfig.for_model("gemma4_text").to_dict(), **extra}
    (tmp_path / "config.json").write_text(json.dumps(config))
    return load(str(tmp_path))


def test_vllm_gemma4_unified_pages_by_hand(tmp_path):
    """Gemma4TextConfig's defaults: 5 full layers of 4 KV heads of 512 (per_layer_config: global_head_dim) and 25
    sliding layers of 4 heads of 256, window 512 (gemma4.py: config.sliding_window on the layers layer_types marks).
    bf16: a full page 16 · 4 · 1,024 · 2 = 131,072 bytes, a sliding page of 16 tokens half of it, so
    unify_kv_cache_spec_page_size gives the sliding layers blocks of 32 tokens. S = 32,768: full layers 2,048
    pages; sliding layers cdiv(min(511 + 2 · 2,048, 32,768), 32) + 1 = 145 pages of 131,072 bytes. Groups of 5."""
    got = engines.kv_cache("vllm", _gemma4_text(tmp_path), 32768)
    assert got.bytes == 5 * 2048 * 131072 + 25 * 145 * 131072
    assert got.settings["block_sizes"] == {4096: 32}


def test_vllm_gemma4_matches_its_specs(tmp_path):
    """The same figure from vLLM 0.33.0's own spec classes, at the block sizes unify_kv_cache_spec_page_size gives
    (transcribed: kv_cache_planning.py needs xgrammar and more to import)."""
    import torch

    kvi = vllm_interface()
    full = kvi.FullAttentionSpec(block_size=16, num_kv_heads=4, head_size=512, dtype=torch.bfloat16)
    sliding = kvi.SlidingWindowSpec(
        block_size=32, num_kv_heads=4, head_size=256, dtype=torch.bfloat16, sliding_window=512
    )
    assert sliding.page_size_bytes == full.page_size_bytes
    layers = [full if (i + 1) % 6 == 0 else sliding for i in range(30)]
    for seq, batch, batched in ((32768, 1, 2048), (3000, 2, 8192), (100, 3, 512)):
        expected = batch * vllm_grouped(layers, vllm_config(seq, batched))
        got = engines.kv_cache("vllm", _gemma4_text(tmp_path), seq, batch, max_num_batched_tokens=batched)
        assert got.bytes == expected, (seq, batch, batched)


def test_vllm_gemma4_refusals(tmp_path):
    with pytest.raises(engines.LlmcountError, match="num_kv_shared_layers = 10"):
        engines.kv_cache("vllm", _gemma4_text(tmp_path, num_kv_shared_layers=10), 4096)
    with pytest.raises(engines.LlmcountError, match="attention_k_eq_v = True"):
        engines.kv_cache("vllm", _gemma4_text(tmp_path, attention_k_eq_v=True), 4096)


def _mimo_v2(tmp_path, **extra):
    """MiMoV2FlashConfig's defaults with the checkpoint's own keys vLLM's mimo_v2.py reads: hybrid_layer_pattern (1 =
    sliding) from layer_types, 8 sliding KV heads of 192 (K) and 128 (V), sliding_window_size 128 (transformers'
    sliding_window is sliding_window_size + 1 = 129)."""
    import transformers

    base = transformers.AutoConfig.for_model("mimo_v2_flash").to_dict()
    pattern = [1 if kind == "sliding_attention" else 0 for kind in base["layer_types"]]
    keys = {"swa_num_key_value_heads": 8, "swa_head_dim": 192, "swa_v_head_dim": 128, "sliding_window_size": 128}
    (tmp_path / "config.json").write_text(json.dumps({**base, "hybrid_layer_pattern": pattern, **keys, **extra}))
    return load(str(tmp_path))


def test_vllm_mimo_v2_by_hand(tmp_path):
    """48 layers, 9 full (4 KV heads of 192 + 128 = 1,280 elements a token, bf16 2,560 bytes) and 39 sliding (8
    heads, 5,120 bytes), window sliding_window_size = 128. The sliding page of 16 tokens is twice the full one, so
    unify_kv_cache_spec_page_size gives the full layers blocks of 32 tokens. S = 32,768: a full layer 32,768 tokens;
    a sliding one cdiv(min(127 + 2 · 2,048, 32,768), 16) + 1 = 265 blocks of 16; groups of 9 pad the 39 sliding
    layers to 45. tp = 8: one head of each on every rank, equal pages, no scaling."""
    model = _mimo_v2(tmp_path)
    got = engines.kv_cache("vllm", model, 32768)
    assert got.bytes == 9 * 32768 * 2560 + 45 * 265 * 16 * 5120
    assert got.settings["block_sizes"] == {2560: 32}
    at_8 = engines.kv_cache("vllm", model, 32768, tp=8)
    assert at_8.bytes == 9 * 32768 * 640 + 45 * 265 * 16 * 640
    assert "block_sizes" not in at_8.settings


def test_vllm_mimo_v2_matches_its_specs(tmp_path):
    """The same figure from vLLM 0.33.0's own spec classes, as mimo_v2.py builds them (FullAttentionSpec and
    SlidingWindowSpec of head_size 192 and head_size_v 128, heads max(1, h // tp)), at the block sizes
    unify_kv_cache_spec_page_size gives."""
    import torch

    kvi = vllm_interface()
    model = _mimo_v2(tmp_path)
    for tp, full_block in ((1, 32), (4, 32), (8, 16)):
        full = kvi.FullAttentionSpec(
            block_size=full_block, num_kv_heads=max(1, 4 // tp), head_size=192, head_size_v=128, dtype=torch.bfloat16
        )
        sliding = kvi.SlidingWindowSpec(
            block_size=16,
            num_kv_heads=max(1, 8 // tp),
            head_size=192,
            head_size_v=128,
            dtype=torch.bfloat16,
            sliding_window=128,
        )
        assert sliding.page_size_bytes == full.page_size_bytes
        pattern = json.loads((tmp_path / "config.json").read_text())["hybrid_layer_pattern"]
        layers = [sliding if slides else full for slides in pattern]
        for seq, batch, batched in ((32768, 1, 2048), (3000, 2, 8192), (100, 3, 512)):
            expected = batch * vllm_grouped(layers, vllm_config(seq, batched))
            got = engines.kv_cache("vllm", model, seq, batch, tp=tp, max_num_batched_tokens=batched)
            assert got.bytes == expected, (tp, seq, batch, batched)


def test_vllm_mimo_v2_refused_without_the_checkpoint_keys(tmp_path):
    with pytest.raises(engines.LlmcountError, match="reads hybrid_layer_pattern from the checkpoint's config"):
        engines.kv_cache("vllm", _mimo_v2(tmp_path, hybrid_layer_pattern=None), 4096)
    with pytest.raises(engines.LlmcountError, match="5,120 elements a token in its sliding_attention pool"):
        engines.kv_cache("vllm", _mimo_v2(tmp_path, swa_num_key_value_heads=16), 4096)
    with pytest.raises(engines.LlmcountError, match="--tp 3 does not divide the 4 key/value heads"):
        engines.kv_cache("vllm", _mimo_v2(tmp_path), 4096, tp=3)


def test_deepseek_v32_indexer_refused_by_name_under_every_engine(tmp_path):
    """DeepSeek-V3.2 (transformers' DeepseekV32Config): its indexer keys are refused by name with the reason, before
    any page arithmetic (vLLM: DeepseekV32IndexerCache's spec beside the sparse MLA latent)."""
    import transformers

    (tmp_path / "config.json").write_text(json.dumps(transformers.DeepseekV32Config().to_dict()))
    for engine, needle in (
        ("vllm", "DeepseekV32IndexerCache"),
        ("sglang", "indexer"),
        ("llama.cpp", "indexer"),
    ):
        assert_refused(run("memory", str(tmp_path), "--seq", "4k", "--engine", engine), needle, "not transcribed")


def test_turbomind_refused_by_name():
    """LMDeploy's TurboMind keeps its cache in C++: refused with the reason (its sliding-window handling not read),
    pointing at --engine lmdeploy (the PyTorch engine)."""
    for name in ("turbomind", "lmdeploy-turbomind"):
        assert_refused(run("memory", "gpt-oss-20b", "--engine", name), "TurboMind", "window", "--engine lmdeploy")
