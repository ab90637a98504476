"""Hostile quantisation configs, by class: every key of every method's ``quantization_config`` (and MLX's
``quantization``, its per-module entries, the whole object) given a value of each JSON kind, or deleted. Reading the
scheme and sizing a model with it either works or raises LlmcountError with one line naming the key, never another
exception; through the CLI that is one line on stderr, exit 1, nothing on stdout."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from quant_models import QWEN3
from refusal import assert_refused, run

from llmcount.errors import LlmcountError
from llmcount.formulas.config import read_config
from llmcount.quant.config import read_quant
from llmcount.quant.stored import plan, rest_dtype

CONFIG = {**QWEN3, "torch_dtype": "bfloat16"}
# one value of each kind: null, booleans, zero, negative, float, huge, strings (a pattern that does not compile),
# empty and odd lists, objects
KINDS = [None, True, 0, -1, 1.5, 10**30, "", "re:(", [], [128], [1, 2, 3], ["a"], {}, {"group_size": 0}]
BASES: dict[str, dict[str, Any]] = {
    "fp8": {"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "dynamic"},
    "fbgemm": {"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["lm_head"]},
    "mxfp4": {"quant_method": "mxfp4", "modules_to_not_convert": ["lm_head"]},
    "gptq": {"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": False, "sym": True, "lm_head": False},
    "awq": {"quant_method": "awq", "bits": 4, "group_size": 32, "version": "gemm", "modules_to_not_convert": []},
    "bnb": {
        "quant_method": "bitsandbytes",
        "load_in_4bit": True,
        "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_use_double_quant": True,
        "llm_int8_skip_modules": ["lm_head"],
    },
    "compressed-tensors": {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "ignore": ["lm_head"],
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32, "symmetric": True},
                "input_activations": None,
            }
        },
    },
}


def _paths(tree: dict, prefix: tuple = ()):
    for key, value in tree.items():
        yield (*prefix, key)
        if isinstance(value, dict):
            yield from _paths(value, (*prefix, key))


def _changed(base: dict, path: tuple, value: Any, delete: bool = False) -> dict:
    out = copy.deepcopy(base)
    at = out
    for key in path[:-1]:
        at = at[key]
    if delete:
        del at[path[-1]]
    else:
        at[path[-1]] = value
    return out


def _configs():
    for name, base in BASES.items():
        for path in _paths(base):
            yield f"{name}:{'.'.join(path)}:deleted", {**CONFIG, "quantization_config": _changed(base, path, 0, True)}
            for value in KINDS:
                yield (
                    f"{name}:{'.'.join(path)}={value!r}",
                    {**CONFIG, "quantization_config": _changed(base, path, value)},
                )
    for value in KINDS:
        yield f"quantization_config={value!r}", {**CONFIG, "quantization_config": value}
        yield f"quantization={value!r}", {**CONFIG, "quantization": value}
        for key in ("group_size", "bits", "mode", "lm_head", "model.layers.0.mlp.down_proj"):
            yield f"quantization.{key}={value!r}", {**CONFIG, "quantization": {"group_size": 32, "bits": 4, key: value}}


def test_every_key_of_every_method_given_every_kind_of_value() -> None:
    model = read_config(CONFIG, "cfg")
    crashed = []
    for label, config in _configs():
        try:
            quant = read_quant(config, "cfg")
            if quant is not None:
                plan(model, quant, rest_dtype(quant, model.dtype, None, "cfg")[0])
        except LlmcountError as exc:
            assert "\n" not in str(exc), (label, str(exc))
        except Exception as exc:  # any other exception is the bug this test looks for
            crashed.append(f"{label}: {type(exc).__name__}: {exc}")
    assert not crashed, crashed[:10]


@pytest.mark.parametrize(
    ("quantization", "key"),
    [
        ({"quantization_config": {**BASES["compressed-tensors"], "format": ["pack-quantized"]}}, "format"),
        ({"quantization": {"group_size": 32, "bits": 4, "lm_head": {"group_size": 0}}}, "lm_head.group_size"),
        ({"quantization": {"group_size": 32, "bits": 4, "lm_head": {"bits": 7}}}, "lm_head.bits"),
    ],
)
def test_through_the_cli_one_line(quantization: dict, key: str, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**CONFIG, **quantization}))
    for command in ("count", "memory", "verify"):
        if command == "verify":
            assert_refused(run(command, str(path), "--index", str(path)), key)
        else:
            assert_refused(run(command, str(path)), key)
