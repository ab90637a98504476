"""The image-text-to-text and multimodal-LM types of transformers from aria to kyutai_speech_to_text: each one is
counted (its language model, or the whole model where its tower has a record) or refused by name with its reason.
The class defaults and drawn text configs of every composite are checked against transformers by
tests/test_composites.py and tests/test_towers.py; here: the coverage, a language model by hand, and the checks the
composite config classes make (a part's width against the text hidden_size, the text config's model_type)."""

from __future__ import annotations

import pytest

from llmcount.formulas import records
from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")


# The types of transformers 5.24's image-text-to-text and multimodal-LM mappings from aria to kyutai_speech_to_text
# that had no entry before (gemma3, llava, qwen2_vl and the other composites before them are tested elsewhere).
TYPES = [
    "aria",
    "blip",
    "blip-2",
    "chameleon",
    "cohere2_vision",
    "cohere_compass",
    "cosmos3_edge",
    "cosmos3_omni",
    "deepseek_ocr2",
    "deepseek_vl",
    "deepseek_vl_hybrid",
    "diffusion_gemma",
    "ernie4_5_vl_moe",
    "evolla",
    "exaone4_5",
    "fast_vlm",
    "florence2",
    "fun_asr_nano",
    "glm46v",
    "glm4v_moe",
    "glm5_next",
    "glm_ocr",
    "glmasr",
    "glmga",
    "granite4_vision",
    "granite_docling",
    "granite_speech",
    "granite_speech_plus",
    "hunyuan_vl",
    "hyperclovax_vision_v2",
    "idefics",
    "idefics2",
    "inkling2",
    "inkling_mm_model",
    "instructblip",
    "instructblipvideo",
    "janus",
    "kosmos-2",
    "kosmos-2.5",
    "kyutai_speech_to_text",
]


def test_the_types_are_the_ones_transformers_maps() -> None:
    from transformers.models.auto import modeling_auto

    names = set(modeling_auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)
    names |= set(modeling_auto.MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES)
    assert len(TYPES) == 40 and set(TYPES) <= names, oracle.VERSIONS


@pytest.mark.parametrize("model_type", TYPES)
def test_every_type_is_counted_or_refused_by_name(model_type: str) -> None:
    counted = records.composite(model_type) is not None or records.family(model_type) is not None
    reason = records.refused(model_type)
    assert counted != bool(reason), model_type
    if reason:  # the reason names the part that has no record
        assert "record" in reason or "oracle" in reason, model_type


def total(config: dict) -> int:
    return read_config(config, "test config").counts.total


def expected(config: dict) -> int:
    return oracle.language_model_total(config, records.composite(config["model_type"]).model)


def test_janus_pro_7b_language_model_by_hand() -> None:
    """Janus-Pro-7B's language model sizes (LLaMA layers: d = 4096, 30 layers, 32 heads without grouping, d_ff =
    11008, V = 102400), the head tied as JanusConfig ties it by default. Per layer: q, k, v, o 4·4096² = 67,108,864,
    gated MLP 3·4096·11008 = 135,266,304, two RMSNorms 2·4096: 202,383,360; 30 layers 6,071,500,800; the embedding
    102400·4096 = 419,430,400 and the final norm 4096."""
    text = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 30}
    text |= {"num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 102400}
    config = {"model_type": "janus", "text_config": text}
    assert 4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096 == 202_383_360
    assert total(config) == 30 * 202_383_360 + 419_430_400 + 4096 == 6_490_935_296 == expected(config), oracle.VERSIONS
    untied = {**config, "tie_word_embeddings": False}
    assert total(untied) == 6_490_935_296 + 419_430_400 == expected(untied), oracle.VERSIONS


SMALL = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}
SMALL |= {"intermediate_size": 32, "vocab_size": 100}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"model_type": "fun_asr_nano", "text_config": {"model_type": "qwen3", **SMALL}},
            "adaptor_config.hidden_size is not the text hidden_size (64)",
        ),
        (
            {
                "model_type": "fun_asr_nano",
                "text_config": {"model_type": "qwen3", **SMALL},
                "adaptor_config": {"hidden_size": 64, "intermediate_size": 32},
            },
            "adaptor_config.intermediate_size is not the text hidden_size (64) // 4",
        ),
        ({"model_type": "inkling2", "text_config": {"hidden_size": 64}}, "vision_config.text_hidden_size"),
        ({"model_type": "granite_docling", "text_config": SMALL}, "vision_config.out_hidden_size"),
    ],
)
def test_a_part_narrower_or_wider_than_the_language_model_is_refused_as_transformers_refuses(config, message) -> None:
    with pytest.raises(oracle.TransformersRejected):
        expected(config)
    with pytest.raises(RuleRefusal, match=message.replace("(", r"\(").replace(")", r"\)")):
        total(config)


@pytest.mark.parametrize(
    ("config", "width"),
    [
        (
            {
                "model_type": "fun_asr_nano",
                "text_config": {"model_type": "qwen3", **SMALL},
                "adaptor_config": {"hidden_size": 64, "intermediate_size": 16},
            },
            None,
        ),
        ({"model_type": "inkling2", "vision_config": {"text_hidden_size": 4608}}, None),
        (
            {
                "model_type": "granite_docling",
                "text_config": {**SMALL, "pad_token_id": 0},
                "vision_config": {"out_hidden_size": 64},
            },
            None,
        ),
    ],
)
def test_parts_as_wide_as_the_language_model_are_counted(config: dict, width) -> None:
    assert total(config) == expected(config), oracle.VERSIONS


@pytest.mark.parametrize(
    ("model_type", "text_type"),
    [("exaone4_5", "exaone4_5_text"), ("exaone4_5", "exaone4"), ("cosmos3_omni", "qwen3_vl_text")],
)
def test_a_text_config_named_as_the_composite_class_reads_it(model_type: str, text_type: str) -> None:
    """Exaone4_5_Config reads an exaone4_5_text text config as EXAONE 4's; Cosmos3OmniConfig's default text config is
    Qwen3-VL's (Qwen3's decoder): llmcount reads both with the record of that decoder."""
    config = {"model_type": model_type, "text_config": {"model_type": text_type, **SMALL}}
    # counted whole: the ViT's mergers as wide as the language model
    config["vision_config"] = {"out_hidden_size": 64, "depth": 1, "hidden_size": 16, "num_heads": 2}
    if model_type == "exaone4_5":
        config["vision_config"]["num_key_value_heads"] = 1
    assert total(config) == expected(config), oracle.VERSIONS


@pytest.mark.parametrize(
    ("config", "name"),
    [
        ({"model_type": "cosmos3_omni", "text_config": {"model_type": "llama", **SMALL}}, "cosmos3_omni"),
        ({"model_type": "exaone4_5", "text_config": {"model_type": "llama", **SMALL}}, "exaone4_5"),
        (
            {"model_type": "glm46v", "text_config": {"model_type": "glm4", **SMALL, "hidden_size": 512, "head_dim": 8}},
            "glm46v",
        ),
        ({"model_type": "glmga", "text_config": {"model_type": "llama", **SMALL}}, "glmga"),
    ],
)
def test_a_text_config_of_another_kind_is_refused_not_misread(config: dict, name: str) -> None:
    """These composite classes read text_config as any model_type (an AutoConfig); llmcount reads the decoder the
    class defaults to, and refuses another one by name rather than count it with the wrong record."""
    refusal = f"text_config.model_type names a text config llmcount does not count under {name}"
    with pytest.raises(RuleRefusal, match=refusal):
        total(config)


def test_glm46v_whole_model_is_glm_4_1v_s() -> None:
    """Glm46VForConditionalGeneration is GLM-4.1V's model (Glm46VModel subclasses Glm4vModel): its class defaults,
    the whole model, are counted as the glm4v entry counts GLM-4.1V's defaults."""
    ours = read_config({"model_type": "glm46v"}, "glm46v")
    glm4v = read_config({"model_type": "glm4v"}, "glm4v")
    assert ours.whole_total == glm4v.whole_total
    want = oracle.composite_total({"model_type": "glm46v"}, "Glm46VForConditionalGeneration")
    assert ours.whole_total == want, oracle.VERSIONS
