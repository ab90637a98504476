"""One jinja2 Environment for every output format; templates format only through filters.

``render(name, **context)`` fills ``templates/<name>``; ``formula_data`` and ``count_data``
give the JSON forms of a Derivation and of a model's counts.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2

from ..formulas.derivation import ACTIVATED_DEFINITION, EMBEDDING_DEFINITION, Derivation
from ..formulas.hf import Model
from ..formulas.symbols import GLOSSARY
from .filters import FILTERS

FORMATS = ("text", "markdown", "latex")
_SUFFIX = {"text": "txt", "markdown": "md", "latex": "tex"}


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("llmcount.renderers", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        extensions=["jinja2.ext.do"],
    )
    env.filters.update(FILTERS)
    env.globals.update(ACTIVATED_DEFINITION=ACTIVATED_DEFINITION, EMBEDDING_DEFINITION=EMBEDDING_DEFINITION)
    return env


def render(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)


def render_formula(derivation: Derivation, fmt: str, activated: bool = False, title: str = "") -> str:
    """The family's formula (total, or activated) in one of FORMATS."""
    glossary = [e for e in GLOSSARY if e.symbol in derivation.symbols]
    return render(
        f"formula.{_SUFFIX[fmt]}.j2",
        d=derivation,
        activated=activated,
        title=title or derivation.architecture.title,
        glossary=glossary,
    )


def render_count(model: Model) -> str:
    """The table of a model's components, formulas and exact counts, for a terminal."""
    return render("count.txt.j2", model=model, counts=model.counts, d=model.derivation)


def formula_data(derivation: Derivation) -> dict[str, Any]:
    """The JSON form of ``formula``: sympy strings in the glossary's symbols and their LaTeX."""
    latex = FILTERS["latex"]
    data: dict[str, Any] = {"family": derivation.architecture.name}
    parts = {"total": derivation.total, "activated": derivation.activated, "per_layer": derivation.per_layer}
    if derivation.per_dense_layer is not None:
        parts["per_dense_layer"] = derivation.per_dense_layer
    for key, expr in parts.items():
        data[key] = str(expr)
    data["latex"] = {key: latex(expr) for key, expr in parts.items()}
    data["symbols"] = {s.name: e.key for e in GLOSSARY if (s := e.symbol) in derivation.symbols}
    data["activated_definition"] = ACTIVATED_DEFINITION
    return data


def count_data(model: Model) -> dict[str, Any]:
    """The JSON form of ``count``: exact integers, components in reader's order."""
    counts = model.counts
    return {
        "model": model.name,
        "family": model.architecture.name,
        "source": model.source,
        "total": counts.total,
        "activated": counts.activated,
        "embedding": counts.embedding,
        "non_embedding": counts.non_embedding,
        "components": [
            {"path": c.path, "formula": str(c.formula), "count": c.count, "activated": c.activated}
            for c in counts.components
        ],
        "values": counts.values,
        "formula": {"total": str(model.derivation.total), "activated": str(model.derivation.activated)},
        "definitions": {"activated": ACTIVATED_DEFINITION, "embedding": EMBEDDING_DEFINITION},
    }
