"""Published sizes of the dense-a presets (Gemma, Gemma 2, Gemma 3, OLMo 2, Granite, StarCoder2).

An exact figure where one is published (Hub safetensors metadata), otherwise the published rounding.
"""

from __future__ import annotations

import pytest

from llmcount.sources import load

EXACT = [
    # google/gemma-2-2b: Hub safetensors metadata, 2,614,341,888 (F32; the LM head is tied to the embedding).
    ("gemma-2-2b", 2_614_341_888),
]

ROUNDED = [
    # google/gemma-7b: Hub model page, "8.54B params".
    ("gemma-7b", 8.54e9, 0.005e9),
    # google/gemma-3-1b-it: model card, "1B".
    ("gemma-3-1b-it", 1e9, 0.05e9),
    # allenai/OLMo-2-1124-7B: Hub model page, "7.30B params".
    ("olmo-2-7b", 7.30e9, 0.005e9),
    # ibm-granite/granite-3.1-8b-instruct: Hub model page, "8.17B params".
    ("granite-3.1-8b", 8.17e9, 0.005e9),
    # bigcode/starcoder2-7b: Hub model page, "7.17B params".
    ("starcoder2-7b", 7.17e9, 0.005e9),
]


@pytest.mark.parametrize(("name", "published"), EXACT)
def test_exact_published_total(name: str, published: int) -> None:
    assert load(name).counts.total == published


@pytest.mark.parametrize(("name", "published", "rounding"), ROUNDED)
def test_rounded_published_total(name: str, published: float, rounding: float) -> None:
    assert abs(load(name).counts.total - published) < rounding
