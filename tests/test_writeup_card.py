"""The write-up's check against the model card's stated size (presets/index.json ``card``).

Expected agreements are worked out by hand from the published figures: 32,762,123,264 is 327.6 units of 10^8,
so it rounds to the card's 32.8B; 7,615,616,512 is 7.6156B, which rounds to 7.62B but cuts to Qwen2.5's 7.61B."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmcount.errors import LlmcountError
from llmcount.presets import presets
from llmcount.renderers.card import Stated, card_check, parse_stated
from llmcount.renderers.writeup import build
from llmcount.sources import load


@pytest.mark.parametrize(
    ("text", "digits", "unit"),
    [("32.8B", 328, 10**8), ("0.6B", 6, 10**8), ("671B", 671, 10**9), ("124M", 124, 10**6), ("116.83B", 11683, 10**7)],
)
def test_stated_sizes_are_read_as_written(text, digits, unit):
    assert parse_stated(text) == Stated(text, digits, unit)


def test_exact_stated_sizes_and_bad_ones():
    assert parse_stated("20,554,567,680") == Stated("20,554,567,680", 20_554_567_680, 1)
    for bad in ("32.8 B", "about 7B", "7b", "1,2,3"):
        with pytest.raises(LlmcountError, match=r"32\.8B or 20,554,567,680"):
            parse_stated(bad)


def test_rounding_and_cutting():
    assert parse_stated("32.8B").agrees(32_762_123_264) == "rounds"
    assert parse_stated("7.61B").agrees(7_615_616_512) == "cut"  # 7.6156B: rounds to 7.62B
    assert parse_stated("7.62B").agrees(7_615_616_512) == "rounds"
    assert parse_stated("7.6B").agrees(7_715_616_512) is None
    assert parse_stated("20,554,567,680").agrees(20_554_567_680) == "exact"
    assert parse_stated("20,554,567,680").agrees(20_554_567_681) is None


def test_every_presets_card_is_readable():
    cards = {name: p.card for name, p in presets().items() if p.card}
    assert len(cards) > 20
    for name, card in cards.items():
        check = card_check(load(name), card)
        assert check is not None and check.card.text == card["size"], name
        assert check.match or check.vision, f"{name}: the card's {card['size']} is neither matched nor explained"


def test_qwen3_32b_agrees_with_its_card():
    text = build("qwen3-32b", sections="params").text
    assert "The model card says 32.8B. The count, rounded to the card's precision, agrees." in text


def test_the_hubs_figure_of_a_tied_model_counts_the_head_twice():
    # Hub safetensors metadata 751,632,384 = 596,049,920 + V d, V = 151,936, d = 1,024
    assert 751_632_384 - 596_049_920 == 151_936 * 1024
    text = build("qwen3-0.6b", sections="params").text
    assert "The Hub says 751,632,384" in text and r"$V\,d = 155{,}582{,}464$" in text
    zh = build("qwen3-0.6b", "markdown", "zh", sections="params").text
    assert "Hub 上显示 751,632,384" in zh and "只应计一次" in zh


def test_deepseek_v3_names_the_mtp_module_and_the_hubs_685b():
    text = build("deepseek-v3", sections="params").text
    assert "multi-token-prediction (MTP) module of 14B parameters" in text
    assert "the Hub's 685B counts it (671B + 14B)" in text
    zh = build("deepseek-v3", "markdown", "zh", sections="params").text
    assert "多 token 预测（MTP）模块" in zh and "685B" in zh


def test_a_card_counting_without_the_embedding_is_recognised():
    check = card_check(load("glm-4.5-air"), presets()["glm-4.5-air"].card)
    assert check.match == ("non_embedding", "rounds")  # 106,852,245,504 total rounds to 107B
    text = build("glm-4.5-air", sections="params").text
    assert "the card's figure matches the count without the embedding" in text


def test_a_vision_models_card_is_explained():
    text = build("llama-4-scout", sections="params").text
    assert "vision encoder and projector included" in text
    assert "+1.14%" in text  # (109e9 - 107,769,861,120) / 107,769,861,120 = 1.1415%


def test_a_config_file_has_no_card_section(tmp_path: Path):
    (tmp_path / "config.json").write_text(json.dumps(presets()["qwen3-32b"].config()))
    text = build(str(tmp_path / "config.json"), sections="params").text
    assert "Against the model card" not in text and "The model card says" not in text


def test_json_carries_the_card_check_and_the_attention_kinds():
    data = build("deepseek-v3", sections="attention").data
    assert data["card"] == {
        "stated": "671B",
        "total": 671_026_404_352,
        "agrees": {"count": "total", "how": "rounds"},
        "hub": "685B",
        "mtp": True,
        "vision": False,
    }
    mla = next(k for k in data["attention_kinds"] if k["own"])
    assert mla == {"kind": "mla", "own": True, "parameters": 187_105_280, "kv_elements_per_token": 512 + 64}
