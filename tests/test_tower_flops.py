"""Forward FLOPs of the image parts of composite models (``flops MODEL --images N``) against the oracle: torch's
FlopCounterMode on transformers' own model, the vision tower and projector run on ``pixel_values`` of the config's
image size, and the whole model run on text and image tokens together."""

from __future__ import annotations

import json

import gemma3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcount.formulas import records
from llmcount.formulas.config import read_config
from llmcount.formulas.tower_flops import image_flops, part_flops

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

import torch  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402
from transformers import AutoConfig  # noqa: E402

TEXT = dict(oracle.SMALL_TEXT)


def _model(config: dict, device: str):
    from transformers import AutoModelForImageTextToText

    built = AutoConfig.for_model(**config, attn_implementation="eager")
    with torch.device(device):
        return AutoModelForImageTextToText.from_config(built).eval()


def image_oracle(config: dict, images: int = 1) -> int:
    """FLOPs FlopCounterMode counts when transformers' model turns ``images`` images of the config's size into the
    language model's input (vision tower + projector: ``get_image_features``), on the meta device."""
    model = _model(config, "meta")
    vision = model.config.vision_config
    size = vision.image_size
    pixels = torch.ones(images, vision.num_channels, size, size, device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model.model.get_image_features(pixel_values=pixels)
    return counter.get_total_flops()


def whole_oracle(config: dict, seq: int, images: int, tokens: int) -> int:
    """FLOPs of one forward pass of the whole model (CPU, small config): ``images`` images whose ``tokens`` image
    tokens each stand first in the sequence, then ``seq`` text tokens."""
    model = _model(config, "cpu")
    vision, image_token = model.config.vision_config, model.config.image_token_id
    ids = torch.cat([torch.full((1, images * tokens), image_token), torch.arange(1, seq + 1)[None]], 1)
    pixels = torch.ones(images, vision.num_channels, vision.image_size, vision.image_size)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(input_ids=ids, pixel_values=pixels, attention_mask=torch.ones_like(ids))
    return counter.get_total_flops()


GEMMA3_27B = {"model_type": "gemma3", "mm_tokens_per_image": 256, "vision_config": gemma3.VISION_CONFIG}


def test_gemma3_siglip_per_image_by_hand_and_oracle() -> None:
    """google/gemma-3-27b-it's SigLIP at 896 pixels, patches of 14: (896 // 14)² = 4096 patches of 1152, 27 layers.
    By hand: the patch convolution 2·4096·3·14²·1152; per layer q, k, v, out 4 · 2·4096·1152², scores and values
    2 · 2·4096²·1152, MLP 2 · 2·4096·1152·4304; the projector 2·256·1152·d (d = 2304, gemma3_text's default)."""
    n, d_vis, ff, d = 4096, 1152, 4304, 2304
    layer = 4 * 2 * n * d_vis**2 + 2 * 2 * n * n * d_vis + 2 * 2 * n * d_vis * ff
    by_hand = 2 * n * 3 * 14 * 14 * d_vis + 27 * layer + 2 * 256 * d_vis * d
    found = image_flops(read_config(GEMMA3_27B, "gemma-3"))
    assert found.per_image == by_hand
    assert found.image_tokens == 256
    assert found.per_image == image_oracle(GEMMA3_27B), oracle.VERSIONS


@st.composite
def drawn_gemma3(draw) -> dict:
    heads = draw(st.integers(1, 4))
    patch = draw(st.sampled_from([2, 4, 8]))
    side = draw(st.sampled_from([1, 2, 4]))  # pooled tokens per side
    grid = side * draw(st.integers(1, 3))  # patches per side, a multiple of the pooled side
    vision = {
        "model_type": "siglip_vision_model",
        "hidden_size": heads * draw(st.sampled_from([4, 8])),
        "intermediate_size": draw(st.integers(1, 40)),
        "num_hidden_layers": draw(st.integers(1, 3)),
        "num_attention_heads": heads,
        "patch_size": patch,
        "image_size": grid * patch + draw(st.integers(0, patch - 1)),  # a remainder the convolution drops
        "num_channels": draw(st.integers(1, 4)),
        "vision_use_head": draw(st.booleans()),
    }
    text = {**TEXT, "hidden_size": draw(st.sampled_from([16, 32, 48]))}
    return {"model_type": "gemma3", "mm_tokens_per_image": side * side, "vision_config": vision, "text_config": text}


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(config=drawn_gemma3(), images=st.integers(1, 3))
def test_drawn_gemma3_towers_match_flop_counter(config: dict, images: int) -> None:
    found = image_flops(read_config(config, "drawn gemma3"))
    assert images * found.per_image == image_oracle(config, images), f"{config} ({oracle.VERSIONS})"
    assert found.image_tokens == config["mm_tokens_per_image"]


def tower_oracle(vision: dict) -> int:
    """FLOPs FlopCounterMode counts in the vision tower alone (``AutoModel`` of the vision config: CLIPVisionModel,
    SiglipVisionModel) over one image of the config's size, on the meta device."""
    from transformers import AutoModel

    built = AutoConfig.for_model(**vision, attn_implementation="eager")
    with torch.device("meta"):
        model = AutoModel.from_config(built).eval()
    pixels = torch.ones(1, built.num_channels, built.image_size, built.image_size, device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(pixel_values=pixels)
    return counter.get_total_flops()


def tower_ours(vision: dict) -> int:
    tower = read_config(vision, "vision_config", "tower", records.tower(vision["model_type"]))
    return sum(t.flops for t in part_flops(tower, "vision tower", "tower"))


@st.composite
def drawn_vit(draw, model_type: str) -> dict:
    heads, patch = draw(st.integers(1, 4)), draw(st.sampled_from([2, 4, 8]))
    return {
        "model_type": model_type,
        "hidden_size": heads * draw(st.sampled_from([4, 8])),
        "intermediate_size": draw(st.integers(1, 40)),
        "num_hidden_layers": draw(st.integers(1, 3)),
        "num_attention_heads": heads,
        "patch_size": patch,
        "image_size": patch * draw(st.integers(1, 5)) + draw(st.integers(0, patch - 1)),
        "num_channels": draw(st.integers(1, 4)),
    }


def test_clip_vit_l_336_by_hand_and_oracle() -> None:
    """LLaVA-1.5's CLIP ViT-L/14 at 336 pixels: (336 // 14)² = 576 patches and the class token, 577 tokens of 1024,
    24 layers. By hand: the patch convolution 2·576·3·14²·1024 (the class token is no convolution); per layer q, k,
    v, out 4 · 2·577·1024², scores and values 2 · 2·577²·1024, MLP 2 · 2·577·1024·4096."""
    vision = {
        "model_type": "clip_vision_model",
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "patch_size": 14,
        "image_size": 336,
    }
    t = 577
    layer = 4 * 2 * t * 1024**2 + 2 * 2 * t * t * 1024 + 2 * 2 * t * 1024 * 4096
    assert tower_ours(vision) == 2 * 576 * 3 * 14 * 14 * 1024 + 24 * layer == tower_oracle(vision), oracle.VERSIONS


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(vision=drawn_vit("clip_vision_model"))
def test_drawn_clip_towers_match_flop_counter(vision: dict) -> None:
    assert tower_ours(vision) == tower_oracle(vision), f"{vision} ({oracle.VERSIONS})"


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(vision=drawn_vit("siglip_vision_model"), head=st.booleans())
def test_drawn_siglip_towers_match_flop_counter(vision: dict, head: bool) -> None:
    vision = {**vision, "vision_use_head": head}
    assert tower_ours(vision) == tower_oracle(vision), f"{vision} ({oracle.VERSIONS})"


def run(*args: str):
    from typer.testing import CliRunner

    from llmcount.cli import app

    return CliRunner().invoke(app, list(args))


TINY = {
    "model_type": "gemma3",
    "mm_tokens_per_image": 4,
    "image_token_index": 299,
    "vision_config": {
        "model_type": "siglip_vision_model",
        "hidden_size": 32,
        "intermediate_size": 40,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "image_size": 32,
        "patch_size": 8,
        "vision_use_head": False,
    },
    "text_config": TEXT,
}


@pytest.mark.parametrize(("seq", "images"), [(10, 1), (7, 3)])
def test_whole_forward_with_images_matches_flop_counter(tmp_path, seq: int, images: int) -> None:
    """The whole model over S text tokens and N images: the tower and projector N times, the language model over
    S + N · mm_tokens_per_image tokens, as one forward of transformers' model counts it."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    result = run("flops", str(path), "--images", str(images), "--seq", str(seq), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["seq"] == seq + images * 4 and data["text_tokens"] == seq
    assert data["images"]["image_tokens_per_image"] == 4
    assert data["images"]["per_image_formula"].count("n_patch") >= 1
    assert data["images"]["image_flops"] == images * data["images"]["per_image_flops"]
    assert data["whole_forward_flops"] == data["forward_flops"] + data["images"]["image_flops"]
    assert data["whole_forward_flops"] == whole_oracle(TINY, seq, images, 4), oracle.VERSIONS
    text = run("flops", str(path), "--images", str(images), "--seq", str(seq)).output
    assert "per image:" in text and "image tokens per image entering the language model: 4" in text
    assert f"{data['whole_forward_flops']:,}" in text


@pytest.mark.parametrize(
    ("config", "args", "message"),
    [
        (TINY, ["--images", "-1"], "--images must be a positive integer"),
        (TINY, ["--images", "0"], "--images"),
        (TINY, ["--images", "1.5"], "--images must be a positive integer"),
        (TINY, ["--images", "two"], "--images must be a positive integer"),
        (TINY, ["--images", "1000001"], "--images must be at most 1,000,000"),
        (TINY, ["--images", "9" * 400], "--images"),
        (TINY, ["--images", "1", "--conventions"], "--images with flops"),
        ("llama-3-8b", ["--images", "1"], "FLOPs per image: the model has no vision tower"),
        ({"model_type": "gemma3n"}, ["--images", "1"], "FLOPs per image: llmcount does not count its vision tower"),
        (
            {"model_type": "ovis2"},
            ["--images", "1"],
            "FLOPs per image: no formula for the Ovis2 vision tower (AIMv2-style ViT and visual head) (ovis2_vision)",
        ),
        ({"model_type": "mllama"}, ["--images", "1"], "(mllama_projector) feeds the language model's cross-attention"),
    ],
)
def test_bad_images_are_refused_in_one_line(tmp_path, config: dict | str, args: list[str], message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("flops", config if isinstance(config, str) else str(path), *args)
    assert result.exit_code in (1, 2) and result.stdout == "", result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_the_image_lines_fit_80_columns_and_read_as_the_other_formulas() -> None:
    """Gemma 3 27B's per-image formula is longer than a line: it wraps within 80 columns, written with · and ² as
    every other formula of the CLI (not Python's * and **)."""
    result = run("flops", "gemma-3-27b-it", "--images", "1")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    images = result.stdout[result.stdout.index("Images (") :]
    assert "**" not in images and "*" not in images.replace("×", "")
    assert "per image: 5,463,563,304,960 FLOPs = 2·C_img·d_vis·n_patch·p_vis²" in images
