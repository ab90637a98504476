"""SAM's ``global_attn_indexes`` (the GOT-OCR2 vision tower) with no entries: transformers 5.24.0 builds every layer
windowed (GotOcr2VisionEncoder: ``window_size if i not in config.global_attn_indexes else 0``), and llmcount counts
the model it builds, its whole model and its vision tower equal to the meta-device model's."""

from __future__ import annotations

import json

import pytest

from llmcount.formulas.config import read_config

pytest.importorskip("torch")

CONFIG = {"model_type": "got_ocr2", "vision_config": {"global_attn_indexes": [], "num_hidden_layers": 4}}


def test_no_global_layer_counts_as_transformers_builds_it() -> None:
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    config = AutoConfig.for_model("got_ocr2", vision_config=CONFIG["vision_config"])
    with torch.device("meta"):
        built = AutoModelForImageTextToText.from_config(config)
    whole = sum(p.numel() for p in built.parameters())
    tower = sum(p.numel() for p in built.model.vision_tower.parameters())
    model = read_config(CONFIG, "test config")
    parts = {part.role: part.model.counts.total for part in model.parts}
    assert (model.whole_total, parts["vision tower"]) == (whole, tower), "transformers 5.24.0"


def test_the_cli_counts_it_and_null_is_refused_by_name(tmp_path) -> None:
    from refusal import assert_refused, run

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    result = run("count", str(path))
    assert result.exit_code == 0 and "N_gattn=0" in result.stdout, result.output
    path.write_text(json.dumps({**CONFIG, "vision_config": {"global_attn_indexes": None}}))
    assert_refused(run("count", str(path)), "global_attn_indexes")
