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
from llmcount.formulas.tower_flops import audio_flops, image_flops

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

TEXT = {**oracle.SMALL_TEXT, "vocab_size_per_layer_input": 300, "hidden_size_per_layer_input": 8}


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


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
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
        (
            {"model_type": "gemma4_unified", "vision_config": {"output_proj_dims": 1024}},
            ["--images", "1", "--image-size", "768"],
            "output_proj_dims (1024) is not mm_embed_dim (3840)",
        ),
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


# Qwen2.5-Omni's audio encoder on one audio of L log-mel frames (flops --audio-frames): chunks of 2 · n_window frames
# padded to the longest, attention within each chunk, the pooled tokens projected; FlopCounterMode on the encoder
# transformers builds (small, eager, on the CPU: it cuts the chunks from the lengths at run time).
OMNI_TEXT = {"hidden_size": 16, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2}
OMNI_TEXT |= {"num_key_value_heads": 1, "vocab_size": 32}
OMNI_VISION = {"depth": 1, "hidden_size": 8, "num_heads": 1, "intermediate_size": 8, "out_hidden_size": 16}


def omni_audio_oracle(audio: dict, frames: int) -> tuple[int, int]:
    """FlopCounterMode's count of Qwen2_5OmniAudioEncoder's eager forward over one audio of ``frames`` frames, and the
    tokens it puts out."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers.models.qwen2_5_omni import configuration_qwen2_5_omni, modeling_qwen2_5_omni

    cfg = configuration_qwen2_5_omni.Qwen2_5OmniAudioEncoderConfig(**audio)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoder = modeling_qwen2_5_omni.Qwen2_5OmniAudioEncoder._from_config(cfg, attn_implementation="eager").eval()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = encoder(torch.ones(cfg.num_mel_bins, frames), feature_lens=torch.tensor([frames]))
    return counter.get_total_flops(), out.last_hidden_state.shape[0]


def omni(audio: dict) -> dict:
    return {"model_type": "qwen2_5_omni_thinker", "text_config": OMNI_TEXT, "vision_config": OMNI_VISION} | {
        "audio_config": {**audio, "output_dim": 16}
    }


def test_qwen2_5_omni_audio_defaults_at_30_seconds_by_hand() -> None:
    """Qwen2_5OmniAudioEncoderConfig's defaults (32 layers of 1280, MLP 5120, 128 mel bins, n_window 100) on 3000
    frames (30 s at 100 frames a second): 15 chunks of 200 frames, 100 tokens each after the stride-2 convolution,
    1500 tokens, pooled to 750 and projected to the thinker's 3584."""
    d, ff, t = 1280, 5120, 1500
    convs = 2 * 3000 * 3 * 128 * d + 2 * 1500 * 3 * d * d
    layers = 32 * (4 * 2 * t * d * d + 2 * 2 * 15 * 100**2 * d + 2 * 2 * t * d * ff)
    found = audio_flops(read_config({"model_type": "qwen2_5_omni_thinker"}, "omni"), 3000)
    assert found.per_image == convs + layers + 2 * 750 * d * 3584 == 1_936_588_800_000
    assert found.image_tokens == 750


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(
    audio=st.fixed_dictionaries(
        {
            "d_model": st.sampled_from([8, 16]),
            "encoder_ffn_dim": st.sampled_from([8, 20]),
            "num_mel_bins": st.sampled_from([4, 8]),
            "encoder_layers": st.integers(1, 2),
            "encoder_attention_heads": st.sampled_from([1, 2]),
            "n_window": st.integers(1, 4),
        }
    ),
    frames=st.integers(1, 40),
)
def test_drawn_qwen2_5_omni_audio_flops_match_flop_counter(audio: dict, frames: int) -> None:
    found = audio_flops(read_config(omni(audio), "test config"), frames)
    want, tokens = omni_audio_oracle({**audio, "output_dim": 16}, frames)
    assert (found.per_image, found.image_tokens) == (want, tokens), f"{audio} {frames} frames {oracle.VERSIONS}"


def test_whole_forward_with_audio_adds_its_tokens(tmp_path) -> None:
    """The language model runs over the S text tokens and the audio's tokens; the encoder's FLOPs are added once per
    sequence."""
    from typer.testing import CliRunner

    from llmcount.cli.app import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps(omni({"d_model": 16, "encoder_layers": 1, "encoder_attention_heads": 2})))
    runner = CliRunner()
    both = json.loads(runner.invoke(app, ["flops", str(path), "--seq", "10", "--audio-frames", "40", "--json"]).stdout)
    plain = json.loads(runner.invoke(app, ["flops", str(path), "--seq", "20", "--json"]).stdout)
    assert both["audio"]["audio_tokens"] == 10 and both["seq"] == 20 and both["text_tokens"] == 10
    assert both["forward_flops"] == plain["forward_flops"]
    assert both["whole_forward_flops"] == plain["forward_flops"] + both["audio"]["per_audio_flops"]
    text = runner.invoke(app, ["flops", str(path), "--seq", "10", "--audio-frames", "40"]).stdout
    assert "language model above: S = 10 text + 10 audio tokens" in text


@pytest.mark.parametrize(
    ("config", "args", "message"),
    [
        (
            {"model_type": "gemma4", "audio_config": {}},
            ["--audio-frames", "300"],
            "FLOPs per audio: the Gemma 4 audio encoder (gemma4_audio) runs its first subsampling convolution over the"
            " log-mel bins of each frame, a number its config does not hold",
        ),
        ({"model_type": "gemma4"}, ["--audio-frames", "300"], "FLOPs per audio: the model has no audio encoder"),
        ({"model_type": "qwen2_5_omni_thinker"}, ["--audio-frames", "0"], "--audio-frames must be a positive integer"),
        ({"model_type": "qwen2_5_omni_thinker"}, ["--audio-frames", "10000001"], "--audio-frames must be at most"),
        (
            {"model_type": "qwen2_5_omni_thinker"},
            ["--audio-frames", "10", "--conventions"],
            "--audio-frames with flops: forward FLOPs only",
        ),
    ],
)
def test_audio_flops_refused_in_one_line(tmp_path, config: dict, args: list[str], message: str) -> None:
    from typer.testing import CliRunner

    from llmcount.cli.app import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = CliRunner().invoke(app, ["flops", str(path), *args])
    code = 2 if message.startswith("--audio-frames must") else 1  # a number --audio-frames does not take: usage
    assert result.exit_code == code and result.stdout == "", result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr


@pytest.mark.parametrize(("rows", "cols", "full"), [(6, 8, [1])])
def test_qwen2_5_omni_vision_flops_match_flop_counter(rows: int, cols: int, full: list[int]) -> None:
    """The thinker's vision encoder is Qwen2.5-VL's windowed ViT: its record's FLOPs at an image of rows × cols patches
    equal FlopCounterMode's on Qwen2_5OmniVisionEncoder (full attention on the layers of fullatt_block_indexes)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers.models.qwen2_5_omni import configuration_qwen2_5_omni, modeling_qwen2_5_omni

    vision = {**OMNI_VISION, "depth": 2, "hidden_size": 16, "num_heads": 2, "patch_size": 2, "window_size": 8}
    vision["fullatt_block_indexes"] = full
    cfg = configuration_qwen2_5_omni.Qwen2_5OmniVisionEncoderConfig(**vision)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoder = modeling_qwen2_5_omni.Qwen2_5OmniVisionEncoder._from_config(cfg, attn_implementation="eager").eval()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        encoder(torch.zeros(rows * cols, 3 * 2 * 2**2), grid_thw=torch.tensor([[1, rows, cols]]))
    config = omni({"d_model": 16, "encoder_layers": 1, "encoder_attention_heads": 2}) | {"vision_config": vision}
    found = image_flops(read_config(config, "test config"), (rows * 2, cols * 2))
    assert found.per_image == counter.get_total_flops(), oracle.VERSIONS
    assert found.image_tokens == rows * cols // 4


@pytest.mark.parametrize(("patch", "pool", "rows", "cols"), [(2, 2, 3, 2), (4, 1, 2, 5)])
def test_gemma4_unified_vision_embedder_flops_match_flop_counter(patch: int, pool: int, rows: int, cols: int) -> None:
    """Gemma 4 Unified has no vision encoder: its embedder's linear over each model patch (p · k pixels square) and the
    projection to the language model, against FlopCounterMode on get_image_features (the model patches unpadded)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoConfig, AutoModelForImageTextToText

    vision = {"patch_size": patch, "pooling_kernel_size": pool, "mm_embed_dim": 12, "output_proj_dims": 12}
    vision["mm_posemb_size"] = 16
    config = {"model_type": "gemma4_unified", "text_config": TEXT, "vision_config": vision}
    with warnings.catch_warnings(), torch.device("cpu"):
        warnings.simplefilter("ignore")
        model = AutoModelForImageTextToText.from_config(AutoConfig.for_model(**config)).eval()
    side = patch * pool
    ys, xs = torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij")
    positions = torch.stack([xs.flatten(), ys.flatten()], -1)[None]
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model.model.get_image_features(torch.ones(1, rows * cols, 3 * side * side), positions)
    found = image_flops(read_config(config, "test config"), (rows * side, cols * side))
    assert found.per_image == counter.get_total_flops(), oracle.VERSIONS
    assert found.image_tokens == rows * cols


def test_whole_gemma4_forward_with_an_image_matches_flop_counter(tmp_path) -> None:
    """flops --images 1 --image-size: the language model over S text tokens and the image's pooled tokens, with the
    tower, pooler and embedder once, as one forward of transformers' whole model counts them (small, on the CPU)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoConfig, AutoModelForImageTextToText
    from typer.testing import CliRunner

    from llmcount.cli.app import app

    vision = {"hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 1, "num_attention_heads": 2}
    vision |= {"num_key_value_heads": 1, "head_dim": 8, "patch_size": 4, "pooling_kernel_size": 2}
    config = {"model_type": "gemma4", "text_config": {**TEXT, "num_hidden_layers": 2}, "vision_config": vision}
    config |= {"image_token_id": 299, "boi_token_id": 297, "eoi_token_id": 298}
    with warnings.catch_warnings(), torch.device("cpu"):
        warnings.simplefilter("ignore")
        model = AutoModelForImageTextToText.from_config(AutoConfig.for_model(**config, attn_implementation="eager"))
    rows, cols, seq = 4, 6, 10
    tokens = rows * cols // 4
    ys, xs = torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij")
    positions = torch.stack([xs.flatten(), ys.flatten()], -1)[None]
    ids = torch.cat([torch.full((1, tokens), 299), torch.arange(1, seq + 1)[None]], 1)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model.eval()(
            input_ids=ids,
            pixel_values=torch.ones(1, rows * cols, 3 * 4 * 4),
            image_position_ids=positions,
            attention_mask=torch.ones_like(ids),
        )
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    args = ["flops", str(path), "--images", "1", "--image-size", "16x24", "--seq", str(seq), "--json"]
    data = json.loads(CliRunner().invoke(app, args).stdout)
    assert data["seq"] == seq + tokens and data["images"]["image_tokens_per_image"] == tokens
    assert data["whole_forward_flops"] == counter.get_total_flops(), oracle.VERSIONS
