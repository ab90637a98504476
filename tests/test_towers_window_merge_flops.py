"""Forward FLOPs per image (``flops MODEL --images N --image-size HxW``) of the Qwen-style ViTs that take images of
any size (Qwen3.5, GLM-4.1V, GLM-OCR, ...), exact against torch's FlopCounterMode on transformers' own
``get_image_features`` (eager attention, on the CPU, tiny widths) with the patches of one image and its grid, on drawn
towers and image sizes; the image tokens against the features the model hands the language model; published
defaults by hand."""

from __future__ import annotations

import functools
import json
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

TEXT = {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1}
TEXT |= {"head_dim": 8, "intermediate_size": 8, "vocab_size": 64}
GLM_TEXT = {**TEXT, "hidden_size": 128, "num_attention_heads": 1, "head_dim": 128}  # GLM-4.1V counts heads of 128
GLM_TEXT["rope_parameters"] = {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [16, 24, 24]}  # 128 // 2
"""One-layer language models: the towers' FLOPs do not depend on them, but the composite class builds one."""

HY_TEXT = {"model_type": "hy_v4", "num_hidden_layers": 1, "hidden_size": 16, "intermediate_size": 24}
HY_TEXT |= {"moe_intermediate_size": 8, "num_attention_heads": 2, "q_lora_rank": 12, "kv_lora_rank": 8}
HY_TEXT |= {"qk_rope_head_dim": 4, "qk_nope_head_dim": 6, "v_head_dim": 10, "n_routed_experts": 4}
HY_TEXT |= {"num_experts_per_tok": 2, "index_n_heads": 3, "index_head_dim": 8, "index_topk": 4, "hc_mult": 3}
HY_TEXT |= {"vocab_size": 64, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
HY_TEXT["rope_parameters"] = {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [1, 1, 0]}  # 4 // 2

LFM3_TEXT = {**TEXT, "model_type": "lfm3", "num_hidden_layers": 3, "pad_token_id": 0}  # conv, conv, attention
PADDLE_ROPE = {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [2, 1, 1]}  # 8 // 2

COMPOSITES = {
    "qwen3_5": {"text_config": {**TEXT, "layer_types": ["full_attention"]}},
    "glm4v": {"text_config": GLM_TEXT},
    "glm_ocr": {"text_config": GLM_TEXT},
    "exaone4_5": {"text_config": {**TEXT, "model_type": "exaone4", "layer_types": ["full_attention"]}},
    "hy_v4_vl": {"text_config": HY_TEXT},
    "paddleocr_vl": {"text_config": {**TEXT, "model_type": "ernie4_5", "rope_parameters": PADDLE_ROPE}},
    "kimi_k25": {"text_config": {**TEXT, "model_type": "llama"}},
    "video_llama_3": {"text_config": {**TEXT, "model_type": "qwen2"}},
    "lfm3_vl": {"text_config": LFM3_TEXT, "projector_hidden_size": 12},
}
"""Each composite's small language model (its width is the tower's out_hidden_size)."""

VISION = {
    "exaone4_5": {"num_key_value_heads": 1, "window_size": 4, "fullatt_block_indexes": [1]},
    "kimi_k25": {"merge_kernel_size": [2, 2], "pos_emb_height": 4, "pos_emb_width": 4},
}
"""Keys a small tower needs besides the drawn ones (EXAONE 4.5's default key/value heads exceed its heads)."""
WHOLE = {"kimi_k25": {"projection_hidden_size": 16}}
"""Top-level keys of the whole forward's config (the projector's norm over the tower's width)."""

SIGLIP_KEYS = {"depth": "num_hidden_layers", "num_heads": "num_attention_heads", "in_channels": "num_channels"}
KIMI_KEYS = {**SIGLIP_KEYS, "spatial_merge_size": "merge_kernel_size"}
FLAT = {"hy_v4_vl": SIGLIP_KEYS, "paddleocr_vl": SIGLIP_KEYS, "kimi_k25": KIMI_KEYS, "video_llama_3": SIGLIP_KEYS}
"""Towers of 2-D patches (no temporal_patch_size), their config's names for depth, heads and channels."""
DROP = {
    "kimi_k25": ("num_channels", "out_hidden_size"),
    "video_llama_3": ("spatial_merge_size", "out_hidden_size"),
    "lfm3_vl": ("out_hidden_size",),
}
"""Keys a tower's config does not have (MoonViT: three channels; a projector to the language model's width)."""

INPUTS = {"video_llama_3": {"image_merge_sizes": torch.tensor([1])}}
"""Image inputs besides the pixels and the grid, as the processor gives them (VideoLLaMA3's merges none for images)."""


def tower_keys(model_type: str, vision: dict) -> dict:
    """``vision`` (Qwen's key names) in the names of ``model_type``'s tower config."""
    if model_type in FLAT:
        names = FLAT[model_type]
        vision = {names.get(key, key): value for key, value in vision.items() if key != "temporal_patch_size"}
    return {key: value for key, value in vision.items() if key not in DROP.get(model_type, ())}


PATCHES = {
    "paddleocr_vl": lambda vision: (vision.num_channels, vision.patch_size, vision.patch_size),
    "kimi_k25": lambda vision: (3, vision.patch_size, vision.patch_size),
}
"""The shape of one patch in ``pixel_values`` where it is not a row of C · p_t · p² values."""


@functools.lru_cache(maxsize=8)
def _built(frozen: str):
    config = json.loads(frozen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
        model_class = getattr(transformers, records.composite(config["model_type"]).model)
        model = model_class._from_config(cfg, attn_implementation="eager")
    return model.eval().requires_grad_(False)


def built(config: dict):
    """transformers' composite model of ``config``, eager, on the CPU (built once per config)."""
    return _built(json.dumps(config, sort_keys=True))


def pixels(model, patches: int) -> torch.Tensor:
    """``pixel_values`` of ``patches`` patches as the model's processor gives them: rows of C · p_t · p² values (one
    temporal patch), or patches of C × p × p."""
    vision = model.config.vision_config
    if model.config.model_type in PATCHES:
        return torch.zeros(patches, *PATCHES[model.config.model_type](vision))
    channels = getattr(vision, "in_channels", None) or vision.num_channels
    return torch.zeros(patches, channels * getattr(vision, "temporal_patch_size", 1) * vision.patch_size**2)


def features_oracle(config: dict, rows: int, cols: int) -> tuple[int, int]:
    """FlopCounterMode's count of the model's ``get_image_features`` over one image of rows × cols patches (one
    temporal patch: the processor's ``pixel_values`` rows of C · p_t · p² values and its ``image_grid_thw``), and the
    image features it hands the language model."""
    model = built(config)
    values, grid = pixels(model, rows * cols), torch.tensor([[1, rows, cols]])
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model.model.get_image_features(
            pixel_values=values, image_grid_thw=grid, **INPUTS.get(config["model_type"], {})
        )
    return counter.get_total_flops(), sum(len(features) for features in out.pooler_output)


@st.composite
def drawn_qwen_style(draw, model_type: str) -> tuple[dict, list[tuple[int, int]]]:
    """A small composite of a Qwen-style tower (width, depth, heads, patch, temporal patch, merge, channels drawn)
    and two images of whole merged squares (rows × cols patches)."""
    heads = draw(st.sampled_from([1, 2]))
    patch, merge = draw(st.sampled_from([2, 3])), draw(st.sampled_from([1, 2]))
    config = {"model_type": model_type, **COMPOSITES[model_type]}
    vision = {
        "depth": draw(st.integers(1, 2)),
        "hidden_size": heads * draw(st.sampled_from([4, 8])),
        "num_heads": heads,
        "intermediate_size": draw(st.sampled_from([8, 20])),
        "patch_size": patch,
        "temporal_patch_size": draw(st.sampled_from([1, 2])),
        "spatial_merge_size": merge,
        "in_channels": draw(st.sampled_from([1, 3])),
        "out_hidden_size": config["text_config"]["hidden_size"],
    }
    if model_type == "glm4v":  # the learned position table's side, resampled to each image's grid
        vision["image_size"] = patch * draw(st.integers(1, 4))
    if model_type == "exaone4_5":  # Qwen2.5-VL's windows, grouped key/value heads
        vision["window_size"] = patch * merge * draw(st.integers(1, 3)) + draw(st.sampled_from([0, 1]))
        vision["fullatt_block_indexes"] = draw(st.lists(st.integers(-1, 2), max_size=2))
        vision["num_key_value_heads"] = draw(st.sampled_from([h for h in (1, 2) if heads % h == 0]))
    vision = tower_keys(model_type, vision)
    if model_type == "lfm3_vl":  # convolution and grouped-query attention layers
        vision = {
            "num_hidden_layers" if key == "depth" else "num_attention_heads" if key == "num_heads" else key: value
            for key, value in vision.items()
        }
        vision["num_key_value_heads"] = draw(st.sampled_from([h for h in (1, 2) if heads % h == 0]))
        vision["conv_kernel_size"] = draw(st.sampled_from([1, 3, 5]))
        kinds = st.sampled_from(["conv", "attention"])
        vision["layer_types"] = [draw(kinds) for _ in range(vision["num_hidden_layers"])]
    if model_type == "hy_v4_vl":  # the position table's side
        vision["max_image_size"] = patch * draw(st.integers(1, 4))
    if model_type == "paddleocr_vl":
        vision["image_size"] = patch * draw(st.integers(1, 4))
    if model_type == "kimi_k25":  # three colour channels; the position grid's sides; the projector's norm width
        vision["merge_kernel_size"] = [merge, merge]
        side = draw(st.integers(4, 6))  # a square grid: the resampling reads pos_emb_height as its side
        vision |= {"pos_emb_height": side, "pos_emb_width": side}
        config["projection_hidden_size"] = vision["hidden_size"]
    if model_type == "qwen3_5":
        vision["num_position_embeddings"] = draw(st.sampled_from([4, 16]))
    config["vision_config"] = vision
    grids = [(merge * draw(st.integers(1, 4)), merge * draw(st.integers(1, 4))) for _ in range(2)]
    return config, grids


@pytest.mark.parametrize("model_type", sorted(COMPOSITES))
@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_qwen_style_flops_per_image_match_flop_counter(model_type: str, data) -> None:
    config, grids = data.draw(drawn_qwen_style(model_type))
    patch = config["vision_config"]["patch_size"]
    model = read_config(config, f"drawn {model_type}")
    for rows, cols in grids:
        found = image_flops(model, (rows * patch, cols * patch))
        flops, tokens = features_oracle(config, rows, cols)
        assert (found.per_image, found.image_tokens) == (flops, tokens), f"{config} {rows}x{cols} ({oracle.VERSIONS})"


def test_glm4v_defaults_at_448_pixels_by_hand() -> None:
    """Glm4vConfig's defaults (GLM-4.1V-9B's ViT: 24 layers of 1536, a gated MLP of out_hidden_size 4096, patches of
    14, merges of 2) at 448 × 448: 32 × 32 = 1024 patches, 16 × 16 = 256 image tokens. Per layer qkv 2·1024·3·1536²,
    proj 2·1024·1536², scores and values 4·1024²·1536, the MLP 3 · 2·1024·1536·4096; the patch convolution
    2·1024·3·2·14²·1536, the downsampling convolution 2·1024·1536·4096 and the merger's linear 2·256·4096² and gated
    MLP of 13696, 3 · 2·256·4096·13696."""
    n, d, d_out, d_ff = 1024, 1536, 4096, 13696
    layer = 2 * n * 3 * d * d + 2 * n * d * d + 4 * n * n * d + 3 * 2 * n * d * d_out
    edges = 2 * n * 3 * 2 * 14**2 * d + 2 * n * d * d_out + 2 * 256 * d_out**2 + 3 * 2 * 256 * d_out * d_ff
    found = image_flops(read_config({"model_type": "glm4v"}, "glm4v"), (448, 448))
    assert found.per_image == 24 * layer + edges
    assert found.image_tokens == 256


TOKEN_IDS = {"image_token_id": 60, "video_token_id": 61, "vision_start_token_id": 62, "vision_end_token_id": 63}
TOKEN_IDS |= {"image_start_token_id": 62, "image_end_token_id": 63}
TOKEN_IDS |= {"video_start_token_id": 58, "video_end_token_id": 59}
"""Special tokens inside the small vocabulary (the classes' defaults lie beyond it)."""


def run(*args: str):
    from typer.testing import CliRunner

    from llmcount.cli.app import app

    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("model_type", sorted(set(COMPOSITES) - {"hy_v4_vl", "video_llama_3", "lfm3_vl"}))
def test_whole_forward_with_an_image_matches_flop_counter(tmp_path, model_type: str) -> None:
    """The whole model over an image of 8 × 12 pixels (4 × 6 patches of 2, 2 × 3 image tokens) between its start and
    end tokens and 3 text tokens: the tower once, the language model over the 11 tokens (M-RoPE's positions cost no
    matmul), as one forward of transformers' model counts it and as ``flops --images 1 --image-size 8x12 --seq 5``
    prints it."""
    text = COMPOSITES[model_type]["text_config"]
    vision = {"depth": 2, "hidden_size": 16, "num_heads": 2, "intermediate_size": 20, "patch_size": 2}
    vision |= {"temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": text["hidden_size"]}
    vision = tower_keys(model_type, vision) | VISION.get(model_type, {})
    config = {"model_type": model_type, "text_config": text, "vision_config": vision, **TOKEN_IDS}
    config |= WHOLE.get(model_type, {})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("flops", str(path), "--images", "1", "--image-size", "8x12", "--seq", "5", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["seq"] == 11 and data["images"]["image_tokens_per_image"] == 6
    model = built(config)
    ids = torch.tensor([[1, 62, *[60] * 6, 63, 2, 3]])
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "mm_token_type_ids": (ids == 60).long()}
    inputs |= {"pixel_values": pixels(model, 24), "image_grid_thw": torch.tensor([[1, 4, 6]])}
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(**inputs)
    assert data["whole_forward_flops"] == counter.get_total_flops(), oracle.VERSIONS


@pytest.mark.parametrize(
    ("config", "args", "message"),
    [
        (
            {"model_type": "lfm2_vl"},
            ["--images", "1"],
            "the SigLIP2 NaFlex vision tower (siglip2_vision_model) runs on the patches its processor cuts",
        ),
        ({"model_type": "glm4v"}, ["--images", "1"], "takes images of any size and its config names none"),
        (
            {"model_type": "glm4v"},
            ["--images", "1", "--image-size", "450"],
            "must be multiples of patch_size · spatial_merge_size (14 · 2)",
        ),
        (
            {"model_type": "lfm3_vl", "vision_config": {"conv_kernel_size": 4}},
            ["--images", "1", "--image-size", "448"],
            "conv_kernel_size (4) is even",
        ),
    ],
)
def test_image_flops_refused_in_one_line(tmp_path, config: dict, args: list[str], message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("flops", str(path), *args)
    assert result.exit_code == 1 and result.stdout == "", result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
