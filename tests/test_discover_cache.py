"""The cache of discovered records: a cached record is trusted only when it is whole (its digest line), of the
model_type asked for and of the installed transformers; anything else is ignored with one line on stderr and
discovered again. A failed discovery is cached with its reason and refused at once the next time, until
``--rediscover``. (Discovery itself is replaced here by a stand-in: these tests are about the cache.)"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from llmcount import discovered
from llmcount.cli import app
from llmcount.formulas import records

pytest.importorskip("transformers", reason="--discover needs torch and transformers")

HIDDEN = "llama"
CONFIG = {"model_type": HIDDEN, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2}
CONFIG |= {"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "tie_word_embeddings": False}
# by hand: embeddings and head 2*100*64; per layer q,o 64*64 each, k,v 64*32 each, MLP 3*64*96, two norms of 64
EXPECTED = 2 * 100 * 64 + 2 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 96 + 2 * 64) + 64


def version() -> str:
    import importlib.metadata

    return importlib.metadata.version("transformers")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder, llama's bundled record hidden, and discovery replaced by one that counts its calls
    and returns the bundled record (or fails, when ``calls['fail']`` is set)."""
    monkeypatch.setenv("LLMCOUNT_CACHE", str(tmp_path / "cache"))
    bundled = records.family
    monkeypatch.setattr(records, "family", lambda model_type: None if model_type == HIDDEN else bundled(model_type))
    calls = {"n": 0, "fail": ""}

    def stand_in(model_type, version, path, source, say):
        calls["n"] += 1
        if calls["fail"]:
            reason = calls["fail"]
            kept = discovered._keep_failure(discovered.failed_path(model_type, version), model_type, version, reason)
            raise discovered.LlmcountError(f"{source}: cannot discover a record for {model_type!r}: {reason} ({kept})")
        say(f"note: discovered {model_type}")
        return bundled(model_type)

    monkeypatch.setattr(discovered, "_discover", stand_in)
    folder = tmp_path / "cache" / "records"
    return folder, calls


def run(tmp_path, *options: str):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    return CliRunner().invoke(app, ["count", str(path), "--json", *options])


def whole_record(model_type: str = HIDDEN, checked: str | None = None) -> str:
    text = records.resources.files(records.__package__).joinpath("families").joinpath("llama.toml").read_text("utf-8")
    text = text.replace('model_type = "llama"', f'model_type = "{model_type}"', 1)
    if checked is not None:
        text = text.replace("[checked]", f'[checked]\ntransformers = "{checked}"', 1)
    return text


def test_a_whole_cached_record_is_used_without_discovering(cache, tmp_path) -> None:
    folder, calls = cache
    folder.mkdir(parents=True)
    (folder / f"{HIDDEN}@{version()}.toml").write_text(discovered.sealed(whole_record()))
    result = run(tmp_path, "--discover")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == EXPECTED and calls["n"] == 0
    assert "cached:" in result.stderr and "ignoring" not in result.stderr


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (lambda: discovered.sealed(whole_record())[:-200], "digest"),  # cut short: the digest line is gone
        (lambda: whole_record(), "digest"),  # a record, but not one the cache wrote
        (lambda: discovered.sealed(whole_record()).replace("[[terms]]", "[[terms]]\n", 1), "digest"),  # edited
        (lambda: discovered.sealed(whole_record("mistral")), "model_type 'mistral', not 'llama'"),
        (lambda: discovered.sealed(whole_record(checked="5.1.0")), "transformers 5.1.0"),
        (lambda: "\xff\xfe", "utf-8"),
    ],
    ids=["truncated", "unsealed", "edited", "other-model-type", "other-transformers", "not-text"],
)
def test_a_cached_record_that_cannot_be_trusted_is_ignored_with_one_line(cache, tmp_path, text, reason) -> None:
    folder, calls = cache
    folder.mkdir(parents=True)
    path = folder / f"{HIDDEN}@{version()}.toml"
    path.write_text(text(), encoding="latin-1" if reason == "utf-8" else "utf-8")
    result = run(tmp_path, "--discover")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == EXPECTED and calls["n"] == 1
    ignored = [line for line in result.stderr.splitlines() if "ignoring the cached record" in line]
    assert len(ignored) == 1 and str(path) in ignored[0] and reason in ignored[0].lower().replace("utf8", "utf-8")


def test_a_cached_folder_in_place_of_a_record_is_ignored(cache, tmp_path) -> None:
    folder, calls = cache
    (folder / f"{HIDDEN}@{version()}.toml").mkdir(parents=True)
    result = run(tmp_path, "--discover")
    assert result.exit_code == 0, result.output
    assert calls["n"] == 1 and "ignoring the cached record" in result.stderr


def test_a_failure_is_cached_with_its_reason_and_rediscover_tries_again(cache, tmp_path) -> None:
    folder, calls = cache
    calls["fail"] = "transformers refuses a build with 3 layers"
    first = run(tmp_path, "--discover")
    assert first.exit_code == 1 and first.stdout == "" and calls["n"] == 1
    assert "refuses a build with 3 layers" in first.stderr and "--rediscover" in first.stderr
    assert (folder / f"{HIDDEN}@{version()}.failed").exists()

    again = run(tmp_path, "--discover")  # said at once from the cache, no second discovery
    assert again.exit_code == 1 and again.stdout == "" and calls["n"] == 1
    assert len(again.stderr.strip().splitlines()) == 1
    assert "failed before: transformers refuses a build with 3 layers" in again.stderr
    assert "--rediscover tries again" in again.stderr

    calls["fail"] = ""
    retried = run(tmp_path, "--rediscover")
    assert retried.exit_code == 0, retried.output
    assert calls["n"] == 2 and json.loads(retried.stdout)["total"] == EXPECTED


def test_a_corrupt_failure_file_is_ignored_with_one_line(cache, tmp_path) -> None:
    folder, calls = cache
    folder.mkdir(parents=True)
    failed = folder / f"{HIDDEN}@{version()}.failed"
    failed.write_text("mistral@1.0: some other reason\n")
    result = run(tmp_path, "--discover")
    assert result.exit_code == 0, result.output
    assert calls["n"] == 1 and "ignoring the cached failure" in result.stderr and str(failed) in result.stderr
