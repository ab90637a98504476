"""The write-up as one self-contained HTML page, readable offline.

The page is the Markdown post (``writeup/markdown.j2`` rendered with ``fmt="html"``) turned into HTML by
markdown-it-py with raw HTML switched off, so that no text of the post, user text included, can become markup.
The math is cut out before the Markdown is parsed (so that ``\\,`` or ``_`` never reach the Markdown parser),
rendered, and put back. Two renderers (``MATH``):

- ``mathml`` (the default): MathML Core written in Python (:mod:`.mathml`), which every current browser renders
  natively; it needs nothing beyond llmcount's own dependencies, so a plain ``pip install llmcount`` writes the page.
- ``katex``: pre-rendered by KaTeX under node (``katex_render.js``: HTML for the eye, MathML for screen readers),
  with KaTeX's stylesheet in the page and its fonts inlined as ``data:`` URLs (WOFF2). It needs Node.js and
  ``npm install katex``; its TeX fonts match a LaTeX paper's.

The chart is inline SVG (see :func:`.charts.svg_chart`). Nothing is fetched when the page is opened: no script,
no link, no remote font.
"""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import LlmcountError

KATEX_HINT = (
    "--math katex pre-renders the math with KaTeX under Node.js: install node and `npm install katex` "
    "(in the current folder, or set LLMCOUNT_KATEX to the folder holding node_modules/katex); "
    "the default, --math mathml, needs neither"
)
CHART_ALT = "#llmcount-chart"
"""The image link the Markdown of an HTML write-up carries where the chart goes; replaced by the inline SVG."""

MATH = ("mathml", "katex")
_SCRIPT = Path(__file__).with_name("katex_render.js")
_MARK = "LLMCOUNTMATH{}Z"
_MARK_RE = re.compile(r"LLMCOUNTMATH(\d+)Z")


# --- math out of the Markdown, and back in -------------------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    tex: str
    display: bool


def cut_math(markdown: str) -> tuple[str, list[Span]]:
    """``markdown`` with each ``$…$`` and ``$$…$$`` outside code replaced by a marker (letters and digits only),
    and the spans cut out. Code spans and fences are kept as they are, and so is an escaped ``\\$``."""
    out: list[str] = []
    spans: list[Span] = []
    i, n = 0, len(markdown)
    while i < n:
        at_line_start = i == 0 or markdown[i - 1] == "\n"
        if at_line_start and markdown.startswith("```", i):
            close = markdown.find("\n```", i + 3)
            line_end = markdown.find("\n", close + 4) if close >= 0 else -1
            end = n if line_end < 0 else line_end
            out.append(markdown[i:end])
            i = end
            continue
        c = markdown[i]
        if c == "\\" and i + 1 < n:
            out.append(markdown[i : i + 2])
            i += 2
        elif c == "`":
            run = len(markdown[i:]) - len(markdown[i:].lstrip("`"))
            close = re.compile(r"(?<!`)" + "`" * run + r"(?!`)").search(markdown, i + run)
            end = close.end() if close else i + run
            out.append(markdown[i:end])
            i = end
        elif markdown.startswith("$$", i):
            end = markdown.find("$$", i + 2)
            if end < 0:
                raise LlmcountError("internal error: unclosed $$ in the write-up")
            spans.append(Span(markdown[i + 2 : end], True))
            out.append(_MARK.format(len(spans) - 1))
            i = end + 2
        elif c == "$":
            end = markdown.find("$", i + 1)
            if end < 0 or "\n" in markdown[i:end]:
                raise LlmcountError("internal error: unclosed $ in the write-up")
            spans.append(Span(markdown[i + 1 : end], False))
            out.append(_MARK.format(len(spans) - 1))
            i = end + 1
        else:
            out.append(c)
            i += 1
    return "".join(out), spans


def fence_math(markdown: str) -> str:
    """The Markdown post for a renderer without a math extension (plain CommonMark): inline math as
    ``$`…`$`` and display math as a ```` ```math ```` fence (the syntax GitHub and GitLab render as math).
    Code spans and fences are literal in CommonMark, so the TeX reaches the reader whole: ``\\,`` stays
    ``\\,`` and each row of an aligned block keeps its line, where ``$…$`` would lose both."""
    text, spans = cut_math(markdown)

    def put(match: re.Match) -> str:
        span = spans[int(match.group(1))]
        return f"```math\n{span.tex.strip()}\n```" if span.display else f"$`{span.tex}`$"

    return _MARK_RE.sub(put, text)


def katex(spans: list[Span]) -> tuple[list[str], str]:
    """Each span rendered by KaTeX (HTML and MathML), and KaTeX's stylesheet with its fonts inlined."""
    node = shutil.which("node")
    if node is None:
        raise LlmcountError(KATEX_HINT)
    payload = json.dumps({"spans": [{"tex": s.tex, "display": s.display} for s in spans]})
    try:
        done = subprocess.run(
            [node, str(_SCRIPT)], input=payload, capture_output=True, text=True, encoding="utf-8", timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LlmcountError(f"cannot run node for KaTeX: {exc}") from None
    if done.returncode == 3:
        raise LlmcountError(KATEX_HINT)
    if done.returncode != 0:
        raise LlmcountError(f"internal error: KaTeX cannot render the write-up's math: {done.stderr.strip()[:300]}")
    result = json.loads(done.stdout)
    return result["html"], inline_fonts(Path(result["css"]))


_FONT_FACE = re.compile(r"src:url\((fonts/[^)]+\.woff2)\) format\(\"woff2\"\)(?:,url\([^)]+\) format\(\"[a-z]+\"\))*")


def inline_fonts(css_path: Path) -> str:
    """katex.min.css with each ``@font-face`` reduced to its WOFF2 file, inlined as a ``data:`` URL."""
    try:
        css = css_path.read_text("utf-8")
    except OSError as exc:
        raise LlmcountError(f"{css_path}: cannot read KaTeX's stylesheet: {exc.strerror or exc}") from None

    def inline(match: re.Match) -> str:
        font = css_path.parent / match.group(1)
        data = base64.b64encode(font.read_bytes()).decode("ascii")
        return f'src:url(data:font/woff2;base64,{data}) format("woff2")'

    css = _FONT_FACE.sub(inline, css)
    if "url(fonts/" in css:
        raise LlmcountError(f"{css_path}: a KaTeX font is not in the form expected; cannot inline it")
    return css


# --- the page -----------------------------------------------------------------------------------------------------


def _markdown_parser():
    from markdown_it import MarkdownIt

    # commonmark + tables; html=False: any '<' of the text is printed, never taken as markup
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")


def mathml_spans(spans: list[Span]) -> tuple[list[str], str]:
    """Each span as a MathML element, and the stylesheet the page adds for them."""
    from .mathml import STYLE as MATH_STYLE
    from .mathml import mathml

    return [mathml(s.tex, s.display) for s in spans], MATH_STYLE


def body(markdown: str, chart_svg: str | None = None, math: str = "mathml") -> tuple[str, str]:
    """The post's HTML (math rendered by ``math``, chart inline) and the stylesheet its math needs."""
    if math not in MATH:
        raise LlmcountError(f"unknown math renderer {math!r}; choose one of {', '.join(MATH)}")
    text, spans = cut_math(markdown)
    if math == "katex":
        rendered, css = katex(spans) if spans else ([], "")
    else:
        rendered, css = mathml_spans(spans)
    out = _markdown_parser().render(text)

    def display(match: re.Match) -> str:
        i = int(match.group(1))
        return f'<div class="math">{rendered[i]}</div>' if spans[i].display else match.group(0)

    out = re.sub(r"<p>\s*LLMCOUNTMATH(\d+)Z\s*</p>", display, out)
    out = _MARK_RE.sub(lambda m: rendered[int(m.group(1))], out)
    out = out.replace("<table>", '<div class="scroll"><table>').replace("</table>", "</table></div>")
    figure = re.compile(r'<p><img src="' + re.escape(CHART_ALT) + r'" alt="([^"]*)" /></p>')
    if chart_svg is not None:
        out = figure.sub(lambda m: f"<figure>{chart_svg}<figcaption>{m.group(1)}</figcaption></figure>", out)
    return out, css


def _svg_inline(svg: bytes) -> str:
    """An SVG file as an element of the page: no XML prolog, and as wide as the column."""
    text = svg.decode("utf-8")
    text = text[text.index("<svg") :]
    return re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r'<svg\1 class="chart"', text, count=1)


STYLE = """
:root { color-scheme: light; }
body { margin: 0; background: #fff; color: #1a1a1a; }
main { max-width: 46rem; margin: 0 auto; padding: 1rem 1.1rem 3rem;
  font: 17px/1.65 system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", "PingFang SC",
    "Microsoft YaHei", sans-serif; overflow-wrap: break-word; }
h1 { font-size: 1.6rem; line-height: 1.3; margin: 1rem 0; }
h2 { font-size: 1.25rem; margin: 2rem 0 0.6rem; border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; }
code { font: 0.88em ui-monospace, "DejaVu Sans Mono", monospace; background: #f3f3f3; padding: 0 0.2em;
  border-radius: 3px; }
pre { overflow-x: auto; background: #f6f6f6; padding: 0.6rem 0.8rem; border-radius: 4px; line-height: 1.4; }
pre code { background: none; padding: 0; font-size: 0.8em; }
.scroll, .math { overflow-x: auto; overflow-y: hidden; -webkit-overflow-scrolling: touch; }
.math { margin: 0.8rem 0; }
.math .katex-display { margin: 0.4rem 0; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.92em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3rem 0.6rem; vertical-align: top; }
th { border-bottom: 2px solid #999; text-align: left; }
td[style*="right"], th[style*="right"] { white-space: nowrap; font-variant-numeric: tabular-nums; }
figure { margin: 1.2rem 0; }
svg.chart { display: block; width: 100%; max-width: 36rem; height: auto; margin: 0 auto; }
figcaption { font-size: 0.9em; color: #555; text-align: center; margin-top: 0.4rem; }
.katex { font-size: 1.08em; }
"""


def page(markdown: str, lang: str, chart_svg: bytes | None = None, math: str = "mathml") -> str:
    """One self-contained HTML document of the Markdown write-up ``markdown`` in ``lang``, its math rendered by
    ``math`` (one of ``MATH``)."""
    content, css = body(markdown, _svg_inline(chart_svg) if chart_svg is not None else None, math)
    heading = re.search(r"<h1>(.*?)</h1>", content, re.S)
    title = re.sub(r"<[^>]+>", "", heading.group(1)) if heading else ""
    from . import render

    return render(
        "writeup/html.j2",
        lang="zh-Hans" if lang == "zh" else lang,
        title=html.unescape(title),
        math_css=css,
        style=STYLE,
        content=content,
    )
