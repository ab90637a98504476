"""Stored bytes of quantised models against transformers' own quantisers (transformers 5.24.0, torch 2.13.0+cpu).

The oracle builds the model on the meta device, hands it to the quantiser transformers picks for the config's
``quantization_config`` (``AutoHfQuantizer.preprocess_model``, the step ``from_pretrained`` runs before loading a
quantised checkpoint), and sums the bytes of every tensor of its ``state_dict()``, a tied head once as
``save_pretrained`` writes it: the tensors a checkpoint of that model holds, with the quantiser's shapes and dtypes.
llmcount's figure comes from the config alone. Small configs of a dense, an MoE and an MLA family, with widths that
no block or group divides.
"""

from __future__ import annotations

import json
import math
import struct
import warnings
from typing import Any

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.quantizers.auto import AutoHfQuantizer, AutoQuantizationConfig

from llmcount.checkpoint import verify
from llmcount.formulas.config import read_config
from llmcount.quant.config import read_quant
from llmcount.quant.stored import plan, rest_dtype

VERSIONS = "transformers 5.24.0, torch 2.13.0+cpu"


def oracle_bytes(config: dict[str, Any]) -> tuple[int, dict[str, tuple[tuple[int, ...], str]]]:
    """Bytes of the state dict of transformers' model as its quantiser lays it out, and its tensors."""
    rest = {k: v for k, v in config.items() if k not in ("model_type", "quantization_config", "torch_dtype")}
    cfg = AutoConfig.for_model(config["model_type"], **rest)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        quantizer = AutoHfQuantizer.from_config(
            AutoQuantizationConfig.from_dict(dict(config["quantization_config"])), pre_quantized=True
        )
        quantizer.preprocess_model(model=model, config=cfg, dtype=torch.bfloat16, checkpoint_files=None)
    state, seen = {}, set()
    for name, tensor in model.state_dict(keep_vars=True).items():  # a tied head is the embedding's Parameter
        if id(tensor) not in seen:
            seen.add(id(tensor))
            state[name] = tensor
    tensors = {k: (tuple(v.shape), str(v.dtype)) for k, v in state.items()}
    return sum(v.numel() * v.element_size() for v in state.values()), tensors


def ours(config: dict[str, Any]) -> int:
    model = read_config({**config, "torch_dtype": "bfloat16"}, "test")
    quant = read_quant(config, "test")
    code, note = rest_dtype(quant, model.dtype, None, "test")
    return plan(model, quant, code, note).bytes


QWEN3 = {
    "model_type": "qwen3",
    "hidden_size": 200,
    "intermediate_size": 300,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 48,
    "vocab_size": 1000,
}
QWEN3_MOE = {
    "model_type": "qwen3_moe",
    "hidden_size": 160,
    "intermediate_size": 272,
    "moe_intermediate_size": 96,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 3,
    "mlp_only_layers": [1],
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 40,
    "vocab_size": 500,
}
DEEPSEEK = {
    "model_type": "deepseek_v3",
    "hidden_size": 192,
    "intermediate_size": 320,
    "moe_intermediate_size": 80,
    "n_routed_experts": 4,
    "n_shared_experts": 1,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "q_lora_rank": 96,
    "kv_lora_rank": 72,
    "qk_nope_head_dim": 24,
    "qk_rope_head_dim": 8,
    "v_head_dim": 24,
    "n_group": 1,
    "topk_group": 1,
    "vocab_size": 700,
}
GPT_OSS = {
    "model_type": "gpt_oss",
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 300,
    "layer_types": ["sliding_attention", "full_attention"],
}
GPT_OSS_SKIPS = ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]

FP8 = {"quant_method": "fp8", "weight_block_size": [128, 128]}
CASES = [
    ("qwen3 fp8 128x128", QWEN3, FP8),
    ("qwen3 fp8 64x32", QWEN3, {"quant_method": "fp8", "weight_block_size": [64, 32]}),
    ("qwen3 fp8 per tensor", QWEN3, {"quant_method": "fp8", "weight_block_size": None}),
    ("qwen3 fp8 static", QWEN3, {"quant_method": "fp8", "weight_block_size": None, "activation_scheme": "static"}),
    ("qwen3 fp8 tied", {**QWEN3, "tie_word_embeddings": True}, FP8),
    ("qwen3 fp8 skips", QWEN3, {**FP8, "modules_to_not_convert": ["model.layers.1.mlp", "lm_head"]}),
    ("qwen3 fp8 no lm_head skip", QWEN3, {**FP8, "modules_to_not_convert": ["down_proj"]}),
    ("qwen3_moe fp8", QWEN3_MOE, FP8),
    ("deepseek_v3 fp8", DEEPSEEK, FP8),
]


@pytest.mark.parametrize(("what", "config", "quantization"), CASES, ids=[c[0] for c in CASES])
def test_stored_bytes_equal_the_quantisers_state_dict(what, config, quantization):
    config = {**config, "quantization_config": quantization}
    try:
        expected, tensors = oracle_bytes(config)
    except (ImportError, RuntimeError, ValueError) as error:  # a quantiser this CPU build cannot prepare
        pytest.skip(f"{what}: transformers' quantiser does not prepare here: {error}")
    expected -= released_differences(tensors)
    assert ours(config) == expected, f"{what}: {VERSIONS} state dict: {tensors}"


@pytest.mark.parametrize(("what", "config", "quantization"), CASES, ids=[c[0] for c in CASES])
def test_verify_reads_the_quantisers_state_dict(what, config, quantization, tmp_path):
    """The same state dict written as a safetensors file (its header, zero data): verify counts the FP8 weights as
    the model's parameters and the scales as storage."""
    config = {**config, "quantization_config": quantization}
    try:
        _, tensors = oracle_bytes(config)
    except (ImportError, RuntimeError, ValueError) as error:
        pytest.skip(f"{what}: transformers' quantiser does not prepare here: {error}")
    header, offset = {}, 0
    for name, (shape, dtype) in tensors.items():
        if name.endswith("e_score_correction_bias"):
            continue  # a buffer: verify names it apart (test_verify_names)
        code = CODES[dtype]
        size = math.prod(shape) * BYTES[code]
        header[name] = {"dtype": code, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))
    (tmp_path / "config.json").write_text(json.dumps({**config, "torch_dtype": "bfloat16"}))
    result = verify(str(tmp_path))
    assert result.match, (what, result.differences, result.unmapped)


CODES = {"torch.bfloat16": "BF16", "torch.float32": "F32", "torch.float8_e4m3fn": "F8_E4M3"}
BYTES = {"BF16": 2, "F32": 4, "F8_E4M3": 1}


def released_differences(tensors: dict[str, tuple[tuple[int, ...], str]]) -> int:
    """Bytes by which transformers 5's DeepSeek-V3 state dict differs from the checkpoints DeepSeek released, which
    the records count: ``e_score_correction_bias`` is a buffer (not a parameter; ``verify`` names it), and the
    router's weight is float32 in the built model but BF16 in the released headers (model.layers.3.mlp.gate.weight
    of deepseek-ai/DeepSeek-V3)."""
    extra = 0
    for name, (shape, dtype) in tensors.items():
        size = 1
        for x in shape:
            size *= x
        if name.endswith("e_score_correction_bias"):
            extra += 4 * size
        elif name.endswith("mlp.gate.weight") and dtype == "torch.float32":
            extra += 2 * size
    return extra
