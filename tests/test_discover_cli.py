"""``count --discover``: a model_type with no bundled record is counted with a record derived from transformers'
code, exact against transformers, cached in the user cache folder, and said so; without the flag it is refused
with a hint; bad names, a type transformers does not know either and a broken cache are one line each."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from llmcount import counting, discovered
from llmcount.cli import app
from llmcount.formulas import records

oracle = pytest.importorskip("oracle", reason="discover needs torch and transformers (pip install '.[test]')")

HIDDEN = "llama"  # a family whose bundled record the tests hide, so that llmcount has to discover it
CONFIG = {
    "model_type": HIDDEN,
    "hidden_size": 96,
    "intermediate_size": 160,
    "num_hidden_layers": 3,
    "num_attention_heads": 6,
    "num_key_value_heads": 2,
    "vocab_size": 250,
    "tie_word_embeddings": False,
}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMCOUNT_CACHE", str(tmp_path / "cache"))
    bundled = records.family
    monkeypatch.setattr(records, "family", lambda model_type: None if model_type == HIDDEN else bundled(model_type))
    compiled = counting.compiled  # and its compiled snapshot, which count reads without the records
    monkeypatch.setattr(counting, "compiled", lambda model_type: None if model_type == HIDDEN else compiled(model_type))
    return tmp_path / "cache" / "records"


def transformers_version() -> str:
    import transformers

    return transformers.__version__


def count(*args: str):
    return CliRunner().invoke(app, ["count", *args])


def test_discovered_record_counts_exactly_then_comes_from_the_cache(cache, tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    expected = oracle.meta_total(CONFIG)

    first = count(str(path), "--discover", "--json")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["total"] == expected
    assert "discovered one from transformers" in first.stderr and "5 random configs" in first.stderr
    assert [p.name for p in cache.iterdir()] == [f"{HIDDEN}@{transformers_version()}.toml"]

    again = count(str(path), "--discover", "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["total"] == expected
    assert "cached:" in again.stderr and "discovered one" not in again.stderr


def test_without_the_flag_the_type_is_refused_with_a_hint(cache, tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    result = count(str(path))
    assert result.exit_code == 1 and result.stdout == ""
    assert "unsupported model_type 'llama'" in result.stderr and "count --discover" in result.stderr
    assert not cache.exists()


@pytest.mark.parametrize(
    ("model_type", "message"),
    [
        ("no_such_architecture", "unknown to transformers"),
        ("../../etc/passwd", "is not a transformers model_type name"),
        ("x" * 100, "is not a transformers model_type name"),
    ],
)
def test_names_transformers_does_not_know_are_refused(cache, tmp_path, model_type: str, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type}))
    result = count(str(path), "--discover")
    assert result.exit_code == 1 and result.stdout == ""
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not cache.exists()


def test_the_types_read_from_transformers_source_are_its_config_mapping() -> None:
    from transformers import CONFIG_MAPPING

    assert discovered.transformers_types() == frozenset(CONFIG_MAPPING.keys())


def test_an_unknown_type_is_refused_with_the_closest_names_before_transformers_is_imported(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "qwen4"}))
    code = (
        "import sys; from llmcount.cli import main; sys.argv = ['llmcount', 'count', sys.argv[1], '--discover']\n"
        "try: main()\nexcept SystemExit as e: assert 'transformers' not in sys.modules, 'imported'; raise"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LLMCOUNT_CACHE": str(tmp_path / "cache")},
    )
    assert result.returncode == 1 and result.stdout == "", result.stderr
    assert "unknown to transformers" in result.stderr and "closest: qwen3" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_broken_cached_record_is_ignored_with_one_line_and_discovered_again(cache, tmp_path) -> None:
    cache.mkdir(parents=True)
    broken = cache / f"{HIDDEN}@{transformers_version()}.toml"
    broken.write_text("not = [toml")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    result = count(str(path), "--discover", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == oracle.meta_total(CONFIG)
    ignored = [line for line in result.stderr.splitlines() if "ignoring the cached record" in line]
    assert len(ignored) == 1 and str(broken) in ignored[0]
    assert discovered.unsealed(broken.read_bytes())  # replaced by a whole record


def test_the_cache_folder_follows_xdg(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("LLMCOUNT_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert discovered.cache_folder() == tmp_path / "llmcount" / "records"


def test_without_torch_the_flag_says_what_to_install(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "some_new_arch"}))
    code = (
        "import sys; sys.modules['torch'] = None; from llmcount.cli import main; "
        f"sys.argv = ['llmcount', 'count', {str(path)!r}, '--discover']; main()"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().endswith("--discover needs torch and transformers (pip install 'llmcount[test]')")


def test_the_api_discovers_too(cache, tmp_path) -> None:
    import llmcount

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    with pytest.raises(llmcount.LlmcountError, match="count --discover"):
        llmcount.load(path)
    assert llmcount.load(path, discover=True).counts.total == oracle.meta_total(CONFIG)


def test_a_cache_that_cannot_be_written_is_said_and_the_count_still_made(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("LLMCOUNT_CACHE", str(blocker))  # the cache folder would be below a regular file
    bundled = records.family
    monkeypatch.setattr(records, "family", lambda model_type: None if model_type == HIDDEN else bundled(model_type))
    compiled = counting.compiled  # and its compiled snapshot, which count reads without the records
    monkeypatch.setattr(counting, "compiled", lambda model_type: None if model_type == HIDDEN else compiled(model_type))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    result = count(str(path), "--discover", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == oracle.meta_total(CONFIG)
    assert "not cached:" in result.stderr
