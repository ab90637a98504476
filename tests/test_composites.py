"""Composite (multimodal) configs: the language model read from ``text_config`` with the text model_type's record,
against the language model transformers builds for the composite config (``tests/oracle.py``), for the composite
class's defaults and for drawn text configs; what is not counted is said in the output."""

from __future__ import annotations

import json

import gemma3
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from refusal import assert_refused, run

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

# remote: test_remote_built.py; a flat config whose language model has the composite's name (Chameleon's) has no
# text_config: tests/test_lm_records.py and the FLAT tests below
COMPOSITES = [c.name for c in records.composites() if not c.remote and c.text != c.name]

# google/gemma-3-4b-it's config.json as published (its text_config leaves the sizes Gemma3TextConfig defaults out:
# vocab_size 262208, num_attention_heads 8, num_key_value_heads 4, head_dim 256).
GEMMA3_4B = {
    "architectures": ["Gemma3ForConditionalGeneration"],
    "boi_token_index": 255999,
    "eoi_token_index": 256000,
    "eos_token_id": [1, 106],
    "image_token_index": 262144,
    "initializer_range": 0.02,
    "mm_tokens_per_image": 256,
    "model_type": "gemma3",
    "text_config": {
        "hidden_size": 2560,
        "intermediate_size": 10240,
        "model_type": "gemma3_text",
        "num_hidden_layers": 34,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window": 1024,
    },
    "torch_dtype": "bfloat16",
    "vision_config": gemma3.VISION_CONFIG,
}


# Composite classes that check a part against the text config: Dots3NoteConfig requires its vision and audio
# adapters' output width (adapter_out_dim, 5120 by default) to be the text hidden_size; llmcount refuses a Qwen-VL
# vision tower whose merger's output width is not the text hidden_size (the image features could not take the place
# of the image tokens): sub-config -> the key of that width.
ADAPTERS = {
    "dots3_note": {"vision_config": "adapter_out_dim", "audio_config": "adapter_out_dim"},
    "qwen2_vl": {"vision_config": "hidden_size"},
    "qwen2_5_vl": {"vision_config": "out_hidden_size"},
    "qwen3_vl": {"vision_config": "out_hidden_size"},
    "qwen3_vl_moe": {"vision_config": "out_hidden_size"},
    "qwen3_5": {"vision_config": "out_hidden_size"},
    "qwen3_5_moe": {"vision_config": "out_hidden_size"},
    "qwen3_asr": {"audio_config": "output_dim"},
    "qwen2_5_omni_thinker": {"vision_config": "out_hidden_size", "audio_config": "output_dim"},
    "qwen3_omni_moe_thinker": {"vision_config": "out_hidden_size", "audio_config": "output_dim"},
    "hy_v4_vl": {"vision_config": "out_hidden_size"},
    "glm4v": {"vision_config": "out_hidden_size"},
    "glm46v": {"vision_config": "out_hidden_size"},
    "glmga": {"vision_config": "out_hidden_size"},
    "glm4v_moe": {"vision_config": "out_hidden_size"},
    "glm_ocr": {"vision_config": "out_hidden_size"},
    "cosmos3_omni": {"vision_config": "out_hidden_size"},
    "exaone4_5": {"vision_config": "out_hidden_size"},
    "paligemma": {"": "projection_dim"},  # a top-level key: the projector's output width
    "fun_asr_nano": {"adaptor_config": "hidden_size"},  # FunAsrNanoConfig checks its audio adaptor's width
    "inkling2": {"vision_config": "text_hidden_size"},  # Inkling2Config checks its vision tower's output width
    "inkling2_loop": {"vision_config": "text_hidden_size"},  # so does Inkling2LoopConfig
    "granite_docling": {"vision_config": "out_hidden_size"},  # so does GraniteDoclingConfig
}

# FunAsrNanoConfig also requires the adaptor's intermediate_size to be the text hidden_size // 4.
QUARTER_WIDTHS = {"fun_asr_nano": ("adaptor_config", "intermediate_size")}


# Composite classes that check their code ranges against the text vocabulary: Apertus 1.5's visual and audio codes
# (131072 and 4096 of them by default) must end within vocab_size; drawn vocabularies of 16 to 40 take 4 of each.
CODES = {
    "apertus1p5": {
        "image_token_offset": 0,
        "vision_config": {"codebook_size": 4},
        "audio_token_offset": 4,
        "audio_config": {"model_type": "wavtokenizer_encoder", "codebook_size": 4},
    },
}


# Composite classes whose text attention has heads of hidden_size // num_attention_heads where the text record reads
# head_dim (128 by default): llmcount counts them at 128 only (GLM-4.1V) and refuses the others by name.
HEADS_OF_128 = {"glm4v", "glm46v", "glmga"}


# Composite classes whose text record refuses a num_hidden_layers that contradicts its layer pattern (Nemotron-H's
# layers_block_type, 4 entries by default: transformers ignores num_hidden_layers and builds one block per entry).
LAYERS_FROM_PATTERN = {"nemo_speechlm", "nemotron_h_omni"}


# Composite classes whose default vision_config transformers cannot build, and the keys that make it one: Aya Vision's
# SigLIP is 1152 wide with 14 heads (llmcount refuses it naming the key, tests/test_towers.py).
UNBUILDABLE_VISION = {"aya_vision": {"num_attention_heads": 16}}


def with_adapters(config: dict, model_type: str, text: dict) -> dict:
    """``config`` with the adapters of :data:`ADAPTERS` as wide as the text config's hidden size (the text config
    class's default when the text config leaves it out), the code ranges of :data:`CODES` within a drawn
    vocabulary, and a vision_config transformers can build (:data:`UNBUILDABLE_VISION`)."""
    config = {**config, **CODES.get(model_type, {})}
    if model_type in UNBUILDABLE_VISION:
        config["vision_config"] = {**(config.get("vision_config") or {}), **UNBUILDABLE_VISION[model_type]}
    composite = records.composite(model_type)
    width = text.get("hidden_size", records.text_defaults(composite.text, composite).get("hidden_size"))
    if model_type not in ADAPTERS or width is None:
        return config
    config = dict(config)
    for key, width_key in ADAPTERS[model_type].items():
        if key:
            config[key] = {**(config.get(key) or {}), width_key: width}
        else:
            config[width_key] = width
    if model_type in QUARTER_WIDTHS:
        key, width_key = QUARTER_WIDTHS[model_type]
        config[key] = {**config[key], width_key: width // 4}
    return config


def total(config: dict) -> int:
    return read_config(config, "test config").counts.total


def expected(config: dict) -> int:
    return oracle.language_model_total(config, records.composite(config["model_type"]).model)


def test_gemma3_4b_language_model() -> None:
    """By hand: V·d = 262208·2560 = 671,252,480; per layer q,o 2·2560·2048, k,v 2·2560·1024, q/k norms 2·256,
    MLP 3·2560·10240, four norms 4·2560: 94,382,592; 34 layers and the final norm: 3,209,010,688 non-embedding
    (the Gemma 3 report's 3,209M); the head is tied."""
    model = read_config(GEMMA3_4B, "gemma-3-4b-it")
    assert model.counts.total == 671_252_480 + 34 * 94_382_592 + 2560 == 3_880_263_168
    assert model.counts.non_embedding == 3_209_010_688
    assert model.composite is not None and model.composite.name == "gemma3"
    assert model.architecture.name == "gemma3_text"
    assert model.counts.total == expected(GEMMA3_4B), oracle.VERSIONS
    vision = oracle.composite_total(GEMMA3_4B, "Gemma3ForConditionalGeneration") - model.counts.total
    assert vision > 0  # the SigLIP tower and the projector: present in transformers' model, left out here


@pytest.mark.parametrize("model_type", COMPOSITES)
def test_class_defaults(model_type: str) -> None:
    """The composite class's defaults as to_dict writes them, and the bare model_type (text_config absent)."""
    full = oracle.class_defaults(model_type)
    contradicting = model_type in ADAPTERS and model_type not in ("dots3_note", "paligemma", "fun_asr_nano")
    contradicting = contradicting or model_type in UNBUILDABLE_VISION
    if contradicting:  # contradicting defaults
        full = with_adapters(full, model_type, full["text_config"])
    assert total(full) == expected(full), f"{model_type}: class defaults ({oracle.VERSIONS})"
    absent = records.composite(model_type).absent or {}  # the class's own text config (Qwen3-ASR's 2048 wide)
    bare = with_adapters({"model_type": model_type}, model_type, absent) if contradicting else {}
    bare = bare or {"model_type": model_type}
    assert total(bare) == expected(bare) == expected(full), f"{model_type}: text_config absent ({oracle.VERSIONS})"
    assert total({**bare, "text_config": None}) == total(bare)


@pytest.mark.parametrize("model_type", COMPOSITES)
@pytest.mark.parametrize("layers", [2, 20])
def test_text_config_with_only_what_its_class_does_not_default(model_type: str, layers: int) -> None:
    """A text_config of one key: every other size comes from the text config class's defaults. A layer count the
    class's other defaults cannot build with (Gemma 3n's 15 layers that share keys and values need more than 15) is
    refused, for a stated reason."""
    composite = records.composite(model_type)
    config = {"model_type": model_type, "text_config": {"model_type": composite.text, "num_hidden_layers": layers}}
    config = with_adapters(config, model_type, config["text_config"])
    if model_type in LAYERS_FROM_PATTERN:
        with pytest.raises(RuleRefusal, match="must equal the number of entries of layers_block_type"):
            total(config)
        return
    try:
        want = expected(config)
    except oracle.TransformersRejected:
        with pytest.raises(RuleRefusal):
            total(config)
        return
    assert total(config) == want, f"{model_type} ({oracle.VERSIONS})"


def test_text_defaults_are_the_text_config_classes_defaults() -> None:
    for composite in records.composites():
        if composite.remote:  # its text config class is the modeling file's (tests/test_remote_built.py)
            continue
        defaults = oracle.class_defaults(composite.text)
        family = records.family(composite.text)
        table = records.text_defaults(composite.text)
        required = list(dict.fromkeys(spec.key for spec in family.symbols if spec.default is records.REQUIRED))
        assert sorted(table) == sorted(required), composite.text
        assert {key: defaults[key] for key in table} == dict(table), f"{composite.text} ({oracle.VERSIONS})"
        if composite.text_defaults:  # the composite's own text config class (Qwen2VLTextConfig), not the record's
            own = oracle.class_defaults(composite.name)["text_config"]
            assert {key: own[key] for key in composite.text_defaults} == dict(composite.text_defaults), composite.name


@pytest.mark.parametrize("model_type", COMPOSITES)
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn_text_configs(model_type: str, data) -> None:
    composite = records.composite(model_type)
    text = data.draw(oracle.drawn_config(records.family(composite.text)))
    if model_type in HEADS_OF_128:
        text["hidden_size"] = 128 * text["num_attention_heads"]
    config = with_adapters({"model_type": model_type, "text_config": text}, model_type, text)
    for key, default in composite.top.items():
        if isinstance(default, bool) and data.draw(st.booleans()):
            config[key] = data.draw(st.booleans())
    assert_counted_as_transformers_builds(model_type, config)


FLAT = [c.name for c in records.composites() if c.text_at_top and not c.remote]


@pytest.mark.parametrize("model_type", FLAT)
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn_text_configs_written_flat(model_type: str, data) -> None:
    """A config.json written flat (no text_config, as dots.llm3-note's and Fuyu-8B's are): the composite class reads
    its text config from the top-level keys (all of them, or the ones it names), and so does llmcount."""
    composite = records.composite(model_type)
    text = data.draw(oracle.drawn_config(records.family(composite.text)))
    text.pop("model_type")
    config = with_adapters({**text, "model_type": model_type}, model_type, text)
    if data.draw(st.booleans()):
        config["text_config"] = None
    assert_counted_as_transformers_builds(model_type, config)


@pytest.mark.parametrize("model_type", FLAT)
def test_class_defaults_written_flat(model_type: str) -> None:
    """The text config class's defaults at the top level: the language model of the composite class's defaults."""
    composite = records.composite(model_type)
    text = oracle.class_defaults(composite.text)
    if composite.text_defaults:  # a text config class of the composite's own, with other defaults
        text = {k: v for k, v in oracle.class_defaults(model_type)["text_config"].items() if k != "model_type"}
    flat = with_adapters({**text, "model_type": model_type}, model_type, text)
    bare = with_adapters({"model_type": model_type}, model_type, {})
    assert total(flat) == expected(flat) == expected(bare), oracle.VERSIONS


def test_fuyu_reads_only_the_text_keys_it_names_from_the_top_level() -> None:
    """FuyuConfig takes the text config's keys it lists from a flat config, PersimmonConfig's defaults for the rest
    (not the Fuyu-8B sizes it uses without any); a key it does not list (qk_layernorm is listed, head_dim is not
    a Persimmon key at all) stays at the top. By hand, d = 64, h = 2, V = 262144, N = 36, d_ff = 16384, untied:
    V·d twice (33,554,432) + per layer 4·(64·64 + 64) + 2·(64·16384) + 16384 + 64 + 2·2·32 + 2·2·64 = 2,130,496
    (QKV, dense, MLP with biases, q/k LayerNorms of head width 32, two LayerNorms), 36 layers, final LayerNorm 128."""
    config = {"model_type": "fuyu", "hidden_size": 64, "num_attention_heads": 2}
    per_layer = 4 * (64 * 64 + 64) + 2 * 64 * 16384 + 16384 + 64 + 2 * 2 * 32 + 2 * 2 * 64
    assert total(config) == 2 * 262144 * 64 + 36 * per_layer + 128 == expected(config), oracle.VERSIONS


def test_dots3_note_counts_what_dots3_note_for_causal_lm_holds() -> None:
    """AutoModelForCausalLM builds Dots3NoteForCausalLM for dots3_note: the text model and the LM head, nothing of
    the vision and audio encoders, which only Dots3NoteForConditionalGeneration holds (and llmcount leaves out)."""
    text = {"num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 100, "pad_token_id": None}
    text |= {"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16, "intermediate_size": 32}
    config = with_adapters({"model_type": "dots3_note", **text}, "dots3_note", text)
    model = read_config(config, "dots3_note")
    assert model.architecture.name == "dots3_note_text" and model.composite.name == "dots3_note"
    assert model.counts.total == oracle.composite_total(config, "Dots3NoteForCausalLM"), oracle.VERSIONS
    encoders = oracle.composite_total(config, "Dots3NoteForConditionalGeneration") - model.counts.total
    assert encoders > 0


def test_llama_3_2_11b_vision_language_model() -> None:
    """MllamaTextConfig's defaults are Llama-3.2-11B-Vision's language model. By hand: embedding (128256 + 8)·4096 =
    525,369,344, untied head 128256·4096 = 525,336,576; a self-attention layer: q, o 2·4096² + k, v 2·4096·1024 +
    MLP 3·4096·14336 + two norms 2·4096 = 218,112,000; a cross-attention layer adds q/k norms 2·128 and two gates:
    218,112,258; 32 + 8 layers (cross at 3, 8, …, 38) and the final norm 4096."""
    config = {"model_type": "mllama", "text_config": {"model_type": "mllama_text_model"}}
    model = read_config(config, "Llama-3.2-11B-Vision")
    want = 525_369_344 + 525_336_576 + 32 * 218_112_000 + 8 * 218_112_258 + 4096
    assert model.counts.total == want == 9_775_192_080 == expected(config), oracle.VERSIONS


@pytest.mark.parametrize("layers", [[], [0], [1, 3], [0, 1, 2, 3, 4, 5], None])
def test_mllama_cross_attention_layers(layers) -> None:
    """The layers cross_attention_layers lists are cross-attention layers (an index beyond the layers names none;
    null is MllamaTextConfig's default list)."""
    text = {"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}
    text |= {"intermediate_size": 32, "vocab_size": 100, "pad_token_id": 0, "cross_attention_layers": layers}
    config = {"model_type": "mllama", "text_config": text}
    assert total(config) == expected(config), oracle.VERSIONS


def test_an_auto_text_config_is_read_with_the_record_of_its_model_type() -> None:
    """LLaVA's text_config is any causal LM: its model_type picks the record (qwen2 here, llama when it names none)."""
    qwen = {"model_type": "llava", "text_config": {"model_type": "qwen2", "num_hidden_layers": 2, "hidden_size": 64}}
    model = read_config(qwen, "test")
    assert model.architecture.name == "qwen2"
    assert model.counts.total == expected(qwen), oracle.VERSIONS
    llama = {"model_type": "llava", "text_config": {"num_hidden_layers": 2, "hidden_size": 64}}
    assert read_config(llama, "test").architecture.name == "llama"
    assert total(llama) == expected(llama), oracle.VERSIONS


def test_a_fixed_text_config_class_ignores_the_model_type_inside() -> None:
    """Gemma3Config reads text_config with Gemma3TextConfig whatever model_type it names (as transformers does)."""
    config = {"model_type": "gemma3", "text_config": {"model_type": "llama", "num_hidden_layers": 2}}
    assert read_config(config, "test").architecture.name == "gemma3_text"
    assert total(config) == expected(config), oracle.VERSIONS


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"model_type": "gemma3", "text_config": [1]}, "key 'text_config' must be a JSON object, got a list"),
        ({"model_type": "gemma3", "text_config": "x"}, "key 'text_config' must be a JSON object"),
        ({"model_type": "gemma3", "tie_word_embeddings": "yes"}, "key 'tie_word_embeddings' must be true or false"),
        ({"model_type": "llava", "text_config": {"model_type": "nope"}}, "text_config: unsupported model_type 'nope'"),
        ({"model_type": "llava", "text_config": {"model_type": 3}}, "text_config: unsupported model_type 3"),
        ({"model_type": "gemma3", "text_config": {"hidden_size": "2560"}}, "text_config: key 'hidden_size' must be"),
        ({"model_type": "llama4", "text_config": {"num_hidden_layers": -1}}, "text_config: key 'num_hidden_layers'"),
    ],
)
def test_bad_text_configs_are_refused_naming_the_key(config: dict, message: str) -> None:
    with pytest.raises(LlmcountError, match=message.replace("(", r"\(")):
        read_config(config, "c.json")


def test_count_says_what_it_leaves_out(tmp_path) -> None:
    """Gemma 3n's MobileNet-V5 vision tower has no record: the count is the language model's with the audio encoder
    and the embedders, a partial total, and says so; the language model's total keeps its own name."""
    from typer.testing import CliRunner

    from llmcount.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma3n"}))
    result = CliRunner().invoke(app, ["count", str(path)])
    assert result.exit_code == 0, result.output
    assert "not counted: the MobileNet-V5 vision tower" in " ".join(result.output.split())
    assert "partial total (a part not counted)" in result.output
    assert result.output.splitlines()[0].endswith(" (language model): Gemma 3n (multimodal),")  # one pair of brackets
    lm = read_config({"model_type": "gemma3n"}, "x").counts.total
    assert f"{lm:,}" in result.output
    data = json.loads(CliRunner().invoke(app, ["count", str(path), "--json"]).output)
    assert data["language_model_total"] == lm and "total" not in data
    assert data["composite"]["model_type"] == "gemma3n"
    assert "vision tower" in data["composite"]["not_counted"]


def test_the_cli_counts_a_composite_config(tmp_path) -> None:
    """`llmcount count config.json` reads a composite config's language model (not refused as an unknown type)."""
    from typer.testing import CliRunner

    from llmcount.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps(GEMMA3_4B))
    result = CliRunner().invoke(app, ["count", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["parts"][0]["total"] == 3_880_263_168  # derived by hand in test_gemma3_4b_language_model
    assert data["total"] == oracle.composite_total(GEMMA3_4B, "Gemma3ForConditionalGeneration"), oracle.VERSIONS


def assert_counted_as_transformers_builds(model_type: str, config: dict) -> None:
    """llmcount's count of a drawn composite config equals transformers'; a draw either side refuses is skipped,
    unless llmcount refuses what transformers builds."""
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


DOTS3_TEXT = {"num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 100, "pad_token_id": None}
DOTS3_TEXT |= {"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16, "intermediate_size": 32}


@pytest.mark.parametrize(
    ("adapters", "refused"),
    [
        ({}, "vision adapter"),  # both adapters keep Dots3NoteConfig's 5120, the text hidden_size is 64
        ({"vision_config": {"adapter_out_dim": 64}}, "audio adapter"),
        ({"vision_config": {"adapter_out_dim": 64}, "audio_config": {"adapter_out_dim": 64}}, None),
        ({"vision_config": {"adapter_out_dim": 64}, "audio_config": {"whisper_adapter_out_dim": 64}}, None),
        ({"vision_config": {"adapter_out_dim": 64}, "audio_config": {"adapter_output_size": 64}}, None),
        (
            {
                "vision_config": {"adapter_out_dim": 64},
                "audio_config": {"adapter_out_dim": 64, "adapter_output_size": 32},
            },
            "audio adapter",
        ),
        ({"vision_config": {"adapter_out_dim": 32}, "audio_config": {"adapter_out_dim": 64}}, "vision adapter"),
    ],
)
def test_dots3_note_adapters_as_wide_as_the_text_model(adapters: dict, refused: str | None) -> None:
    """Dots3NoteConfig refuses adapters whose output width is not the text hidden_size; llmcount refuses the same
    configs naming the adapter, and counts the others as transformers does."""
    config = {"model_type": "dots3_note", **DOTS3_TEXT, **adapters}
    if refused is None:
        assert total(config) == oracle.composite_total(config, "Dots3NoteForCausalLM"), oracle.VERSIONS
        return
    with pytest.raises(oracle.TransformersRejected, match="adapter output width must match the text hidden size"):
        oracle.composite_total(config, "Dots3NoteForCausalLM")
    with pytest.raises(RuleRefusal, match=f"the {refused}'s output width .* is not the text hidden_size \\(64\\)"):
        total(config)


def test_types_refused_by_name_say_why(tmp_path) -> None:
    """A type with a [refused] entry is one transformers has (its CONFIG_MAPPING) or one published with remote code
    (its reason says so), is refused with its reason on one line, and is never also counted."""
    from transformers import CONFIG_MAPPING

    from llmcount.formulas.records import _composites

    reasons = _composites()[2]
    assert reasons, "composites.toml refuses no type"
    for name, reason in reasons.items():
        assert name in CONFIG_MAPPING or reason.startswith("published with remote code"), name
        assert records.family(name) is None and records.composite(name) is None, name
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"model_type": name}))
        result = run("count", str(path))
        assert_refused(result)
        assert result.stderr.strip() == f"llmcount: error: {path}: model_type {name!r} is not counted: {reason}"
