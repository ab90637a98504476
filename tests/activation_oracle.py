"""The activation oracle: the bytes of the distinct storages autograd keeps for backward in a training forward.

``saved_bytes(config, batch, seq, dtype, attention)`` builds ``AutoModelForCausalLM.from_config`` on the CPU
with random weights (dropout off), runs one forward with ``labels = input_ids`` (so the loss is part of the
step) under ``torch.autograd.graph.saved_tensors_hooks`` and sums ``untyped_storage().nbytes()`` of every
storage the hooks pack, each once, parameters excluded (ORACLE.md), counting only what the graph still holds when
the forward ends: a tensor packed by a branch whose result is dropped (DeepSeek's expert-group scores feed only
an argmax) is freed with that branch before the backward starts, and its address may be reused by another
(ORACLE.md's "each storage once" by address alone counts the first and misses the second).
``attention``: ``"eager"`` or ``"sdpa"`` (on the CPU, PyTorch's flash kernel for SDPA: the fused-kernel case).
"""

from __future__ import annotations

import gc
import os
import weakref
from typing import Any

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch
import transformers
from oracle import TEXT_CAUSAL_LM, _hf_config, causal_lm
from transformers import AutoModelForCausalLM

transformers.logging.set_verbosity_error()

VERSIONS = f"transformers {transformers.__version__}, torch {torch.__version__}"
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
DROPOUT_KEYS = (
    "attention_dropout",
    "hidden_dropout",
    "residual_dropout",
    "dropout",
    "resid_pdrop",
    "embd_pdrop",
    "attn_pdrop",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "activation_dropout",
)


class _Held:
    """What the pack hook gives autograd: the graph keeps it as long as the backward may need the tensor."""

    __slots__ = ("__weakref__", "tensor")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor


def saved_bytes(config: dict[str, Any], batch: int, seq: int, dtype: str = "fp32", attention: str = "eager") -> int:
    """Bytes of the distinct non-parameter storages saved for backward (module docstring)."""
    hf_config = _hf_config(config)  # a text type AutoModelForCausalLM maps no class to: through its composite
    text_config = hf_config.get_text_config()
    for key in DROPOUT_KEYS:
        for target in (hf_config, text_config):
            if hasattr(target, key):
                setattr(target, key, 0.0)
    torch.manual_seed(0)
    kwargs = {"attn_implementation": attention, "dtype": DTYPES[dtype]}
    if config["model_type"] in TEXT_CAUSAL_LM:  # a class AutoModelForCausalLM maps nothing to
        model = causal_lm(hf_config, config["model_type"], **kwargs)
    else:  # through this module's name, which tests replace to build as from_pretrained does
        model = AutoModelForCausalLM.from_config(hf_config, **kwargs)
    model.train()
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    held: list[weakref.ref] = []

    def pack(tensor: torch.Tensor) -> _Held:
        # an alias without autograd history: a saved output holding its own grad_fn would make a reference cycle
        # through the graph that keeps a dropped branch (BigBird's pooler) alive, which autograd itself does not
        box = _Held(tensor.detach())
        held.append(weakref.ref(box))
        return box

    # labels within the LM head's rows (Apertus 1.5 prunes its head to the first output_vocab_size of the vocabulary)
    ids = torch.randint(0, getattr(text_config, "output_vocab_size", None) or text_config.vocab_size, (batch, seq))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda box: box.tensor):
        output = model(input_ids=ids, labels=ids)
    gc.collect()
    seen: dict[int, int] = {}
    for ref in held:
        box = ref()
        if box is not None:  # still held by the graph of the loss: kept for backward
            storage = box.tensor.untyped_storage()
            if storage.data_ptr() not in parameters:
                seen.setdefault(storage.data_ptr(), storage.nbytes())
    del output
    return sum(seen.values())
