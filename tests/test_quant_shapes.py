"""The weights ``llmcount/quant/shapes.toml`` writes out (a width that is a product or a quotient, a fused projection,
several matrices in one term, a bare Parameter) against transformers' own FP8 quantiser (5.24.0, torch 2.13.0+cpu):
each record's class-default model built on the meta device and handed to ``AutoHfQuantizer.preprocess_model``
(tests/test_quant_oracle.py), whose float8 weights and float32 ``weight_scale_inv`` block scales (128×128) are the
tensors a checkpoint of it holds. llmcount's quantised tensors, from the config alone, must come to the same bytes.
Kept tensors are not compared here: a model's own fp32 parameters (routers, dt_bias) and buffers are another
question than where the scheme's Linear modules are."""

from __future__ import annotations

import math
import sys

import pytest

pytest.importorskip("torch")
from oracle import REFUSED_DEFAULTS, class_defaults
from refusal import assert_refused, run
from test_quant_oracle import oracle_bytes

from llmcount.formulas import records
from llmcount.formulas.config import read_config
from llmcount.quant.config import read_quant
from llmcount.quant.stored import _shapes_file, plan

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FP8 = {"quant_method": "fp8", "weight_block_size": [128, 128]}
TABLE = _shapes_file()
TABLES = ("refused", "tied", "last", "keep")
WRITTEN = sorted(
    ({name for name in TABLE if name not in TABLES} | {name for t in TABLES[1:] for name in TABLE.get(t, {})})
    - {"jetmoe", "mllama_text_model", "lfm2_moe"}
)
# not built here: jetmoe and lfm2_moe (transformers 5.24.0 cannot build JetMoeConfig's or Lfm2MoeConfig's class
# defaults: no hidden_act; lfm2_moe's in_proj is lfm2's, checked) and
# mllama_text_model (AutoModelForCausalLM takes only the whole Mllama config); stablelm's k_proj and v_proj, the
# same shapes, are checked


def quantised_bytes(model_type: str, quant: dict | None = None, **keys) -> tuple[int, int]:
    """(transformers' quantised bytes, llmcount's) for the record's class-default config (with ``keys`` set) under
    FP8 128×128 (or ``quant``)."""
    defaults = {k: v for k, v in class_defaults(model_type).items() if k not in ("dtype", "torch_dtype")}
    if model_type in REFUSED_DEFAULTS:  # defaults that build no model: the value that makes them one
        key, value, *more = REFUSED_DEFAULTS[model_type]
        defaults = {**defaults, key: value, **(more[0] if more else {})}
    config = {"model_type": model_type, **defaults, **keys, "quantization_config": quant or FP8}
    _, tensors = oracle_bytes(config)
    size = {"torch.float8_e4m3fn": 1, "torch.float32": 4}
    theirs = sum(
        math.prod(shape) * size[dtype]
        for name, (shape, dtype) in tensors.items()
        if dtype == "torch.float8_e4m3fn" or name.endswith("_scale_inv")
    )
    model = read_config({**config, "torch_dtype": "bfloat16"}, model_type)
    stored = plan(model, read_quant(config, model_type), "BF16")
    return theirs, sum(t.bytes for g in stored.groups for t in g.tensors if t.suffix)


@pytest.mark.parametrize("model_type", WRITTEN)
def test_written_shapes_match_transformers_fp8_quantiser(model_type: str) -> None:
    theirs, ours = quantised_bytes(model_type)
    assert ours == theirs, f"{model_type}: FP8 weights and scales, transformers 5.24.0's quantiser {theirs:,}"


def test_every_written_path_is_a_term_of_its_record() -> None:
    for name, entries in TABLE.items():
        if name == "refused":
            assert all(records.family(f) is not None for f in entries), entries
            continue
        if name in TABLES[1:]:
            for record, entry in entries.items():
                family = records.family(record)
                assert family is not None, record
                paths = {c.term.path for c in family.choices}
                assert set(entry.get("paths", [entry.get("path")])) <= paths, (name, record)
            continue
        family = records.family(name)
        assert family is not None, name
        paths = {c.term.path for c in family.choices}
        assert set(entries) <= paths, (name, set(entries) - paths)


def test_the_file_parses_as_toml() -> None:
    from importlib import resources

    text = resources.files("llmcount.quant").joinpath("shapes.toml").read_text("utf-8")
    assert tomllib.loads(text) == TABLE


@pytest.mark.parametrize("model_type", sorted(TABLE["refused"]))
def test_refused_records_name_the_reason(model_type: str, tmp_path) -> None:
    import json

    config = {"model_type": model_type, **class_defaults(model_type), "torch_dtype": "bfloat16"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("memory", str(path), "--quant", "fp8-block", "--dtype", "bf16")
    assert_refused(result, f"is not sized for the {model_type} record", TABLE["refused"][model_type][:40])


# The tied shared blocks of Zamba and Zamba2 (transformers ties every hybrid layer's copy only with tied word
# embeddings) and Gemma 3n's last unembedding projection (the model's last parameter when the head is tied) are left
# alone by get_keys_to_not_convert; untied, every copy is converted. BLT's last parameter is its patcher's head, which
# has no patcher without patch_in_forward. Both ways against the quantiser.
@pytest.mark.parametrize(
    ("model_type", "keys"),
    [
        ("zamba", {"tie_word_embeddings": False}),
        ("zamba2", {"tie_word_embeddings": False, "use_shared_attention_adapter": True}),
        ("gemma3n_text", {"tie_word_embeddings": False}),
        ("blt", {"patch_in_forward": False}),
    ],
)
def test_untied_variants_match_transformers_fp8_quantiser(model_type: str, keys: dict) -> None:
    theirs, ours = quantised_bytes(model_type, **keys)
    assert ours == theirs, f"{model_type} {keys}: FP8 weights and scales, transformers 5.24.0's quantiser {theirs:,}"


def test_an_explicit_skip_list_on_a_tied_block_is_refused(tmp_path) -> None:
    import json

    quant = {**FP8, "modules_to_not_convert": ["lm_head"]}
    defaults = {k: v for k, v in class_defaults("zamba").items() if k not in ("dtype", "torch_dtype")}
    config = {"model_type": "zamba", **defaults, "torch_dtype": "bfloat16", "quantization_config": quant}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("memory", str(path))
    assert_refused(result, "zamba record's attention/q_proj once the config lists the modules", "_tied_weights_keys")
