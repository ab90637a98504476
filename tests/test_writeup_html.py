"""`writeup --format html`: one self-contained page, read by a real browser (Debian's headless chromium).

The pages of the browser tests are written as a plain install writes them: in a subprocess where matplotlib cannot
be imported and no node is on the PATH (math as MathML, the chart as SVG written by llmcount). The browser loads
each page from a file with the network off and the tests check what a reader sees: MathML and no math error, no
TeX source left in the visible text, CJK text in a Chinese page, no script or remote resource, the page as wide as
a phone's screen. The KaTeX renderer (--math katex) is checked too where node and katex are installed.
A screenshot of each is written to $LLMCOUNT_SCREENSHOTS (when set) for a person to look at.
chromium comes from .ci/run (apt); without it the browser tests skip on a developer's machine and fail in CI."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

import pytest
from refusal import assert_refused, run

from llmcount.renderers.html import Span, cut_math
from llmcount.renderers.writeup import build

ROOT = Path(__file__).resolve().parent.parent
PAGES = [  # a dense, an MoE, an MLA, a sliding/full-attention, a hybrid and a multimodal family, in both languages
    (spec, lang)
    for spec in ("qwen3-32b", "qwen3-235b-a22b", "deepseek-v3", "gemma-2-2b", "qwen3-next-80b-a3b", "llama-4-scout")
    for lang in ("en", "zh")
]
PHONE = 390  # CSS pixels: a phone's screen


def require(available: bool, what: str) -> None:
    if available:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing in CI: .ci/run must install it")
    pytest.skip(f"{what} is not installed (see .ci/run)")


def needs_katex() -> None:
    require(shutil.which("node") is not None and (ROOT / "node_modules" / "katex").is_dir(), "KaTeX (npm ci)")
    pytest.importorskip("matplotlib")


@cache
def page(spec: str, lang: str = "en", math: str = "mathml") -> str:
    if math == "katex":
        needs_katex()
    return build(spec, "html", lang, math=math).text


PLAIN = """
import runpy, sys
sys.modules["matplotlib"] = None  # import matplotlib -> ImportError, as without the plot extra
sys.argv = ["llmcount", *sys.argv[1:]]
runpy.run_module("llmcount", run_name="__main__")
"""


@cache
def plain_page(spec: str, lang: str = "en") -> str:
    """The page as `llmcount writeup SPEC --format html` writes it with neither matplotlib nor node."""
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "post.html"
        env = {**os.environ, "PATH": folder, "PYTHONPATH": str(ROOT)}  # an empty folder: no node, no npm
        args = ["writeup", spec, "--format", "html", "--lang", lang, "-o", str(target)]
        done = subprocess.run([sys.executable, "-c", PLAIN, *args], capture_output=True, text=True, env=env, cwd=folder)
        assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]
        return target.read_text("utf-8")


def chromium(*args: str, url: str, profile: Path) -> str:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    require(binary is not None, "chromium (apt-get install chromium fonts-noto-cjk)")
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
    ]
    done = subprocess.run([binary, *flags, *args, url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


class Visible(HTMLParser):
    """The text a reader sees: everything but <style>, <script>, <title> and KaTeX's hidden MathML copy."""

    HIDDEN = ("style", "script", "title", "annotation", "math")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.parts: list[str] = []
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in self.HIDDEN:
            self.depth += 1

    def handle_endtag(self, tag):
        if tag in self.HIDDEN:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth == 0:
            self.parts.append(data)


def visible(dom: str) -> Visible:
    parser = Visible()
    parser.feed(dom)
    return parser


# --- the page as written --------------------------------------------------------------------------------------------


def test_math_is_cut_out_outside_code_only():
    text, spans = cut_math("a $x_1$ b `$c$` \\$5 ``a`$`b``\n$$\n\\frac{1}{2}\n$$\n```\n$no$\n```\nend $y$")
    assert spans == [Span("x_1", False), Span("\n\\frac{1}{2}\n", True), Span("y", False)]
    assert text == "a LLMCOUNTMATH0Z b `$c$` \\$5 ``a`$`b``\nLLMCOUNTMATH1Z\n```\n$no$\n```\nend LLMCOUNTMATH2Z"


def test_page_is_self_contained():
    text = plain_page("qwen3-32b")
    assert text.startswith("<!DOCTYPE html>") and '<html lang="en">' in text
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    assert "<script" not in text and "<link" not in text and "<img" not in text and "<iframe" not in text
    # every url() is inlined, and no src/href points anywhere but into the page
    assert not re.findall(r"url\((?!data:|#)", text)
    assert not re.findall(r"""(?:src|href)=["'](?!#|data:)""", text)
    assert not re.findall(r"""(?:src|href)=(?!["'#]|data:)""", text)
    assert "@font-face" not in text and text.count("<math ") > 25 and "katex" not in text.split("<main>")[1]
    assert re.search(r'<svg[^>]* class="chart"', text) and "<figure>" in text  # the chart, inline
    assert "```mermaid" not in text and "pie showData" not in text


def test_katex_page_inlines_its_fonts():
    text = page("qwen3-32b", math="katex")
    assert "<script" not in text and "<link" not in text
    assert not re.findall(r"url\((?!data:|#)", text)
    assert text.count("@font-face") >= 15 and "data:font/woff2;base64," in text
    assert text.count('class="katex"') > 25


def test_page_has_the_posts_numbers_and_no_tex_outside_math():
    text = plain_page("deepseek-v3")
    # DeepSeek-V3 (published: 671,026,404,352 parameters in the safetensors index; 37B activated per token)
    assert "671,026,404,352" in text
    seen = "".join(visible(text).parts)
    assert "671,026,404,352" in seen
    assert "$" not in seen and not re.search(r"\\[a-zA-Z]+", seen), re.findall(r".{40}[$\\].{40}", seen)[:3]


def test_chinese_page_is_marked_chinese():
    text = page("qwen3-235b-a22b", "zh")
    assert '<html lang="zh-Hans">' in text and "总参数量" in text


def test_user_text_cannot_put_html_into_a_post(tmp_path):
    from llmcount.presets import presets

    folder = tmp_path / "<img src=x onerror=alert(1)> `<b>x<b>` $y$"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(presets()["qwen3-0.6b"].config()))
    markdown = build(str(folder), "markdown", "en").text
    outside_code = re.sub(r"(`+).*?\1", "", markdown)
    assert not re.search(r"(?<!\\)<", outside_code.replace("```mermaid", "")), "a raw '<' in the Markdown"
    assert "onerror" in markdown  # the name is there, made literal
    text = build(str(folder), "html", "en").text
    tags = {tag for tag, _ in visible(text).tags}
    assert "img" not in tags and "b" not in tags
    assert "&lt;img src=x onerror=alert(1)&gt;" in text


def test_html_refuses_a_chart_file(tmp_path):
    result = run("writeup", "qwen3-32b", "-f", "html", "--chart", str(tmp_path / "c.svg"))
    assert_refused(result, "inline")
    assert list(tmp_path.iterdir()) == []


def test_katex_without_node_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no node on the PATH
    result = run("writeup", "qwen3-32b", "-f", "html", "--math", "katex", "-o", str(tmp_path / "p.html"))
    assert_refused(result, "KaTeX", "node", "--math mathml")
    assert list(tmp_path.iterdir()) == []


def test_math_option_is_for_html_pages(tmp_path):
    assert_refused(run("writeup", "qwen3-32b", "--math", "katex", "-o", str(tmp_path / "p.md")), "--format html")
    assert list(tmp_path.iterdir()) == []


# --- the page in a browser ------------------------------------------------------------------------------------------

NARROW = f"<style>body {{ width: {PHONE}px; }}</style></head>"  # headless chromium's window is 500px at least
PROBE = """<script>
const chart = document.querySelector("svg.chart");
const edge = chart ? chart.viewBox.baseVal.width : 0;
const out = chart ? [...chart.querySelectorAll("text")].filter((t) => {
  const box = t.getBBox();
  return box.x < 0 || box.x + box.width > edge;
}) : [];
document.body.dataset.scrollWidth = document.body.scrollWidth;
document.body.dataset.katexErrors = document.querySelectorAll(".katex-error").length;
document.body.dataset.katex = document.querySelectorAll(".katex").length;
document.body.dataset.math = document.querySelectorAll("math").length;
document.body.dataset.merror = document.querySelectorAll("merror").length;
document.body.dataset.chartTexts = chart ? chart.querySelectorAll("text").length : 0;
document.body.dataset.chartOverflow = out.length;
</script></body>"""
CJK = re.compile(r"[\u4e00-\u9fff]")


def probe(text: str, tmp_path: Path, name: str, profile: Path) -> dict[str, int]:
    """The page's counts as chromium lays it out on a phone's width (the probe script is the test's only)."""
    probed = tmp_path / f"{name}.probe.html"
    probed.write_text(text.replace("</head>", NARROW).replace("</body>", PROBE), "utf-8")
    dom = chromium("--dump-dom", url=probed.as_uri(), profile=profile)
    data = dict(re.findall(r'data-([a-z-]+)="(\d+)"', dom.split("<body", 1)[1].split(">", 1)[0]))
    return {key: int(value) for key, value in data.items()}


def screenshot(text: str, tmp_path: Path, name: str, profile: Path) -> None:
    shots = os.environ.get("LLMCOUNT_SCREENSHOTS")
    folder = Path(shots) if shots else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / f"{name}.png"
    phone = tmp_path / f"{name}.phone.html"
    phone.write_text(text.replace("</head>", NARROW), "utf-8")
    chromium(f"--screenshot={shot}", f"--window-size={PHONE},3000", url=phone.as_uri(), profile=profile)
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 20_000


def cjk_font_installed() -> bool:
    fc = shutil.which("fc-list")
    return fc is not None and bool(subprocess.run([fc, ":lang=zh"], capture_output=True, text=True).stdout.strip())


@pytest.mark.parametrize(("spec", "lang"), PAGES)
def test_page_in_a_browser(tmp_path, spec, lang):
    """The page a plain install writes (MathML, llmcount's own SVG chart), as chromium shows it."""
    text = plain_page(spec, lang)
    target = tmp_path / f"{spec}.{lang}.html"
    target.write_text(text, "utf-8")
    profile = tmp_path / "profile"
    dom = chromium("--dump-dom", url=target.as_uri(), profile=profile)
    shown = Visible()
    shown.HIDDEN = ("style", "script", "title", "annotation")  # the MathML is what a reader sees
    shown.feed(dom)
    seen = re.sub(r"\s+", " ", "".join(shown.parts))
    assert not re.search(r"\\[a-zA-Z]+|\$|\\,|&[a-z]+;|\{,\}", seen), re.findall(r".{30}(?:\\|\$).{30}", seen)[:3]
    assert len(seen) > 3000
    data = probe(text, tmp_path, f"{spec}.{lang}", profile)
    assert data["math"] > 25 and data["merror"] == 0 and data["katex"] == 0, data
    assert data["chart-texts"] > 10 and data["chart-overflow"] == 0, f"text past the chart's edge: {data}"
    assert data["scroll-width"] <= PHONE, f"the page is {data['scroll-width']}px wide on a {PHONE}px screen: {data}"
    if lang == "zh":
        require(cjk_font_installed(), "a CJK font (apt-get install fonts-noto-cjk)")
        chart = re.search(r"<svg.*?</svg>", dom, re.S).group(0)
        assert len(CJK.findall(seen)) > 500 and CJK.search(chart)
    screenshot(text, tmp_path, f"{spec}.{lang}", profile)


def test_katex_page_in_a_browser(tmp_path):
    text = page("deepseek-v3", "en", math="katex")
    profile = tmp_path / "profile"
    data = probe(text, tmp_path, "katex", profile)
    assert data["katex-errors"] == 0 and data["katex"] > 25, data
    assert data["scroll-width"] <= PHONE, data
    screenshot(text, tmp_path, "deepseek-v3.en.katex", profile)


def test_code_spans_and_mermaid_labels_hold_any_text():
    from llmcount.renderers.filters import code, mermaid

    # CommonMark: a code span opened by n backticks ends at the next run of exactly n
    assert code("a`<b>`", "markdown") == "`` a`<b>` ``"
    assert code("q_proj", "markdown") == "`q_proj`"
    assert mermaid('a "b" <img>\n#1;') == "a #quot;b#quot; #lt;img#gt; #35;1#59;"


@pytest.mark.parametrize("spec", ["gemma-2-2b", "deepseek-v3"])
def test_commonmark_flavor_keeps_every_formula_whole_without_a_math_extension(spec):
    from markdown_it import MarkdownIt

    from llmcount.renderers.html import cut_math

    dollars = build(spec, "markdown", "en", sections="all").text
    flavored = build(spec, "markdown", "en", flavor="commonmark", sections="all").text
    _, spans = cut_math(dollars)
    assert "$$" not in flavored and len(spans) > 50
    # a CommonMark renderer with no math extension (markdown-it's commonmark preset, plus tables)
    rendered = MarkdownIt("commonmark", {"html": False}).enable("table").render(flavored)
    codes = [html.unescape(c) for c in re.findall(r"<code[^>]*>(.*?)</code>", rendered, re.S)]
    for span in spans:
        tex = span.tex.strip() + "\n" if span.display else span.tex
        assert tex in codes, tex  # \, and the rows of an aligned block arrive as written
    assert any("\\,d" in c for c in codes) and any("\\\\\n&= " in c for c in codes)


def test_flavor_is_for_markdown_and_lists_its_choices():
    assert_refused(run("writeup", "qwen3-32b", "-f", "latex", "--flavor", "commonmark"), "--format markdown")
    result = run("writeup", "qwen3-32b", "--flavor", "mathjax")
    assert result.exit_code == 2 and result.stdout == ""
    assert "'dollars', 'commonmark'" in result.stderr
