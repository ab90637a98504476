"""Charts of where a model's parameters sit: one stacked bar per model (and per activated count).

Chart files (``llmcount chart``, ``writeup --chart``) are PNG, SVG or PDF drawn by matplotlib, an optional extra
(``pip install 'llmcount[plot]'``), imported only here, inside the functions, so that the rest of llmcount never
loads it. The chart inside an HTML write-up is SVG written by :func:`svg_chart` with no library at all, so that a
plain install writes the page."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from fractions import Fraction
from html import escape
from pathlib import Path
from typing import Any

from ..errors import LlmcountError
from ..formulas.config import Model
from .filters import count, pct

FORMATS = ("png", "svg", "pdf")
LANGS = ("en", "zh")
INSTALL_HINT = "charts need matplotlib: pip install 'llmcount[plot]'"
CJK_HINT = (
    "a Chinese chart needs a CJK font and matplotlib found none: install Noto CJK (apt-get install fonts-noto-cjk)"
)

WORDS = {  # every word a chart prints, per language
    "en": {
        "embedding": "Token embedding",
        "attention": "Attention",
        "linear_attention": "Linear attention",
        "cross_attention": "Cross-attention",
        "moe": "Mixture of experts (experts, router)",
        "moe+shared": "Mixture of experts (routed, shared experts, router)",
        "mlp": "MLP",
        "norms": "Norms",
        "head": "LM head",
        "vision": "Vision tower",
        "projector": "Projector",
        "audio": "Audio tower",
        "activated": "activated per token",
        "title": "Where the parameters sit, by component",
        "title+activated": "Where the parameters sit: total, and activated per token",
        "axis": "share of parameters (%)",
    },
    "zh": {
        "embedding": "词嵌入",
        "attention": "注意力",
        "linear_attention": "线性注意力",
        "cross_attention": "交叉注意力",
        "moe": "混合专家（专家、路由器）",
        "moe+shared": "混合专家（路由专家、共享专家、路由器）",
        "mlp": "MLP",
        "norms": "归一化",
        "head": "输出层（LM head）",
        "vision": "视觉编码器",
        "projector": "多模态投影层",
        "audio": "音频编码器",
        "activated": "每 token 激活",
        "title": "参数量分布：按模块",
        "title+activated": "参数量分布：总参数量与每 token 激活参数量",
        "axis": "占参数量的比例（%）",
    },
}
COLORS = {  # colour-blind-safe (Okabe-Ito), one per component, the same in every chart; in reader's order
    "embedding": "#E69F00",
    "attention": "#56B4E9",
    "linear_attention": "#999933",
    "moe": "#009E73",
    "mlp": "#0072B2",
    "norms": "#CC79A7",
    "head": "#D55E00",
    "vision": "#882255",
    "projector": "#44AA99",
    "audio": "#777777",
}
SPARE = ("#F0E442", "#332288", "#DDCC77", "#AA4499")  # for a component of a new family
INSIDE = Fraction(15, 100)  # a segment at least this wide carries its percentage inside the bar


def label(key: str, lang: str = "en", shared: bool = False) -> str:
    """A component's name in ``lang``; a group a new family brings is named from its key."""
    words = WORDS[lang]
    if key == "moe" and shared:
        return words["moe+shared"]
    return words.get(key) or key.replace("_", " ").capitalize()


def color(key: str, keys: list[str]) -> str:
    if key in COLORS:
        return COLORS[key]
    unknown = [k for k in keys if k not in COLORS]
    return SPARE[unknown.index(key) % len(SPARE)]


@dataclass(frozen=True)
class Bar:
    """One stacked bar: a model's parameters (or activated parameters) by component."""

    name: str  # the model's
    total: int
    segments: tuple[tuple[str, int, Fraction], ...]  # (component, parameters, share)
    activated: str | None = None  # "activated per token", in the chart's language, for an activated bar

    @property
    def label(self) -> str:
        return f"{self.name}, {self.activated}" if self.activated else self.name

    @property
    def tick(self) -> str:
        """The bar's label on the chart: name, what is counted, how many, one per line."""
        return "\n".join(part for part in (self.name, self.activated, count(self.total)) if part)


def bars(models: list[Model], activated: bool = False, lang: str = "en") -> list[Bar]:
    """The bars of a chart: each model's total and, with ``activated``, an MoE model's activated count.
    Bars are labelled with the model's display name (Qwen3-32B, not the preset id qwen3-32b)."""
    from .writeup import display_name, post_sections

    result = []
    for model in models:
        parts, counts = post_sections(model)
        name = display_name(model)
        result.append(Bar(name, counts.total, tuple((s.key, s.count, s.share) for s in parts if s.count)))
        if activated and model.architecture.is_moe:
            segments = tuple((s.key, s.activated, s.activated_share) for s in parts if s.activated)
            result.append(Bar(name, counts.activated, segments, WORDS[lang]["activated"]))
    return result


def chart_data(models: list[Model], activated: bool = False, lang: str = "en") -> dict[str, Any]:
    """The JSON form of a chart: exact counts and shares per component."""
    return {
        "activated": activated,
        "lang": lang,
        "bars": [
            {
                "label": bar.label,
                "total": bar.total,
                "activated": bar.activated is not None,
                "components": [{"component": key, "count": n, "share": float(share)} for key, n, share in bar.segments],
            }
            for bar in bars(models, activated, lang)
        ],
    }


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise LlmcountError(INSTALL_HINT) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans CJK", "Source Han Sans SC", "Noto Serif CJK SC")


def cjk_font() -> str:
    """The name of a CJK font matplotlib's font manager can use, Noto Sans CJK SC first. A font installed after
    matplotlib cached its list is added from the system's font folders."""
    from matplotlib import font_manager

    def pick() -> str | None:
        names = {f.name for f in font_manager.fontManager.ttflist}
        for family in CJK_FAMILIES:
            found = sorted(n for n in names if n.startswith(family))
            if found:
                return found[0]
        return next(iter(sorted(n for n in names if "CJK" in n)), None)

    name = pick()
    if name is None:
        for path in font_manager.findSystemFonts():
            if "CJK" in Path(path).name:
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):
                    continue
        name = pick()
    if name is None:
        raise LlmcountError(CJK_HINT)
    return name


def render_chart(
    models: list[Model], fmt: str = "png", activated: bool = False, lang: str = "en", width: float = 8
) -> bytes:
    """The chart as PNG/SVG/PDF bytes, its words in ``lang``: a 100% stacked bar per model, percentages inside
    wide segments and beside the bar for narrow ones. SVG keeps its text as text (searchable, selectable).
    ``width`` in inches: narrower makes the words larger where the image is shrunk to a column."""
    if fmt not in FORMATS:
        raise LlmcountError(f"unknown chart format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if lang not in LANGS:
        raise LlmcountError(f"unknown language {lang!r}; choose one of {', '.join(LANGS)}")
    plt = _pyplot()
    words = WORDS[lang]
    families = [cjk_font(), "DejaVu Sans"] if lang == "zh" else ["DejaVu Sans"]
    data = bars(models, activated, lang)
    shared = any(t.path.startswith("moe/shared") for m in models for t in m.derivation.terms)
    seen = list(dict.fromkeys(seg[0] for bar in data for seg in bar.segments))
    keys = sorted(seen, key=lambda k: (list(COLORS).index(k) if k in COLORS else len(COLORS), seen.index(k)))
    rc = {
        "font.size": 11,
        "font.family": families,
        "svg.hashsalt": "llmcount",
        "svg.fonttype": "none",
        "text.parse_math": False,  # a '$' in a model's name is a dollar sign
    }
    with plt.rc_context(rc):
        fig, ax = plt.subplots(figsize=(width, 1.9 + 0.85 * len(data)), layout="constrained")
        for row, bar in enumerate(data):
            left = Fraction(0)
            narrow = []
            for key, _count, share in bar.segments:
                ax.barh(
                    row,
                    float(share) * 100,
                    left=float(left) * 100,
                    height=0.62,
                    color=color(key, keys),
                    edgecolor="white",
                )
                if share >= INSIDE:
                    ax.text(
                        float(left + share / 2) * 100,
                        row,
                        pct(share, typeset=True),
                        ha="center",
                        va="center",
                        color="white",
                        fontsize=10,
                        fontweight="bold",
                    )
                else:
                    narrow.append(f"{label(key, lang)} {pct(share, typeset=True)}")
                left += share
            if narrow:
                ax.text(101, row, "\n".join(narrow), ha="left", va="center", fontsize=9, color="#333333")
        ax.set_yticks(range(len(data)), [bar.tick for bar in data])
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel(words["axis"])
        title = words["title+activated" if activated else "title"]
        ax.set_title(title, fontsize=13, fontweight="bold", loc="left", wrap=True)  # broken at the figure's edge
        ax.spines[["top", "right"]].set_visible(False)
        handles = [plt.Rectangle((0, 0), 1, 1, color=color(key, keys)) for key in keys]
        names = [label(key, lang, shared) for key in keys]
        widest = max(sum(2 if ord(c) > 0x2E80 else 1 for c in name) for name in names)
        columns = max(1, min(len(keys), 3 if widest <= 24 else 2 if widest <= 40 else 1))
        fig.legend(handles, names, loc="outside lower center", ncols=columns, frameon=False)
        buffer = io.BytesIO()
        metadata = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}[fmt]
        fig.savefig(buffer, format=fmt, dpi=150, metadata=metadata)
        plt.close(fig)
    return buffer.getvalue()


def chart_format(path: str | Path) -> str:
    """The image format a chart path asks for, from its suffix."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise LlmcountError(f"{path}: unknown chart type {suffix or '(none)'!r}; choose one of .png, .svg, .pdf")
    return suffix


@dataclass(frozen=True)
class Chart:
    data: dict[str, Any]
    files: dict[Path, bytes]


def chart(specs: list[str], output: str, activated: bool = False, lang: str = "en") -> Chart:
    """The chart of the models ``specs`` name, its words in ``lang``, to be written to ``output``
    (see writeup.save)."""
    from ..sources import load
    from .writeup import check_target

    target = check_target(output, "chart")
    fmt = chart_format(output)  # the name asked for, not the file a symlink points to
    if lang not in LANGS:
        raise LlmcountError(f"unknown language {lang!r}; choose one of {', '.join(LANGS)}")
    _pyplot()  # say how to install matplotlib before loading anything
    if lang == "zh":
        cjk_font()  # and that a CJK font is missing
    models = [load(spec) for spec in specs]
    drawn = render_chart(models, fmt, activated, lang)
    return Chart({**chart_data(models, activated, lang), "output": output}, {target: drawn})


# --- the chart of an HTML page, written as SVG text (no matplotlib) -------------------------------------------------

SVG_WIDTH = 480  # user units; the page scales the chart to its column (at most 36rem wide)
SVG_PAD = 12
SVG_FONT = "system-ui, -apple-system, 'Segoe UI', 'Noto Sans', 'Noto Sans CJK SC', 'DejaVu Sans', sans-serif"
_WIDE = re.compile(r"[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]")


_CLOSING = "[，。：；）」』、！？】》]"


def text_width(text: str, size: float, bold: bool = False) -> float:
    """An upper estimate of ``text``'s width at font size ``size``, so that a line never runs past the chart's
    edge in the fonts a page may fall back to: a CJK character is one em, a Latin one at most about 0.7 em."""
    em = 0.0
    for c in text:
        if _WIDE.match(c):
            em += 1.0
        elif c == " ":
            em += 0.3
        elif c in "il.,:;'|!()[]":
            em += 0.34
        elif c.isupper() or c in "mwMW%@":
            em += 0.74
        else:
            em += 0.6
    return em * size * (1.07 if bold else 1.0)


def wrap(text: str, width: float, size: float, bold: bool = False) -> list[str]:
    """``text`` broken into lines no wider than ``width``: at spaces, between CJK characters, and inside a word
    only where the word alone is wider than a line."""
    # a CJK character keeps the closing punctuation after it (no line starts with '：' or '）')
    pieces = re.findall(_WIDE.pattern + _CLOSING + r"*|[^\s" + _WIDE.pattern[1:-1] + r"]+\s*|\s+", text)
    lines, line = [], ""
    for piece in pieces:
        if text_width((line + piece).rstrip(), size, bold) <= width:
            line += piece
            continue
        if line.strip():
            lines.append(line.rstrip())
        line = piece.lstrip()
        while text_width(line.rstrip(), size, bold) > width and len(line) > 1:
            cut = max(1, max(i for i in range(1, len(line) + 1) if text_width(line[:i], size, bold) <= width or i == 1))
            lines.append(line[:cut])
            line = line[cut:]
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


def wrap_items(items: list[str], width: float, size: float, sep: str = " · ") -> list[str]:
    """``items`` joined by ``sep`` into lines no wider than ``width``, breaking between items (inside an item only
    where it alone is wider than a line)."""
    lines: list[str] = []
    for item in items:
        joined = f"{lines[-1]}{sep}{item}" if lines else item
        if lines and text_width(joined, size) <= width:
            lines[-1] = joined
        else:
            lines.extend(wrap(item, width, size))
    return lines


def svg_chart(models: list[Model], activated: bool = False, lang: str = "en") -> bytes:
    """The chart of an HTML write-up as an SVG document written here, not by matplotlib: a title (wrapped to the
    chart's width), and per bar its label, a 100% stacked bar with the percentage inside each segment of at least
    ``INSIDE``, the narrower segments named under the bar, and a legend, one component a line. Text stays text
    (searchable, and drawn in the page's fonts, CJK included); every piece of it is escaped."""
    if lang not in LANGS:
        raise LlmcountError(f"unknown language {lang!r}; choose one of {', '.join(LANGS)}")
    words = WORDS[lang]
    data = bars(models, activated, lang)
    shared = any(t.path.startswith("moe/shared") for m in models for t in m.derivation.terms)
    seen = list(dict.fromkeys(seg[0] for bar in data for seg in bar.segments))
    keys = sorted(seen, key=lambda k: (list(COLORS).index(k) if k in COLORS else len(COLORS), seen.index(k)))
    inner = SVG_WIDTH - 2 * SVG_PAD
    out: list[str] = []
    y = SVG_PAD

    def text(x: float, y: float, s: str, size: float, **attrs: str) -> None:
        extra = "".join(f' {k.replace("_", "-")}="{escape(v)}"' for k, v in attrs.items())
        out.append(f'<text x="{x:g}" y="{y:g}" font-size="{size:g}"{extra}>{escape(s)}</text>')

    title = words["title+activated" if activated else "title"]
    for line in wrap(title, inner, 17, bold=True):
        y += 22
        text(SVG_PAD, y, line, 17, font_weight="bold")
    y += 8
    bar_height = 34
    for bar in data:
        caption = " · ".join(part for part in (bar.name, bar.activated, count(bar.total)) if part)
        for line in wrap(caption, inner, 14):
            y += 19
            text(SVG_PAD, y, line, 14, fill="#222222")
        y += 7
        left = Fraction(0)
        narrow = []
        for key, _n, share in bar.segments:
            x, w = SVG_PAD + float(left) * inner, float(share) * inner
            out.append(
                f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{bar_height}" fill="{color(key, keys)}" '
                f'stroke="#ffffff" stroke-width="0.5"><title>{escape(label(key, lang, shared))} '
                f"{escape(pct(share, typeset=True))}</title></rect>"
            )
            share_text = pct(share, typeset=True)
            if share >= INSIDE and text_width(share_text, 13, bold=True) + 6 <= w:
                text(
                    x + w / 2,
                    y + bar_height / 2 + 5,
                    share_text,
                    13,
                    fill="#ffffff",
                    font_weight="bold",
                    text_anchor="middle",
                )
            else:
                narrow.append(f"{label(key, lang)} {share_text}")
            left += share
        y += bar_height
        if narrow:
            for line in wrap_items(narrow, inner, 13):
                y += 18
                text(SVG_PAD, y, line, 13, fill="#444444")
        y += 10
    # the scale under the bars
    y += 4
    out.append(f'<line x1="{SVG_PAD}" y1="{y}" x2="{SVG_PAD + inner}" y2="{y}" stroke="#999999"/>')
    for tick in range(0, 101, 25):
        x = SVG_PAD + tick / 100 * inner
        out.append(f'<line x1="{x:g}" y1="{y}" x2="{x:g}" y2="{y + 4}" stroke="#999999"/>')
        anchor = "start" if tick == 0 else "end" if tick == 100 else "middle"
        text(x, y + 17, f"{tick}%", 12, fill="#555555", text_anchor=anchor)
    y += 22
    for line in wrap(words["axis"], inner, 12):
        y += 16
        text(SVG_PAD + inner / 2, y, line, 12, fill="#555555", text_anchor="middle")
    y += 10
    for key in keys:
        lines = wrap(label(key, lang, shared), inner - 24, 13)
        out.append(f'<rect x="{SVG_PAD}" y="{y + 4}" width="14" height="14" fill="{color(key, keys)}"/>')
        for line in lines:
            y += 18
            text(SVG_PAD + 22, y, line, 13, fill="#222222")
        y += 4
    height = y + SVG_PAD
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {SVG_WIDTH} {height}" width="{SVG_WIDTH}" '
        f'height="{height}" role="img" aria-label="{escape(title)}" font-family="{escape(SVG_FONT)}">'
        f"<title>{escape(title)}</title>"
    )
    return (head + "".join(out) + "</svg>\n").encode("utf-8")


@dataclass(frozen=True)
class TexSegment:
    color: str  # hex, without '#'
    width: str  # the segment's share of the bar as a decimal fraction, for ``<width>\linewidth``
    share: str  # its percentage as text, printed inside a segment wide enough (``inside``)
    label: str
    inside: bool


def tex_chart(model: Model, activated: bool = False, lang: str = "en") -> dict[str, Any]:
    """The chart of a LaTeX write-up, for its template to draw with coloured rules (xcolor, in every LaTeX): the
    bars of :func:`svg_chart` (a segment of at least ``INSIDE`` carries its percentage inside it, the narrower ones are
    named under the bar) and the legend. No image file and no library: pdflatex cannot include SVG, and TikZ is not
    part of a basic TeX install."""
    if lang not in LANGS:
        raise LlmcountError(f"unknown language {lang!r}; choose one of {', '.join(LANGS)}")
    words = WORDS[lang]
    data = bars([model], activated, lang)
    shared = any(t.path.startswith("moe/shared") for t in model.derivation.terms)
    seen = list(dict.fromkeys(seg[0] for bar in data for seg in bar.segments))
    keys = sorted(seen, key=lambda k: (list(COLORS).index(k) if k in COLORS else len(COLORS), seen.index(k)))
    out = []
    for bar in data:
        segments = [
            TexSegment(
                color(key, keys).lstrip("#"),
                f"{float(share):.5f}",
                pct(share, typeset=True),
                label(key, lang),
                share >= INSIDE,
            )
            for key, _n, share in bar.segments
        ]
        caption = ", ".join(part for part in (bar.name, bar.activated, count(bar.total)) if part)
        out.append({"caption": caption, "segments": segments, "narrow": [s for s in segments if not s.inside]})
    legend = [(color(key, keys).lstrip("#"), label(key, lang, shared)) for key in keys]
    return {"title": words["title+activated" if activated else "title"], "bars": out, "legend": legend}
