"""Records of model types whose causal LM holds more than a text decoder, or only part of a larger model: GIT (a
vision encoder inside GitForCausalLM, all of it counted) and Moshi (MoshiForCausalLM, the text decoder alone), by
hand and against transformers (``tests/oracle.py``) on configs the parametrized record tests do not draw."""

from __future__ import annotations

import pytest

from llmcount.formulas.config import read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")


def total(config: dict) -> int:
    return read_config(config, "test config").counts.total


def test_git_base_by_hand() -> None:
    """GitConfig's defaults (GIT-base). Text: embeddings 30522·768 + 1024·768 + LayerNorm 2·768; 6 post-norm layers of
    q, k, v, dense 4·(768² + 768), MLP 2·768·3072 + 3072 + 768 and two LayerNorms 4·768: 7,087,872 each. Vision: class
    token 768, patch conv 3·16²·768, positions (224 // 16)² + 1 = 197 rows of 768, two LayerNorms 2·2·768, 12 layers
    of 7,087,872 (the same sizes). Projection 768·768 + 768 + LayerNorm 2·768; output 30522·768 and its bias 30522."""
    text = 30522 * 768 + 1024 * 768 + 2 * 768 + 6 * 7_087_872
    vision = 768 + 3 * 16 * 16 * 768 + 197 * 768 + 4 * 768 + 12 * 7_087_872
    assert 4 * (768**2 + 768) + 2 * 768 * 3072 + 3072 + 768 + 4 * 768 == 7_087_872
    want = text + vision + 768 * 768 + 768 + 2 * 768 + 30522 * 768 + 30522
    assert total({"model_type": "git"}) == want == oracle.meta_total({"model_type": "git"}), oracle.VERSIONS


@pytest.mark.parametrize(
    "extra",
    [
        {"num_image_with_embedding": 6},
        {"tie_word_embeddings": True},
        {"vision_config": {"hidden_size": 32, "intermediate_size": 48, "num_attention_heads": 4}},
        {"vision_config": {"image_size": 100, "patch_size": 14, "num_channels": 1, "num_hidden_layers": 1}},
        {"vision_config": None},
    ],
)
def test_git_vision_config_and_video_frames(extra: dict) -> None:
    """The vision encoder's sizes from vision_config (100 // 14 = 7 patches a side: 49 positions and the class
    token's), the temporal embeddings of num_image_with_embedding frames, and a tied output weight (its bias stays)."""
    config = {"model_type": "git", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, **extra}
    assert total(config) == oracle.meta_total(config), oracle.VERSIONS


def test_moshi_by_hand() -> None:
    """MoshiConfig's defaults (Moshi's text decoder): embedding 32001·4096 (a padding row), 32 layers of attention
    4·4096² (32 heads of 128, no grouping), gated MLP fc1 4096·22528 and fc2 11264·4096, two RMSNorms 2·4096, the
    final norm 4096 and an untied head 32000·4096."""
    per_layer = 4 * 4096**2 + 4096 * 22528 + 11264 * 4096 + 2 * 4096
    want = 32001 * 4096 + 32 * per_layer + 4096 + 32000 * 4096
    assert total({"model_type": "moshi"}) == want == 6_839_083_008 == oracle.meta_total({"model_type": "moshi"})


def test_moshi_refuses_an_odd_ffn_dim_by_name() -> None:
    from llmcount.formulas.config import RuleRefusal

    with pytest.raises(RuleRefusal, match="ffn_dim"):
        total({"model_type": "moshi", "ffn_dim": 101})
