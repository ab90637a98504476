"""Memory: weights per dtype, the KV cache, training states.

The KV cache is checked against the cache tensors transformers actually allocates (a DynamicCache after one
forward pass on CPU of a small random config, in fp32 and in bf16). For MLA, transformers 5.23's DeepSeek
attention caches the latent itself (``kv_nope`` of r_kv and the shared RoPE key of d_rope per token, one
"head" per layer: see ``DeepseekV3Attention.forward``, "Cache read / write is performed while latent KV is
still compressed"), which is llmcount's default MLA form; the expanded form (keys and values of h heads) is
checked by hand derivation. Weights in fp32/bf16 are checked against the bytes of the model's own parameters;
the other dtypes, the group scales and the training states by hand.
"""

from __future__ import annotations

import importlib
import json
import warnings
from typing import Any

import pytest
import torch
from oracle import TEXT_CAUSAL_LM, VERSIONS, _hf_config, causal_lm, runnable_defaults
from test_flops import SMALL
from transformers import AutoModelForCausalLM
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.formulas import memory
from llmcount.formulas.config import read_config
from llmcount.sources import load

TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def hf_model(config: dict[str, Any], dtype: str, device: str = "cpu"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        with torch.device(device):
            return AutoModelForCausalLM.from_config(
                _hf_config(config),
                attn_implementation="eager",
                experts_implementation="batched_mm",
                dtype=TORCH_DTYPES[dtype],
            )


def hf_cache_bytes(config: dict[str, Any], batch: int, seq: int, dtype: str) -> int:
    """Bytes of every tensor in the DynamicCache transformers fills in one forward pass on CPU."""
    model = hf_model(config, dtype)
    ids = torch.randint(0, config["vocab_size"], (batch, seq))
    with torch.no_grad():
        cache = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True).past_key_values
    tensors = [t for layer in cache.layers for t in (layer.keys, layer.values)]
    assert len(cache.layers) == model.config.num_hidden_layers
    return sum(t.numel() * t.element_size() for t in tensors)


def inference(config: dict[str, Any], **options: Any) -> memory.Memory:
    model = read_config(config, "test")
    return memory.inference(model.derivation, model.values, **options)


CACHE_CONFIGS = [
    "llama-gqa-head-dim-bias-tied",  # GQA, head_dim != d/h
    "llama-mqa",
    "mistral-mha",
    "qwen3-qk-norm-head-dim",
    "gpt2",  # MHA, fused projection
    "mixtral",
    "deepseek-v3-mla-q-lora-shared-dense",  # MLA: the latent
    "deepseek-v2-mla-no-q-lora-biases",
]


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize(("batch", "seq"), [(1, 5), (3, 17)])
@pytest.mark.parametrize("name", CACHE_CONFIGS)
def test_kv_cache_equals_transformers_dynamic_cache(name: str, batch: int, seq: int, dtype: str) -> None:
    config = SMALL[name]
    expected = hf_cache_bytes(config, batch, seq, dtype)
    got = inference(config, dtype_name=dtype, seq=seq, batch=batch).bytes_of("kv_cache")
    assert got == expected, f"{name} B={batch} S={seq} {dtype}: llmcount {got} != DynamicCache {expected} ({VERSIONS})"


def test_mla_expanded_cache_by_hand() -> None:
    """Expanded MLA keys and values, not stored by transformers 5.23: per layer and token, h keys of
    d_nope + d_rope and h values of d_v. DeepSeek-V3: 61 · 128 · (128 + 64 + 128) = 2,498,560 elements."""
    result = inference(_config("deepseek-v3"), dtype_name="bf16", seq=1, batch=1)
    expanded = next(line for line in result.lines if line.name == "kv_cache_expanded")
    assert expanded.bytes == 2 * 61 * 128 * (128 + 64 + 128)
    assert not expanded.in_total
    assert result.bytes_of("kv_cache") == 2 * 61 * (512 + 64)  # the latent: 70,272 bytes per token in bf16
    assert result.total_bytes == result.bytes_of("weights") + result.bytes_of("kv_cache")


def _config(preset: str) -> dict[str, Any]:
    from llmcount.presets import presets

    return presets()[preset].config()


@pytest.mark.parametrize(
    ("preset", "per_token"),
    [
        ("llama-3-8b", 2 * 32 * 8 * 128 * 2),  # 2 (K, V) · N · h_kv · h_d · 2 bytes = 128 KiB
        ("qwen3-32b", 2 * 64 * 8 * 128 * 2),
        ("llama-2-7b", 2 * 32 * 32 * 128 * 2),  # MHA: h_kv = h
        ("gpt2", 2 * 12 * 768 * 2),
        ("deepseek-v2-lite", 27 * (512 + 64) * 2),  # MLA latent: N · (r_kv + d_rope)
    ],
)
def test_kv_cache_per_token_of_presets_by_hand(preset: str, per_token: int) -> None:
    result = inference(_config(preset), dtype_name="bf16", seq=1000, batch=3)
    assert result.kv_per_token_bytes == per_token
    assert result.bytes_of("kv_cache") == per_token * 1000 * 3


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("name", sorted(SMALL))
def test_weights_equal_the_bytes_of_transformers_parameters(name: str, dtype: str) -> None:
    model = hf_model(SMALL[name], dtype, device="meta")
    expected = sum(p.numel() * p.element_size() for p in model.parameters())
    assert inference(SMALL[name], dtype_name=dtype).bytes_of("weights") == expected, VERSIONS


def _kept_in_fp32(model_type: str) -> list[str]:
    """The modules the record's transformers class names in _keep_in_fp32_modules_strict (kept in fp32 in bf16 and
    fp16 whatever the model's dtype); [] for a class without, or a record transformers has no causal LM of."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    config = _hf_config(runnable_defaults(model_type))
    if model_type in TEXT_CAUSAL_LM:  # a class AutoModelForCausalLM does not map (Mistral4ForCausalLM)
        module, name = TEXT_CAUSAL_LM[model_type]
        cls = getattr(importlib.import_module(module), name)
    else:
        cls = MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]
    return sorted(getattr(cls, "_keep_in_fp32_modules_strict", None) or [])


def _strict_records() -> list[str]:
    """The records whose modeling file (read as text: importing every modeling module would take a minute) gives a
    class a non-empty _keep_in_fp32_modules_strict, and those with a [weights] table."""
    import re
    from pathlib import Path

    import transformers
    from oracle import _built_through
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    from llmcount.formulas import records

    root = Path(transformers.__file__).parent / "models"
    strict = re.compile(r'_keep_in_fp32_modules_strict = \[\s*"')
    names = []
    for family in records.families():
        module = model_type_to_module_name(family.shares or _built_through(family.name) or family.name)
        source = root / module / f"modeling_{module}.py"
        if family.fp32_weights or (source.is_file() and strict.search(source.read_text())):
            names.append(family.name)
    return names


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("model_type", _strict_records())
def test_weights_of_the_class_defaults_keep_the_fp32_modules(model_type: str, dtype: str) -> None:
    """Every record whose class keeps modules in fp32 (_keep_in_fp32_modules_strict): the weights of its class
    defaults in bf16 and fp16 are the bytes of the parameters transformers builds, the kept ones at 4 bytes."""
    config = runnable_defaults(model_type)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.device("meta"):
            model = causal_lm(_hf_config(config), model_type, dtype=TORCH_DTYPES[dtype])
    expected = sum(p.numel() * p.element_size() for p in model.parameters())
    got = inference(config, dtype_name=dtype).bytes_of("weights")
    assert got == expected, f"{model_type} {dtype}: kept in fp32 {_kept_in_fp32(model_type)} ({VERSIONS})"


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"fp32": ["moe/gate"], "source": "x"}, "moe/gate is not a term path of the record"),
        ({"fp32": ["moe/router", "moe/router"], "source": "x"}, "a list of distinct term paths"),
        ({"fp32": "moe/router", "source": "x"}, "a list of distinct term paths"),
        ({"fp32": ["moe/router"]}, "'source' names the modeling code"),
        ({"fp32": ["moe/router"], "source": "x", "bf16": []}, "unknown fields"),
    ],
)
def test_a_bad_weights_table_is_refused_by_name(weights: dict, message: str) -> None:
    from pathlib import Path

    import tomllib

    from llmcount.formulas import records

    record = tomllib.loads((Path(records.__file__).parent / "families" / "deepseek_v3.toml").read_text())
    assert records.parse_record(record, "deepseek_v3.toml").fp32_weights == ("moe/router",)
    with pytest.raises(records.RecordError, match=rf"deepseek_v3.toml \[weights\].*{message}"):
        records.parse_record({**record, "weights": weights}, "deepseek_v3.toml")


def test_training_keeps_fp32_gradients_and_no_master_copy_of_the_fp32_weights() -> None:
    """DeepSeek-V3's class defaults in bf16: the router's gate.weight (58 MoE layers of n · d = 256 · 7168) is fp32,
    its gradient too, and mixed precision needs no master copy of it; the total stays 16 bytes a parameter."""
    model = read_config(runnable_defaults("deepseek_v3"), "test")
    result = memory.training(model.derivation, model.values, "bf16")
    params, router = result.parameters, 58 * 256 * 7168
    parts = [2 * (params - router) + 4 * router] * 2 + [4 * (params - router), 4 * params, 4 * params]
    assert [line.bytes for line in result.lines] == parts
    assert result.total_bytes == 16 * params


@pytest.mark.parametrize(("dtype", "bytes_"), [("fp32", 4), ("fp16", 2), ("bf16", 2), ("fp8", 1), ("int8", 1)])
def test_weights_per_dtype_by_hand(dtype: str, bytes_: int) -> None:
    result = inference(_config("qwen3-32b"), dtype_name=dtype)
    assert result.bytes_of("weights") == 32_762_123_264 * bytes_  # Qwen3-32B: 32,762,123,264 parameters


def test_int4_packs_two_per_byte_and_rounds_up() -> None:
    """A tied Llama with V=7, d=5, d_ff=3, one layer of one head: 35 + 4·25 + 3·15 + 2·5 + 5 = 195 parameters,
    98 bytes in int4 (the last byte half used)."""
    config = {
        "model_type": "llama",
        "vocab_size": 7,
        "hidden_size": 5,
        "intermediate_size": 3,
        "num_hidden_layers": 1,
        "num_attention_heads": 1,
        "tie_word_embeddings": True,
    }
    assert inference(config, dtype_name="int4").bytes_of("weights") == 98
    assert inference(config, dtype_name="int8").bytes_of("weights") == 195


def test_group_quantisation_scales() -> None:
    """One fp16 scale per group of 128: ceil(P/128) · 2 bytes; an fp32 scale takes 4."""
    params = 32_762_123_264
    result = inference(_config("qwen3-32b"), dtype_name="int4", group_size=128)
    assert result.bytes_of("quantisation_scales") == -(-params // 128) * 2
    assert result.bytes_of("weights") == params // 2
    fp32_scales = inference(_config("qwen3-32b"), dtype_name="fp8", group_size=128, scale_dtype="fp32")
    assert fp32_scales.bytes_of("quantisation_scales") == -(-params // 128) * 4


def test_kv_dtype_default_and_override() -> None:
    assert inference(_config("qwen3-32b"), dtype_name="fp32").kv_dtype == "fp32"
    assert inference(_config("qwen3-32b"), dtype_name="int4").kv_dtype == "bf16"  # quantised weights, 16-bit cache
    fp8_cache = inference(_config("qwen3-32b"), dtype_name="bf16", kv_dtype="fp8", seq=10)
    assert fp8_cache.bytes_of("kv_cache") == 2 * 64 * 8 * 128 * 10


def test_stated_overhead_is_a_percentage_of_the_rest() -> None:
    plain = inference(_config("llama-3-8b"), seq=2048)
    with_overhead = inference(_config("llama-3-8b"), seq=2048, overhead_percent=20)
    assert with_overhead.bytes_of("overhead") == -(-plain.total_bytes * 20 // 100)
    assert with_overhead.total_bytes == plain.total_bytes + with_overhead.bytes_of("overhead")


@pytest.mark.parametrize(("dtype", "parts"), [("bf16", [2, 2, 4, 4, 4]), ("fp32", [4, 4, 4, 4])])
def test_training_is_16_bytes_per_parameter(dtype: str, parts: list[int]) -> None:
    """Mixed precision: bf16 weights + bf16 grads + fp32 master + fp32 m + fp32 v; fp32: no master copy."""
    model = load("llama-3-8b")
    result = memory.training(model.derivation, model.values, dtype)
    params = 8_030_261_248
    assert [line.bytes for line in result.lines] == [p * params for p in parts]
    assert result.total_bytes == 16 * params


# ---------------------------------------------------------------------------------------------
# the command line


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_memory_json_form() -> None:
    data = json.loads(run("memory", "qwen3-32b", "--dtype", "bf16", "--batch", "8", "--seq", "32768", "--json").stdout)
    assert {"weights_bytes", "kv_cache_bytes", "total_bytes", "dtype", "kv_dtype", "formulas"} <= set(data)
    assert data["weights_bytes"] == 2 * 32_762_123_264
    assert data["kv_cache_bytes"] == 2 * 64 * 8 * 128 * 2 * 8 * 32768
    assert data["total_bytes"] == data["weights_bytes"] + data["kv_cache_bytes"]
    assert data["total_gib"] == data["total_bytes"] / 2**30
    assert (data["dtype"], data["kv_dtype"]) == ("bf16", "bf16")
    assert data["formulas"]["kv_cache"] == "4*B*N*S*h_d*h_kv"


def test_memory_mla_latent_cache_json() -> None:
    data = json.loads(
        run("memory", "deepseek-v3", "--dtype", "fp8", "--kv-dtype", "bf16", "--seq", "131072", "--json").stdout
    )
    assert data["kv_cache_bytes"] == 61 * (512 + 64) * 2 * 131072
    assert data["weights_bytes"] == 671_026_404_352
    assert (data["dtype"], data["kv_dtype"]) == ("fp8", "bf16")


def test_memory_training_text_and_json() -> None:
    out = run("memory", "llama-3-8b", "--training", "--optimizer", "adamw").stdout
    assert "master weights" in out and "GiB = 2^30 bytes" in out and f"{16 * 8_030_261_248:,}" in out
    data = json.loads(run("memory", "llama-3-8b", "--training", "--json").stdout)
    assert data["gradients_bytes"] == 2 * 8_030_261_248 and data["optimizer_bytes"] == 12 * 8_030_261_248
    assert data["kv_cache_bytes"] == 0 and data["kv_dtype"] is None


def assert_refused(result, *needles: str, code: int = 1) -> None:
    assert result.exit_code == code, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_unknown_dtype_lists_the_choices() -> None:
    assert_refused(run("memory", "qwen3-32b", "--dtype", "fp7"), "'fp7'", "fp32", "bf16", "int4")
    assert_refused(run("memory", "qwen3-32b", "--kv-dtype", "e5m2"), "'e5m2'", "choices")


@pytest.mark.parametrize(
    "args",
    [["--seq", "0"], ["--batch", "-1"], ["--seq", "1e3"], ["--group-size", "0"], ["--overhead", "ten"]],
)
def test_memory_refuses_bad_numbers(args: list[str]) -> None:
    assert_refused(run("memory", "qwen3-32b", *args), args[0], "positive integer", code=2)  # a usage error


def test_training_refuses_a_quantised_dtype() -> None:
    assert_refused(run("memory", "qwen3-32b", "--training", "--dtype", "int8"), "int8", "fp32")


WINDOWED = {
    "mistral": {**SMALL["mistral-mha"], "sliding_window": 4},
    "mixtral": {**SMALL["mixtral"], "sliding_window": 6},
}


@pytest.mark.parametrize("seq", [2, 3, 4, 5, 6, 7, 11])  # below, at and above the windows (4 and 6)
@pytest.mark.parametrize("name", sorted(WINDOWED))
def test_sliding_window_cache_equals_transformers_cache(name: str, seq: int) -> None:
    # DynamicSlidingWindowLayer keeps the last W - 1 tokens of each sliding layer.
    config = WINDOWED[name]
    expected = hf_cache_bytes(config, 2, seq, "fp32")
    got = inference(config, dtype_name="fp32", seq=seq, batch=2).bytes_of("kv_cache")
    assert got == expected, f"{name} S={seq}: llmcount {got} != DynamicCache {expected} ({VERSIONS})"


def test_mistral_7b_at_32k_keeps_its_window() -> None:
    # Mistral-7B: 32 layers, 8 KV heads of 128, sliding_window 4096; bf16 K and V: 2 · 32 · 8 · 128 · 2 = 131,072
    # bytes per token, for the 4095 tokens transformers keeps: 536,739,840 bytes, 0.5 GiB (not 4 GiB for 32,768).
    result = memory.inference(load("mistral-7b").derivation, load("mistral-7b").values, seq=32768)
    assert result.bytes_of("kv_cache") == 4095 * 131_072
    assert "W - 1" in result.lines[1].note


def test_attention_layers_summed_with_an_idle_sliding_count():
    """[attention] layers = N_full + N_sliding on a config with no sliding layer: N_sliding is left out of the
    values (no window applies) and counts 0, not a failure. LFM3's record, rewritten that way; two full layers of
    2 · h_kv · h_d = 2 · 2 · 8 = 32 elements per token, S = 1024 tokens in bf16: 2 · 32 · 1024 · 2 = 131,072 bytes."""
    from importlib.resources import files

    import tomllib

    from llmcount.formulas.records import parse_record

    text = (files("llmcount.formulas") / "families" / "lfm3.toml").read_text()
    full = "N_full = \"layer_types[i] == 'full_attention'\"\nN_attn = "
    text = text.replace("[layers]\nN_attn = ", "[layers]\n" + full).replace(
        '[attention]\nlayers = "N_attn"', '[attention]\nlayers = "N_full + N_sliding"'
    )
    family = parse_record(tomllib.loads(text), "lfm3 (N_full + N_sliding)")
    from test_layer_patterns import LFM3

    config = {**LFM3, "num_hidden_layers": 4, "layer_types": ["conv", "full_attention", "conv", "full_attention"]}
    model = read_config(config, "test", None, family)
    kinds = {
        k.kind: k for k in memory.inference(model.derivation, model.values, "bf16", "bf16", 1024, 1).per_layer_kind
    }
    assert kinds["full_attention"].layers == 2
    assert kinds["full_attention"].bytes == 131_072
