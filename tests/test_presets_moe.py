"""Published sizes of the bundled MoE presets, within the rounding their sources print.

Each source states its own convention for "active" (and sometimes "total"); the comments say which
of llmcount's counts it matches. The exact counts equal transformers 5.23.0 on the meta device
(index.json's oracle_total; tests/test_records.py checks the records against the oracle).
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from llmcount.sources import load


def embed_tokens(name: str) -> int:
    """The token embedding table alone (some sources leave it out of the active count)."""
    return next(c.count for c in load(name).counts.components if c.path == "embedding/embed_tokens")


@pytest.mark.parametrize("name", ["gpt-oss-20b", "gpt-oss-120b", "llama-4-scout", "glm-4.5-air"])
def test_preset_equals_the_oracle_count_in_the_index(name: str) -> None:
    index = json.loads(resources.files("llmcount.presets").joinpath("index.json").read_text("utf-8"))
    assert load(name).counts.total == index[name]["oracle_total"]


def test_gpt_oss_20b() -> None:
    # gpt-oss model card (OpenAI, 2025), table 1: 20.91B total, 3.61B active; its active count leaves out
    # the token embedding (but counts the unembedding)
    counts = load("gpt-oss-20b").counts
    assert abs(counts.total - 20.91e9) < 0.005e9
    assert abs(counts.activated - embed_tokens("gpt-oss-20b") - 3.61e9) < 0.005e9


def test_gpt_oss_120b() -> None:
    # gpt-oss model card, table 1: 116.83B total, 5.13B active (same convention as gpt-oss-20b);
    # GptOssConfig() is this model: 116,829,156,672 on transformers 5.23.0's meta device
    counts = load("gpt-oss-120b").counts
    assert counts.total == 116_829_156_672
    assert abs(counts.total - 116.83e9) < 0.005e9
    assert abs(counts.activated - embed_tokens("gpt-oss-120b") - 5.13e9) < 0.005e9


def test_llama_4_scout_text() -> None:
    # model card (meta-llama/Llama-4-Scout-17B-16E): 17B active, 109B total. The total counts the vision
    # encoder and projector (about 0.9B), which the text model (Llama4ForCausalLM) does not have: 107.77B here.
    counts = load("llama-4-scout").counts
    assert counts.total == 107_769_861_120
    assert 107.5e9 < counts.total < 109e9  # 109B less a vision tower of about a billion
    assert abs(counts.activated - 17e9) < 0.5e9  # every parameter but 15 of the 16 routed experts


def test_glm_4_5_air() -> None:
    # model card (zai-org/GLM-4.5-Air): 106B total, 12B active, both without the embedding and the LM head
    # (non-embedding 105.61B, active non-embedding 12.18B); the checkpoint's MTP layer is not in the model.
    counts = load("glm-4.5-air").counts
    assert abs(counts.non_embedding - 106e9) < 0.5e9
    assert abs(counts.activated - counts.embedding - 12e9) < 0.5e9
