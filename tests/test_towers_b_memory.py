"""``llmcount.memory`` and ``llmcount.training`` (the Python API) count a composite's vision tower and projector as
``llmcount memory`` does: their weights in the weights line, and in training their model states, or with
``freeze_vision`` their weights only. Expected bytes by hand from the parts' parameters (gemma-3-27b-it's, derived by
hand and against transformers in tests/test_towers.py)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import llmcount
from llmcount.cli import app

LANGUAGE, TOWER, PROJECTOR = 27_009_346_304, 416_866_032, 6_194_304
WHOLE = LANGUAGE + TOWER + PROJECTOR  # 27,432,406,640: the checkpoint's metadata.total_size / 2 in bf16


def cli(*args: str) -> dict:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_inference_weights_are_the_whole_model() -> None:
    got = llmcount.memory("gemma-3-27b-it", seq=256)
    weights = next(line for line in got.lines if line.name == "weights")
    assert weights.bytes == 2 * WHOLE == 54_864_813_280
    assert got.total_bytes == cli("memory", "gemma-3-27b-it", "--seq", "256")["total_bytes"]
    assert "P_vision" in str(weights.formula) and "P_projector" in str(weights.formula)


def test_overhead_grows_with_the_parts() -> None:
    got = llmcount.memory("gemma-3-27b-it", seq=256, overhead=10)
    want = cli("memory", "gemma-3-27b-it", "--seq", "256", "--overhead", "10")["total_bytes"]
    assert got.total_bytes == want
    base = sum(line.bytes for line in got.lines if line.name != "overhead" and line.in_total)
    assert got.total_bytes == base + -(-base * 10 // 100)


@pytest.mark.parametrize("freeze", [False, True])
def test_training_trains_or_freezes_the_parts(freeze: bool) -> None:
    got = llmcount.training("gemma-3-27b-it", seq=256, freeze_vision=freeze)
    lines = {line.name: line.bytes for line in got.lines}
    trained = LANGUAGE if freeze else WHOLE
    assert lines == {
        "weights": 2 * WHOLE,
        "gradients": 2 * trained,
        "master_weights": 4 * trained,
        "adam_m": 4 * trained,
        "adam_v": 4 * trained,
    }
    flags = ("--freeze-vision",) if freeze else ()
    assert (
        got.model_states_bytes
        == cli("memory", "gemma-3-27b-it", "--training", "--seq", "256", *flags)["model_states_bytes_per_gpu"]
    )
    assert llmcount.memory("gemma-3-27b-it", seq=256, training=True).model_states_bytes == 16 * WHOLE


def test_a_language_model_alone_is_unchanged_and_freeze_vision_refused() -> None:
    assert llmcount.memory("llama-2-7b", seq="4k").total_bytes == 2 * 6_738_415_616 + 4096 * 524_288
    with pytest.raises(llmcount.LlmcountError, match="has no vision tower counted"):
        llmcount.training("qwen3-8b", seq=256, freeze_vision=True)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_posts_memory_section_weighs_the_whole_model(language: str) -> None:
    """The write-up's memory section states the weights of the whole model, as ``memory`` does: P = 27,432,406,640
    parameters, 54,864,813,280 bytes in bf16."""
    result = CliRunner().invoke(
        app, ["writeup", "gemma-3-27b-it", "--format", "markdown", "--sections", "memory", "--lang", language]
    )
    assert result.exit_code == 0, result.output
    assert r"27{,}432{,}406{,}640 \cdot 2 = 54{,}864{,}813{,}280" in result.stdout
    assert "54{,}018{,}692{,}608" not in result.stdout  # the language model's weights alone
