"""GPTQ's ``modules_to_not_convert``, empty or not, leaves the LM head and embeddings as they are.

transformers 5.24.0 hands GPTQ to optimum: ``GPTQConfig`` has no ``modules_to_not_convert``
(utils/quantization_config.py)
and optimum 2.3.0 ``GPTQQuantizer.convert_model`` (gptq/quantizer.py) replaces only the layers ``get_layers(model,
prefix=block_name)`` finds (gptq/utils.py: exact nn.Linear, Conv1D, nn.Conv2d whose name starts with the decoder
blocks' module, ``get_block_name_with_pattern``: ``model.layers`` ...). The oracle here is that rule on transformers'
model built on the meta device (optimum's own functions when optimum is installed); llmcount's plan must quantise
exactly those modules.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
import torch
from oracle import _meta_model

from llmcount.formulas.config import read_config
from llmcount.quant.config import read_quant
from llmcount.quant.stored import plan

CONFIG = {
    "model_type": "qwen3",
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "vocab_size": 300,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}


def _converted(config: dict) -> dict[str, int]:
    """optimum's choice: module name -> parameters of its weight."""
    model, _cfg = _meta_model(json.dumps(config, sort_keys=True))
    try:
        from optimum.gptq.utils import get_block_name_with_pattern, get_layers

        return {n: m.weight.numel() for n, m in get_layers(model, prefix=get_block_name_with_pattern(model)).items()}
    except ImportError:
        block = "model.layers"  # BLOCK_PATTERNS' first match for this model
        return {
            n: m.weight.numel() for n, m in model.named_modules() if type(m) is torch.nn.Linear and n.startswith(block)
        }


@pytest.mark.parametrize(
    "skip", [None, [], ["lm_head"], ["model.layers.1.mlp.down_proj"]], ids=["absent", "empty", "head", "a-layer"]
)
def test_the_head_and_embeddings_are_never_converted(skip) -> None:
    """A listed module inside the blocks is one the checkpoint's writer left unquantised: its bytes stay in the
    checkpoint dtype (optimum would convert it on loading; the stored file is what is sized)."""
    qc = dict(GPTQ) if skip is None else {**GPTQ, "modules_to_not_convert": skip}
    config = {**CONFIG, "quantization_config": qc}
    converted = _converted(CONFIG)
    assert "lm_head" not in converted
    stored = plan(read_config(config, "g"), read_quant(config, "g"), "F16")
    held = sum(t.shape[0] for g in stored.groups for t in g.tensors if t.suffix == "")  # kept in the dtype
    quantised = stored.parameters - held
    kept = {g.path for g in stored.groups if g.stored_as == stored.dtype}
    left = {n: c for n, c in converted.items() if n not in (skip or [])}
    assert quantised == sum(left.values())
    assert {"head/lm_head", "embedding/embed_tokens"} <= kept


def test_gptqmodel_lm_head_true_quantises_the_head() -> None:
    config = {**CONFIG, "quantization_config": {**GPTQ, "lm_head": True}}
    stored = plan(read_config(config, "g"), read_quant(config, "g"), "F16")
    head = next(g for g in stored.groups if g.path == "head/lm_head")
    assert head.stored_as != stored.dtype
