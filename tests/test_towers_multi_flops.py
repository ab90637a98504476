"""Forward FLOPs of the towers of multi-tower composites (``flops MODEL --images N --image-size HxW``): Gemma 4's vision
encoder with its pooler and embedder at an image size its config does not name, exact against torch's
FlopCounterMode on transformers' get_image_features (small models on the CPU: the encoder's bidirectional mask reads
its padding on the device), and by hand at Gemma4VisionConfig's defaults."""

from __future__ import annotations

import json
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcount.formulas.config import read_config
from llmcount.formulas.tower_flops import image_flops

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

TEXT = {
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 16,
    "vocab_size": 300,
    "vocab_size_per_layer_input": 300,
    "hidden_size_per_layer_input": 8,
}


def gemma4_image_oracle(config: dict, height: int, width: int) -> int:
    """FlopCounterMode's count of Gemma4Model.get_image_features (tower, pooler, embedder; eager) over one image of
    height × width pixels given as its (height / p) · (width / p) patches, unpadded, with their (x, y) positions."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoConfig, AutoModelForImageTextToText

    built = AutoConfig.for_model(**config, attn_implementation="eager")
    with warnings.catch_warnings(), torch.device("cpu"):
        warnings.simplefilter("ignore")
        model = AutoModelForImageTextToText.from_config(built).eval()
    patch = model.config.vision_config.patch_size
    rows, cols = height // patch, width // patch
    ys, xs = torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij")
    positions = torch.stack([xs.flatten(), ys.flatten()], -1)[None]
    pixels = torch.ones(1, rows * cols, 3 * patch * patch)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model.model.get_image_features(pixel_values=pixels, image_position_ids=positions)
    return counter.get_total_flops()


def test_gemma4_vision_defaults_at_768_pixels_by_hand() -> None:
    """Gemma4VisionConfig's defaults (16 layers of 768, 12 heads of 64 for queries, keys and values, MLP 3072, patches
    of 16, pooling 3 × 3) on a 768 × 768 image: 48² = 2304 patches, 256 pooled tokens, projected to the language
    model's 2304 (Gemma4TextConfig's hidden_size); the pooler's average a (256 × 2304) · (2304 × 768) matmul."""
    n, d, ff, t = 2304, 768, 3072, 256
    layer = 2 * n * d * 768 * 4 + 2 * 2 * n * n * 768 + 3 * 2 * n * d * ff
    per_image = 2 * n * 3 * 16**2 * d + 16 * layer + 2 * t * n * d + 2 * t * d * 2304
    config = {"model_type": "gemma4", "vision_config": {}}
    found = image_flops(read_config(config, "gemma4"), (768, 768))
    assert found.per_image == per_image == 961_233_813_504
    assert found.image_tokens == 256


@st.composite
def gemma4_image(draw) -> tuple[dict, int, int]:
    """A small Gemma 4 config with a vision encoder and an image of whole pooling squares of patches."""
    heads = draw(st.sampled_from([1, 2, 4]))
    patch, pool = draw(st.sampled_from([2, 4])), draw(st.sampled_from([2, 3]))
    vision = {
        "hidden_size": draw(st.sampled_from([8, 16])),
        "intermediate_size": draw(st.sampled_from([8, 20])),
        "num_hidden_layers": draw(st.integers(1, 2)),
        "num_attention_heads": heads,
        "num_key_value_heads": draw(st.sampled_from([h for h in (1, 2, 4) if heads % h == 0])),
        "head_dim": draw(st.sampled_from([4, 8])),
        "patch_size": patch,
        "pooling_kernel_size": pool,
    }
    config = {"model_type": "gemma4", "text_config": TEXT, "vision_config": vision}
    side = patch * pool
    return config, side * draw(st.integers(1, 3)), side * draw(st.integers(1, 3))


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(drawn=gemma4_image())
def test_drawn_gemma4_vision_flops_match_flop_counter(drawn) -> None:
    config, height, width = drawn
    found = image_flops(read_config(config, "test config"), (height, width))
    assert found.per_image == gemma4_image_oracle(config, height, width), f"{config} {height}x{width} {oracle.VERSIONS}"
    vision = config["vision_config"]
    patches = (height // vision["patch_size"]) * (width // vision["patch_size"])
    assert found.image_tokens == patches // vision["pooling_kernel_size"] ** 2


@pytest.mark.parametrize(
    ("config", "args", "message"),
    [
        (
            {"model_type": "gemma4", "vision_config": {}},
            ["--images", "1"],
            "takes images of any size and its config names none: give it with --image-size HxW",
        ),
        (
            {"model_type": "gemma4", "vision_config": {}},
            ["--images", "1", "--image-size", "760x768"],
            "must be multiples of patch_size · pooling_kernel_size (16 · 3)",
        ),
        (
            {"model_type": "gemma4", "vision_config": {"pooling_kernel_size": 1}},
            ["--images", "1", "--image-size", "64"],
            "pooling_kernel_size is 1: Gemma4VisionModel's pooler then skips its average",
        ),
        ({"model_type": "gemma4"}, ["--images", "1"], "FLOPs per image: the model has no vision tower"),
    ],
)
def test_gemma4_image_flops_refused_in_one_line(tmp_path, config: dict, args: list[str], message: str) -> None:
    from typer.testing import CliRunner

    from llmcount.cli.app import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = CliRunner().invoke(app, ["flops", str(path), *args])
    assert result.exit_code == 1 and result.stdout == "", result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr
