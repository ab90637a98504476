"""The vision tower and projector in ``memory``: their weights in the weights line of inference memory (the whole
model, each part named), and in training their model states, or with ``--freeze-vision`` their weights only. Expected
bytes by hand from the parts' parameters (tests/test_towers.py derives them by hand and against transformers)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from llmcount.cli import app

# gemma-3-27b-it: the language model 27,009,346,304 parameters, the SigLIP tower 416,866,032 and the projector
# 6,194,304 (tests/test_towers.py::test_gemma3_27b_is_the_checkpoint); the whole 27,432,406,640, the checkpoint's
# metadata.total_size 54,864,813,280 bytes in bf16.
LANGUAGE, TOWER, PROJECTOR = 27_009_346_304, 416_866_032, 6_194_304
WHOLE = LANGUAGE + TOWER + PROJECTOR


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def data(*args: str) -> dict:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_inference_weights_are_the_whole_model() -> None:
    got = data("memory", "gemma-3-27b-it")
    assert WHOLE == 27_432_406_640
    assert got["weights_bytes"] == 2 * WHOLE == 54_864_813_280
    assert got["formulas"]["weights"] == "2*P + 2*P_projector + 2*P_vision"
    text = run("memory", "gemma-3-27b-it").output
    assert "54,864,813,280" in text and "the vision tower (SigLIP vision tower, P_vision = 416,866,032)" in text
    assert "the projector (Gemma 3 multimodal projector, P_projector = 6,194,304)" in " ".join(text.split())


def test_the_kv_cache_is_the_language_models_and_the_overhead_grows_with_the_parts() -> None:
    plain = data("memory", "gemma-3-27b-it")
    kv = plain["kv_cache_bytes"]
    assert plain["total_bytes"] == 2 * WHOLE + kv
    stated = data("memory", "gemma-3-27b-it", "--overhead", "10")
    assert stated["total_bytes"] == 2 * WHOLE + kv + -(-(2 * WHOLE + kv) * 10 // 100)


def test_int8_weights_are_one_byte_a_parameter() -> None:
    assert data("memory", "gemma-3-27b-it", "--dtype", "int8")["weights_bytes"] == WHOLE


def test_training_trains_the_tower_by_default() -> None:
    """Mixed-precision AdamW: 2 + 2 + 4 + 4 + 4 = 16 bytes for every parameter of the whole model."""
    got = data("memory", "gemma-3-27b-it", "--training", "--seq", "256")
    lines = {line["name"]: line["bytes"] for line in got["lines"]}
    assert lines == {
        "weights": 2 * WHOLE,
        "gradients": 2 * WHOLE,
        "master_weights": 4 * WHOLE,
        "adam_m": 4 * WHOLE,
        "adam_v": 4 * WHOLE,
    }
    assert got["parameters"] == WHOLE
    assert any("trained with the language model" in note for note in got["notes"])


def test_freeze_vision_keeps_the_towers_weights_only() -> None:
    got = data("memory", "gemma-3-27b-it", "--training", "--seq", "256", "--freeze-vision")
    lines = {line["name"]: line["bytes"] for line in got["lines"]}
    assert lines == {
        "weights": 2 * WHOLE,
        "gradients": 2 * LANGUAGE,
        "master_weights": 4 * LANGUAGE,
        "adam_m": 4 * LANGUAGE,
        "adam_v": 4 * LANGUAGE,
    }
    frozen = [note for note in got["notes"] if note.startswith("--freeze-vision")]
    assert frozen and "SigLIP vision tower" in frozen[0] and f"{TOWER + PROJECTOR:,} parameters" in frozen[0]
    assert any("the parts' own are not counted" in note for note in got["notes"])
    text = run("memory", "gemma-3-27b-it", "--training", "--seq", "256", "--freeze-vision").output
    assert "frozen (423,060,336 parameters)" in " ".join(text.split())


def test_freeze_vision_with_zero_shards_the_language_models_states() -> None:
    got = data("memory", "gemma-3-27b-it", "--training", "--seq", "256", "--freeze-vision", "--zero", "1", "--dp", "4")
    lines = {line["name"]: line["bytes"] for line in got["lines"]}
    assert lines["weights"] == 2 * WHOLE and lines["gradients"] == 2 * LANGUAGE
    assert lines["adam_m"] == -(-4 * LANGUAGE // 4)


def test_freeze_vision_is_refused_where_it_means_nothing() -> None:
    usage = run("memory", "gemma-3-27b-it", "--freeze-vision")
    assert usage.exit_code == 2 and "--freeze-vision needs --training" in usage.stderr
    for args, message in [
        (("qwen3-8b",), "--freeze-vision: qwen3-8b has no vision tower counted"),
        (("gemma-3-27b-it", "--tp", "2"), "how the parts are split or placed is not modelled"),
    ]:
        result = run("memory", *args, "--training", "--freeze-vision")
        assert result.exit_code == 1 and result.stdout == ""
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_estimate_is_titled_as_the_whole_model_it_counts() -> None:
    """The weights line holds the tower and the projector: the title names the whole model (the composite's title),
    not its language model, in inference and in training."""
    for args in (("memory", "gemma-3-27b-it"), ("memory", "gemma-3-27b-it", "--training", "--seq", "256")):
        first = run(*args).output.split("\n")[0]
        assert first.startswith("gemma-3-27b-it (Gemma 3 (multimodal); preset gemma-3-27b-it):"), first
        assert "(language model)" not in first
