"""The Python API: llmcount.load / flops / memory, the notebook reprs, and docs/api.md run as a doctest.

Expected numbers are published figures or derived by hand here:
  Qwen3-32B   32,762,123,264 (sum of its safetensors index)
  Llama-2-7B  6,738,415,616 (Meta's count for the HF checkpoint)
  GPT-2       124,439,808 (HF model card)
"""

import doctest
import io
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
import sympy

import llmcount
from llmcount.presets import presets

ROOT = Path(__file__).resolve().parent.parent
QWEN3_32B, LLAMA2, GPT2 = 32_762_123_264, 6_738_415_616, 124_439_808


def test_import_llmcount_is_light():
    code = (
        "import sys, llmcount; assert llmcount.__version__;"
        "print([m for m in ('sympy', 'jinja2', 'typer', 'torch', 'transformers', 'numpy') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


def test_public_names():
    assert set(llmcount.__all__) >= {"load", "flops", "memory", "Loaded", "Model", "LlmcountError"}
    for name in llmcount.__all__:
        assert getattr(llmcount, name) is not None
    with pytest.raises(AttributeError):
        llmcount.no_such_name  # noqa: B018


def test_load_a_preset():
    m = llmcount.load("qwen3-32b")
    assert isinstance(m, llmcount.Loaded) and isinstance(m.model, llmcount.Model)
    assert m.counts.total == QWEN3_32B and isinstance(m.counts.total, int)
    assert (m.name, m.family, m.source) == ("qwen3-32b", "qwen3", "preset qwen3-32b")
    assert m.counts == m.model.counts and m.derivation is m.model.derivation  # same numbers, formulas re-exported


def test_derivation_total_is_a_sympy_expression_that_evaluates_to_the_count():
    m = llmcount.load("llama-2-7b")
    total = m.derivation.total
    assert isinstance(total, sympy.Expr)
    symbols = {s.name: s for s in total.free_symbols}
    assert total.subs({symbols[k]: v for k, v in m.values.items()}) == LLAMA2
    # By hand, Llama-2-7B (N=32, V=32000, d=4096, d_ff=11008, untied head): 2·V·d + d + N(4·d² + 3·d·d_ff + 2·d)
    N, V, d, d_ff = 32, 32000, 4096, 11008
    assert 2 * V * d + d + N * (4 * d * d + 3 * d * d_ff + 2 * d) == LLAMA2 == m.counts.total


def test_load_a_path_a_loaded_and_stdin(tmp_path, monkeypatch):
    folder = tmp_path / "gpt2-copy"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(presets()["gpt2"].config()))
    assert llmcount.load(folder).counts.total == GPT2
    assert llmcount.load(folder / "config.json").name == "gpt2-copy"
    m = llmcount.load("gpt2")
    assert llmcount.load(m) is m and llmcount.load(m.model).model is m.model
    stdin = io.TextIOWrapper(io.BytesIO(json.dumps(presets()["llama-2-7b"].config()).encode()))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert llmcount.load("-").counts.total == LLAMA2


@pytest.mark.parametrize("spec", ["no-such-model", "missing/config.json", 12])
def test_bad_specs_raise_llmcount_error(spec):
    with pytest.raises(llmcount.LlmcountError):
        llmcount.load(spec)


def test_flops_by_hand_for_gpt2():
    # 2 FLOPs per weight per token over the matmuls: 12·d² per layer, and the LM head V·d;
    # attention: QKᵀ and AV are 2·S·d each per token per layer, 2 FLOPs each -> 4·S·d.
    N, V, d, S = 12, 50257, 768, 1024
    per_token = 2 * (N * 12 * d * d + V * d) + N * 4 * S * d
    f = llmcount.flops("gpt2", seq=S)
    assert f.per_token == per_token == 284_812_800
    assert f.forward == per_token * S
    assert f.training == 3 * f.forward
    assert f.rule_of_thumb == 6 * GPT2 * S
    assert llmcount.flops("gpt2", seq="1k", batch="2").forward == 2 * f.forward


def test_memory_by_hand_for_llama_2_7b():
    m = llmcount.memory("llama-2-7b", "bf16", seq="4k", batch=2)
    kv_per_token = 2 * 32 * 32 * 128 * 2  # K and V · layers · heads · head size · 2 bytes
    assert m.kv_per_token_bytes == kv_per_token
    assert m.bytes_of("weights") == 2 * LLAMA2
    assert m.bytes_of("kv_cache") == kv_per_token * 4096 * 2
    assert m.total_bytes == 2 * LLAMA2 + kv_per_token * 8192
    # mixed-precision AdamW: 2 + 2 + 4 + 4 + 4 bytes of model states per parameter, and the activations beside
    trained = llmcount.memory("llama-2-7b", training=True)
    assert trained.model_states_bytes == 16 * LLAMA2
    assert trained.total_bytes == 16 * LLAMA2 + trained.activations.per_gpu_bytes > 16 * LLAMA2


def test_training_shards_the_model_states():
    # ZeRO-3 over 8 ranks: every model state split 8 ways (6,738,415,616 is divisible by 8)
    sharded = llmcount.training("llama-2-7b", zero=3, dp=8)
    assert sharded.model_states_bytes == 16 * LLAMA2 // 8
    with pytest.raises(llmcount.LlmcountError, match="zero"):
        llmcount.training("llama-2-7b", zero=4)


@pytest.mark.parametrize(("call", "word"), [({"seq": 0}, "seq"), ({"batch": "1.5k"}, "batch"), ({"seq": True}, "seq")])
def test_sizes_are_checked(call, word):
    with pytest.raises(llmcount.LlmcountError, match=word):
        llmcount.memory("gpt2", **call)


def test_notebook_reprs():
    m = llmcount.load("qwen3-235b-a22b")
    md = m._repr_markdown_()
    assert md.startswith("**qwen3-235b-a22b**")
    assert "235,093,634,560" in md and "22,190,763,520" in md  # Qwen3-235B-A22B: 235B total, 22B activated
    assert "$$" in md and "| symbol | config key | meaning |" in md
    tex = m._repr_latex_()
    assert tex.startswith("$$\n\\begin{aligned}") and tex.rstrip().endswith("$$")
    assert "235{,}093{,}634{,}560" in tex and r"P_{\mathrm{act}}" in tex
    assert "P_{\\mathrm{act}}" not in llmcount.load("gpt2")._repr_latex_()
    assert repr(llmcount.load("gpt2")) == "<llmcount gpt2: gpt2, 124,439,808 parameters>"


def test_markdown_repr_escapes_the_name(tmp_path):
    folder = tmp_path / "my_model*v2"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(presets()["gpt2"].config()))
    assert llmcount.load(folder)._repr_markdown_().startswith(r"**my\_model\*v2**")


def test_docs_api_md_examples_run(tmp_path):
    globs = {"tmp": str(tmp_path), "llama_2_7b_config": json.dumps(presets()["llama-2-7b"].config())}
    result = doctest.testfile(
        str(ROOT / "docs" / "api.md"), module_relative=False, globs=globs, optionflags=doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 20
    assert result.failed == 0


def test_fit_finds_the_longest_context_by_hand():
    # Llama-3-8B in bf16: weights 2 · 8,030,261,248 bytes; KV 2 (K, V) · 32 layers · 8 heads · 128 · 2 bytes per token
    weights, per_token = 2 * 8_030_261_248, 2 * 32 * 8 * 128 * 2
    room = 1000 * per_token + per_token // 2  # a thousand and a half tokens' worth beyond the weights
    capacity = f"{weights + room}B"
    found = llmcount.fit("llama-3-8b", capacity, seq=100)
    assert found.max_seq == 1000 and found.max_batch == 10  # 10 sequences of 100 tokens; 11 do not fit
    with pytest.raises(llmcount.LlmcountError, match="smaller than the weights"):
        llmcount.fit("llama-3-8b", "8GiB")


def test_mfu_is_achieved_over_peak():
    result = llmcount.mfu("llama-3-8b", 1000, peak_tflops=100, gpus=2, convention="llmcount")
    per_token = next(c for c in llmcount.conventions("llama-3-8b") if c.name == "llmcount").training_flops_per_token
    # 1,000 tokens/s over two GPUs of 100 TFLOPS
    assert result.mfu == Fraction(1000 * per_token, 2 * 100 * 10**12)
    with pytest.raises(llmcount.LlmcountError, match="one of --gpu"):
        llmcount.mfu("llama-3-8b", 1000)


def test_conventions_name_their_sources():
    names = [c.name for c in llmcount.conventions("llama-3-8b", seq="2k")]
    assert names[:3] == ["kaplan", "chinchilla", "palm"] and "torchtitan" in names


def test_lora_targets_as_a_string_or_a_tuple():
    # LoRA of rank 16 on the attention matrices of Llama-3-8B, by hand: r·(in + out) per matrix, 32 layers;
    # q, o: 4096 → 4096; k, v: 4096 → 1024
    expected = 32 * 16 * (2 * (4096 + 4096) + 2 * (4096 + 1024))
    as_text = llmcount.training("llama-3-8b", lora=16, lora_targets="attention")
    as_tuple = llmcount.training("llama-3-8b", lora=16, lora_targets=("attention",))
    assert as_text.lora_parameters == as_tuple.lora_parameters == expected
    with pytest.raises(llmcount.LlmcountError, match="lora_targets"):
        llmcount.training("llama-3-8b", lora=16, lora_targets=" , ")
