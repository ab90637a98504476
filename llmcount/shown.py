"""What the API returns, shown in a notebook: a table as HTML (``_repr_html_``) and as Markdown
(``_repr_markdown_``), built by :func:`llmcount.renderers.notebook.table_of` when a cell displays the object.

A base class without fields or imports, so that the result classes (a frozen dataclass each) take it on at no cost:
nothing of the renderers is imported before a notebook shows something."""

from __future__ import annotations


class Shown:
    """An API result a notebook shows as a table. A result that holds bytes declares itself ``repr=False`` to take
    :meth:`__repr__` here: its caption and its amount, exact and in GB and GiB."""

    def __repr__(self) -> str:
        from .renderers.notebook import table_of
        from .sizes import gb_gib

        table = self._table() if hasattr(self, "_table") else table_of(self)
        amounts = (getattr(self, name, None) for name in ("total_bytes", "capacity"))
        amount = next((a for a in amounts if isinstance(a, int) and not isinstance(a, bool)), None)
        tail = "" if amount is None else f": {amount:,} B ({gb_gib(amount)})"
        return f"<llmcount {table.caption}{tail}>"

    def _repr_html_(self) -> str:
        from .renderers.notebook import table_of

        return table_of(self).html()

    def _repr_markdown_(self) -> str:
        from .renderers.notebook import table_of

        return table_of(self).markdown()


class ShownList(list, Shown):
    """A list of results (the training-FLOPs conventions) shown as one table."""

    kind = ""

    def __init__(self, items=(), kind: str = "") -> None:
        super().__init__(items)
        self.kind = kind
