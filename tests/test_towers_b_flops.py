"""Forward FLOPs per image (``flops MODEL --images N``) of InternVL's and Qianfan-OCR's InternViT with InternVL's
pixel-shuffle projector, and of Idefics3's and SmolVLM's SigLIP with their pixel-shuffle connector, against torch's
FlopCounterMode on transformers' own ``get_image_features`` (eager attention, meta device) with ``pixel_values`` of the
config's image size; one case by hand."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcount.formulas import records
from llmcount.formulas.config import read_config
from llmcount.formulas.tower_flops import image_flops

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

import torch  # noqa: E402
import transformers  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402
from transformers import AutoConfig  # noqa: E402

TEXT = dict(oracle.SMALL_TEXT)


def image_oracle(config: dict, images: int = 1) -> int:
    """FLOPs FlopCounterMode counts when transformers' model turns ``images`` images of the config's size into the
    language model's input (``get_image_features``: the vision tower and the projector), on the meta device."""
    # Idefics3's and SmolVLM's drop padding images by their values (a boolean index): run on the CPU, small configs
    device = "cpu" if config["model_type"] in ("idefics3", "smolvlm") else "meta"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = AutoConfig.for_model(**config, attn_implementation="eager")
        with torch.device(device):
            model = getattr(transformers, records.composite(config["model_type"]).model)._from_config(built).eval()
    vision = built.vision_config
    size = vision.image_size if isinstance(vision.image_size, int) else vision.image_size[0]
    pixels = torch.ones(images, vision.num_channels, size, size, device=device)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        if config["model_type"] in ("idefics3", "smolvlm"):  # images of a batch of one sample
            model.model.get_image_features(pixel_values=pixels[None])
        else:
            model.model.get_image_features(
                pixel_values=pixels, vision_feature_layer=-1, vision_feature_select_strategy="default"
            )
    return counter.get_total_flops()


def test_internvl_default_per_image_by_hand_and_oracle() -> None:
    """InternVLVisionConfig's defaults (InternViT-300M at 448 pixels, patches of 14): (448 // 14)² = 1024 patches and
    the class token, 1025 tokens of 1024, 24 layers; the patch convolution 2·1024·3·14²·1024; per layer q, k, v,
    out 4 · 2·1025·1024², scores and values 2 · 2·1025²·1024, MLP 2 · 2·1025·1024·4096; the pixel shuffle of
    downsample_ratio 1/2 folds the 1024 patches into 256 tokens of 4 · 1024: linear_1 2·256·4096·32, linear_2
    2·256·32² (d = 32)."""
    config = {"model_type": "internvl", "text_config": TEXT}
    t, d_vis = 1025, 1024
    layer = 4 * 2 * t * d_vis**2 + 2 * 2 * t * t * d_vis + 2 * 2 * t * d_vis * 4096
    by_hand = 2 * 1024 * 3 * 14 * 14 * d_vis + 24 * layer + 2 * 256 * 4096 * 32 + 2 * 256 * 32 * 32
    found = image_flops(read_config(config, "internvl"))
    assert found.per_image == by_hand and found.image_tokens == 256
    assert found.per_image == image_oracle(config), oracle.VERSIONS


@st.composite
def drawn(draw, model_type: str) -> dict:
    heads = draw(st.integers(1, 4))
    patch = draw(st.sampled_from([2, 4, 8]))
    scale = draw(st.sampled_from([1, 2, 4]))
    side = scale * draw(st.integers(1, 3))  # patches per side, a multiple of the shuffle's
    vision = {
        "hidden_size": heads * draw(st.sampled_from([4, 8])),
        "intermediate_size": draw(st.integers(1, 40)),
        "num_hidden_layers": draw(st.integers(1, 3)),
        "num_attention_heads": heads,
        "patch_size": patch,
        "image_size": side * patch,
        "num_channels": draw(st.integers(1, 4)),
    }
    text = {**TEXT, "hidden_size": draw(st.sampled_from([16, 32, 48]))}
    config = {"model_type": model_type, "vision_config": vision, "text_config": text}
    if model_type in ("idefics3", "smolvlm"):
        config["scale_factor"] = scale
    else:
        config["downsample_ratio"] = 1 / scale
        vision |= {"use_qk_norm": draw(st.booleans()), "use_mean_pooling": draw(st.booleans())}
    return config


@pytest.mark.parametrize("model_type", ["internvl", "qianfan_ocr", "idefics3", "smolvlm"])
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data(), images=st.integers(1, 2))
def test_drawn_towers_match_flop_counter(model_type: str, data, images: int) -> None:
    config = data.draw(drawn(model_type))
    found = image_flops(read_config(config, f"drawn {model_type}"))
    assert images * found.per_image == image_oracle(config, images), f"{config} ({oracle.VERSIONS})"
    vision = config["vision_config"]
    scale = config.get("scale_factor") or round(1 / config["downsample_ratio"])
    assert found.image_tokens == (vision["image_size"] // vision["patch_size"] // scale) ** 2
