"""The notebook API: every result shows itself as a table (HTML and Markdown), __all__ names every function of the
API, and check, approx and writeup are there too."""

from __future__ import annotations

import inspect
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

import llmcount
from llmcount import api
from llmcount.presets import find


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def _shown(result) -> tuple[list[str], str, str]:
    cells = _Cells()
    cells.feed(result._repr_html_())
    return cells.tags, " ".join(cells.text), result._repr_markdown_()


# Each result and an exact figure its table must show, from a hand derivation or a published figure:
# llama-2-7b has 6,738,415,616 parameters (Meta's release, and transformers' count); its KV cache holds
# 2 (K, V) x 32 layers x 4096 x 2 bytes = 524,288 bytes per token, so 4096 tokens take 2,147,483,648 bytes;
# gpt2-xl: 12 N d^2 = 12 x 48 x 1600^2 = 1,474,560,000.
RESULTS = {
    "load": (lambda: llmcount.load("llama-2-7b"), "6,738,415,616"),
    "flops": (lambda: llmcount.flops("llama-2-7b", seq=1), "40,430,493,696"),  # 6·N·tokens at one token: 6 x N
    "memory": (lambda: llmcount.memory("llama-2-7b", seq="4k"), "2,147,483,648"),
    "memory per GPU": (lambda: llmcount.memory("llama-2-7b", seq="4k", tp=2), "1,073,741,824"),  # half the cache
    "training": (lambda: llmcount.training("llama-2-7b", seq="4k"), f"{16 * 6_738_415_616:,}"),
    "fit": (lambda: llmcount.fit("llama-2-7b", "80GiB"), f"{80 * 2**30:,}"),
    "conventions": (lambda: llmcount.conventions("llama-2-7b"), "kaplan"),
    "mfu": (lambda: llmcount.mfu("llama-2-7b", 1000, peak_tflops=1000), "1,000"),
    "check": (lambda: llmcount.check("gpt2-xl", "12 N d^2"), "1,474,560,000"),
    "approx": (lambda: llmcount.approx("gpt2"), "12*d**2"),
}


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_every_api_result_is_a_table_in_html_and_markdown(name: str) -> None:
    make, figure = RESULTS[name]
    tags, text, markdown = _shown(make())
    assert "table" in tags and "th" in tags and "td" in tags
    assert figure in text, (figure, text[:400])
    lines = markdown.splitlines()
    assert any(line.startswith("| ") and line.endswith(" |") for line in lines)
    assert any(set(line.replace("|", "").replace(" ", "")) <= set("-:") for line in lines if line.startswith("|"))
    assert figure.replace("_", "\\_").replace("*", "\\*") in markdown


def test_bytes_are_shown_in_gb_and_gib() -> None:
    _, text, markdown = _shown(llmcount.memory("llama-2-7b", seq="4k"))
    assert "2.15 GB = 2.00 GiB" in text and "2.15 GB = 2.00 GiB" in markdown  # 2**31 bytes of KV cache


def test_a_loaded_model_keeps_its_formula_markdown() -> None:
    loaded = llmcount.load("gpt2")
    assert "$" in loaded._repr_markdown_() and "<table>" in loaded._repr_html_()


def test_the_tables_escape_names_from_input(tmp_path: Path) -> None:
    folder = tmp_path / "<img src=x onerror=alert(1)>|x"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(find("gpt2").config()))
    tags, text, markdown = _shown(llmcount.load(folder))
    assert "img" not in tags and "<img src=x onerror=alert(1)>" in text
    assert "\\<img" in markdown and "\\|x" in markdown


def test_all_lists_every_function_of_the_api() -> None:
    functions = {
        name
        for name, value in vars(api).items()
        if inspect.isfunction(value) and value.__module__ == api.__name__ and not name.startswith("_")
    }
    assert functions >= {"load", "flops", "memory", "training", "fit", "conventions", "mfu", "check", "approx"}
    assert functions <= set(llmcount.__all__)
    for name in llmcount.__all__:
        assert getattr(llmcount, name) is not None
        if name in functions:
            assert getattr(llmcount, name).__doc__, name


def test_check_reads_the_formula_as_people_type_it() -> None:
    result = llmcount.check("gpt2-xl", "12 N d²")
    assert result.claimed == 12 * 48 * 1600**2
    assert result.exact == 1_557_611_200  # GPT-2 XL: transformers' count (tests/test_presets_classic.py)


def test_approx_takes_assumptions_as_people_type_them() -> None:
    result = llmcount.approx("llama-2-7b", assume="d_ff=4d")
    # per layer 4d² (attention, h_kv = h) + 3·d·d_ff = 4d² + 12d² = 16d²
    assert str(result.leading_per_layer) == "16*d**2"


def test_approx_refuses_an_unknown_name_with_the_models_symbols() -> None:
    with pytest.raises(llmcount.LlmcountError, match="'dff' is not a symbol of llama-2-7b; did you mean d_ff"):
        llmcount.approx("llama-2-7b", assume="dff=4d")


def test_writeup_returns_the_post_and_writes_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    post = llmcount.writeup("gpt2", sections="tree,params")
    assert post.text.startswith("# How many parameters does GPT-2 have?")
    assert post._repr_markdown_() == post.text and str(post) == post.text
    assert post.data["total"] == 124_439_808  # GPT-2 small: transformers' count
    assert list(tmp_path.iterdir()) == []


def test_every_function_docs_api_md_documents_is_in_all() -> None:
    text = (Path(__file__).parent.parent / "docs" / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^## `llmcount\.(\w+)\(", text, flags=re.M))
    api_functions = {"load", "flops", "memory", "training", "fit", "conventions", "mfu", "check", "approx", "writeup"}
    assert api_functions <= documented
    assert documented <= set(llmcount.__all__), documented - set(llmcount.__all__)
