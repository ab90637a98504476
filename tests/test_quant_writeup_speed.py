"""The write-up's speed paragraph reads the weights at the bytes the quantised checkpoint stores (the quant plan's
groups), not at the memory section's dtype."""

from __future__ import annotations

from llmcount.formulas.config import read_config
from llmcount.quant.writeup import quant_part
from llmcount.renderers.writeup import memory_part, speed_part

CONFIG = {
    "model_type": "qwen3",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "vocab_size": 1000,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm"},
}


def test_decode_reads_the_stored_bytes() -> None:
    model = read_config(CONFIG, "awq")
    memory = memory_part(model, 4096)
    stored = quant_part(model, CONFIG, "awq")
    plain, quantised = speed_part(model, memory), speed_part(model, memory, stored)
    # one decode step at B = 1 reads every weight but the (untied) token table, and the bf16 cache of S tokens:
    # 2 (K and V) · N · h_kv · h_d · S elements of 2 bytes
    cache = 2 * 2 * 2 * 64 * 4096 * 2
    table = 1000 * 256 * 2  # embed_tokens, kept in bf16 and read only at the rows looked up
    assert quantised.decode_bytes == stored.bytes - table + cache
    assert plain.decode_bytes == 2 * (model.counts.total - 1000 * 256) + cache
    assert quantised.decode_bytes < plain.decode_bytes
    assert "AWQ" in quantised.dtype and plain.dtype == memory.dtype


def test_the_chinese_post_names_the_scheme_in_chinese(tmp_path) -> None:
    """The zh post's memory and speed paragraphs and its quantisation section name the scheme in the zh template's
    own words (组大小 for the group, 其余 for the dtype of the rest), not the English label."""
    import json

    from llmcount.renderers.writeup import build

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    text = build(str(path), lang="zh", sections="memory,quant").text
    speed = next(line for line in text.splitlines() if "roofline" in line and "权重按" in line)
    assert "权重按 AWQ int4（GEMM，组大小 128），其余 BF16、KV 缓存按 bf16 计" in speed
    assert "the rest" not in text and "group 128" not in text
    assert "checkpoint 的权重按 AWQ int4（GEMM，组大小 128） 存储" in text
    english = build(str(path), sections="memory,quant").text
    assert "AWQ int4 (GEMM), group 128, the rest BF16" in english
