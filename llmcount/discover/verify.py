"""Count a written draft record with llmcount's generic reader and compare it with transformers on the meta device."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any

from ..errors import LlmcountError
from ..formulas import records
from ..formulas.config import read_config
from ..formulas.expressions import RecordError
from . import probe
from .core import Discoverer

RANDOM_CONFIGS = 5


@dataclass(frozen=True)
class Check:
    name: str
    expected: int | None  # transformers' count
    got: int | None  # llmcount's count with the draft record
    error: str = ""

    @property
    def exact(self) -> bool:
        return self.expected is not None and self.expected == self.got

    def line(self) -> str:
        if self.error:
            return f"{self.name}: {self.error}"
        verdict = "exact" if self.exact else f"MISMATCH (llmcount - transformers = {self.got - self.expected:+,})"
        return f"{self.name}: {verdict}: llmcount {self.got:,}, transformers {self.expected:,}"


def random_config(discoverer: Discoverer, rng: random.Random) -> dict[str, Any]:
    """Small random sizes for the record's keys, a few layers, switches drawn, some keys left to their defaults."""
    sizes = list(discoverer.symbols)
    config: dict[str, Any] = {"model_type": discoverer.model_type, discoverer.layer_key: rng.randint(1, LAYERS_MAX)}
    config.update(dict.fromkeys(discoverer.tokens, 0))
    for key, value in discoverer.draw(sizes).items():
        if rng.random() < 0.8:  # else absent: the record's default must be transformers' default
            config[key] = value
    for key in sorted(discoverer.switches_read):
        config[key] = rng.random() < 0.5
    for key, values in sorted(discoverer.layer_values.items()):  # which layers carry which tensors
        if rng.random() < 0.5:
            continue
        if isinstance(values[0], int):
            config[key] = rng.randint(1, config[discoverer.layer_key])
        elif all(isinstance(x, int) for v in values for x in v):
            config[key] = [i for i in range(config[discoverer.layer_key]) if rng.random() < 0.5]
    return config


LAYERS_MAX = 3


def verify(discoverer: Discoverer, path: str | os.PathLike[str], seed: int = 1) -> list[Check]:
    """The class defaults and random configs, counted by llmcount with the record at ``path`` and by transformers."""
    try:
        family = records.load(path)
    except (OSError, RecordError) as error:
        return [Check("record", None, None, f"cannot load the draft: {error}")]
    rng = random.Random(seed)
    configs = [("class defaults", {**probe.class_defaults(discoverer.model_type), "model_type": discoverer.model_type})]
    while len(configs) < 1 + RANDOM_CONFIGS:
        config = random_config(discoverer, rng)
        try:
            probe.build(discoverer.model_type, _kwargs(config))
        except probe.Refused:
            continue
        configs.append((f"random config {len(configs)}", config))
    checks = []
    for name, config in configs:
        expected = probe.build(discoverer.model_type, _kwargs(config)).total
        try:
            got = read_config(config, name, family=family).counts.total
        except (LlmcountError, ValueError) as error:
            checks.append(Check(name, expected, None, f"llmcount refuses it: {error}"))
            continue
        checks.append(Check(name, expected, got))
    return checks


def _kwargs(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k != "model_type"}
