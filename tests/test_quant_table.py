"""``memory --table``'s schemes side by side, each column against the format's own library: the fp8-block column
against transformers' own FP8 quantiser's state dict (5.24.0, tests/test_quant_oracle.py) on small dense, MoE and
MLA configs; the q8_0 column against a hand derivation from gguf's GGML_QUANT_SIZES (llama.cpp's block sizes) and
the tensors llama.cpp's converter writes, and against a GGUF file the gguf package writes with those tensors."""

from __future__ import annotations

import pytest
from quant_models import QWEN3

from llmcount.formulas.config import read_config
from llmcount.quant.report import scheme_table

gguf = pytest.importorskip("gguf")

Q8_0 = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_0]  # (32 elements, 34 bytes) per block

QWEN3_MOE = {
    "model_type": "qwen3_moe",
    "hidden_size": 64,
    "intermediate_size": 128,
    "moe_intermediate_size": 96,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 32,
    "vocab_size": 320,
}


def _row(config: dict, name: str) -> int:
    model = read_config({**config, "torch_dtype": "bfloat16"}, "test")
    rows, refused = scheme_table(model, None)
    found = [r for r in rows if r.name == name]
    assert found, refused
    return found[0].bytes


def _q8_0(quantised: int, kept_f32: int) -> int:
    elements, size = Q8_0
    assert quantised % elements == 0
    return quantised // elements * size + 4 * kept_f32


# Dense Qwen3 (d 96, d_ff 160, 2 layers, heads 2 and 1 of 48, V 300, untied). Q8_0 quantises every 2-D tensor
# (token_embd and output too: llama-quant.cpp keeps Q8_0 for output when the file type is Q8_0); the 1-D norms stay
# F32 as the converter writes them. 2-D: token_embd, output 300·96 each; per layer attn_q 96·96, attn_k, attn_v
# 48·96, attn_output 96·96, ffn_gate, ffn_up, ffn_down 160·96. 1-D per layer: attn_norm, ffn_norm 96, attn_q_norm,
# attn_k_norm 48; output_norm 96.
DENSE_2D = 2 * 300 * 96 + 2 * (2 * 96 * 96 + 2 * 48 * 96 + 3 * 160 * 96)  # 205,056
DENSE_1D = 2 * (96 + 96 + 48 + 48) + 96  # 672
# MoE Qwen3 (d 64, 4 experts of 96, 2 layers, heads 2 and 1 of 32, V 320): the experts' 3-D tensors Q8_0; the router
# ffn_gate_inp (4·64) is written F32 by the converter and never quantised by llama-quantize.
MOE_2D = 2 * 320 * 64 + 2 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 4 * 96 * 64)  # 212,992
MOE_F32 = 2 * 4 * 64 + 2 * (64 + 64 + 32 + 32) + 64  # 960


@pytest.mark.parametrize(
    ("config", "quantised", "kept"), [(QWEN3, DENSE_2D, DENSE_1D), (QWEN3_MOE, MOE_2D, MOE_F32)], ids=["dense", "moe"]
)
def test_q8_0_column_equals_ggml_block_sizes(config, quantised, kept) -> None:
    assert _row(config, "q8_0") == _q8_0(quantised, kept)


def test_q8_0_column_equals_a_gguf_files_tensor_data(tmp_path) -> None:
    """The same tensors written by gguf's own writer (GGUFWriter, gguf.quants.quantize): the file's tensor data,
    each tensor's nbytes as the package lays it out."""
    import numpy as np

    shapes_2d = [(300, 96), (300, 96)] + [(96, 96), (48, 96), (48, 96), (96, 96), (160, 96), (160, 96), (96, 160)] * 2
    shapes_1d = [(96,), (96,), (48,), (48,)] * 2 + [(96,)]
    path = tmp_path / "q8.gguf"
    writer = gguf.GGUFWriter(str(path), "qwen3")
    for i, shape in enumerate(shapes_2d):
        data = gguf.quants.quantize(np.zeros(shape, dtype=np.float32), gguf.GGMLQuantizationType.Q8_0)
        writer.add_tensor(f"t{i}", data, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    for i, shape in enumerate(shapes_1d):
        writer.add_tensor(f"n{i}", np.zeros(shape, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    reader = gguf.GGUFReader(str(path))
    assert sum(int(t.n_bytes) for t in reader.tensors) == _row(QWEN3, "q8_0")


torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["QWEN3", "QWEN3_MOE", "DEEPSEEK"])
def test_fp8_block_column_equals_transformers_quantiser(name: str) -> None:
    import test_quant_oracle as oracle

    config = {**getattr(oracle, name), "quantization_config": oracle.FP8}
    expected, tensors = oracle.oracle_bytes(config)
    expected -= oracle.released_differences(tensors)
    assert _row(getattr(oracle, name), "fp8-block") == expected, f"{name}: {oracle.VERSIONS} state dict"
