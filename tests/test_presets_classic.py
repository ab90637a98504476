"""Published sizes of the bundled presets of the classic families (GPT-NeoX), with their sources."""

from __future__ import annotations

from llmcount.sources import load


def test_pythia_160m() -> None:
    # Pythia model table (EleutherAI/pythia README; Biderman et al. 2023): 162,322,944 parameters in all,
    # 85,056,000 without the embedding and the untied head
    model = load("pythia-160m")
    assert model.counts.total == 162_322_944
    assert model.counts.total - 2 * 50304 * 768 == 85_056_000


def test_gpt_neox_20b() -> None:
    # EleutherAI/gpt-neox-20b model card, hyperparameter table: 20,554,567,680 parameters (20.55B)
    assert load("gpt-neox-20b").counts.total == 20_554_567_680


def test_opt_125m() -> None:
    # facebook/opt-125m model card and the OPT paper (Zhang et al. 2022): 125M parameters, no exact figure
    assert abs(load("opt-125m").counts.total - 125e6) < 0.5e6
