"""``count`` of a quantised checkpoint's config (or with ``--quant``): the parameters as the model defines them
(transformers' meta count of the unquantised config) and, apart, the bytes as the scheme stores them (a file written
by compressed-tensors 0.20.0 itself, a published total_size, or a hand derivation written here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from quant_models import QWEN3
from refusal import assert_refused, run


def count_json(*args: str) -> dict:
    result = run("count", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_compressed_tensors_file(tmp_path: Path) -> None:
    """A pack-quantized int4 checkpoint written by compressed-tensors: the stored bytes are the file's tensors', the
    parameters transformers' count of the model, not the packed tensors' elements."""
    pytest.importorskip("compressed_tensors")
    import torch
    from safetensors import safe_open
    from test_quant_compressed_tensors import compressed, weights
    from transformers import AutoConfig, AutoModelForCausalLM

    config = compressed(QWEN3, "pack-quantized", weights(), ["lm_head"], tmp_path / "ckpt")
    expected = config.pop("_bytes")
    rest = {k: v for k, v in QWEN3.items() if k != "model_type"}
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model("qwen3", **rest))
    parameters = sum(p.numel() for p in model.parameters())  # transformers 5.24.0, unquantised
    with safe_open(tmp_path / "ckpt" / "model.safetensors", "pt") as f:
        elements = sum(_numel(f.get_slice(k).get_shape()) for k in f.keys())  # noqa: SIM118 (safe_open is not iterable)
    data = count_json(str(tmp_path / "ckpt"))
    assert data["total"] == parameters
    stored = data["stored"]
    assert stored["bytes"] == expected, "compressed-tensors 0.20.0 file bytes"
    assert stored["parameters"] == parameters != elements
    assert sum(p["parameters"] for p in stored["parts"]) == parameters
    assert stored["name"] == "ct-pack" and "pack-quantized" in stored["scheme"]
    text = run("count", str(tmp_path / "ckpt"))
    assert text.exit_code == 0
    assert f"stored: {expected:,} bytes" in text.stdout and "compressed-tensors int4 pack-quantized" in text.stdout


def _numel(shape: list[int]) -> int:
    out = 1
    for x in shape:
        out *= x
    return out


def test_gpt_oss_20b_as_released() -> None:
    """openai/gpt-oss-20b's model.safetensors.index.json: total_size 13,761,264,768 bytes (MXFP4 experts, BF16
    rest); its 20,914,757,184 parameters as transformers 5.24.0 builds GptOssForCausalLM."""
    stored = count_json("gpt-oss-20b")["stored"]
    assert stored["bytes"] == 13_761_264_768
    assert stored["parameters"] == 20_914_757_184
    assert stored["name"] == "mxfp4"


def test_awq_by_hand(tmp_path: Path) -> None:
    """AWQ int4, group 32, on the small Qwen3 (d 96, d_ff 160, 2 heads of 48, 1 KV head, V 300, N 2, untied), every
    tensor written out: per Linear (in, out) qweight int32 (in, out/8), qzeros int32 (in/32, out/8), scales fp16
    (in/32, out); embedding, LM head (AWQ's default skip) and norms in bf16."""
    linears = [(96, 96), (96, 48), (96, 48), (96, 96), (96, 160), (96, 160), (160, 96)]  # q k v o gate up down
    packed = 2 * sum(4 * i * (o // 8) for i, o in linears)
    storage = 2 * sum(4 * (i // 32) * (o // 8) + 2 * (i // 32) * o for i, o in linears)
    kept = 300 * 96 + 300 * 96 + 2 * (96 + 96 + 48 + 48) + 96
    parameters = 2 * sum(i * o for i, o in linears) + kept
    (tmp_path / "config.json").write_text(json.dumps(QWEN3))
    data = count_json(str(tmp_path / "config.json"), "--quant", "awq", "--group-size", "32", "--dtype", "bf16")
    stored = data["stored"]
    assert data["total"] == parameters == stored["parameters"]
    assert stored["bytes"] == packed + storage + 2 * kept
    assert [p["bytes"] for p in stored["parts"]] == [packed, storage, 2 * kept]
    assert [p["parameters"] for p in stored["parts"]] == [parameters - kept, 0, kept]


def test_llama_cpp_file_type_by_hand(tmp_path: Path) -> None:
    """Q8_0 of the small Qwen3: every 2-D weight Q8_0 (34 bytes per 32 weights, ggml-common.h block_q8_0), the norms
    F32 (llama-quant.cpp keeps 1-D tensors), the token embedding Q8_0 too."""
    pytest.importorskip("gguf")
    linears = [(96, 96), (96, 48), (96, 48), (96, 96), (96, 160), (96, 160), (160, 96)]
    q8 = 2 * sum(i * o for i, o in linears) + 2 * 300 * 96
    norms = 2 * (96 + 96 + 48 + 48) + 96
    (tmp_path / "config.json").write_text(json.dumps(QWEN3))
    stored = count_json(str(tmp_path / "config.json"), "--quant", "q8_0")["stored"]
    assert stored["bytes"] == q8 // 32 * 34 + 4 * norms
    assert {p["what"]: p["parameters"] for p in stored["parts"]} == {"Q8_0": q8, "F32": norms}


def test_none_and_plain_configs_have_no_stored_line() -> None:
    assert "stored" not in count_json("qwen3-8b")
    assert "stored" not in count_json("gpt-oss-20b", "--quant", "none")
    assert "stored:" not in run("count", "qwen3-8b").stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("qwen3-8b", "--bits", "4"), "--bits needs --quant"),
        (("qwen3-8b", "--quant", "gptq", "--bits", "5"), "bits"),
        (("qwen3-8b", "--quant", "awq", "--group-size", "0"), "--group-size"),
        (("qwen3-8b", "--quant", "awq", "--group-size", "100"), "not a multiple of 100"),
        (("qwen3-8b", "--quant", "fp8", "--group-size", "64"), "no choice of group size"),
        (("qwen3-8b", "--quant", "q4_k_m", "--bits", "4"), "llama.cpp file type"),
        (("qwen3-8b", "--quant", "int3"), "unknown scheme 'int3'"),
        (("qwen3-8b", "llama-3-8b", "--quant", "int3"), "unknown scheme 'int3'"),
        (("qwen3-8b", "llama-3-8b", "--quant", "fp8", "--group-size", "64", "--csv"), "no choice of group size"),
        (("qwen3-8b", "--dtype", "fp16"), "--dtype"),
    ],
)
def test_bad_options_are_refused(args: tuple[str, ...], needle: str) -> None:
    code = 2 if args[-2:] == ("--group-size", "0") else 1  # a group size that is no positive integer: a usage error
    assert_refused(run("count", *args), needle, code=code)


def test_unknown_method_in_the_config(tmp_path: Path) -> None:
    config = {**QWEN3, "quantization_config": {"quant_method": "hqq"}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert_refused(run("count", str(tmp_path / "config.json")), "quantization_config.quant_method", "'hqq'")


def test_mtp_is_said_to_be_outside_the_stored_bytes() -> None:
    """deepseek-v3's config declares FP8 128×128 blocks; --mtp adds the MTP module to the count, not to the bytes."""
    plain, with_mtp = count_json("deepseek-v3")["stored"], count_json("deepseek-v3", "--mtp")["stored"]
    assert with_mtp["bytes"] == plain["bytes"]
    assert "the MTP module counted above is not in these bytes" in with_mtp["notes"]
