"""Towers and projectors of Granite Docling, BLIP-2, InstructBLIP, Fuyu, GOT-OCR 2 and the other composites of this
file's TOWERS: each part and the whole model against the model transformers builds for the composite config on the
meta device (every parameter, tied ones once), on the composite class's defaults and on drawn configs that vary the
tower; bad input refused naming the key."""

from __future__ import annotations

import json
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

# The module of transformers' model that holds each composite's tower (with what it holds of its connector): every
# other parameter besides the language model and its head is the projector's (None: no tower, Fuyu's patches are
# embedded by the projector alone).
TOWERS = {
    "granite_docling": "vision_model",
    "fuyu": None,
    "blip-2": "vision_model",
    "instructblip": "vision_model",
    "instructblipvideo": "vision_model",
    "got_ocr2": "vision_tower",
    "pp_chart2table": "vision_tower",
    "qianfan_ocr": "vision_tower",
    "minicpm_ocr": "vision_tower",
    "minicpmv4_6": "vision_tower",
    "minicpmv4_7": "vision_tower",
    "ovis2": "vision_tower",
}


@lru_cache(maxsize=128)
def _parts(frozen: str) -> dict[str, int]:

    config = json.loads(frozen)
    model_class = records.composite(config["model_type"]).model
    model = oracle.meta_model(config, model_class)
    module = TOWERS[config["model_type"]]
    return oracle.tower_split(model, [getattr(getattr(model, "model", model), module)] if module else [])


def transformers_parts(config: dict) -> dict[str, int]:
    """transformers' whole model of a composite config, its vision tower and the rest besides the language model."""
    return _parts(json.dumps(config, sort_keys=True))


def ours(config: dict) -> dict[str, int]:
    model = read_config(config, "test config")
    parts = {part.role: part.model.counts.total for part in model.parts}
    tower, projector = parts.get("vision tower", 0), parts.get("projector", 0)
    return {"whole": model.whole_total, "vision tower": tower, "projector": projector}


@pytest.mark.parametrize("model_type", sorted(TOWERS))
def test_counted_whole(model_type: str) -> None:
    assert records.composite(model_type).whole, model_type


@pytest.mark.parametrize("model_type", sorted(TOWERS))
def test_class_defaults(model_type: str) -> None:
    """The composite class's defaults (as to_dict writes them, and the bare model_type) as transformers builds them."""
    full = oracle.class_defaults(model_type)
    bare = {"model_type": model_type}
    assert ours(full) == transformers_parts(full), f"{model_type} ({oracle.VERSIONS})"
    assert ours(bare) == transformers_parts(bare) == transformers_parts(full), f"{model_type} ({oracle.VERSIONS})"


def _text(draw) -> dict:
    heads = draw(st.sampled_from([2, 4]))
    return {
        "num_hidden_layers": draw(st.integers(1, 2)),
        "hidden_size": heads * draw(st.sampled_from([8, 12, 16])),
        "num_attention_heads": heads,
        "num_key_value_heads": draw(st.sampled_from([1, 2])),
        "intermediate_size": draw(st.sampled_from([16, 40])),
        "vocab_size": draw(st.sampled_from([64, 96])),
    }


@st.composite
def drawn(draw, model_type: str) -> dict:
    """A composite config with a small language model and a drawn tower."""
    text = _text(draw)
    d = text["hidden_size"]
    config: dict = {"model_type": model_type, "text_config": text}
    if model_type == "granite_docling":
        vision = oracle.drawn_vit(draw, widths=(4, 8, 12), ffs=(8, 20, 36))
        patch = draw(st.sampled_from([2, 4, 8]))
        vision |= {
            "patch_size": draw(st.sampled_from([patch, [patch, patch]])),
            "image_size": patch * draw(st.sampled_from([4, 8])),
            "num_channels": draw(st.sampled_from([1, 3])),
            "out_hidden_size": d,
            "scale_factor": draw(st.sampled_from([1, 2, 4])),
            "deepstack_visual_indexes": draw(
                st.lists(st.integers(0, vision["num_hidden_layers"] - 1), max_size=3, unique=True)
            ),
            "use_fine_route": draw(st.booleans()),
        }
        config["vision_config"] = vision
        config["pad_token_id"] = text["pad_token_id"] = 0  # GraniteDoclingConfig's 100256 is beyond a small vocabulary
        if vision["use_fine_route"]:
            config["density_router_hidden_size"] = draw(st.sampled_from([None, 8, 24]))
        config["tie_word_embeddings"] = draw(st.booleans())
    elif model_type == "fuyu":
        config["patch_size"] = draw(st.sampled_from([2, 4, 30]))
        config["num_channels"] = draw(st.sampled_from([1, 3]))
        if draw(st.booleans()):  # written flat, as the released config.json is
            config |= config.pop("text_config")
    elif model_type in ("blip-2", "instructblip", "instructblipvideo"):
        text["word_embed_proj_dim"] = draw(st.sampled_from([d, 8]))  # OPT's projections in and out when it differs
        text["ffn_dim"] = text.pop("intermediate_size")
        patch = draw(st.sampled_from([2, 4, 14]))
        config["vision_config"] = {
            **oracle.drawn_vit(draw, widths=(4, 8, 12), ffs=(8, 20, 36)),
            "patch_size": draw(st.sampled_from([patch, [patch, patch]])),
            "image_size": draw(st.sampled_from([16, 28, 60])),
            "qkv_bias": draw(st.booleans()),
        }
        heads = draw(st.sampled_from([1, 2]))
        config["qformer_config"] = {
            "hidden_size": heads * draw(st.sampled_from([4, 8])),
            "num_attention_heads": heads,
            "num_hidden_layers": draw(st.integers(1, 4)),
            "intermediate_size": draw(st.sampled_from([8, 20])),
            "cross_attention_frequency": draw(st.integers(1, 3)),
            "vocab_size": draw(st.sampled_from([16, 40])),
            "max_position_embeddings": draw(st.sampled_from([8, 24])),
        }
        if model_type == "blip-2":
            config["qformer_config"]["use_qformer_text_input"] = draw(st.booleans())
        config["num_query_tokens"] = draw(st.integers(1, 8))
    elif model_type in ("got_ocr2", "pp_chart2table"):
        vision = oracle.drawn_vit(draw, widths=(4, 8, 12), ffs=(8, 20, 36))
        vision["mlp_dim"] = vision.pop("intermediate_size")
        layers = vision["num_hidden_layers"]
        # an empty global_attn_indexes is refused by name (its largest entry is read); a layer named twice is not drawn
        vision |= {
            "patch_size": draw(st.sampled_from([2, 4, 16])),
            "image_size": draw(st.sampled_from([16, 32, 64])),
            "num_channels": draw(st.sampled_from([1, 3])),
            "window_size": draw(st.sampled_from([0, 2, 3])),
            "global_attn_indexes": draw(st.lists(st.integers(0, layers - 1), min_size=1, max_size=2, unique=True)),
            "qkv_bias": draw(st.booleans()),
            "use_abs_pos": draw(st.booleans()),
            "use_rel_pos": draw(st.booleans()),
            "output_channels": draw(st.sampled_from([4, 8])),
        }
        config["vision_config"] = vision
        config["tie_word_embeddings"] = draw(st.booleans())
    elif model_type == "qianfan_ocr":  # InternVL's tower and projector with other defaults
        text["head_dim"] = draw(st.sampled_from([8, 16]))
        patch = draw(st.sampled_from([2, 4, 14]))
        image = draw(st.sampled_from([16, 28, 56]))
        config["vision_config"] = {
            **oracle.drawn_vit(draw, widths=(4, 8, 12), ffs=(8, 20, 36)),
            "patch_size": draw(st.sampled_from([patch, [patch, patch]])),
            "image_size": draw(st.sampled_from([image, [image, image]])),
            "num_channels": draw(st.sampled_from([1, 3])),
            "use_qk_norm": draw(st.booleans()),
            "norm_type": draw(st.sampled_from(["layer_norm", "rms_norm"])),
            "use_mean_pooling": draw(st.booleans()),
        }
        if draw(st.booleans()):  # absent: QianfanOCRVisionConfig's true
            config["vision_config"]["attention_bias"] = draw(st.booleans())
        config["downsample_ratio"] = draw(st.sampled_from([0.5, 0.25, 1.0]))
        config["tie_word_embeddings"] = draw(st.booleans())
    elif model_type in ("minicpm_ocr", "minicpmv4_6", "minicpmv4_7"):  # Qwen3.5's hybrid decoder, small
        text |= {"head_dim": 8, "linear_key_head_dim": 8, "linear_value_head_dim": 8}
        text |= {"linear_num_key_heads": 2, "linear_num_value_heads": 2, "num_hidden_layers": 4}
        patch = draw(st.sampled_from([2, 4, 14]))
        window = draw(st.sampled_from([1, 2, 3]))
        config["vision_config"] = {
            **oracle.drawn_vit(draw, widths=(4, 8, 12), ffs=(8, 20, 36)),
            "patch_size": draw(st.sampled_from([patch, [patch, patch]])),
            "image_size": draw(st.sampled_from([16, 28, 56])),
            "num_channels": draw(st.sampled_from([1, 3])),
            "window_kernel_size": [window, window],  # a pair (MiniCPMV4_6VisionConfig takes no integer)
        }
        config["merger_times"] = draw(st.integers(1, 3))
        config["tie_word_embeddings"] = draw(st.booleans())
    elif model_type == "ovis2":
        config["vision_config"] = {
            **oracle.drawn_vit(draw, widths=(4, 8, 12), ffs=(8, 20, 36)),
            "patch_size": draw(st.sampled_from([2, 4, 14])),
            "image_size": draw(st.sampled_from([16, 28, 56])),
            "num_channels": draw(st.sampled_from([1, 3])),
            "hidden_stride": draw(st.integers(1, 3)),
            "vocab_size": draw(st.sampled_from([8, 40])),
            "num_visual_indicator_tokens": draw(st.integers(1, 5)),
            "qkv_bias": draw(st.booleans()),
            "mlp_bias": draw(st.booleans()),
        }
        config["hidden_size"] = draw(st.sampled_from([d, 24]))  # the visual table's width (the top-level key)
        if config["hidden_size"] == d and draw(st.booleans()):  # an untied head of the language model's sizes
            config |= {"tie_word_embeddings": False, "vocab_size": text["vocab_size"]}
    return config


@pytest.mark.parametrize("model_type", sorted(TOWERS))
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn_towers(model_type: str, data) -> None:
    config = data.draw(drawn(model_type))
    oracle.assert_counted_as_built(config, transformers_parts, ours)
    lm = oracle.language_model_total(config, records.composite(model_type).model)
    assert read_config(config, "test config").counts.total == lm, oracle.VERSIONS


def test_granite_docling_router_by_hand() -> None:
    """A density router of 32 over a tower 768 wide: attention pooling 768 + 1, LayerNorm 2·768, fc1 768·32 + 32,
    fc2 32 + 1 = 26,946 parameters besides the language model and the tower."""
    config = {"model_type": "granite_docling", "density_router_hidden_size": 32}
    assert ours(config)["projector"] == 769 + 1536 + 768 * 32 + 32 + 33 == 26_946
    assert transformers_parts(config)["projector"] == 26_946, oracle.VERSIONS


def test_granite_docling_without_fine_route_router_is_refused_as_transformers_refuses() -> None:
    config = {"model_type": "granite_docling", "density_router_hidden_size": 32}
    config["vision_config"] = {"use_fine_route": False}
    with pytest.raises(oracle.TransformersRejected):
        transformers_parts(config)
    with pytest.raises(RuleRefusal, match="use_fine_route"):
        read_config(config, "test config")


# adept/fuyu-8b's config.json as published (written flat: the text keys at the top level).
FUYU_8B = {
    "architectures": ["FuyuForCausalLM"],
    "hidden_act": "relu2",
    "hidden_size": 4096,
    "intermediate_size": 16384,
    "layer_norm_eps": 1e-05,
    "max_position_embeddings": 16384,
    "model_type": "fuyu",
    "num_attention_heads": 64,
    "num_channels": 3,
    "num_hidden_layers": 36,
    "partial_rotary_factor": 0.5,
    "patch_size": 30,
    "qk_layernorm": True,
    "rope_theta": 25000.0,
    "tie_word_embeddings": False,
    "vocab_size": 262144,
}


def test_fuyu_8b_patch_embedding_by_hand() -> None:
    """Fuyu-8B embeds each 30 × 30 patch of 3 channels with one linear to 4096 and a bias: 2,700 · 4,096 + 4,096 =
    11,063,296 parameters, and no vision tower."""
    got = ours(FUYU_8B)
    assert got["projector"] == 30 * 30 * 3 * 4096 + 4096 == 11_063_296 and got["vision tower"] == 0
    assert got == transformers_parts(FUYU_8B), oracle.VERSIONS


def test_got_ocr2_global_layers_beyond_the_tower_are_refused() -> None:
    config = {"model_type": "got_ocr2", "vision_config": {"global_attn_indexes": [3, 12]}}
    with pytest.raises(RuleRefusal, match=r"global_attn_indexes names layer 12, not one of the num_hidden_layers"):
        read_config(config, "test config")


def test_a_global_layer_named_twice_is_one_layer_as_transformers_builds_it() -> None:
    """GotOcr2VisionLayer asks whether its index is in global_attn_indexes: a repeated index is still one layer."""
    config = {"model_type": "got_ocr2", "vision_config": {"global_attn_indexes": [2, 2, 5, 8, 11]}}
    assert ours(config) == transformers_parts(config)


def test_a_negative_global_layer_index_is_refused_by_name() -> None:
    """transformers never matches a negative index (no layer is global by it); llmcount refuses it naming the key."""
    config = {"model_type": "got_ocr2", "vision_config": {"global_attn_indexes": [-1, 5]}}
    with pytest.raises(LlmcountError, match="global_attn_indexes"):
        read_config(config, "test config")


@pytest.mark.parametrize("fmt", ["text", "markdown", "latex"])
def test_a_part_with_no_weights_for_its_config_shows_p_equals_zero(fmt) -> None:
    """Granite Docling's density router is built only with density_router_hidden_size (null by default): the
    projector part has no weights, and its formula says 0 rather than an empty right-hand side."""
    from typer.testing import CliRunner

    from llmcount.cli.app import app

    result = CliRunner().invoke(app, ["formula", "granite_docling", "--part", "projector", "--format", fmt])
    assert result.exit_code == 0
    first = next(line for line in result.output.splitlines() if "P" in line and "=" in line)
    assert first.rstrip(" \\").endswith("= 0"), first
