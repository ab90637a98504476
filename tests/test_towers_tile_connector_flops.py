"""Forward FLOPs per image (``flops MODEL --images N``) of Llama 4's vision model and projector and the other towers
of this file, exact against torch's FlopCounterMode on transformers' whole model's forward: the same input_ids run
with ``pixel_values`` (and the image inputs the model takes) and without, the difference being the image's parts;
the image tokens are those the model's placeholder check takes. Small configs on the CPU (a real forward)."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import read_config
from llmcount.formulas.tower_flops import image_flops

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

import torch  # noqa: E402
import transformers  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402
from transformers import AutoConfig  # noqa: E402

GENERATE = [Phase.explicit, Phase.generate]
"""No shrinking: a failing example of a real forward is shown as drawn (shrinking would rebuild models for minutes)."""

IMAGE_TOKEN = 7
"""The image token id the small configs give their model (inside the small vocabularies)."""


def built(config: dict):
    """The composite's transformers model of ``config`` (eager attention, CPU, no gradients)."""
    made = AutoConfig.for_model(**config, attn_implementation="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(transformers, records.composite(config["model_type"]).model)._from_config(made)
    return model.eval().requires_grad_(False)


def counted(model, **inputs) -> int:
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(**inputs)
    return counter.get_total_flops()


def image_part(model, tokens: int, text: int = 3, **images) -> int:
    """FlopCounterMode's FLOPs of the image parts: the whole forward of ``text`` text tokens and ``tokens`` image
    tokens with the image inputs ``images``, less the same forward without them (the language model's share)."""
    ids = torch.tensor([[1] * text + [IMAGE_TOKEN] * tokens])
    text_only = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    return counted(model, **text_only, **images) - counted(model, **text_only)


# Llama 4 ----------------------------------------------------------------------------------------------------------

LLAMA4_TEXT = {
    "hidden_size": 32,
    "intermediate_size": 40,
    "intermediate_size_mlp": 48,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 16,
    "vocab_size": 300,
    "num_local_experts": 2,
}


@st.composite
def drawn_llama4(draw) -> dict:
    heads = draw(st.integers(1, 2))
    width = heads * draw(st.sampled_from([4, 8]))
    patch = draw(st.sampled_from([2, 4]))
    adapter = draw(st.sampled_from([8, 24]))
    vision = {
        "hidden_size": width,
        "intermediate_size": 4 * width,  # the shuffled patches' width, the adapter's input
        "num_hidden_layers": draw(st.integers(1, 2)),
        "num_attention_heads": heads,
        "patch_size": patch,
        "image_size": patch * 2 * draw(st.integers(1, 3)),  # patches per side, a multiple of the shuffle's 2
        "projector_input_dim": adapter,
        "projector_output_dim": adapter,
        "vision_output_dim": adapter,
        "pixel_shuffle_ratio": 0.5,
    }
    return {
        "model_type": "llama4",
        "text_config": LLAMA4_TEXT,
        "vision_config": vision,
        "image_token_index": IMAGE_TOKEN,
    }


def llama4_oracle(config: dict, tokens: int) -> int:
    """FlopCounterMode's FLOPs of Llama4ForConditionalGeneration's image path on one tile of the config's size: the
    vision model (get_image_features) and the projector over its flattened tokens, as its forward runs them (the
    forward itself ends on an attribute its output lacks in transformers 5.24.0); ``tokens`` image tokens are what
    its placeholder check takes for them."""
    model, size = built(config), config["vision_config"]["image_size"]
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        features = model.get_image_features(pixel_values=torch.ones(1, 3, size, size)).last_hidden_state
        projected = model.multi_modal_projector(features.view(-1, features.size(-1)))
    ids = torch.tensor([[1, *[IMAGE_TOKEN] * tokens]])
    model.get_placeholder_mask(ids, model.get_input_embeddings()(ids), projected)  # raises unless they match
    return counter.get_total_flops()


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, phases=GENERATE)
@given(config=drawn_llama4())
def test_drawn_llama4_matches_flop_counter(config: dict) -> None:
    found = image_flops(read_config(config, "drawn llama4"))
    vision = config["vision_config"]
    assert found.image_tokens == (vision["image_size"] // vision["patch_size"]) ** 2 // 4
    assert found.per_image == llama4_oracle(config, found.image_tokens), f"{config} ({oracle.VERSIONS})"


SCOUT_VISION = {
    "hidden_size": 1408,
    "image_size": 336,
    "intermediate_size": 5632,
    "num_attention_heads": 16,
    "num_hidden_layers": 34,
    "patch_size": 14,
    "pixel_shuffle_ratio": 0.5,
    "projector_input_dim": 4096,
    "projector_output_dim": 4096,
    "vision_output_dim": 4096,
}
"""The vision_config of meta-llama/Llama-4-Scout-17B-16E-Instruct's config.json."""


def test_llama4_scout_tile_by_hand() -> None:
    """Llama 4 Scout's vision model on one 336-pixel tile: 24² = 576 patches of 14, 577 tokens with the class token,
    34 layers of 1408 (MLP 5632); the pixel shuffle of ratio 1/2 folds the 576 patches into 144 tokens of 4 · 1408 =
    5632, the adapter's fc1 to 4096 and fc2, then the projector to the language model's 5120."""
    t, d, ff, n = 577, 1408, 5632, 144
    layer = 4 * 2 * t * d * d + 2 * 2 * t * t * d + 2 * 2 * t * d * ff
    by_hand = 2 * 576 * 3 * 14 * 14 * d + 34 * layer + 2 * n * ff * 4096 + 2 * n * 4096 * 4096 + 2 * n * 4096 * 5120
    config = {"model_type": "llama4", "vision_config": SCOUT_VISION, "text_config": {"hidden_size": 5120}}
    found = image_flops(read_config(config, "llama-4-scout"))
    assert (found.per_image, found.image_tokens) == (by_hand, 144)


def test_llama4_defaults_refused_by_width() -> None:
    """Llama4VisionConfig's defaults (hidden_size 768, intermediate_size 5632) make shuffled patches 3072 wide, which
    the adapter's fc1 (5632 in) cannot take: the forward fails, and the FLOPs are refused naming the keys."""
    with pytest.raises(LlmcountError, match="intermediate_size"):
        image_flops(read_config({"model_type": "llama4"}, "llama4"))


# Aya Vision and Command A Vision: SigLIP and a pixel-shuffle SwiGLU projector ---------------------------------------


@st.composite
def drawn_aya(draw, model_type: str) -> dict:
    patch, scale = draw(st.sampled_from([2, 4])), draw(st.sampled_from([1, 2]))
    vision = {
        **oracle.drawn_vit(draw, layers=2),
        "model_type": "siglip_vision_model",
        "patch_size": patch,
        "image_size": patch * scale * draw(st.integers(1, 3)),  # patches per side, a multiple of the shuffle's
        "vision_use_head": draw(st.booleans()),
    }
    text = {**oracle.SMALL_TEXT, "model_type": "cohere2", "hidden_size": draw(st.sampled_from([16, 32]))}
    return {
        "model_type": model_type,
        "vision_config": vision,
        "text_config": text,
        "downsample_factor": scale,
        "alignment_intermediate_size": 2 * draw(st.integers(2, 12)),
        "image_token_index" if model_type == "aya_vision" else "image_token_id": IMAGE_TOKEN,
    }


@pytest.mark.parametrize("model_type", ["aya_vision", "cohere2_vision"])
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, phases=GENERATE)
@given(data=st.data())
def test_drawn_aya_and_cohere2_vision_match_flop_counter(model_type: str, data) -> None:
    config = data.draw(drawn_aya(model_type))
    found = image_flops(read_config(config, f"drawn {model_type}"))
    vision = config["vision_config"]
    side = vision["image_size"] // vision["patch_size"] // config["downsample_factor"]
    assert found.image_tokens == side**2
    size = vision["image_size"]
    oracle_flops = image_part(built(config), found.image_tokens, pixel_values=torch.ones(1, 3, size, size))
    assert found.per_image == oracle_flops, f"{config} ({oracle.VERSIONS})"


AYA_VISION_8B = {
    "model_type": "aya_vision",
    "vision_config": {
        "model_type": "siglip_vision_model",
        "hidden_size": 1152,
        "image_size": 364,
        "intermediate_size": 4304,
        "num_attention_heads": 16,
        "num_hidden_layers": 27,
        "patch_size": 14,
        "vision_use_head": False,
    },
    "text_config": {"model_type": "cohere2", "hidden_size": 4096},
    "alignment_intermediate_size": 28672,
    "downsample_factor": 2,
}
"""The image parts of CohereLabs/aya-vision-8b's config.json."""


def test_aya_vision_8b_tile_by_hand() -> None:
    """Aya Vision 8B on one 364-pixel tile: 26² = 676 SigLIP patches of 14, 27 layers of 1152 (MLP 4304), no head;
    the pixel shuffle folds them into 169 tokens (Cohere's published 169 per tile) of 4 · 1152, linear_1 to 28672 and
    linear_2 from its half, 14336, to 4096."""
    t, d, ff = 676, 1152, 4304
    tower = 2 * t * 3 * 14 * 14 * d + 27 * (4 * 2 * t * d * d + 2 * 2 * t * t * d + 2 * 2 * t * d * ff)
    projector = 2 * 169 * 4 * d * 28672 + 2 * 169 * 14336 * 4096
    found = image_flops(read_config(AYA_VISION_8B, "aya-vision-8b"))
    assert (found.per_image, found.image_tokens) == (tower + projector, 169)


def test_aya_default_strategy_refused() -> None:
    """ "default" drops SigLIP's first patch, and 675 patches make no square: the forward fails, FLOPs are refused."""
    with pytest.raises(LlmcountError, match="vision_feature_select_strategy"):
        image_flops(read_config({**AYA_VISION_8B, "vision_feature_select_strategy": "default"}, "aya"))


# Idefics2: its SigLIP-shaped vision model and the perceiver connector ----------------------------------------------


@st.composite
def drawn_idefics2(draw) -> dict:
    patch = draw(st.sampled_from([2, 4]))
    vision = {**oracle.drawn_vit(draw, layers=2), "patch_size": patch, "image_size": patch * draw(st.integers(1, 3))}
    heads, kv = draw(st.sampled_from([(2, 1), (2, 2), (4, 2)]))
    perceiver = {
        "resampler_n_latents": draw(st.integers(1, 5)),
        "resampler_depth": draw(st.integers(1, 2)),
        "resampler_n_heads": heads,
        "resampler_head_dim": draw(st.sampled_from([4, 8])),
        "num_key_value_heads": kv,
    }
    text = {**oracle.SMALL_TEXT, "model_type": "mistral", "intermediate_size": draw(st.integers(8, 40))}
    return {
        "model_type": "idefics2",
        "vision_config": vision,
        "perceiver_config": perceiver,
        "text_config": text,
        "image_token_id": IMAGE_TOKEN,
    }


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, phases=GENERATE)
@given(config=drawn_idefics2())
def test_drawn_idefics2_matches_flop_counter(config: dict) -> None:
    found = image_flops(read_config(config, "drawn idefics2"))
    assert found.image_tokens == config["perceiver_config"]["resampler_n_latents"]
    size = config["vision_config"]["image_size"]
    pixels = torch.ones(1, 1, 3, size, size)  # one sample of one image
    assert found.per_image == image_part(built(config), found.image_tokens, pixel_values=pixels), oracle.VERSIONS


def test_idefics2_defaults_by_hand() -> None:
    """Idefics2Config's defaults: the vision model of 12 layers of 768 (MLP 3072) on 224 pixels in patches of 32, 49
    patches; the connector's gated MLP to the 14336 of MistralConfig's defaults and 4096, then 3 resampler layers of
    64 latents, 16 query and 4 key/value heads of 96, over the 49 patches and the latents."""
    t, d_vis, d, n = 49, 768, 4096, 64
    tower = 2 * t * 3 * 32 * 32 * d_vis + 12 * (4 * 2 * t * d_vis**2 + 2 * 2 * t * t * d_vis + 2 * 2 * t * d_vis * 3072)
    mlp = 2 * 2 * t * d_vis * 14336 + 2 * t * 14336 * d
    layer = 2 * n * d * 1536 + 2 * 2 * (t + n) * d * 384 + 2 * 2 * n * (t + n) * 1536 + 2 * n * 1536 * d
    layer += 2 * n * 3 * d * 4 * d
    found = image_flops(read_config({"model_type": "idefics2"}, "idefics2"))
    assert (found.per_image, found.image_tokens) == (tower + mlp + 3 * layer, 64)


# Llama 3.2 Vision (Mllama): the tiled vision model; its projector feeds cross-attention layers, refused -------------


def vision_tower(config: dict, name: str):
    """The vision tower part of ``config`` as llmcount reads it."""
    return next(part for part in read_config(config, name).parts if part.role == "vision tower")


@st.composite
def drawn_mllama(draw) -> dict:
    patch = draw(st.sampled_from([2, 4]))
    layers = draw(st.integers(1, 2))
    vision = {
        **oracle.drawn_vit(draw, layers=layers),
        "num_hidden_layers": layers,
        "num_global_layers": draw(st.integers(1, 2)),
        "patch_size": patch,
        "image_size": patch * draw(st.integers(1, 4)),
        "intermediate_layers_indices": [0],
    }
    tiles = draw(st.integers(1, 3))  # and the layouts of at most that many tiles
    ratios = [[rows, columns] for rows in range(1, tiles + 1) for columns in range(1, tiles // rows + 1)]
    vision |= {"max_num_tiles": tiles, "supported_aspect_ratios": ratios}
    vision |= {"attention_heads": vision.pop("num_attention_heads"), "vision_output_dim": 2 * vision["hidden_size"]}
    return {"model_type": "mllama", "vision_config": vision, "text_config": {**oracle.SMALL_TEXT, "pad_token_id": 0}}


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, phases=GENERATE)
@given(config=drawn_mllama())
def test_drawn_mllama_vision_matches_flop_counter(config: dict) -> None:
    """MllamaVisionModel on one image padded to max_num_tiles tiles (aspect ratio 1 × 1: one tile filled)."""
    from llmcount.formulas.tower_flops import part_flops

    part = vision_tower(config, "drawn mllama")
    found = sum(t.flops for t in part_flops(part.model, part.role, "drawn mllama"))
    vision = config["vision_config"]
    tiles, size = vision["max_num_tiles"], vision["image_size"]
    model = built(config).model.vision_model
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        states = model(
            pixel_values=torch.ones(1, 1, tiles, 3, size, size),
            aspect_ratio_ids=torch.ones(1, 1, dtype=torch.long),
            aspect_ratio_mask=torch.tensor([[[1] + [0] * (tiles - 1)]]),
        ).last_hidden_state
    assert found == counter.get_total_flops(), f"{config} ({oracle.VERSIONS})"
    tokens = part.model.architecture.image_tokens.subs({s: v for s, v in part.model.values.items()})
    assert tokens == states.shape[2] * states.shape[3]  # the vision states of the image: tiles × (patches + 1)


def test_mllama_vision_defaults_by_hand_and_projector_refused() -> None:
    """MllamaVisionConfig's defaults (Llama 3.2 11B Vision's tower): 4 tiles of 448 pixels in patches of 14, 1024
    patches and the class token, padded to 1032 tokens a tile, 4128 an image; 32 local and 8 global layers of 1280
    (MLP 5120) over all 4128, whose attention mask is the outer product of the tokens' mask (2 · 4128² FLOPs, a
    matmul). The projector feeds the cross-attention layers, which llmcount's text-only FLOPs of the
    language model leave out: FLOPs with images are refused naming them."""
    t = 4 * 1032
    layer = 4 * 2 * t * 1280**2 + 2 * 2 * t * t * 1280 + 2 * 2 * t * 1280 * 5120
    by_hand = 2 * 4 * 1024 * 3 * 14 * 14 * 1280 + 2 * t * t + 40 * layer
    from llmcount.formulas.tower_flops import part_flops

    part = vision_tower({"model_type": "mllama"}, "mllama")
    assert sum(t.flops for t in part_flops(part.model, part.role, "mllama")) == by_hand
    with pytest.raises(LlmcountError, match="cross-attention layers"):
        image_flops(read_config({"model_type": "mllama"}, "mllama"))


# GOT-OCR 2.0: SAM's ViT with windowed and global layers, its neck, and two strided convolutions -----------------------


@st.composite
def drawn_got_ocr2(draw) -> dict:
    patch, layers = draw(st.sampled_from([2, 4])), draw(st.integers(1, 3))
    vision = {
        **oracle.drawn_vit(draw, layers=layers),
        "num_hidden_layers": layers,
        "patch_size": patch,
        "image_size": patch * draw(st.integers(2, 7)),
        "window_size": draw(st.integers(1, 4)),
        "global_attn_indexes": draw(st.lists(st.integers(0, layers - 1), max_size=2, unique=True)),
        "use_rel_pos": draw(st.booleans()),
        "output_channels": draw(st.sampled_from([4, 8])),
    }
    vision["mlp_dim"] = vision.pop("intermediate_size")
    return {
        "model_type": "got_ocr2",
        "vision_config": vision,
        "text_config": {**oracle.SMALL_TEXT, "model_type": "qwen2"},
        "image_token_index": IMAGE_TOKEN,
    }


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, phases=GENERATE)
@given(config=drawn_got_ocr2())
def test_drawn_got_ocr2_matches_flop_counter(config: dict) -> None:
    found = image_flops(read_config(config, "drawn got_ocr2"))
    vision = config["vision_config"]
    side = vision["image_size"] // vision["patch_size"]
    assert found.image_tokens == ((side + 1) // 2 + 1) // 2 * (((side + 1) // 2 + 1) // 2)
    size = vision["image_size"]
    oracle_flops = image_part(built(config), found.image_tokens, pixel_values=torch.ones(1, 3, size, size))
    assert found.per_image == oracle_flops, f"{config} ({oracle.VERSIONS})"


def test_got_ocr2_defaults_give_its_published_256_tokens() -> None:
    """GotOcr2Config's defaults (GOT-OCR 2.0): a 1024-pixel page in patches of 16, a 64 × 64 grid, two convolutions
    of stride 2 to 16 × 16: the 256 image tokens the GOT paper gives per page."""
    assert image_flops(read_config({"model_type": "got_ocr2"}, "got_ocr2")).image_tokens == 256


def test_got_ocr2_unwindowed_refused_by_name() -> None:
    """window_size 0 makes every SAM layer global, which the record's FLOPs do not describe: refused naming it."""
    with pytest.raises(LlmcountError, match="window_size 0"):
        image_flops(read_config({"model_type": "got_ocr2", "vision_config": {"window_size": 0}}, "got_ocr2"))


# LightOnOCR: Pixtral at the image's own size (--image-size) and its patch-merger projection --------------------------

LIGHTON_OCR = {
    "model_type": "lighton_ocr",
    "text_config": {**oracle.SMALL_TEXT, "model_type": "qwen3"},
    "vision_config": {"model_type": "pixtral", "num_hidden_layers": 2, "hidden_size": 16, "num_attention_heads": 2}
    | {"intermediate_size": 12, "image_size": 64, "patch_size": 4, "head_dim": 8},
    "image_token_id": IMAGE_TOKEN,
}


@pytest.mark.parametrize(("height", "width", "tokens"), [(40, 28, 5 * 3), (22, 64, 2 * 8)])
def test_lighton_ocr_at_an_image_size_matches_flop_counter(height: int, width: int, tokens: int) -> None:
    """Pixtral on one image of height × width pixels, (H // 4) · (W // 4) patches, then the projection merging 2 × 2
    squares (a last odd row or column dropped): the whole forward, less the same text without the image."""
    found = image_flops(read_config(LIGHTON_OCR, "lighton_ocr"), (height, width))
    assert found.image_tokens == tokens
    pixels, sizes = torch.ones(1, 3, height, width), torch.tensor([[height, width]])
    oracle_flops = image_part(built(LIGHTON_OCR), tokens, pixel_values=pixels, image_sizes=sizes)
    assert found.per_image == oracle_flops, oracle.VERSIONS
