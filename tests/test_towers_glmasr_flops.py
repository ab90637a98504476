"""Forward FLOPs of GLM-ASR's audio encoder and projector on one audio (``flops MODEL --audio-frames L``), and the audio
tokens they put into the language model: exact against torch's FlopCounterMode on transformers' GlmAsr model (the
whole forward, small and on the CPU, for drawn configs; the encoder and projector on the meta device at the class
defaults), with the defaults also derived by hand."""

from __future__ import annotations

import json
import math
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcount.formulas.config import read_config
from llmcount.formulas.tower_flops import audio_flops

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

AUDIO_TOKEN = 63
TEXT = {**oracle.SMALL_TEXT, "model_type": "llama", "vocab_size": 64}


def glmasr(audio: dict) -> dict:
    """A GLM-ASR config with a small language model (every size given: GlmAsrConfig fills the ones left out with
    GLM-ASR-Nano's) and ``audio`` as its encoder's config."""
    return {"model_type": "glmasr", "text_config": TEXT, "audio_config": audio, "audio_token_id": AUDIO_TOKEN}


def whole_forward_oracle(config: dict, frames: int, seq: int) -> tuple[int, int, int]:
    """FlopCounterMode's counts on GlmAsrForConditionalGeneration (eager, CPU) with one audio of ``frames`` unmasked
    frames: get_audio_features alone, the audio tokens it returns, and the whole forward over those tokens and ``seq``
    text tokens."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    built = AutoConfig.for_model(**config, attn_implementation="eager")
    with warnings.catch_warnings(), torch.device("cpu"):
        warnings.simplefilter("ignore")
        model = AutoModelForSeq2SeqLM.from_config(built).eval()
    features = torch.ones(1, built.audio_config.num_mel_bins, frames)
    mask = torch.ones(1, frames, dtype=torch.long)
    with torch.no_grad(), FlopCounterMode(display=False) as audio:
        tokens = model.model.get_audio_features(features, mask).pooler_output.shape[0]
    ids = torch.cat([torch.full((1, tokens), AUDIO_TOKEN), torch.arange(1, seq + 1)[None]], 1)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(input_ids=ids, input_features=features, input_features_mask=mask, attention_mask=torch.ones_like(ids))
    return audio.get_total_flops(), tokens, counter.get_total_flops()


def test_glmasr_defaults_at_30_seconds_by_hand() -> None:
    """GlmAsrConfig's defaults (GLM-ASR-Nano: an encoder of 32 layers of 1280, 20 heads of 64, MLP 5120, 128 mel bins;
    a language model of width 2048) on 3000 frames, the 2 · max_position_embeddings (1500) of a 30 s chunk: T = 1500
    positions after the stride-2 convolution, regrouped into 1500 · 1280 / 5120 = 375 rows, all 375 = (1500 - 4) // 4
    + 1 entering the language model. Also FlopCounterMode's count of the encoder and projector on the meta device."""
    d, ff, n, t, rows, text = 1280, 5120, 128, 1500, 375, 2048
    convs = 2 * 3000 * 3 * n * d + 2 * t * 3 * d * d
    layer = 4 * 2 * t * d * d + 2 * 2 * t * t * d + 2 * 2 * t * d * ff
    projector = 2 * rows * ff * 2 * text + 2 * rows * 2 * text * text
    found = audio_flops(read_config({"model_type": "glmasr"}, "glmasr"), 3000)
    assert found.per_image == convs + 32 * layer + projector == 2_295_791_616_000
    assert found.image_tokens == 375
    assert found.per_image == meta_oracle({"model_type": "glmasr"}, 3000), oracle.VERSIONS


def meta_oracle(config: dict, frames: int) -> int:
    """FlopCounterMode's count of GlmAsrEncoder and GlmAsrMultiModalProjector on the meta device over ``frames``
    frames, the encoder's states regrouped as get_audio_features does."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoConfig
    from transformers.models.glmasr import modeling_glmasr

    built = AutoConfig.for_model(**config, attn_implementation="eager")
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        encoder = modeling_glmasr.GlmAsrEncoder._from_config(built.audio_config, attn_implementation="eager")
        projector = modeling_glmasr.GlmAsrMultiModalProjector(built)
    features = torch.ones(1, built.audio_config.num_mel_bins, frames, device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        states = encoder.eval()(features).last_hidden_state
        projector(states.reshape(1, -1, built.audio_config.intermediate_size))
    return counter.get_total_flops()


@st.composite
def glmasr_audio(draw) -> tuple[dict, int]:
    """A small GLM-ASR encoder (grouped key/value heads, a head_dim of its own or d / h) and a number of frames whose
    positions after the stride-2 convolution regroup into rows of intermediate_size."""
    heads = draw(st.sampled_from([1, 2, 4]))
    audio = {
        "hidden_size": draw(st.sampled_from([8, 16])),
        "intermediate_size": draw(st.sampled_from([4, 8, 16, 32])),
        "num_hidden_layers": draw(st.integers(1, 2)),
        "num_attention_heads": heads,
        "num_key_value_heads": draw(st.sampled_from([h for h in (1, 2, 4) if heads % h == 0])),
        "num_mel_bins": draw(st.sampled_from([4, 6])),
    }
    if draw(st.booleans()):
        audio["head_dim"] = draw(st.sampled_from([2, 6]))
    step = audio["intermediate_size"] // math.gcd(audio["intermediate_size"], audio["hidden_size"])
    positions = step * draw(st.integers(1, 12 // step + 1))
    return audio, 2 * positions - draw(st.integers(0, 1))  # either frame count gives those positions


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(drawn=glmasr_audio())
def test_drawn_glmasr_audio_flops_match_flop_counter(tmp_path_factory, drawn: tuple[dict, int]) -> None:
    """The encoder's and projector's FLOPs, the audio tokens, and flops --audio-frames's whole forward (the language
    model over the text and audio tokens) equal FlopCounterMode's on transformers' whole model."""
    from typer.testing import CliRunner

    from llmcount.cli.app import app

    audio, frames = drawn
    config, seq = glmasr(audio), 5
    want, tokens, whole = whole_forward_oracle(config, frames, seq)
    found = audio_flops(read_config(config, "test config"), frames)
    assert (found.per_image, found.image_tokens) == (want, tokens), f"{audio} {frames} frames {oracle.VERSIONS}"
    path = tmp_path_factory.mktemp("glmasr") / "config.json"
    path.write_text(json.dumps(config))
    args = ["flops", str(path), "--seq", str(seq), "--audio-frames", str(frames), "--json"]
    data = json.loads(CliRunner().invoke(app, args).stdout)
    assert data["seq"] == seq + tokens and data["audio"]["audio_tokens"] == tokens
    assert data["whole_forward_flops"] == whole, f"{audio} {frames} frames {oracle.VERSIONS}"


@pytest.mark.parametrize(
    ("audio", "frames", "tokens"),
    [
        ({"hidden_size": 16, "intermediate_size": 16}, 13, 1),  # 7 rows, 7 positions merged in fours: 1
        ({"hidden_size": 8, "intermediate_size": 32}, 39, 5),  # 20 positions: 5 rows, 5 merged
        ({"hidden_size": 8, "intermediate_size": 8}, 5, 0),  # 3 positions: fewer than the four of a merged token
    ],
)
def test_glmasr_audio_tokens_are_the_fewer_of_rows_and_merged_positions(audio: dict, frames: int, tokens: int) -> None:
    """get_audio_features keeps, of the projector's rows, those below the positions merged in fours."""
    audio |= {"num_hidden_layers": 1, "num_attention_heads": 2, "num_mel_bins": 4}
    assert audio_flops(read_config(glmasr(audio), "test config"), frames).image_tokens == tokens
    assert whole_forward_oracle(glmasr(audio), frames, 3)[1] == tokens, oracle.VERSIONS


@pytest.mark.parametrize(
    ("audio", "frames", "message"),
    [
        (
            {"hidden_size": 8, "intermediate_size": 16, "num_attention_heads": 2},
            41,
            "--audio-frames 41: the encoder's (41 - 1) // 2 + 1 positions after its stride-2 convolution, of "
            "audio_config.hidden_size (8) values each, do not regroup into rows of audio_config.intermediate_size (16)",
        ),
        (
            {"hidden_size": 8, "num_attention_heads": 4, "num_key_value_heads": 3},
            40,
            "--audio-frames 40: audio_config: num_attention_heads (4) is not a multiple of num_key_value_heads (3)",
        ),
    ],
)
def test_glmasr_audio_flops_refused_in_one_line(tmp_path, audio: dict, frames: int, message: str) -> None:
    """Frames whose positions do not regroup into the projector's rows, and key/value heads that do not divide the
    heads, fail in transformers' forward: refused by name."""
    from typer.testing import CliRunner

    from llmcount.cli.app import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps(glmasr({**audio, "num_hidden_layers": 1})))
    result = CliRunner().invoke(app, ["flops", str(path), "--audio-frames", str(frames)])
    assert result.exit_code == 1 and result.stdout == "", result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr
