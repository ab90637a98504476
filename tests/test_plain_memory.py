"""``memory`` without sympy: the inference memory computed from the compiled snapshot (llmcount.plain_memory) is the
sympy path's (llmcount.formulas.memory.inference, tested against transformers' caches in test_memory.py) on every
record's defaults and every preset, in several dtypes, S and B, as JSON and as text; ``memory`` and
``llmcount.memory`` of such a model import no sympy, and print what the sympy path prints."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from test_counting import HEAVY, PROBE

from llmcount import counting, plain_memory
from llmcount.errors import LlmcountError
from llmcount.formulas import capacity as capacity_module
from llmcount.formulas import memory as mem
from llmcount.formulas import records, snapshot
from llmcount.presets import presets
from llmcount.renderers import costs_glance, memory_data, render_memory

CASES = (
    ("bf16", None, 4096, 1),
    ("fp32", "fp8", 100_000, 3),
    ("int4", None, 7, 2),
    ("fp16", "int4", 1, 1),
    ("fp8", "fp32", 131_072, 1),
)


def _memory_alike(config: dict, source: str) -> int:
    """The compiled memory of ``config`` is the sympy path's for each of :data:`CASES`; where the compiled path
    hands the config over, so be it. How many cases the compiled path took."""
    try:
        counted = counting.read(config, source)
    except counting.Fallback:
        return 0
    model = counted.full()
    taken = 0
    for dtype, kv_dtype, seq, batch in CASES:
        try:
            ours = plain_memory.inference(counted, dtype, kv_dtype, seq, batch, plain_memory.max_positions(config))
        except counting.Fallback:
            continue
        assert plain_memory.max_positions(config) == model.max_positions
        theirs = mem.inference(
            model.derivation, model.values, dtype, kv_dtype, seq, batch, max_positions=model.max_positions
        )
        assert plain_memory.memory_data(counted, ours) == memory_data(model, theirs)
        for width in (None, 100, 60):
            assert plain_memory.render_memory(counted, ours, width) == render_memory(model, theirs, width)
        taken += 1
    return taken


COMPILED = tuple(name for name in snapshot.bundled() if counting.compiled(name) is not None)


@pytest.mark.parametrize("model_type", COMPILED)
def test_compiled_memory_on_each_records_defaults_is_the_sympy_paths(model_type: str) -> None:
    _memory_alike(snapshot._default_config(records.family(model_type)), f"{model_type} defaults")


@pytest.mark.parametrize("name", sorted(presets()))
def test_compiled_memory_of_each_preset_is_the_sympy_paths(name: str) -> None:
    _memory_alike(presets()[name].config(), f"preset {name}")


def test_the_compiled_path_takes_most_presets() -> None:
    """The compiled path is the one a user meets: it takes the bundled presets' default memory (a snapshot that lost
    its memory plans would pass the equality tests above by handing every config over)."""
    taken = sum(_memory_alike(p.config(), f"preset {p.name}") > 0 for p in presets().values())
    assert taken >= 0.9 * len(presets())


def test_a_window_below_two_is_refused_by_the_sympy_path() -> None:
    config = {**presets()["gemma-2-2b"].config(), "sliding_window": 1}
    counted = counting.read(config, "a config")
    with pytest.raises(counting.Fallback):
        plain_memory.inference(counted, "bf16", None, 4096, 1)


FIT_CASES = (
    (80 * 2**30, "bf16", None, 4096),
    (24 * 10**9, "int4", "fp8", 32_768),
    (2**30, "fp32", None, 1),  # the weights of most models do not fit: the refusal is the same
)


def _fit_alike(config: dict, source: str) -> int:
    """The compiled ``memory --gpu-memory`` of ``config`` (the search, its JSON, its text, its refusal) is the sympy
    path's for each of :data:`FIT_CASES`, where the compiled path takes it. How many cases it took."""
    try:
        counted = counting.read(config, source)
    except counting.Fallback:
        return 0
    model = counted.full()
    positions = plain_memory.max_positions(config)
    taken = 0
    for capacity, dtype, kv_dtype, seq in FIT_CASES:
        try:
            ours = plain_memory.fit(counted, capacity, dtype, kv_dtype, seq, positions)
        except counting.Fallback:
            continue
        except LlmcountError as exc:
            with pytest.raises(LlmcountError, match=re.escape(str(exc))):
                capacity_module.fit(model.derivation, model.values, capacity, dtype, kv_dtype, seq)
            taken += 1
            continue
        theirs = capacity_module.fit(
            model.derivation, model.values, capacity, dtype, kv_dtype, seq, 0, None, "fp16", model.max_positions
        )
        assert ours == theirs
        assert plain_memory.fit_data(counted, ours) == costs_glance.fit_data(model, theirs)
        assert plain_memory.render_fit(counted, ours) == costs_glance.render_fit(model, theirs).rstrip() + "\n"
        taken += 1
    return taken


@pytest.mark.parametrize("model_type", COMPILED)
def test_compiled_fit_on_each_records_defaults_is_the_sympy_paths(model_type: str) -> None:
    _fit_alike(snapshot._default_config(records.family(model_type)), f"{model_type} defaults")


@pytest.mark.parametrize("name", sorted(presets()))
def test_compiled_fit_of_each_preset_is_the_sympy_paths(name: str) -> None:
    _fit_alike(presets()[name].config(), f"preset {name}")


def test_the_compiled_fit_takes_most_presets() -> None:
    taken = sum(_fit_alike(p.config(), f"preset {p.name}") == len(FIT_CASES) for p in presets().values())
    assert taken >= 0.8 * len(presets())


def test_the_fits_answers_by_hand() -> None:
    """qwen3-32b in 80 GiB, bf16: 32,762,123,264 parameters of 2 bytes, 2 · 64 layers · 8 KV heads · 128 · 2 bytes
    = 262,144 bytes of KV cache per token; the longest S is the context length (40,960), B at 4096 the whole
    sequences that fit in what the weights leave."""
    counted = counting.read(presets()["qwen3-32b"].config(), "preset qwen3-32b")
    found = plain_memory.fit(counted, 80 * 2**30, "bf16", None, 4096, 40_960)
    weights, per_token = 32_762_123_264 * 2, 2 * 64 * 8 * 128 * 2
    assert found.weights == weights
    assert found.max_seq == 40_960
    assert found.max_seq_by_memory == (80 * 2**30 - weights) // per_token
    assert found.max_batch == (80 * 2**30 - weights) // (per_token * 4096)


def _heavy(*args: str) -> tuple[int, list[str], str]:
    """Run the CLI's main on ``args`` in a fresh process (test_counting's probe, 90 columns wide): its exit status,
    the heavy modules it imported, stdout."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE % (HEAVY,), json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "90"},
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], report["heavy"], done.stdout


MEMORY_ARGS = [
    ("qwen3-32b", "bf16", None, "4096", "1", False),
    ("deepseek-v2-lite", "bf16", None, "4096", "1", True),
    ("qwen3-next-80b-a3b", "fp16", None, "32k", "2", False),
    ("gemma-2-2b", "bf16", "fp8", "32k", "4", False),
    ("llama-3-8b", "int4", None, "4096", "1", False),
]


@pytest.mark.parametrize(("name", "dtype", "kv_dtype", "seq", "batch", "as_json"), MEMORY_ARGS)
def test_memory_imports_no_sympy_and_prints_what_the_sympy_path_prints(name, dtype, kv_dtype, seq, batch, as_json):
    args = ["memory", name, "--dtype", dtype, "--seq", seq, "--batch", batch]
    args += ["--kv-dtype", kv_dtype] if kv_dtype else []
    code, heavy, out = _heavy(*args, *(["--json"] if as_json else []))
    assert (code, heavy) == (0, [])
    model = counting.read(presets()[name].config(), f"preset {name}", name).full()
    sizes = {"4096": 4096, "32k": 32768}[seq], int(batch)
    theirs = mem.inference(model.derivation, model.values, dtype, kv_dtype, *sizes, max_positions=model.max_positions)
    if as_json:
        assert json.loads(out) == json.loads(json.dumps(memory_data(model, theirs)))
    else:
        assert out == render_memory(model, theirs, 90).rstrip() + "\n"


FIT_ARGS = [
    ("qwen3-32b", "80GiB", "bf16", None, "4096", False),
    ("gemma-2-2b", "24GB", "bf16", "fp8", "32k", True),
    ("deepseek-v3", "80GiB", "bf16", None, "4096", False),  # a quantised config, sized in the dtype as the sympy path
    ("qwen3-next-80b-a3b", "200GiB", "fp8", None, "4096", False),
]


@pytest.mark.parametrize(("name", "capacity", "dtype", "kv_dtype", "seq", "as_json"), FIT_ARGS)
def test_memory_gpu_memory_imports_no_sympy_and_prints_what_the_sympy_path_prints(
    name, capacity, dtype, kv_dtype, seq, as_json
):
    args = ["memory", name, "--gpu-memory", capacity, "--dtype", dtype, "--seq", seq]
    args += ["--kv-dtype", kv_dtype] if kv_dtype else []
    code, heavy, out = _heavy(*args, *(["--json"] if as_json else []))
    assert heavy == []
    model = counting.read(presets()[name].config(), f"preset {name}", name).full()
    size = {"80GiB": 80 * 2**30, "24GB": 24 * 10**9, "200GiB": 200 * 2**30}[capacity]
    sizes = {"4096": 4096, "32k": 32768}[seq]
    try:
        theirs = capacity_module.fit(
            model.derivation, model.values, size, dtype, kv_dtype, sizes, 0, None, "fp16", model.max_positions
        )
    except LlmcountError:
        assert (code, out) == (1, "")
        return
    assert code == 0
    if as_json:
        assert json.loads(out) == json.loads(json.dumps(costs_glance.fit_data(model, theirs)))
    else:
        assert out == costs_glance.render_fit(model, theirs).rstrip() + "\n"


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (("qwen3-32b", "--gpu-memory", "80"), 2),
        (("qwen3-32b", "--gpu-memory", "80GiB", "--seq", "0"), 2),
        (("qwen3-32b", "--gpu-memory", "80GiB", "--dtype", "fp7"), 1),
        (("qwen3-32b", "--gpu-memory", "1GiB"), 1),
        (("no-such-model", "--gpu-memory", "80GiB"), 1),
        (("./no-such-file.json", "--gpu-memory", "80GiB"), 1),
    ],
)
def test_a_bad_gpu_memory_or_model_is_refused_without_sympy(args: tuple[str, ...], status: int) -> None:
    code, heavy, out = _heavy("memory", *args)
    assert (code, heavy, out) == (status, [], "")


def test_memory_help_imports_no_sympy() -> None:
    code, heavy, out = _heavy("memory", "--help")
    assert (code, heavy) == (0, [])
    assert "--seq" in out


def test_the_apis_memory_imports_no_sympy() -> None:
    script = (
        "import sys, llmcount; m = llmcount.memory('qwen3-32b', seq='4k', batch=2); "
        f"print(m.total_bytes, m.kv_per_token_bytes, sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    total, per_token, heavy = done.stdout.split(" ", 2)
    # qwen3-32b: 64 layers, 8 KV heads of 128: 2 * 64 * 8 * 128 elements per token in bf16
    assert int(per_token) == 2 * 64 * 8 * 128 * 2
    assert int(total) == 32_762_123_264 * 2 + int(per_token) * 4096 * 2
    assert heavy.strip() == "[]"


def _run(*args: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "llmcount", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "90"},
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("qwen3-32b", "--seq", "4096"),
        ("gemma-2-2b", "--seq=32k", "-b", "4", "--kv-dtype", "fp8", "--json"),
        ("llama-3-8b", "--dtype", "int4", "--batch=2"),
        ("deepseek-v3", "-s", "8k"),  # a quantised config: the sympy path, called the same way
        ("qwen3-32b", "--seq", "0"),
        ("qwen3-32b", "--dtype", "fp7"),
        ("no-such-model",),
    ],
)
def test_memory_without_clicks_parsing_prints_what_the_parsed_command_prints(args: tuple[str, ...]) -> None:
    # after "--" every word is a MODEL: the command line is click's to parse
    quick = _run("memory", *args)
    model = [a for a in args if not a.startswith("-") and a not in ("4096", "0", "4", "fp8", "int4", "fp7", "8k")]
    options = [a for a in args if a not in model]
    parsed = _run("memory", *options, "--", *model)
    assert quick == parsed
    assert quick[1] or quick[2]


@pytest.mark.parametrize(
    "args",
    [
        ("memory", "qwen3-32b", "--seq", "4096", "--seq", "8192"),
        ("memory", "qwen3-32b", "--training"),
        ("memory", "qwen3-32b", "--seq"),
        ("memory", "qwen3-32b", "--seq", "-1"),
        ("memory", "qwen3-32b", "llama-3-8b"),
        ("memory", "--help"),
        ("memory",),
    ],
)
def test_other_memory_command_lines_are_clicks(args: tuple[str, ...]) -> None:
    from llmcount.cli.costs import _quick_memory

    assert _quick_memory(list(args)) is None
