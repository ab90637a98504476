"""Vision towers and projectors (records of ``formulas/towers/``) composed with the language model into the whole
multimodal model: each part and the total against the model transformers builds for the composite config on the meta
device (``model.model.vision_tower`` or ``model.model.visual``, ``model.model.multi_modal_projector``, every
parameter), on the composite class's defaults and on drawn configs that vary the tower; published checkpoints' sizes;
what ``count`` and ``formula --part`` show; bad input refused naming the key."""

from __future__ import annotations

import json
import re
from functools import lru_cache

import gemma3
import pytest
import test_lm_records
import test_towers_b
import test_towers_c
import test_whole_new_language_models
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcount.formulas import records
from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

# remote: test_remote_built.py; the composites of test_towers_b.py's, test_towers_c.py's and
# test_whole_new_language_models.py's TOWERS and test_lm_records.py's PARTS are drawn there,
# those of two towers in test_towers_multi.py
DRAWN_ELSEWHERE = {*test_towers_b.TOWERS, *test_towers_c.TOWERS, *test_whole_new_language_models.TOWERS}
DRAWN_ELSEWHERE |= set(test_lm_records.PARTS)
WHOLE = [
    c.name for c in records.composites() if c.whole and not c.remote and c.name not in DRAWN_ELSEWHERE and not c.towers
]


@lru_cache(maxsize=256)
def _parts(frozen: str, model_class: str) -> dict[str, int]:

    config = json.loads(frozen)
    model = oracle.meta_model(config, model_class)
    inner = getattr(model, "model", model)  # Llama4ForConditionalGeneration holds its parts itself
    tower = getattr(inner, "vision_tower", None) or getattr(inner, "visual", None)
    tower = tower or getattr(inner, "vision_model", None) or getattr(inner, "audio_tower", None)
    tower = tower or getattr(inner, "vision_encoder", None)  # LightOnOCR's
    towers = [tower] if tower is not None else [inner.image_tower, inner.video_tower]  # Video-LLaVA's two
    text = getattr(inner, "language_model", None) or inner.text_model
    language = {id(p): p for p in [*text.parameters(), *model.get_output_embeddings().parameters()]}
    whole = sum(p.numel() for p in model.parameters())
    vision = sum(p.numel() for tower in towers for p in tower.parameters())
    # the projector: every other parameter (multi_modal_projector, and LLaVA-NeXT's image_newline of the model)
    projector = whole - vision - sum(p.numel() for p in language.values())
    return {"whole": whole, "vision tower": vision, "projector": projector}


def transformers_parts(config: dict) -> dict[str, int]:
    """transformers' whole model of a composite config, its vision tower and its projector (0 when the tower holds
    it), built on the meta device, parameters counted once."""
    return _parts(json.dumps(config, sort_keys=True), records.composite(config["model_type"]).model)


def ours(config: dict) -> dict[str, int]:
    model = read_config(config, "test config")
    parts = {part.role: part.model.counts.total for part in model.parts}
    tower = parts.get("vision tower", parts.get("audio tower"))  # an audio encoder is the tower of an audio model
    return {"whole": model.whole_total, "vision tower": tower, "projector": parts.get("projector", 0)}


def assert_as_transformers_builds(config: dict) -> None:
    want = oracle.assert_counted_as_built(config, transformers_parts, ours)
    model = read_config(config, "test config")
    lm = oracle.language_model_total(config, records.composite(config["model_type"]).model)
    assert model.counts.total == lm == want["whole"] - want["vision tower"] - want["projector"], oracle.VERSIONS


# The composite classes whose defaults transformers builds but cannot run: the vision tower's output (Qwen2VLConfig's
# vision hidden_size 3584, Qwen2.5-VL's and Qwen3-VL's out_hidden_size 3584) is not the default text hidden_size (8192,
# 8192, 4096), so the image features cannot take the place of the image tokens. llmcount refuses them by that key.
CONTRADICTORY = {
    "qwen2_vl": ("hidden_size", 8192),
    "qwen2_5_vl": ("out_hidden_size", 8192),
    "qwen3_vl": ("out_hidden_size", 4096),
    "qwen3_vl_moe": ("out_hidden_size", 2048),
    "qwen3_5": ("out_hidden_size", 4096),  # Qwen3_5VisionConfig's 3584, Qwen3_5TextConfig's 4096
    "qwen3_5_moe": ("out_hidden_size", 2048),
    "cosmos3_omni": ("out_hidden_size", 4096),  # Qwen3-VL's defaults
    "exaone4_5": ("out_hidden_size", 4096),  # Exaone4_5_VisionConfig's 3584, EXAONE 4's 4096
    "qwen3_asr": ("output_dim", 2048, "audio_config"),  # Qwen3ASREncoderConfig's 3584, its text config's 2048
}


# The composite classes whose default tower transformers cannot build: Aya Vision's SigLIP is 1152 wide with 14 heads.
UNBUILDABLE = {
    "aya_vision": ("num_attention_heads", 16, "hidden_size (1152) is not divisible by num_attention_heads (14)"),
}


@pytest.mark.parametrize("model_type", WHOLE)
def test_class_defaults(model_type: str) -> None:
    """The composite class's defaults (as to_dict writes them, and the bare model_type); where they contradict, the
    refusal names the key, and with the tower's output as wide as the language model the counts are transformers'."""
    full = oracle.class_defaults(model_type)
    bare = {"model_type": model_type}
    if model_type in CONTRADICTORY:
        key, width, *sub = CONTRADICTORY[model_type]
        sub = sub[0] if sub else "vision_config"
        for config in (full, bare):
            with pytest.raises(RuleRefusal, match=f"{sub}.{key} .* is not the language model's hidden_size"):
                read_config(config, "test config")
        full = {**full, sub: {**full[sub], key: width}}
        bare = {**bare, sub: {key: width}}
    if model_type in UNBUILDABLE:
        key, value, message = UNBUILDABLE[model_type]
        for config in (full, bare):
            with pytest.raises(RuleRefusal, match=re.escape(message)):
                read_config(config, "test config")
        full = {**full, "vision_config": {**full["vision_config"], key: value}}
        bare = {**bare, "vision_config": {**records.composite(model_type).vision_absent, key: value}}
    assert ours(full) == transformers_parts(full), f"{model_type} ({oracle.VERSIONS})"
    assert ours(bare) == transformers_parts(bare) == transformers_parts(full), f"{model_type} ({oracle.VERSIONS})"


def _text(draw, family: str) -> dict:
    heads = draw(st.sampled_from([2, 4]))
    text = {
        "num_hidden_layers": draw(st.integers(1, 2)),
        "hidden_size": heads * draw(st.sampled_from([8, 12, 16])),
        "num_attention_heads": heads,
        "num_key_value_heads": draw(st.sampled_from([1, 2])),
        "intermediate_size": draw(st.sampled_from([16, 40])),
        "vocab_size": draw(st.sampled_from([64, 96])),
    }
    if family in ("gemma3_text", "qwen3", "qwen3_moe"):
        text["head_dim"] = draw(st.sampled_from([8, 16]))
    if family == "qwen3_moe":
        text["num_experts"] = draw(st.sampled_from([2, 4]))
        text["num_experts_per_tok"] = draw(st.sampled_from([1, 2]))
        text["moe_intermediate_size"] = draw(st.sampled_from([8, 24]))
        text["decoder_sparse_step"] = draw(st.sampled_from([1, 2]))
        text["mlp_only_layers"] = draw(st.sampled_from([[], [0]]))
    return text


def _vit(draw, width_key: str = "hidden_size", layers_key: str = "num_hidden_layers") -> dict:
    heads = draw(st.sampled_from([1, 2, 4]))
    return {
        layers_key: draw(st.integers(1, 3)),
        width_key: heads * draw(st.sampled_from([4, 8, 12])),
        "num_attention_heads" if layers_key == "num_hidden_layers" else "num_heads": heads,
    }


# The composites whose tower is SigLIP or CLIP (vision_config's model_type picks it; Gemma 3's is SigLIP).
SIGLIP_OR_CLIP = ("gemma3", "llava", "llava_next", "llava_onevision", "paligemma", "aya_vision")
SIGLIP_OR_CLIP += ("cohere2_vision", "deepseek_vl", "llava_next_video", "shieldgemma2", "vipllava")


@st.composite
def drawn(draw, model_type: str) -> dict:
    """A composite config with a small language model and a drawn tower: width, depth, heads, MLP width, patch and
    image size, channels, merge and temporal patch sizes, DeepStack layers, feature layers, switches."""
    composite = records.composite(model_type)
    if model_type == "hy_v4_vl":  # a decoder of many sizes: drawn as the record's own tests draw it
        text = draw(oracle.drawn_config(records.family(composite.text)))
        half = text.get("qk_rope_head_dim", 64) // 2  # HYV4VLTextConfig: M-RoPE sections sum to half the rotary width
        text["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0}
        text["rope_parameters"]["mrope_section"] = [half - 2 * (half // 3), half // 3, half // 3]
    else:
        text = _text(draw, composite.text)
    d = text["hidden_size"]
    config: dict = {"model_type": model_type, "text_config": text}
    if model_type == "qwen3_asr":  # an audio encoder, its projector out to the language model's width
        config["audio_config"] = {"output_dim": d, "encoder_layers": draw(st.integers(1, 2))}
        return config
    if model_type in ("mistral3", "lighton_ocr"):
        config["vision_config"] = {
            **_vit(draw),
            "intermediate_size": draw(st.sampled_from([8, 20, 36])),
            "patch_size": draw(st.sampled_from([2, 4, 14])),
            "image_size": draw(st.sampled_from([16, 64])),
            "num_channels": draw(st.sampled_from([1, 3])),
        }
        config["spatial_merge_size"] = draw(st.sampled_from([1, 2, 3]))
        config["vision_feature_layer"] = draw(st.sampled_from([-1, [-1], [-2, -1]]))
        config["multimodal_projector_bias"] = draw(st.booleans())
        config["tie_word_embeddings"] = draw(st.booleans())
    elif model_type in ("idefics3", "smolvlm"):
        config["vision_config"] = {
            **_vit(draw),
            "intermediate_size": draw(st.sampled_from([8, 20, 36])),
            "patch_size": draw(st.sampled_from([2, 4, 14])),
            "image_size": draw(st.sampled_from([16, 28, 64])),
            "num_channels": draw(st.sampled_from([1, 3])),
        }
        config["scale_factor"] = draw(st.sampled_from([1, 2, 4]))
        config["tie_word_embeddings"] = draw(st.booleans())
    elif model_type == "llama4":
        text |= {"num_local_experts": draw(st.sampled_from([1, 2])), "intermediate_size_mlp": 24, "head_dim": 8}
        config["vision_config"] = {
            **_vit(draw),
            "intermediate_size": draw(st.sampled_from([8, 20, 36])),
            "patch_size": draw(st.sampled_from([2, 4, 14])),
            "image_size": draw(st.sampled_from([16, 28, 60])),
            "num_channels": draw(st.sampled_from([1, 3])),
            "projector_input_dim": draw(st.sampled_from([8, 24])),
            "projector_output_dim": draw(st.sampled_from([8, 24])),
            "vision_output_dim": draw(st.sampled_from([8, 40])),
        }
        config["tie_word_embeddings"] = draw(st.booleans())
    elif model_type in ("glm4v", "glm46v", "glmga", "glm4v_moe"):  # GLM-4.6V and GLM-GA: GLM-4.1V's model
        text["hidden_size"] = 128 * text["num_attention_heads"]  # its heads are hidden_size // heads: GLM-4's 128
        d = text["hidden_size"]
        config["vision_config"] = {
            **_vit(draw, "hidden_size", "depth"),
            "intermediate_size": draw(st.sampled_from([8, 20, 36])),
            "patch_size": draw(st.sampled_from([2, 4, 14])),
            "temporal_patch_size": draw(st.sampled_from([1, 2])),
            "image_size": draw(st.sampled_from([16, 28, 60])),
            "in_channels": draw(st.sampled_from([1, 3])),
            "spatial_merge_size": draw(st.sampled_from([1, 2])),
            "attention_bias": draw(st.booleans()),
            "out_hidden_size": d,
        }
        config["tie_word_embeddings"] = draw(st.booleans())
    elif model_type == "mllama":
        text["cross_attention_layers"] = draw(st.sampled_from([[], [0]]))
        text["pad_token_id"] = 0  # MllamaTextConfig's 128004 is beyond a small vocabulary
        layouts = draw(st.sampled_from([None, [[1, 1]], [[1, 1], [1, 2], [2, 1]]]))
        config["vision_config"] = {
            **_vit(draw),
            "num_global_layers": draw(st.integers(0, 2)),
            "intermediate_size": draw(st.sampled_from([8, 20, 36])),
            "patch_size": draw(st.sampled_from([2, 4, 14])),
            "image_size": draw(st.sampled_from([16, 28, 60])),
            "num_channels": draw(st.sampled_from([1, 3])),
            "vision_output_dim": draw(st.sampled_from([8, 40])),
            "intermediate_layers_indices": [0],
            "max_num_tiles": 4 if layouts is None else draw(st.sampled_from([1, 2])),
        }
        if layouts is not None:
            config["vision_config"]["supported_aspect_ratios"] = layouts
    elif model_type == "hy_v4_vl":
        config["vision_config"] = {
            **_vit(draw),
            "intermediate_size": draw(st.sampled_from([8, 20, 36])),
            "patch_size": draw(st.sampled_from([2, 4, 14])),
            "max_image_size": draw(st.sampled_from([16, 28, 60])),
            "num_channels": draw(st.sampled_from([1, 3])),
            "spatial_merge_size": draw(st.sampled_from([1, 2, 3])),
            "out_hidden_size": d,
        }
        config["tie_word_embeddings"] = draw(st.booleans())
    elif model_type == "internvl":
        patch = draw(st.sampled_from([2, 4, 14]))
        image = draw(st.sampled_from([16, 28, 56]))
        config["vision_config"] = {
            **_vit(draw),
            "intermediate_size": draw(st.sampled_from([8, 20, 36])),
            "patch_size": draw(st.sampled_from([patch, [patch, patch]])),
            "image_size": draw(st.sampled_from([image, [image, image]])),
            "num_channels": draw(st.sampled_from([1, 3])),
            "attention_bias": draw(st.booleans()),
            "use_qk_norm": draw(st.booleans()),
            "norm_type": draw(st.sampled_from(["layer_norm", "rms_norm"])),
            "use_mask_token": draw(st.booleans()),
            "use_absolute_position_embeddings": draw(st.booleans()),
            "use_mean_pooling": draw(st.booleans()),
        }
        config["downsample_ratio"] = draw(st.sampled_from([0.5, 0.25, 1.0]))
        config["tie_word_embeddings"] = draw(st.booleans())
    elif model_type in SIGLIP_OR_CLIP:
        vision = {
            **_vit(draw),
            "intermediate_size": draw(st.sampled_from([8, 20, 36])),
            "patch_size": draw(st.sampled_from([2, 3, 4, 14])),
            "image_size": draw(st.integers(8, 60)),  # not always a multiple of the patch: the convolution floors
            "num_channels": draw(st.sampled_from([1, 3])),
        }
        kinds = ["siglip_vision_model"] if model_type == "gemma3" else ["clip_vision_model", "siglip_vision_model"]
        kind = draw(st.sampled_from(kinds))
        vision["model_type"] = kind
        if kind == "siglip_vision_model":
            vision["vision_use_head"] = draw(st.booleans())
        config["vision_config"] = vision
        if model_type == "paligemma":
            config["projection_dim"] = d
        if model_type in ("aya_vision", "cohere2_vision"):  # a pixel shuffle and a SwiGLU projector
            config["downsample_factor"] = draw(st.sampled_from([1, 2, 3]))
            config["alignment_intermediate_size"] = draw(st.sampled_from([None, 8, 30, 2 * d]))
            if config["alignment_intermediate_size"] is None:  # absent: the language model's width
                del config["alignment_intermediate_size"]
            config["tie_word_embeddings"] = draw(st.booleans())
        if model_type.startswith("llava") or model_type == "vipllava":
            config["vision_feature_layer"] = draw(st.sampled_from([-1, -2, [-1], [-2, -1], [0, -1, -2]]))
            config["multimodal_projector_bias"] = draw(st.booleans())
            config["tie_word_embeddings"] = draw(st.booleans())
    elif model_type == "qwen2_vl":
        vision = {
            **_vit(draw, "embed_dim", "depth"),
            "mlp_ratio": draw(st.sampled_from([1, 2, 4])),
            "hidden_size": d,
        }
    else:
        vision = {
            **_vit(draw, "hidden_size", "depth"),
            "intermediate_size": draw(st.sampled_from([8, 20, 36])),
            "out_hidden_size": d,
        }
    # Cosmos 3 Omni is Qwen3-VL's model; HyperCLOVA X Vision V2's tower is Qwen2.5-VL's ViT, EXAONE 4.5's one with
    # grouped key/value heads
    if model_type.startswith("qwen") or model_type in ("cosmos3_omni", "hyperclovax_vision_v2", "exaone4_5"):
        vision |= {
            "patch_size": draw(st.sampled_from([2, 4, 14])),
            "temporal_patch_size": draw(st.sampled_from([1, 2])),
            "spatial_merge_size": draw(st.sampled_from([1, 2, 3])),
            "in_channels": draw(st.sampled_from([1, 3])),
        }
        depth = vision["depth"]
        if model_type == "exaone4_5":  # Exaone4_5_Config reads text_config's model_type (a KeyError without one)
            text["model_type"] = "exaone4"
            vision["num_key_value_heads"] = draw(st.sampled_from([k for k in (1, 2) if vision["num_heads"] % k == 0]))
        if model_type in ("qwen2_5_vl", "hyperclovax_vision_v2", "exaone4_5"):
            vision["fullatt_block_indexes"] = draw(st.lists(st.integers(0, depth - 1), max_size=2, unique=True))
            vision["window_size"] = draw(st.sampled_from([16, 112]))
        if model_type.startswith("qwen3_vl") or model_type == "cosmos3_omni":
            vision["deepstack_visual_indexes"] = draw(st.lists(st.integers(0, depth - 1), max_size=3, unique=True))
            vision["num_position_embeddings"] = draw(st.sampled_from([16, 36, 2304]))
        config["vision_config"] = vision
        config["tie_word_embeddings"] = draw(st.booleans())
    return config


@pytest.mark.parametrize("model_type", WHOLE)
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn_towers(model_type: str, data) -> None:
    assert_as_transformers_builds(data.draw(drawn(model_type)))


# google/gemma-3-27b-it's config.json (and MedGemma-27B's, the same architecture) as published.
GEMMA3_27B = {
    "architectures": ["Gemma3ForConditionalGeneration"],
    "model_type": "gemma3",
    "mm_tokens_per_image": 256,
    "text_config": {
        "head_dim": 128,
        "hidden_size": 5376,
        "intermediate_size": 21504,
        "model_type": "gemma3_text",
        "num_attention_heads": 32,
        "num_hidden_layers": 62,
        "num_key_value_heads": 16,
        "query_pre_attn_scalar": 168,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window": 1024,
    },
    "torch_dtype": "bfloat16",
    "vision_config": gemma3.VISION_CONFIG,
}

# Qwen/Qwen2.5-VL-7B-Instruct's config.json as published: written flat, the text keys at the top level.
QWEN2_5_VL_7B = {
    "architectures": ["Qwen2_5_VLForConditionalGeneration"],
    "hidden_act": "silu",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "max_position_embeddings": 128000,
    "max_window_layers": 28,
    "model_type": "qwen2_5_vl",
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 32768,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_sliding_window": False,
    "vision_config": {
        "depth": 32,
        "hidden_act": "silu",
        "hidden_size": 1280,
        "intermediate_size": 3420,
        "num_heads": 16,
        "in_chans": 3,
        "out_hidden_size": 3584,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "spatial_patch_size": 14,
        "window_size": 112,
        "fullatt_block_indexes": [7, 15, 23, 31],
        "tokens_per_second": 2,
        "temporal_patch_size": 2,
    },
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vocab_size": 152064,
}


def test_gemma3_27b_is_the_checkpoint() -> None:
    """google/medgemma-27b-it (revision 2d3e00ea38b50018bf5dd3aa1009457cd2d5a48f) stores metadata.total_size
    54,864,813,280 bytes in its model.safetensors.index.json, all of it bf16: 27,432,406,640 parameters. By hand, the
    SigLIP tower (so400m at 896 pixels, no pooling head): patch convolution 3·14²·1152 + 1152, (896 // 14)² = 4096
    positions of 1152, 27 layers of q, k, v, out 4·(1152² + 1152), MLP 2·1152·4304 + 4304 + 1152 and two LayerNorms
    4·1152, the final LayerNorm 2·1152: 416,866,032; the projector: an RMSNorm of 1152 and 1152·5376: 6,194,304."""
    layer = 4 * (1152**2 + 1152) + 2 * 1152 * 4304 + 4304 + 1152 + 4 * 1152
    tower = 3 * 14 * 14 * 1152 + 1152 + 4096 * 1152 + 27 * layer + 2 * 1152
    model = read_config(GEMMA3_27B, "gemma-3-27b-it")
    parts = {part.role: part.model.counts.total for part in model.parts}
    assert (
        parts
        == {"vision tower": tower, "projector": 1152 + 1152 * 5376}
        == {
            "vision tower": 416_866_032,
            "projector": 6_194_304,
        }
    )
    assert model.counts.total == 27_009_346_304  # the language model alone: 27.01B
    assert model.whole_total == 54_864_813_280 // 2 == 27_432_406_640
    assert ours(GEMMA3_27B) == transformers_parts(GEMMA3_27B), oracle.VERSIONS


def test_qwen2_5_vl_7b_is_the_checkpoint() -> None:
    """Qwen2.5-VL-7B-Instruct's weights are 16,584,333,312 bytes of bf16 (the index's total_size, as exo's model
    cards record it for Qwen-Image's text encoder, which is this model): 8,292,166,656 parameters. By hand, the ViT:
    3-D patches 3·2·14²·1280, 32 layers of qkv 3·(1280² + 1280), proj 1280² + 1280, gated MLP 3·1280·3420 + 2·3420 +
    1280 and two RMSNorms 2·1280; the merger: RMSNorm 1280, 5120² + 5120 and 5120·3584 + 3584: 676,550,144."""
    layer = 3 * (1280**2 + 1280) + 1280**2 + 1280 + 3 * 1280 * 3420 + 2 * 3420 + 1280 + 2 * 1280
    tower = 3 * 2 * 14 * 14 * 1280 + 32 * layer + 1280 + 5120**2 + 5120 + 5120 * 3584 + 3584
    model = read_config(QWEN2_5_VL_7B, "Qwen2.5-VL-7B-Instruct")
    assert [part.role for part in model.parts] == ["vision tower"]
    assert model.parts[0].model.counts.total == tower == 676_550_144
    assert model.whole_total == 16_584_333_312 // 2 == 8_292_166_656
    assert ours(QWEN2_5_VL_7B) == transformers_parts(QWEN2_5_VL_7B), oracle.VERSIONS


def run(*args: str):
    from typer.testing import CliRunner

    from llmcount.cli import app

    return CliRunner().invoke(app, list(args))


def test_count_shows_the_parts_and_the_whole_total(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GEMMA3_27B))
    result = run("count", str(path))
    assert result.exit_code == 0, result.output
    for line in ("language model: Gemma 3 (text)", "vision tower: SigLIP vision tower", "projector: Gemma 3"):
        assert line in result.output
    assert "total (whole model)" in result.output and "27,432,406,640" in result.output
    assert "P = P_language + P_vision + P_projector" in result.output
    data = json.loads(run("count", str(path), "--json").stdout)
    assert data["total"] == 27_432_406_640
    assert [(p["part"], p["record"], p["total"]) for p in data["parts"]] == [
        ("language model", "gemma3_text", 27_009_346_304),
        ("vision tower", "siglip_vision_model", 416_866_032),
        ("projector", "gemma3_projector", 6_194_304),
    ]
    assert sum(c["count"] for c in data["parts"][1]["components"]) == 416_866_032


def test_a_count_that_leaves_a_part_out_says_so_in_the_totals_name(tmp_path) -> None:
    """Gemma 3n's MobileNet-V5 tower has no record: the counts are its language model's and the counted parts' sum,
    under keys that say so, never ``total``."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma3n"}))
    data = json.loads(run("count", str(path), "--json").stdout)
    assert "total" not in data and "activated" not in data
    assert data["language_model_total"] == read_config({"model_type": "gemma3n"}, "x").counts.total
    assert data["partial_total"] == sum(part["total"] for part in data["parts"])
    text = run("count", str(path)).output
    assert "partial total (a part not counted)" in text and "total (whole model)" not in text


def test_qwen_vl_types_are_counted_not_refused(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN2_5_VL_7B))
    result = run("count", str(path), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == 8_292_166_656


def test_formula_of_a_tower_over_its_own_symbols() -> None:
    result = run("formula", "qwen2_5_vl", "--part", "vision")
    assert result.exit_code == 0, result.output
    assert "Qwen2.5-VL, vision tower (qwen2_5_vl_vision)" in result.output
    for symbol in ("d_vis", "N_vis", "p_vis", "p_t", "m_vis", "d_vout", "out_hidden_size", "spatial_merge_size"):
        assert symbol in result.output
    assert "V·d" not in result.output
    data = json.loads(run("formula", "qwen3_vl", "--part", "vision", "--json").stdout)
    assert "N_ds" in data["total"] and data["symbols"]["N_ds"] == "deepstack_visual_indexes"
    projector = run("formula", "llava", "--part", "projector")
    assert projector.exit_code == 0 and "n_feat" in projector.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["formula", "gemma3", "--part", "audio"], "--part audio: gemma3 has no audio tower record"),
        (["formula", "qwen2_vl", "--part", "projector"], "qwen2_vl's vision tower holds its projector"),
        (["formula", "gemma3n", "--part", "vision"], "gemma3n has no vision tower record"),
    ],
)
def test_bad_parts_are_refused_in_one_line(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.exit_code in (1, 2) and result.stdout == ""
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {**QWEN2_5_VL_7B, "vision_config": {**QWEN2_5_VL_7B["vision_config"], "out_hidden_size": 2048}},
            "vision_config.out_hidden_size (2048), the width of the patch merger's output, is not the language "
            "model's hidden_size (3584)",
        ),
        (
            {"model_type": "qwen2_vl", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2},
            "vision_config.hidden_size (3584)",
        ),
        ({"model_type": "gemma3", "vision_config": [1]}, "key 'vision_config' must be a JSON object, got a list"),
        (
            {"model_type": "llava", "vision_config": {"model_type": "timm_wrapper"}},
            "vision_config has model_type 'timm_wrapper', a vision tower llmcount has no record of",
        ),
        ({"model_type": "gemma3", "vision_config": {"patch_size": 0}}, "vision_config: key 'patch_size' must be"),
        (
            {"model_type": "gemma3", "vision_config": {"hidden_size": 30, "num_attention_heads": 4}},
            "vision_config: hidden_size (30) is not divisible by num_attention_heads (4)",
        ),
        ({"model_type": "qwen3_vl", "vision_config": {"deepstack_visual_indexes": "x"}}, "deepstack_visual_indexes"),
        ({"model_type": "internvl", "vision_config": {"image_size": [448, 336]}}, "key 'image_size' gives"),
        (
            {"model_type": "glm4v", "text_config": {"hidden_size": 2048}, "vision_config": {"out_hidden_size": 2048}},
            "text_config: hidden_size (2048) is not 128 · num_attention_heads (32)",
        ),
        ({"model_type": "internvl", "downsample_ratio": 1.5}, "key 'downsample_ratio' (1.5) gives m_vis = 0"),
        ({"model_type": "internvl", "vision_config": {"norm_type": "batch"}}, "norm_type must be 'layer_norm' or"),
    ],
)
def test_bad_towers_are_refused_naming_the_key(tmp_path, config: dict, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("count", str(path))
    assert result.exit_code == 1 and result.stdout == ""
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
