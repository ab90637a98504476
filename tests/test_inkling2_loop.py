"""Inkling 2 Loop (transformers 5.24's inkling2_loop_text and the inkling2_loop composite): parameters by hand and
against transformers on the meta device, FLOPs against FlopCounterMode and the cache against the one transformers
fills, on the CPU (eager attention, fp32), for fixed and hypothesis-drawn configs that its config class accepts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcount.formulas import memory
from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

from test_flops import llmcount_forward  # noqa: E402
from test_state_flops import counter_flops  # noqa: E402

# Three layers, sliding, full, sliding; blocks of one layer; layers 1 and 2 looped, two passes
SMALL = {"model_type": "inkling2_loop_text", "vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 3}
SMALL |= {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8}
SMALL |= {"swa_num_attention_heads": 6, "swa_num_key_value_heads": 3, "swa_head_dim": 4, "sliding_window_size": 3}
SMALL |= {"d_rel": 5, "rel_extent": 7, "conv_kernel_size": 3}
SMALL |= {"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 6}
SMALL |= {"n_layers_per_attn_res_block": 1, "layer_types": ["hybrid_sliding", "hybrid", "hybrid_sliding"]}
SMALL |= {"loop_layer_index_start": 1, "loop_layer_index_end": 3, "loop_num_passes": 2, "loop_gate_rank": 3}
SMALL |= {"unpadded_vocab_size": 60, "pad_token_id": 0}

# By hand from modeling_inkling2_loop.py, with d = 16:
# a sliding layer's attention: q, gate 2·16·(6·4); k, v 2·16·(3·4); r_proj 16·6·5; o 24·16; k_sconv, v_sconv
# 2·12·3; rel_logits_proj 5·3; sink_proj 16·6; q_l2_clip 6·4; rel_l2_clip 6·5
SLIDING = 2 * 16 * 24 + 2 * 16 * 12 + 16 * 6 * 5 + 24 * 16 + 2 * 12 * 3 + 5 * 3 + 16 * 6 + 24 + 30
# a full layer's: q, gate 2·16·32; k, v 2·16·16; r_proj 16·4·5; o 32·16; k_sconv, v_sconv: static taps 2·16·3 and
# their tap projections 2·16·2·3; rel_logits_proj 5·7; sink_proj 16·4; q_l2_clip 32; rel_l2_clip 4·5
FULL = 2 * 16 * 32 + 2 * 16 * 16 + 16 * 4 * 5 + 32 * 16 + 2 * 16 * 3 + 2 * 16 * 2 * 3 + 5 * 7 + 16 * 4 + 32 + 20
# every layer: post-attention and post-MLP convolutions 2·16·3, mlp_input's query 16, router 16·4, experts
# 3·4·16·6, post_attention_layernorm 16
EVERY = 2 * 16 * 3 + 16 + 16 * 4 + 3 * 4 * 16 * 6 + 16
# a looped layer's four message gates, each 2·16·3 down and 2·3·16 back (forget and message gates): 4·4·d·r
GATES = 4 * (2 * 16 * 3 + 2 * 3 * 16)
LAYER_0 = SLIDING + EVERY + 16  # no attention residual on layer 0; its input_layernorm
LAYER_1 = 3 * 16 + FULL + EVERY + 3 * 16 + GATES  # three residual queries; q, k and v input norms
LAYER_2 = 16 + SLIDING + EVERY + 16 + GATES
# embedding 64·16 and its norm; final_input's query and the final norm; message_input 4 queries for each of the
# 3 - 1 looped layer indices; the head of unpadded_vocab_size rows, 60·16
SMALL_TOTAL = 64 * 16 + 16 + LAYER_0 + LAYER_1 + LAYER_2 + 2 * 16 + 4 * 2 * 16 + 60 * 16


def total(config: dict) -> int:
    return read_config(config, "test config").counts.total


def cache(config: dict, batch: int, seq: int) -> int:
    model = read_config(config, "test config")
    result = memory.inference(model.derivation, model.values, "fp32", seq=seq, batch=batch)
    return result.bytes_of("kv_cache") + result.bytes_of("state")


def test_small_by_hand() -> None:
    assert SMALL_TOTAL == 15_185
    assert total(SMALL) == SMALL_TOTAL
    assert oracle.meta_total(SMALL) == SMALL_TOTAL, oracle.VERSIONS


@pytest.mark.parametrize("rank", [1, 5, 64])
def test_each_looped_layer_adds_four_gates_of_four_d_r(rank: int) -> None:
    """loop_gate_rank changes only the message gates: 4 gates · 4·d·r on each of the 2 looped layers."""
    config = {**SMALL, "loop_gate_rank": rank}
    assert total(config) == SMALL_TOTAL - 2 * GATES + 2 * 4 * 4 * 16 * rank
    assert oracle.meta_total(config) == total(config), oracle.VERSIONS


def test_class_defaults() -> None:
    """Inkling2LoopTextConfig's defaults (Inkling 2 Mini: 24 layers, layers 6 to 17 looped three times)."""
    defaults = oracle.class_defaults("inkling2_loop_text")
    assert total(defaults) == oracle.meta_total(defaults) == 26_068_156_416, oracle.VERSIONS
    assert total({"model_type": "inkling2_loop_text"} | {k: defaults[k] for k in ("num_hidden_layers", "vocab_size")}
                 | {k: defaults[k] for k in ("hidden_size", "num_attention_heads")}) == 26_068_156_416  # fmt: skip


@pytest.mark.parametrize(
    "loop",
    [
        {"core_start": 12, "core_end": 18, "num_passes": 2, "gate_rank": 32},
        {"core_end": 24},
        {},
        None,
    ],
)
def test_loop_config_overrides_the_loop_keys(loop) -> None:
    """Inkling2LoopTextConfig takes core_start, core_end, num_passes and gate_rank from loop_config over the keys."""
    config = {**oracle.class_defaults("inkling2_loop_text"), "loop_config": loop}
    assert total(config) == oracle.meta_total(config), oracle.VERSIONS


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"loop_layer_index_start": 3}, r"loop_layer_index_start \(3\) is not a multiple of n_layers_per"),
        ({"loop_layer_index_end": 20}, r"loop_layer_index_end \(20\) is not a multiple of n_layers_per"),
        ({"loop_layer_index_start": 12, "loop_layer_index_end": 6}, r"loop_layer_index_end \(6\) is below"),
        ({"loop_config": {"core_start": 9}}, r"loop_layer_index_start \(9\) is not a multiple"),
    ],
)
def test_configs_transformers_refuses_are_refused_naming_the_key(keys: dict, message: str) -> None:
    config = {**oracle.class_defaults("inkling2_loop_text"), **keys}
    with pytest.raises(oracle.TransformersRejected):
        oracle.meta_total(config)
    with pytest.raises(RuleRefusal, match=message):
        total(config)


CASES = {
    "two passes": SMALL,
    "one pass (no messages)": {**SMALL, "loop_num_passes": 1},
    "three passes, blocks of two": {
        **SMALL,
        **{"num_hidden_layers": 5, "n_layers_per_attn_res_block": 2, "loop_num_passes": 3},
        **{"loop_layer_index_start": 2, "loop_layer_index_end": 4},
        "layer_types": ["hybrid", "hybrid_sliding", "hybrid", "hybrid_sliding", "hybrid"],
    },
    "the class's layer pattern, looped layers past the last": {
        **SMALL,
        **{"num_hidden_layers": 7, "layer_types": None, "n_layers_per_attn_res_block": 3},
        **{"loop_layer_index_start": 3, "loop_layer_index_end": 9, "loop_num_passes": 2},
    },
}


@pytest.mark.parametrize(("batch", "seq"), [(1, 5), (2, 9)])
@pytest.mark.parametrize("name", sorted(CASES))
def test_flops_and_cache_equal_transformers(name: str, batch: int, seq: int) -> None:
    config = CASES[name]
    assert total(config) == oracle.meta_total(config), oracle.VERSIONS
    assert llmcount_forward(config, batch, seq) == counter_flops(config, batch, seq), oracle.VERSIONS
    assert cache(config, batch, seq) == oracle.cache_bytes(config, batch, seq), oracle.VERSIONS


@st.composite
def loop_configs(draw) -> dict:
    """Configs Inkling2LoopTextConfig accepts: the loop's bounds multiples of the block size, past the last layer
    only with two passes or fewer (transformers' cached forward fails there otherwise); layer kinds drawn or the
    class's pattern; small widths of even heads."""
    layers = draw(st.integers(2, 6))
    block = draw(st.integers(1, 3))
    start = block * draw(st.integers(1, max(1, (layers - 1) // block)))
    passes = draw(st.integers(1, 3))
    ends = [e for e in range(start, 2 * layers + 1, block) if passes <= 2 or e <= layers] or [start]  # none built
    kinds = st.sampled_from(["hybrid", "hybrid_sliding"])
    h_kv, h_kv_sw = draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 2]))
    config = {"model_type": "inkling2_loop_text", "num_hidden_layers": layers, "vocab_size": 40, "pad_token_id": 0}
    config |= {"hidden_size": draw(st.sampled_from([8, 16])), "n_layers_per_attn_res_block": block}
    config |= {"layer_types": draw(st.one_of(st.none(), st.lists(kinds, min_size=layers, max_size=layers)))}
    config |= {"num_key_value_heads": h_kv, "num_attention_heads": h_kv * draw(st.sampled_from([1, 2]))}
    config |= {"swa_num_key_value_heads": h_kv_sw, "swa_num_attention_heads": h_kv_sw * draw(st.sampled_from([1, 2]))}
    config |= {"head_dim": draw(st.sampled_from([2, 4])), "swa_head_dim": draw(st.sampled_from([2, 4]))}
    config |= {"sliding_window_size": draw(st.integers(2, 6)), "d_rel": draw(st.integers(1, 4))}
    config |= {"rel_extent": draw(st.integers(1, 8)), "conv_kernel_size": draw(st.integers(2, 4))}
    config |= {"n_routed_experts": 4, "num_experts_per_tok": draw(st.integers(1, 4)), "moe_intermediate_size": 4}
    config |= {"unpadded_vocab_size": draw(st.integers(30, 40))}
    config |= {"loop_layer_index_start": start, "loop_layer_index_end": draw(st.sampled_from(ends))}
    config |= {"loop_num_passes": passes, "loop_gate_rank": draw(st.integers(1, 4))}
    return config


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(config=loop_configs(), batch=st.integers(1, 2), seq=st.integers(1, 9))
def test_drawn_configs_equal_transformers(config: dict, batch: int, seq: int) -> None:
    context = f"B={batch} S={seq} {json.dumps(config)} ({oracle.VERSIONS})"
    assert total(config) == oracle.meta_total(config), context
    assert llmcount_forward(config, batch, seq) == counter_flops(config, batch, seq), context
    assert cache(config, batch, seq) == oracle.cache_bytes(config, batch, seq), context


def test_composite_class_defaults_and_drawn_text() -> None:
    """Inkling2LoopForConditionalGeneration's language model (its vision tower left out, said in the total's name)."""
    model = "Inkling2LoopForConditionalGeneration"
    assert total({"model_type": "inkling2_loop"}) == oracle.language_model_total({"model_type": "inkling2_loop"}, model)
    text = {k: v for k, v in CASES["three passes, blocks of two"].items() if k != "model_type"}
    config = {"model_type": "inkling2_loop", "text_config": text, "vision_config": {"text_hidden_size": 16}}
    assert total(config) == oracle.language_model_total(config, model), oracle.VERSIONS


def test_composite_refuses_a_vision_width_other_than_the_text_width() -> None:
    config = {"model_type": "inkling2_loop", "text_config": {"hidden_size": 64}}
    with pytest.raises(oracle.TransformersRejected):
        oracle.language_model_total(config, "Inkling2LoopForConditionalGeneration")
    with pytest.raises(RuleRefusal, match=r"vision_config.text_hidden_size is not the text hidden_size \(64\)"):
        total(config)


def test_count_on_the_command_line(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL))
    out = subprocess.run([sys.executable, "-m", "llmcount", "count", str(path)], capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert any(line.split()[:2] == ["total", "15,185"] for line in out.stdout.splitlines()), out.stdout
    path.write_text(json.dumps({"model_type": "inkling2_loop"}))
    out = subprocess.run([sys.executable, "-m", "llmcount", "count", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "total (language model only)                 26,068,156,416" in out.stdout


def test_bf16_weights_keep_the_fp32_modules_from_pretrained_keeps(tmp_path) -> None:
    """memory's bf16 weights: the modules _keep_in_fp32_modules_strict names (the message gates' forget and message
    projections and message_input among them, not their down projections) in fp32, as from_pretrained loads them."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(oracle._hf_config(SMALL)).save_pretrained(tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.bfloat16)
    expected = sum(p.numel() * p.element_size() for p in loaded.parameters())
    model = read_config(SMALL, "test config")
    weights = memory.inference(model.derivation, model.values, "bf16", seq=1, batch=1).bytes_of("weights")
    # fp32 by hand: the post-attention and post-MLP convolutions 6·16·3 and the sliding k/v convolutions 4·12·3; the
    # gates' forget and message projections 16·3·16; mlp_input 3·16; the routers 3·16·4; attention_input 3·16 + 16;
    # final_input 16; message_input 2·4·16: two more bytes each than in bf16
    fp32 = 6 * 16 * 3 + 4 * 12 * 3 + 16 * 3 * 16 + 3 * 16 + 3 * 16 * 4 + 3 * 16 + 16 + 16 + 2 * 4 * 16
    assert weights == expected == 2 * SMALL_TOTAL + 2 * fp32, oracle.VERSIONS
