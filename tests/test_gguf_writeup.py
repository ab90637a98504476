"""A write-up of a GGUF file says how the file stores its weights: the quantisation section's bytes per ggml type are
the file's own (``gguf.GGUFReader``'s n_bytes of each tensor, the file written by the gguf package's writer), and
the speed paragraph reads the weights at those bytes, in English and in Chinese."""

from __future__ import annotations

from pathlib import Path

import pytest

gguf = pytest.importorskip("gguf")

from gguf_build import write_gguf  # noqa: E402

from llmcount.renderers.writeup import build  # noqa: E402

CONFIG = {
    "model_type": "qwen3",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "vocab_size": 512,
    "max_position_embeddings": 1024,
    "rms_norm_eps": 1e-6,
}


def test_the_files_own_bytes(tmp_path: Path) -> None:
    path = tmp_path / "small.gguf"
    write_gguf(CONFIG, "qwen3", path, types=("Q4_K", "Q6_K", "Q8_0"), file_type=15)  # MOSTLY_Q4_K_M
    by_type: dict[str, int] = {}
    tensors = gguf.GGUFReader(path).tensors
    for tensor in tensors:
        by_type[tensor.tensor_type.name] = by_type.get(tensor.tensor_type.name, 0) + int(tensor.n_bytes)
    post = build(str(path), sections="memory,quant")
    data = post.data["quant"]
    assert {t["tensor"]: t["bytes"] for t in data["tensors"]} == by_type
    assert data["bytes"] == sum(by_type.values()) and data["parameters"] == sum(int(t.n_elements) for t in tensors)
    assert "weights in Q4_K_M (the GGUF file's tensors), the rest F32" in post.text
    zh = build(str(path), lang="zh", sections="memory").text
    assert "权重按 Q4_K_M（GGUF 文件中的张量），其余 F32" in zh and "the rest" not in zh
    latex = build(str(path), fmt="latex", sections="memory,quant").text
    assert "Q4_K_M" not in latex and r"weights in Q4\_K\_M (the GGUF file's tensors), the rest F32" in latex
