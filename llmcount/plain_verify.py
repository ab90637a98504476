"""``verify`` without sympy: the model a checkpoint is compared with, read by the compiled path
(:mod:`llmcount.counting`), and the command's text and JSON.

:func:`llmcount.checkpoint.compare` and :func:`llmcount.checkpoint.verify_index` read of a model its name, its terms'
paths and counts and whether each is in the layers, its values by name, whether its head is tied, the dtype its
config names and its record's ``[checkpoint]`` table; :class:`Read` gives these from the family's snapshot (each
term's layers and the ``[checkpoint]`` table are written there by :mod:`llmcount.formulas.snapshot` from the same
record). :func:`read` gives None for what the compiled path does not take (a composite config, a record with a
multi-token-prediction module, a snapshot without these fields, any config it leaves to the sympy path), and the
caller reads the config with :func:`llmcount.formulas.config.read_config`, which words every refusal.
``tests/test_plain_verify.py`` holds both paths' results equal on every case the verify tests use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .files import printable
from .plain import grouped, table
from .sizes import gb_gib

if TYPE_CHECKING:
    from .checkpoint import Verification
    from .counting import Counted


@dataclass(frozen=True)
class Term:
    """A term of the selection: its path and its layers (1 for a term once per model, else the layer count's
    text)."""

    path: str
    layers: Any


@dataclass(frozen=True)
class CheckpointNames:
    """A record's ``[checkpoint]`` table (``records.CheckpointNames``)."""

    names: Mapping[str, str] = field(default_factory=dict)
    shared: Mapping[str, str] = field(default_factory=dict)
    buffers: tuple[str, ...] = ()
    float32: tuple[str, ...] = ()


@dataclass(frozen=True)
class Family:
    """What verify reads of a record: its name and its ``[checkpoint]`` table."""

    name: str
    checkpoint: CheckpointNames


@dataclass(frozen=True)
class Read:
    """A config read by the compiled path, with the fields of :class:`llmcount.formulas.config.Model` that verify
    reads (``values`` by name)."""

    name: str
    source: str
    architecture: Family
    values: dict[str, int]
    terms: tuple[Term, ...]
    counts: Counted = field(repr=False)
    dtype: str | None = None
    tied: bool = False
    composite: None = None
    mtp_config: None = None

    def full(self) -> Any:
        """The sympy path's :class:`~llmcount.formulas.config.Model` of the same config (imports sympy)."""
        return self.counts.full()


def read(config: Any, source: str, name: str | None = None) -> Read | None:
    """``config`` read by the compiled path for verify; None where the sympy path should read it."""
    from .counting import Fallback
    from .counting import read as read_counted

    try:
        counted = read_counted(config, source, name)
    except Fallback:
        return None
    compiled = counted.architecture
    table_ = compiled.data.get("checkpoint")
    plan = counted.plan
    if compiled.data["mtp"] or table_ is None or len(plan.layers) != len(plan.terms) or None in plan.layers:
        return None
    paths = [term[0] for term in plan.terms]
    has_head = any(choice.path == "head/lm_head" for choice in compiled.choices)
    dtype = config.get("dtype", config.get("torch_dtype"))
    names = CheckpointNames(
        dict(table_["names"]), dict(table_["shared"]), tuple(table_["buffers"]), tuple(table_["float32"])
    )
    return Read(
        name=counted.name,
        source=counted.source,
        architecture=Family(compiled.name, names),
        values=dict(counted.values),
        terms=tuple(Term(path, layers) for path, layers in zip(paths, plan.layers, strict=True)),
        counts=counted,
        dtype=dtype if isinstance(dtype, str) else None,
        tied=has_head and "head/lm_head" not in paths,
    )


# ---------------------------------------------------------------------------------------------------------------
# the command's output

_MODES = {
    "headers": "safetensors headers",
    "hub": "safetensors headers on the Hub",
    "index": "index total_size",
    "gguf": "GGUF tensor infos",
}


def render_verify(v: Verification) -> str:
    """``verify``'s text: the components side by side, the stored bytes of a quantised checkpoint, the totals, the
    verdict and the note."""
    out = [f"{v.model} against {v.source} ({_MODES[v.mode]})\n"]
    if v.components:
        rows = [["component", "formula", "checkpoint", "", "note"]]
        for c in v.components:
            mark = "differs" if c.differs else ("storage" if c.storage else "=")
            rows.append([c.path, grouped(c.formula), grouped(c.checkpoint), mark, c.note])
        for t in v.unmapped:
            rows.append(
                [printable(t.name), "-", grouped(t.elements), "differs", "no component path for this tensor name"]
            )
        out.append(table(rows, "lrrll") + "\n\n")
    if v.stored:
        rows = [["component", "bytes as stored"]]
        rows += [[path, grouped(size)] for path, size in v.stored]
        rows.append(["total", grouped(sum(size for _, size in v.stored))])
        out.append(table(rows, "lr") + "\n\n")
    in_bytes = v.unit == "bytes"
    out.append(f"formula total     {grouped(v.formula_total)}")
    out.append(f" bytes ({gb_gib(v.formula_total)})\n" if in_bytes else "\n")
    out.append(f"checkpoint total  {grouped(v.checkpoint_total)}")
    out.append(f" bytes ({gb_gib(v.checkpoint_total)})\n" if in_bytes else "\n")
    if v.match:
        out.append(f"match: the checkpoint holds exactly the formula's {v.unit}\n")
    else:
        out.append(f"differs: checkpoint − formula = {grouped(v.difference)}")
        if v.components:
            count = v.differences_count
            out.append(f" in {count} place{'s' if count != 1 else ''}")
        out.append("\n")
    if v.note:
        out.append(f"({v.note})\n")
    return "".join(out)


def verify_data(verification: Verification) -> dict[str, Any]:
    """The JSON form of ``verify``: totals, match, and every difference by component or by unmapped tensor."""
    v = verification
    return {
        "model": v.model,
        "source": v.source,
        "mode": v.mode,
        "unit": v.unit,
        "stored_bytes": {path: size for path, size in v.stored},
        "formula_total": v.formula_total,
        "checkpoint_total": v.checkpoint_total,
        "match": v.match,
        "differences": [
            *(
                {"component": c.path, "formula": c.formula, "checkpoint": c.checkpoint, "note": c.note}
                for c in v.differences
            ),
            *(
                {"tensor": t.name, "formula": 0, "checkpoint": t.elements, "note": "no component path for this name"}
                for t in v.unmapped
            ),
        ],
        "components": [{"component": c.path, "formula": c.formula, "checkpoint": c.checkpoint} for c in v.components],
        "note": v.note,
    }
