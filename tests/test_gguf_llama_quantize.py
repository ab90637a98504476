"""llmcount's prediction of llama.cpp's file types (``--quant q4_k_m`` ...) against files llama.cpp's own
``llama-quantize`` wrote.

tests/llama_quantize/types.json holds, for small models of several architectures (dense with grouped-query ratio 4,
a tied head, 8 and 4 experts, phi3's fused attn_qkv, rows of 288 values that fall back from the K-quants, 80 layers
that make llama.cpp's LLM_TYPE_70B), every tensor's ggml type and stored bytes as ``gguf.GGUFReader`` reads them from
the file ``llama-quantize`` (llama.cpp 0c1e57098bba) wrote for each file type, from an F16 file written as the
converter writes it; tests/llama_quantize/make_fixtures.py made it (see there to regenerate). Q2_K_S needs an
importance matrix to be written: its types are the ones ``llama-quantize --dry-run`` prints, with no bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURE = json.loads((Path(__file__).parent / "llama_quantize" / "types.json").read_text())
CASES = [(case, ftype) for case, entry in FIXTURE["cases"].items() for ftype in entry["quantised"]]


def _predicted(case: str, ftype: str) -> dict[str, tuple[str, int]]:
    from llmcount.formulas.config import read_config
    from llmcount.gguf_quant import predict

    entry = FIXTURE["cases"][case]
    model = read_config(entry["config"], case)
    return {q.tensor.name: (q.type, q.bytes) for q in predict(model, entry["arch"], ftype, source="F16")}


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
