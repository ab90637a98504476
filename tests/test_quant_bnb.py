"""bitsandbytes checkpoints written by transformers itself on the CPU (transformers 5.24.0 ``from_pretrained`` with a
``BitsAndBytesConfig``, then ``save_pretrained``; bitsandbytes 0.50.2, accelerate): the bytes llmcount predicts from
the config equal the file's, and ``verify`` counts the packed weights as the model's parameters. With double
quantisation each weight's state JSON prints ``nested_offset``, a float of the weights: its digits, read back from
the file, are the only bytes not predicted."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

pytest.importorskip("bitsandbytes")
pytest.importorskip("accelerate")
import torch
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModelForCausalLM, BitsAndBytesConfig

from llmcount.checkpoint import verify
from llmcount.formulas.config import read_config
from llmcount.quant.config import read_quant
from llmcount.quant.stored import plan, rest_dtype

QWEN3 = {
    "model_type": "qwen3",
    "hidden_size": 96,
    "intermediate_size": 150,  # 96·150 and 150·96 weights: blocks of 64 that do not divide them
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 48,
    "vocab_size": 300,
}
CASES = {
    "nf4": {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
    "fp4": {"load_in_4bit": True, "bnb_4bit_quant_type": "fp4"},
    "nf4-double": {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True},
    "int8": {"load_in_8bit": True},
    "nf4-skip": {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "llm_int8_skip_modules": ["down_proj", "lm_head"]},
}


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bf16")
    rest = {k: v for k, v in QWEN3.items() if k != "model_type"}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model("qwen3", **rest), dtype=torch.bfloat16)
    model.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("case", sorted(CASES))
def test_bitsandbytes_files(case: str, plain: Path, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_pretrained(
            plain, quantization_config=BitsAndBytesConfig(**CASES[case]), dtype=torch.bfloat16
        )
        model.save_pretrained(tmp_path)
    state = load_file(tmp_path / "model.safetensors")
    written = sum(v.numel() * v.element_size() for v in state.values())
    offsets = 0
    for name, value in state.items():
        if ".quant_state." in name:
            entry = json.loads(bytes(value.numpy()).decode())
            if "nested_offset" in entry:
                offsets += len(json.dumps(entry["nested_offset"]))
    config = json.loads((tmp_path / "config.json").read_text())
    ours = read_config(config, "test")
    quant = read_quant(config, "test")
    code, _ = rest_dtype(quant, ours.dtype, None, "test")
    assert plan(ours, quant, code).bytes + offsets == written, f"{case}: bitsandbytes 0.50.2 file, {sorted(state)}"
    result = verify(str(tmp_path))
    assert result.match, (result.differences, result.unmapped)
    assert sum(size for _, size in result.stored) == written  # bytes as stored, per component
