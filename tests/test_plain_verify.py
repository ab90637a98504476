"""``verify`` without sympy: the model read by the compiled path (:mod:`llmcount.plain_verify`) gives the sympy path's
result, and the command's text written in Python is the template's.

``verify_both_paths`` (tests/verify_twins.py) is used here and by the verify test modules (``pytestmark``): every
comparison they make with a model the compiled path read is made again with the sympy path's Model of the same
config, and the two results must be equal (or refused with the same words); every result's text must be what the
template ``costs_verify.txt.j2`` renders. The checkpoints here are synthetic safetensors files (a header and zero
bytes) with the names, dtypes and shapes each writer gives them (see tests/test_verify_quantized.py); the expected
counts are derived by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_numeric_path import _heavy
from test_verify_quantized import LLAMA, LLAMA_PARAMETERS, fp8, gptq, llama_checkpoint
from verify_twins import verify_both_paths  # noqa: F401  (a fixture)

from llmcount import checkpoint, plain_verify
from llmcount.renderers import render_verify as template_verify


@pytest.fixture
def twins(request) -> list[str]:
    """``verify_both_paths``: the names of the models the compiled path read."""
    return request.getfixturevalue("verify_both_paths")


def f16(prefix: str, fan_in: int, fan_out: int) -> dict:
    return {f"{prefix}.weight": ("F16", (fan_out, fan_in))}


def _index(folder: Path, total_size: int) -> Path:
    names = [tensor.name for tensor in checkpoint.read_header(folder / "model.safetensors")]
    index = folder / "model.safetensors.index.json"
    index.write_text(
        json.dumps({"metadata": {"total_size": total_size}, "weight_map": dict.fromkeys(names, "model.safetensors")})
    )
    return index


def test_the_compiled_path_reads_what_verify_needs(tmp_path: Path, twins: list[str]) -> None:
    folder = llama_checkpoint(tmp_path / "m", f16)
    result = checkpoint.verify(str(folder))
    assert twins  # read by the compiled path
    assert result.match and result.formula_total == result.checkpoint_total == LLAMA_PARAMETERS
    # a tied head stored again: LLAMA tied, the same file
    (folder / "config.json").write_text(json.dumps({**LLAMA, "tie_word_embeddings": True}))
    result = checkpoint.verify(str(folder))
    assert result.difference == 64 * 32  # V·d, the head stored a second time
    assert "tied" in result.differences[0].note


def test_index_by_total_size(tmp_path: Path, twins: list[str]) -> None:
    folder = _write(tmp_path / "m", {**LLAMA, "torch_dtype": "float16"}, f16)
    index = _index(folder, 2 * LLAMA_PARAMETERS)  # every tensor F16: two bytes each
    assert checkpoint.verify(str(folder), index=str(index)).match
    tied = {**LLAMA, "tie_word_embeddings": True, "torch_dtype": "float16"}
    (folder / "config.json").write_text(json.dumps(tied))
    result = checkpoint.verify(str(folder), index=str(index))
    assert result.difference == 64 * 32 and result.components[0].path == "head/lm_head"
    assert len(twins) == 2


def test_quantised_checkpoints(tmp_path: Path, twins: list[str]) -> None:
    for name, writer, quantization in (
        ("gptq", gptq, {"quant_method": "gptq", "bits": 4, "group_size": 16, "desc_act": False, "sym": True}),
        ("fp8", fp8, {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}),
    ):
        folder = llama_checkpoint(tmp_path / name, writer)
        (folder / "config.json").write_text(json.dumps({**LLAMA, "quantization_config": quantization}))
        result = checkpoint.verify(str(folder))
        assert result.checkpoint_total == LLAMA_PARAMETERS, name
        assert result.stored, name  # the bytes each component stores, its scales included
    assert len(twins) == 2


def _write(folder: Path, config: dict, linear) -> Path:
    folder = llama_checkpoint(folder, linear)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("extra", [(), ("--json", "--strict")])
def test_verify_imports_no_sympy(tmp_path: Path, extra: tuple[str, ...]) -> None:
    folder = _write(tmp_path / "m", {**LLAMA, "torch_dtype": "float16"}, f16)
    code, heavy, out = _heavy("verify", str(folder), *extra)
    assert (code, heavy) == (0, [])
    assert "match" in out
    index = _index(folder, 2 * LLAMA_PARAMETERS)
    code, heavy, out = _heavy("verify", str(folder), "--index", str(index), *extra)
    assert (code, heavy) == (0, [])
    assert f"{LLAMA_PARAMETERS:,}" in out or str(LLAMA_PARAMETERS) in out


def test_quantised_verify_imports_no_sympy(tmp_path: Path) -> None:
    quantization = {"quant_method": "gptq", "bits": 4, "group_size": 16, "desc_act": False, "sym": True}
    folder = _write(tmp_path / "q", {**LLAMA, "quantization_config": quantization}, gptq)
    code, heavy, out = _heavy("verify", str(folder), "--json")
    assert (code, heavy) == (0, [])
    assert json.loads(out)["checkpoint_total"] == LLAMA_PARAMETERS


def test_the_text_is_the_templates_for_each_shape_of_result() -> None:
    Check, Tensor, Verification = checkpoint.ComponentCheck, checkpoint.Tensor, checkpoint.Verification
    results = [
        Verification("m", "a", "headers", 10, 10, ()),
        Verification("m", "a", "index", 10, 12, (), note="why"),
        Verification("m", "a", "hub", 10, 11, (Check("x/y", 10, 10), Check("x/z", 0, 1, "extra"))),
        Verification("m", "a", "gguf", 10, 10, (Check("x/y", 10, 10),), unmapped=(Tensor("w\nx", "F16", (2, 3)),)),
        Verification("m", "a", "headers", 5, 5, (Check("q", 0, 7, "s", storage=True),), stored=(("a/b", 3), ("q", 9))),
        Verification("m", "a", "index", 2**40, 2**40 - 8, (), unit="bytes"),
    ]
    for result in results:
        assert plain_verify.render_verify(result) == template_verify(result)
