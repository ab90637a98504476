"""Stand-ins for the discovery tests that build no model: a Discoverer with only the fields a test sets, and a
probe.Build of hand-written tensors."""

from __future__ import annotations

from llmcount.discover import probe
from llmcount.discover.core import Discoverer


def bare(**fields) -> Discoverer:
    """A Discoverer of model_type "stub" that has run nothing, with ``fields`` set."""
    discoverer = Discoverer.__new__(Discoverer)
    discoverer.model_type = "stub"
    discoverer.notes = []
    discoverer.on = {}
    for name, value in fields.items():
        setattr(discoverer, name, value)
    return discoverer


def stub(tensors, layers: int, **fields) -> probe.Build:
    """What a build of ``layers`` layers holding ``tensors`` reports (``fields``: Build's optional ones)."""
    return probe.Build(tuple(tensors), {}, 0, layers, "StubForCausalLM", "model", "StubConfig", {}, **fields)
