"""The compiled numeric path (llmcount.counting) counts as the sympy path does, and ``count`` runs without sympy.

The expected numbers are the sympy path's (read_config, whose counts the oracle tests check against transformers):
for every record's class defaults (transformers' config class, as a config.json gives them), and for configs drawn
from them. Where the sympy path refuses a config, the compiled path must hand it over (Fallback), never count it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcount import counting
from llmcount.errors import LlmcountError
from llmcount.formulas import records, snapshot
from llmcount.formulas.config import read_config
from llmcount.presets import presets
from llmcount.renderers.filters import ordered_text, text

HEAVY = ("sympy", "torch", "transformers", "numpy", "matplotlib")
PROBE = """
import json, sys
from llmcount.cli import main
sys.argv = ["llmcount", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "heavy": sorted(m for m in sys.modules if m.split(".")[0] in %r)}), file=sys.stderr)
"""


def _run(*args: str) -> tuple[int, list[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE % (HEAVY,), json.dumps(args)], capture_output=True, text=True, timeout=120
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], report["heavy"], done.stdout


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("qwen3-8b")
    (folder / "config.json").write_text(json.dumps(presets()["qwen3-8b"].config()))
    return folder / "config.json"


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("count", "qwen3-32b"),
        ("count", "qwen3-32b", "--json"),
        ("count", "qwen3-32b", "llama-3-8b", "--csv"),
        ("count", "CONFIG"),
        ("count", "FOLDER", "--jsonl"),
        ("count", "glm-4.5-air"),  # a record with an MTP module: its line under the table
        ("count", "glm-4.5-air", "--mtp", "--json"),
        ("count", "glm-4.5-air", "--mtp"),
        ("count", "qwen3-next-80b-a3b", "--json"),
    ],
)
def test_count_imports_no_sympy_and_nothing_heavy(args, config_file) -> None:
    args = tuple(str(config_file) if a == "CONFIG" else str(config_file.parent) if a == "FOLDER" else a for a in args)
    code, heavy, out = _run(*args)
    assert code == 0
    assert heavy == [], heavy
    assert out.strip()


def test_the_snapshots_are_current() -> None:
    """Every snapshot file is what formulas/snapshot.py makes now from the records (regenerate: python -m
    llmcount.formulas.snapshot)."""
    wanted = snapshot.expected()
    folder = snapshot.folder()
    have = {path.name: path.read_text("utf-8") for path in folder.glob("*.json")}
    stale = sorted(name for name in wanted.keys() | have.keys() if wanted.get(name) != have.get(name))
    assert not stale, f"stale snapshots {stale[:5]}: run python -m llmcount.formulas.snapshot"


def test_a_record_edited_without_its_snapshot_is_not_read_with_it(monkeypatch) -> None:
    monkeypatch.setattr(counting, "_record_bytes", lambda name: b"an edited record")
    counting.compiled.cache_clear()
    try:
        assert counting.compiled("qwen3") is None
    finally:
        monkeypatch.undo()
        counting.compiled.cache_clear()
    assert counting.compiled("qwen3") is not None


def _same(config: dict, source: str = "drawn") -> None:
    """The compiled path counts ``config`` as the sympy path does, or hands it over where that refuses it."""
    try:
        model = read_config(config, source)
        expected = model.counts
    except (LlmcountError, ValueError):
        with pytest.raises(counting.Fallback):
            counting.read(config, source)
        return
    try:
        counted = counting.read(config, source)
    except counting.Fallback:
        return  # the sympy path reads it (a composite, a selection it does not take)
    assert (counted.total, counted.activated, counted.embedding) == (
        expected.total,
        expected.activated,
        expected.embedding,
    )
    assert list(counted.values.items()) == list(expected.values.items())
    assert [(c.path, c.count, c.activated, c.formula, c.text) for c in counted.components] == [
        (c.path, c.count, c.activated, str(c.formula), text(c.formula)) for c in expected.components
    ]
    shown = counted.shown
    if shown is not None:
        d = model.derivation
        assert (shown["total"], shown["activated"], shown["P"]) == (
            str(d.total),
            str(d.activated),
            ordered_text(d.grouped()),
        )


def _class_defaults(model_type: str) -> dict | None:
    from oracle import class_defaults

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return class_defaults(model_type)
    except Exception:  # a remote-code family: transformers has no config class for it
        return None


COMPILED = tuple(name for name in snapshot.bundled() if counting.compiled(name) is not None)


@pytest.mark.parametrize("model_type", COMPILED)
def test_class_defaults_count_alike(model_type: str) -> None:
    config = _class_defaults(model_type)
    if config is None:
        pytest.skip(f"transformers has no config class {model_type}")
    _same(config, f"{model_type} defaults")


@pytest.mark.parametrize("name", sorted(presets()))
def test_presets_count_alike(name: str) -> None:
    _same(presets()[name].config(), f"preset {name}")


SIZES = st.sampled_from([0, 1, 2, 3, 4, 6, 8, 16, 64, 100, 128, 4096])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(COMPILED), st.data())
def test_drawn_configs_count_alike(model_type: str, data) -> None:
    config = _class_defaults(model_type)
    if config is None:
        return
    family = records.family(model_type)
    sizes = sorted({spec.key for spec in family.symbols if type(config.get(spec.key)) is int})
    switches = sorted(key for key, default in family.keys.items() if isinstance(default, bool) and key in config)
    for key in data.draw(st.lists(st.sampled_from(sizes), max_size=3, unique=True)) if sizes else []:
        config[key] = data.draw(SIZES)
    for key in data.draw(st.lists(st.sampled_from(switches), max_size=2, unique=True)) if switches else []:
        config[key] = not config[key]
    _same(config)
