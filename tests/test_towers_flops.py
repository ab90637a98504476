"""Forward FLOPs per image of LLaVA (``flops MODEL --images N``): the CLIP or SigLIP tower and the projector, which
runs on the tower's tokens (its image_tokens: CLIP's patches and class token, SigLIP's patches) less the first with
vision_feature_select_strategy "default"; exact against torch's FlopCounterMode on transformers' get_image_features
with pixel_values of the config's image size, and by hand."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_tower_flops import image_oracle, run, whole_oracle

from llmcount.formulas.config import read_config
from llmcount.formulas.tower_flops import image_flops

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")


def ours(config: dict) -> int:
    return image_flops(read_config(config, "test config")).per_image


def test_llava_1_5_per_image_by_hand_and_oracle() -> None:
    """LlavaConfig's defaults are LLaVA-1.5-7B: CLIP ViT-L/14 at 336 pixels, (336 // 14)² = 576 patches and the class
    token, 577 tokens of 1024 over 24 layers (tests/test_tower_flops.py derives the tower by hand); the projector on
    the 576 tokens the "default" strategy keeps: 2·576·1024·4096 + 2·576·4096²; with "full" and two feature layers,
    577 tokens of 2 · 1024."""
    t = 577
    layer = 4 * 2 * t * 1024**2 + 2 * 2 * t * t * 1024 + 2 * 2 * t * 1024 * 4096
    tower = 2 * 576 * 3 * 14 * 14 * 1024 + 24 * layer
    config = {"model_type": "llava"}
    found = image_flops(read_config(config, "llava"))
    assert found.per_image == tower + 2 * 576 * 1024 * 4096 + 2 * 576 * 4096**2 == image_oracle(config)
    assert found.image_tokens == 576
    full = {"model_type": "llava", "vision_feature_select_strategy": "full", "vision_feature_layer": [-2, -1]}
    assert ours(full) == tower + 2 * 577 * 2 * 1024 * 4096 + 2 * 577 * 4096**2 == image_oracle(full), oracle.VERSIONS


@st.composite
def drawn(draw) -> dict:
    heads = draw(st.sampled_from([1, 2]))
    patch = draw(st.sampled_from([4, 8]))
    vision = {
        "model_type": draw(st.sampled_from(["clip_vision_model", "siglip_vision_model"])),
        "hidden_size": heads * draw(st.sampled_from([8, 16])),
        "num_attention_heads": heads,
        "intermediate_size": draw(st.sampled_from([8, 24])),
        "num_hidden_layers": draw(st.integers(1, 3)),
        "patch_size": patch,
        "image_size": patch * draw(st.integers(1, 4)) + draw(st.integers(0, patch - 1)),
        "num_channels": draw(st.sampled_from([1, 3])),
    }
    text = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1, "num_attention_heads": 2}
    text |= {"num_key_value_heads": 1, "vocab_size": 300}
    config = {"model_type": "llava", "vision_config": vision, "text_config": text}
    config["vision_feature_select_strategy"] = draw(st.sampled_from(["default", "full"]))
    config["vision_feature_layer"] = draw(st.sampled_from([-1, -2, [-1], [-2, -1]]))
    config["multimodal_projector_bias"] = draw(st.booleans())
    return config


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(config=drawn())
def test_drawn_llava_towers_and_projectors_match_flop_counter(config: dict) -> None:
    """A SigLIP tower has no class token: with "default" LLaVA still drops the first of its patches."""
    assert ours(config) == image_oracle(config), f"{config} ({oracle.VERSIONS})"


def test_whole_llava_forward_with_images_matches_flop_counter(tmp_path) -> None:
    """The language model over S text tokens and N · (t_vis − n_drop) image tokens, with the tower and projector N
    times, as one forward of transformers' model counts it."""
    config = {
        "model_type": "llava",
        "image_token_index": 299,
        "vision_config": {
            "model_type": "clip_vision_model",
            "hidden_size": 16,
            "intermediate_size": 24,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": 16,
            "patch_size": 8,
        },
        "text_config": {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1, "vocab_size": 300},
    }
    config["text_config"] |= {"num_attention_heads": 2, "num_key_value_heads": 1}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    data = json.loads(run("flops", str(path), "--images", "2", "--seq", "5", "--json").stdout)
    assert data["images"]["image_tokens_per_image"] == (16 // 8) ** 2 + 1 - 1
    assert data["whole_forward_flops"] == whole_oracle(config, 5, 2, 4), oracle.VERSIONS


def test_a_tower_of_any_image_size_without_one_is_refused_by_name(tmp_path) -> None:
    """LLaVA with a Pixtral tower (Pixtral-12B's layout): Pixtral takes images of any size up to image_size, so its
    tokens per image need --image-size; without it, refused naming the option (the count needs no size)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llava", "vision_config": {"model_type": "pixtral"}}))
    result = run("flops", str(path), "--images", "1")
    assert result.exit_code == 1 and result.stdout == ""
    assert "the Pixtral vision tower (pixtral) takes images of any size" in result.stderr
    assert "--image-size" in result.stderr
    assert run("count", str(path)).exit_code == 0  # the count needs no tokens
