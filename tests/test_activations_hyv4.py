"""Hy-V4's activation table beyond the drawn cases of tests/test_activations.py (tests/draws/hyv4.py): what
transformers cannot run is refused by name, and full recomputation keeps a layer's n_hc streams."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from activation_oracle import saved_bytes

from llmcount.errors import LlmcountError
from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config

SMALL = {
    "model_type": "hy_v4",
    **{"num_hidden_layers": 2, "hidden_size": 16, "intermediate_size": 24, "moe_intermediate_size": 8},
    **{"num_attention_heads": 2, "q_lora_rank": 12, "kv_lora_rank": 8, "qk_rope_head_dim": 4},
    **{"qk_nope_head_dim": 6, "v_head_dim": 10, "n_routed_experts": 4, "num_experts_per_tok": 2},
    **{"index_n_heads": 3, "index_head_dim": 8, "index_topk": 4, "hc_mult": 3, "vocab_size": 67},
    **{"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2},
}


def _activations(config: dict, options: Options, dtype: str = "bf16", batch: int = 2, seq: int = 5):
    model = read_config(config, "random config")
    return activations(model.architecture, model.values, dtype, batch, seq, options, model.keys)


def test_sdpa_is_not_built_by_transformers_and_flash_is_refused_by_name() -> None:
    """HYV4ForCausalLM has no SDPA path (sinks beside the indexer's mask): no fused-kernel oracle, no flash entries."""
    with pytest.raises(ValueError, match="does not support an attention implementation"):
        saved_bytes(SMALL, 2, 5, "fp32", "sdpa")
    with pytest.raises(LlmcountError, match=r"--attention flash is not derived for Hy-V4 \(hy_v4\)"):
        _activations(SMALL, Options(attention="flash"))


def test_an_activation_other_than_silu_is_refused_by_name() -> None:
    with pytest.raises(LlmcountError, match=r"not derived for Hy-V4 \(hy_v4\): hidden_act other than silu"):
        _activations({**SMALL, "hidden_act": "relu"}, Options())


def test_full_recomputation_keeps_the_n_hc_streams_of_each_layer() -> None:
    """A layer's input is the hc_mult streams: --recompute full keeps 3 · 16 bf16 values per token of each layer."""
    batch, seq = 2, 5
    result = _activations(SMALL, Options(recompute="full"), "bf16", batch, seq)
    assert [kind.bytes for kind in result.per_layer_kind] == [batch * seq * 3 * 16 * 2] * len(result.per_layer_kind)
