"""The write-up's comparison of MHA, GQA, MQA and MLA: parameters of one layer's projections and the KV cache per
token per layer, derived here by hand from the published configs."""

from __future__ import annotations

import re

from llmcount.renderers.attention_kinds import attention_kinds
from llmcount.renderers.writeup import build, features, sections
from llmcount.sources import load

# Qwen3-32B: d = 5120, h = 64, h_kv = 8, h_d = 128
QWEN3_32B = {
    "mha": (4 * 5120 * 64 * 128, 2 * 64 * 128),
    "gqa": (2 * 5120 * 64 * 128 + 2 * 5120 * 8 * 128, 2 * 8 * 128),
    "mqa": (2 * 5120 * 64 * 128 + 2 * 5120 * 128, 2 * 128),
}
# DeepSeek-V3: d = 7168, h = 128, r_q = 1536, r_kv = 512, d_nope = 128, d_rope = 64, d_v = 128
DSV3_MLA = 7168 * 1536 + 1536 * 128 * (128 + 64) + 7168 * (512 + 64) + 512 * 128 * (128 + 128) + 128 * 128 * 7168
DSV3_MHA = 2 * 7168 * 128 * (128 + 64) + 2 * 7168 * 128 * 128


def kinds(name):
    model = load(name)
    return model, {k.key: k for k in attention_kinds(model, features(model))}


def test_a_gqa_model_gets_all_three_head_layouts_substituted():
    model, found = kinds("qwen3-32b")
    assert {k: (v.params, v.kv_elements) for k, v in found.items() if k != "mla"} == QWEN3_32B
    assert found["gqa"].own and not found["mha"].own
    assert found["mla"].params is None  # the config has no latent rank
    assert found["mha"].kv_ratio == 8 and found["mqa"].kv_ratio * 8 == 1
    # the plain form is the model's own attention less its two QK-norms (2 h_d per layer), as derived
    attention = next(s for s in sections(model) if s.key == "attention")
    assert attention.count == 64 * (found["gqa"].params + 2 * 128)


def test_an_mla_model_compares_with_the_same_heads_uncompressed():
    model, found = kinds("deepseek-v3")
    assert (found["mla"].params, found["mla"].kv_elements) == (DSV3_MLA, 512 + 64)
    assert (found["mha"].params, found["mha"].kv_elements) == (DSV3_MHA, 128 * (128 + 64 + 128))
    assert found["gqa"].params is None and found["mqa"].params is None
    attention = next(s for s in sections(model) if s.key == "attention")
    assert attention.count == 61 * (DSV3_MLA + 1536 + 512)  # plus the latent norms, r_q and r_kv


def test_the_post_shows_the_table_and_the_models_kind_in_bold():
    text = build("qwen3-32b", sections="attention").text
    assert "| **GQA** | 94,371,840 | 2,048 | 4,096 |" in text
    assert "| MHA | 167,772,160 | 16,384 | 32,768 |" in text
    assert "| MLA | — | — | — |" in text
    assert r"| **GQA** | $2\,d\,h\,h_{d} + 2\,d\,h_{d}\,h_{\mathrm{kv}}$ | $2\,h_{d}\,h_{\mathrm{kv}}$ |" in text
    assert "cache 16,384 elements per token instead of 2,048: 8 times as much" in text
    assert "The attention section above" not in text  # no such section in this post
    zh = build("deepseek-v3", "markdown", "zh", sections="params,attention").text
    assert "| **MLA** | 187,105,280 | 576 | 1,152 |" in zh
    assert "是现在的 71.11 倍" in zh  # 40,960 / 576
    assert "前文“注意力层”一节" in zh


def test_a_fused_attention_gets_one_sentence():
    text = build("gpt2", sections="attention").text
    assert re.search(r"so MHA, GQA, MQA and MLA are not compared for it\.", text)
    assert "|" not in text.split("side by side", 1)[1]
