"""Tensor parallelism per GPU (Megatron-LM's layout: Shoeybi et al. 2019 for the weights, Korthikanti et al. 2022
for the activations), by hand.

Column-parallel layers (q/k/v, MLP up/gate, Mamba-2's in_proj) are split by tp with their biases; row-parallel
layers (attention output, MLP down, Mamba's out_proj) are split, their biases (size d) replicated; norms, position
tables and routers are replicated; the embedding and the head are split by vocabulary rows (⌈V / tp⌉ per rank).
Activations: a tensor whose size is split (heads, MLP widths, the vocabulary, a column-parallel layer's output) is
divided by tp; a column-parallel layer's input and the norms' tensors (B·S·d) only with --sequence-parallel.
Each expected number below is derived from the configs' sizes, not read from llmcount's output.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas import training as tr
from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config

ADAMW_BF16 = 16  # bytes per trainable parameter: bf16 weight and gradient, fp32 master, two fp32 moments

# GPT-2 with small sizes: d = 64, h = 4 heads, N = 2 layers, d_ff = 4·d = 256, V = 1001 (odd: padded to 1002 at
# tp 2), n_pos = 128, tied head
GPT2 = {"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 1001, "n_positions": 128}
D, H, N, D_FF, V, N_POS = 64, 4, 2, 256, 1001, 128


def _gpt2_parameters() -> tuple[int, int]:
    """(the parameters tp splits, those it replicates), summed over the model, before splitting."""
    per_layer_split = (
        3 * D * D  # c_attn: column-parallel q, k, v (d to 3d)
        + 3 * D  # its bias: column-parallel, split
        + D * D  # attention c_proj: row-parallel
        + D * D_FF  # mlp c_fc: column-parallel
        + D_FF  # its bias
        + D_FF * D  # mlp c_proj: row-parallel
    )
    per_layer_kept = D + D + 2 * D + 2 * D  # the two row-parallel biases; ln_1, ln_2 (scale and shift)
    split = N * per_layer_split + V * D  # the vocabulary-parallel embedding (the tied head is the same weight)
    kept = N * per_layer_kept + N_POS * D + 2 * D  # the position table, ln_f
    return split, kept


def test_gpt2_weights_per_gpu_are_half_the_split_ones_plus_the_replicated_ones() -> None:
    model = read_config(GPT2, "test config")
    split, kept = _gpt2_parameters()
    assert model.counts.total == split + kept  # the hand sum is the whole model (transformers' count)
    result = tr.training(model, parallel=tr.Parallel(tp=2))
    per_gpu = (split - V * D) // 2 + (V + 1) // 2 * D + kept  # ⌈V / 2⌉ = 501 embedding rows per rank
    assert result.held.parameters == per_gpu
    assert result.model_states_bytes == ADAMW_BF16 * per_gpu


def _gpt2_layer_bytes(batch: int, seq: int, tp: int, sequence_parallel: bool) -> int:
    """One GPT-2 layer's saved tensors in bf16 (2 bytes), eager attention, gelu_new, per GPU."""
    kept = (D + 1 + 1) + D + (D + 1 + 1) + D  # ln_1 input, mean, 1/σ; c_attn's input; ln_2's; c_fc's input
    split = (
        D
        + D
        + D  # queries, keys, values: c_attn's (column-parallel) output, split by heads
        + H * seq  # the softmax output, S × S per head
        + D  # the attention output, c_proj's (row-parallel) input
        + 4 * D_FF  # gelu_new's input and three intermediates, d_ff wide
        + D_FF  # its output, the MLP c_proj's input
    )
    kept_share = kept // tp if sequence_parallel else kept
    return 2 * batch * seq * (kept_share + split // tp)


def _gpt2_model_level_bytes(batch: int, seq: int, tp: int, sequence_parallel: bool) -> int:
    ids = 8 * batch * seq + 8 * seq + 8 * batch * seq + 4  # token ids, position ids, labels (int64), loss weight
    final = 2 * batch * seq * ((D + 1 + 1) + D)  # ln_f's input, mean, 1/σ; the head's input
    log_probabilities = 4 * batch * seq * V  # fp32, vocabulary-parallel cross-entropy: split
    final_share = final // tp if sequence_parallel else final
    return ids + final_share + -(-log_probabilities // tp)


@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_gpt2_activations_per_gpu_split_the_heads_and_widths_and_with_sp_the_rest(sequence_parallel: bool) -> None:
    batch, seq, tp = 2, 64, 2
    model = read_config(GPT2, "test config")
    options = Options(tp=tp, sequence_parallel=sequence_parallel)
    result = activations(model.architecture, model.values, "bf16", batch, seq, options, model.keys)
    whole = N * _gpt2_layer_bytes(batch, seq, 1, False) + _gpt2_model_level_bytes(batch, seq, 1, False)
    assert result.bytes == whole
    expected = N * _gpt2_layer_bytes(batch, seq, tp, sequence_parallel)
    expected += _gpt2_model_level_bytes(batch, seq, tp, sequence_parallel)
    assert result.per_gpu_bytes == expected


def test_gpt2_memory_json_at_tp_2() -> None:
    result = CliRunner().invoke(app, ["memory", "gpt2", "--training", "--tp", "2", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    d, d_ff, v, n, n_pos = 768, 3072, 50257, 12, 1024  # GPT-2 small's published config
    split = n * (4 * d * d + 3 * d + 2 * d * d_ff + d_ff)
    kept = n * (2 * d + 4 * d) + n_pos * d + 2 * d
    assert data["parameters"] == split + v * d + kept
    assert data["parameters_per_gpu"] == split // 2 + (v + 1) // 2 * d + kept
    assert data["parallel"]["tp"] == 2


# Bamba (Mamba-2 layers with attention on some): d = 64, N = 4 layers, the second attention; h = 4, h_kv = 2, h_d = 16;
# d_ff = 128; Mamba: E = 2 (inner width 128), h_m = 8 heads, g = 2 groups, d_state = 16, d_conv = 4; V = 1000, untied
BAMBA = {
    "model_type": "bamba",
    "hidden_size": 64,
    "num_hidden_layers": 4,
    "attn_layer_indices": [1],
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "mamba_expand": 2,
    "mamba_n_heads": 8,
    "mamba_n_groups": 2,
    "mamba_d_state": 16,
    "mamba_d_conv": 4,
    "mamba_d_head": 16,
    "vocab_size": 1000,
    "tie_word_embeddings": False,
}


def test_mamba2_hybrid_splits_d_inner_heads_and_groups_as_megatron() -> None:
    """megatron/core/ssm/mamba_mixer.py: in_proj (z, x, B, C, dt) column-parallel over d_inner, groups and heads;
    conv1d, dt_bias, A_log, D and the gated norm split with them; out_proj row-parallel."""
    d, inner, h_m, g, d_state, d_conv, d_ff, v = 64, 128, 8, 2, 16, 4, 128, 1000
    conv_channels = inner + 2 * g * d_state  # x, B, C
    mamba = d * (2 * inner + 2 * g * d_state + h_m) + conv_channels * d_conv + conv_channels + 3 * h_m + inner
    mamba += inner * d  # out_proj
    attention = d * (4 * 16) + 2 * d * (2 * 16) + (4 * 16) * d
    mlp = 3 * d * d_ff
    split = 3 * mamba + attention + 4 * mlp + 2 * v * d  # three Mamba layers, one attention layer, an MLP in each
    kept = 4 * 2 * d + d  # two RMSNorms per layer, the final one
    model = read_config(BAMBA, "test config")
    assert model.counts.total == split + kept
    assert tr.training(model, parallel=tr.Parallel(tp=2)).held.parameters == split // 2 + kept


def test_mamba2_groups_must_divide_by_tp() -> None:
    model = read_config({**BAMBA, "mamba_n_groups": 1}, "test config")
    with pytest.raises(LlmcountError, match=r"--tp 2 does not divide mamba_n_groups = 1 \(g in mamba/in_proj\)"):
        tr.training(model, parallel=tr.Parallel(tp=2))


# Qwen2-MoE: d = 64, N = 2 MoE layers, h = 4, h_kv = 2, h_d = 16 (q/k/v biases); n = 8 experts of d_moe = 32, a
# shared expert of d_s = 96 with its sigmoid gate (d to 1); V = 1000, untied
QWEN2_MOE = {
    "model_type": "qwen2_moe",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 96,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "vocab_size": 1000,
    "tie_word_embeddings": False,
}


def test_moe_shared_expert_is_split_like_an_mlp_and_the_router_and_routed_experts_are_not() -> None:
    """megatron/core/transformer/moe/shared_experts.py: the shared expert is a tensor-parallel MLP; routed experts
    stay whole with expert-tensor-parallel size 1; the router and the shared expert's gate are replicated."""
    d, n, d_moe, d_s, v = 64, 8, 32, 96, 1000
    attention = d * 64 + 64 + 2 * (d * 32 + 32) + 64 * d  # q (with bias), k and v (with bias), o
    split = 2 * (attention + 3 * d * d_s) + 2 * v * d
    kept = 2 * (d * n + 3 * d * d_moe * n + d + 2 * d) + d  # router, routed experts, shared gate, two norms; final
    model = read_config(QWEN2_MOE, "test config")
    assert model.counts.total == split + kept
    assert tr.training(model, parallel=tr.Parallel(tp=2)).held.parameters == split // 2 + kept


def test_a_split_width_that_tp_does_not_divide_is_refused_naming_its_key() -> None:
    model = read_config({**QWEN2_MOE, "shared_expert_intermediate_size": 97}, "test config")
    with pytest.raises(LlmcountError, match=r"--tp 2 does not divide shared_expert_intermediate_size = 97"):
        tr.training(model, parallel=tr.Parallel(tp=2))


def test_a_head_count_the_record_adjusts_is_named_with_its_adjustment() -> None:
    config = {"model_type": "gpt_bigcode", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 1000}
    model = read_config({**config, "multi_query": True}, "test config")  # one key/value head shared by the 4
    with pytest.raises(
        LlmcountError, match=r"^--tp 2 does not divide n_head \(h_kv = 1 if multi_query else h_kv\) = 1$"
    ):
        tr.training(model, parallel=tr.Parallel(tp=2))
    assert tr.training(read_config({**config, "multi_query": False}, "test config"), parallel=tr.Parallel(tp=2))


def test_a_weight_megatron_has_no_layer_for_is_refused_by_name() -> None:
    with pytest.raises(LlmcountError, match=r"--tp 2: cannot tell how tensor parallelism splits attention/key "):
        rwkv = {"model_type": "rwkv", "num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 1000}
        tr.training(read_config(rwkv, "test config"), parallel=tr.Parallel(tp=2))


def test_the_cli_refuses_in_one_line_on_stderr(tmp_path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**BAMBA, "mamba_n_groups": 1}))
    result = CliRunner().invoke(app, ["memory", str(config), "--training", "--tp", "2"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "llmcount: error: --tp 2 does not divide mamba_n_groups = 1 (g in mamba/in_proj)"
    ]


def test_a_record_tp_field_must_be_split_or_replicated() -> None:
    from llmcount.formulas.records import RecordError, parse_record

    data = {
        "model_type": "x",
        "title": "X",
        "kind": "dense",
        "symbols": {"N": "num_hidden_layers", "d": "hidden_size", "V": "vocab_size"},
        "terms": [{"path": "embedding/e", "expr": "V*d", "note": "e", "tp": "half"}],
    }
    with pytest.raises(RecordError, match="'tp' must be one of split, replicated"):
        parse_record(data, "x.toml")


# --- every record's defaults ---------------------------------------------------------------------------------


def _defaults(name: str):
    import oracle

    try:
        config = oracle.runnable_defaults(name)
    except Exception:  # a config class that needs keys set (tests/oracle.py lists the ones it knows)
        return None
    return read_config({**config, "model_type": name}, f"{name} defaults")


@pytest.mark.parametrize("name", records.names())
def test_tp_2_works_or_refuses_by_name_for_every_record(name: str) -> None:
    """Model states (and activations, where the record has a table) per GPU at tp 2 lie between half the whole and
    the whole; or tp is refused in one line naming the term or the config key."""
    model = _defaults(name)
    if model is None:
        pytest.skip(f"{name}: no runnable class defaults")
    whole = tr.estimate(model, seq=256)
    try:
        per_gpu = tr.estimate(model, seq=256, parallel=tr.Parallel(tp=2))
    except LlmcountError as refused:
        message = str(refused)
        assert "\n" not in message
        paths = {term.path for term in model.derivation.terms}
        keys = {spec.key for spec in model.architecture.symbols}
        named = any(f"does not divide {k}" in message or f"reads {k} per layer" in message for k in keys)
        assert any(p in message for p in paths) or named, message
        return
    assert whole.model_states_bytes / 2 <= per_gpu.model_states_bytes <= whole.model_states_bytes
    if whole.activations is not None:  # a table's split tensors halve, the rest stays whole
        assert whole.activations_bytes / 2 <= per_gpu.activations_bytes <= whole.activations_bytes


def test_heads_summed_over_the_layers_are_refused_naming_the_key() -> None:
    """Laguna's query heads differ per layer (4, 8, 8, 4 here); its record keeps their sum, not each layer's, so
    whether tp divides every layer's heads cannot be told from the sum (3 heads in one layer and 5 in another sum to 8,
    which 2 divides): refused by name."""
    config = {
        "model_type": "laguna",
        **{"num_hidden_layers": 4, "hidden_size": 32, "num_attention_heads": 4, "vocab_size": 64},
        "num_attention_heads_per_layer": [4, 8, 8, 4],
    }
    with pytest.raises(LlmcountError, match=r"--tp 2: Laguna \(laguna\) reads num_attention_heads_per_layer per layer"):
        tr.estimate(read_config(config, "laguna"), "bf16", 8, 1, parallel=tr.Parallel(tp=2))
