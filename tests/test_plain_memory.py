"""``memory`` without sympy: the inference memory computed from the compiled snapshot (llmcount.plain_memory) is the
sympy path's (llmcount.formulas.memory.inference, tested against transformers' caches in test_memory.py) on every
record's defaults and every preset, in several dtypes, S and B, as JSON and as text; ``memory`` and
``llmcount.memory`` of such a model import no sympy, and print what the sympy path prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_counting import HEAVY, PROBE

from llmcount import counting, plain_memory
from llmcount.formulas import memory as mem
from llmcount.formulas import records, snapshot
from llmcount.presets import presets
from llmcount.renderers import memory_data, render_memory

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
