"""Several models side by side: their sizes, the parameters of each group and component, and shares."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..formulas.config import Model
from ..formulas.derivation import Counts
from ..formulas.symbols import GLOSSARY

GROUPS = ("embedding", "attention", "moe", "mlp", "norms", "head")  # reader's order


def group_of(path: str) -> str:
    return path.split("/", 1)[0]


@dataclass(frozen=True)
class Column:
    """One model: its counts, and its parameters by group and by component path."""

    model: Model
    counts: Counts
    groups: dict[str, int]
    components: dict[str, int]

    @property
    def embedding_share(self) -> float:
        return self.counts.embedding / self.counts.total

    @property
    def group_shares(self) -> dict[str, float]:
        return {g: n / self.counts.total for g, n in self.groups.items()}

    @property
    def component_shares(self) -> dict[str, float]:
        return {p: n / self.counts.total for p, n in self.components.items()}

    def data(self) -> dict:
        c = self.counts
        return {
            "model": self.model.name,
            "family": self.model.architecture.name,
            "source": self.model.source,
            "values": c.values,
            "total": c.total,
            "activated": c.activated,
            "embedding": c.embedding,
            "non_embedding": c.non_embedding,
            "embedding_share": self.embedding_share,
            "groups": {g: {"count": n, "share": self.group_shares[g]} for g, n in self.groups.items()},
            "components": self.components,
        }


@dataclass(frozen=True)
class Comparison:
    columns: tuple[Column, ...]
    symbols: tuple[str, ...]  # the union of the models' symbols, in glossary order
    groups: tuple[str, ...]  # the union of their groups, in reader's order
    components: tuple[str, ...]  # the union of their component paths, in reader's order

    def data(self) -> dict:
        return {"models": [column.data() for column in self.columns]}


def compare(models: Iterable[Model]) -> Comparison:
    """Models side by side; rows are the union of what any of them has."""
    columns = []
    for model in models:
        counts = model.counts
        groups: dict[str, int] = {}
        for c in counts.components:
            groups[group_of(c.path)] = groups.get(group_of(c.path), 0) + c.count
        components = {c.path: c.count for c in counts.components}
        columns.append(Column(model, counts, groups, components))
    names = {s.name for column in columns for s in column.model.values}
    paths: list[str] = []
    for column in columns:
        paths += [p for p in column.components if p not in paths]
    return Comparison(
        columns=tuple(columns),
        symbols=tuple(e.symbol.name for e in GLOSSARY if e.symbol.name in names),
        groups=tuple(g for g in GROUPS if any(g in column.groups for column in columns)),
        components=tuple(sorted(paths, key=lambda p: GROUPS.index(group_of(p)))),
    )
