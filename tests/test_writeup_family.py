"""`writeup FAMILY --family-sizes a,b,c`: how the shares of the components move across sizes of one family.

Expected numbers are derived by hand here from the configs' values (Qwen3: a gated MLP is 3·d·d_ff per layer,
embedding and an untied head V·d each) and checked against the published totals of the presets."""

from __future__ import annotations

import json
import re
from fractions import Fraction

import pytest
from refusal import assert_refused, run
from test_writeup_render import compile_all, katex_failures, math_spans

from llmcount.renderers.family import build_sizes
from llmcount.renderers.filters import pct

SIZES = "qwen3-0.6b,qwen3-8b,qwen3-32b"

# by hand, from the published configs: (N, d, d_ff, tied)
QWEN3 = {
    "Qwen3-0.6B": (28, 1024, 3072, True),
    "Qwen3-8B": (36, 4096, 12288, False),
    "Qwen3-32B": (64, 5120, 25600, False),
}
V = 151936
# published totals: Hub safetensors metadata (8B, 32B); 0.6B: the Hub's 751,632,384 less the tied head stored twice
TOTALS = {"Qwen3-0.6B": 751_632_384 - V * 1024, "Qwen3-8B": 8_190_735_360, "Qwen3-32B": 32_762_123_264}


def mlp(name: str) -> int:
    n, d, d_ff, _ = QWEN3[name]
    return n * 3 * d * d_ff


def test_the_table_has_each_sizes_counts_and_shares_smallest_first():
    text = build_sizes("qwen3", "qwen3-32b,qwen3-0.6b,qwen3-8b").text  # any order: the post goes by size
    counts = re.search(r"^\| MLP \|(.*)\|$", text, re.M).group(1)
    assert [c.strip() for c in counts.split("|")] == [f"{mlp(n):,}" for n in QWEN3]
    totals = re.search(r"^\| \*\*Total\*\* \|(.*)\|$", text, re.M).group(1)
    assert [c.strip() for c in totals.split("|")] == [f"**{t:,}**" for t in TOTALS.values()]
    # the MLP's share moves from 44% to 77% (issue's figures), exactly as the counts say
    first, last = Fraction(mlp("Qwen3-0.6B"), TOTALS["Qwen3-0.6B"]), Fraction(mlp("Qwen3-32B"), TOTALS["Qwen3-32B"])
    assert pct(first) == "44.33%" and pct(last) == "76.81%"
    assert f"MLP: from {pct(first)} in Qwen3-0.6B to {pct(last)} in Qwen3-32B." in text
    embedding = Fraction(V * 1024, TOTALS["Qwen3-0.6B"])
    assert re.search(rf"^\| Token embedding \| {re.escape(pct(embedding))} \|", text, re.M)


def test_tied_and_untied_heads_are_told_apart():
    text = build_sizes("qwen3", SIZES).text
    assert "| | `tie_word_embeddings` | yes | no | no |" in text
    assert "Qwen3-0.6B ties its LM head to the embedding" in text
    assert "Qwen3-8B and Qwen3-32B have their own head" in text
    head = re.search(r"^\| LM head \|(.*)\|$", text, re.M).group(1)
    assert [c.strip() for c in head.split("|")] == ["0", f"{V * 4096:,}", f"{V * 5120:,}"]
    zh = build_sizes("qwen3", SIZES, lang="zh").text
    assert "Qwen3-0.6B 的输出层与词嵌入共享权重" in zh and "Qwen3-8B 和 Qwen3-32B 则有独立的输出层" in zh


def test_only_the_values_that_differ_are_tabled():
    text = build_sizes("qwen3", SIZES).text
    assert "| $N$ | `num_hidden_layers` | 28 | 36 | 64 |" in text
    assert "| $d$ | `hidden_size` | 1,024 | 4,096 | 5,120 |" in text
    assert "The others are the same at every size: $V = 151{,}936$" in text
    assert not re.search(r"^\| \$V\$", text, re.M)


def test_json_has_exact_counts():
    data = json.loads(run("writeup", "qwen3", "--family-sizes", SIZES, "--json").stdout)
    assert [s["total"] for s in data["sizes"]] == list(TOTALS.values())
    mlp_counts = [c["count"] for s in data["sizes"] for c in s["components"] if c["component"] == "mlp"]
    assert mlp_counts == [mlp(n) for n in QWEN3]
    assert [s["tied"] for s in data["sizes"]] == [t for *_, t in QWEN3.values()]


def test_markdown_draws_one_pie_per_size_and_a_chart_replaces_them(tmp_path):
    pytest.importorskip("matplotlib")
    text = build_sizes("qwen3", SIZES).text
    assert text.count("```mermaid") == 3
    post = build_sizes("qwen3", SIZES, output=str(tmp_path / "p.md"), chart=str(tmp_path / "c.svg"))
    assert "```mermaid" not in post.text and "](c.svg)" in post.text
    svg = post.files[(tmp_path / "c.svg").resolve()].decode()
    assert "Qwen3-0.6B" in svg and "Qwen3-32B" in svg  # display names, kept as text


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["qwen3", "--family-sizes", "qwen3-0.6b"], ["one size only", "at least 2"]),
        (["qwen3", "--family-sizes", "qwen3-0.6b,qwen3-30b-a3b"], ["qwen3-30b-a3b", "'qwen3_moe', not 'qwen3'"]),
        (["qwen3", "--family-sizes", "qwen3-0.6b,,qwen3-8b"], ["an empty name"]),
        (["qwen3", "--family-sizes", "qwen3-0.6b,qwen3-0.6b"], ["named twice"]),
        (["qwen3", "--family-sizes", "qwen3-0.6b,Qwen/Qwen3-0.6B"], ["named twice"]),
        (["qwen3", "--family-sizes", "qwen3-0.6b,qwen3-9b"], ["unknown preset 'qwen3-9b'"]),
        (["qwen3-32b", "--family-sizes", "qwen3-0.6b,qwen3-8b"], ["qwen3-32b is a model, not a family", "qwen3"]),
        (["qwen4", "--family-sizes", "qwen3-0.6b,qwen3-8b"], ["unsupported model_type 'qwen4'"]),
    ],
)
def test_bad_lists_are_refused_by_name(args, needles, tmp_path):
    out = tmp_path / "post.md"
    assert_refused(run("writeup", *args, "-o", str(out)), *needles)
    assert not out.exists()


def test_one_model_options_are_usage_errors():
    result = run("writeup", "qwen3", "--family-sizes", SIZES, "--sections", "params")
    assert result.exit_code == 2 and result.stdout == ""
    assert "--sections is for one model's post" in result.stderr


def test_math_parses_in_katex():
    spans = [s for lang in ("en", "zh") for s in math_spans(build_sizes("qwen3", SIZES, lang=lang).text)]
    assert len(spans) > 10
    assert not katex_failures(spans)


def test_latex_compiles_in_both_languages(tmp_path):
    pytest.importorskip("matplotlib")
    documents = {}
    for lang in ("en", "zh"):
        post = build_sizes(
            "qwen3", SIZES, "latex", lang, output=str(tmp_path / f"{lang}.tex"), chart=str(tmp_path / f"c-{lang}.pdf")
        )
        (tmp_path / f"c-{lang}.pdf").write_bytes(post.files[(tmp_path / f"c-{lang}.pdf").resolve()])
        documents[f"sizes-{lang}"] = post.text
    compile_all(tmp_path, documents)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_html_page_in_a_browser(tmp_path, lang):
    from test_writeup_html import Visible, chromium

    text = build_sizes("qwen3", SIZES, "html", lang).text
    assert "<svg" in text and "```mermaid" not in text  # the chart inline, not the pies
    target = tmp_path / f"sizes.{lang}.html"
    target.write_text(text, "utf-8")
    dom = chromium("--dump-dom", url=target.as_uri(), profile=tmp_path / "profile")
    assert "<merror" not in dom and dom.count("<math ") > 10
    shown = Visible()
    shown.HIDDEN = ("style", "script", "title", "annotation")  # the MathML is what a reader sees
    shown.feed(dom)
    seen = re.sub(r"\s+", " ", "".join(shown.parts))
    assert not re.search(r"\\[a-zA-Z]+|\$|\\,|&[a-z]+;", seen)
    assert "32,762,123,264" in seen


def test_an_moe_family_adds_the_activated_counts():
    # activated = total less the routed experts a token skips, (n - k) · 3 d d_moe per layer; n = 128, k = 8
    # totals: Hub safetensors metadata of Qwen3-30B-A3B and Qwen3-235B-A22B
    activated = [30_532_122_624 - 120 * 3 * 2048 * 768 * 48, 235_093_634_560 - 120 * 3 * 4096 * 1536 * 94]
    text = build_sizes("qwen3_moe", "qwen3-235b-a22b,qwen3-30b-a3b").text
    assert f"| Activated per token | {activated[0]:,} | {activated[1]:,} |" in text
    assert "tie_word_embeddings` |" not in text  # neither ties: one sentence says so, no table row
    assert "No size ties its LM head to the embedding" in text


def test_a_sizes_folder_name_cannot_put_html_into_the_post(tmp_path):
    from llmcount.presets import presets

    folder = tmp_path / "<img src=x onerror=alert(1)> $y$"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(presets()["qwen3-8b"].config()))
    text = build_sizes("qwen3", f"qwen3-0.6b,{folder}").text
    outside_code = re.sub(r"(`+).*?\1", "", text, flags=re.S)
    assert not re.search(r"(?<!\\)<", outside_code), "a raw '<' in the Markdown"
    assert r"\<img src=x onerror=alert(1)\> \$y\$" in text
    assert "#lt;img" in text  # in the Mermaid pie's title: an entity, not markup
