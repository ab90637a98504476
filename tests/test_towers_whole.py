"""Towers and connectors of the composites that were counted as their language model only (Idefics2's perceiver
resampler, LFM2-VL's SigLIP2 NaFlex tower, ...): each part and the whole model against what transformers builds on
the meta device, on the composite class's defaults and on drawn configs that vary the tower and the connector."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_towers import _text, _vit, assert_as_transformers_builds, ours, transformers_parts

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

NEW = ["idefics2", "lfm2_vl", "aria", "qwen2_audio", "voxtral", "glm4v_moe", "glmasr", "moss_transcribe_diarize"]


@pytest.mark.parametrize("model_type", NEW)
def test_class_defaults_are_whole(model_type: str) -> None:
    """The composite is counted whole, and its class defaults (as to_dict writes them, and the bare model_type) give
    transformers' parts."""
    assert records.composite(model_type).whole and read_config({"model_type": model_type}, "x").whole_total
    full = oracle.class_defaults(model_type)
    assert ours(full) == transformers_parts(full), f"{model_type} ({oracle.VERSIONS})"
    assert ours({"model_type": model_type}) == transformers_parts(full), f"{model_type} ({oracle.VERSIONS})"


def _tower(draw) -> dict:
    return {
        **_vit(draw),
        "intermediate_size": draw(st.sampled_from([8, 20, 36])),
        "patch_size": draw(st.sampled_from([2, 4, 14])),
        "num_channels": draw(st.sampled_from([1, 3])),
    }


@st.composite
def drawn(draw, model_type: str) -> dict:
    text = _text(draw, records.composite(model_type).text)
    config: dict = {"model_type": model_type, "text_config": text}
    config["tie_word_embeddings"] = draw(st.booleans())
    if model_type == "glmasr":  # Whisper's encoder with rotary positions and grouped key/value heads
        heads = draw(st.sampled_from([2, 4]))
        audio = {"num_hidden_layers": draw(st.integers(1, 3)), "num_attention_heads": heads}
        audio["hidden_size"] = heads * draw(st.sampled_from([4, 8]))
        audio["num_key_value_heads"] = draw(st.sampled_from([1, 2]))
        audio["intermediate_size"] = draw(st.sampled_from([8, 20, 36]))
        audio["num_mel_bins"] = draw(st.sampled_from([8, 128]))
        if draw(st.booleans()):
            audio["head_dim"] = draw(st.sampled_from([4, 6]))
        config["audio_config"] = audio
        return config
    if model_type == "moss_transcribe_diarize":
        config["audio_merge_size"] = draw(st.sampled_from([1, 2, 4]))
        config["projector_bias"] = draw(st.booleans())
    if model_type in ("qwen2_audio", "voxtral", "moss_transcribe_diarize"):  # Whisper-style encoder (audio_config)
        heads = draw(st.sampled_from([1, 2, 4]))
        names = ("encoder_layers", "d_model", "encoder_attention_heads", "encoder_ffn_dim")
        if model_type != "qwen2_audio":
            names = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size")
        audio = {names[0]: draw(st.integers(1, 3)), names[1]: heads * draw(st.sampled_from([4, 8])), names[2]: heads}
        audio[names[3]] = draw(st.sampled_from([8, 20, 36]))
        audio["num_mel_bins"] = draw(st.sampled_from([8, 80, 128]))
        audio["max_source_positions"] = draw(st.sampled_from([10, 1500]))
        config["audio_config"] = audio
        return config
    if model_type == "glm4v_moe":  # GLM-4.1V's ViT on 3-D patches and its patch merger, as wide as the language model
        config["vision_config"] = {
            **_vit(draw, "hidden_size", "depth"),
            "intermediate_size": draw(st.sampled_from([8, 20, 36])),
            "patch_size": draw(st.sampled_from([2, 4, 14])),
            "temporal_patch_size": draw(st.sampled_from([1, 2])),
            "image_size": draw(st.sampled_from([16, 28, 60])),
            "in_channels": draw(st.sampled_from([1, 3])),
            "spatial_merge_size": draw(st.sampled_from([1, 2])),
            "attention_bias": draw(st.booleans()),
            "out_hidden_size": text["hidden_size"],
        }
        text |= {"n_routed_experts": draw(st.sampled_from([2, 4])), "num_experts_per_tok": 1, "head_dim": 8}
        text |= {"moe_intermediate_size": 8, "first_k_dense_replace": draw(st.sampled_from([0, 1]))}
        return config
    vision = _tower(draw)
    if model_type == "aria":
        vision["image_size"] = draw(st.integers(8, 60))
        queries = draw(st.lists(st.integers(1, 12), min_size=1, max_size=3))
        config["projector_patch_to_query_dict"] = {str(49 * (i + 1)): q for i, q in enumerate(queries)}
        if draw(st.booleans()):  # as to_dict writes it, or another value: the model takes the one given
            config["max_value_projector_patch_to_query_dict"] = draw(st.sampled_from([max(queries), 5]))
    elif model_type == "idefics2":
        vision["image_size"] = draw(st.integers(8, 60))  # the convolution floors a partial patch
        heads = draw(st.sampled_from([1, 2, 4]))
        config["perceiver_config"] = {
            "resampler_n_latents": draw(st.sampled_from([1, 4, 9])),
            "resampler_depth": draw(st.integers(1, 3)),
            "resampler_n_heads": heads,
            "resampler_head_dim": draw(st.sampled_from([4, 8])),
            "num_key_value_heads": draw(st.sampled_from([k for k in (1, 2, 4) if heads % k == 0])),
        }
    elif model_type == "lfm2_vl":
        vision["num_patches"] = draw(st.sampled_from([4, 16, 64]))
        vision["vision_use_head"] = draw(st.booleans())
        config["downsample_factor"] = draw(st.sampled_from([1, 2, 3]))
        config["projector_hidden_size"] = draw(st.sampled_from([8, 24]))
        config["projector_bias"] = draw(st.booleans())
        config["projector_use_layernorm"] = draw(st.booleans())
    config["vision_config"] = vision
    return config


def test_aria_queries_are_the_largest_of_the_patch_to_query_map() -> None:
    """AriaConfig sizes the projector's queries by the largest value of projector_patch_to_query_dict (its keys are
    patch counts): {1225: 128, 4900: 256} by default gives 256 queries of 1152, and a map whose largest value is 7
    gives 7; a config that also gives max_value_projector_patch_to_query_dict (as to_dict writes it) has that many."""
    base = read_config({"model_type": "aria"}, "aria").parts[1].model.counts.total
    config = {"model_type": "aria", "projector_patch_to_query_dict": {"1225": 3, "4900": 7}}
    assert read_config(config, "aria").parts[1].model.counts.total == base - (256 - 7) * 1152
    assert ours(config) == transformers_parts(config), oracle.VERSIONS
    config["max_value_projector_patch_to_query_dict"] = 5
    assert read_config(config, "aria").parts[1].model.counts.total == base - (256 - 5) * 1152
    assert ours(config) == transformers_parts(config), oracle.VERSIONS


@pytest.mark.parametrize("value", [{}, {"1225": "x"}, [1.5], {"1": True}])
def test_a_bad_patch_to_query_map_is_refused_naming_the_key(value) -> None:
    with pytest.raises(LlmcountError, match="key 'projector_patch_to_query_dict' must hold 1 to"):
        read_config({"model_type": "aria", "projector_patch_to_query_dict": value}, "aria")


@pytest.mark.parametrize("model_type", NEW)
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn_towers_and_connectors(model_type: str, data) -> None:
    assert_as_transformers_builds(data.draw(drawn(model_type)))


def test_glm4v_moe_refuses_a_merger_narrower_than_the_language_model() -> None:
    config = {"model_type": "glm4v_moe", "vision_config": {"out_hidden_size": 2048}}
    with pytest.raises(LlmcountError, match=r"vision_config.out_hidden_size \(2048\).* hidden_size \(4096\)"):
        read_config(config, "glm-4.5v")


def test_audio_models_count_their_audio_tower(tmp_path) -> None:
    """Qwen2-Audio-7B's encoder by hand (Qwen2AudioEncoderConfig's defaults are Whisper-large-v3's encoder): two
    convolutions 3·128·1280 + 1280 and 3·1280² + 1280, 1500 positions of 1280, 32 layers of q, v, out 3·(1280² + 1280),
    k 1280², MLP 2·1280·5120 + 5120 + 1280 and two LayerNorms 4·1280, the final LayerNorm 2·1280: 636,968,960; the
    projector 1280·4096 + 4096."""
    layer = 3 * (1280**2 + 1280) + 1280**2 + 2 * 1280 * 5120 + 5120 + 1280 + 4 * 1280
    tower = 3 * 128 * 1280 + 1280 + 3 * 1280**2 + 1280 + 1500 * 1280 + 32 * layer + 2 * 1280
    model = read_config({"model_type": "qwen2_audio"}, "qwen2-audio")
    assert [(p.role, p.model.counts.total) for p in model.parts] == [
        ("audio tower", tower),
        ("projector", 1280 * 4096 + 4096),
    ]
    assert tower == 636_968_960
    import json

    from typer.testing import CliRunner

    from llmcount.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "qwen2_audio"}))
    out = CliRunner().invoke(app, ["count", str(path)]).output
    assert "audio tower: Qwen2-Audio encoder" in out and "total (whole model)" in out
    bad = CliRunner().invoke(app, ["count", str(path.with_name("c.json"))])
    path.with_name("c.json").write_text(json.dumps({"model_type": "qwen2_audio", "audio_config": [1]}))
    bad = CliRunner().invoke(app, ["count", str(path.with_name("c.json"))])
    assert bad.exit_code == 1 and "key 'audio_config' must be a JSON object, got a list" in bad.stderr
