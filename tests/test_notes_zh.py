"""The Chinese write-ups print the records' notes on each weight in Chinese (renderers/notes_zh.toml): every note of
every bundled record (family, remote-code and tower records) has a row, and no preset's Chinese post prints an
English note."""

from __future__ import annotations

import re
from functools import cache

import pytest

from llmcount.formulas import records
from llmcount.presets import presets
from llmcount.renderers import notes_zh
from llmcount.renderers.filters import escape
from llmcount.renderers.writeup import build, post_sections, read_config
from llmcount.sources import resolve

CJK = re.compile(r"[\u4e00-\u9fff]")


@cache
def model(name: str):
    spec, source, config = resolve(name)
    return read_config(config, source, spec)


def test_every_note_of_every_record_has_chinese():
    covered = [*records.families(), *(records.family(name) for name in records.remote_names())]
    covered += [records.tower(name) for name in records.tower_names()]
    for name in presets():
        language = model(name)
        covered.append(language.architecture)
        covered += [part.model.architecture for part in language.parts]
    table = notes_zh()
    missing = {
        (family.name, choice.term.path): choice.term.note
        for family in covered
        for choice in family.choices
        if choice.term.note and choice.term.note not in table
    }
    assert not missing, f"notes_zh.toml has no row for {missing}"
    assert all(CJK.search(text) for text in table.values())


@pytest.mark.parametrize("name", sorted(presets()))
def test_no_preset_post_prints_an_english_note(name):
    text = build(name, "markdown", "zh").text
    assert "英文注释" not in text
    notes = {row.note for section in post_sections(model(name))[0] for row in section.rows if row.note}
    for note in notes:
        assert f"：{escape(note, 'markdown')}\n" not in text, note
    items = re.findall(r"^- `[^`]+`：(.*)$", text, re.M)  # the weights of a section told from the notes
    assert all(CJK.search(item) for item in items), [item for item in items if not CJK.search(item)]


BART = {  # a small BART decoder: its record counts the decoder and says the encoder is left out
    "model_type": "bart",
    "vocab_size": 1000,
    "d_model": 64,
    "decoder_layers": 2,
    "encoder_layers": 2,
    "decoder_attention_heads": 4,
    "encoder_attention_heads": 4,
    "decoder_ffn_dim": 128,
    "encoder_ffn_dim": 128,
    "max_position_embeddings": 128,
}


def test_the_records_other_prose_is_chinese(tmp_path):
    import json

    from llmcount.renderers import texts_zh

    path = tmp_path / "bart.json"
    path.write_text(json.dumps(BART))
    family = records.family("bart")
    texts = texts_zh()
    for english in (family.counted, family.not_counted, family.attention.not_run):
        assert english in texts and CJK.search(texts[english]), english
    text = build(str(path), "markdown", "zh", sections="params,flops").text
    assert escape(texts[family.counted], "markdown") in text
    assert escape(texts[family.not_counted], "markdown") in text
    assert escape(texts[family.attention.not_run], "markdown") in text
    assert "英文说明" not in text and "builds it" not in text and "is not run" not in text
