"""Single-tower composites counted whole (LFM3-VL, MiniMax-M3-VL and the others of this file's TOWERS): the vision
tower, the projector and the whole model against the model transformers builds for the composite config on the meta
device (every parameter, tied ones once), on the composite class's defaults and on a few drawn configs that vary the
tower and the projector."""

from __future__ import annotations

import json
import warnings
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

# The modules of transformers' model that hold each composite's vision tower: every other parameter besides the
# language model and its head is the projector's.
TOWERS = {
    "lfm3_vl": ("vision_tower",),
    "minimax_m3_vl": ("vision_tower",),
    "janus": ("vision_model",),
    "deepseek_vl_hybrid": ("vision_model",),
}
# Composites of several parts besides the language model: the modules of transformers' model (attributes of
# model.model: modules or parameters) that hold each part, by the part's role in `count`; every other parameter
# besides the language model and its head is left unassigned, and must be none.
SPLIT = {
    "janus": {
        "vision tower": ("vision_model",),
        "projector": ("aligner",),
        "vq tower": ("vqmodel",),
        "vq projector": ("generation_embeddings", "generation_aligner", "generation_head"),
    },
    "deepseek_vl_hybrid": {
        "vision tower": ("vision_model",),
        "projector": ("aligner",),
        "high_res tower": ("high_res_vision_model",),
        "high_res projector": ("high_res_vision_neck", "high_res_vision_proj", "high_res_vision_alpha"),
    },
}


def _numel(held) -> int:
    return held.numel() if hasattr(held, "numel") else sum(p.numel() for p in held.parameters())


@lru_cache(maxsize=64)
def _parts(frozen: str) -> dict[str, int]:

    config = json.loads(frozen)
    model_type = config["model_type"]
    model = oracle.meta_model(config, records.composite(model_type).model)
    inner = getattr(model, "model", model)
    if model_type not in SPLIT:
        return oracle.tower_split(model, [getattr(inner, name) for name in TOWERS[model_type]])
    rest = oracle.tower_split(model, [])  # the projector: everything besides the language model and its head
    named = {role: sum(_numel(getattr(inner, n)) for n in names) for role, names in SPLIT[model_type].items()}
    return {"whole": rest["whole"], **named, "unassigned": rest["projector"] - sum(named.values())}


def transformers_parts(config: dict) -> dict[str, int]:
    """transformers' whole model of a composite config, its vision tower and the rest besides the language model
    (each part of a SPLIT composite)."""
    return _parts(json.dumps(config, sort_keys=True))


def ours(config: dict) -> dict[str, int]:
    model = read_config(config, "test config")
    parts = {part.role: part.model.counts.total for part in model.parts}
    if config["model_type"] in SPLIT:
        return {"whole": model.whole_total, **parts, "unassigned": 0}
    return {"whole": model.whole_total, "vision tower": parts["vision tower"], "projector": parts.get("projector", 0)}


@pytest.mark.parametrize("model_type", sorted(TOWERS))
def test_class_defaults(model_type: str) -> None:
    """The composite class's defaults (the bare model_type) as transformers builds them."""
    config = {"model_type": model_type}
    assert records.composite(model_type).whole, model_type
    assert ours(config) == transformers_parts(config), f"{model_type} ({oracle.VERSIONS})"


@st.composite
def drawn(draw, model_type: str) -> dict:
    """A composite config with a small drawn language model (its record's own strategy) and a drawn tower."""
    text = draw(oracle.drawn_config(records.family(records.composite(model_type).text)))
    config: dict = {"model_type": model_type, "text_config": text}
    vision = oracle.drawn_vit(draw)
    if model_type == "lfm3_vl":
        layers = vision["num_hidden_layers"]
        vision |= {
            "num_key_value_heads": draw(st.sampled_from([k for k in (1, 2) if vision["num_attention_heads"] % k == 0])),
            "patch_size": draw(st.sampled_from([2, 16])),
            "temporal_patch_size": draw(st.sampled_from([1, 2])),
            "in_channels": draw(st.sampled_from([1, 3])),
            "spatial_merge_size": draw(st.sampled_from([1, 2])),
            "conv_kernel_size": draw(st.sampled_from([1, 3, 5])),
        }
        if draw(st.booleans()):
            kinds = st.sampled_from(["conv", "full_attention"])
            vision["layer_types"] = draw(st.lists(kinds, min_size=layers, max_size=layers))
        config |= {"projector_hidden_size": draw(st.sampled_from([8, 24])), "projector_bias": draw(st.booleans())}
    elif model_type == "minimax_m3_vl":
        vision |= {
            "patch_size": draw(st.sampled_from([2, 14])),
            "temporal_patch_size": draw(st.sampled_from([1, 2])),
            "num_channels": draw(st.sampled_from([1, 3])),
            "spatial_merge_size": draw(st.sampled_from([1, 2])),
        }
        config["projector_hidden_size"] = draw(st.sampled_from([8, 24]))
    elif model_type == "janus":
        vision |= {
            "mlp_ratio": draw(st.sampled_from([4.0, 2.5, 1.0])),
            "patch_size": draw(st.sampled_from([2, 4, 16])),
            "image_size": draw(st.integers(8, 40)),  # not always a multiple of the patch: the convolution floors
            "num_channels": draw(st.sampled_from([1, 3])),
            "attention_bias": draw(st.booleans()),
            "use_qk_norm": draw(st.booleans()),
            "projection_dim": draw(st.sampled_from([8, 24])),
            "depth": draw(st.integers(1, 3)),
        }
        del vision["intermediate_size"]  # JanusVisionConfig has none: its MLP is hidden_size · mlp_ratio wide
        config["vq_config"] = {  # GroupNorms of 32 groups: channels a multiple of 32
            "base_channels": draw(st.sampled_from([32, 64])),
            "channel_multiplier": draw(st.sampled_from([[1], [2], [1, 2], [2, 1, 1], [1, 1, 2, 2, 4]])),
            "num_res_blocks": draw(st.integers(1, 2)),
            "latent_channels": draw(st.sampled_from([4, 8])),
            "double_latent": draw(st.booleans()),
            "embed_dim": draw(st.sampled_from([4, 8])),
            "num_embeddings": draw(st.sampled_from([16, 40])),
            "in_channels": draw(st.sampled_from([1, 3])),
            "out_channels": draw(st.sampled_from([1, 3])),
            "projection_dim": draw(st.sampled_from([8, 24])),
            "num_hidden_layers": draw(st.integers(1, 3)),
            "image_token_embed_dim": draw(st.sampled_from([8, 16])),
        }
        config["tie_word_embeddings"] = draw(st.booleans())
    elif model_type == "deepseek_vl_hybrid":  # a SigLIP tower, and SAM's at high resolution
        vision |= {
            "model_type": "siglip_vision_model",
            "patch_size": draw(st.sampled_from([2, 4, 14])),
            "image_size": draw(st.integers(8, 40)),
            "vision_use_head": draw(st.booleans()),
        }
        high = oracle.drawn_vit(draw)
        high["mlp_dim"] = high.pop("intermediate_size")
        layers = high["num_hidden_layers"]
        high |= {  # an empty global_attn_indexes does not build (DeepseekVLHybridModel reads its first entry)
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
        config["high_res_vision_config"] = high
        config["tie_word_embeddings"] = draw(st.booleans())
    config["vision_config"] = vision
    return config


@pytest.mark.parametrize("model_type", sorted(TOWERS))
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn_towers(model_type: str, data) -> None:
    config = data.draw(drawn(model_type))
    oracle.assert_counted_as_built(config, transformers_parts, ours)


# Qwen2-VL's and Qwen2.5-VL's ViTs take images of any size: their FLOPs per image at --image-size, against
# FlopCounterMode on the tower transformers builds (on the CPU, small and eager: its windows are cut from the image's
# grid at run time), with the grid of patches of that image.
QWEN_VL = {
    "qwen2_vl": ("Qwen2VLVisionConfig", "Qwen2VisionTransformerPretrainedModel", "hidden_size"),
    "qwen2_5_vl": ("Qwen2_5_VLVisionConfig", "Qwen2_5_VisionTransformerPretrainedModel", "out_hidden_size"),
}


def tower_flops_oracle(model_type: str, vision: dict, rows: int, cols: int) -> int:
    """FlopCounterMode's count of the tower's eager forward over one image of rows × cols patches."""
    import importlib

    import torch
    from torch.utils.flop_counter import FlopCounterMode

    config_class, model_class, _ = QWEN_VL[model_type]
    module = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    cfg = getattr(module, config_class)(**vision)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tower = getattr(module, model_class)._from_config(cfg, attn_implementation="eager").eval()
    channels = cfg.in_channels * cfg.temporal_patch_size * cfg.patch_size**2
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        tower(torch.zeros(rows * cols, channels), grid_thw=torch.tensor([[1, rows, cols]]))
    return counter.get_total_flops()


@st.composite
def qwen_vl_image(draw, model_type: str) -> tuple[dict, int, int]:
    """A small Qwen-VL composite config and an image of whole merged squares of patches (height, width in pixels)."""
    heads = draw(st.sampled_from([1, 2]))
    patch, merge = draw(st.sampled_from([2, 3])), draw(st.sampled_from([1, 2]))
    vision = {
        "depth": draw(st.integers(1, 3)),
        "num_heads": heads,
        "patch_size": patch,
        "temporal_patch_size": draw(st.sampled_from([1, 2])),
        "spatial_merge_size": merge,
        "in_channels": draw(st.sampled_from([1, 3])),
    }
    if model_type == "qwen2_vl":
        vision |= {"embed_dim": heads * 8, "mlp_ratio": draw(st.sampled_from([1, 2, 4])), "hidden_size": 16}
    else:
        vision |= {"hidden_size": heads * 8, "intermediate_size": draw(st.sampled_from([8, 20])), "out_hidden_size": 16}
        vision["window_size"] = patch * merge * draw(st.integers(1, 3)) + draw(st.sampled_from([0, 1]))
        vision["fullatt_block_indexes"] = draw(st.lists(st.integers(-1, 3), max_size=2))
    text = {"model_type": "qwen2", "hidden_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1}
    text |= {"num_hidden_layers": 1, "intermediate_size": 8, "vocab_size": 32}
    config = {"model_type": model_type, "text_config": text, "vision_config": vision}
    rows, cols = merge * draw(st.integers(1, 4)), merge * draw(st.integers(1, 4))
    return config, rows * patch, cols * patch


@pytest.mark.parametrize("model_type", sorted(QWEN_VL))
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_qwen_vl_flops_per_image_at_an_image_size(model_type: str, data) -> None:
    from llmcount.formulas.tower_flops import image_flops

    config, height, width = data.draw(qwen_vl_image(model_type))
    vision = config["vision_config"]
    patch, merge = vision["patch_size"], vision["spatial_merge_size"]
    found = image_flops(read_config(config, "test config"), (height, width))
    want = tower_flops_oracle(model_type, vision, height // patch, width // patch)
    assert found.per_image == want, f"{config} {height}x{width} ({oracle.VERSIONS})"
    assert found.image_tokens == (height // patch) * (width // patch) // merge**2


def test_qwen2_5_vl_7b_flops_at_448_pixels_by_hand() -> None:
    """Qwen2.5-VL-7B's ViT at 448 × 448: 32 × 32 patches of 14, 16 × 16 merged squares (256 image tokens), windows of
    112 // 28 = 4 merged squares a side: 16 windows of 64 patches. Per layer: qkv 2·1024·3·1280², proj 2·1024·1280²,
    gated MLP 3 · 2·1024·1280·3420; scores and values 4·1280·1024² on the 4 full layers and 4·1280·16·64² on the 28
    windowed ones; the patch convolution 2·1024·3·2·14²·1280 and the merger 2·256·5120² + 2·256·5120·3584."""
    from llmcount.formulas.tower_flops import image_flops

    config = {"model_type": "qwen2_5_vl", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4}
    config |= {"num_hidden_layers": 28, "intermediate_size": 18944, "vocab_size": 152064}
    config["vision_config"] = {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16}
    config["vision_config"] |= {"out_hidden_size": 3584, "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31]}
    layer = 2 * 1024 * 3 * 1280**2 + 2 * 1024 * 1280**2 + 3 * 2 * 1024 * 1280 * 3420
    attention = 4 * 4 * 1280 * 1024**2 + 28 * 4 * 1280 * 16 * 64**2
    edges = 2 * 1024 * 3 * 2 * 14**2 * 1280 + 2 * 256 * 5120**2 + 2 * 256 * 5120 * 3584
    found = image_flops(read_config(config, "test config"), (448, 448))
    assert found.per_image == 32 * layer + attention + edges == 1_346_937_815_040
    assert found.image_tokens == 256


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["--images", "1"], "takes images of any size and its config names none: give it with --image-size HxW", 1),
        (["--images", "1", "--image-size", "450"], "must be multiples of patch_size · spatial_merge_size (14 · 2)", 1),
        (["--images", "1", "--image-size", "0x28"], "--image-size: each side must be 1 to 100,000 pixels, got 0x28", 2),
        (["--images", "1", "--image-size", "big"], "--image-size must be HxW in pixels (448x448) or one side (448)", 2),
        (["--image-size", "448"], "--image-size with flops: the size of the images of --images", 2),
    ],
)
def test_image_size_refused_in_one_line(tmp_path, args: list[str], message: str, code: int) -> None:
    from typer.testing import CliRunner

    from llmcount.cli.app import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "qwen2_5_vl", "vision_config": {"out_hidden_size": 8192}}))
    result = CliRunner().invoke(app, ["flops", str(path), *args])
    assert result.exit_code == code and result.stdout == "", result.stderr  # 2: a usage error (the option's value)
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr


# LLaVA-1.5-7B's CLIP ViT-L/14 at 336 pixels under --tp 2, as vLLM 0.33.0 builds it (llava.py, clip.py): the tower's
# layers only up to vision_feature_layer -2 (23 of 24, get_layer_index: 24 - 2 + 1) and no post_layernorm; per layer
# q, k, v (QKVParallelLinear) and fc1 (ColumnParallelLinear) weights and biases halved, out_proj and fc2
# (RowParallelLinear) weights halved and their biases whole, the LayerNorms whole; the class embedding, the patch
# convolution (3 · 14² · 1024), the 577 positions and pre_layrnorm whole. The projector: linear_1 (1024 → 4096) with
# its bias halved (ColumnParallelLinear), linear_2's weight halved and its bias whole (RowParallelLinear).
LLAVA_1_5_7B = {"model_type": "llava", "text_config": {"model_type": "llama"}}
LLAVA_1_5_7B["vision_config"] = {
    "model_type": "clip_vision_model",
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_attention_heads": 16,
    "num_hidden_layers": 24,
    "image_size": 336,
    "patch_size": 14,
    "projection_dim": 768,
}


def test_llava_tower_per_tp_rank_as_vllm_builds_it() -> None:
    from llmcount.tower_parallel import placement

    d, f = 1024, 4096
    layer = 3 * (d * d + d) // 2 + d * d // 2 + d + (d * f + f) // 2 + f * d // 2 + d + 4 * d
    tower = d + 3 * 14**2 * d + 577 * d + 2 * d + 23 * layer
    projector = (d * 4096 + 4096) // 2 + 4096 * 4096 // 2 + 4096
    found = placement(read_config(LLAVA_1_5_7B, "test config"), 2, 1)
    assert found.parameters == tower + projector == 146_123_264 + 10_491_904
    assert "vLLM builds 23 of its 24 layers (up to vision_feature_layer); no norms/post_layernorm" in found.note
    last = placement(read_config({**LLAVA_1_5_7B, "vision_feature_layer": -1}, "test config"), 2, 1)
    assert last.parameters == found.parameters + layer  # every layer built, still no post_layernorm
    staged = placement(read_config(LLAVA_1_5_7B, "test config"), 1, 2)  # pp: the first stage holds them, unsplit
    whole_layer = 4 * (d * d + d) + 2 * d * f + f + d + 4 * d
    unsplit = d + 3 * 14**2 * d + 577 * d + 2 * d + 23 * whole_layer + d * 4096 + 4096 + 4096 * 4096 + 4096
    assert staged.parameters == unsplit == staged.whole - whole_layer - 2 * d  # the 24th layer, post_layernorm


def test_llava_feature_layers_vllm_cannot_build_are_refused_by_name() -> None:
    from llmcount.tower_parallel import placement

    listed = read_config({**LLAVA_1_5_7B, "vision_feature_layer": [-2, -1]}, "test config")
    with pytest.raises(LlmcountError, match="vision_feature_layer names 2 layers; vLLM's projector takes one"):
        placement(listed, 2, 1)
    assert placement(listed, 1, 1).parameters == listed.whole_total - listed.counts.total  # whole without tp or pp
    nexted = read_config({**LLAVA_1_5_7B, "model_type": "llava_next", "vision_feature_layer": [-5, -2]}, "x")
    assert "23 of its 24 layers" in placement(nexted, 2, 1).note  # LLaVA-NeXT takes a list: up to the deepest


def test_llava_onevision_tower_split_and_projector_whole_per_tp_rank() -> None:
    """LlavaOnevisionConfig's defaults (SigLIP so400m at 384: d = 1152, 26 layers, MLP 4304, 729 patches, no head)
    under --tp 2, as vLLM 0.33.0's llava_onevision.py builds them: every layer (vision_feature_layer -1) split as
    siglip.py splits it, no post_layernorm; its projector two nn.Linear and image_newline, whole on every rank."""
    from llmcount.tower_parallel import placement

    d, f = 1152, 4304
    layer = 3 * (d * d + d) // 2 + d * d // 2 + d + (d * f + f) // 2 + f * d // 2 + d + 4 * d
    tower = 3 * 14**2 * d + d + 729 * d + 26 * layer
    projector = d * 4096 + 4096 + 4096 * 4096 + 4096 + 4096
    model = read_config({"model_type": "llava_onevision"}, "test config")
    assert placement(model, 2, 1).parameters == tower + projector == 199_721_744 + 21_508_096
    listed = read_config({"model_type": "llava_onevision", "vision_feature_layer": [-2, -1]}, "test config")
    with pytest.raises(LlmcountError, match="vLLM's projector takes one layer's width"):
        placement(listed, 2, 1)


# Small configs of this file's composites, written by save_pretrained for verify.
SMALL_TEXT = {"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 1}
SMALL_TEXT |= {"intermediate_size": 16, "vocab_size": 64}
SMALL_VIT = {"num_hidden_layers": 1, "hidden_size": 16, "num_attention_heads": 2}
WRITTEN = {
    "janus": {
        "text_config": {"model_type": "llama", **SMALL_TEXT},
        "vision_config": {**SMALL_VIT, "image_size": 32, "projection_dim": 32},
        "vq_config": {"base_channels": 32, "channel_multiplier": [1, 2], "num_res_blocks": 1, "latent_channels": 4}
        | {"embed_dim": 4, "num_embeddings": 16, "projection_dim": 32, "image_token_embed_dim": 32},
    },
    "deepseek_vl_hybrid": {
        "text_config": {"model_type": "llama", **SMALL_TEXT},
        "vision_config": {**SMALL_VIT, "intermediate_size": 8, "image_size": 28, "patch_size": 14},
        "high_res_vision_config": {**SMALL_VIT, "mlp_dim": 8, "image_size": 64, "output_channels": 8}
        | {"num_hidden_layers": 2, "global_attn_indexes": [1], "window_size": 2},
    },
    "lfm3_vl": {
        "text_config": {"model_type": "lfm3", **SMALL_TEXT, "pad_token_id": 0},
        "vision_config": {**SMALL_VIT, "intermediate_size": 8, "num_key_value_heads": 1, "num_hidden_layers": 3},
        "projector_hidden_size": 8,
    },
}


@pytest.mark.parametrize("model_type", sorted(WRITTEN))
def test_verify_maps_a_written_checkpoint(tmp_path, model_type: str) -> None:
    """A checkpoint transformers writes (save_pretrained of a small model): the language model's tensors map to the
    record; the parts' tensors are set against their counts (parts/<name>) where verify knows their modules, else
    listed apart (parts_modules); either way they sum to the parts' counts."""
    import torch
    import transformers
    from transformers import AutoConfig

    from llmcount.checkpoint import part_places, verify

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = AutoConfig.for_model(model_type, **WRITTEN[model_type])
        torch.manual_seed(0)
        built = getattr(transformers, records.composite(model_type).model)(cfg)
        built.save_pretrained(tmp_path)
    result = verify(str(tmp_path))
    assert not result.unmapped, [t.name for t in result.unmapped]
    model = read_config({"model_type": model_type, **WRITTEN[model_type]}, model_type)
    if part_places(model) is not None:  # each part's tensors set against its count (test_verify_parts.py)
        assert not result.differences, result.differences
        apart = sum(c.checkpoint for c in result.components if c.path.startswith("parts/"))
        assert result.formula_total == model.whole_total
    else:
        assert all(c.path.startswith("other/") for c in result.differences), result.differences
        apart = sum(c.checkpoint for c in result.components if c.path.startswith("other/"))
        assert result.formula_total == model.counts.total
    assert apart == sum(part.model.counts.total for part in model.parts)
    assert model.whole_total == sum(p.numel() for p in built.parameters()), oracle.VERSIONS


# MiniMax-M3-VL's ViT also takes images of any size: its tower's and projector's FLOPs at --image-size against
# FlopCounterMode on get_image_features (the tower, then the per-patch and patch-merge MLPs), small, on the CPU.
MINIMAX_TEXT = {"hidden_size": 20, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1}
MINIMAX_TEXT |= {"head_dim": 8, "vocab_size": 64, "intermediate_size": 8, "dense_intermediate_size": 8}
MINIMAX_TEXT |= {"shared_intermediate_size": 8, "num_local_experts": 2, "num_experts_per_tok": 1}
MINIMAX_TEXT |= {"layer_types": ["full_attention"], "mlp_layer_types": ["dense"]}


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_minimax_m3_vl_flops_per_image_at_an_image_size(data) -> None:
    import torch
    import transformers
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoConfig

    from llmcount.formulas.tower_flops import image_flops

    patch, merge = data.draw(st.sampled_from([2, 3])), data.draw(st.sampled_from([1, 2]))
    vision = {**oracle.drawn_vit(data.draw), "patch_size": patch, "spatial_merge_size": merge}
    vision |= {
        "temporal_patch_size": data.draw(st.sampled_from([1, 2])),
        "num_channels": data.draw(st.sampled_from([1, 3])),
    }
    config = {"model_type": "minimax_m3_vl", "text_config": MINIMAX_TEXT, "vision_config": vision}
    config["projector_hidden_size"] = data.draw(st.sampled_from([8, 12]))
    rows, cols = merge * data.draw(st.integers(1, 4)), merge * data.draw(st.integers(1, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = AutoConfig.for_model("minimax_m3_vl", **{k: v for k, v in config.items() if k != "model_type"})
        model = transformers.MiniMaxM3SparseForConditionalGeneration._from_config(cfg, attn_implementation="eager")
    channels = vision["num_channels"] * vision["temporal_patch_size"] * patch**2
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model.eval().model.get_image_features(torch.zeros(rows * cols, channels), torch.tensor([[1, rows, cols]]))
    found = image_flops(read_config(config, "test config"), (rows * patch, cols * patch))
    assert found.per_image == counter.get_total_flops(), f"{config} ({oracle.VERSIONS})"
    assert found.image_tokens == rows * cols // merge**2


@pytest.mark.parametrize(
    ("vq_config", "message"),
    [
        ({"channel_multiplier": [1, 2.0]}, "channel_multiplier must be a non-empty list of positive integers"),
        ({"channel_multiplier": [1, 0]}, "channel_multiplier must be a non-empty list of positive integers"),
        ({"channel_multiplier": []}, "channel_multiplier must be a non-empty list of positive integers"),
        ({"base_channels": 16, "channel_multiplier": [2, 2]}, r"base_channels \(16\) must be a multiple of 32"),
    ],
)
def test_janus_vq_configs_torch_refuses_are_refused_naming_the_key(vq_config: dict, message: str) -> None:
    """VQ-VAE sizes JanusVQVAE cannot build (a float or non-positive multiplier, no resolution, GroupNorms of 32
    groups over 16 channels: ValueError num_channels must be divisible by num_groups) are refused by name."""
    with pytest.raises(RuleRefusal, match=message):
        read_config({"model_type": "janus", "vq_config": vq_config}, "test config")


@pytest.mark.parametrize(
    ("model_type", "part", "record", "symbol"),
    [
        ("janus", "vq", "janus_vqvae", "c_base"),
        ("janus", "vq_projector", "janus_generation", "n_code"),
        ("janus", "projector", "janus_aligner", "d_al"),
        ("deepseek_vl_hybrid", "high_res", "deepseek_vl_hybrid_sam", "N_sam"),
        ("deepseek_vl_hybrid", "high_res_projector", "deepseek_vl_hybrid_high_res", "d_neck"),
        ("deepseek_vl_hybrid", "projector", "deepseek_vl_hybrid_aligner", "d_vis"),
    ],
)
def test_parts_by_name(tmp_path, model_type: str, part: str, record: str, symbol: str) -> None:
    """`formula TYPE --part NAME` names each part `count` shows (Janus's VQ-VAE and generation head read from
    vq_config, DeepSeek-VL hybrid's SAM tower and its neck read from high_res_vision_config), by the type and by a
    config file; `count` shows each part apart."""
    from typer.testing import CliRunner

    from llmcount.cli.app import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type}))
    by_type = CliRunner().invoke(app, ["formula", model_type, "--part", part])
    assert by_type.exit_code == 0 and f"({record})" in by_type.stdout and symbol in by_type.stdout
    by_file = CliRunner().invoke(app, ["formula", str(path), "--part", part])
    assert by_file.exit_code == 0 and symbol in by_file.stdout, by_file.stderr
    shown = CliRunner().invoke(app, ["count", str(path)])
    role = part.removesuffix("_projector") + (" projector" if part.endswith("_projector") else " tower")
    role = part if part == "projector" else role
    assert shown.exit_code == 0 and f"\n{role}: " in shown.stdout and f"({record}, from " in shown.stdout


def test_images_of_hybrid_towers_whose_tokens_differ_are_refused_in_one_line(tmp_path) -> None:
    """flops --images: DeepseekVLHybridConfig's defaults give the aligner (224 // 16)² = 196 SigLIP tokens and the SAM
    projection (1024 // 16 // 4)² = 256, which the aligner cannot join token by token: refused in one line naming
    both (tests/test_towers_more_flops.py counts configs whose towers agree)."""
    from typer.testing import CliRunner

    from llmcount.cli.app import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "deepseek_vl_hybrid"}))
    result = CliRunner().invoke(app, ["flops", str(path), "--images", "1"])
    assert result.exit_code == 1 and result.stdout == ""
    message = "different numbers of tokens per image (the projector 196, the high_res projector 256)"
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"config": "text_config", "tower": "janus_vqvae"}, "not text_config"),
        ({"config": "vq", "tower": "janus_vqvae"}, r"a sub-config \(<name>_config\)"),
        ({"config": "vision_config", "tower": "janus_vqvae"}, "no other tower of the composite reads"),
        ({"config": "vq_config", "name": "projector", "tower": "janus_vqvae"}, "naming no other part"),
        ({"config": "vq_config", "name": "vq-vae", "tower": "janus_vqvae"}, "an identifier"),
        ({"config": "vq_config", "tower": "janus_vqvae", "runs": False}, r"unknown fields \['runs'\]"),
    ],
)
def test_bad_tower_entries_are_refused_naming_the_field(entry: dict, message: str) -> None:
    """A composite's second tower reads a sub-config of its own (not text_config, not the first tower's) and is named
    by an identifier no other part has: anything else is refused when composites.toml is read."""
    data = {"title": "T", "model": "M", "text": "llama", "vision": "janus_vision_model", "towers": [entry]}
    with pytest.raises(records.RecordError, match=message):
        records._composite("t", data, "composites.toml: composite.t")
