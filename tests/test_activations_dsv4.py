"""DeepSeek-V4's activation table beyond the drawn cases (tests/draws/dsv4act.py): hash_moe routing by a token-id
table keeps the same bytes whatever the table says, and the configs the table was not checked for are refused by
name."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import activation_oracle
from activation_oracle import VERSIONS, saved_bytes
from draws.dsv4act import deepseek_v4

from llmcount.errors import LlmcountError
from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config


def test_hash_routing_keeps_the_same_bytes_whatever_its_token_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """transformers initializes tid2eid to zeros (every token to expert 0, k times); a checkpoint's table spreads the
    tokens over the experts: the grouped matmuls keep k rows per token either way, so the table's count holds."""
    import torch

    config = deepseek_v4(random.Random(1)) | {"mlp_layer_types": ["hash_moe", "hash_moe"], "n_routed_experts": 4}
    build = activation_oracle.AutoModelForCausalLM.from_config

    def spread(*args, **kwargs):
        model = build(*args, **kwargs)
        for layer in model.model.layers:
            table = layer.mlp.gate.tid2eid
            table.copy_(torch.randint(0, 4, table.shape, generator=torch.Generator().manual_seed(1)))
        return model

    zeros = saved_bytes(config, 3, 9, "fp32")
    monkeypatch.setattr(activation_oracle.AutoModelForCausalLM, "from_config", spread)
    spread_out = saved_bytes(config, 3, 9, "fp32")
    record = read_config(config, "random config")
    table = activations(record.architecture, record.values, "fp32", 3, 9, Options(), record.keys)
    assert zeros == spread_out == table.bytes, (config, VERSIONS)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("scoring_func", "sigmoid", "scoring_func other than sqrtsoftplus"),
        ("hidden_act", "gelu", "hidden_act other than silu"),
        ("hc_sinkhorn_iters", 0, "hc_sinkhorn_iters below 1"),
        ("output_router_logits", True, "output_router_logits"),
        (
            "rope_parameters",
            {"main": {"rope_type": "default"}, "compress": {"rope_type": "default"}},
            "rope_parameters",
        ),
    ],
)
def test_a_config_the_table_was_not_checked_for_is_refused_by_name(key: str, value: object, message: str) -> None:
    config = deepseek_v4(random.Random(0)) | {key: value}
    record = read_config(config, "random config")
    with pytest.raises(LlmcountError, match=rf"not derived for DeepSeek-V4 \(deepseek_v4\): {message}"):
        activations(record.architecture, record.values, "bf16", 2, 8, Options(), record.keys)
