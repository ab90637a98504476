"""Inkling 2's activation table beyond the drawn cases of tests/test_activations.py (draws in tests/draws/ink2.py):
bf16 as from_pretrained loads the model, the logits of unpadded_vocab_size columns, the closed form of the block
states the attention residuals keep, and the options that need each layer's own bytes."""

from __future__ import annotations

import math
import random
import re

import pytest

from llmcount.errors import LlmcountError
from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config

SMALL = {  # sliding, full, sliding layers of their own heads and widths; blocks of two layers
    "model_type": "inkling2_text",
    **{"num_hidden_layers": 3, "layer_types": ["hybrid_sliding", "hybrid", "hybrid_sliding"]},
    **{"n_layers_per_attn_res_block": 2, "vocab_size": 67, "unpadded_vocab_size": 67, "hidden_size": 16},
    **{"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 4},
    **{"swa_num_attention_heads": 2, "swa_num_key_value_heads": 1, "swa_head_dim": 6, "sliding_window_size": 3},
    **{"d_rel": 2, "rel_extent": 5, "conv_kernel_size": 3},
    **{"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8, "pad_token_id": 0},
}
TITLE = r"not derived for Inkling 2 \(text\) \(inkling2_text\)"


def _bytes(config: dict, dtype: str, batch: int, seq: int, options: Options | None = None):
    model = read_config(config, "random config")
    return activations(model.architecture, model.values, dtype, batch, seq, options or Options(), model.keys)


class _AsFromPretrained:
    """AutoModelForCausalLM whose from_config leaves the dtypes as from_pretrained does: the parameters and buffers of
    the modules the class's _keep_in_fp32_modules_strict names in fp32, whatever the model's dtype."""

    @staticmethod
    def from_config(config, **kwargs):
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_config(config, **kwargs)
        kept = [re.compile(rf"(^|\.){re.escape(name)}($|\.)") for name in model._keep_in_fp32_modules_strict]
        for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
            if any(pattern.search(name) for pattern in kept):
                tensor.data = tensor.data.float()
        return model


def test_from_config_keeps_the_fp32_modules_in_bf16() -> None:
    """transformers 5.24's from_config keeps the modules _keep_in_fp32_modules_strict names in fp32 (the router's
    weight among them, which Inkling2TopKRouter multiplies its fp32 input by), as from_pretrained does, and trains in
    bf16: the same dtypes as :class:`_AsFromPretrained` gives (5.23's from_config left them in bf16 and failed)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    settings = {key: value for key, value in SMALL.items() if key != "model_type"}
    hf_config = transformers.AutoConfig.for_model("inkling2_text", **settings)
    model = transformers.AutoModelForCausalLM.from_config(hf_config, dtype=torch.bfloat16)
    kept = _AsFromPretrained.from_config(hf_config, dtype=torch.bfloat16)
    assert {n: p.dtype for n, p in model.named_parameters()} == {n: p.dtype for n, p in kept.named_parameters()}
    assert model.model.layers[0].mlp.gate.weight.dtype == torch.float32
    ids = torch.randint(0, 67, (2, 5))
    assert model(input_ids=ids, labels=ids).loss.dtype == torch.float32


@pytest.mark.parametrize(
    "seed",
    [
        6,  # the class's pattern (layer 5 of 7 full), blocks of 2
        10,  # a full layer 0, blocks of 3, one head, W = 3 < S = 9
        12,  # every layer a block, the last layer full, n_rel = 5 < S = 9
        21,  # full, sliding, full: blocks of 2, h_sw = 2 · h_kv_sw
        32,  # two layers (full, sliding), L_res = 1, k = 1
    ],
)
def test_bf16_with_the_fp32_modules_from_pretrained_keeps(seed: int, monkeypatch) -> None:
    pytest.importorskip("torch")
    import activation_oracle
    from draws import DRAWS

    rng = random.Random(seed)  # the draws of tests/test_activations.py's fp32 cases
    config = DRAWS["inkling2_text"](rng)
    batch, seq = rng.choice([2, 3]), rng.choice([5, 7, 9])
    monkeypatch.setattr(activation_oracle, "AutoModelForCausalLM", _AsFromPretrained)
    expected = activation_oracle.saved_bytes(config, batch, seq, "bf16", "eager")
    assert _bytes(config, "bf16", batch, seq).bytes == expected, (config, batch, seq, activation_oracle.VERSIONS)


def test_the_logits_and_the_loss_have_unpadded_vocab_size_columns(monkeypatch) -> None:
    """unpadded_vocab_size < V: the LM head has V_u rows, so the softcapped logits and the log-softmax have V_u
    columns. Token ids stay below V_u, as a tokenizer's do (the oracle's ids up to V - 1 would be labels the logits
    have no column for)."""
    torch = pytest.importorskip("torch")
    from activation_oracle import VERSIONS, saved_bytes

    config = {**SMALL, "unpadded_vocab_size": 60}
    draw = torch.randint
    monkeypatch.setattr(torch, "randint", lambda low, high, size: draw(low, 60, size))
    expected = saved_bytes(config, 2, 7, "fp32", "eager")
    assert _bytes(config, "fp32", 2, 7).bytes == expected, VERSIONS
    uncut = _bytes(SMALL, "fp32", 2, 7).bytes
    assert uncut - expected == 2 * (2 * 7 * 7 * 4)  # per token 7 fewer fp32 tanh outputs and log-probabilities


def _states_by_layer(layers: int, block: int) -> int:
    """Block states the residuals stack, layer by layer as Inkling2TextModel builds them: layer i's input joins the
    block states after layer i when i % block == 0 (a block boundary), inside the layer before its MLP residual;
    each residual attends over the block states and the current state."""
    attention = sum(math.ceil(i / block) + 1 for i in range(1, layers))  # none on layer 0
    mlp = sum(i // block + 2 for i in range(layers))
    final = math.ceil(layers / block) + 1
    return attention + mlp + final


def test_the_block_states_closed_form_equals_the_sum_over_the_layers() -> None:
    """residual/block_states keeps (2·d + 1) fp32 values per token and state: the stack, its normalized copy, 1/RMS.
    Its formula against the states counted layer by layer, for 1 to 60 layers in blocks of 1 to 8."""
    from llmcount.formulas import records
    from llmcount.formulas.activations import table
    from llmcount.formulas.symbols import L_res, N, d

    saved = table(records.family("inkling2_text")).saved
    entry = next(e for e in saved if e.path == "residual/block_states")
    for block in range(1, 9):
        for layers in range(1, 61):
            kept = entry.expr.subs({N: layers, L_res: block, d: 16})
            assert kept == (2 * 16 + 1) * _states_by_layer(layers, block), (layers, block)


@pytest.mark.parametrize("options", [Options(pp=2), Options(recompute="full")], ids=["pp", "recompute-full"])
def test_options_that_need_each_layer_s_own_bytes_are_refused_by_name(options: Options) -> None:
    what = "--pp 2" if options.pp > 1 else "--recompute full"
    with pytest.raises(LlmcountError, match=TITLE + f": {what}: residual/block_states is summed over the layers"):
        _bytes(SMALL, "fp32", 2, 8, options)


def test_a_router_score_function_not_checked_is_refused_by_name() -> None:
    with pytest.raises(LlmcountError, match=TITLE + ": scoring_func other than sigmoid"):
        _bytes({**SMALL, "scoring_func": "softmax"}, "fp32", 2, 8)
