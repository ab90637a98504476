"""llmcount's prediction of llama.cpp's file types (``--quant q4_k_m`` ...) against files llama.cpp's own
``llama-quantize`` wrote.

tests/llama_quantize/types.json holds, for small models of several architectures (dense with grouped-query ratio 4, a
tied head, 8 and 4 experts, phi3's fused attn_qkv, rows of 288 values that fall back from the K-quants, 80 layers that
make llama.cpp's LLM_TYPE_70B, Qwen2-MoE's shared expert, DeepSeek-V3's MLA, gpt-oss's sinks and expert biases,
StarCoder2's biases and LayerNorms; Qwen2, Gemma 2, OLMo 2, GLM-4, SmolLM3, StableLM, OLMoE, Granite, Cohere 2,
GraniteMoE and GraniteMoE with its shared MLP on fewer types), every
tensor's ggml type and stored bytes as ``gguf.GGUFReader`` reads them from the file ``llama-quantize`` (llama.cpp
0c1e57098bba) wrote for each file type, from an F16 file written as the converter writes it;
tests/llama_quantize/make_fixtures.py made it (see there to regenerate). Q2_K_S needs an importance matrix to be
written: its types are the ones ``llama-quantize --dry-run`` prints, with no bytes (and those of the file written with
an importance matrix, below). Some cases also hold files quantised with an importance matrix of ones (``--imatrix``),
which changes the mixture of Q4_0, Q5_0, IQ4_NL and IQ4_XS.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURE = json.loads((Path(__file__).parent / "llama_quantize" / "types.json").read_text())
CASES = [(case, ftype) for case, entry in FIXTURE["cases"].items() for ftype in entry["quantised"]]
IMATRIX = [(case, ftype) for case, entry in FIXTURE["cases"].items() for ftype in entry.get("imatrix", {})]


def _predicted(case: str, ftype: str, imatrix: bool = False) -> dict[str, tuple[str, int]]:
    from llmcount.formulas.config import read_config
    from llmcount.gguf_quant import predict

    entry = FIXTURE["cases"][case]
    model = read_config(entry["config"], case)
    found = predict(model, entry["arch"], ftype, source="F16", imatrix=imatrix)
    return {q.tensor.name: (q.type, q.bytes) for q in found}


@pytest.mark.parametrize(("case", "ftype"), CASES, ids=[f"{c}-{f}" for c, f in CASES])
def test_types_and_bytes_as_llama_quantize_writes_them(case: str, ftype: str) -> None:
    entry = FIXTURE["cases"][case]
    written = {name: tuple(tb) for name, tb in zip(entry["names"], entry["quantised"][ftype], strict=True)}
    predicted = _predicted(case, ftype)
    assert sorted(predicted) == sorted(written)
    if written[entry["names"][0]][1] is None:  # --dry-run: types only
        predicted = {name: (kind, None) for name, (kind, _b) in predicted.items()}
    wrong = {name: (predicted[name], written[name]) for name in written if predicted[name] != written[name]}
    assert not wrong, f"{len(wrong)} tensors differ (predicted, written): {dict(list(wrong.items())[:8])}"


@pytest.mark.parametrize(("case", "ftype"), IMATRIX, ids=[f"{c}-{f}-imatrix" for c, f in IMATRIX])
def test_with_an_importance_matrix(case: str, ftype: str) -> None:
    """``llama-quantize --imatrix`` (a matrix of ones for every tensor): Q4_0 and Q5_0 move the first eighth of the
    ffn_down layers to Q4_1 and Q5_1, IQ4_NL and IQ4_XS no longer move them to Q5_K."""
    entry = FIXTURE["cases"][case]
    written = {name: tuple(tb) for name, tb in zip(entry["names"], entry["imatrix"][ftype], strict=True)}
    predicted = _predicted(case, ftype, imatrix=True)
    wrong = {name: (predicted.get(name), written[name]) for name in written if predicted.get(name) != written[name]}
    assert sorted(predicted) == sorted(written) and not wrong, f"{len(wrong)} differ: {dict(list(wrong.items())[:8])}"


def test_the_fixture_exercises_the_mixtures() -> None:
    """The files differ from one type everywhere: the mixture rules (more bits by layer, 8 experts, the tied
    embedding, the 70B rule, the fallback) are in them, so a prediction of one type per file fails."""
    seen = {
        case: {ftype: {kind for kind, _b in tensors} for ftype, tensors in entry["quantised"].items()}
        for case, entry in FIXTURE["cases"].items()
    }
    assert {"Q4_K", "Q6_K", "F32"} <= seen["llama-16-gqa4"]["q4_k_m"]
    assert "Q8_0" in seen["qwen3moe-8x-8"]["q4_k_m"] and "Q5_K" in seen["qwen3moe-8x-8"]["q4_k_m"]
    assert "Q5_0" in seen["gemma3-10-fallback"]["q4_k_m"]
    assert "Q5_K" in seen["llama-80-70b"]["q2_k"]
    with_imatrix = {kind for kind, _b in FIXTURE["cases"]["llama-16-gqa4"]["imatrix"]["q4_0"]}
    assert "Q4_1" in with_imatrix and "Q4_1" not in seen["llama-16-gqa4"]["q4_0"]
