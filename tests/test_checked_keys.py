"""Every record lists the keys of its config class it was checked against ([checked], filled by
``python -m llmcount.discover.checked_keys``). A config carrying a key the record has not seen is still counted, with
one line on stderr naming the key and the transformers version; keys every config may carry never warn. A newer
installed transformers than the records' version is said in one line when --discover builds with it."""

from __future__ import annotations

import json
import sys

import pytest
from refusal import run

from llmcount import sources
from llmcount.formulas import records
from llmcount.formulas.config import read_config
from llmcount.formulas.records import RecordError, parse_record

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

SMALL_LLAMA = {
    "model_type": "llama",
    **{"vocab_size": 64, "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2},
    **{"num_attention_heads": 4, "num_key_value_heads": 2},
}


def _count(tmp_path, config: dict, *options: str):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return run("count", str(path), "--json", *options)


def test_a_key_the_record_has_not_seen_is_counted_with_one_line(tmp_path) -> None:
    """A key LlamaConfig does not have: transformers sets it as an attribute and builds the same model, so the count
    is right; the line says the record did not see it, and which transformers it was checked against."""
    config = {**SMALL_LLAMA, "q_lora_rank": 8}
    result = _count(tmp_path, config)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == oracle.meta_total(config) == oracle.meta_total(SMALL_LLAMA)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "key q_lora_rank is new to the llama record" in lines[0]
    assert f"checked against transformers {records.CHECKED_AGAINST}" in lines[0]


def test_several_unseen_keys_make_one_line_and_hostile_names_stay_on_it(tmp_path) -> None:
    config = {**SMALL_LLAMA, "b_new": 1, "a\nnew": 2, "x" * 300: 3, **{f"k{i}": i for i in range(9)}}
    result = _count(tmp_path, config)
    assert result.exit_code == 0, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("note: ") and r"a\nnew" in lines[0] and "more are new to the llama record" in lines[0]
    assert len(lines[0]) < 400


@pytest.mark.parametrize(
    "keys",
    [
        {"architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16", "dtype": "bfloat16"},
        {"_name_or_path": "x", "transformers_version": "4.44.0", "auto_map": {}, "quantization_config": {}},
        {"rope_theta": 10000.0, "rope_scaling": None, "bos_token_id": 1, "eos_token_id": 2, "temperature": 0.6},
        {"use_cache": True, "tokenizer_class": "x", "output_attentions": False, "id2label": {"0": "a"}},
    ],
)
def test_keys_every_config_may_carry_never_warn(tmp_path, keys: dict) -> None:
    result = _count(tmp_path, {**SMALL_LLAMA, **keys})
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


def test_the_class_defaults_and_the_presets_warn_for_no_key() -> None:
    """What to_dict writes for every record's config class, and every bundled (published) config, is seen."""
    from llmcount.presets import presets

    for name in records.names():
        config = oracle.class_defaults(name)
        assert records.family(name).unseen(config) == (), name
    for name, preset in presets().items():
        config = preset.config()
        assert sources.unseen_note(read_config(config, name), config) == "", name


def test_a_composite_config_warns_for_its_text_config() -> None:
    config = {"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "brand_new_rank": 4}}
    note = sources.unseen_note(read_config(config, "c"), config)
    assert "key brand_new_rank is new to the gemma3_text record" in note


def test_every_record_lists_every_key_of_its_config_class() -> None:
    """The drift check: a transformers release that adds a key to a class fails here, naming it, until the record is
    re-checked (tests/test_records.py) and the list refilled (python -m llmcount.discover.checked_keys MODEL_TYPE)."""
    import transformers

    from llmcount.discover.checked_keys import class_keys

    missing = {}
    for name in records.names():
        family = records.family(name)
        assert family.checked_keys is not None, f"{name}: no [checked] keys"
        if family.checked_version == transformers.__version__:
            new = set(class_keys(name)) - family.checked_keys
            if new:
                missing[name] = sorted(new)
    assert not missing, f"keys the records were not checked against ({oracle.VERSIONS}): {missing}"


@pytest.mark.parametrize(
    ("checked", "message"),
    [
        ({"keys": "vocab_size"}, "a list of config key names"),
        ({"keys": ["a", 3]}, "a list of config key names"),
        ({"ignored": [""], "keys": []}, "a list of config key names"),
        ({"transformers": "latest", "keys": []}, "a transformers version"),
        ({"keys": [], "when": "now"}, "unknown fields"),
    ],
)
def test_a_bad_checked_table_is_refused_naming_it(checked: dict, message: str) -> None:
    data = {"model_type": "t", "title": "T", "symbols": {"V": "vocab_size"}, "terms": [{"path": "a/b", "expr": "V"}]}
    with pytest.raises(RecordError, match=rf"\[checked\].*{message}"):
        parse_record({**data, "checked": checked}, "t.toml")


def test_a_record_message_reads_its_own_transformers_version() -> None:
    data = {"model_type": "t", "title": "T", "symbols": {"V": "vocab_size"}, "terms": [{"path": "a/b", "expr": "V"}]}
    data["refuse"] = [["V > 10", "{transformers} cannot build it with {V} rows"]]
    assert (
        parse_record(data, "t").refuse[0].message
        == f"transformers {records.CHECKED_AGAINST} cannot build it with {{V}} rows"
    )
    data["checked"] = {"transformers": "5.30.0", "keys": []}
    assert parse_record(data, "t").refuse[0].message.startswith("transformers 5.30.0 cannot")


def test_a_newer_transformers_is_said_in_one_line() -> None:
    assert records.newer_transformers(records.CHECKED_AGAINST) == ""
    assert records.newer_transformers("5.9.0") == ""  # older: 9 < 24, compared as numbers
    line = records.newer_transformers("5.100.0.dev0")
    assert "\n" not in line and "transformers 5.100.0.dev0 is installed" in line and records.CHECKED_AGAINST in line


def test_discover_with_a_newer_transformers_says_so_once(monkeypatch, capsys) -> None:
    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "version", lambda name: "5.99.0")
    sources._newer_transformers.cache_clear()
    try:
        sources.load("gpt2", discover=True)
        sources.load("gpt2", discover=True)
        sources.load("gpt2")
    finally:
        sources._newer_transformers.cache_clear()
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "transformers 5.99.0 is installed" in lines[0], lines


def test_the_oracle_names_the_records_version() -> None:
    """The tests run against the version the records name (a newer one warns, in tests/oracle.py)."""
    import transformers

    if records.version_tuple(transformers.__version__) > records.version_tuple(records.CHECKED_AGAINST):
        pytest.skip(f"transformers {transformers.__version__} is newer than the records' {records.CHECKED_AGAINST}")
    assert sys.modules["oracle"].NEWER == ""
