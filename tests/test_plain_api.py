"""``llmcount.load`` without sympy: a config the compiled path counts is held as its ``Counted``, and the API's numbers
(``.counts`` and its sums, ``.values``, ``to_dict()``, ``flops`` and ``memory`` of the loaded model) equal the sympy
path's Model (itself tested against transformers in test_counting.py) on every preset; the sympy Model, the
derivation and the components are read when asked for; loading a config file and counting it imports no sympy."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

import llmcount
from llmcount import counting
from llmcount.formulas.config import read_config
from llmcount.presets import presets
from llmcount.renderers import count_data

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_presets_numbers_are_the_sympy_paths() -> None:
    taken = 0
    for name, preset in presets().items():
        loaded = llmcount.load(name)
        model = read_config(preset.config(), f"preset {name}", name)
        counts, theirs = loaded.counts, model.counts
        assert (counts.total, counts.activated, counts.embedding, counts.non_embedding) == (
            theirs.total,
            theirs.activated,
            theirs.embedding,
            theirs.non_embedding,
        ), name
        assert list(loaded.values.items()) == list(theirs.values.items()), name  # the same names, in the same order
        assert (loaded.name, loaded.family, loaded.source) == (model.name, model.architecture.name, model.source)
        assert loaded.to_dict() == count_data(model), name
        taken += isinstance(loaded._read, counting.Counted)
    assert taken > len(presets()) / 2  # most presets are held as the compiled path's read


def test_the_sympy_model_is_read_once_when_asked_for() -> None:
    loaded = llmcount.load("qwen3-235b-a22b")
    assert type(loaded._read).__name__ == "Counted"
    model = loaded.model
    assert loaded.model is model and isinstance(model, llmcount.Model)
    assert loaded.counts.components == model.counts.components  # each with its sympy formula
    assert loaded.counts == model.counts
    assert str(loaded.derivation.activated) == str(model.derivation.activated)
    # By hand: qwen3-235b-a22b's published 235B total and 22B activated
    assert (loaded.counts.total, loaded.counts.activated) == (235_093_634_560, 22_190_763_520)
    assert llmcount.load(loaded) is loaded


@pytest.mark.parametrize("name", ["qwen3-32b", "llama-2-7b", "deepseek-v3"])
def test_flops_and_memory_of_a_loaded_model_are_those_of_its_name(name: str) -> None:
    loaded = llmcount.load(name)
    assert llmcount.flops(loaded, seq="2k", batch=3) == llmcount.flops(name, seq="2k", batch=3)
    assert llmcount.memory(loaded, seq="8k").total_bytes == llmcount.memory(name, seq="8k").total_bytes


def test_loading_and_counting_a_config_file_imports_no_sympy(tmp_path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(presets()["qwen3-32b"].config()))
    code = (
        "import sys, llmcount; m = llmcount.load(sys.argv[1]);"
        "print(m.counts.total, m.counts.activated, m.counts.embedding, m.counts.non_embedding, m.values['d'],"
        " m.to_dict()['total'], llmcount.flops(m).forward > 0, llmcount.memory(m).total_bytes > 0, repr(m));"
        "print([n for n in ('sympy', 'jinja2', 'torch', 'transformers', 'numpy') if n in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout.splitlines()
    # By hand (qwen3-32b: N=64, V=151936, d=5120, d_ff=25600, h=64, h_kv=8, h_d=128, untied):
    # 2·V·d + d + N(2·d·h·h_d + 2·d·h_kv·h_d + 3·d·d_ff + 2·d + 2·h_d)
    N, V, d, d_ff, h, h_kv, h_d = 64, 151936, 5120, 25600, 64, 8, 128
    total = 2 * V * d + d + N * (2 * d * h * h_d + 2 * d * h_kv * h_d + 3 * d * d_ff + 2 * d + 2 * h_d)
    assert out[0].split()[:6] == [str(total), str(total), str(2 * V * d), str(total - 2 * V * d), str(d), str(total)]
    assert out[1] == "[]"


TRAINING_CASES = (
    {},
    {"optimizer": "adafactor", "seq": "2k", "batch": 3},
    {"zero": 3, "dp": 8, "tp": 2, "recompute": "selective", "attention": "eager"},
    {"lora": 16, "lora_targets": "attention"},
)


@pytest.mark.parametrize("name", ["llama-2-7b", "qwen3-235b-a22b", "deepseek-v3", "gpt2"])
def test_training_through_the_api_is_the_sympy_paths(name: str) -> None:
    from llmcount.formulas import training as tr
    from llmcount.sizes import parse_size

    model = read_config(presets()[name].config(), f"preset {name}", name)
    plain = 0
    for options in TRAINING_CASES:
        degrees = {k: options.get(k, 1) for k in ("tp", "pp", "dp", "ep")}
        parallel = tr.Parallel(zero=options.get("zero", 0), **degrees)
        lora = tr.Lora(options["lora"], (options["lora_targets"],)) if "lora" in options else None
        seq, batch = parse_size(options.get("seq", 4096), "seq"), options.get("batch", 1)
        try:
            theirs = tr.estimate(
                model,
                "bf16",
                seq,
                batch,
                options.get("optimizer", "adamw"),
                parallel,
                lora,
                options.get("attention", "sdpa"),
                options.get("recompute", "none"),
            )
        except llmcount.LlmcountError as exc:  # refused alike, in the same words
            with pytest.raises(llmcount.LlmcountError) as refused:
                llmcount.training(name, **options)
            assert str(refused.value) == str(exc)
            continue
        ours = llmcount.training(name, **options)
        plain += type(ours).__module__ == "llmcount.plain_training"
        assert [(line.name, line.bytes) for line in ours.lines] == [(line.name, line.bytes) for line in theirs.lines]
        assert (ours.parameters, ours.model_states_bytes, ours.activations_bytes, ours.total_bytes) == (
            theirs.parameters,
            theirs.model_states_bytes,
            theirs.activations_bytes,
            theirs.total_bytes,
        ), (name, options)
        assert ours.notes == theirs.notes and ours.lora_parameters == theirs.lora_parameters
    assert plain >= 2  # the training snapshot's estimate, no sympy


def test_training_refuses_freeze_vision_on_a_language_model_as_the_sympy_path() -> None:
    with pytest.raises(llmcount.LlmcountError, match="--freeze-vision: qwen3-8b has no vision tower counted"):
        llmcount.training("qwen3-8b", freeze_vision=True)


def test_training_of_a_config_file_imports_no_sympy(tmp_path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(presets()["llama-2-7b"].config()))
    code = (
        "import sys, llmcount; t = llmcount.training(sys.argv[1], seq='4k');"
        "print(t.model_states_bytes);"
        "print([n for n in ('sympy', 'torch', 'transformers', 'numpy') if n in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout.splitlines()
    # By hand: mixed-precision AdamW holds 2 + 2 + 4 + 4 + 4 = 16 bytes per parameter; Llama-2-7B has 6,738,415,616
    assert out == [str(16 * 6_738_415_616), "[]"]


FIT_CASES = (("80GiB", "bf16", None, 4096), ("24GB", "int4", "fp8", 1000), ("2TiB", "fp8", None, 131_072))


def _fit_alike(config: dict, source: str) -> int:
    """``llmcount.fit`` of ``config`` (the compiled path's search where it takes it) is the sympy path's, or refused
    in the same words, in each of :data:`FIT_CASES`; how many cases the compiled path took."""
    import dataclasses

    from llmcount import plain_memory
    from llmcount.formulas.capacity import fit
    from llmcount.sizes import parse_bytes

    try:
        counted = counting.read(config, source)
    except counting.Fallback:
        return 0
    model = counted.full()
    taken = 0
    for capacity, dtype, kv_dtype, seq in FIT_CASES:
        try:
            ours = plain_memory.fit(counted, parse_bytes(capacity, "c"), dtype, kv_dtype, seq, model.max_positions)
        except counting.Fallback:
            continue
        except llmcount.LlmcountError as exc:  # weights that do not fit: refused in the sympy path's words
            with pytest.raises(llmcount.LlmcountError, match=re.escape(str(exc))):
                fit(model.derivation, model.values, parse_bytes(capacity, "c"), dtype, kv_dtype, seq)
            taken += 1
            continue
        theirs = fit(
            model.derivation, model.values, parse_bytes(capacity, "c"), dtype, kv_dtype, seq, 0,
            max_positions=model.max_positions,
        )  # fmt: skip
        assert dataclasses.asdict(ours) == dataclasses.asdict(theirs), (source, capacity)
        taken += 1
    return taken


FIT_PRESETS = (  # dense, sliding and chunked windows, MoE, MLA, a linear-attention hybrid, a learned position table
    "llama-2-7b", "mistral-7b", "gemma-3-1b-it", "llama-4-scout", "qwen3-30b-a3b", "deepseek-v3",
    "qwen3-next-80b-a3b", "gpt-oss-20b", "gpt2",
)  # fmt: skip


def test_fit_is_the_sympy_paths() -> None:
    taken = sum(_fit_alike(presets()[name].config(), name) for name in FIT_PRESETS)
    assert taken >= len(FIT_PRESETS)  # most presets in most cases


def test_fit_through_the_api_imports_no_sympy_and_refuses_as_before() -> None:
    code = (
        "import sys, llmcount; f = llmcount.fit('llama-2-7b', '80GiB', seq='4k');"
        "print(f.max_batch, f.max_seq, f.weights); print('sympy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    # By hand (Llama-2-7B: 6,738,415,616 parameters, 32 layers of 32 heads of 128 in bf16): the weights 2·P bytes, the
    # KV cache 2·32·32·128·2 = 524,288 bytes per token; the longest S is the context length, 4,096
    weights, per_token = 2 * 6_738_415_616, 524_288
    assert out.stdout.split() == [str((80 * 2**30 - weights) // (per_token * 4096)), "4096", str(weights), "False"]
    with pytest.raises(llmcount.LlmcountError, match="smaller than the weights alone"):
        llmcount.fit("llama-2-7b", "8GB")
