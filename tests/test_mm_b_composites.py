"""The multimodal types of transformers' image-text-to-text and multimodal-LM mappings from "l" on: each is counted
(its language model, or the whole model where its tower has a record) or refused by name with its reason. Counts
against the model transformers builds for the composite config on the meta device (``tests/oracle.py``): the class
defaults and drawn configs, and a few sizes derived by hand."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

# transformers 5.24's MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES and MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES from "l" on
# that had neither an entry nor a record of their own (phi4_multimodal has a record).
TYPES = [
    "lfm2_vl",
    "lfm3_vl",
    "lighton_ocr",
    "llava_next_video",
    "minicpm_ocr",
    "minicpmv4_6",
    "minicpmv4_7",
    "minimax_m3_vl",
    "mistral4",
    "mistral_large4",
    "molmo2",
    "muse_glimmer",
    "muse_spark",
    "nemo_speechlm",
    "nemotron_h_omni",
    "omniasr",
    "ovis2",
    "paddleocr_vl",
    "perception_lm",
    "pi0",
    "pix2struct",
    "pp_chart2table",
    "pp_formulanet",
    "qianfan_ocr",
    "qwen2_5_omni",
    "qwen2_5_omni_thinker",
    "qwen2_audio",
    "qwen3_asr",
    "qwen3_omni_moe",
    "qwen3_omni_moe_thinker",
    "qwen4_exp",
    "shieldgemma2",
    "step3p7",
    "t5gemma2",
    "udop",
    "unlimited_ocr",
    "vibevoice_asr",
    "video_llama_3",
    "video_llava",
    "vipllava",
    "voxtral",
    "voxtral_realtime",
]
COUNTED = [name for name in TYPES if records.composite(name) is not None]
WHOLE = ["lighton_ocr", "llava_next_video", "shieldgemma2", "vipllava"]

# Keys a drawn text config needs besides the usual sizes: LFM3's pad token (0 is within any vocabulary), Nemotron-H's
# layer pattern (its record and transformers build one layer per entry) with small Mamba and expert sizes.
NEMOTRON_H = {
    "layers_block_type": ["mamba", "moe", "attention"],
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "moe_shared_expert_intermediate_size": 16,
    "mamba_num_heads": 4,
    "mamba_head_dim": 8,
    "n_groups": 2,
    "ssm_state_size": 8,
    "pad_token_id": 0,
}
EXTRA = {"lfm3_vl": {"pad_token_id": 0}, "nemo_speechlm": NEMOTRON_H, "nemotron_h_omni": NEMOTRON_H}
MOE = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16}
EXTRA |= {"qwen3_omni_moe_thinker": MOE, "minimax_m3_vl": {}}


# Composite classes that check a part's output width against the text hidden size (Qwen3-ASR's audio projector out to
# audio_config.output_dim, 3584 by default against its text config's 2048; the omni thinkers' vision and audio
# encoders): set to the language model's width.
WIDTHS = {
    "qwen3_asr": [("audio_config", "output_dim")],
    "qwen2_5_omni_thinker": [("vision_config", "out_hidden_size"), ("audio_config", "output_dim")],
    "qwen3_omni_moe_thinker": [("vision_config", "out_hidden_size"), ("audio_config", "output_dim")],
}


def with_width(config: dict) -> dict:
    if config["model_type"] not in WIDTHS:
        return config
    composite = records.composite(config["model_type"])
    text = config.get("text_config") or composite.absent or {}
    width = text.get("hidden_size", records.text_defaults(composite.text, composite).get("hidden_size", 2048))
    for key, width_key in WIDTHS[config["model_type"]]:
        config = {**config, key: {**(config.get(key) or {}), width_key: width}}
    return config


def total(config: dict) -> int:
    return read_config(config, "test config").counts.total


def expected(config: dict) -> int:
    return oracle.language_model_total(config, records.composite(config["model_type"]).model)


def test_every_type_is_counted_or_refused_by_name() -> None:
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
        MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES,
    )

    mapped = set(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES) | set(MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES)
    assert set(TYPES) <= mapped, oracle.VERSIONS
    for name in TYPES:
        counted = records.composite(name) is not None or records.family(name) is not None
        assert counted != (records.refused(name) is not None), name
    assert set(WHOLE) <= {c.name for c in records.composites() if c.whole}


@pytest.mark.parametrize("model_type", COUNTED)
def test_class_defaults(model_type: str) -> None:
    full = with_width(oracle.class_defaults(model_type))
    bare = with_width({"model_type": model_type})
    assert total(full) == expected(full) == expected(bare) == total(bare), f"{model_type} ({oracle.VERSIONS})"


@st.composite
def small_text(draw, model_type: str) -> dict:
    heads = draw(st.sampled_from([2, 4]))
    text = {
        "num_hidden_layers": draw(st.integers(1, 3)),
        "hidden_size": heads * draw(st.sampled_from([8, 16])),
        "num_attention_heads": heads,
        "num_key_value_heads": draw(st.sampled_from([1, 2])),
        "intermediate_size": draw(st.sampled_from([16, 40])),
        "vocab_size": draw(st.sampled_from([64, 100])),
        **EXTRA.get(model_type, {}),
    }
    if "layers_block_type" in text:
        text["layers_block_type"] = draw(st.permutations(text["layers_block_type"]))
        text["num_hidden_layers"] = len(text["layers_block_type"])
    for key in ("tie_word_embeddings",):
        if draw(st.booleans()):
            text[key] = draw(st.booleans())
    return text


@pytest.mark.parametrize("model_type", COUNTED)
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn_language_models(model_type: str, data) -> None:
    """A small drawn text config, the head tied or not at either level: the language model as transformers builds it
    (a config either side refuses is skipped, unless llmcount refuses what transformers builds)."""
    config = {"model_type": model_type, "text_config": data.draw(small_text(model_type))}
    if data.draw(st.booleans()):
        config["tie_word_embeddings"] = data.draw(st.booleans())
    config = with_width(config)
    try:
        want = expected(config)
    except oracle.TransformersRejected:
        assume(False)
    try:
        got = total(config)
    except RuleRefusal:
        assume(False)
    except LlmcountError as error:
        pytest.fail(f"{model_type}: refused a config transformers builds: {error}\n{config}")
    assert got == want, f"{model_type}: {config} ({oracle.VERSIONS})"


SMALL = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}
SMALL |= {"intermediate_size": 32, "vocab_size": 100}


@pytest.mark.parametrize("model_type", ["omniasr", "qwen2_audio", "vibevoice_asr", "voxtral", "nemo_speechlm"])
def test_classes_that_never_tie_their_head(model_type: str) -> None:
    """These classes have no _tied_weights_keys: the LM head is its own even when both levels ask for a tie."""
    text = {**SMALL, **EXTRA.get(model_type, {}), "tie_word_embeddings": True}
    if "layers_block_type" in text:
        text["num_hidden_layers"] = len(text["layers_block_type"])
    config = {"model_type": model_type, "text_config": text, "tie_word_embeddings": True}
    model = read_config(config, "test config")
    assert model.counts.total == expected(config), oracle.VERSIONS
    assert "head/lm_head" in {c.path for c in model.counts.components}


def test_voxtral_lays_its_text_defaults_under_a_given_text_config() -> None:
    """VoxtralConfig merges its own text keys (head_dim 128, ...) under a given text_config. By hand, d = 64, 4 heads
    of 128: q, o 2·64·512, k, v 2·64·256 (2 KV heads), MLP 3·64·32, two norms 2·64 = 104,576 a layer; embedding and
    the untied head 2·100·64, final norm 64."""
    config = {"model_type": "voxtral", "text_config": dict(SMALL)}
    per_layer = 2 * 64 * 512 + 2 * 64 * 256 + 3 * 64 * 32 + 2 * 64
    assert total(config) == 2 * 100 * 64 + 2 * per_layer + 64 == expected(config), oracle.VERSIONS


def test_vipllava_projector_by_hand() -> None:
    """ViP-LLaVA's projector on its defaults (CLIP ViT-L/14 at 336, 5 feature layers, Llama 2 7B's width): a
    LayerNorm over 5·1024 (weight and bias), linear_1 5·1024·4096 + 4096, linear_2 4096² + 4096."""
    model = read_config({"model_type": "vipllava"}, "vip-llava-7b")
    parts = {part.role: part.model.counts.total for part in model.parts}
    want = 2 * 5 * 1024 + 5 * 1024 * 4096 + 4096 + 4096 * 4096 + 4096
    assert parts["projector"] == want == 37_767_168
    whole = oracle.composite_total({"model_type": "vipllava"}, "VipLlavaForConditionalGeneration")
    assert model.whole_total == whole, oracle.VERSIONS


@pytest.mark.parametrize("layers", [-2, [-1], [-2, -5], [0, 1, 2]])
def test_vipllava_feature_layers(layers) -> None:
    config = {"model_type": "vipllava", "text_config": dict(SMALL), "vision_feature_layer": layers}
    config["vision_config"] = {"hidden_size": 32, "intermediate_size": 16, "num_hidden_layers": 3}
    config["vision_config"] |= {"num_attention_heads": 2, "image_size": 28, "patch_size": 14}
    model = read_config(config, "test config")
    assert model.whole_total == oracle.composite_total(config, "VipLlavaForConditionalGeneration"), oracle.VERSIONS


def test_ovis2_untied_head_of_other_sizes_is_refused() -> None:
    """Ovis2ForConditionalGeneration builds an untied lm_head from the top-level hidden_size and vocab_size: of the
    language model's sizes it is counted, of others it could not run and is refused naming the key."""
    config = {"model_type": "ovis2", "text_config": dict(SMALL), "tie_word_embeddings": False}
    with pytest.raises(RuleRefusal, match=r"hidden_size \(1536\) wide at the top level"):
        total(config)
    config |= {"hidden_size": 64, "vocab_size": 100}
    assert total(config) == expected(config), oracle.VERSIONS
    tied = {"model_type": "ovis2", "text_config": dict(SMALL)}
    assert total(tied) == expected(tied) == total(config) - 100 * 64, oracle.VERSIONS


def test_count_of_a_language_model_only_type_names_what_it_leaves_out(tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from llmcount.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "omniasr", "text_config": SMALL}))
    result = CliRunner().invoke(app, ["count", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert "total" not in data and data["language_model_total"] == expected(json.loads(path.read_text()))
    assert "audio encoder" in data["composite"]["not_counted"]


def test_lighton_ocr_whole_by_hand() -> None:
    """LightOnOcrConfig's defaults (LightOnOCR-1B): the vision projection is an RMSNorm of 1024, the patch merger
    4·1024² (2 × 2 patches to 1024), linear_1 1024·1024 and linear_2 1024², no biases: 6,292,480; the Pixtral tower
    (24 layers of 1024, patches of 14) and the Qwen3 language model, each as transformers builds it."""
    model = read_config({"model_type": "lighton_ocr"}, "LightOnOCR-1B")
    parts = {part.role: part.model.counts.total for part in model.parts}
    assert parts["projector"] == 1024 + 4 * 1024**2 + 1024 * 1024 + 1024**2 == 6_292_480
    whole = oracle.composite_total({"model_type": "lighton_ocr"}, "LightOnOcrForConditionalGeneration")
    assert model.whole_total == whole, oracle.VERSIONS
