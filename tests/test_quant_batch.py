"""``count`` of several models with a quantisation scheme: the batch rows (CSV, JSON lines, a JSON array) carry the
stored-bytes columns, ``--quant`` for every model or each config's own ``quantization_config``. Expected bytes are
derived by hand below from AWQ's GEMM layout (gptqmodel 7.7.0, AutoAWQ WQLinear_GEMM) or are a released
checkpoint's published ``total_size``."""

from __future__ import annotations

import json

from quant_models import QWEN3
from refusal import run

# QWEN3 (tests/quant_models.py): d 96, d_ff 160, 2 layers, 2 query heads and 1 KV head of 48, V 300, untied head.
# AWQ int4, group 32, per Linear (out, in): qweight I32 (in, out/8) = in·out/2 bytes, qzeros I32 (in/32, out/8) =
# in·out/64 bytes, scales F16 (in/32, out) = in·out/16 bytes: in·out·37/64 bytes.
# One layer's in·out: q 96·96 + k 96·48 + v 96·48 + o 96·96 + gate, up 96·160 each + down 160·96 = 73,728.
AWQ_LINEAR = 2 * 73_728 * 37 // 64  # 85,248
# Left in BF16: embed_tokens and lm_head (300·96 each; AWQ leaves the head alone), per layer two RMSNorms of 96 and
# q_norm, k_norm of 48, the final norm of 96: (2·28,800 + 2·288 + 96) · 2 bytes.
KEPT = (2 * 28_800 + 2 * 288 + 96) * 2  # 116,544
AWQ_G32 = AWQ_LINEAR + KEPT  # 201,792
GPT_OSS_20B = 13_761_264_768  # openai/gpt-oss-20b model.safetensors.index.json metadata.total_size


def _write(tmp_path, name: str, **extra) -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**QWEN3, "torch_dtype": "bfloat16", **extra}))
    return str(folder)


def test_csv_rows_carry_the_stored_columns_under_quant(tmp_path) -> None:
    a, b = _write(tmp_path, "a"), _write(tmp_path, "b")
    result = run("count", a, b, "--quant", "awq", "--group-size", "32", "--csv")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith(",stored_scheme,stored_bytes,stored_bits_per_parameter")
    for line in lines[1:]:
        cells = line.split(",")
        assert cells[-3:-1] == ["awq", str(AWQ_G32)], line
    assert len(lines) == 3


def test_jsonl_rows_carry_a_configs_own_scheme(tmp_path) -> None:
    awq = {"quant_method": "awq", "bits": 4, "group_size": 32, "version": "gemm"}
    plain, packed = _write(tmp_path, "plain"), _write(tmp_path, "awq", quantization_config=awq)
    result = run("count", plain, packed, "--jsonl")
    assert result.exit_code == 0, result.stderr
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert "stored_bytes" not in first
    assert second["stored_scheme"] == "awq" and second["stored_bytes"] == AWQ_G32
    assert second["total"] == first["total"]  # logical parameters either way


def test_json_array_and_a_published_checkpoint() -> None:
    result = run("count", "gpt-oss-20b", "qwen3-8b", "--json")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)
    assert rows[0]["stored_scheme"] == "mxfp4" and rows[0]["stored_bytes"] == GPT_OSS_20B
    assert "stored_bytes" not in rows[1]


def test_batch_row_equals_the_single_models_stored_bytes() -> None:
    single = json.loads(run("count", "qwen3-8b", "--quant", "q4_k_m", "--json").stdout)["stored"]["bytes"]
    rows = run("count", "qwen3-8b", "llama-3-8b", "--quant", "q4_k_m", "--jsonl")
    assert rows.exit_code == 0, rows.stderr
    assert json.loads(rows.stdout.splitlines()[0])["stored_bytes"] == single


def test_a_model_the_scheme_refuses_is_one_line_and_the_rest_print(tmp_path) -> None:
    good = _write(tmp_path, "good")
    bad = _write(tmp_path, "bad", quantization_config={"quant_method": "awq", "group_size": 0})
    result = run("count", good, bad, "--csv")
    assert result.exit_code == 1
    assert len(result.stdout.splitlines()) == 2  # header and the good row
    errors = result.stderr.strip().splitlines()
    assert "quantization_config.group_size" in errors[0] and bad in errors[0]
    assert errors[-1] == "llmcount: 1 of 2 configs failed"


def test_awq_keeps_the_head_even_with_a_skip_list(tmp_path) -> None:
    """transformers' AWQ quantiser adds its own skips (the LM head) to modules_to_not_convert (quantizer_awq.py
    5.24.0: get_modules_to_not_convert(..., add_default_skips=True)). Skipping layer 1's MLP moves its three
    matrices (3·160·96 = 46,080 parameters) from AWQ's in·out·37/64 bytes to BF16; the head stays BF16."""
    mlp = 3 * 160 * 96
    expected = AWQ_G32 - mlp * 37 // 64 + 2 * mlp  # 267,312
    awq = {"quant_method": "awq", "bits": 4, "group_size": 32, "modules_to_not_convert": ["model.layers.1.mlp"]}
    result = run("count", _write(tmp_path, "awq", quantization_config=awq), "--jsonl")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["stored_bytes"] == expected
