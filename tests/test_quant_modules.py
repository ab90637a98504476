"""Skip lists name the modules transformers' model has, for every record (llmcount/quant/modules.py): GPT-2's
``transformer.h.1.attn.c_attn``, Bloom's ``self_attention.query_key_value``, MPT's ``transformer.blocks.0.ffn``,
GPT-NeoX's ``gpt_neox.layers``, GPT-J's and OPT's, not Llama's ``model.layers.N.self_attn``. The oracle is
transformers' own quantiser (5.24.0, torch 2.13.0+cpu; tests/test_quant_oracle.py): the model built on the meta device
and handed to ``AutoHfQuantizer.preprocess_model`` with the config's skip list, which decides what it converts; the
bytes of its state dict are what llmcount must predict from the config. An entry that names no module is said on
stderr, by name, in one line. An empty ``modules_to_not_convert`` is a list (the quantiser adds none of its own skips:
``get_modules_to_not_convert`` tests ``skip_modules is None``, quantizers/base.py), a missing one is not."""

from __future__ import annotations

import json
import warnings

import pytest

pytest.importorskip("torch")
import torch
from refusal import run
from test_quant_oracle import oracle_bytes, ours

from llmcount.formulas.config import read_config
from llmcount.quant import stored
from llmcount.quant.config import read_quant
from llmcount.quant.stored import plan

FP8 = {"quant_method": "fp8", "weight_block_size": [128, 128]}

SMALL = {
    "bloom": {"hidden_size": 160, "n_layer": 2, "n_head": 4, "vocab_size": 300},
    "mpt": {"d_model": 160, "n_layers": 2, "n_heads": 4, "vocab_size": 300, "max_seq_len": 64},
    "gpt_neox": {
        "hidden_size": 160,
        "intermediate_size": 200,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "vocab_size": 300,
    },
    "gptj": {"n_embd": 160, "n_layer": 2, "n_head": 4, "rotary_dim": 16, "vocab_size": 300, "n_positions": 64},
    "opt": {
        "hidden_size": 160,
        "ffn_dim": 200,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "vocab_size": 300,
        "word_embed_proj_dim": 160,
    },
    "phi": {
        "hidden_size": 160,
        "intermediate_size": 200,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "vocab_size": 300,
    },
}
# Each family's own module names, one in a layer and a whole block of the other layer, plus the LM head
SKIPS = {
    "bloom": ["transformer.h.1.self_attention.query_key_value", "transformer.h.0.mlp"],
    "mpt": ["transformer.blocks.0.ffn.down_proj", "transformer.blocks.1.attn"],
    "gpt_neox": ["gpt_neox.layers.1.mlp.dense_h_to_4h", "gpt_neox.layers.0.attention", "lm_head"],
    "gptj": ["transformer.h.1.attn.q_proj", "transformer.h.0.mlp.fc_out", "lm_head"],
    "opt": ["model.decoder.layers.1.self_attn.k_proj", "model.decoder.layers.0.fc2", "lm_head"],
    "phi": ["model.layers.1.self_attn.dense", "model.layers.0.mlp.fc1", "lm_head"],
}


def config(model_type: str, quant: dict) -> dict:
    return {"model_type": model_type, **SMALL[model_type], "tie_word_embeddings": False, "quantization_config": quant}


def meta_linears(model_type: str) -> set[str]:
    """The names of the modules transformers' FP8 quantiser would look at (nn.Linear) in the meta-built model."""
    from transformers import AutoConfig, AutoModelForCausalLM

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = AutoConfig.for_model(model_type, **SMALL[model_type], tie_word_embeddings=False)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(cfg)
    return {name for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)}


@pytest.mark.parametrize("model_type", sorted(SMALL))
def test_module_names_are_the_models_own(model_type: str, monkeypatch) -> None:
    """Every weight llmcount would convert is named as the meta-built model names its nn.Linear."""
    seen = []
    decide = stored._decide

    def spy(quant, full, kind, matched):
        seen.append(full)
        return decide(quant, full, kind, matched)

    monkeypatch.setattr(stored, "_decide", spy)
    cfg = config(model_type, FP8)
    plan(read_config({**cfg, "torch_dtype": "bfloat16"}, "test"), read_quant(cfg, "test"), "BF16")
    assert set(seen) == meta_linears(model_type)


def weight_bytes(cfg: dict) -> tuple[int, int]:
    """(transformers' bytes, llmcount's). transformers' FP8Linear makes its bias with torch's default dtype (fp32,
    integrations/finegrained_fp8.py 5.24.0) on the meta device, while a checkpoint stores the bias as its producer
    wrote it, which llmcount reads as the config's dtype: such a bias is counted here at 2 bytes an element."""
    import math

    _, tensors = oracle_bytes(cfg)
    size = {"torch.float8_e4m3fn": 1, "torch.float32": 4, "torch.bfloat16": 2}
    theirs = sum(
        math.prod(shape) * (2 if name.endswith(".bias") else size[dtype]) for name, (shape, dtype) in tensors.items()
    )
    model = read_config({**cfg, "torch_dtype": "bfloat16"}, "test")
    return theirs, plan(model, read_quant(cfg, "test"), "BF16").bytes


@pytest.mark.parametrize("model_type", sorted(SMALL))
def test_skip_lists_in_the_familys_own_names_match_transformers(model_type: str) -> None:
    cfg = config(model_type, {**FP8, "modules_to_not_convert": SKIPS[model_type]})
    theirs, mine = weight_bytes(cfg)
    assert mine == theirs, f"{model_type}: transformers 5.24.0's FP8 quantiser with {SKIPS[model_type]}"
    plain, _ = weight_bytes(config(model_type, FP8))
    assert theirs != plain  # the skip list changes what is stored: the test can fail


def test_an_entry_naming_no_module_is_said_on_stderr(tmp_path) -> None:
    skips = ["transformer.h.1.self_attention.query_key_value", "model.layers.0.self_attn.q_proj", "lm_head"]
    cfg = {**config("bloom", {**FP8, "modules_to_not_convert": skips}), "torch_dtype": "bfloat16"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    result = run("memory", str(path))
    assert result.exit_code == 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "modules_to_not_convert: 'model.layers.0.self_attn.q_proj' matches no module of the bloom model" in lines[0]
    assert "query_key_value" not in lines[0] and "'lm_head'" not in lines[0]


def test_ignore_entries_naming_no_module_are_listed() -> None:
    raw = {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float"}}},
        "ignore": ["lm_head", "re:.*mlp\\.dense_4h_to_h$", "re:.*mlp\\.down_proj$", "self_attn.o_proj"],
    }
    cfg = {**config("bloom", raw), "torch_dtype": "bfloat16"}
    model = read_config(cfg, "test")
    result = plan(model, read_quant(cfg, "test"), "BF16")
    assert result.unmatched == ("re:.*mlp\\.down_proj$", "self_attn.o_proj")


LLAMA = {
    "model_type": "llama",
    "hidden_size": 160,
    "intermediate_size": 200,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 300,
    "tie_word_embeddings": False,
}


@pytest.mark.parametrize("skip", [None, [], ["down_proj"]], ids=["missing", "empty", "listed"])
def test_an_empty_list_is_a_list_as_transformers_reads_it(skip) -> None:
    """FP8: missing -> the quantiser's own skips (lm_head) apply; [] or a list -> they do not, lm_head is
    converted."""
    quant = dict(FP8) if skip is None else {**FP8, "modules_to_not_convert": skip}
    cfg = {**LLAMA, "quantization_config": quant}
    theirs, tensors = oracle_bytes(cfg)
    assert ours(cfg) == theirs
    assert (tensors["lm_head.weight"][1] == "torch.bfloat16") == (skip is None)


def bnb_oracle(cfg: dict) -> dict[str, tuple]:
    """transformers' bitsandbytes quantiser on the meta model (device_map as from_pretrained gives it)."""
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.quantizers.auto import AutoHfQuantizer, AutoQuantizationConfig

    rest = {k: v for k, v in cfg.items() if k not in ("model_type", "quantization_config")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf = AutoConfig.for_model(cfg["model_type"], **rest)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(hf, dtype=torch.bfloat16)
        quantizer = AutoHfQuantizer.from_config(
            AutoQuantizationConfig.from_dict(dict(cfg["quantization_config"])), pre_quantized=True
        )
        quantizer.preprocess_model(model=model, config=hf, dtype=torch.bfloat16, device_map={"": "cpu"})
    return {name: type(module).__name__ for name, module in model.named_modules()}


@pytest.mark.parametrize("skip", [None, [], ["down_proj"]], ids=["missing", "empty", "listed"])
def test_bitsandbytes_empty_skip_list(skip) -> None:
    pytest.importorskip("bitsandbytes")
    pytest.importorskip("accelerate")
    quant = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}
    if skip is not None:
        quant["llm_int8_skip_modules"] = skip
    cfg = {**LLAMA, "quantization_config": quant}
    try:
        classes = bnb_oracle(cfg)
    except Exception as error:  # a quantiser that cannot prepare here says why
        pytest.skip(f"bitsandbytes' quantiser does not prepare here: {error}")
    head_converted = classes["lm_head"] != "Linear"
    assert head_converted == (skip is not None)
    model = read_config({**cfg, "torch_dtype": "bfloat16"}, "test")
    groups = {g.path: g for g in plan(model, read_quant(cfg, "test"), "BF16").groups}
    assert (groups["head/lm_head"].stored_as != "BF16") == head_converted


# Conv1D (GPT-2, OpenAI GPT) and FalconLinear (a subclass of nn.Linear) are converted by some methods and not others:
# the FP8 quantiser takes type(module) is nn.Linear only, bitsandbytes takes nn.Linear and Conv1D, not FalconLinear.
CLASSED = {
    "gpt2": {"n_embd": 160, "n_layer": 2, "n_head": 4, "vocab_size": 300, "tie_word_embeddings": False},
    "openai-gpt": {"n_embd": 160, "n_layer": 2, "n_head": 4, "vocab_size": 300},
    "falcon": {
        "hidden_size": 160,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "vocab_size": 300,
        "tie_word_embeddings": False,
    },
}


@pytest.mark.parametrize("model_type", sorted(CLASSED))
def test_fp8_leaves_conv1d_and_linear_subclasses_alone(model_type: str, monkeypatch) -> None:
    monkeypatch.setitem(SMALL, model_type, CLASSED[model_type])
    cfg = config(model_type, {**FP8, "modules_to_not_convert": ["lm_head.nothing"]})  # a list: lm_head converted
    theirs, mine = weight_bytes(cfg)
    assert mine == theirs, f"{model_type}: transformers 5.24.0's FP8 quantiser"


@pytest.mark.parametrize("model_type", sorted(CLASSED))
def test_bitsandbytes_converts_conv1d_not_falcon_linear(model_type: str, monkeypatch) -> None:
    pytest.importorskip("bitsandbytes")
    pytest.importorskip("accelerate")
    monkeypatch.setitem(SMALL, model_type, CLASSED[model_type])
    quant = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}
    cfg = config(model_type, quant)
    try:
        classes = bnb_oracle(cfg)
    except Exception as error:  # a quantiser that cannot prepare here says why
        pytest.skip(f"bitsandbytes' quantiser does not prepare here: {error}")
    theirs = sum(1 for c in classes.values() if c == "Linear4bit")
    model = read_config({**cfg, "torch_dtype": "bfloat16"}, "test")
    stored = plan(model, read_quant(cfg, "test"), "BF16")
    mine = sum(t.count for g in stored.groups for t in g.tensors if t.weight and t.suffix)
    assert mine == theirs
    assert (theirs == 0) == (model_type == "falcon")


# A fused gate_up_proj is one nn.Linear (d -> 2·d_ff), not a gate and an up projection of d_ff each: with d_ff = 192
# the FP8 block scales differ (ceil(384/128) = 3 rows of blocks, against 2 + 2 for two matrices of 192)
FUSED = {
    "hidden_size": 160,
    "intermediate_size": 192,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 300,
    "pad_token_id": 0,
    "tie_word_embeddings": False,
}


@pytest.mark.parametrize("model_type", ["phi3", "glm", "glm4"])
def test_a_fused_gate_up_projection_is_one_matrix(model_type: str, monkeypatch) -> None:
    monkeypatch.setitem(SMALL, model_type, FUSED)
    theirs, mine = weight_bytes(config(model_type, FP8))
    assert mine == theirs, f"{model_type}: transformers 5.24.0's FP8 quantiser"


def test_the_tables_own_skip_list_is_no_warning(tmp_path) -> None:
    """``memory --table``'s nvfp4 column ignores ``lm_head`` by its own choice: a model without such a module (BERT's
    head is cls.predictions.decoder) gets no warning about a list the user never wrote."""
    cfg = {
        "model_type": "bert",
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "vocab_size": 300,
        "torch_dtype": "bfloat16",
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    result = run("memory", str(path), "--table")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
