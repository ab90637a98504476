"""Multimodal composites counted whole with a record of their own language model (Kosmos-2 and the others of this
file's TOWERS): the language model, the vision tower, the projector and the whole model against the model
transformers builds for the composite config on the meta device (every parameter, tied ones once), on the composite
class's defaults and on a few drawn configs that vary the language model, the tower and the projector."""

from __future__ import annotations

import json
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

# The modules of transformers' model that hold each composite's vision tower: every other parameter besides the
# language model and its head is the projector's.
TOWERS = {
    "kosmos-2": ("vision_model",),
    "blip": ("vision_model",),
    "kosmos-2.5": ("vision_model",),
    "pix2struct": ("encoder",),
}


@lru_cache(maxsize=64)
def _parts(frozen: str) -> dict[str, int]:
    config = json.loads(frozen)
    model = oracle.meta_model(config, records.composite(config["model_type"]).model)
    inner = getattr(model, "model", model)
    parts = oracle.tower_split(model, [getattr(inner, name) for name in TOWERS[config["model_type"]]])
    parts["language model"] = parts["whole"] - parts["vision tower"] - parts["projector"]
    return parts


def transformers_parts(config: dict) -> dict[str, int]:
    """transformers' whole model of a composite config: the whole, its vision tower, its projector and the rest (the
    language model and its LM head)."""
    return _parts(json.dumps(config, sort_keys=True))


def ours(config: dict) -> dict[str, int]:
    model = read_config(config, "test config")
    parts = {part.role: part.model.counts.total for part in model.parts}
    return {
        "whole": model.whole_total,
        "vision tower": parts["vision tower"],
        "projector": parts.get("projector", 0),
        "language model": model.counts.total,
    }


@pytest.mark.parametrize("model_type", sorted(TOWERS))
def test_class_defaults(model_type: str) -> None:
    """The composite class's defaults: the bare model_type and every key as to_dict writes them."""
    bare = {"model_type": model_type}
    assert records.composite(model_type).whole, model_type
    assert ours(bare) == transformers_parts(bare), f"{model_type} ({oracle.VERSIONS})"
    full = oracle.class_defaults(model_type)
    assert ours(full) == transformers_parts(bare), f"{model_type} ({oracle.VERSIONS})"


@st.composite
def drawn(draw, model_type: str) -> dict:
    """A composite config with a small drawn language model (its record's own strategy) and a drawn tower."""
    text = draw(oracle.drawn_config(records.family(records.composite(model_type).text)))
    text.pop("model_type", None)
    config: dict = {"model_type": model_type, "text_config": text}
    if model_type == "kosmos-2":
        config["vision_config"] = oracle.drawn_vit(draw, layers=2) | {
            "patch_size": draw(st.sampled_from([2, 4, 14])),
            "image_size": draw(st.integers(8, 40)),  # not always a multiple of the patch: the convolution floors
            "num_channels": draw(st.sampled_from([1, 3])),
        }
        config["latent_query_num"] = draw(st.sampled_from([1, 5, 64]))
        config["tie_word_embeddings"] = draw(st.booleans())
    elif model_type == "kosmos-2.5":  # Pix2Struct's encoder: heads of head_dim, flattened patches of any width
        config["vision_config"] = oracle.drawn_vit(draw, layers=2) | {
            "head_dim": draw(st.sampled_from([2, 8])),
            "patch_embed_hidden_size": draw(st.sampled_from([3, 12])),
            "max_num_patches": draw(st.sampled_from([4, 16])),
        }
        config["latent_query_num"] = draw(st.sampled_from([1, 5]))
    elif model_type == "pix2struct":  # the image encoder: heads of d_kv, flattened patches of any width
        vision = oracle.drawn_vit(draw, layers=2)
        vision["d_ff"] = vision.pop("intermediate_size")
        config["vision_config"] = vision | {
            "d_kv": draw(st.sampled_from([2, 8])),
            "patch_embed_hidden_size": draw(st.sampled_from([3, 12])),
            "seq_len": draw(st.sampled_from([4, 16])),
        }
        config["tie_word_embeddings"] = draw(st.booleans())
    elif model_type == "blip":  # the text config's encoder_hidden_size is set to the tower's width whatever it says
        config["vision_config"] = oracle.drawn_vit(draw, layers=2) | {
            "patch_size": draw(st.sampled_from([2, 4, 16])),
            "image_size": draw(st.integers(8, 40)),
        }
        text["encoder_hidden_size"] = draw(st.sampled_from([8, 12]))
        config["tie_word_embeddings"] = draw(st.booleans())
    return config


@pytest.mark.parametrize("model_type", sorted(TOWERS))
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn(model_type: str, data) -> None:
    config = data.draw(drawn(model_type))
    oracle.assert_counted_as_built(config, transformers_parts, ours)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"model_type": "blip", "vision_config": {"hidden_size": "768"}},
            "'vision_config.hidden_size' must be a positive integer",
        ),
        (
            {"model_type": "blip", "vision_config": {"hidden_size": True}},
            "'vision_config.hidden_size' must be a positive integer",
        ),
        ({"model_type": "blip", "vision_config": [768]}, "'vision_config' must be a JSON object"),
        # the width is named where the config gives it, not where BlipConfig copies it (text_config's)
        ({"model_type": "blip", "vision_config": {"hidden_size": 0}}, "'vision_config.hidden_size' must be a"),
        ({"model_type": "blip", "vision_config": {"hidden_size": -5}}, "'vision_config.hidden_size' must be a"),
        # BlipVisionEmbeddings divides image_size by patch_size: a pair of sizes does not build
        ({"model_type": "blip", "vision_config": {"image_size": [384, 384]}}, "image_size"),
    ],
)
def test_bad_tower_widths_are_refused_naming_the_key(config: dict, message: str) -> None:
    """The width BlipConfig gives the text decoder's cross-attention from vision_config is checked as a size."""
    with pytest.raises(LlmcountError, match=message):
        read_config(config, "test config")


def test_blip_cross_attention_is_as_wide_as_the_tower() -> None:
    """BlipConfig sets text_config.encoder_hidden_size to vision_config.hidden_size, whatever text_config says: by
    hand, widening the tower from 16 to 20 widens the cross-attention key and value (d_vis to d = 8) of the 2 text
    layers by 2 · 2 · 4 · 8 = 128 parameters of the language model."""
    base = {
        "model_type": "blip",
        "text_config": {"num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 2, "encoder_hidden_size": 4},
        "vision_config": {"num_hidden_layers": 1, "hidden_size": 16, "num_attention_heads": 2},
    }
    wider = {**base, "vision_config": {**base["vision_config"], "hidden_size": 20}}
    ours_base, ours_wider = ours(base), ours(wider)
    assert ours_wider["language model"] - ours_base["language model"] == 128
    assert ours_base == transformers_parts(base) and ours_wider == transformers_parts(wider), oracle.VERSIONS
