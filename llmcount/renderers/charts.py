"""Charts of where a model's parameters sit: one stacked bar per model (and per activated count), in
PNG, SVG or PDF. matplotlib is an optional extra (``pip install 'llmcount[plot]'``), imported only here,
inside the functions, so that the rest of llmcount never loads it."""

from __future__ import annotations

import io
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..errors import LlmcountError
from ..formulas.config import Model
from .filters import count, pct

FORMATS = ("png", "svg", "pdf")
INSTALL_HINT = "charts need matplotlib: pip install 'llmcount[plot]'"

LABELS = {
    "embedding": "Token embedding",
    "attention": "Attention",
    "moe": "MoE (experts, router)",
    "mlp": "MLP",
    "norms": "Norms",
    "head": "LM head",
}
COLORS = {  # colour-blind-safe (Okabe-Ito), one per component, the same in every chart
    "embedding": "#E69F00",
    "attention": "#56B4E9",
    "moe": "#009E73",
    "mlp": "#0072B2",
    "norms": "#CC79A7",
    "head": "#D55E00",
}
INSIDE = Fraction(6, 100)  # a segment at least this wide carries its percentage inside the bar


@dataclass(frozen=True)
class Bar:
    """One stacked bar: a model's parameters (or activated parameters) by component."""

    label: str
    total: int
    segments: tuple[tuple[str, int, Fraction], ...]  # (component, parameters, share)


def bars(models: list[Model], activated: bool = False) -> list[Bar]:
    """The bars of a chart: each model's total and, with ``activated``, an MoE model's activated count."""
    from .writeup import sections

    result = []
    for model in models:
        parts = sections(model)
        result.append(Bar(model.name, model.counts.total, tuple((s.key, s.count, s.share) for s in parts if s.count)))
        if activated and model.architecture.is_moe:
            segments = tuple((s.key, s.activated, s.activated_share) for s in parts if s.activated)
            result.append(Bar(f"{model.name} (activated)", model.counts.activated, segments))
    return result


def chart_data(models: list[Model], activated: bool = False) -> dict[str, Any]:
    """The JSON form of a chart: exact counts and shares per component."""
    return {
        "activated": activated,
        "bars": [
            {
                "label": bar.label,
                "total": bar.total,
                "components": [{"component": key, "count": n, "share": float(share)} for key, n, share in bar.segments],
            }
            for bar in bars(models, activated)
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


def render_chart(models: list[Model], fmt: str = "png", activated: bool = False) -> bytes:
    """The chart as PNG/SVG/PDF bytes: a 100% stacked bar per model, percentages inside wide segments
    and beside the bar for narrow ones."""
    if fmt not in FORMATS:
        raise LlmcountError(f"unknown chart format {fmt!r}; choose one of {', '.join(FORMATS)}")
    plt = _pyplot()
    data = bars(models, activated)
    with plt.rc_context({"font.size": 11, "svg.hashsalt": "llmcount", "svg.fonttype": "path"}):
        fig, ax = plt.subplots(figsize=(11, 1.6 + 0.75 * len(data)), layout="constrained")
        for row, bar in enumerate(data):
            left = Fraction(0)
            narrow = []
            for key, _count, share in bar.segments:
                ax.barh(
                    row, float(share) * 100, left=float(left) * 100, height=0.62, color=COLORS[key], edgecolor="white"
                )
                if share >= INSIDE:
                    ax.text(
                        float(left + share / 2) * 100,
                        row,
                        pct(share),
                        ha="center",
                        va="center",
                        color="white",
                        fontsize=10,
                        fontweight="bold",
                    )
                else:
                    narrow.append(f"{LABELS[key]} {pct(share)}")
                left += share
            if narrow:
                ax.text(101, row, "\n".join(narrow), ha="left", va="center", fontsize=8.5, color="#333333")
        ax.set_yticks(range(len(data)), [f"{bar.label}\n{count(bar.total)}" for bar in data])
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel("share of parameters (%)")
        kind = "total and activated per token" if activated else "by component"
        ax.set_title(f"Where the parameters sit: {kind}", fontsize=13, fontweight="bold", loc="left")
        ax.spines[["top", "right"]].set_visible(False)
        used = [key for key in LABELS if any(key == seg[0] for bar in data for seg in bar.segments)]
        handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[key]) for key in used]
        fig.legend(handles, [LABELS[key] for key in used], loc="outside lower center", ncols=len(used), frameon=False)
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


def chart(specs: list[str], output: str, activated: bool = False) -> Chart:
    """The chart of the models ``specs`` name, to be written to ``output`` (see writeup.save)."""
    from ..sources import load
    from .writeup import check_target

    target = check_target(output, "chart")
    fmt = chart_format(output)  # the name asked for, not the file a symlink points to
    _pyplot()  # say how to install matplotlib before loading anything
    models = [load(spec) for spec in specs]
    return Chart({**chart_data(models, activated), "output": output}, {target: render_chart(models, fmt, activated)})
