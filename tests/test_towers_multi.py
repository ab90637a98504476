"""Composites of several towers (``[[composite.X.towers]]``): Gemma 4's vision and audio encoders with their
embedders and Gemma 4 Unified's two embedders (each built only when its sub-config is given), the Qwen2.5-Omni and
Qwen3-Omni thinkers' vision and audio encoders, Gemma 3n's audio encoder and embedders (its timm vision tower left
out). Each part and the whole model against the model transformers builds for the composite config on the meta device
(every parameter, tied ones once), on the class defaults and on a few drawn configs that vary the towers; what
``count`` and ``formula --part`` show; bad input refused naming the key."""

from __future__ import annotations

import json
import warnings
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from llmcount.formulas import records
from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

# The module of transformers' model (``model.model``) that holds each part, by the part's role in llmcount.
MODULES = {
    "gemma4": {
        "vision tower": "vision_tower",
        "projector": "embed_vision",
        "audio tower": "audio_tower",
        "audio projector": "embed_audio",
    },
    "qwen2_5_omni_thinker": {"vision tower": "visual", "audio tower": "audio_tower"},
    "qwen3_omni_moe_thinker": {"vision tower": "visual", "audio tower": "audio_tower"},
    "gemma4_unified": {"projector": "embed_vision", "audio projector": "embed_audio"},  # embedders, no encoders
}

# Small language models, so that each drawn config builds in well under a second (the towers are what is drawn).
SMALL_TEXT = {
    "gemma4": {
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 32,
        "global_head_dim": 32,
        "vocab_size": 300,
        "vocab_size_per_layer_input": 300,
        "hidden_size_per_layer_input": 8,
        "num_kv_shared_layers": 0,
        "layer_types": ["sliding_attention", "full_attention"],
    },
    "gemma4_unified": {
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 32,
        "vocab_size": 300,
        "layer_types": ["sliding_attention", "full_attention"],
    },
    "qwen2_5_omni_thinker": {
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 300,
    },
    "qwen3_omni_moe_thinker": {
        "hidden_size": 64,
        "intermediate_size": 96,
        "moe_intermediate_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "vocab_size": 300,
    },
}


@lru_cache(maxsize=64)
def _parts(frozen: str) -> dict[str, int]:

    config = json.loads(frozen)
    model_type = config["model_type"]
    model = oracle.meta_model(config, records.composite(model_type).model)
    out = {"whole": sum(p.numel() for p in model.parameters())}
    for role, name in MODULES[model_type].items():
        module = getattr(model.model, name)
        if module is not None:  # Gemma 4 builds a tower and its embedder only when its sub-config is given
            out[role] = sum(p.numel() for p in module.parameters())
    return out


def transformers_parts(config: dict) -> dict[str, int]:
    return _parts(json.dumps(config, sort_keys=True))


def ours(config: dict) -> dict[str, int]:
    model = read_config(config, "test config")
    return {"whole": model.whole_total, **{part.role: part.model.counts.total for part in model.parts}}


def assert_as_transformers_builds(config: dict) -> None:
    oracle.assert_counted_as_built(config, transformers_parts, ours)


def test_class_defaults() -> None:
    """The towers of the composite classes' defaults (their vision_config and audio_config as to_dict writes them),
    with a small language model as wide as the towers' output (test_composites.py checks the language model of the
    class defaults). Qwen3OmniMoeThinkerConfig's towers put out 3584 wide, its text config is 2048 wide: refused by
    that key. Gemma4Config() gives no vision_config or audio_config: only the language model is built."""
    for model_type in MODULES:
        full = oracle.class_defaults(model_type)
        if model_type == "qwen3_omni_moe_thinker":
            with pytest.raises(RuleRefusal, match="out_hidden_size"):
                read_config(full, "defaults")
        if model_type in ("gemma4", "gemma4_unified"):
            assert full["vision_config"] is None and full["audio_config"] is None
            full["vision_config"] = oracle.class_defaults(f"{model_type}_vision")
            full["audio_config"] = oracle.class_defaults(f"{model_type}_audio")
            full["text_config"] = dict(SMALL_TEXT[model_type])
        else:
            full["text_config"] = {**SMALL_TEXT[model_type], "hidden_size": full["vision_config"]["out_hidden_size"]}
        assert ours(full) == transformers_parts(full), f"{model_type} ({oracle.VERSIONS})"
    # Gemma4Config() alone: no tower, the whole model is the language model (test_composites.py builds it)
    model = read_config({"model_type": "gemma4"}, "test")
    assert model.parts == () and model.whole_total == model.counts.total


def test_gemma4_builds_each_tower_when_its_config_is_given() -> None:
    """Gemma 4 with both towers (their class defaults), with the audio encoder alone and with the vision encoder
    alone: the parts and the whole are transformers'; a tower not given is no part."""
    for given_ in ({"vision_config": {}, "audio_config": {}}, {"audio_config": {}}, {"vision_config": {}}):
        config = {"model_type": "gemma4", "text_config": SMALL_TEXT["gemma4"], **given_}
        got = ours(config)
        assert got == transformers_parts(config), f"{given_} ({oracle.VERSIONS})"
        assert ("audio tower" in got) == ("audio_config" in given_)
        assert ("projector" in got) == ("vision_config" in given_)
    model = read_config({"model_type": "gemma4", "vision_config": None, "audio_config": None}, "test")
    assert model.parts == () and model.whole_total == model.counts.total


@st.composite
def drawn(draw, model_type: str) -> dict:
    text = dict(SMALL_TEXT[model_type])
    width = text["hidden_size"]
    heads = draw(st.sampled_from([1, 2, 4]))
    if model_type == "gemma4":
        vision = {
            "hidden_size": 16 * heads,
            "intermediate_size": draw(st.integers(8, 80)),
            "num_hidden_layers": draw(st.integers(1, 3)),
            "num_attention_heads": heads,
            "num_key_value_heads": draw(st.sampled_from([h for h in (1, 2, 4) if heads % h == 0])),
            "head_dim": draw(st.sampled_from([8, 16, 24])),
            "patch_size": draw(st.sampled_from([4, 8, 14])),
            "position_embedding_size": draw(st.integers(4, 64)),
        }
        audio = {
            "hidden_size": 8 * draw(st.integers(1, 8)),
            "num_hidden_layers": draw(st.integers(1, 3)),
            "num_attention_heads": draw(st.sampled_from([1, 2, 3, 4])),
            "conv_kernel_size": draw(st.integers(1, 7)),
            "output_proj_dims": draw(st.integers(4, 80)),
        }
        chosen = draw(st.sampled_from(["both", "vision", "audio"]))
        config = {"model_type": model_type, "text_config": text}
        if chosen != "audio":
            config["vision_config"] = vision
        if chosen != "vision":
            config["audio_config"] = audio
        return config
    if model_type == "gemma4_unified":
        vision = {
            "patch_size": draw(st.integers(1, 8)),
            "pooling_kernel_size": draw(st.integers(1, 3)),
            "mm_embed_dim": draw(st.integers(4, 64)),
            "mm_posemb_size": draw(st.integers(1, 64)),
            "output_proj_dims": draw(st.integers(4, 64)),
        }
        audio = {"audio_embed_dim": draw(st.integers(1, 64))}
        return {"model_type": model_type, "text_config": text, "vision_config": vision, "audio_config": audio}
    vision = {
        "depth": draw(st.integers(1, 3)),
        "hidden_size": 16 * heads,
        "intermediate_size": draw(st.integers(8, 80)),
        "num_heads": heads,
        "patch_size": draw(st.sampled_from([4, 14, 16])),
        "temporal_patch_size": draw(st.integers(1, 2)),
        "spatial_merge_size": draw(st.integers(1, 3)),
        "out_hidden_size": width,
    }
    audio_heads = draw(st.sampled_from([1, 2, 4]))
    audio = {
        "encoder_layers": draw(st.integers(1, 3)),
        "d_model": 8 * audio_heads * draw(st.integers(1, 3)),
        "encoder_attention_heads": audio_heads,
        "encoder_ffn_dim": draw(st.integers(8, 80)),
        "num_mel_bins": draw(st.integers(8, 128)),
        "output_dim": width,
    }
    if model_type == "qwen3_omni_moe_thinker":
        vision["num_position_embeddings"] = draw(st.sampled_from([16, 64, 144]))
        vision["deepstack_visual_indexes"] = draw(st.lists(st.integers(0, 2), max_size=3, unique=True))
        audio["downsample_hidden_size"] = draw(st.integers(4, 40))
    return {"model_type": model_type, "text_config": text, "vision_config": vision, "audio_config": audio}


@pytest.mark.parametrize("model_type", list(MODULES))
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn_towers(model_type: str, data) -> None:
    assert_as_transformers_builds(data.draw(drawn(model_type)))


@lru_cache(maxsize=32)
def _gemma3n_parts(frozen: str) -> dict[str, int]:
    """Gemma 3n's audio encoder and its two embedders, each built on the meta device from the sub-configs of the
    composite config (the whole model needs timm for its MobileNet-V5 vision tower: it is not built here)."""
    import torch
    from transformers import AutoConfig
    from transformers.models.gemma3n import modeling_gemma3n as m

    config = json.loads(frozen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cfg = AutoConfig.for_model("gemma3n", **{k: v for k, v in config.items() if k != "model_type"})
            with torch.device("meta"):
                built = {
                    "projector": m.Gemma3nMultimodalEmbedder(cfg.vision_config, cfg.text_config),
                    "audio tower": m.Gemma3nAudioEncoder(cfg.audio_config),
                    "audio projector": m.Gemma3nMultimodalEmbedder(cfg.audio_config, cfg.text_config),
                }
        except Exception as error:  # whatever transformers raises, it refused the config
            raise oracle.TransformersRejected(f"{type(error).__name__}: {error}") from error
    return {role: sum(p.numel() for p in module.parameters()) for role, module in built.items()}


def assert_gemma3n_parts(config: dict) -> None:
    try:
        want = _gemma3n_parts(json.dumps(config, sort_keys=True))
    except oracle.TransformersRejected:
        assume(False)
    model = read_config(config, "test config")
    assert model.whole_total is None  # the vision tower is left out
    assert {part.role: part.model.counts.total for part in model.parts} == want, f"{config} ({oracle.VERSIONS})"


def test_gemma3n_parts_of_the_class_defaults() -> None:
    """Gemma3nConfig's defaults (Gemma 3n E4B's audio encoder and embedders): transformers' modules."""
    assert_gemma3n_parts({"model_type": "gemma3n"})
    assert_gemma3n_parts(oracle.class_defaults("gemma3n"))


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_gemma3n_drawn_parts(data) -> None:
    heads = data.draw(st.sampled_from([1, 2, 3, 4]))
    audio = {
        "hidden_size": heads * data.draw(st.sampled_from([4, 6, 8])) + data.draw(st.sampled_from([0, 1])),
        "conf_num_attention_heads": heads,
        "conf_num_hidden_layers": data.draw(st.integers(1, 3)),
        "conf_conv_kernel_size": data.draw(st.integers(1, 6)),
        "input_feat_size": data.draw(st.integers(4, 130)),
        "vocab_size": data.draw(st.integers(1, 200)),
    }
    vision = {"hidden_size": data.draw(st.integers(4, 64)), "vocab_size": data.draw(st.integers(1, 200))}
    text = {"hidden_size": data.draw(st.sampled_from([32, 64]))}
    config = {"model_type": "gemma3n", "text_config": text, "vision_config": vision, "audio_config": audio}
    assert_gemma3n_parts(config)


def test_gemma3n_says_the_vision_tower_is_left_out(tmp_path) -> None:
    """The counted parts sum to a partial total, so named; the MobileNet-V5 tower is named as not counted."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma3n"}))
    data = json.loads(run("count", str(path), "--json").stdout)
    assert "total" not in data and data["partial_total"] == sum(p["total"] for p in data["parts"])
    assert "MobileNet-V5" in data["composite"]["not_counted"]
    text = run("count", str(path)).stdout
    assert "partial total (a part not counted)" in text and "not counted: the MobileNet-V5" in " ".join(text.split())


def run(*args: str):
    from typer.testing import CliRunner

    from llmcount.cli import app

    return CliRunner().invoke(app, list(args))


def test_count_and_formula_name_each_part(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma4", "vision_config": {}, "audio_config": {}}))
    result = run("count", str(path), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    roles = [p["part"] for p in data["parts"]]
    assert roles == ["language model", "vision tower", "projector", "audio tower", "audio projector"]
    assert data["total"] == sum(p["total"] for p in data["parts"])
    assert [p["config"] for p in data["parts"][1:]] == [
        "vision_config",
        "the whole config",
        "audio_config",
        "the whole config",
    ]
    audio = run("formula", "gemma4", "--part", "audio")
    assert audio.exit_code == 0 and "d_aud" in audio.stdout and "Gemma 4 (multimodal), audio tower" in audio.stdout
    embedder = run("formula", str(path), "--part", "audio_projector")
    assert embedder.exit_code == 0 and "d_aout" in embedder.stdout, embedder.output
    omni = run("formula", "qwen2_5_omni_thinker", "--part", "audio")
    assert omni.exit_code == 0 and "d_aout" in omni.stdout
    missing = run("formula", "qwen2_5_omni_thinker", "--part", "audio_projector")
    assert missing.exit_code == 1 and "has no audio projector record" in missing.stderr
    text = run("count", str(path))
    assert "audio tower: Gemma 4 audio encoder" in text.stdout and "total (whole model)" in text.stdout


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"model_type": "qwen2_5_omni_thinker", "audio_config": {"output_dim": 1024}},
            "audio_config.output_dim (1024), the width of the audio encoder's output, is not the language model's",
        ),
        (
            {"model_type": "gemma4", "audio_config": {"subsampling_conv_channels": [64]}},
            "subsampling_conv_channels ([64]) must be a list of at least two positive integers",
        ),
        ({"model_type": "gemma4", "audio_config": [1]}, "key 'audio_config' must be a JSON object"),
        (  # Gemma4UnifiedAudioConfig's hidden_size sets audio_embed_dim to 1280 (the test below builds it)
            {"model_type": "gemma4_unified", "audio_config": {"audio_embed_dim": 640, "hidden_size": 1280}},
            "audio_config.hidden_size sets audio_embed_dim (640) to another width",
        ),
        (
            {"model_type": "gemma3n", "audio_config": {"sscp_conv_stride_size": [[2, 2], [1, 1]]}},
            "audio_config.sscp_conv_stride_size is not [[2, 2], [2, 2]]",
        ),
        ({"model_type": "gemma4", "vision_config": {"head_dim": 0}}, "head_dim"),
    ],
)
def test_bad_towers_are_refused_naming_the_key(tmp_path, config: dict, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("count", str(path))
    assert result.exit_code == 1 and result.stdout == ""
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_gemma4_unified_audio_width_set_by_hidden_size() -> None:
    """Gemma4UnifiedAudioConfig's hidden_size is a setter of audio_embed_dim: transformers builds the embedder that
    wide, which llmcount counts when audio_embed_dim says so and refuses when another key says otherwise."""
    config = {"model_type": "gemma4_unified", "text_config": SMALL_TEXT["gemma4_unified"]}
    built = transformers_parts({**config, "audio_config": {"hidden_size": 24}})
    assert (
        built["audio projector"]
        == 24 * 64
        == ours({**config, "audio_config": {"audio_embed_dim": 24}})["audio projector"]
    )


def test_images_run_through_the_vision_parts_only(tmp_path) -> None:
    """flops --images: an image never runs through an audio encoder (Qwen3-ASR has only that tower: no vision tower
    to run), and Gemma 3n's vision tower is left out, which the refusal names."""
    asr = tmp_path / "asr.json"
    asr.write_text(json.dumps({"model_type": "qwen3_asr", "audio_config": {"output_dim": 2048}}))
    result = run("flops", str(asr), "--images", "1")
    assert result.exit_code == 1 and "the model has no vision tower" in result.stderr, result.output
    gemma3n = tmp_path / "gemma3n.json"
    gemma3n.write_text(json.dumps({"model_type": "gemma3n"}))
    result = run("flops", str(gemma3n), "--images", "1")
    assert result.exit_code == 1 and "does not count its vision tower yet (left out: the MobileNet-V5" in result.stderr


def test_memory_weights_name_every_part(tmp_path) -> None:
    """memory's weights line: every tower and projector with its own symbol, and Gemma 3n's says what it leaves out."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma4", "vision_config": {}, "audio_config": {}}))
    text = " ".join(run("memory", str(path)).stdout.split())
    assert "2·P_audio_proj" in text and "the audio projector (Gemma 4 audio embedder, P_audio_proj = 3,538,944)" in text
    path.write_text(json.dumps({"model_type": "gemma3n"}))
    text = " ".join(run("memory", str(path)).stdout.split())
    assert "without the MobileNet-V5 vision tower" in text and "P_audio_proj = 3,345,408" in text, text
