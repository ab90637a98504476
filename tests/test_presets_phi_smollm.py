"""Phi-3-mini, Phi-4 and SmolLM3-3B: each bundled config counted exactly, equal to transformers' count on the meta
device, to the published exact figure, and to a count derived by hand from the config in the comments.

Sources of the published figures (also in presets/index.json):
- microsoft/Phi-3-mini-4k-instruct: KerasHub's Phi-3 presets, params 3,821,079,552 (model card: 3.8B).
- microsoft/phi-4: GGUF conversions (general.parameter_count) and NVIDIA NeMo Customizer, 14,659,507,200 (14B).
- HuggingFaceTB/SmolLM3-3B: the Hub safetensors index, total_parameters 3,075,098,624 (3B).
"""

from __future__ import annotations

import pytest
from oracle import meta_total

from llmcount.presets import presets
from llmcount.sources import load


def phi3(V: int, d: int, N: int, h: int, h_kv: int, d_ff: int) -> int:
    """Phi3ForCausalLM, untied: per layer a fused qkv_proj d × (h + 2 h_kv)·h_d, o_proj d × d, a fused
    gate_up_proj d × 2 d_ff, down_proj d_ff × d and two RMSNorms; the embedding, the head and a final norm."""
    h_d = d // h
    layer = d * (h + 2 * h_kv) * h_d + d * d + d * 2 * d_ff + d_ff * d + 2 * d
    return N * layer + 2 * V * d + d


def smollm3(V: int, d: int, N: int, h: int, h_kv: int, d_ff: int) -> int:
    """SmolLM3ForCausalLM, tied: Llama's layer (q, k, v, o, gate, up, down, two RMSNorms), one embedding."""
    h_d = d // h
    layer = d * h * h_d + 2 * d * h_kv * h_d + h * h_d * d + 3 * d * d_ff + 2 * d
    return N * layer + V * d + d


CASES = [
    # name, published exact figure, hand count from the config's values
    ("phi-3-mini", 3_821_079_552, phi3(V=32064, d=3072, N=32, h=32, h_kv=32, d_ff=8192)),
    ("phi-4", 14_659_507_200, phi3(V=100352, d=5120, N=40, h=40, h_kv=10, d_ff=17920)),
    ("smollm3-3b", 3_075_098_624, smollm3(V=128256, d=2048, N=36, h=16, h_kv=4, d_ff=11008)),
]


@pytest.mark.parametrize(("name", "published", "by_hand"), CASES, ids=[c[0] for c in CASES])
def test_exact_count(name: str, published: int, by_hand: int) -> None:
    total = load(name).counts.total
    assert total == published == by_hand
    assert total == meta_total(presets()[name].config())


@pytest.mark.parametrize(
    ("name", "hub_id", "rounded", "half_unit"),
    [
        ("phi-3-mini", "microsoft/Phi-3-mini-4k-instruct", 3.8e9, 0.05e9),  # model card: 3.8B
        ("phi-4", "microsoft/phi-4", 15e9, 0.5e9),  # GGUF general.size_label: 15B (the card's "14B" truncates)
        ("smollm3-3b", "HuggingFaceTB/SmolLM3-3B", 3e9, 0.5e9),  # model card: 3B
    ],
)
def test_preset_names_its_model_and_rounds_to_the_published_size(
    name: str, hub_id: str, rounded: float, half_unit: float
) -> None:
    assert presets()[name].hub_id == hub_id
    assert abs(load(name).counts.total - rounded) < half_unit


def test_dense_models_activate_everything() -> None:
    for name, _, _ in CASES:
        counts = load(name).counts
        assert counts.activated == counts.total
