"""Many models at once: count a list of specs, or every config.json below a folder or a Hugging Face
cache. One bad config is one failed :class:`Result`, never the end of the batch."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import LlmcountError

if TYPE_CHECKING:
    from .formulas.hf import Model

ROW_FIELDS = ("model", "family", "source", "total", "activated", "embedding", "non_embedding")


@dataclass(frozen=True)
class Result:
    """One spec of a batch: its model, or the one-line reason it has none."""

    spec: str
    model: Model | None = None
    error: str | None = None


def load_one(spec: str, name: str | None = None) -> Result:
    """The model a spec names (as ``llmcount count`` reads it), named ``name`` if given; a failure is
    a Result whose error names the spec."""
    from .formulas.hf import read_config
    from .sources import resolve

    try:
        found, source, config = resolve(spec)
        model = read_config(config, source, name or found)
        model.counts  # noqa: B018 -- evaluate now, so a config that cannot be counted fails here
    except LlmcountError as exc:
        message = str(exc)
        return Result(spec, error=message if message.startswith(spec) else f"{spec}: {message}")
    return Result(spec, model)


def count_all(specs: Iterable[str]) -> Iterator[Result]:
    """Each spec's Result, in order, lazily."""
    for spec in specs:
        yield load_one(spec)


def row(model: Model) -> dict[str, Any]:
    """A model's line in a batch: ROW_FIELDS, exact integers."""
    from .renderers import summary_data

    return summary_data(model)
