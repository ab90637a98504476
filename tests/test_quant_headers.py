"""GPTQ and AWQ checkpoints as safetensors headers built from the quantisers' own layouts (gptqmodel 7.7.0
nn_modules/qlinear/__init__.py: ``_register_gptq_buffers`` and ``AWQuantLinear``, transcribed in each test below
by hand, independent of llmcount's records), written as real files with zero data: llmcount's bytes from the config
equal the file's tensors, and ``verify`` reads the packed weights back as the model's parameters."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest

from llmcount.checkpoint import verify
from llmcount.formulas.config import read_config
from llmcount.quant.config import read_quant
from llmcount.quant.stored import plan, rest_dtype

BYTES = {"I32": 4, "F16": 2, "BF16": 2}
QWEN3 = {
    "model_type": "qwen3",
    "hidden_size": 256,
    "intermediate_size": 640,  # 640 = 5 groups of 128: in of down_proj
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "vocab_size": 1000,
    "torch_dtype": "float16",
}
LINEARS = {  # module -> (out, in) on the config above
    "self_attn.q_proj": (256, 256),
    "self_attn.k_proj": (128, 256),
    "self_attn.v_proj": (128, 256),
    "self_attn.o_proj": (256, 256),
    "mlp.gate_proj": (640, 256),
    "mlp.up_proj": (640, 256),
    "mlp.down_proj": (256, 640),
}


def gptq(out: int, in_: int, bits: int, group: int) -> dict[str, tuple[str, list[int]]]:
    """gptqmodel 7.7.0 ``_register_gptq_buffers``."""
    group = in_ if group == -1 else group
    return {
        "qweight": ("I32", [math.ceil(in_ * bits / 32), out]),
        "qzeros": ("I32", [math.ceil(in_ / group), math.ceil(out * bits / 32)]),
        "scales": ("F16", [math.ceil(in_ / group), out]),
        "g_idx": ("I32", [in_]),
    }


def awq(out: int, in_: int, bits: int, group: int) -> dict[str, tuple[str, list[int]]]:
    """gptqmodel 7.7.0 ``AWQuantLinear`` (AutoAWQ's WQLinear_GEMM layout)."""
    return {
        "qweight": ("I32", [in_, math.ceil(out * bits / 32)]),
        "qzeros": ("I32", [in_ // group, math.ceil(out * bits / 32)]),
        "scales": ("F16", [in_ // group, out]),
    }


def write(folder: Path, config: dict, layout) -> int:
    """A checkpoint folder: model.safetensors (header + zero bytes) and config.json; returns the data bytes."""
    tensors = {
        "model.embed_tokens.weight": ("F16", [1000, 256]),
        "model.norm.weight": ("F16", [256]),
        "lm_head.weight": ("F16", [1000, 256]),
    }
    for layer in range(2):
        prefix = f"model.layers.{layer}"
        for module, (out, in_) in LINEARS.items():
            for leaf, entry in layout(out, in_).items():
                tensors[f"{prefix}.{module}.{leaf}"] = entry
        for norm in ("input_layernorm", "post_attention_layernorm"):
            tensors[f"{prefix}.{norm}.weight"] = ("F16", [256])
        for norm in ("q_norm", "k_norm"):
            tensors[f"{prefix}.self_attn.{norm}.weight"] = ("F16", [64])
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        size = math.prod(shape) * BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    folder.mkdir()
    with open(folder / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + bytes(offset))
    (folder / "config.json").write_text(json.dumps(config))
    return offset


CASES = {
    "gptq-4bit-g128": ({"quant_method": "gptq", "bits": 4, "group_size": 128}, lambda o, i: gptq(o, i, 4, 128), True),
    "gptq-8bit-g32": ({"quant_method": "gptq", "bits": 8, "group_size": 32}, lambda o, i: gptq(o, i, 8, 32), True),
    "gptq-4bit-per-row": ({"quant_method": "gptq", "bits": 4, "group_size": -1}, lambda o, i: gptq(o, i, 4, -1), True),
    "gptq-3bit-g128": ({"quant_method": "gptq", "bits": 3, "group_size": 128}, lambda o, i: gptq(o, i, 3, 128), False),
    "gptq-4bit-g96": ({"quant_method": "gptq", "bits": 4, "group_size": 96}, lambda o, i: gptq(o, i, 4, 96), True),
    "awq-4bit-g128": ({"quant_method": "awq", "bits": 4, "group_size": 128}, lambda o, i: awq(o, i, 4, 128), True),
    "awq-4bit-g64": (
        {"quant_method": "awq", "bits": 4, "group_size": 64, "version": "gemm"},
        lambda o, i: awq(o, i, 4, 64),
        True,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gptq_awq_headers(case: str, tmp_path: Path) -> None:
    quantization, layout, readable = CASES[case]
    config = {**QWEN3, "quantization_config": quantization}
    expected = write(tmp_path / "ckpt", config, layout)
    model = read_config(config, "test")
    quant = read_quant(config, "test")
    code, _ = rest_dtype(quant, model.dtype, None, "test")
    assert plan(model, quant, code).bytes == expected, case
    if readable:  # verify tells the packing factor from scales over qzeros: a whole number of weights per int32
        result = verify(str(tmp_path / "ckpt"))
        assert result.match, (result.differences, result.unmapped)
