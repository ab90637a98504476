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
    assert_cache_equals_transformers(config, seq, dtype)


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


# Dots 3 Note: MLA on every layer; the sliding layers have their own heads and latent sizes (swa_*), the global layers
# are indexed (DeepSeek Sparse Attention) unless use_dsa is false; the indexer keys stay in fp32.
SMALL_DOTS3 = {
    "model_type": "dots3_note_text",
    **{"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 4, "pad_token_id": 0},
    **{"num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": 6, "kv_lora_rank": 5, "head_dim": 6},
    **{"qk_rope_head_dim": 2, "qk_nope_head_dim": 4, "v_head_dim": 3},
    **{"swa_num_attention_heads": 2, "swa_num_key_value_heads": 2, "swa_q_lora_rank": 4, "swa_kv_lora_rank": 7},
    **{"swa_qk_nope_head_dim": 2, "swa_qk_rope_head_dim": 4, "swa_v_head_dim": 5, "swa_head_dim": 6},
    **{"index_n_heads": 3, "index_head_dim": 4, "index_topk": 2, "sliding_window": 3},
    **{"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 6, "intermediate_size": 10},
    "shared_experts_intermediate_size": 5,
}
SLIDING = {"num_attention_heads": 2, "num_key_value_heads": 2, "q_lora_rank": 3, "kv_lora_rank": 4, "head_dim": 4}
SLIDING |= {"qk_nope_head_dim": 2, "qk_rope_head_dim": 2, "v_head_dim": 6}
DOTS3 = [
    {},  # layers 0, 1 indexed, 2, 3 sliding
    {"use_dsa": False},
    {"layer_types": ["full_attention", "sliding_attention", "full_attention", "sliding_attention"], "use_dsa": True},
    {"use_sliding_window": False},
    {"sliding_window": None, "sliding_window_size": 4},
    {"per_layer_config": {str(i): SLIDING for i in (2, 3)}},  # a saved config: the sliding sizes per layer
]


@pytest.mark.parametrize("keys", DOTS3)
@pytest.mark.parametrize("seq", [2, 5])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_dots3_note_cache_equals_transformers(keys: dict, seq: int, dtype: str) -> None:
    """The latent and the shared RoPE key per token (r_kv + d_rope; a sliding layer its own, for min(S, W - 1)
    tokens), and on an indexed layer the indexer's keys, d_idx per token in fp32."""
    config = {**SMALL_DOTS3, **keys}
    assert_cache_equals_transformers(config, seq, dtype)


@pytest.mark.parametrize("keys", DOTS3)
def test_dots3_note_flops_equal_flop_counter(keys: dict) -> None:
    """Scores and values at each kind's own head sizes; an indexed layer adds its indexer's scores, 2 · B · S² ·
    h_idx · d_idx, and their weighting over the heads, 2 · B · S² · h_idx. On CPU: the meta device cannot run the
    indexer's top-k mask."""
    from test_flops import llmcount_forward
    from test_state_flops import counter_flops

    config = {**SMALL_DOTS3, **keys}
    for batch, seq in ((1, 1), (2, 5), (1, 9)):
        expected = counter_flops(config, batch, seq)
        assert llmcount_forward(config, batch, seq) == expected, f"B={batch} S={seq} {config} ({oracle.VERSIONS})"


def test_dots3_note_class_defaults_cache_by_hand() -> None:
    """Dots3NoteTextConfig(): layers 0, 1 and every i % 4 == 1 indexed, the others sliding (W = 512: 511 tokens).
    Indexed layers keep kv_lora_rank 512 + qk_rope_head_dim 64 = 576 elements per token and 128 indexer-key elements
    in fp32; sliding layers swa_kv_lora_rank 1024 + (swa_head_dim 256 - swa_qk_nope_head_dim 192) = 1,088. bf16, S =
    32,768, with the layer counts taken from the config's own layer_types."""
    config = oracle.class_defaults("dots3_note_text")
    indexed = config["layer_types"].count("indexed_attention")
    sliding = config["layer_types"].count("sliding_attention")
    model = read_config(config, "defaults")
    result = memory.inference(model.derivation, model.values, "bf16", seq=32768, batch=1)
    kinds = {k.kind: (k.layers, k.bytes) for k in result.per_layer_kind}
    assert kinds == {
        "full_attention": (indexed, indexed * 576 * 32768 * 2),
        "sliding_attention": (sliding, sliding * 1088 * 511 * 2),
        "indexer": (indexed, indexed * 128 * 32768 * 4),
    }


def assert_cache_equals_transformers(config: dict, seq: int, dtype: str) -> None:
    """The KV cache of two sequences of ``seq`` tokens against the tensors transformers' cache holds."""
    model = read_config(config, "test")
    got = memory.inference(model.derivation, model.values, dtype, seq=seq, batch=2).bytes_of("kv_cache")
    torch_dtype = {"fp32": oracle.torch.float32, "bf16": oracle.torch.bfloat16}[dtype]
    assert got == oracle.cache_bytes(config, 2, seq, torch_dtype), f"{config} {dtype} S={seq} ({oracle.VERSIONS})"


def test_the_write_up_names_every_part_of_the_cache_and_they_add_up_to_what_transformers_holds(tmp_path) -> None:
    """The memory section's sentence lists each layer kind's bytes and the indexer keys'; at S = 5 (beyond the window
    of 3) their sum is the bytes transformers' bf16 cache holds for one sequence."""
    import json
    import re

    from typer.testing import CliRunner

    from llmcount.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL_DOTS3))
    result = CliRunner().invoke(app, ["writeup", str(path), "--sections", "memory", "--seq", "5"])
    assert result.exit_code == 0, result.output
    sentence = next(line for line in result.stdout.splitlines() if "Sliding-window layers keep" in line)
    assert "indexer keys of 2 layers" in sentence, sentence
    parts = [int(n.replace(",", "")) for n in re.findall(r"\(([\d,]+) bytes\)", sentence)]
    total = int(re.search(r": ([\d,]+) bytes \(", sentence).group(1).replace(",", ""))
    expected = oracle.cache_bytes(SMALL_DOTS3, 1, 5, oracle.torch.bfloat16)
    assert len(parts) == 3 and sum(parts) == total == expected, sentence


@pytest.mark.parametrize(
    ("model_type", "latent"), [("deepseek_v32", 512 + 64), ("hy_v4", 512 + 64), ("axk2", 128 + 32)]
)
def test_dsa_class_defaults_cache_by_hand(model_type: str, latent: int) -> None:
    """The config classes' defaults, bf16, S = 32,768: every layer keeps kv_lora_rank + qk_rope_head_dim elements per
    token (DeepSeek-V3.2 and Hy-V4 512 + 64, A.X K2 128 + 32), the layers that run their own indexer index_head_dim
    = 128 more (DeepSeek-V3.2's 61 and A.X K2's 48 layers all; Hy-V4's "full" ones of its indexer_types)."""
    config = oracle.class_defaults(model_type)
    layers = config["num_hidden_layers"]
    indexed = layers if config.get("indexer_types") is None else config["indexer_types"].count("full")
    model = read_config(config, "defaults")
    result = memory.inference(model.derivation, model.values, "bf16", seq=32768, batch=1)
    kinds = {k.kind: (k.layers, k.bytes) for k in result.per_layer_kind}
    assert kinds == {
        "full_attention": (layers, layers * latent * 32768 * 2),
        "indexer": (indexed, indexed * 128 * 32768 * 2),
    }
