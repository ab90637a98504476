"""Towers of the composites that were counted as their language model only and are now counted whole: Qwen3.5's and
Qwen3.5-MoE's ViT with its patch merger, Kimi K2.5's MoonViT and projector, VideoLLaMA3's vision encoder and projector,
PaddleOCR-VL's NaViT-style SigLIP and projector, Qwen3-ASR's audio encoder and projector, Video-LLaVA's two CLIP
towers and LLaVA's projector.
Each part and the whole model against what transformers builds for the composite config on the meta device, on the
composite class's defaults and on drawn configs that vary the tower (width, depth, heads, MLP width, patch, merge and
temporal patch sizes, channels, position grids) and the projector."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_towers import _text, assert_as_transformers_builds, ours, transformers_parts

from llmcount.formulas import records
from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

NEW = ["qwen3_5", "qwen3_5_moe", "kimi_k25", "video_llama_3", "paddleocr_vl", "qwen3_asr", "video_llava"]

# The composite classes whose defaults transformers builds but cannot run: the merger's output (out_hidden_size 3584)
# is not the default text hidden_size (Qwen3_5TextConfig's 4096, Qwen3_5MoeTextConfig's 2048); Qwen3-ASR's projector
# out to audio_config.output_dim 3584 is not its default text config's 2048.
CONTRADICTORY = {
    "qwen3_5": ("vision_config", "out_hidden_size", 4096),
    "qwen3_5_moe": ("vision_config", "out_hidden_size", 2048),
    "qwen3_asr": ("audio_config", "output_dim", 2048),
}


@pytest.mark.parametrize("model_type", NEW)
def test_class_defaults_are_whole(model_type: str) -> None:
    """The composite is counted whole; its class defaults (as to_dict writes them, and the bare model_type) give
    transformers' parts, once the merger's output is as wide as the language model where the defaults contradict."""
    composite = records.composite(model_type)
    assert composite.whole and composite.vision
    full = oracle.class_defaults(model_type)
    bare = {"model_type": model_type}
    if model_type in CONTRADICTORY:
        sub, key, width = CONTRADICTORY[model_type]
        for config in (full, bare):
            with pytest.raises(RuleRefusal, match=rf"{sub}\.{key} .* is not the language model's"):
                read_config(config, "test config")
        full = {**full, sub: {**full[sub], key: width}}
        bare = {**bare, sub: {key: width}}
    assert ours(full) == transformers_parts(full), f"{model_type} ({oracle.VERSIONS})"
    assert ours(bare) == transformers_parts(full), f"{model_type} ({oracle.VERSIONS})"


def _small_text(draw, model_type: str) -> dict:
    text = _text(draw, records.composite(model_type).text)
    if model_type.startswith("qwen3_5"):  # Gated DeltaNet layers and full ones, small heads
        text |= {"head_dim": draw(st.sampled_from([8, 16])), "full_attention_interval": draw(st.sampled_from([1, 2]))}
        text |= {"linear_num_key_heads": 2, "linear_num_value_heads": 2, "linear_key_head_dim": 8}
        text |= {"linear_value_head_dim": 8}
        if model_type == "qwen3_5_moe":
            text |= {"num_experts": draw(st.sampled_from([2, 4])), "num_experts_per_tok": 1}
            text |= {"moe_intermediate_size": 8, "shared_expert_intermediate_size": draw(st.sampled_from([8, 24]))}
    if model_type == "kimi_k25":  # DeepSeek-V3's decoder, small
        text |= {"n_routed_experts": draw(st.sampled_from([2, 4])), "num_experts_per_tok": 1, "n_group": 1}
        text |= {"topk_group": 1, "moe_intermediate_size": 8, "first_k_dense_replace": draw(st.sampled_from([0, 1]))}
        text |= {"q_lora_rank": draw(st.sampled_from([None, 8])), "kv_lora_rank": 8, "qk_rope_head_dim": 4}
        text |= {"qk_nope_head_dim": 4, "v_head_dim": 4}
    return text


@st.composite
def drawn(draw, model_type: str) -> dict:
    text = _small_text(draw, model_type)
    heads = draw(st.sampled_from([1, 2, 4]))
    width = heads * draw(st.sampled_from([4, 8, 12]))
    patch = draw(st.sampled_from([2, 4, 14]))
    config: dict = {"model_type": model_type, "text_config": text, "tie_word_embeddings": draw(st.booleans())}
    if model_type == "qwen3_asr":  # the audio encoder: width, depth, heads, MLP, mel bins, downsampling channels
        config["audio_config"] = {
            "encoder_layers": draw(st.integers(1, 3)),
            "d_model": width,
            "encoder_attention_heads": heads,
            "encoder_ffn_dim": draw(st.sampled_from([8, 20, 36])),
            "num_mel_bins": draw(st.sampled_from([8, 13, 128])),
            "downsample_hidden_size": draw(st.sampled_from([4, 6, 480])),
            "output_dim": text["hidden_size"],
        }
        return config
    if model_type.startswith("qwen3_5"):
        vision = {"depth": draw(st.integers(1, 3)), "hidden_size": width, "num_heads": heads}
        vision |= {
            "intermediate_size": draw(st.sampled_from([8, 20, 36])),
            "patch_size": patch,
            "temporal_patch_size": draw(st.sampled_from([1, 2])),
            "spatial_merge_size": draw(st.sampled_from([1, 2, 3])),
            "in_channels": draw(st.sampled_from([1, 3])),
            "num_position_embeddings": draw(st.sampled_from([16, 36, 2304])),
            "out_hidden_size": text["hidden_size"],
        }
    else:
        vision = {"num_hidden_layers": draw(st.integers(1, 3)), "hidden_size": width, "num_attention_heads": heads}
        vision["intermediate_size"] = draw(st.sampled_from([8, 20, 36]))
        vision["patch_size"] = draw(st.sampled_from([patch, [patch, patch]]))
    if model_type == "kimi_k25":
        vision["pos_emb_height"] = draw(st.sampled_from([4, 64]))
        vision["pos_emb_width"] = draw(st.sampled_from([4, 6, 64]))
        merge = draw(st.sampled_from([1, 2, 3]))
        vision["merge_kernel_size"] = draw(st.sampled_from([[merge, merge], (merge, merge)]))
        config["projection_hidden_size"] = draw(st.sampled_from([width, 8]))  # any width builds; the tower's runs
    if model_type == "video_llava":  # two CLIP towers of one vision_config, LLaVA's projector
        vision["patch_size"] = patch
        vision["image_size"] = draw(st.integers(8, 60))
        config["vision_feature_layer"] = draw(st.sampled_from([-1, -2, [-1], [-2, -1]]))
        config["multimodal_projector_bias"] = draw(st.booleans())
    if model_type in ("video_llama_3", "paddleocr_vl", "video_llava"):
        vision["num_channels"] = draw(st.sampled_from([1, 3]))
    if model_type == "paddleocr_vl":
        vision["patch_size"] = patch
        vision["image_size"] = draw(st.integers(8, 60))  # not always a multiple of the patch: the table floors
        vision["spatial_merge_size"] = draw(st.sampled_from([1, 2, 3]))
    config["vision_config"] = vision
    return json.loads(json.dumps(config))  # a tuple is written as a list, as in a config.json


@pytest.mark.parametrize("model_type", NEW)
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn_towers(model_type: str, data) -> None:
    assert_as_transformers_builds(data.draw(drawn(model_type)))


# The sizes of a Qwen3.5-27B vision_config (Qwen3_5VisionConfig's defaults, its merger out to the 5120-wide text).
QWEN3_5_27B_VISION = {
    "depth": 27,
    "hidden_act": "gelu_pytorch_tanh",
    "hidden_size": 1152,
    "in_channels": 3,
    "initializer_range": 0.02,
    "intermediate_size": 4304,
    "num_heads": 16,
    "num_position_embeddings": 2304,
    "out_hidden_size": 5120,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
}


def test_qwen3_5_vision_tower_by_hand() -> None:
    """Qwen3.5-27B's ViT, by hand: 3-D patch convolution 3·2·16²·1152 + 1152, a position table 2304·1152, 27 layers of
    qkv 3·(1152² + 1152), proj 1152² + 1152, MLP 2·1152·4304 + 4304 + 1152 and two LayerNorms 4·1152; the merger: a
    LayerNorm 2·1152, 4608² + 4608 and 4608·5120 + 5120."""
    layer = 3 * (1152**2 + 1152) + 1152**2 + 1152 + 2 * 1152 * 4304 + 4304 + 1152 + 4 * 1152
    merger = 2 * 1152 + 4608**2 + 4608 + 4608 * 5120 + 5120
    tower = 3 * 2 * 16 * 16 * 1152 + 1152 + 2304 * 1152 + 27 * layer + merger
    config = {"model_type": "qwen3_5", "text_config": {"hidden_size": 5120}, "vision_config": QWEN3_5_27B_VISION}
    model = read_config(config, "Qwen3.5-27B")
    assert [(p.role, p.model.counts.total) for p in model.parts] == [("vision tower", tower)]
    assert tower == 460_730_096


def test_kimi_k25_parts_by_hand() -> None:
    """Kimi K2.5's MoonViT at Kimi_K25VisionConfig's defaults, by hand: patch convolution 3·14²·1152 + 1152, a
    64 × 64 grid of 1152, 27 layers of q, k, v and proj 4·(1152² + 1152), MLP 2·1152·4304 + 4304 + 1152 and two
    LayerNorms 4·1152, the final LayerNorm 2·1152; the projector: a LayerNorm 2·1152, 4608² + 4608, 4608·7168 + 7168."""
    layer = 4 * (1152**2 + 1152) + 2 * 1152 * 4304 + 4304 + 1152 + 4 * 1152
    tower = 3 * 14 * 14 * 1152 + 1152 + 64 * 64 * 1152 + 27 * layer + 2 * 1152
    projector = 2 * 1152 + 4608**2 + 4608 + 4608 * 7168 + 7168
    model = read_config({"model_type": "kimi_k25"}, "kimi_k25")
    assert [(p.role, p.model.counts.total) for p in model.parts] == [
        ("vision tower", tower),
        ("projector", projector),
    ]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"model_type": "kimi_k25", "vision_config": {"merge_kernel_size": [2, 3]}}, "merge_kernel_size"),
        ({"model_type": "kimi_k25", "vision_config": {"patch_size": [14, 16]}}, "patch_size"),
        ({"model_type": "video_llama_3", "vision_config": {"patch_size": 0}}, "vision_config: key 'patch_size'"),
        (
            {"model_type": "video_llava", "vision_config": {"model_type": "siglip_vision_model"}},
            "vision_config.model_type names a vision tower llmcount does not count under video_llava",
        ),
        (
            {"model_type": "qwen3_asr", "text_config": {"hidden_size": 1024}},
            "audio_config.output_dim (3584), the width of the projector's output, is not the language model's "
            "hidden_size (1024)",
        ),
        ({"model_type": "qwen3_asr", "audio_config": {"d_model": 30}}, "audio_config: d_model (30) is not divisible"),
        (
            {"model_type": "video_llama_3", "vision_config": {"hidden_size": 30, "num_attention_heads": 4}},
            "vision_config: hidden_size (30) is not divisible by num_attention_heads (4)",
        ),
        (
            {"model_type": "qwen3_5", "text_config": {"hidden_size": 2048}, "vision_config": {"out_hidden_size": 1024}},
            "vision_config.out_hidden_size (1024), the width of the patch merger's output, is not the language model's "
            "hidden_size (2048)",
        ),
    ],
)
def test_bad_towers_are_refused_naming_the_key(tmp_path, config: dict, message: str) -> None:
    from typer.testing import CliRunner

    from llmcount.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = CliRunner().invoke(app, ["count", str(path)])
    assert result.exit_code == 1 and result.stdout == ""
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_qwen3_asr_encoder_by_hand() -> None:
    """Qwen3ASREncoderConfig's defaults, by hand: convolutions 9·480 + 480 and 2·(9·480² + 480); 128 mel bins leave
    ⌊(⌊(⌊129/2⌋ + 1)/2⌋ + 1)/2⌋ = 16 after three strides of 2, so conv_out is 480·16·1024; 24 layers of q, k, v, out
    4·(1024² + 1024), MLP 2·1024·4096 + 4096 + 1024 and two LayerNorms 4·1024; ln_post 2·1024. The projector, out to
    a 2048-wide language model: 1024² + 1024 and 1024·2048 + 2048."""
    layer = 4 * (1024**2 + 1024) + 2 * 1024 * 4096 + 4096 + 1024 + 4 * 1024
    tower = 9 * 480 + 480 + 2 * (9 * 480**2 + 480) + 480 * 16 * 1024 + 24 * layer + 2 * 1024
    model = read_config({"model_type": "qwen3_asr", "audio_config": {"output_dim": 2048}}, "qwen3_asr")
    assert [(p.role, p.model.counts.total) for p in model.parts] == [
        ("audio tower", tower),
        ("projector", 1024**2 + 1024 + 1024 * 2048 + 2048),
    ]
    assert tower == 314_328_704


def test_video_llava_counts_both_towers() -> None:
    """VideoLlavaConfig's defaults: image_tower and video_tower are each CLIP ViT-L/14 at 224 (303,179,776 parameters
    as clip_vision_model counts it, the class token, (224 // 14)² + 1 positions, 24 layers, two LayerNorms), twice."""
    model = read_config({"model_type": "video_llava"}, "Video-LLaVA")
    clip = {"model_type": "clip_vision_model", **records.composite("video_llava").vision_absent}
    one = read_config(clip, "clip", family=records.tower("clip_vision_model")).counts.total
    layer = 4 * (1024**2 + 1024) + 2 * 1024 * 4096 + 4096 + 1024 + 4 * 1024
    assert one == 1024 + 3 * 14 * 14 * 1024 + 257 * 1024 + 24 * layer + 4 * 1024 == 303_179_776
    assert model.parts[0].model.counts.total == 2 * one


# Small configs of the composites whose checkpoints hold their parts under modules of their own (parts_modules).
SMALL_TEXT = {"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 1}
SMALL_TEXT |= {"intermediate_size": 16, "vocab_size": 64}
SMALL_VIT = {"num_hidden_layers": 1, "hidden_size": 16, "num_attention_heads": 2, "intermediate_size": 8}
WRITTEN = {
    "video_llama_3": {"text_config": {"model_type": "qwen2", **SMALL_TEXT}, "vision_config": {**SMALL_VIT}},
    "paddleocr_vl": {"text_config": dict(SMALL_TEXT), "vision_config": {**SMALL_VIT, "image_size": 28}},
    "video_llava": {
        "text_config": {"model_type": "llama", **SMALL_TEXT},
        "vision_config": {**SMALL_VIT, "image_size": 28, "patch_size": 14},
    },
}


@pytest.mark.parametrize("model_type", sorted(WRITTEN))
def test_verify_lists_the_parts_of_a_written_checkpoint_apart(tmp_path, model_type: str) -> None:
    """A checkpoint transformers writes (save_pretrained of a small model): the language model's tensors map to the
    record term by term; the tower's and the projector's are listed apart under other/<module>, and sum to the
    parts' counts."""
    import warnings

    import torch
    import transformers
    from transformers import AutoConfig

    from llmcount.checkpoint import verify

    config = {"model_type": model_type, **WRITTEN[model_type]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = AutoConfig.for_model(model_type, **WRITTEN[model_type])
        torch.manual_seed(0)
        built = getattr(transformers, records.composite(model_type).model)(cfg)
        built.save_pretrained(tmp_path)
    result = verify(str(tmp_path))
    assert not result.unmapped, [t.name for t in result.unmapped]
    apart = {c.path: c.checkpoint for c in result.components if c.path.startswith("other/")}
    assert all(c.path.startswith("other/") for c in result.differences), result.differences
    model = read_config(config, model_type)
    assert result.formula_total == model.counts.total
    assert sum(apart.values()) == sum(part.model.counts.total for part in model.parts)
    assert model.whole_total == sum(p.numel() for p in built.parameters()), oracle.VERSIONS
