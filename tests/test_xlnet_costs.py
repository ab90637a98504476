"""XLNet's FLOPs and mems against transformers: the content stream over S tokens with relative positions (2·S with
attn_type "bi", S + 1 with "uni"), counted by FlopCounterMode on CPU; and the mems a forward with use_mems returns
(each layer's input hidden states: every token, the last mem_len, or the first reuse_len).

At S = 1 torch computes A·V, which contracts a single key, as an elementwise product the counter does not see; the
sequences here are 2 tokens or more. With bi_data XLNet splits the batch in halves (forward and backward positions):
it runs even batches only. attn_type "uni" runs without an attention_mask (with one, transformers' mask arithmetic
fails to broadcast).
"""

from __future__ import annotations

import pytest

from llmcount.formulas import memory
from llmcount.formulas.config import read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")
torch = oracle.torch

SMALL = {"model_type": "xlnet", "vocab_size": 64, "d_model": 16, "n_layer": 2, "n_head": 4, "d_inner": 24}
CASES = [
    {},
    {"tie_word_embeddings": False, "n_layer": 3},
    {"bi_data": True},
    {"attn_type": "uni"},
    {"mem_len": 3},
    {"reuse_len": 4},
    {"mem_len": 2, "reuse_len": 4},
    {"mem_len": 0, "reuse_len": 3},
]
SIZES = [(2, 2), (2, 5), (4, 9)]


def _model(config: dict):
    torch.manual_seed(0)
    return oracle.AutoModelForCausalLM.from_config(oracle._hf_config(config), attn_implementation="eager")


def _inputs(config: dict, batch: int, seq: int) -> dict:
    ids = torch.randint(0, config["vocab_size"], (batch, seq))
    return {"input_ids": ids} if config.get("attn_type") == "uni" else {"input_ids": ids, "attention_mask": ids * 0 + 1}


@pytest.mark.parametrize("keys", CASES)
def test_xlnet_flops_equal_flop_counter(keys: dict) -> None:
    from test_flops import llmcount_forward
    from torch.utils.flop_counter import FlopCounterMode

    config = {**SMALL, **keys}
    model = _model(config)
    for batch, seq in SIZES:
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(**_inputs(config, batch, seq), use_mems=False)
        got = llmcount_forward(config, batch, seq)
        assert got == counter.get_total_flops(), f"B={batch} S={seq} {config} ({oracle.VERSIONS})"


@pytest.mark.parametrize("keys", CASES)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_xlnet_mems_equal_transformers(keys: dict, dtype: str) -> None:
    config = {**SMALL, **keys}
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    model = _model(config).to(torch_dtype)
    for batch, seq in SIZES:
        with torch.no_grad():
            mems = model(**_inputs(config, batch, seq), use_mems=True).mems
        expected = sum(t.numel() * t.element_size() for t in mems)
        values = read_config(config, "test")
        result = memory.inference(values.derivation, values.values, dtype, seq=seq, batch=batch)
        got = result.bytes_of("kv_cache") + result.bytes_of("state")
        assert got == expected, f"{dtype} B={batch} S={seq} {config} ({oracle.VERSIONS})"


def test_xlnet_large_mems_by_hand() -> None:
    """XLNetConfig(): 24 layers, d_model 1024, mem_len None: every token's hidden state per layer, 24 · 1,024
    elements per token; bf16 at S = 512, B = 2: 2 · 512 · 24 · 1,024 · 2 = 50,331,648 bytes."""
    model = read_config({"model_type": "xlnet"}, "defaults")
    result = memory.inference(model.derivation, model.values, "bf16", seq=512, batch=2)
    assert result.bytes_of("kv_cache") == 50_331_648
