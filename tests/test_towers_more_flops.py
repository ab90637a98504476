"""Forward FLOPs per image of the towers of BLIP-2, Janus, Kosmos-2 and the other composites whose parts read the
input image (``flops MODEL --images N``), exact against torch's FlopCounterMode on transformers' own
``get_image_features`` and whole forward (small models), and the parts whose FLOPs are refused by name."""

from __future__ import annotations

import json
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcount.formulas.config import read_config
from llmcount.formulas.tower_flops import image_flops

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

import torch  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402
from transformers import AutoConfig  # noqa: E402

OPT = {
    "model_type": "opt",
    "hidden_size": 32,
    "ffn_dim": 48,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "vocab_size": 300,
    "word_embed_proj_dim": 32,
}
"""A one-layer OPT, BLIP-2's default language model, small."""


def _built(config: dict, device: str, auto: str = "AutoModelForImageTextToText"):
    import transformers

    built = AutoConfig.for_model(**config, attn_implementation="eager")
    with warnings.catch_warnings(), torch.device(device):
        warnings.simplefilter("ignore")
        found = getattr(transformers, auto)
        model = (found.from_config(built) if auto.startswith("Auto") else found(built)).eval()
    return model.requires_grad_(False)  # FlopCounterMode's module hooks refuse an expanded Parameter otherwise


def counted(run) -> int:
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        run()
    return counter.get_total_flops()


@st.composite
def drawn_blip2(draw) -> dict:
    patch = draw(st.sampled_from([2, 4]))
    vision = {
        **oracle.drawn_vit(draw, layers=2),
        "patch_size": patch,
        "image_size": patch * draw(st.integers(1, 4)) + draw(st.integers(0, patch - 1)),
    }
    heads = draw(st.sampled_from([1, 2]))
    qformer = {
        "hidden_size": heads * draw(st.sampled_from([4, 8])),
        "num_attention_heads": heads,
        "intermediate_size": draw(st.sampled_from([8, 20])),
        "num_hidden_layers": draw(st.integers(1, 3)),
        "cross_attention_frequency": draw(st.integers(1, 3)),
    }
    queries = draw(st.integers(1, 6))
    return {
        "model_type": "blip-2",
        "num_query_tokens": queries,
        "text_config": OPT,
        "vision_config": vision,
        "qformer_config": qformer,
    }


def blip2_oracle(config: dict) -> int:
    """FlopCounterMode's count of Blip2ForConditionalGeneration.get_image_features (EVA ViT, Q-Former, language
    projection) over one image of the config's size (on the CPU: the Q-Former's mask reads a tensor's value)."""
    model = _built(config, "cpu")
    size = model.config.vision_config.image_size
    pixels = torch.ones(1, 3, size, size)
    return counted(lambda: model.get_image_features(pixel_values=pixels))


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(config=drawn_blip2())
def test_drawn_blip2_image_flops_match_flop_counter(config: dict) -> None:
    found = image_flops(read_config(config, "drawn blip-2"))
    assert found.per_image == blip2_oracle(config), f"{config} ({oracle.VERSIONS})"
    assert found.image_tokens == config["num_query_tokens"]


def test_blip2_defaults_by_hand() -> None:
    """Blip2Config's defaults (BLIP-2 OPT-2.7B): EVA ViT-g of 39 layers of 1408 (MLP 6144) on 224 pixels in patches
    of 14: 256 patches and the class token, 257 tokens; a Q-Former of 12 layers of 768 (MLP 3072) over 32 queries,
    cross-attending to the 257 tokens on layers 0, 2, ..., 10 (six of them); a projection to the 768 of OPTConfig's
    defaults (its text_config)."""
    t, d, ff = 257, 1408, 6144
    tower = 2 * 256 * 3 * 14**2 * d + 39 * (2 * t * 3 * d * d + 2 * 2 * t * t * d + 2 * t * d * d + 2 * 2 * t * d * ff)
    q, dq, fq = 32, 768, 3072
    self_attn = 2 * q * 3 * dq * dq + 2 * 2 * q * q * dq + 2 * q * dq * dq
    cross = 2 * q * dq * dq + 2 * 2 * t * d * dq + 2 * 2 * q * t * dq + 2 * q * dq * dq
    qformer = 12 * (self_attn + 2 * 2 * q * dq * fq) + 6 * cross + 2 * q * dq * 768
    found = image_flops(read_config({"model_type": "blip-2"}, "blip-2"))
    assert found.per_image == tower + qformer
    assert found.image_tokens == 32


def run(*args: str):
    from typer.testing import CliRunner

    from llmcount.cli.app import app

    return CliRunner().invoke(app, list(args))


BLIP2_TINY = {
    "model_type": "blip-2",
    "num_query_tokens": 3,
    "image_token_index": 299,
    "text_config": OPT,
    "vision_config": {
        "hidden_size": 16,
        "intermediate_size": 20,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "patch_size": 4,
        "image_size": 12,
    },
    "qformer_config": {"hidden_size": 8, "intermediate_size": 12, "num_hidden_layers": 2, "num_attention_heads": 2},
}


LLAMA = {
    "model_type": "llama",
    **{"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 1},
    **{"intermediate_size": 16, "vocab_size": 300},
}
JANUS = {
    "model_type": "janus",
    "image_token_id": 299,
    "text_config": LLAMA,
    "vision_config": {"num_hidden_layers": 2, "hidden_size": 16, "num_attention_heads": 2, "mlp_ratio": 1.5}
    | {"image_size": 20, "patch_size": 8, "projection_dim": 32, "depth": 3},
    "vq_config": {"base_channels": 32, "channel_multiplier": [1, 2], "num_res_blocks": 1, "latent_channels": 4}
    | {"embed_dim": 4, "num_embeddings": 16, "projection_dim": 32, "image_token_embed_dim": 32},
}
KOSMOS2 = {
    "model_type": "kosmos-2",
    "latent_query_num": 3,
    "text_config": {"embed_dim": 16, "layers": 1, "attention_heads": 2, "ffn_dim": 24, "vocab_size": 300},
    "vision_config": {"num_hidden_layers": 2, "hidden_size": 8, "intermediate_size": 12, "num_attention_heads": 2}
    | {"image_size": 20, "patch_size": 8},
}


def test_janus_image_flops_match_flop_counter() -> None:
    """Janus's SigLIP-style ViT on (20 // 8)² = 4 patches (no class token) and its aligner of three linears, as
    JanusModel.get_image_features runs them; the image-generation path (VQ-VAE, generation aligner and head) is
    left out, with the reason said."""
    found = image_flops(read_config(JANUS, "janus"))
    model = _built(JANUS, "meta")
    pixels = torch.ones(1, 3, 20, 20, device="meta")
    assert found.per_image == counted(lambda: model.model.get_image_features(pixel_values=pixels)), oracle.VERSIONS
    assert found.image_tokens == 4
    assert [why.split(":")[0] for why in found.not_run] == [
        "the vq tower (Janus VQ-VAE (image tokenizer of the generation path))",
        "the vq projector (Janus generation embeddings, aligner and head)",
    ]


PALIGEMMA = {
    "model_type": "paligemma",
    "projection_dim": 32,
    "text_config": {**LLAMA, "model_type": "gemma", "head_dim": 16},
    "vision_config": {"num_hidden_layers": 1, "hidden_size": 16, "num_attention_heads": 2, "intermediate_size": 8}
    | {"image_size": 20, "patch_size": 8},
}


def test_paligemma_image_flops_match_flop_counter() -> None:
    """PaliGemma's SigLIP on 4 patches and its one linear to projection_dim on each of them."""
    found = image_flops(read_config(PALIGEMMA, "paligemma"))
    model = _built(PALIGEMMA, "meta")
    pixels = torch.ones(1, 3, 20, 20, device="meta")
    assert found.per_image == counted(lambda: model.model.get_image_features(pixel_values=pixels)), oracle.VERSIONS
    assert found.image_tokens == 4


SMALL_VIT = {"num_hidden_layers": 3, "hidden_size": 16, "num_attention_heads": 2, "intermediate_size": 8}
SMALL_VIT |= {"image_size": 20, "patch_size": 8}


@pytest.mark.parametrize(
    ("config", "tokens"),
    [
        # SigLIP's 4 patches through the aligner's two linears
        ({"model_type": "deepseek_vl", "vision_config": {**SMALL_VIT, "model_type": "siglip_vision_model"}}, 4),
        # CLIP's 4 patches and class token, the class token dropped, two layers' features concatenated
        (
            {"model_type": "vipllava", "vision_config": {**SMALL_VIT, "model_type": "clip_vision_model"}}
            | {"vision_feature_layer": [-2, 1]},
            4,
        ),
    ],
)
def test_projector_image_flops_match_flop_counter(config: dict, tokens: int) -> None:
    config = {**config, "text_config": LLAMA}
    found = image_flops(read_config(config, config["model_type"]))
    model = _built(config, "meta")
    pixels = torch.ones(1, 3, 20, 20, device="meta")
    assert found.per_image == counted(lambda: model.model.get_image_features(pixel_values=pixels)), oracle.VERSIONS
    assert found.image_tokens == tokens


MISTRAL3 = {
    "model_type": "mistral3",
    "text_config": {**LLAMA, "model_type": "mistral"},
    "vision_config": {"model_type": "pixtral", "num_hidden_layers": 2, "hidden_size": 16, "num_attention_heads": 2}
    | {"intermediate_size": 12, "image_size": 64, "patch_size": 4, "head_dim": 8},
}


@pytest.mark.parametrize(("height", "width", "tokens"), [(40, 28, 5 * 3), (22, 64, 2 * 8)])
def test_mistral3_image_flops_at_an_image_size_match_flop_counter(height: int, width: int, tokens: int) -> None:
    """Pixtral on one image of height × width pixels (flops --image-size): its (H // 4) · (W // 4) patches, then
    Mistral 3's projector merging 2 × 2 squares (a last odd row or column dropped), as get_image_features runs them."""
    found = image_flops(read_config(MISTRAL3, "mistral3"), (height, width))
    model = _built(MISTRAL3, "cpu")
    pixels, sizes = torch.ones(1, 3, height, width), torch.tensor([[height, width]])
    run_it = lambda: model.model.get_image_features(pixel_values=pixels, image_sizes=sizes)  # noqa: E731
    assert found.per_image == counted(run_it), oracle.VERSIONS
    assert found.image_tokens == tokens


def test_kosmos2_image_flops_match_flop_counter() -> None:
    """Kosmos-2's CLIP-style ViT on 4 patches and the class token, then its image-to-text projection: the dense
    linear on the 5 tokens and the 3 latent queries attending to the 5 + 3, as get_image_features runs them."""
    found = image_flops(read_config(KOSMOS2, "kosmos-2"))
    model = _built(KOSMOS2, "meta")
    pixels = torch.ones(1, 3, 20, 20, device="meta")
    assert found.per_image == counted(lambda: model.get_image_features(pixel_values=pixels)), oracle.VERSIONS
    assert found.image_tokens == 3


def test_blip_vision_tower_flops_match_flop_counter() -> None:
    """BLIP's ViT (BlipVisionModel: a fused qkv, the class token) on (18 // 4)² = 16 patches; the whole of BLIP is
    refused by its text decoder, whose cross-attention has no FLOPs formula."""
    from llmcount.formulas import records
    from llmcount.formulas.tower_flops import part_flops

    vision = {"hidden_size": 16, "intermediate_size": 20, "num_hidden_layers": 2, "num_attention_heads": 2}
    vision |= {"patch_size": 4, "image_size": 18}
    tower = read_config(
        {**vision, "model_type": "blip_vision_model"}, "vision_config", "tower", records.tower("blip_vision_model")
    )
    ours = sum(t.flops for t in part_flops(tower, "vision tower", "tower"))
    from transformers import BlipVisionConfig, BlipVisionModel

    with torch.device("meta"):
        model = BlipVisionModel(BlipVisionConfig(**vision, attn_implementation="eager")).eval()
    pixels = torch.ones(1, 3, 18, 18, device="meta")
    assert ours == counted(lambda: model(pixel_values=pixels)), oracle.VERSIONS


def deepseek_vl_hybrid(high_res: dict) -> dict:
    """A small DeepSeek-VL hybrid: a one-layer SigLIP on (32 // 8)² = 16 patches and the SAM tower ``high_res`` on a
    64-pixel image in patches of 4, whose 16² grid the projection's two stride-2 convolutions take to 4² = 16."""
    sam = {"num_hidden_layers": 3, "hidden_size": 8, "num_attention_heads": 2, "mlp_dim": 12, "image_size": 64}
    return {
        "model_type": "deepseek_vl_hybrid",
        "image_token_id": 299,
        "text_config": LLAMA,
        "vision_config": {"model_type": "siglip_vision_model", "num_hidden_layers": 1, "hidden_size": 16}
        | {"num_attention_heads": 2, "intermediate_size": 8, "image_size": 32, "patch_size": 8},
        "high_res_vision_config": sam | {"patch_size": 4, "output_channels": 4} | high_res,
    }


@pytest.mark.parametrize(
    "high_res",
    [
        {"global_attn_indexes": [1], "window_size": 5},  # windows of 5 on the 16² grid: padded to 20²
        {"global_attn_indexes": [0, 2], "window_size": 4, "use_rel_pos": False},
    ],
)
def test_deepseek_vl_hybrid_image_flops_match_flop_counter(high_res: dict) -> None:
    """Both towers, the SAM tower's second neck and its projection (run twice) and the aligner of both, as
    DeepseekVLHybridModel.get_image_features runs them on a low- and a high-resolution image."""
    config = deepseek_vl_hybrid(high_res)
    found = image_flops(read_config(config, "deepseek_vl_hybrid"))
    model = _built(config, "cpu")
    low, high = torch.ones(1, 3, 32, 32), torch.ones(1, 3, 64, 64)
    run_it = lambda: model.model.get_image_features(pixel_values=low, high_res_pixel_values=high)  # noqa: E731
    assert found.per_image == counted(run_it), f"{high_res} ({oracle.VERSIONS})"
    assert found.image_tokens == 16


@pytest.mark.parametrize(("config", "tokens"), [(JANUS, 4), (BLIP2_TINY, 3)])
def test_whole_forward_with_an_image_matches_flop_counter(tmp_path, config: dict, tokens: int) -> None:
    """The whole model over 5 text tokens and one image whose tokens stand first: the image's parts once, the
    language model over 5 + its image tokens, as one forward of transformers' model counts it."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("flops", str(path), "--images", "1", "--seq", "5", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["seq"] == 5 + tokens and data["images"]["image_tokens_per_image"] == tokens
    model = _built(config, "cpu")
    token = config.get("image_token_id", config.get("image_token_index"))
    ids = torch.cat([torch.full((1, tokens), token), torch.arange(1, 6)[None]], 1)
    size = model.config.vision_config.image_size
    pixels = torch.ones(1, 3, size, size)
    whole = counted(lambda: model(input_ids=ids, pixel_values=pixels, attention_mask=torch.ones_like(ids)))
    assert data["whole_forward_flops"] == whole, oracle.VERSIONS


QWEN2_AUDIO = {
    "model_type": "qwen2_audio",
    "audio_token_index": 299,
    "text_config": {**LLAMA, "model_type": "qwen2"},
    "audio_config": {"d_model": 8, "encoder_layers": 2, "encoder_attention_heads": 2, "encoder_ffn_dim": 12}
    | {"num_mel_bins": 4, "max_source_positions": 10},
}


@pytest.mark.parametrize(("frames", "tokens"), [(13, 3), (20, 5)])
def test_qwen2_audio_whole_forward_matches_flop_counter(tmp_path, frames: int, tokens: int) -> None:
    """Qwen2-Audio over 5 text tokens and one audio of ``frames`` log-mel frames, padded to 2 · max_source_positions
    = 20: the encoder and the projector on the padded input, the language model over 5 + the audio's tokens
    (((frames - 1) // 2 + 1 - 2) // 2 + 1), as one forward of transformers' model counts it."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN2_AUDIO))
    result = run("flops", str(path), "--audio-frames", str(frames), "--seq", "5", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["audio"]["audio_tokens"] == tokens and data["seq"] == 5 + tokens
    model = _built(QWEN2_AUDIO, "cpu", "Qwen2AudioForConditionalGeneration")
    features, mask = torch.ones(1, 4, 20), torch.zeros(1, 20, dtype=torch.long)
    mask[0, :frames] = 1
    ids = torch.cat([torch.full((1, tokens), 299), torch.arange(1, 6)[None]], 1)
    whole = counted(
        lambda: model(
            input_ids=ids, input_features=features, feature_attention_mask=mask, attention_mask=torch.ones_like(ids)
        )
    )
    assert data["whole_forward_flops"] == whole, oracle.VERSIONS


VOXTRAL = {
    "model_type": "voxtral",
    "text_config": LLAMA,
    "audio_config": {"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 16}
    | {"num_mel_bins": 4, "max_source_positions": 10},
}


@pytest.mark.parametrize(("frames", "chunks"), [(20, 1), (27, 2)])
def test_voxtral_audio_flops_match_flop_counter(frames: int, chunks: int) -> None:
    """Voxtral's encoder on each chunk of 2 · max_source_positions = 20 frames (an audio of 27 frames is two, the
    last padded), each chunk's 10 states of 8 regrouped into 10 · 8 / 16 = 5 tokens of intermediate_size 16 and
    projected, as VoxtralForConditionalGeneration.get_audio_features runs them on the chunks."""
    from llmcount.formulas.tower_flops import audio_flops

    found = audio_flops(read_config(VOXTRAL, "voxtral"), frames)
    model = _built(VOXTRAL, "cpu", "VoxtralForConditionalGeneration")
    features = torch.ones(chunks, 4, 20)
    assert found.per_image == counted(lambda: model.get_audio_features(input_features=features)), oracle.VERSIONS
    assert found.image_tokens == 5 * chunks


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"model_type": "kosmos-2.5"},
            "FLOPs per image: the Kosmos-2.5 vision tower (kosmos_2_5_vision_model) runs on the flattened patches its"
            " processor cuts",
        ),
        (
            {"model_type": "pix2struct"},
            "FLOPs per image: the Pix2Struct image encoder (pix2struct_vision_model) runs on the flattened patches",
        ),
        ({"model_type": "blip"}, "not derived for BLIP text decoder (blip_text_model) yet"),
        ({"model_type": "mistral3"}, "takes images of any size and its config names none: give it with --image-size"),
        # Idefics3Config's defaults: 7² patches, which its pixel shuffle of scale 2 cannot fold (an error, not a bug)
        (
            {"model_type": "idefics3"},
            "idefics3_connector image_tokens: does not evaluate to an integer: t_vis/m_vis**2",
        ),
        (
            {"model_type": "deepseek_vl_hybrid"},
            "its projectors give different numbers of tokens per image (the projector 196, the high_res projector 256)",
        ),
        (
            {"model_type": "instructblip"},
            "FLOPs per image: the InstructBLIP Q-Former and language projection (instructblip_qformer) runs over the"
            " n_query queries and the instruction's tokens (qformer_input_ids) together",
        ),
    ],
)
def test_image_flops_refused_in_one_line(tmp_path, config: dict, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("flops", str(path), "--images", "1")
    assert result.exit_code == 1 and result.stdout == "", result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
