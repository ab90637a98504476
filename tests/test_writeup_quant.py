"""The write-up's quantisation section (``--sections quant``, for a config that declares a quantisation; asked for,
like the other costs): the scheme named and a table of bits per weight by tensor class, whose bytes add up to a
released checkpoint's (openai/gpt-oss-20b's model.safetensors.index.json: total_size 13,761,264,768) or a hand
derivation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from quant_models import QWEN3
from refusal import assert_refused, run

from llmcount.renderers.writeup import build


def section(text: str, head: str) -> str:
    return next(p for p in text.split("\n## ") if p.split(". ", 1)[-1].startswith(head))


def test_gpt_oss_20b_as_released() -> None:
    """MXFP4 experts: blocks 4 bits and E8M0 scales 0.25 bits per expert weight (one byte per 32); the rest BF16."""
    post = build("gpt-oss-20b", sections="quant")
    part = section(post.text, "Quantisation")
    assert "MXFP4 experts" in part and "13,761,264,768 bytes" in part
    assert "| blocks | U8 | (out, in/32, 16) | 9,555,148,800 | 4.000 |" in part
    assert "| scales | U8 | (out, in/32) | 597,196,800 | 0.250 |" in part
    assert "| kept parameters | BF16 |  | 3,608,919,168 | 16.000 |" in part
    data = post.data["quant"]
    assert data["bytes"] == 13_761_264_768 and sum(t["bytes"] for t in data["tensors"]) == data["bytes"]
    assert data["quantised_parameters"] + data["kept_parameters"] == 20_914_757_184


def test_shown_when_asked_for() -> None:
    assert "quant" in build("gpt-oss-20b", sections="tree,params,quant").data["shown"]
    assert "quant" not in build("gpt-oss-20b").data["shown"]  # a post on the parameters; the bytes are asked for
    assert "quant" not in build("gpt-oss-20b", sections="params").data["shown"]


def test_awq_by_hand(tmp_path: Path) -> None:
    """AWQ int4, group 32, on the small Qwen3 (linears (in, out): q 96→96, k 96→48, v 96→48, o 96→96, gate and up
    96→160, down 160→96, two layers): qweight in·out/8 int32, qzeros (in/32)·(out/8) int32, scales (in/32)·out fp16;
    embedding, LM head (AWQ's default skip) and norms in bf16."""
    linears = [(96, 96), (96, 48), (96, 48), (96, 96), (96, 160), (96, 160), (160, 96)]
    config = {**QWEN3, "torch_dtype": "bfloat16"}
    config["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 32, "version": "gemm"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    data = build(str(path), sections="quant").data["quant"]
    quantised = 2 * sum(i * o for i, o in linears)
    kept = 2 * 300 * 96 + 2 * (96 + 96 + 48 + 48) + 96
    rows = {t["tensor"]: t["bytes"] for t in data["tensors"]}
    assert rows == {
        "qweight": 2 * sum(4 * i * (o // 8) for i, o in linears),
        "qzeros": 2 * sum(4 * (i // 32) * (o // 8) for i, o in linears),
        "scales": 2 * sum(2 * (i // 32) * o for i, o in linears),
        "BF16": 2 * kept,
    }
    assert data["quantised_parameters"] == quantised and data["kept_parameters"] == kept
    qweight = next(t for t in data["tensors"] if t["tensor"] == "qweight")
    assert qweight["bits"] == 4.0 and qweight["shape"] == "in, ⌈out·4/32⌉"


@pytest.mark.parametrize(("fmt", "lang"), [("latex", "en"), ("markdown", "zh"), ("latex", "zh"), ("html", "en")])
def test_every_format_and_language_renders_it(fmt: str, lang: str) -> None:
    text = build("gpt-oss-20b", fmt, lang, sections="params,quant").text
    assert "9,555,148,800" in text and "597,196,800" in text


def test_a_config_without_a_scheme_is_refused() -> None:
    assert_refused(run("writeup", "qwen3-8b", "--sections", "quant"), "declares no quantisation")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_latex_section_compiles(lang: str, tmp_path: Path) -> None:
    """The scheme's words and shapes (×, ⌈⌉, ·, <name>) typeset in pdflatex, as the write-ups' test does."""
    import shutil
    import subprocess

    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex (texlive-latex-base)")
    for spec in ("gpt-oss-20b", "deepseek-v3"):
        (tmp_path / f"{spec}.tex").write_text(build(spec, "latex", lang, sections="params,quant").text, "utf-8")
        done = subprocess.run(
            ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", f"{spec}.tex"],
            cwd=tmp_path,
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, (spec, done.stdout[-2000:])


def test_the_memory_section_says_how_the_checkpoint_stores_its_weights() -> None:
    """The memory section of a quantised checkpoint's post opens with the bytes as stored: gpt-oss-20b's
    13,761,264,768 (openai/gpt-oss-20b model.safetensors.index.json, metadata.total_size), MXFP4 experts; a post of
    a model without a scheme does not, and neither does a post without the memory section."""
    text = build("gpt-oss-20b", "markdown", "en", sections="memory").text
    assert "This checkpoint stores its weights as MXFP4" in text and "13,761,264,768 bytes in all" in text
    assert "checkpoint 的权重按 MXFP4" in build("gpt-oss-20b", "markdown", "zh", sections="memory").text
    assert "This checkpoint stores" not in build("qwen3-32b", "markdown", "en", sections="memory").text
    assert "This checkpoint stores" not in build("gpt-oss-20b", "markdown", "en").text
