"""Gemma 4's and Gemma 3n's audio subsampling read their channel lists (subsampling_conv_channels,
sscp_conv_channel_size) as transformers builds them: the first two entries give the two convolutions' channels, Gemma
4's input projection (entries[0] // 4) · entries[1] values, Gemma 3n's its last entry times the frequency bins left;
exact against the audio tower transformers builds on the meta device, on the class defaults and drawn lists."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcount.errors import LlmcountError
from llmcount.formulas.config import read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

# the composite, the audio config key of the list, and transformers' audio tower class
TOWERS = {
    "gemma4": ("subsampling_conv_channels", "gemma4", "Gemma4AudioConfig", "Gemma4AudioModel"),
    "gemma3n": ("sscp_conv_channel_size", "gemma3n", "Gemma3nAudioConfig", "Gemma3nAudioEncoder"),
}
SMALL = {
    "gemma4": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "output_proj_dims": 16},
    "gemma3n": {"hidden_size": 16, "conf_num_hidden_layers": 1, "conf_num_attention_heads": 2, "input_feat_size": 24},
}


def built_tower(model_type: str, audio: dict) -> int:
    """The parameters of the audio tower transformers builds from ``audio`` (meta device)."""
    import importlib

    import torch

    _, module, config_class, tower_class = TOWERS[model_type]
    configs = importlib.import_module(f"transformers.models.{module}.configuration_{module}")
    models = importlib.import_module(f"transformers.models.{module}.modeling_{module}")
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        tower = getattr(models, tower_class)(getattr(configs, config_class)(**audio))
    return sum(p.numel() for p in tower.parameters())


def counted_tower(model_type: str, audio: dict) -> int:
    model = read_config({"model_type": model_type, "audio_config": audio}, model_type)
    return next(part.model.counts.total for part in model.parts if part.role == "audio tower")


@pytest.mark.parametrize("model_type", sorted(TOWERS))
def test_class_defaults(model_type: str) -> None:
    assert counted_tower(model_type, {}) == built_tower(model_type, {}), oracle.VERSIONS


@pytest.mark.parametrize("model_type", sorted(TOWERS))
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(channels=st.lists(st.integers(1, 40), min_size=2, max_size=4))
def test_drawn_channel_lists(model_type: str, channels: list[int]) -> None:
    audio = {**SMALL[model_type], TOWERS[model_type][0]: channels}
    assert counted_tower(model_type, audio) == built_tower(model_type, audio), f"{audio} {oracle.VERSIONS}"


@pytest.mark.parametrize("model_type", sorted(TOWERS))
@pytest.mark.parametrize("channels", [[128], [], [128, 0], [128, 32.5], "128"])
def test_lists_transformers_cannot_build_are_refused_naming_the_key(model_type: str, channels) -> None:
    key = TOWERS[model_type][0]
    with pytest.raises(LlmcountError, match=key):
        counted_tower(model_type, {**SMALL[model_type], key: channels})
