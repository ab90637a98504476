"""docs/families.md lists what is counted of every multimodal type, from composites.toml itself: the lists between its
markers are the data's, so that the page cannot drift from the records. Rewrite them with
``PYTHONPATH=. python tests/test_docs_composites.py``."""

from __future__ import annotations

import re
from pathlib import Path

from llmcount.formulas.records import tomllib

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "families.md"
DATA = ROOT / "llmcount" / "formulas" / "composites.toml"
BEGIN, END = "<!-- composites: begin -->", "<!-- composites: end -->"


def _names(types) -> str:
    return ", ".join(f"`{t}`" for t in sorted(types))


def listing() -> str:
    data = tomllib.loads(DATA.read_text())
    composites, refused = data["composite"], data.get("refused", {})
    whole = [t for t, c in composites.items() if "left_out" not in c]
    partly = {t: c["left_out"] for t, c in composites.items() if "left_out" in c}
    lines = [
        f"Of the {len(composites) + len(refused)} multimodal types llmcount knows, {len(whole)} are counted whole "
        f"(language model, towers and projectors), {len(partly)} by their language model with what is left out "
        f"named, and {len(refused)} are refused by name (`[refused.<type>]`).",
        "",
        f"- **Whole:** {_names(whole)}.",
        f"- **Refused:** {_names(refused)}.",
        "- **Language model only**, and what is not counted:",
    ]
    for t in sorted(partly):
        c = composites[t]
        parts = [c.get("vision"), c.get("projector")]
        parts += [part for tower in c.get("towers", []) for part in (tower.get("tower"), tower.get("projector"))]
        also = f" (also counted: {', '.join(f'`{p}`' for p in parts if p)})" if any(parts) else ""
        lines.append(f"  - `{t}`{also}: {partly[t]}")
    return "\n".join(lines)


def rewritten(text: str) -> str:
    return re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), f"{BEGIN}\n{listing()}\n{END}", text, flags=re.S)


def test_the_families_page_lists_the_composites_as_the_data_has_them():
    text = DOC.read_text()
    assert BEGIN in text and END in text
    assert rewritten(text) == text, "docs/families.md is stale: run PYTHONPATH=. python tests/test_docs_composites.py"


def test_the_listing_counts_every_type_once():
    data = tomllib.loads(DATA.read_text())
    body = listing()
    for t in [*data["composite"], *data.get("refused", {})]:
        assert body.count(f"`{t}`") == 1, t


if __name__ == "__main__":
    DOC.write_text(rewritten(DOC.read_text()))
