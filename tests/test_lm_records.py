"""Multimodal types counted whole with records of this file's PARTS (Emu3 with its VQ-VAE image tokenizer, ...): the
language model, each tower and the whole model against the model transformers builds for the composite config on the
meta device (every parameter, tied ones once), on the composite class's defaults and on a few drawn configs that vary
the language model and the towers; bad input refused naming the key."""

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

# The modules of transformers' model (``model.model``) that hold each part besides the language model, by its role.
PARTS = {
    "chameleon": {"vq tower": ("vqmodel",)},
    "emu3": {"vq tower": ("vqmodel",)},
    "glm_ocr": {"vision tower": ("visual",)},
}

# Composite classes whose defaults contradict themselves, refused naming the key (GlmOcrConfig's vision tower puts out
# 1536-wide image features, its text model is 1024 wide: GLM-OCR as released is 1536 wide), and what makes them one
# model.
CONTRADICTORY = {
    "glm_ocr": ("out_hidden_size", {"text_config": {"hidden_size": 1536}}),
}


@lru_cache(maxsize=64)
def _parts(frozen: str) -> dict[str, int]:
    config = json.loads(frozen)
    model_type = config["model_type"]
    model = oracle.meta_model(config, records.composite(model_type).model)
    inner = getattr(model, "model", model)
    whole = sum(p.numel() for p in model.parameters())
    out = {"whole": whole}
    for role, modules in PARTS[model_type].items():
        out[role] = sum(p.numel() for name in modules for p in getattr(inner, name).parameters())
    out["language model"] = whole - sum(out[role] for role in PARTS[model_type])
    return out


def transformers_parts(config: dict) -> dict[str, int]:
    """transformers' whole model of a composite config: the whole, each part and the rest (the language model and its
    LM head)."""
    return _parts(json.dumps(config, sort_keys=True))


def ours(config: dict) -> dict[str, int]:
    model = read_config(config, "test config")
    out = {"whole": model.whole_total, "language model": model.counts.total}
    out |= {part.role: part.model.counts.total for part in model.parts}
    return out


@pytest.mark.parametrize("model_type", sorted(PARTS))
def test_class_defaults(model_type: str) -> None:
    """The composite class's defaults: the bare model_type, and every key as to_dict writes them."""
    bare = {"model_type": model_type}
    full = oracle.class_defaults(model_type)
    assert records.composite(model_type).whole, model_type
    if model_type in CONTRADICTORY:
        key, fix = CONTRADICTORY[model_type]
        for config in (bare, full):
            with pytest.raises(RuleRefusal, match=key):
                read_config(config, "test config")
        bare = {**bare, **fix}
        full = {**full, **{k: {**full[k], **v} for k, v in fix.items()}}
    assert ours(bare) == transformers_parts(bare), f"{model_type} ({oracle.VERSIONS})"
    assert ours(full) == transformers_parts(bare), f"{model_type} ({oracle.VERSIONS})"


def _vq_emu3(draw) -> dict:
    """A small Emu3 VQ-VAE: one to three resolutions of 32 or 64 base channels, attention at some of them."""
    resolutions = draw(st.integers(1, 3))
    heads = draw(st.sampled_from([1, 2, 3]))
    return {
        "channel_multiplier": draw(st.lists(st.integers(1, 3), min_size=resolutions, max_size=resolutions)),
        "attn_resolutions": draw(st.lists(st.integers(0, 3), max_size=2)),
        "base_channels": draw(st.sampled_from([32, 64])),
        "num_res_blocks": draw(st.integers(1, 2)),
        "temporal_downsample_factor": draw(st.sampled_from([1, 2, 4, 6])),
        "hidden_size": heads * draw(st.sampled_from([4, 8])),
        "num_attention_heads": heads,
        "latent_channels": draw(st.integers(1, 6)),
        "embed_dim": draw(st.integers(1, 6)),
        "codebook_size": draw(st.integers(1, 40)),
        "double_latent": draw(st.booleans()),
        "in_channels": draw(st.sampled_from([1, 3])),
        "out_channels": draw(st.sampled_from([1, 3])),
    }


def _vq_chameleon(draw) -> dict:
    """A small Chameleon VQ-VAE encoder: one to three resolutions of 32 or 64 base channels, attention at some sizes."""
    resolutions = draw(st.integers(1, 3))
    return {
        "channel_multiplier": draw(st.lists(st.integers(1, 3), min_size=resolutions, max_size=resolutions)),
        "resolution": draw(st.sampled_from([16, 24, 7])),
        "attn_resolutions": draw(st.sampled_from([None, [], [16], [8, 24], [12, 3, 7]])),
        "attn_type": draw(st.sampled_from(["vanilla", "none"])),
        "base_channels": draw(st.sampled_from([32, 64])),
        "num_res_blocks": draw(st.integers(1, 2)),
        "latent_channels": draw(st.integers(1, 6)),
        "embed_dim": draw(st.integers(1, 6)),
        "num_embeddings": draw(st.integers(1, 40)),
        "double_latent": draw(st.booleans()),
        "in_channels": draw(st.sampled_from([1, 3])),
    }


@st.composite
def drawn(draw, model_type: str) -> dict:
    """A composite config with a small drawn language model (its record's own strategy) and drawn towers."""
    text = draw(oracle.drawn_config(records.family(records.composite(model_type).text)))
    text.pop("model_type", None)
    config: dict = {"model_type": model_type, "text_config": text}
    if model_type == "chameleon":  # a flat config: ChameleonConfig is the text config, vq_config nested in it
        config = {**text, "model_type": model_type, "vq_config": _vq_chameleon(draw)}
    elif model_type == "emu3":
        config["vq_config"] = _vq_emu3(draw)
    elif model_type == "glm_ocr":  # the merger's output as wide as the language model, as GLM-OCR runs
        vision = oracle.drawn_vit(draw, layers=2)
        config["vision_config"] = {
            "depth": vision["num_hidden_layers"],
            "hidden_size": vision["hidden_size"],
            "num_heads": vision["num_attention_heads"],
            "intermediate_size": vision["intermediate_size"],
            "out_hidden_size": text.get("hidden_size", 1024),
            "patch_size": draw(st.sampled_from([2, 14])),
            "temporal_patch_size": draw(st.sampled_from([1, 2])),
            "spatial_merge_size": draw(st.sampled_from([1, 2])),
            "in_channels": draw(st.sampled_from([1, 3])),
            "attention_bias": draw(st.booleans()),
        }
        if draw(st.booleans()):  # GlmOcrTextAttention reads no attention_bias: none of its projections has a bias
            text["attention_bias"] = True
        if draw(st.booleans()):  # null: heads of hidden_size // num_attention_heads, as when it is absent
            text["head_dim"] = None
    return config


@pytest.mark.parametrize("model_type", sorted(PARTS))
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn(model_type: str, data) -> None:
    config = data.draw(drawn(model_type))
    oracle.assert_counted_as_built(config, transformers_parts, ours)


def test_emu3_vq_tower_by_hand() -> None:
    """One resolution of 32 channels (multiplier 1), one ResNet block, no attention but the middle's (width 8), one
    latent channel and code of 1, a codebook of 2, temporal factor 1 (no temporal convolution), one input and output
    channel. By hand: encoder conv_in 9·1·32 + 32 = 320; its block (32 to 32: two GroupNorms of 64, two convolutions
    of 9·32² + 32) 2 · 64 + 2 · 9,248 = 18,624; middle: two blocks and a GroupNorm of 64 and an attention of
    4 · (64 + 8) = 288: 2 · 18,624 + 64 + 288 = 37,600; norm_out 64; conv_out 9·32 + 1 = 289; one temporal block of 1
    channel: 2 · 2 + 2 · 28 = 60. Decoder: the temporal block 60; conv_in 9·32 + 32 = 320; its blocks with spatial
    norms (GroupNorm 64 and two 1 × 1 convolutions from 1 code: 2 · (32 + 32)) = 192 each, two convolutions 9,248 each:
    2 · 192 + 2 · 9,248 = 18,880 a block; middle 2 · 18,880 + 192 + 288 = 38,240; two blocks at the one resolution
    37,760; norm_out 192; conv_out 9·32 + 1 = 289. Codebook 2; quant_conv 3 + 1 and post_quant_conv 3 + 1: 8.
    Sum: 320 + 18,624 + 37,600 + 64 + 289 + 60 + 60 + 320 + 38,240 + 37,760 + 192 + 289 + 2 + 8 = 133,828."""
    vq = {
        "channel_multiplier": [1],
        "attn_resolutions": [],
        "base_channels": 32,
        "num_res_blocks": 1,
        "temporal_downsample_factor": 1,
        "hidden_size": 8,
        "num_attention_heads": 1,
        "latent_channels": 1,
        "embed_dim": 1,
        "codebook_size": 2,
        "in_channels": 1,
        "out_channels": 1,
    }
    config = {"model_type": "emu3", "vq_config": vq}
    assert ours(config)["vq tower"] == 133_828
    assert transformers_parts(config)["vq tower"] == 133_828, oracle.VERSIONS


@pytest.mark.parametrize(
    ("vq_config", "message"),
    [
        ({"channel_multiplier": []}, "channel_multiplier must be a non-empty list"),
        ({"channel_multiplier": [1, 0]}, "channel_multiplier must be a non-empty list"),
        ({"base_channels": 48}, r"base_channels \(48\) must be a multiple of 32"),
        ({"hidden_size": 10, "num_attention_heads": 4}, "hidden_size"),
        ({"temporal_downsample_factor": 5000}, "temporal_downsample_factor"),
        ({"codebook_size": "many"}, "codebook_size"),
        ([1], "'vq_config' must be a JSON object"),
    ],
)
def test_emu3_vq_configs_torch_refuses_are_refused_naming_the_key(vq_config, message: str) -> None:
    with pytest.raises(LlmcountError, match=message):
        read_config({"model_type": "emu3", "vq_config": vq_config}, "test config")


SMALL = {"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 1}
SMALL |= {"intermediate_size": 16, "vocab_size": 64}
WRITTEN = {
    "chameleon": SMALL
    | {"vocabulary_map": {}, "vq_config": {"channel_multiplier": [1, 2], "base_channels": 32, "num_res_blocks": 1}},
    "emu3": {
        "vocabulary_map": {},
        "text_config": SMALL | {"pad_token_id": 0},
        "vq_config": {"channel_multiplier": [1, 2], "base_channels": 32, "num_res_blocks": 1, "latent_channels": 4}
        | {"embed_dim": 4, "codebook_size": 16, "attn_resolutions": [1], "hidden_size": 64},
    },
    "glm_ocr": {
        "text_config": SMALL,
        "vision_config": {"depth": 1, "hidden_size": 8, "num_heads": 2, "intermediate_size": 8, "out_hidden_size": 32},
    },
}
WRITTEN["chameleon"]["vq_config"] |= {"latent_channels": 4, "embed_dim": 4, "num_embeddings": 16, "resolution": 16}
WRITTEN["chameleon"]["vq_config"] |= {"attn_resolutions": [8]}


@pytest.mark.parametrize("model_type", sorted(WRITTEN))
def test_verify_maps_every_tensor_of_a_written_checkpoint_to_its_part(tmp_path, model_type: str) -> None:
    """A small checkpoint transformers writes: every tensor mapped, each part's against its count, the buffers
    saved with the weights (Emu3's BatchNorm3d statistics) named as buffers."""
    import warnings

    import torch
    import transformers
    from transformers import AutoConfig

    from llmcount.checkpoint import verify

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = AutoConfig.for_model(model_type, **WRITTEN[model_type])
        torch.manual_seed(0)
        built = getattr(transformers, records.composite(model_type).model)(cfg)
        built.save_pretrained(tmp_path)
        want = sum(p.numel() for p in built.parameters())
    result = verify(str(tmp_path))
    assert not result.unmapped, [t.name for t in result.unmapped]
    saved = [c for c in result.differences if "buffer/" in c.path]
    assert all(c.formula == 0 and "buffer" in c.note for c in saved), saved
    assert not [c for c in result.differences if c not in saved], result.differences
    assert not [c.path for c in result.components if c.path.startswith("other/")]
    model = read_config({"model_type": model_type, **WRITTEN[model_type]}, model_type)
    assert result.formula_total == model.whole_total == want, oracle.VERSIONS
    assert result.checkpoint_total == result.formula_total + sum(c.checkpoint for c in saved)
