"""xLSTM's activations against autograd at sequence lengths around the chunk, in both working backend modes, and the
configs its table refuses (each one checked to fail in transformers, or named as not checked).

transformers' own torch mLSTM (``modeling_xlstm.py`` without the xlstm package) runs, in the inference mode (the
class's), the floor(S/Q) whole chunks of Q tokens through its chunkwise kernel and the S mod Q tokens left through
its recurrent kernel, one step each; a single token takes the step kernel even with Q = 1. In the train mode every
token is in a chunk (S a multiple of Q). ``tests/test_activations.py`` draws S of 5, 7 or 9 on configs from
``tests/draws/xlstm.py``; here S runs from one token to several chunks with steps left, on one config of three heads
(query/key heads of 4, value heads of 8). The expected numbers come from transformers (``activation_oracle``), never
from llmcount. Every config runs with ``use_cache = False``, as a training step must (the first test).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from activation_oracle import DTYPES, VERSIONS, saved_bytes

from llmcount.errors import LlmcountError
from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config

CONFIG = {
    "model_type": "xlstm",
    **{"vocab_size": 67, "hidden_size": 24, "num_blocks": 2, "num_hidden_layers": 2, "num_heads": 3},
    **{"chunk_size": 4, "ffn_round_up_to_multiple_of": 8, "use_cache": False, "pad_token_id": 0},
}

CASES = [
    # inference mode, chunks of 4: one token (the step kernel), steps only, one whole chunk (its reads take views of
    # the state buffers), a chunk and a step, two chunks, two chunks and three steps
    *[({}, seq, "fp32") for seq in (1, 3, 4, 5, 8, 11)],
    *[({}, seq, "bf16") for seq in (1, 3)],  # bf16: steps only (a whole chunk fails in transformers, below)
    ({"chunk_size": 1}, 1, "fp32"),  # one token: the step kernel, not a chunk of one
    ({"chunk_size": 1}, 3, "fp32"),  # three chunks of one
    ({"chunk_size": 1}, 1, "bf16"),
    ({"num_heads": 1}, 11, "fp32"),  # one head: q, k and v transposed are still copied contiguous
    # train mode: S a multiple of Q, every token in a chunk; the kernel gets strided q, k, v and its matmuls copy them
    *[({"mode": "train"}, seq, "fp32") for seq in (4, 8, 12)],
    *[({"mode": "train"}, seq, "bf16") for seq in (4, 8)],
    ({"mode": "train", "chunk_size": 1}, 1, "fp32"),  # one token, one chunk of one: views, no copies
    ({"mode": "train", "chunk_size": 1}, 1, "bf16"),
    ({"mode": "train", "num_heads": 1}, 8, "fp32"),  # one head: views, no copies
    ({"mode": "train", "norm_reduction_force_float32": False, "use_bias": True}, 8, "bf16"),
]


def _activations(config: dict, seq: int, dtype: str, batch: int = 2) -> int:
    model = read_config(config, "random config")
    return activations(model.architecture, model.values, dtype, batch, seq, Options(), model.keys).bytes


@pytest.mark.parametrize(("change", "seq", "dtype"), CASES)
def test_xlstm_equals_what_autograd_saves(change: dict, seq: int, dtype: str) -> None:
    config = {**CONFIG, **change}
    assert _activations(config, seq, dtype) == saved_bytes(config, 2, seq, dtype), (change, seq, dtype, VERSIONS)


def _forward(config: dict, seq: int, dtype: str = "fp32"):
    """One training forward of transformers' model of this config (what the oracle runs, without its hooks)."""
    import torch
    from oracle import _hf_config
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_config(_hf_config(config), dtype=DTYPES[dtype])
    model.train()
    ids = torch.randint(0, config["vocab_size"], (2, seq))
    return model(input_ids=ids, labels=ids)


def test_with_the_cache_transformers_cannot_train() -> None:
    """use_cache (the config's default): the first chunk keeps the cache's zero states, which the block then overwrites
    in place with its last state, so the backward fails. The table counts the step as it can run: the cache off.
    (Widths whose heads the cache sizes alike: q and k of 64, v of 128.)"""
    config = {**CONFIG, "hidden_size": 128, "num_heads": 2, "use_cache": True}
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _forward(config, 5).loss.backward()


REFUSED = [
    # (change, S, dtype, what transformers raises, the refusal); without return_last_states the kernel returns only
    # the output, which the layer unpacks as (output, state) along the batch: a shape error
    (
        {},
        4,
        "bf16",
        "expected scalar type Float but found BFloat16",
        "mode inference in a training dtype other than fp32",
    ),
    ({"mode": "train"}, 6, "fp32", "not divisible by chunk size", "mode train with S not a multiple of chunk_size"),
    (
        {"mode": "train", "return_last_states": False},
        8,
        "fp32",
        "Got torch.Size",
        "mode train without return_last_states",
    ),
    ({"mode": "train_with_padding"}, 8, "fp32", "not supported with train_with_padding", "mode train_with_padding"),
    (
        {"mode": "train_with_padding", "return_last_states": False},
        8,
        "fp32",
        "Got torch.Size",
        "mode train_with_padding",
    ),
]


@pytest.mark.parametrize(("change", "seq", "dtype", "raised", "refusal"), REFUSED)
def test_a_step_transformers_cannot_run_is_refused_by_name(
    change: dict, seq: int, dtype: str, raised: str, refusal: str
) -> None:
    config = {**CONFIG, **change}
    with pytest.raises((RuntimeError, ValueError), match=raised):
        _forward(config, seq, dtype)
    with pytest.raises(LlmcountError, match=rf"not derived for xLSTM \(xlstm\): {refusal}"):
        _activations(config, seq, dtype)


def test_fused_weights_cannot_be_built_on_the_cpu_and_are_refused_by_name() -> None:
    config = {**CONFIG, "weight_mode": "fused"}
    with pytest.raises(RuntimeError, match="must match the size"):
        _forward(config, 5)
    with pytest.raises(LlmcountError, match=r"not derived for xLSTM \(xlstm\): weight_mode fused"):
        _activations(config, 5, "fp32")


def test_an_unchecked_state_dtype_is_refused_by_name() -> None:
    config = {**CONFIG, "inference_state_dtype": "bfloat16"}
    with pytest.raises(LlmcountError, match=r"not derived for xLSTM \(xlstm\): inference_state_dtype other than"):
        _activations(config, 5, "fp32")
