"""A model's counts and formula for a notebook cell: the ``_repr_markdown_`` and ``_repr_latex_`` of
``llmcount.load(...)``. The Markdown includes the formula template of ``llmcount formula -f markdown``."""

from __future__ import annotations

from ..formulas.config import Model
from ..formulas.symbols import GLOSSARY
from . import render
from .filters import escape


def markdown(model: Model) -> str:
    """Counts table, the config's values and the family's formula, in Markdown with $…$ math."""
    derivation = model.derivation
    glossary = [e for e in GLOSSARY if e.symbol in derivation.symbols and e.symbol.name in model.counts.values]
    return render(
        "notebook.md.j2",
        model=model,
        counts=model.counts,
        d=derivation,
        model_name=escape(model.name, "markdown"),
        source=escape(model.source, "markdown"),
        title=escape(model.name, "markdown"),
        activated=False,
        glossary=glossary,
    )


def latex(model: Model) -> str:
    """The total (and activated) formula in reader's order and its exact value, as display math."""
    return render("notebook.tex.j2", model=model, counts=model.counts, d=model.derivation)
