"""Activations of the MLA families with one attention head, against autograd.

With h = 1 the values need no copy for the matmul with the probabilities: transformers splits kv_b_proj's output
into the keys' no-RoPE part and the values, and the matmul keeps a view of that whole output, so d_nope more per
token and attention layer is kept than with h >= 2 (the tables' ``when = "h == 1"`` entry). The draws are
``tests/test_activations.py``'s for each family (h >= 2 is tested there), with h = h_kv = 1 set on them; seeds 1
(fp32) and 2 (bf16) give, across the families, one and two layers, dense and MoE layers, with and without a query
latent. The expected numbers come from transformers (``activation_oracle.saved_bytes``), never from llmcount.
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from activation_oracle import VERSIONS, saved_bytes
from test_activations import _config

from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config

FAMILIES = [
    "deepseek_v3",
    "deepseek_v2",
    "deepseek_v32",
    "glm_moe_dsa",
    "glm4_moe_lite",
    "minicpm3",
    "youtu",
    "longcat_flash",  # two attention sublayers per layer
    "axk1",
    "axk2",
]


@pytest.mark.parametrize(("seed", "dtype"), [(1, "fp32"), (2, "bf16")])
@pytest.mark.parametrize("model_type", FAMILIES)
def test_one_head_keeps_the_values_as_a_view_of_kv_b_proj_output(model_type: str, seed: int, dtype: str) -> None:
    rng = random.Random(seed)
    config = {**_config(model_type, rng), "num_attention_heads": 1, "num_key_value_heads": 1}
    batch, seq = rng.choice([2, 3]), rng.choice([5, 7, 9])
    expected = saved_bytes(config, batch, seq, dtype, "eager")
    model = read_config(config, "random config, one head")
    result = activations(model.architecture, model.values, dtype, batch, seq, Options(attention="eager"), model.keys)
    assert result.bytes == expected, (config, batch, seq, dtype, VERSIONS)
