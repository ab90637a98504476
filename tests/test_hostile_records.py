"""Hostile inputs against the features of composite configs, nested keys, float expressions, cached discovered
records, writeups and state-layer costs: each is a result or one clean line, never a traceback or a hang."""

from __future__ import annotations

import pytest
from refusal import assert_refused, run

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import read_config

LFM2 = {
    "model_type": "lfm2",
    "hidden_size": 64,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
}


@pytest.mark.parametrize("family", records.families(), ids=lambda f: f.name)
def test_every_record_text_a_message_quotes_is_one_line(family: records.Family) -> None:
    texts = [t for spec in family.symbols for t in (spec.adjust_text, spec.default_text)]
    texts += [t for rule in (*family.checks, *family.refuse) for t in (rule.text, rule.message)]
    assert all("\n" not in text for text in texts)


@pytest.mark.parametrize(
    "bad",
    [
        {"intermediate_size": 1},
        {"block_ff_dim": 0},
        {"block_ff_dim": -5},
        {"block_ffn_dim_multiplier": -5},
        {"block_ffn_dim_multiplier": 1e-300},
    ],
    ids=str,
)
def test_an_adjusted_width_refused_quotes_its_multiline_rule_on_one_line(bad: dict, tmp_path) -> None:
    with pytest.raises(LlmcountError) as caught:
        read_config({**LFM2, **bad}, "c.json")
    assert "\n" not in str(caught.value) and "lfm2" in str(caught.value)
    path = tmp_path / "config.json"
    path.write_text(__import__("json").dumps({**LFM2, **bad}))
    result = run("count", str(path))
    assert_refused(result, "config.json", "lfm2")
    assert "\\n" not in result.stderr


# --- cached discovered records: read like a file a user hands us (bounded, regular, UTF-8, shallow, bounded degree);
# one that cannot be trusted is ignored with one line and discovered again (here a stand-in that refuses)

HIDDEN = "llama"  # a family the tests hide, so that count --discover reads the cache (as tests/test_discover_cli.py)
LLAMA = {
    "model_type": HIDDEN,
    "hidden_size": 96,
    "intermediate_size": 160,
    "num_hidden_layers": 3,
    "num_attention_heads": 6,
    "num_key_value_heads": 2,
    "vocab_size": 250,
}


@pytest.fixture
def cached(tmp_path, monkeypatch):
    """The path of the cached record of HIDDEN (not written yet) and a config of that type."""
    pytest.importorskip("transformers", reason="--discover needs torch and transformers")
    import importlib.metadata

    from llmcount import discovered

    monkeypatch.setenv("LLMCOUNT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(discovered, "available", lambda: True)

    def again(model_type, version, path, source, say):
        raise discovered.LlmcountError(f"{source}: stand-in: {model_type} discovered again")

    monkeypatch.setattr(discovered, "_discover", again)
    bundled = records.family
    monkeypatch.setattr(records, "family", lambda model_type: None if model_type == HIDDEN else bundled(model_type))
    path = discovered.cached_path(HIDDEN, importlib.metadata.version("transformers"))
    path.parent.mkdir(parents=True)
    config = tmp_path / "config.json"
    config.write_text(__import__("json").dumps(LLAMA))
    return path, str(config)


GOOD = (records.resources.files(records.__package__) / "families" / "llama.toml").read_text()
BLOWN = "*".join(["(d+h+N+V+h_d+d_ff+h_kv)**8"] * 12)


def _write(path, kind: str) -> None:
    from llmcount.discovered import sealed  # a record the cache wrote ends with its digest: these pass that check

    if kind == "binary":
        path.write_bytes(b"\xff\xfe\x00 not text")
    elif kind == "deep array":
        path.write_text("x = " + "[" * 5000 + "]" * 5000)
    elif kind == "deep table":
        path.write_text("x = " + "{a=" * 3000 + "1" + "}" * 3000)
    elif kind == "huge":
        path.write_text(GOOD + "\n#" + "x" * 2_000_000)
    elif kind == "huge int":
        path.write_text(sealed(GOOD + "\nzz = " + "9" * 5000 + "\n"))
    elif kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        __import__("os").mkfifo(path)
    elif kind == "link to a device":
        path.symlink_to("/dev/zero")
    elif kind == "dangling link":
        path.symlink_to(path.parent / "gone")
    elif kind == "another model_type":
        path.write_text(sealed(GOOD.replace('model_type = "llama"', 'model_type = "mistral"')))
    elif kind == "degree 96":
        path.write_text(sealed(GOOD.replace('expr = "V*d"', f'expr = "{BLOWN}"', 1)))
    elif kind == "a 300-digit coefficient":
        path.write_text(sealed(GOOD.replace('expr = "V*d"', f'expr = "{10**300}*V*d"', 1)))


@pytest.mark.parametrize(
    "kind",
    [
        "binary",
        "deep array",
        "deep table",
        "huge",
        "huge int",
        "folder",
        "fifo",
        "link to a device",
        "dangling link",
        "another model_type",
        "degree 96",
        "a 300-digit coefficient",
    ],
)
def test_a_hostile_cached_record_is_ignored_by_name_and_discovered_again(cached, kind: str) -> None:
    path, config = cached
    _write(path, kind)
    result = run("count", config, "--discover")
    assert result.exit_code == 1 and result.stdout == "", result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2, result.stderr
    assert "ignoring the cached record" in lines[0] and str(path) in lines[0]
    assert "stand-in: llama discovered again" in lines[1]


def test_a_good_cached_record_is_still_read(cached) -> None:
    from llmcount.discovered import sealed

    path, config = cached
    path.write_text(sealed(GOOD))
    result = run("count", config, "--discover")
    assert result.exit_code == 0 and "llama" in result.stdout


# --- outputs: a FIFO nobody reads is refused at once (every command that writes -o or --chart goes through save)


@pytest.mark.parametrize(
    "args",
    [
        ["writeup", "qwen3-0.6b"],
        ["writeup", "qwen3-0.6b", "--training"],
        ["writeup", "qwen3", "--family-sizes", "qwen3-0.6b,qwen3-8b"],
    ],
    ids=" ".join,
)
def test_output_into_a_fifo_no_process_reads_is_refused_not_blocked(tmp_path, args: list[str]) -> None:
    import os
    import time

    fifo = tmp_path / "post.md"
    os.mkfifo(fifo)
    start = time.monotonic()
    result = run(*args, "-o", str(fifo))
    assert_refused(result, str(fifo), "no process reads")
    assert time.monotonic() - start < 10


@pytest.mark.parametrize(
    "option",
    [
        ["--seq", "0"],
        ["--seq", "32k"],
        ["--batch", "8"],
        ["--dp", "8"],
        ["--zero", "3"],
        ["--tp", "2"],
        ["--optimizer", "sgd"],
        ["--recompute", "full"],
        ["--sequence-parallel"],
    ],
    ids=" ".join,
)
def test_an_option_of_one_models_post_is_refused_with_family_sizes_not_ignored(option: list[str]) -> None:
    result = run("writeup", "qwen3", "--family-sizes", "qwen3-0.6b,qwen3-8b", *option)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip() == f"llmcount: error: {option[0]} is for one model's post, not for --family-sizes"


# --- the Python API: an argument of the wrong type is a LlmcountError naming it, never a TypeError


@pytest.mark.parametrize(
    "options",
    [
        {"optimizer": ["adamw"]},
        {"attention": 1},
        {"recompute": None},
        {"zero": True},
        {"lora": 4, "lora_targets": None},
        {"lora": 4, "lora_targets": 3},
    ],
    ids=str,
)
def test_the_training_api_refuses_an_argument_of_the_wrong_type_by_name(options: dict) -> None:
    import llmcount

    with pytest.raises(LlmcountError) as caught:
        llmcount.training("qwen3-0.6b", **options)
    assert next(iter(options)) in str(caught.value) or "lora_targets" in str(caught.value)
