"""Every tower record read from a sub-config lists the keys of the config classes it is read as ([checked], filled by
``python -m llmcount.discover.checked_keys --towers``): a ``vision_config`` or ``audio_config`` key the tower's record
has not seen is said in one line on stderr, naming the key and the transformers version, as an unseen text key is;
a key it has seen is not."""

from __future__ import annotations

import json

import pytest
from refusal import run

from llmcount import sources
from llmcount.formulas import records
from llmcount.formulas.config import read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

CLIP = {
    "model_type": "clip_vision_model",
    **{"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4},
    **{"patch_size": 14, "image_size": 56},
}


def _defaults(config_class: type) -> dict:
    """A config class's defaults as its to_dict writes them."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return config_class().to_dict()


def _count(tmp_path, config: dict):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return run("count", str(path), "--json")


def test_an_unseen_vision_config_key_is_counted_with_one_line(tmp_path) -> None:
    """A key CLIPVisionConfig does not have: the model builds the same, the count is the same, and one line names the
    key, its sub-config, the tower's record and the transformers version the record was checked against."""
    plain = _count(tmp_path, {"model_type": "llava", "vision_config": CLIP})
    assert plain.exit_code == 0 and plain.stderr == "", plain.output
    result = _count(tmp_path, {"model_type": "llava", "vision_config": {**CLIP, "window_rank": 3}})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == json.loads(plain.stdout)["total"]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "vision_config key window_rank is new to the clip_vision_model record" in lines[0]
    assert f"checked against transformers {records.CHECKED_AGAINST}" in lines[0]


def test_a_seen_vision_config_key_says_nothing(tmp_path) -> None:
    """projection_dim is a key of CLIPVisionConfig that the tower's count does not read: seen, so no line."""
    assert "projection_dim" in records.tower("clip_vision_model").checked_keys
    assert "projection_dim" not in records.tower("clip_vision_model").read_keys()
    result = _count(tmp_path, {"model_type": "llava", "vision_config": {**CLIP, "projection_dim": 512}})
    assert result.exit_code == 0 and result.stderr == "", result.output


def test_an_unseen_audio_config_key_and_text_key_make_a_line_each() -> None:
    config = {"model_type": "qwen2_audio", "audio_config": {"mel_rank": 2}, "text_config": {"brand_new": 1}}
    lines = sources.unseen_note(read_config(config, "c"), config).splitlines()
    assert len(lines) == 2, lines
    assert "key brand_new is new to the qwen2 record" in lines[0]
    assert "audio_config key mel_rank is new to the qwen2_audio_encoder record" in lines[1]


def test_every_tower_record_lists_every_key_of_its_config_classes() -> None:
    """The drift check, as for the families: a transformers release that adds a key to a tower's config class (or
    a composite class that writes a new key into its default sub-config) fails here, naming it, until the list is
    refilled (python -m llmcount.discover.checked_keys --towers); the class defaults then warn for no key."""
    import transformers

    from llmcount.discover.checked_keys import tower_classes, tower_keys

    missing, unlisted = {}, []
    for name in records.tower_names():
        record, keys = records.tower(name), tower_keys(name)
        if not keys:
            assert record.checked_keys is None, f"{name}: [checked] keys, but no config class reads it"
            continue
        if record.checked_keys is None:
            unlisted.append(name)
        elif record.checked_version == transformers.__version__ and set(keys) - record.checked_keys:
            missing[name] = sorted(set(keys) - record.checked_keys)
        for config_class in tower_classes(name):
            assert record.unseen(_defaults(config_class)) == (), (name, config_class)
    assert not unlisted, f"tower records without [checked] keys: {unlisted}"
    assert not missing, f"keys the tower records were not checked against ({oracle.VERSIONS}): {missing}"
