"""MiniMax-M1 (model_type minimax_m1, remote code) against its published checkpoint.

github.com/MiniMax-AI/MiniMax-M1 at commit 2abb4f45a9df4154b4bde024d51874bd127edcee publishes MiniMax-M1-80k's
config.json (kept in tests/remote_oracle/minimax_m1.json with the figures of its modeling file) and
model.safetensors.index.json: 8,243 tensors, total_size 912,210,767,872 bytes. Its weight_map names, per layer,
input_layernorm, post_attention_layernorm, block_sparse_moe.gate and block_sparse_moe.experts.{0..31}.w1/w2/w3; on the
70 lightning layers (attn_type_list 0) self_attn.qkv_proj, norm, output_gate and out_proj, on the 10 softmax layers
(7, 15, ..., 79) self_attn.q_proj, k_proj, v_proj and o_proj; and model.embed_tokens, model.norm, lm_head.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from refusal import run

from llmcount.checkpoint import verify
from llmcount.formulas.config import read_config

SPEC = json.loads((Path(__file__).parent / "remote_oracle" / "minimax_m1.json").read_text("utf-8"))
M1_80K = {
    **SPEC["configs"]["MiniMax-M1-80k"]["config"],
    "architectures": ["MiniMaxM1ForCausalLM"],
    "auto_map": {
        "AutoConfig": "configuration_minimax_m1.MiniMaxM1Config",
        "AutoModelForCausalLM": "modeling_minimax_m1.MiniMaxM1ForCausalLM",
    },
    "model_type": "minimax_m1",
}
TOTAL_SIZE = 912_210_767_872  # bytes, model.safetensors.index.json's metadata


def m1_by_hand() -> int:
    """d = 6144, 64 heads of 128, 8 key-value heads, 32 experts of 9216, V = 200,064, 70 lightning and 10 softmax
    layers: lightning qkv_proj 6144·3·8192, norm 8192, output_gate and out_proj 6144·8192 each; softmax q and o
    6144·8192 each, k and v 6144·1024 each; per layer the gate 6144·32, the experts 32·3·6144·9216 and two norms."""
    lightning = 6144 * 3 * 8192 + 8192 + 2 * 6144 * 8192
    softmax = 2 * 6144 * 8192 + 2 * 6144 * 1024
    every = 6144 * 32 + 32 * 3 * 6144 * 9216 + 2 * 6144
    return 70 * lightning + 10 * softmax + 80 * every + 2 * 200064 * 6144 + 6144


def published_names() -> list[str]:
    names = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    for i, kind in enumerate(M1_80K["attn_type_list"]):
        lightning = ("qkv_proj", "norm", "output_gate", "out_proj")
        attention = lightning if kind == 0 else ("q_proj", "k_proj", "v_proj", "o_proj")
        names += [f"model.layers.{i}.self_attn.{leaf}.weight" for leaf in attention]
        names += [f"model.layers.{i}.{leaf}.weight" for leaf in ("input_layernorm", "post_attention_layernorm")]
        names += [f"model.layers.{i}.block_sparse_moe.gate.weight"]
        names += [f"model.layers.{i}.block_sparse_moe.experts.{e}.w{j}.weight" for e in range(32) for j in (1, 2, 3)]
    return names


def test_m1_80k_by_hand_and_as_built() -> None:
    total = read_config(M1_80K, "MiniMax-M1-80k").counts.total
    assert total == m1_by_hand() == SPEC["figures"]["MiniMax-M1-80k"]["total"] == 456_089_655_296
    # The index's bytes are the parameters in bfloat16 and the 80 routers (6144 × 32 each) in float32, two bytes more
    # per weight (vLLM's MiniMax-Text-01 loader builds the gate in float32 too).
    assert 2 * total + 2 * 80 * 6144 * 32 == TOTAL_SIZE


def test_published_index_against_the_record(tmp_path: Path) -> None:
    """verify --index reads total_size as bfloat16 elements: what is left is the routers' float32, which the record's
    [checkpoint] float32 names: by hand, 80 gate tensors of 6144 × 32 = 15,728,640 parameters at 4 bytes take
    31,457,280 bytes more than at 2, i.e. 15,728,640 bfloat16 elements beyond the formula's; nothing is unexplained."""
    (tmp_path / "config.json").write_text(json.dumps(M1_80K))
    names = published_names()
    assert len(names) == 8243
    index = tmp_path / "model.safetensors.index.json"
    weight_map = dict.fromkeys(names, "model-00001-of-00413.safetensors")
    index.write_text(json.dumps({"metadata": {"total_size": TOTAL_SIZE}, "weight_map": weight_map}))
    result = verify(str(tmp_path), index=str(index), dtype_name="bfloat16")
    assert result.formula_total == m1_by_hand()
    assert result.checkpoint_total - result.formula_total == 80 * 6144 * 32
    assert [(c.path, c.formula, c.checkpoint) for c in result.components] == [("moe/router (float32)", 0, 15_728_640)]
    note = result.components[0].note
    assert "80 tensors (model.layers.0.block_sparse_moe.gate.weight ...)" in note, note
    assert "15,728,640 parameters at 4 bytes, 31,457,280 bytes more than bf16" in note, note
    assert 2 * (result.formula_total + 15_728_640) == TOTAL_SIZE


def test_float32_routers_in_a_float32_index_take_nothing_more(tmp_path: Path) -> None:
    """At float32 (4 bytes for every weight) the routers are no different: total_size 4 · P is matched as is."""
    (tmp_path / "config.json").write_text(json.dumps(M1_80K))
    index = tmp_path / "model.safetensors.index.json"
    weight_map = dict.fromkeys(published_names(), "model-00001-of-00413.safetensors")
    index.write_text(json.dumps({"metadata": {"total_size": 4 * m1_by_hand()}, "weight_map": weight_map}))
    result = verify(str(tmp_path), index=str(index), dtype_name="float32")
    assert result.match and result.components == ()


def test_a_record_float32_path_must_be_one_of_its_terms() -> None:
    from llmcount.formulas.records import RecordError, _checkpoint

    with pytest.raises(RecordError, match="float32: 'moe/gate' is not a path of the record's terms"):
        _checkpoint({"float32": ["moe/gate"]}, "minimax_m1 [checkpoint]", {"moe/router"})


def test_published_config_counts_through_its_record_and_refuses_without_attn_type_list(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(M1_80K))
    result = run("count", str(path), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == 456_089_655_296
    for change, message in (
        ({"attn_type_list": None}, "attn_type_list is required"),
        ({"attn_type_list": [0, 1]}, "'attn_type_list' has 2 entries; minimax_m1 needs at least one entry per layer"),
        ({"num_experts_per_tok": 33}, "num_experts_per_tok (33) is larger than num_local_experts (32)"),
    ):
        path.write_text(json.dumps({**M1_80K, **change}))
        refused = run("count", str(path))
        assert refused.exit_code == 1 and refused.stdout == "", change
        assert message in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.stderr


def test_auto_map_class_alone_finds_the_record(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**M1_80K, "model_type": "minimax_m1_custom"}))
    result = run("count", str(path), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == 456_089_655_296
    assert "MiniMaxM1ForCausalLM" in result.stderr and "minimax_m1 record" in result.stderr
