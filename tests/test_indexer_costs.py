"""Attention layers that also cache a lightning indexer's keys (MiniMax-M3's sparse layers): ``[attention]``'s
``indexed`` layers keep ``indexed_kv`` elements per token besides their keys and values, and the indexer's scores
are a record's ``[[flops]]``.

Hand-set configs flip the layer pattern (no sparse layer, some, all); caches are compared with the tensors
transformers' cache holds after a CPU forward (fp32 and bf16), FLOPs with FlopCounterMode, and the published sizes'
cache with a hand derivation.
"""

from __future__ import annotations

import pytest

from llmcount.formulas import memory
from llmcount.formulas.config import read_config
from llmcount.formulas.records import RecordError, parse_record

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

SPARSE = "minimax_m3_sparse"
SMALL_M3 = {
    "model_type": "minimax_m3_vl_text",
    **{"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 3},
    **{"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "index_n_heads": 2, "index_head_dim": 4},
    **{"num_local_experts": 4, "num_experts_per_tok": 2, "intermediate_size": 6, "shared_intermediate_size": 5},
    "dense_intermediate_size": 10,
    "mlp_layer_types": ["dense", "sparse", "sparse"],
}
LAYOUTS = [
    {"layer_types": ["full_attention", SPARSE, SPARSE]},
    {"layer_types": ["full_attention"] * 3},
    {"layer_types": [SPARSE] * 3, "index_block_size": 2, "index_topk_blocks": 1},
    {"sparse_attention_config": {"sparse_attention_freq": [1, 0, 1], "sparse_index_dim": 6}},
]


@pytest.mark.parametrize("keys", LAYOUTS)
@pytest.mark.parametrize("seq", [2, 5])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_minimax_m3_cache_equals_transformers(keys: dict, seq: int, dtype: str) -> None:
    config = {**SMALL_M3, **keys}
    model = read_config(config, "test")
    got = memory.inference(model.derivation, model.values, dtype, seq=seq, batch=2).bytes_of("kv_cache")
    torch_dtype = {"fp32": oracle.torch.float32, "bf16": oracle.torch.bfloat16}[dtype]
    assert got == oracle.cache_bytes(config, 2, seq, torch_dtype), f"{config} {dtype} S={seq} ({oracle.VERSIONS})"


@pytest.mark.parametrize("keys", LAYOUTS)
def test_minimax_m3_flops_equal_flop_counter(keys: dict) -> None:
    """Eager attention computes every layer's S x S scores (the sparse layers mask the blocks their indexer leaves
    out); a sparse layer adds its indexer's scores, 2 · B · h_idx · S² · d_idx."""
    from test_flops import assert_equal_to_counter

    for batch, seq in ((1, 1), (2, 5), (1, 9)):
        assert_equal_to_counter({**SMALL_M3, **keys}, batch, seq)


def test_minimax_m3_cache_by_hand() -> None:
    """MiniMaxM3VLTextConfig() (MiniMax-M3's sizes: 60 layers, h_kv = 4, h_d = 128, index_head_dim 128) with every
    other layer sparse: keys and values 60 · 2 · 4 · 128 · 32,768 · 2 = 4,026,531,840 bytes in bf16 at S = 32,768;
    the indexer keys of the 30 sparse layers 30 · 128 · 32,768 · 2 = 251,658,240."""
    config = {**oracle.class_defaults("minimax_m3_vl_text"), "layer_types": ["full_attention", SPARSE] * 30}
    model = read_config(config, "defaults")
    result = memory.inference(model.derivation, model.values, "bf16", seq=32768, batch=1)
    kinds = {k.kind: (k.layers, k.bytes) for k in result.per_layer_kind}
    assert kinds == {"full_attention": (60, 4_026_531_840), "indexer": (30, 251_658_240)}
    assert result.bytes_of("kv_cache") == 4_026_531_840 + 251_658_240


def test_indexer_fields_go_together() -> None:
    record = {
        "model_type": "x",
        "title": "x",
        "symbols": {"N": "num_hidden_layers", "d": "hidden_size"},
        "terms": [{"path": "attention/q_proj", "expr": "d*d", "layers": "N"}],
        "attention": {"layers": "N", "qk": "d", "v": "d", "kv": "2*d", "indexed": "N"},
    }
    with pytest.raises(RecordError, match=r"'indexed' .* and 'indexed_kv' go together"):
        parse_record(record, "x.toml")
