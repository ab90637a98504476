"""Bundled ``config.json`` files of known models: the embedded default, no network needed.

``index.json`` says for each preset which model it is (its Hub id) and its published size; ``card`` holds the
size its model card states (``size``, as written: "32.8B", "20,554,567,680"), with what the write-up needs to
explain a difference: the Hub page's figure when it differs (``hub``), a multi-token-prediction module the
checkpoint holds and transformers does not build (``mtp``: its size as published, or null), a vision encoder the
card counts (``vision``). ``six_nd_parameters`` (a paper's reconstruction) is the N its paper divides by in 6ND, with
its source, where that is not the model's own parameter count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class Preset:
    name: str
    hub_id: str
    model: str
    published: str  # the published size as its source states it, e.g. "32,762,123,264" or "8.2B"
    published_total: int | None  # the exact published count, when one is published
    source: str  # where the published figure comes from
    card: dict[str, Any] | None = None  # the model card's stated size and what explains a difference
    six_nd: dict[str, Any] | None = None  # {"N": the paper's N of 6ND, "source": where it comes from}

    def config(self) -> dict[str, Any]:
        return json.loads(resources.files(__name__).joinpath(f"{self.name}.json").read_text("utf-8"))


@cache
def presets() -> dict[str, Preset]:
    index = json.loads(resources.files(__name__).joinpath("index.json").read_text("utf-8"))
    found = {}
    for name, entry in index.items():
        exact = entry.get("published_total")
        found[name] = Preset(
            name=name,
            hub_id=entry["hub_id"],
            model=entry["model"],
            published=entry.get("published_label") or (f"{exact:,}" if exact else ""),
            published_total=exact,
            source=entry.get("published_source", ""),
            card=entry.get("card"),
            six_nd=entry.get("six_nd_parameters"),
        )
    return found


def find(spec: str) -> Preset | None:
    """The preset named ``spec`` or whose Hub id is ``spec`` (case-insensitive)."""
    return _by_key().get(spec.lower())


@cache
def _by_key() -> dict[str, Preset]:
    """Each preset under its name and its Hub id, lower-cased; the first preset that has a key keeps it."""
    found: dict[str, Preset] = {}
    for preset in presets().values():
        found.setdefault(preset.name, preset)
        if preset.hub_id:  # a paper's reconstruction has no Hub id
            found.setdefault(preset.hub_id.lower(), preset)
    return found
