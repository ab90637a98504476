"""Every symbol the formulas use has a Chinese meaning in the write-ups' glossary (renderers/glossary_zh.toml), so
that a Chinese post's notation table never falls back to the English meaning: a new symbol without a row fails."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

from llmcount.formulas import records
from llmcount.formulas.symbols import GLOSSARY
from llmcount.renderers import glossary_zh
from llmcount.renderers.writeup import build

TABLE = Path(__file__).parent.parent / "llmcount" / "renderers" / "glossary_zh.toml"
CJK = re.compile(r"[\u4e00-\u9fff]")


def every_symbol() -> list[str]:
    """The glossary's symbols and those the bundled records declare for themselves (``[glossary]`` of the family,
    remote and tower records), read from the files: not the process's registry, which a draft record a discovery
    test loaded may have added to."""
    folder = Path(records.__file__).parent
    declared = []
    for path in sorted(folder.rglob("*.toml")):
        table = tomllib.loads(path.read_text("utf-8")).get("glossary", {})
        declared += [name for name in table if isinstance(table, dict)]
    return list(dict.fromkeys([e.symbol.name for e in GLOSSARY] + declared))


def test_every_symbol_has_a_chinese_meaning():
    symbols = glossary_zh()["symbols"]
    names = every_symbol()
    assert len(names) > len(GLOSSARY) - 1
    missing = [name for name in names if name not in symbols]
    assert not missing, f"glossary_zh.toml [symbols] has no row for {missing}"
    for name in names:
        assert CJK.search(symbols[name]), f"{name}: {symbols[name]!r} is not Chinese"


def test_rows_name_symbols_that_exist():
    rows = tomllib.loads(TABLE.read_text("utf-8"))["symbols"]
    assert set(rows) <= set(every_symbol())
    assert all({"en", "zh", "why"} == set(row) for row in rows.values())


def test_the_hybrid_notation_table_is_chinese():
    text = build("qwen3-next-80b-a3b", "markdown", "zh").text
    notation = text.split("符号说明", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in notation.splitlines() if line.startswith("| $")]
    assert len(rows) >= 10
    for english in ("layers with full softmax attention", "linear attention", "kernel width", "shared expert"):
        assert english not in notation
    assert "线性注意力" in notation and "卷积核宽度" in notation
