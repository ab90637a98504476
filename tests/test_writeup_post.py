"""The default write-up is a post of the reference posts' length and shape, and every format compiles clean.

Length, measured as the reference posts (shared/seeds) were measured: English in words (``len(text.split())``,
whitespace-separated, code and math included), Chinese in characters (``len(text)``, code and whitespace
included), of the Markdown a blogger pastes. The two English seeds have 1,176 and 1,220 words, the three Chinese
ones 4,897 to 7,316 characters. A default post may be shorter than the shortest seed (a dense model has fewer
modules to derive) and at most 1.15 times the longest: 1,403 words, 8,413 characters, the hybrid and MLA posts
included (run this file, ``PYTHONPATH=. python tests/test_writeup_post.py``, for every preset's lengths): a later
layer group's print(model) lines that repeat an earlier group's are one ``...``, four-digit numbers are written
without a separator (7168), the total's sum gives the parts by name (each part's number ends its own section), and
the prose says each thing once.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from test_writeup_render import require

from llmcount.renderers.writeup import build

SEEDS = {"en": (1_176, 1_220), "zh": (4_897, 7_316)}  # words, characters
BOUND = {lang: high * 115 // 100 for lang, (_, high) in SEEDS.items()}  # 1,403 words, 8,413 characters
KINDS = {  # dense, MoE, MLA, hybrid layers, multimodal
    "qwen3-32b": "dense",
    "qwen3-30b-a3b": "moe",
    "deepseek-v3": "mla",
    "qwen3-next-80b-a3b": "hybrid",
    "llama-4-scout": "multimodal",
    "gpt-neox-20b": "notes",  # sections told from the record's notes; a card figure, exact, among Chinese
}


def length(text: str, lang: str) -> int:
    return len(text.split()) if lang == "en" else len(text)


@pytest.mark.parametrize("spec", list(KINDS)[:5])  # dense, MoE, MLA, hybrid, multimodal
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_default_is_a_posts_length(spec, lang):
    high = BOUND[lang]
    n = length(build(spec, "markdown", lang).text, lang)
    assert SEEDS[lang][0] // 2 <= n <= high, f"{spec} {lang}: {n} not in {SEEDS[lang][0] // 2}-{high}"
    assert length(build(spec, "markdown", lang, sections="all").text, lang) > n  # the long form is longer


def measure(names=None) -> list[tuple[str, int, int]]:
    """Each preset's default post: (name, English words, Chinese characters), longest first."""
    from llmcount.presets import presets

    rows = [
        (name, length(build(name, "markdown", "en").text, "en"), length(build(name, "markdown", "zh").text, "zh"))
        for name in names or presets()
    ]
    return sorted(rows, key=lambda row: -row[1])


def test_the_default_has_the_posts_sections_in_order_and_costs_are_asked_for():
    text = build("deepseek-v3").text
    heads = re.findall(r"^## \d+\. (.*)$", text, re.M)
    assert heads[:2] == ["The module tree", "Notation"]
    assert heads[-4:] == ["Total", "Activated parameters", "Against the model card", "Where the parameters sit"]
    for cost in ("FLOPs", "Memory", "Training", "leading order", "MHA"):
        assert not any(cost in head for head in heads), cost
    long = re.findall(r"^## \d+\. (.*)$", build("deepseek-v3", sections="all").text, re.M)
    assert "Forward FLOPs per token" in long and "Memory: weights and the KV cache" in long


@pytest.mark.parametrize("fmt", ["markdown", "latex", "html"])
def test_the_tool_is_named_once_in_the_source_line(fmt):
    """The text speaks of the model: what a reader sees names llmcount once, in the source line at the end (the
    LaTeX file's first comment and the page's generator tag are not shown)."""
    for spec in ("qwen3-32b", "qwen3-30b-a3b", "llama-4-scout"):  # dense, MoE, multimodal
        for lang in ("en", "zh"):
            text = build(spec, fmt, lang).text
            shown = re.sub(r"(?m)^%.*$", "", text) if fmt == "latex" else re.sub(r"<meta [^>]*>", "", text)
            assert shown.count("llmcount") == 1, (spec, fmt, lang)
            line = next(line for line in shown.splitlines() if "llmcount" in line)
            assert ("Source:" if lang == "en" else "来源：") in line, (spec, fmt, lang, line)


def numbered(text: str, fmt: str) -> list[bool]:
    """For each section heading of a post, whether it carries a number."""
    if fmt == "latex":
        return [star == "" for star in re.findall(r"^\\(?:sub)?section(\*?)\{", text, re.M)]
    return [bool(re.match(r"#{2,3} \d+\.", head)) for head in re.findall(r"^#{2,3} .*$", text, re.M)]


@pytest.mark.parametrize("fmt", ["markdown", "latex", "html"])
def test_every_section_is_numbered(fmt):
    for spec in KINDS:
        for lang in ("en", "zh"):
            text = build(spec, fmt, lang, sections="all,training").text
            if fmt == "html":
                heads = re.findall(r"<h[23][^>]*>(.*?)</h[23]>", text, re.S)
                assert heads and all(re.match(r"\d+(\.\d+)*\. ", h) for h in heads), (spec, lang, heads[:3])
            else:
                assert all(numbered(text, fmt)), (spec, fmt, lang)


def test_every_table_is_kept_with_its_lead_in():
    """A table sits in a ``keep`` minipage (one unbreakable box with the sentence before it), so that it is never
    split across pages nor set apart from its heading."""
    text = build("deepseek-v3", "latex", "en", sections="all,training").text
    body = text.split("\\begin{document}")[1]
    depth, tables = 0, 0
    for token in re.findall(r"\\begin\{keep\}|\\end\{keep\}|\\begin\{tabular\}", body):
        if token == "\\begin{tabular}":
            tables += 1
            assert depth == 1, "a tabular outside a keep box"
        else:
            depth += 1 if token.startswith("\\begin") else -1
    assert tables >= 6


def test_the_title_has_no_empty_author_or_date():
    text = build("qwen3-32b", "latex").text
    assert "\\author{}" in text and "\\date{}" in text and "\\ifx\\@author\\@empty" in text


def test_the_latex_post_draws_its_chart_without_a_file():
    text = build("qwen3-30b-a3b", "latex", "zh").text
    assert "\\textcolor[HTML]{009E73}{\\rule" in text and "\\includegraphics" not in text
    assert "每 token 激活" in text  # the MoE's activated bar, in the post's language


OVERFULL = re.compile(r"Overfull \\hbox \((\d+(?:\.\d+)?)pt too wide\)")


def compile_clean(folder: Path, name: str, text: str, engine: str = "pdflatex") -> list[str]:
    """The problems ``engine`` (pdflatex, xelatex) reports for one article: errors, an overfull line wider than 1pt,
    a float too large, a LaTeX warning."""
    (folder / f"{name}.tex").write_text(text, "utf-8")
    done = subprocess.run(
        [engine, "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"],
        cwd=folder,
        capture_output=True,
        timeout=180,
    )
    log = (folder / f"{name}.log").read_text("latin-1")
    problems = [line for line in log.splitlines() if line.startswith("!")] if done.returncode else []
    problems += [f"overfull {w}pt" for w in OVERFULL.findall(log) if float(w) > 1]
    problems += ["Float too large"] * ("Float too large" in log)
    problems += [line for line in log.splitlines() if "LaTeX Warning" in line]
    return problems


@pytest.mark.parametrize("sections", [None, "all"])
def test_latex_compiles_clean_for_every_kind_of_model(tmp_path, sections):
    require(shutil.which("pdflatex") is not None, "pdflatex (texlive-latex-base)")
    documents = {
        f"{kind}-{lang}": build(spec, "latex", lang, sections=sections).text
        for spec, kind in KINDS.items()
        for lang in ("en", "zh")
    }
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda item: compile_clean(tmp_path, *item), documents.items())
        found = dict(zip(documents, results, strict=True))
    assert not {name: problems for name, problems in found.items() if problems}


def test_the_chinese_terms_come_from_the_glossary_table():
    import tomllib

    from llmcount.renderers import glossary_zh

    path = Path(__file__).parent.parent / "llmcount" / "renderers" / "glossary_zh.toml"
    rows = tomllib.loads(path.read_text("utf-8"))
    assert all({"en", "zh", "why"} <= set(row) for table in rows.values() for row in table.values())
    terms = glossary_zh()
    text = build("deepseek-v3", "markdown", "zh", sections="all").text
    for key, term in terms["terms"].items():
        assert term in text, key
    columns = terms["columns"]
    assert f"| {columns['weight']} | {columns['formula']} | {columns['each']} | {columns['copies']} |" in text
    assert columns["each"] not in ("单位", "单份")  # the parameters of one copy, not "unit"
    heads = re.findall(r"^## \d+\. (.*)$", text, re.M)
    assert {terms["head"]["total"], terms["head"]["activated"], terms["components"]["attention"]} <= set(heads)


def test_author_and_date_are_the_users_and_checked():
    from llmcount.errors import LlmcountError

    text = build("qwen3-32b", "latex", author="Jane Doe", date="27 November 2026").text
    assert "\\author{Jane Doe}" in text and "\\date{27 November 2026}" in text
    assert build("qwen3-32b", author="Jane", date="2026").text.splitlines()[2] == "*Jane · 2026*"
    for bad in ("", "a\nb", "x" * 201):
        with pytest.raises(LlmcountError, match="--author"):
            build("qwen3-32b", author=bad)


def test_chinese_latex_uses_xecjk_under_xelatex_and_cjk_glue_under_pdflatex():
    text = build("qwen3-32b", "latex", "zh").text
    xetex, pdftex = text.split("\\ifXeTeX")[1].split("\\fi")[0].split("\\else")
    assert "\\usepackage{xeCJK}" in xetex and "\\usepackage{CJKutf8}" in pdftex
    assert "\\CJKglue" not in text and "\\begin{zh}" in text and text.rstrip().endswith("\\end{zh}\n\\end{document}")


def test_a_hybrid_posts_tree_shows_each_kind_of_layer_group_once():
    """Qwen3-Next prints 24 groups of layers (3 linear-attention layers, then 1 full-attention layer, twelve times):
    the post shows the first two, one ``...`` line for the rest and says which layers it stands for; every line
    shown is print(model)'s own (tests/test_printed.py checks the whole text against transformers)."""
    from llmcount.renderers.tree import printed_tree
    from llmcount.sources import load

    printed = printed_tree(load("qwen3-next-80b-a3b")).split("\n")
    text = build("qwen3-next-80b-a3b").text
    tree = re.search(r"```text\n(.*?)```", text, re.S).group(1).rstrip("\n").split("\n")
    rest = iter(printed)  # the lines shown are print(model)'s, in its order: a subsequence of it
    assert all(any(line == other for other in rest) for line in tree if line.strip() != "...")
    groups = [line for line in tree if line.strip() == "..." and len(line) - len(line.lstrip()) == 6]
    assert len(groups) == 1  # one line for the layer groups left out; the others stand inside a module
    shown = [line.strip() for line in tree]
    assert "(0-2): 3 x Qwen3NextDecoderLayer(" in shown and "(3): Qwen3NextDecoderLayer(" in shown
    assert not any(line.strip().startswith(("(4-6)", "(7)", "(47)")) for line in tree)
    assert "stands for layers 4 to 47" in text
    assert len(tree) < len(printed) // 5


def test_xelatex_sets_the_chinese_post_with_xecjk_clean(tmp_path):
    """Under xelatex the Chinese article loads xeCJK (its own spacing between Chinese and Latin words, the fonts the
    system has) instead of CJKutf8; it compiles as clean as under pdflatex, for a dense and an MoE model."""
    require(shutil.which("xelatex") is not None, "xelatex (texlive-xetex, texlive-lang-chinese)")
    for spec in ("qwen3-32b", "qwen3-30b-a3b"):
        text = build(spec, "latex", "zh").text
        assert "\\usepackage{xeCJK}" in text
        assert not compile_clean(tmp_path, spec, text, "xelatex"), spec
        log = (tmp_path / f"{spec}.log").read_text("latin-1")
        assert "xeCJK" in log and "Output written" in log


def test_a_module_repeated_in_a_later_layer_group_is_shown_once():
    """DeepSeek-V3 prints two layer groups (3 dense, 58 MoE) whose attention modules are the same seven lines and
    whose norms are the same two: the post prints them in the first group and one ``...`` for each run of them in the
    second, and says so; every other line is print(model)'s own, in its order."""
    from llmcount.renderers.tree import printed_tree
    from llmcount.sources import load

    printed = printed_tree(load("deepseek-v3")).split("\n")
    text = build("deepseek-v3").text
    tree = re.search(r"```text\n(.*?)```", text, re.S).group(1).rstrip("\n").split("\n")
    rest = iter(printed)
    assert all(any(line == other for other in rest) for line in tree if line.strip() != "...")
    assert sum("(q_a_proj): Linear(in_features=7168, out_features=1536" in line for line in printed) == 2
    assert sum("(q_a_proj): Linear(in_features=7168, out_features=1536" in line for line in tree) == 1
    at = tree.index("      (3-60): 58 x DeepseekV3DecoderLayer(")
    assert tree[at + 1 : at + 3] == ["        ...", "        (mlp): DeepseekV3MoE("]
    assert tree[tree.index("      )", at) - 1] == "        ..."  # the two norms
    assert "(shared_experts): DeepseekV3MLP(" in text  # a module seen for the first time is printed in full
    assert "Inside a layer, `...` stands for modules printed the same above" in text
    assert len(tree) == len(printed) - 8 - 1  # attention's nine lines and the norms' two, one line each


if __name__ == "__main__":  # the length of every preset's default post against the bound
    import sys

    for name, words, characters in measure(sys.argv[1:]):
        over = [lang for lang, n in (("en", words), ("zh", characters)) if n > BOUND[lang]]
        print(f"{name:24} {words:6,} {characters:7,}  {'over in ' + ', '.join(over) if over else ''}")
