"""``memory --table``'s nvfp4, nf4, awq and mlx columns against files the formats' own libraries write on the CPU,
for the same small config and the column's own settings (llmcount/quant/report.py TABLE_SCHEMES):

* nvfp4: compressed-tensors 0.20.0's NVFP4A16 preset (FP4 weights, FP8 scale per 16, fp32 global scale), the LM
  head ignored, written by ``ModelCompressor.compress_model`` (tests/test_quant_compressed_tensors.py);
* nf4: bitsandbytes 0.50.2's CPU build through transformers 5.24.0 (``from_pretrained`` with a BitsAndBytesConfig
  nf4, blocks of 64, then ``save_pretrained``): ``Params4bit`` quantised by ``quantize_4bit`` on the CPU;
* mlx 4-bit and 8-bit, group 64: mlx 0.32.4 / mlx-lm 0.32.2's ``quantize_model`` and ``mx.save_safetensors``
  (tests/test_quant_mlx.py); widths 64 does not divide are left unquantised by mlx-lm, as the column assumes;
* awq int4 g128 (GEMM): no AWQ kernel package installs here (transformers' AWQ quantiser needs gptqmodel), so the
  column is checked against a safetensors header built from the GEMM layout, written out below by hand.
"""

from __future__ import annotations

import json
import struct
import warnings
from pathlib import Path

import pytest
from quant_models import QWEN3

from llmcount.formulas.config import read_config
from llmcount.quant.report import scheme_table


def column(config: dict, name: str) -> int:
    model = read_config({**config, "torch_dtype": "bfloat16"}, "test")
    rows, refused = scheme_table(model, None)
    found = [r for r in rows if r.name == name]
    assert found, refused
    return found[0].bytes


def test_nvfp4_column_equals_a_compressed_tensors_file(tmp_path: Path) -> None:
    pytest.importorskip("compressed_tensors")
    from compressed_tensors.quantization import preset_name_to_scheme
    from test_quant_compressed_tensors import compressed

    weights = preset_name_to_scheme("NVFP4A16", ["Linear"]).weights.model_dump(exclude_none=True)
    written = compressed(QWEN3, "nvfp4-pack-quantized", weights, ["lm_head"], tmp_path / "ckpt")
    assert column(QWEN3, "nvfp4") == written["_bytes"]


def test_nf4_column_equals_a_bitsandbytes_cpu_file(tmp_path: Path) -> None:
    pytest.importorskip("bitsandbytes")
    pytest.importorskip("accelerate")
    import torch
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForCausalLM, BitsAndBytesConfig

    rest = {k: v for k, v in QWEN3.items() if k != "model_type"}
    torch.manual_seed(0)
    plain = AutoModelForCausalLM.from_config(AutoConfig.for_model("qwen3", **rest), dtype=torch.bfloat16)
    plain.save_pretrained(tmp_path / "bf16")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_pretrained(
            tmp_path / "bf16",
            quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4"),
            dtype=torch.bfloat16,
        )
        model.save_pretrained(tmp_path / "nf4")
    state = load_file(tmp_path / "nf4" / "model.safetensors")
    assert any(k.endswith(".quant_state.bitsandbytes__nf4") for k in state)  # quantised on the CPU, nf4
    assert column(QWEN3, "nf4") == sum(v.numel() * v.element_size() for v in state.values())


@pytest.mark.parametrize("bits", [4, 8])
def test_mlx_columns_equal_mlx_files(bits: int, tmp_path: Path) -> None:
    pytest.importorskip("mlx.core")
    pytest.importorskip("mlx_lm")
    from test_quant_mlx import QWEN3 as MLX_QWEN3
    from test_quant_mlx import written

    config = {**MLX_QWEN3, "tie_word_embeddings": False, "intermediate_size": 192}  # 192: a multiple of 64; 96 not
    _, expected = written(config, tmp_path / "ckpt", 64, bits)
    assert column(config, f"mlx-{bits}bit-g64") == expected


# AWQ GEMM, 4 bits, group 128, as AutoAWQ's WQLinear_GEMM (awq/modules/linear/gemm.py, v0.2.x) and gptqmodel's
# AwqGEMMQuantLinear lay a Linear (out, in) out: qweight (in, out/8) int32, qzeros (in/128, out/8) int32, scales
# (in/128, out) fp16; the bias kept. transformers' AWQ quantiser leaves the LM head alone (get_modules_to_not_convert
# with add_default_skips=True), and embeddings and norms are no Linear: all of them stay bf16.
AWQ_QWEN3 = {
    "model_type": "qwen3",
    "hidden_size": 128,
    "intermediate_size": 384,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 128,
    "vocab_size": 300,
    "tie_word_embeddings": False,
}
LINEARS = [("q_proj", 256, 128), ("k_proj", 128, 128), ("v_proj", 128, 128), ("o_proj", 128, 256)]
LINEARS += [("gate_proj", 384, 128), ("up_proj", 384, 128), ("down_proj", 128, 384)]


def awq_header(path: Path) -> int:
    """A safetensors file holding the AWQ GEMM tensors (zeros) of AWQ_QWEN3; its data size."""
    tensors: dict[str, tuple[str, list[int]]] = {}
    for layer in range(2):
        for name, out_f, in_f in LINEARS:
            group = "self_attn" if name.endswith(("q_proj", "k_proj", "v_proj", "o_proj")) else "mlp"
            base = f"model.layers.{layer}.{group}.{name}"
            tensors[f"{base}.qweight"] = ("I32", [in_f, out_f // 8])
            tensors[f"{base}.qzeros"] = ("I32", [in_f // 128, out_f // 8])
            tensors[f"{base}.scales"] = ("F16", [in_f // 128, out_f])
        for norm in ("input_layernorm", "post_attention_layernorm", "self_attn.q_norm", "self_attn.k_norm"):
            size = 128
            tensors[f"model.layers.{layer}.{norm}.weight"] = ("BF16", [size])
    tensors["model.embed_tokens.weight"] = ("BF16", [300, 128])
    tensors["lm_head.weight"] = ("BF16", [300, 128])
    tensors["model.norm.weight"] = ("BF16", [128])
    width = {"I32": 4, "F16": 2, "BF16": 2}
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        size = width[dtype]
        for x in shape:
            size *= x
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)
    return offset


def test_awq_column_equals_the_gemm_layout(tmp_path: Path) -> None:
    from llmcount.checkpoint import verify

    data = awq_header(tmp_path / "model.safetensors")
    assert column(AWQ_QWEN3, "awq-int4-g128") == data
    quant = {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm", "zero_point": True}
    config = {**AWQ_QWEN3, "torch_dtype": "bfloat16", "quantization_config": quant}
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = verify(str(tmp_path))  # the header read back: logical parameters from the packed shapes
    assert result.match, result.differences
    assert sum(size for _, size in result.stored) == data
