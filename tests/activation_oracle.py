"""The activation oracle: the bytes of the distinct storages autograd keeps for backward in a training forward.

``saved_bytes(config, batch, seq, dtype, attention)`` builds ``AutoModelForCausalLM.from_config`` on the CPU
with random weights (dropout off), runs one forward with ``labels = input_ids`` (so the loss is part of the
step) under ``torch.autograd.graph.saved_tensors_hooks`` and sums ``untyped_storage().nbytes()`` of every
storage the hooks pack, each once, parameters excluded (ORACLE.md). ``attention``: ``"eager"`` or ``"sdpa"``
(on the CPU, PyTorch's flash kernel for SDPA: the fused-kernel case).
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

transformers.logging.set_verbosity_error()

VERSIONS = f"transformers {transformers.__version__}, torch {torch.__version__}"
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
DROPOUT_KEYS = ("attention_dropout", "hidden_dropout", "dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop")


def saved_bytes(config: dict[str, Any], batch: int, seq: int, dtype: str = "fp32", attention: str = "eager") -> int:
    """Bytes of the distinct non-parameter storages saved for backward (module docstring)."""
    settings = {k: v for k, v in config.items() if k != "model_type"}
    hf_config = AutoConfig.for_model(config["model_type"], **settings)
    for key in DROPOUT_KEYS:
        if hasattr(hf_config, key):
            setattr(hf_config, key, 0.0)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_config, attn_implementation=attention, dtype=DTYPES[dtype])
    model.train()
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        pointer = storage.data_ptr()
        if pointer not in parameters:
            seen.setdefault(pointer, storage.nbytes())
        return tensor

    ids = torch.randint(0, hf_config.vocab_size, (batch, seq))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        model(input_ids=ids, labels=ids)
    return sum(seen.values())
