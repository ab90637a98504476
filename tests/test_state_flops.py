"""FLOPs of the layers that keep a state (Mamba, Mamba-2 and the hybrids' Mamba layers), against FlopCounterMode.

What ``torch.utils.flop_counter.FlopCounterMode`` counts in transformers' torch path (the one a CPU runs; the CUDA
kernels are not used): matmuls, ``bmm``, ``einsum`` (decomposed into bmm) and ``convolution``, 2 FLOPs per
multiply-add. What it cannot see: every elementwise operation, so the recurrences themselves (Mamba's
h_t = exp(Δ_t A) h_(t-1) + Δ_t B_t x_t, Mamba-2's decay masks and segment sums), the gates, softplus and norms.
Per Mamba layer it sees, besides the projections:

- the depthwise ``conv1d``: padded by d_conv - 1 on both sides, it computes S + d_conv - 1 outputs per channel, the
  first S of which are kept: 2 · B · channels · d_conv · (S + d_conv - 1);
- Mamba (selective scan, a loop over the tokens): the readout C_t · h_t, a bmm of d_ssm × d_state by d_state × 1 per
  token: 2 · B · S · d_ssm · d_state;
- Mamba-2 (the chunked scan of state space duality, ``mamba2_chunk_scan``): S padded up to c = ⌈S/Q⌉ chunks of Q,
  five einsums: C·Bᵀ (2·B·c·Q²·h·n), its product with x (2·B·c·Q²·h·p), the chunk states Bᵀ·x (2·B·c·Q·h·p·n),
  the passing of states between chunks ((c + 1)² · 2·B·h·p·n) and the output from each chunk's state
  (2·B·c·Q·h·p·n), with h heads of p channels and a state of n;
- Gated DeltaNet (``torch_chunk_gated_delta_rule``, chunks of C = 64 tokens, S padded up to c = ⌈S/C⌉ chunks, q and k
  repeated to the H value heads of K and V channels): β·k·kᵀ and q·kᵀ within each chunk (2 · 2·B·H·c·C²·K), then a
  loop over the chunks: the state read by the decayed keys and by the queries (2 · 2·B·H·c·C·K·V), the masked block
  times the new values (2·B·H·c·C²·V) and the state update kᵀ·v (2·B·H·c·C·K·V). Its ``solve_triangular`` has no
  FLOP rule in the counter: not counted;
- MiniMax's lightning attention (a loop over blocks of Q tokens, the last one S - (⌈S/Q⌉ - 1)·Q long, not padded):
  per block of b tokens Q·Kᵀ and its product with V (2 · 2·B·h·b²·h_d), the read of the K^T·V state by the queries
  and the block's K^T·V (2 · 2·B·h·b·h_d²).
- xLSTM's mLSTM (inference mode): the ⌊S/Q⌋ whole chunks through the chunkwise kernel (the gated kᵀ·v state,
  q·kᵀ, the reads of the memory and normalizer by the queries, the gated block times v) and one recurrent step per
  token left (k·vᵀ, q·C, q·n); a single token takes the step whatever Q.

Zamba and Zamba2 (Mamba and Mamba-2 layers as above) run their shared blocks in every hybrid layer (a term's
``runs``); OLMo-Hybrid's layers are Gated DeltaNet's, Bailing hybrid's are Kimi's delta attention.

The models run on CPU (the Mamba-2 path calls ``.item()``, which meta tensors refuse), small and random.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from refusal import assert_refused, run

from llmcount.formulas import records
from llmcount.formulas.config import RuleRefusal, read_config
from llmcount.formulas.flops import Flops

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

import torch  # noqa: E402
from test_caches import LAYOUTS  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402


def counter_flops(config: dict, batch: int, seq: int) -> int:
    """FLOPs FlopCounterMode counts in one forward pass (no cache) of transformers' model on CPU."""
    torch.manual_seed(0)
    try:
        model = AutoModelForCausalLM.from_config(
            oracle._hf_config(config), attn_implementation="eager", experts_implementation="batched_mm"
        )
    except Exception as error:  # transformers refuses the config
        raise oracle.TransformersRejected(str(error)) from error
    ids = torch.randint(0, model.config.vocab_size, (batch, seq))
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
    return counter.get_total_flops()


def llmcount_flops(config: dict, batch: int, seq: int):
    model = read_config(config, "test config")
    return Flops(model.derivation).evaluate(model.values, seq, batch)


COSTED = sorted(
    name
    for name in records.names()
    if records.family(name).states and all(s.flops is not None for s in records.family(name).states)
)
SMALL_MAMBA = {"mamba_d_state": 4, "mamba_d_conv": 3, "mamba_expand": 2}
SMALL = {
    "mamba": {
        "model_type": "mamba",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "state_size": 4, "conv_kernel": 3},
        **{"time_step_rank": 5, "expand": 2},
    },
    "falcon_mamba": {
        "model_type": "falcon_mamba",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "state_size": 4, "conv_kernel": 3},
        **{"time_step_rank": 5, "expand": 2, "use_bias": True},
    },
    "mamba2": {
        "model_type": "mamba2",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "state_size": 4, "conv_kernel": 3},
        **{"expand": 2, "num_heads": 4, "head_dim": 8, "n_groups": 2, "chunk_size": 4},
    },
    "jamba": {
        "model_type": "jamba",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 4, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "intermediate_size": 24, "num_experts": 4, "num_experts_per_tok": 2},
        **SMALL_MAMBA,
        **{"mamba_dt_rank": 5, "attn_layer_period": 2, "attn_layer_offset": 1},
        **{"expert_layer_period": 2, "expert_layer_offset": 0},
    },
    "bamba": {
        "model_type": "bamba",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 3, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "intermediate_size": 24},
        **SMALL_MAMBA,
        **{"mamba_n_heads": 4, "mamba_d_head": 8, "mamba_n_groups": 2, "mamba_chunk_size": 4},
        "attn_layer_indices": [1],
    },
    "falcon_h1": {
        "model_type": "falcon_h1",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "intermediate_size": 24},
        **SMALL_MAMBA,
        **{"mamba_d_ssm": 24, "mamba_n_heads": 4, "mamba_d_head": 6, "mamba_n_groups": 2, "mamba_chunk_size": 4},
    },
    "nemotron_h": {
        "model_type": "nemotron_h",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 4, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "head_dim": 4, "intermediate_size": 24, "ssm_state_size": 4},
        **{"conv_kernel": 3, "mamba_num_heads": 4, "mamba_head_dim": 6, "n_groups": 2, "mamba_chunk_size": 4},
        **{"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8},
        **{"moe_shared_expert_intermediate_size": 8, "hybrid_override_pattern": "M*EM"},
    },
    "granitemoehybrid": {
        "model_type": "granitemoehybrid",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 3, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "intermediate_size": 24, "shared_intermediate_size": 8},
        **{"num_local_experts": 4, "num_experts_per_tok": 2},
        **SMALL_MAMBA,
        **{"mamba_n_heads": 4, "mamba_d_head": 8, "mamba_n_groups": 2, "mamba_chunk_size": 4},
        "layer_types": ["mamba", "attention", "mamba"],
    },
    "rwkv": {
        "model_type": "rwkv",
        "vocab_size": 32,
        "hidden_size": 16,
        "num_hidden_layers": 2,
        "intermediate_size": 24,
    },
    "recurrent_gemma": {
        "model_type": "recurrent_gemma",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 3, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "head_dim": 4, "intermediate_size": 24, "lru_width": 24, "conv1d_width": 3},
        **{"attention_window_size": 4, "attention_bias": True},
    },
    "qwen3_next": {
        "model_type": "qwen3_next",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "head_dim": 4, "intermediate_size": 24, "full_attention_interval": 2},
        **{"linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 3},
        **{"linear_value_head_dim": 5, "linear_conv_kernel_dim": 3},
        **{"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8},
        "shared_expert_intermediate_size": 8,
    },
    "lara_mini": {  # linear (gated delta), sliding and full attention layers, MoE with a shared expert
        "model_type": "lara_mini",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 4, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "head_dim": 4, "sliding_window": 3},
        "layer_types": ["linear_attention", "sliding_attention", "linear_attention", "full_attention"],
        **{"linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 3},
        **{"linear_value_head_dim": 5, "linear_conv_kernel_dim": 3},
        **{"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8},
        "shared_expert_intermediate_size": 8,
    },
    "qwen3_5_text": {
        "model_type": "qwen3_5_text",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "head_dim": 4, "intermediate_size": 24, "full_attention_interval": 2},
        **{"linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 3},
        **{"linear_value_head_dim": 5, "linear_conv_kernel_dim": 3},
    },
    "qwen3_5_moe_text": {
        "model_type": "qwen3_5_moe_text",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "head_dim": 4, "full_attention_interval": 2},
        **{"linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 3},
        **{"linear_value_head_dim": 5, "linear_conv_kernel_dim": 3},
        **{"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8},
        "shared_expert_intermediate_size": 8,
    },
    "lfm2": {
        "model_type": "lfm2",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 3, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "intermediate_size": 24, "conv_L_cache": 3, "block_auto_adjust_ff_dim": False},
        "layer_types": ["conv", "full_attention", "conv"],
    },
    "lfm2_moe": {
        "model_type": "lfm2_moe",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 3, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "intermediate_size": 24, "moe_intermediate_size": 8, "conv_L_cache": 3},
        **{"num_experts": 4, "num_experts_per_tok": 2, "num_dense_layers": 1},
        "layer_types": ["conv", "full_attention", "conv"],
    },
    "kimi_linear": {
        "model_type": "kimi_linear",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 3, "num_attention_heads": 4},
        **{"q_lora_rank": None, "kv_lora_rank": 8, "qk_rope_head_dim": 4, "qk_nope_head_dim": 6, "v_head_dim": 5},
        "num_key_value_heads": 4,  # MLA: every head reads the latent
        **{"linear_num_heads": 2, "linear_head_dim": 6, "linear_conv_kernel_dim": 3},
        **{"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8, "intermediate_size": 24},
        "layer_types": ["linear_attention", "full_attention", "linear_attention"],
        "pad_token_id": 0,  # the class's lies outside the small vocabulary
    },
    "bailing_hybrid": {  # KDA layers of their own sizes around an MLA layer; MoE after one dense layer
        "model_type": "bailing_hybrid",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 3, "num_attention_heads": 4},
        **{"num_key_value_heads": 4, "kv_lora_rank": 8, "qk_rope_head_dim": 4, "qk_nope_head_dim": 6, "v_head_dim": 5},
        **{"linear_num_heads": 2, "linear_head_dim": 6, "linear_conv_kernel_dim": 3, "intermediate_size": 24},
        **{"num_experts": 4, "num_experts_per_token": 2, "moe_intermediate_size": 8, "first_k_dense_replace": 1},
        **{"num_expert_group": 2, "topk_group": 1, "pad_token_id": 0},
        "layer_types": ["linear_attention", "full_attention", "linear_attention"],
    },
    "minimax": {
        "model_type": "minimax",
        **{"vocab_size": 32, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "intermediate_size": 8, "num_local_experts": 4, "num_experts_per_tok": 2},
        "block_size": 4,
    },
    "lfm3": {  # conv, conv, full, sliding, conv (the default pattern)
        "model_type": "lfm3",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 5, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "head_dim": 4, "intermediate_size": 24, "conv_L_cache": 3},
        **{"sliding_window": 3, "pad_token_id": 0},
    },
    "inkling_text": {  # sliding, full, sliding layers with their own heads; four short convolutions per layer
        "model_type": "inkling_text",
        **{"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 3, "intermediate_size": 12},
        **{"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8},
        **{"swa_num_attention_heads": 6, "swa_num_key_value_heads": 3, "swa_head_dim": 4, "sliding_window_size": 3},
        **{"d_rel": 5, "rel_extent": 7, "conv_kernel_size": 3},
        **{"n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1, "moe_intermediate_size": 6},
        "layer_types": ["hybrid_sliding", "hybrid", "hybrid_sliding"],
    },
    "inkling2_text": {  # Inkling 2: sliding, full, sliding layers; blocks of two layers for the attention residuals
        "model_type": "inkling2_text",
        **{"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 3, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "head_dim": 8, "n_layers_per_attn_res_block": 2},
        **{"swa_num_attention_heads": 6, "swa_num_key_value_heads": 3, "swa_head_dim": 4, "sliding_window_size": 3},
        **{"d_rel": 5, "rel_extent": 7, "conv_kernel_size": 3},
        **{"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 6},
        "layer_types": ["hybrid_sliding", "hybrid", "hybrid_sliding"],
    },
    "inkling2_loop_text": {  # Inkling 2 Loop: layers 1 to 3 of 5 (sliding, full, sliding) run 3 times; blocks of 1
        "model_type": "inkling2_loop_text",
        **{"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 5, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "head_dim": 8, "n_layers_per_attn_res_block": 1},
        **{"swa_num_attention_heads": 6, "swa_num_key_value_heads": 3, "swa_head_dim": 4, "sliding_window_size": 3},
        **{"d_rel": 5, "rel_extent": 7, "conv_kernel_size": 3},
        **{"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 6},
        **{"loop_layer_index_start": 1, "loop_layer_index_end": 4, "loop_num_passes": 3, "loop_gate_rank": 3},
        "layer_types": ["hybrid", "hybrid_sliding", "hybrid", "hybrid_sliding", "hybrid"],
    },
    "cpmant": {  # three prompts of three tokens, prepended to every sequence (the third prompt's ids are read)
        "model_type": "cpmant",
        **{"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4, "dim_head": 6},
        **{"dim_ff": 24, "prompt_types": 3, "prompt_length": 3, "segment_types": 4, "position_bias_num_buckets": 8},
    },
    "olmo_hybrid": {  # the last of two layers full, the first a Gated DeltaNet
        "model_type": "olmo_hybrid",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "intermediate_size": 24, "linear_num_key_heads": 2, "linear_num_value_heads": 4},
        **{"linear_key_head_dim": 3, "linear_value_head_dim": 5, "linear_conv_kernel_dim": 3},
        "pad_token_id": 0,  # the class's lies outside the small vocabulary
    },
    "zamba": {  # hybrid layers 1 and 3 run the one shared block
        "model_type": "zamba",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 4, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "intermediate_size": 24, "n_mamba_heads": 2, "mamba_dt_rank": 5},
        **SMALL_MAMBA,
        "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid"],
    },
    "zamba2": {  # two shared blocks taken in turn by hybrid layers 1, 2 and 3, each with its own adapters
        "model_type": "zamba2",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 4, "num_attention_heads": 4},
        **{"intermediate_size": 24, "n_mamba_heads": 4, "mamba_ngroups": 2, "chunk_size": 4, "adapter_rank": 3},
        **SMALL_MAMBA,
        **{"num_mem_blocks": 2, "use_shared_attention_adapter": True},
        "layers_block_type": ["mamba", "hybrid", "hybrid", "hybrid"],
    },
    "xlstm": {  # heads of 4 (queries, keys) and 8 (values); chunks of 4: whole chunks, then one step per token left
        "model_type": "xlstm",
        **{"vocab_size": 32, "hidden_size": 16, "num_blocks": 2, "num_hidden_layers": 2, "num_heads": 2},
        "chunk_size": 4,
    },
    "zaya": {
        "model_type": "zaya",
        **{"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 3, "num_attention_heads": 4},
        **{"num_key_value_heads": 2, "head_dim": 4, "moe_intermediate_size": 8, "num_experts": 4},
        **{"router_hidden_size": 6, "cca_time0": 3, "cca_time1": 2, "sliding_window": 3},
        "layer_types": ["hybrid", "hybrid_sliding", "hybrid"],
    },
}
# S = 1 and S = Q (one whole chunk), S < Q, S a multiple of Q plus some (padding), several chunks
SIZES = [(1, 1), (1, 4), (1, 7), (2, 9), (3, 16)]


def test_small_configs_cover_every_costed_state_family() -> None:
    assert set(SMALL) == set(COSTED)


# the Gated DeltaNet's chunks are 64 tokens whatever the config: one whole chunk, one token more, two chunks and a part
GATED_DELTA = ["qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "olmo_hybrid"]
LONG_SIZES = [(1, 64), (1, 65), (2, 130)]


@pytest.mark.parametrize(("batch", "seq"), SIZES)
@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_config_equals_flop_counter(name: str, batch: int, seq: int) -> None:
    expected = counter_flops(SMALL[name], batch, seq)
    got = llmcount_flops(SMALL[name], batch, seq).forward
    assert got == expected, (
        f"{name} B={batch} S={seq}: llmcount {got:,} != FlopCounterMode {expected:,} ({oracle.VERSIONS})"
    )


@pytest.mark.parametrize(("batch", "seq"), LONG_SIZES)
@pytest.mark.parametrize("name", [*GATED_DELTA, "kimi_linear", "bailing_hybrid"])  # Kimi's delta attention too
def test_gated_delta_chunks_of_64_equal_flop_counter(name: str, batch: int, seq: int) -> None:
    expected = counter_flops(SMALL[name], batch, seq)
    got = llmcount_flops(SMALL[name], batch, seq).forward
    assert got == expected, (
        f"{name} B={batch} S={seq}: llmcount {got:,} != FlopCounterMode {expected:,} ({oracle.VERSIONS})"
    )


# torch turns a matmul or einsum that contracts a single element (a chunk of Q = 1, a state of 1, attention heads
# of 1, RG-LRU gate blocks of 1) into a plain elementwise product, which the counter does not see; llmcount counts
# it as the matmul it is. The drawn configs contract two elements or more.
CHUNKS = {"chunk_size": [2, 3, 8], "mamba_chunk_size": [2, 3, 8], "block_size": [2, 3, 8]}
CONTRACTED = {"h_d", "d_state", "d_mh", "Q", "d_lk"}


@pytest.mark.parametrize("model_type", COSTED)
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn_config_equals_flop_counter(model_type: str, data) -> None:
    """The record's switches flipped and its sizes drawn (the drawing of test_records), chunks that divide the
    drawn sequences or not; at least one attention layer in a hybrid, as test_caches places it."""
    config = data.draw(oracle.drawn_config(records.family(model_type), st.sampled_from([2, 4, 8])))
    for key, choices in CHUNKS.items():
        if key in config or key in oracle.class_defaults(model_type):
            config[key] = data.draw(st.sampled_from(choices))
    if model_type in LAYOUTS and isinstance(config.get("num_hidden_layers"), int):
        config.update(data.draw(LAYOUTS[model_type](config["num_hidden_layers"])))
    batch, seq = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 20))
    try:
        model = read_config(config, "drawn config")
        got = llmcount_flops(config, batch, seq).forward
    except RuleRefusal:
        assume(False)
    assume(model.counts.total <= oracle.MAX_PARAMETERS)
    values = model.values
    named = {symbol.name: value for symbol, value in values.items()}
    assume(all(value > 1 for name, value in named.items() if name in CONTRACTED))
    assume("d_rnn" not in named or named["d_rnn"] // named["h"] > 1)  # RG-LRU gates: h blocks of d_rnn / h
    try:
        expected = counter_flops(config, batch, seq)
    except Exception:  # transformers refuses the config (its class, constructor or forward)
        assume(False)
    assert got == expected, f"{model_type} B={batch} S={seq}: {json.dumps(config)} ({oracle.VERSIONS})"


# state-spaces/mamba-2.8b-hf: hidden_size 2560, 64 layers, expand 2 (d_ssm 5,120), state_size 16, conv_kernel 4,
# time_step_rank auto = ⌈2560 / 16⌉ = 160, vocab 50,280 (tied head). At B = 1, S = 2,048, per layer:
#   in_proj   2 · 2,048 · 2,560 · 10,240             = 107,374,182,400
#   conv1d    2 · 5,120 · 4 · (2,048 + 3)            =      84,008,960
#   x_proj    2 · 2,048 · 5,120 · (160 + 2 · 16)     =   4,026,531,840
#   dt_proj   2 · 2,048 · 160 · 5,120                =   3,355,443,200
#   scan      2 · 2,048 · 5,120 · 16 (C_t · h_t)     =     335,544,320
#   out_proj  2 · 2,048 · 5,120 · 2,560              =  53,687,091,200
#   layer                                              168,862,801,920
# 64 layers 10,807,219,322,880 + LM head 2 · 2,048 · 2,560 · 50,280 = 527,224,012,800: 11,334,443,335,680.
MAMBA_2_8B = {"model_type": "mamba", "vocab_size": 50280, "hidden_size": 2560, "num_hidden_layers": 64}


def test_mamba_2_8b_by_hand() -> None:
    counts = llmcount_flops(MAMBA_2_8B, 1, 2048)
    assert counts.forward == 11_334_443_335_680
    parts = {c.path: c.flops for c in counts.components}
    assert parts["mamba/conv1d"] == 64 * 84_008_960
    assert parts["mamba/scan"] == 64 * 335_544_320
    assert "mamba/A_log" not in parts and "mamba/D" not in parts  # parameters no matmul uses
    assert counts.per_token == Fraction(11_334_443_335_680, 2048)  # the convolution's 3 extra outputs: not whole


# state-spaces/mamba2-2.7b: hidden_size 2560, 64 layers, expand 2 (80 heads of 64), n_groups 1, state_size 128,
# conv_kernel 4, chunk_size 256, vocab 50,288 (tied head). At B = 1, S = 2,048: c = 8 chunks, per layer:
#   in_proj               2 · 2,048 · 2,560 · (2 · 5,120 + 2 · 128 + 80) = 110,897,397,760
#   conv1d                2 · (5,120 + 256) · 4 · 2,051                   =      88,209,408
#   ssd.scores            2 · 8 · 256² · 80 · 128                         =  10,737,418,240
#   ssd.values            2 · 8 · 256² · 80 · 64                          =   5,368,709,120
#   ssd.chunk_states      2 · 8 · 256 · 80 · 64 · 128                     =   2,684,354,560
#   ssd.state_passing     2 · 9² · 80 · 64 · 128                          =     106,168,320
#   ssd.state_output      2 · 8 · 256 · 80 · 64 · 128                     =   2,684,354,560
#   out_proj              2 · 2,048 · 5,120 · 2,560                       =  53,687,091,200
#   layer                                                                   186,253,703,168
# 64 layers 11,920,237,002,752 + LM head 2 · 2,048 · 2,560 · 50,288 = 527,307,898,880: 12,447,544,901,632.
MAMBA2_2_7B = {
    "model_type": "mamba2",
    **{"vocab_size": 50288, "hidden_size": 2560, "num_hidden_layers": 64, "num_heads": 80, "head_dim": 64},
    **{"n_groups": 1, "state_size": 128, "conv_kernel": 4, "chunk_size": 256, "tie_word_embeddings": True},
}


def test_mamba2_2_7b_by_hand() -> None:
    counts = llmcount_flops(MAMBA2_2_7B, 1, 2048)
    assert counts.forward == 12_447_544_901_632
    parts = {c.path: c.flops for c in counts.components}
    assert parts["mamba/ssd.state_passing"] == 64 * 106_168_320
    # one token more starts a ninth chunk, padded to 256 tokens: the chunk terms jump, the projections grow by one
    longer = {c.path: c.flops for c in llmcount_flops(MAMBA2_2_7B, 1, 2049).components}
    assert longer["mamba/ssd.scores"] == 64 * 2 * 9 * 256**2 * 80 * 128


def test_flops_of_mamba_on_the_command_line(tmp_path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(MAMBA_2_8B))
    result = run("flops", str(config), "--seq", "2048", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["forward_flops"] == 11_334_443_335_680
    assert data["per_token"] == 11_334_443_335_680 / 2048  # a mean, not a whole number here
    assert "elementwise recurrences" in data["convention"]
    paths = [c["path"] for c in data["components"]]
    assert paths.index("mamba/scan") < paths.index("mamba/out_proj") < paths.index("head/lm_head")
    text = run("flops", str(config), "--seq", "2048")
    assert text.exit_code == 0 and "mamba/scan" in text.stdout


# Qwen/Qwen3-Next-80B-A3B-Instruct: 48 layers, every 4th full attention, so 36 Gated DeltaNet layers of 16 key
# heads and 32 value heads of 128 (key and value), conv kernel 4. At B = 1, S = 4,096 (64 chunks of 64), per layer:
#   conv1d        2 · (2 · 16 · 128 + 32 · 128) · 4 · (4,096 + 3)   =    268,632,064
#   ut_system     2 · 64 · 64² · 32 · 128                          =  2,147,483,648
#   scores        2 · 64 · 64² · 32 · 128                          =  2,147,483,648
#   state_read    2 · 2 · 64 · 64 · 32 · 128 · 128                  =  8,589,934,592
#   values        2 · 64 · 64² · 32 · 128                          =  2,147,483,648
#   state_update  2 · 64 · 64 · 32 · 128 · 128                      =  4,294,967,296
# One token more starts a 65th chunk, padded to 64 tokens.
def test_qwen3_next_80b_a3b_by_hand() -> None:
    counts = run("flops", "qwen3-next-80b-a3b", "--seq", "4096", "--json")
    assert counts.exit_code == 0, counts.output
    got = {c["path"]: c["flops"] for c in json.loads(counts.stdout)["components"]}
    assert got["linear_attention/conv1d"] == 36 * 268_632_064
    assert got["linear_attention/chunk.ut_system"] == 36 * 2_147_483_648
    assert got["linear_attention/chunk.scores"] == 36 * 2_147_483_648
    assert got["linear_attention/chunk.state_read"] == 36 * 8_589_934_592
    assert got["linear_attention/chunk.values"] == 36 * 2_147_483_648
    assert got["linear_attention/chunk.state_update"] == 36 * 4_294_967_296
    assert "linear_attention/A_log" not in got and "linear_attention/dt_bias" not in got  # no matmul uses them
    longer = json.loads(run("flops", "qwen3-next-80b-a3b", "--seq", "4097", "--json").stdout)["components"]
    assert {c["path"]: c["flops"] for c in longer}["linear_attention/chunk.scores"] == 36 * 2 * 65 * 64**2 * 32 * 128


# MiniMax-Text-01's lightning layers: 64 heads of 128, blocks of 256. At B = 1, S = 1,000 the loop runs over blocks of
# 256, 256, 256 and 232 tokens (no padding): Σ b² = 3 · 65,536 + 53,824 = 250,432, so per layer
#   block.scores  2 · 64 · 128 · 250,432 = 4,103,077,888 (block.values the same)
#   block.state_read, block.state_update  2 · 1,000 · 64 · 128² = 2,097,152,000 each
MINIMAX_TEXT_01 = {
    "model_type": "minimax",
    **{"vocab_size": 200064, "hidden_size": 6144, "num_hidden_layers": 80, "num_attention_heads": 64},
    **{"num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 9216, "num_local_experts": 32},
    **{"num_experts_per_tok": 2, "block_size": 256},
}


def test_minimax_lightning_blocks_by_hand() -> None:
    parts = {c.path: c.flops for c in llmcount_flops(MINIMAX_TEXT_01, 1, 1000).components}
    linear = 40  # by default the odd layers are lightning attention
    assert parts["linear_attention/block.scores"] == linear * 4_103_077_888
    assert parts["linear_attention/block.values"] == linear * 4_103_077_888
    assert parts["linear_attention/block.state_read"] == linear * 2_097_152_000
    assert parts["linear_attention/block.state_update"] == linear * 2_097_152_000


def test_kinds_without_a_formula_are_refused_by_name() -> None:
    """Every record's state layers have a FLOPs formula today: Zamba2's record without its [[state.flops]] stands for
    one that has none, and the FLOPs are refused by name (its memory is still derived)."""
    from importlib.resources import files

    import tomllib

    from llmcount.errors import LlmcountError
    from llmcount.formulas.derivation import Derivation
    from llmcount.formulas.flops import state_flops

    text = (files("llmcount.formulas") / "families" / "zamba2.toml").read_text()
    family = records.parse_record(tomllib.loads(text[: text.index("\n[[state.flops]]")]), "zamba2 (no state FLOPs)")
    with pytest.raises(LlmcountError) as refused:
        state_flops(Derivation(family))
    message = str(refused.value)
    for needle in ("Zamba2", "mamba layers ([[state]])", "no FLOPs formula", "llmcount memory"):
        assert needle in message, (needle, message)
    assert "\n" not in message


# LiquidAI/LFM2-1.2B: hidden_size 2048, 16 layers of which 10 gated short convolutions (conv_L_cache 3). At B = 1,
# S = 4,096 the convolution of one such layer: 2 · 2,048 · 3 · (4,096 + 2) = 50,356,224 FLOPs (its in_proj,
# 2 · 4,096 · 2,048 · 6,144, and out_proj are linear weights); the gates B·x and C·y are elementwise.
def test_lfm2_short_convolution_by_hand() -> None:
    config = {
        "model_type": "lfm2",
        **{"vocab_size": 65536, "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32},
        **{"num_key_value_heads": 8, "conv_L_cache": 3, "full_attn_idxs": [2, 5, 8, 10, 12, 14]},
    }
    parts = {c.path: c.flops for c in llmcount_flops(config, 1, 4096).components}
    assert parts["conv/conv"] == 10 * 50_356_224
    assert parts["conv/in_proj"] == 10 * 2 * 4096 * 2048 * 6144


# moonshotai/Kimi-Linear-48B-A3B: 27 layers, KDA on 20 of them (full_attn_layers 4, 8, ..., 24 and 27, 1-indexed),
# 32 heads of 128, conv kernel 4. At B = 1, S = 4,096 (64 chunks of 64), per KDA layer:
#   conv1d        2 · 3 · 32 · 128 · 4 · (4,096 + 3)  =    402,948,096
#   values, cumdecay, intra   2 · 64 · 64² · 32 · 128 =  2,147,483,648 each
#   state_read    4 · 64 · 64 · 32 · 128²            =  8,589,934,592
#   state_update  2 · 64 · 64 · 32 · 128²            =  4,294,967,296
def test_kimi_delta_attention_by_hand() -> None:
    config = {
        "model_type": "kimi_linear",
        **{"vocab_size": 163840, "hidden_size": 2304, "num_hidden_layers": 27, "num_attention_heads": 32},
        "linear_attn_config": {
            **{"num_heads": 32, "head_dim": 128, "short_conv_kernel_size": 4},
            **{"full_attn_layers": [4, 8, 12, 16, 20, 24, 27], "kda_layers": []},
        },
    }
    config["linear_attn_config"]["kda_layers"] = [i for i in range(1, 28) if i not in (4, 8, 12, 16, 20, 24, 27)]
    parts = {c.path: c.flops for c in llmcount_flops(config, 1, 4096).components}
    assert parts["linear_attention/conv1d"] == 20 * 402_948_096
    for name in ("values", "cumdecay", "intra"):
        assert parts[f"linear_attention/chunk.{name}"] == 20 * 2_147_483_648
    assert parts["linear_attention/chunk.state_read"] == 20 * 8_589_934_592
    assert parts["linear_attention/chunk.state_update"] == 20 * 4_294_967_296


def test_conventions_of_a_model_with_state_layers_only(tmp_path) -> None:
    """Mamba-2.8B: no attention layer (L = 0), so the papers' conventions are their parameter terms alone: Kaplan and
    6·N (non-embedding), PaLM and torchtitan 6·P (every parameter; tied: the embedding is the LM head, kept);
    llmcount's is 3 × its checked forward."""
    from llmcount.formulas.conventions import conventions, not_given

    model = read_config(MAMBA_2_8B, "mamba-2.8b")
    got = {c.name: c.training_flops_per_token for c in conventions(model, 2048)}
    non_embedding = model.counts.activated - model.counts.embedding
    assert got["kaplan"] == 6 * non_embedding
    assert got["palm"] == got["torchtitan"] == 6 * model.counts.activated
    assert got["llmcount"] == 3 * Fraction(11_334_443_335_680, 2048)
    skipped = not_given(ingredients_of(model))
    assert "megatron" not in got and set(skipped) == {"megatron", "megatron-recompute", "maxtext"}
    assert "state (linear-attention, Mamba) layers" in skipped["maxtext"]
    config = tmp_path / "config.json"
    config.write_text(json.dumps(MAMBA_2_8B))
    assert_refused(
        run("mfu", str(config), "--tokens-per-second", "1", "--gpu", "h100-sxm", "--convention", "megatron"),
        "megatron convention is not given",
        "hybrid_flops",
    )


def ingredients_of(model):
    from llmcount.formulas.conventions import ingredients

    return ingredients(model, 2048)


def test_conventions_of_a_hybrid_count_attention_over_its_attention_layers() -> None:
    """Qwen3-Next-80B-A3B: 48 layers, every 4th full attention (12), 16 heads of 256: h·d_qk = h·d_v = 4,096. The
    papers' attention term runs over those 12 layers only: Kaplan's 2·n_layer·n_ctx·d_attn = 2 · 12 · S · 4,096."""
    result = run("flops", "qwen3-next-80b-a3b", "--seq", "4096", "--conventions", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    x, got = data["ingredients"], {c["name"]: c for c in data["conventions"]}
    assert (x["L_attention_layers"], x["h_d_qk"], x["state_layer_kinds"]) == (12, 4096, ["linear_attention"])
    n = x["N_non_embedding_activated"]
    assert got["kaplan"]["training_flops_per_token"] == 3 * (2 * n + 2 * 12 * 4096 * 4096)
    p = x["P_activated"]  # PaLM's N: every activated parameter
    assert got["palm"]["training_flops_per_token"] == 6 * p + 6 * 12 * (4096 + 4096) * 4096
    assert "attention term runs over the L = 12 attention layers only" in " ".join(got["kaplan"]["includes"].split())
    flops = json.loads(run("flops", "qwen3-next-80b-a3b", "--seq", "4096", "--json").stdout)["training_flops"]
    assert got["llmcount"]["training_flops_per_token"] == flops / 4096
    # Megatron counts Gated DeltaNet layers (gdn_layer_flops); MaxText's path for them is not transcribed
    assert [entry["name"] for entry in data["not_given"]] == ["maxtext"]
    assert "gdn_layer_flops" in got["megatron"]["source"]
    mfu = run("mfu", "qwen3-next-80b-a3b", "--tokens-per-second", "5000", "--gpu", "h100-sxm", "--gpus", "8")
    assert mfu.exit_code == 0 and "over the L = 12 attention layers only" in " ".join(mfu.stdout.split())


# NX-AI's xLSTM 7B as xLSTMConfig's defaults: 32 blocks of d = 4,096, 8 heads, queries and keys int(0.5 · d) = 2,048
# wide (heads of 256), values 4,096 (heads of 512), chunks of 64, the inference mode. At B = 1, S = 100 each block
# runs one chunk of 64 tokens and 36 single steps:
#   chunk.state_update  2 · 64 · 2,048 · 4,096 / 8         = 134,217,728   (gated keys^T · values)
#   chunk.scores        2 · 64² · 2,048                    =  16,777,216   (q · k^T within the chunk)
#   chunk.state_read    2 · 64 · (2,048 · 4,096 / 8 + 2,048) = 134,479,872 (q · C and q · n)
#   chunk.values        2 · 64² · 4,096                    =  33,554,432   (the gated block times the values)
#   steps               2 · 36 · (2 · 2,048 · 4,096 / 8 + 2,048) = 151,142,400 (k · v^T, q · C, q · n per token)
# With S = 128, two whole chunks and no step.
def test_xlstm_7b_chunks_and_steps_by_hand(tmp_path) -> None:
    config = {"model_type": "xlstm", "vocab_size": 50304, "hidden_size": 4096, "num_blocks": 32}
    parts = {c.path: c.flops for c in llmcount_flops(config, 1, 100).components}
    assert parts["mlstm/chunk.state_update"] == 32 * 134_217_728
    assert parts["mlstm/chunk.scores"] == 32 * 16_777_216
    assert parts["mlstm/chunk.state_read"] == 32 * 134_479_872
    assert parts["mlstm/chunk.values"] == 32 * 33_554_432
    assert parts["mlstm/steps"] == 32 * 151_142_400
    assert parts["mlstm/igate_preact"] == 32 * 2 * 100 * 4096 * 8  # its bias is no matmul
    whole = {c.path: c.flops for c in llmcount_flops(config, 1, 128).components}
    assert whole["mlstm/chunk.scores"] == 32 * 2 * 2 * 64**2 * 2048 and whole["mlstm/steps"] == 0
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = run("flops", str(tmp_path / "config.json"), "--seq", "100", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["forward_flops"] == llmcount_flops(config, 1, 100).forward


# A single token takes the step kernel whatever the chunk size; in the train mode every token is in a chunk.
@pytest.mark.parametrize(
    ("change", "batch", "seq"),
    [
        ({"chunk_size": 1}, 1, 1),
        ({"chunk_size": 1}, 2, 5),
        ({"mode": "train"}, 2, 8),
        ({"mode": "train", "chunk_size": 1}, 1, 1),
    ],
)
def test_xlstm_modes_and_chunks_of_one_equal_flop_counter(change: dict, batch: int, seq: int) -> None:
    config = {**SMALL["xlstm"], **change}
    expected = counter_flops(config, batch, seq)
    got = llmcount_flops(config, batch, seq).forward
    assert got == expected, f"{change} B={batch} S={seq}: {got:,} != {expected:,} ({oracle.VERSIONS})"
