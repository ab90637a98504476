"""The write-up: a blog-ready derivation of one model's parameter count, in Markdown or LaTeX, English or Chinese.

``build(spec, ...)`` gathers what the templates print and renders it. Everything numeric is computed here,
as exact integers and Fractions: the sections in reader's order with their counts and shares, the
leading-order term of one layer and its relative error, and the check against a checkpoint's
``model.safetensors.index.json``. The templates (``templates/writeup/``) only format, through filters.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sympy import Expr, Poly

from ..errors import LlmcountError
from ..formulas.derivation import _combine, _per_token
from ..formulas.hf import Model, read_config
from ..formulas.symbols import (
    GLOSSARY,
    N,
    N_dense,
    V,
    d,
    d_ff,
    d_moe,
    d_nope,
    d_rope,
    d_v,
    h,
    h_d,
    h_kv,
    n_pos,
    r_kv,
    r_q,
)

FORMATS = ("markdown", "latex")
LANGS = ("en", "zh")
CHART_SUFFIXES = {"markdown": (".png", ".svg", ".pdf"), "latex": (".png", ".pdf")}  # pdflatex can't include SVG

WIDTHS = (V, d, d_ff, h_d, n_pos, d_moe, r_q, r_kv, d_rope, d_nope, d_v)
"""Sizes that grow with the model's width; head and expert counts (h, n, k, ...) do not. A weight matrix is
a product of two widths (order 2), a norm scale, a bias or the router (d·n) has order 1."""


# --- sections ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One weight of a section: ``each`` parameters in each of ``copies`` layers."""

    name: str  # the module's name in the model code: q_proj, q_proj.bias, experts
    expr: Expr
    each: int
    layers: Expr
    copies: int
    bias: bool


@dataclass(frozen=True)
class Section:
    """The terms of one group (embedding, attention, moe, mlp, norms, head), evaluated."""

    key: str
    rows: tuple[Row, ...]
    groups: list  # [(layers, [per-layer exprs])] in reader's order, for ordered_latex / ordered_lines
    activated_groups: list
    count: int
    activated: int
    share: Fraction  # of the total
    activated_share: Fraction  # of the activated count

    def row(self, name: str) -> Row | None:
        return next((r for r in self.rows if r.name == name), None)

    @property
    def biased(self) -> list[Row]:
        return [r for r in self.rows if r.bias]


def _gather(terms, activated: bool = False) -> list:
    """Terms gathered under their layer count, like terms combined: ``Derivation.grouped`` for some terms."""
    groups: dict[Expr, list[Expr]] = {}
    for t in terms:
        groups.setdefault(t.layers, []).append(_per_token(t, activated))
    return [(layers, _combine(exprs)) for layers, exprs in groups.items()]


def sections(model: Model) -> list[Section]:
    """The model's terms as sections in reader's order; a tied model gets an empty ``head`` section."""
    counts = {c.path: c for c in model.counts.components}
    total, activated = model.counts.total, model.counts.activated
    by_group: dict[str, list] = {}
    for t in model.derivation.terms:
        by_group.setdefault(t.group, []).append(t)
    by_group.setdefault("head", [])
    result = []
    for key, terms in by_group.items():
        rows = tuple(
            Row(
                name=t.path.split("/", 1)[1],
                expr=t.expr,
                each=int(t.expr.subs(model.values)),
                layers=t.layers,
                copies=int(t.layers.subs(model.values)),
                bias=t.path.endswith(".bias"),
            )
            for t in terms
        )
        count = sum(counts[t.path].count for t in terms)
        active = sum(counts[t.path].activated for t in terms)
        result.append(
            Section(
                key=key,
                rows=rows,
                groups=_gather(terms),
                activated_groups=_gather(terms, activated=True),
                count=count,
                activated=active,
                share=Fraction(count, total),
                activated_share=Fraction(active, activated),
            )
        )
    return result


# --- one layer, to leading order (issue 4's llmcount/analysis/approx.py will own this; kept small here) ---------


def _order(expr: Expr) -> int:
    """How many width factors each monomial of ``expr`` has (terms of a layer are homogeneous)."""
    return Poly(expr, *WIDTHS).total_degree()


@dataclass(frozen=True)
class Leading:
    """One layer's count and its leading-order part (the weight matrices, quadratic in the widths)."""

    exact_terms: list
    exact: int
    terms: list  # the leading-order terms, in reader's order
    value: int
    coefficient: Fraction  # value / d², the "c" of "c·d²"
    error: Fraction  # (value - exact) / exact

    @property
    def rest(self) -> int:
        return self.exact - self.value


def leading(model: Model, activated: bool = False) -> Leading:
    """The leading-order terms of one layer (an MoE layer for MoE models; ``activated``: per token)."""
    exprs = model.derivation.layer_terms(activated=activated)
    top = max(_order(e) for e in exprs)
    kept = [e for e in exprs if _order(e) == top]
    exact = sum(int(e.subs(model.values)) for e in exprs)
    value = sum(int(e.subs(model.values)) for e in kept)
    width = model.values[d]
    return Leading(exprs, exact, kept, value, Fraction(value, width**2), Fraction(value - exact, exact))


CLASSIC = 12
"""The classic rule of thumb: a GPT-2 block has 4d² attention + 8d² MLP (d_ff = 4d) = 12d² parameters."""


# --- verification against a safetensors index ----------------------------------------------------------------------

DTYPES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}
_DTYPE_ALIASES = {
    "fp64": "float64",
    "f64": "float64",
    "double": "float64",
    "fp32": "float32",
    "f32": "float32",
    "float": "float32",
    "fp16": "float16",
    "f16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
    "fp8": "float8_e4m3fn",
    "f8_e4m3": "float8_e4m3fn",
    "float8": "float8_e4m3fn",
    "f8_e5m2": "float8_e5m2",
}
_LAYER = re.compile(r"(?:^|\.)(?:layers|h)\.(\d+)\.")
_BUFFERS = (".attn.bias", ".attn.masked_bias", "rotary_emb.inv_freq", "e_score_correction_bias")
_SCALES = ("_scale_inv", ".weight_scale", ".input_scale")


def dtype_size(name: str, where: str) -> tuple[str, int]:
    """``(canonical dtype, bytes per parameter)`` of a dtype name (``bf16``, ``torch.bfloat16``, ...)."""
    key = str(name).lower().removeprefix("torch.")
    key = _DTYPE_ALIASES.get(key, key)
    if key not in DTYPES:
        raise LlmcountError(f"{where}: unknown dtype {name!r}; choose one of {', '.join(DTYPES)}")
    return key, DTYPES[key]


@dataclass(frozen=True)
class Finding:
    """Something in the checkpoint that makes its size differ from the model's parameters."""

    kind: str  # tied_head | missing_head | extra_layers | buffers | scales
    count: int  # tensors
    examples: tuple[str, ...]
    params: int | None = None  # the parameters it accounts for, when the index says enough to know
    layers: tuple[int, ...] = ()

    @property
    def size(self) -> int | None:
        return None if self.params is None else abs(self.params)


@dataclass(frozen=True)
class Verification:
    """``metadata.total_size`` / bytes per parameter, against the formula."""

    path: str
    name: str  # the file's name, for the text
    dtype: str
    dtype_from: str  # "config" or "option"
    bytes: int
    total_size: int
    tensors: int
    shards: int
    formula: int
    findings: tuple[Finding, ...] = field(default=())

    @property
    def stored(self) -> int:
        return self.total_size // self.bytes

    @property
    def remainder(self) -> int:
        return self.total_size % self.bytes

    @property
    def difference(self) -> int:
        return self.stored - self.formula

    @property
    def gap(self) -> int:
        return abs(self.difference)

    @property
    def relative(self) -> Fraction:
        return Fraction(self.difference, self.formula)

    @property
    def explained(self) -> bool:
        """The findings of known size add up to the whole difference."""
        known = [f.params for f in self.findings]
        return self.remainder == 0 and None not in known and sum(known) == self.difference  # type: ignore[arg-type]


def _read_index(path: Path) -> tuple[int, dict[str, str]]:
    from ..sources import read_json

    if path.suffix == ".safetensors":
        raise LlmcountError(f"{path}: a safetensors file, not its index; pass model.safetensors.index.json")
    data = read_json(path)
    metadata = data.get("metadata") if isinstance(data, dict) else None
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    if isinstance(total, float) and total.is_integer():
        total = int(total)
    if isinstance(total, bool) or not isinstance(total, int) or total <= 0:
        raise LlmcountError(f"{path}: not a safetensors index: no positive integer metadata.total_size")
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map or not all(isinstance(v, str) for v in weight_map.values()):
        raise LlmcountError(f"{path}: not a safetensors index: no weight_map of tensor names to files")
    return total, weight_map


def _findings(model: Model, names: list[str]) -> list[Finding]:
    """What the tensor names tell about the difference between the checkpoint and the model's parameters."""
    found = []
    head = [name for name in names if name.endswith("lm_head.weight")]
    vocab_table = model.values[V] * model.values[d]
    if model.options.tied and head:
        found.append(Finding("tied_head", len(head), tuple(head), params=vocab_table))
    if not model.options.tied and not head:
        found.append(Finding("missing_head", 0, (), params=-vocab_table))
    layers = model.values[N]
    extra = sorted({int(m.group(1)) for name in names if (m := _LAYER.search(name)) and int(m.group(1)) >= layers})
    if extra:
        tensors = [name for name in names if (m := _LAYER.search(name)) and int(m.group(1)) >= layers]
        found.append(Finding("extra_layers", len(tensors), tuple(tensors[:2]), layers=tuple(extra)))
    buffers = [name for name in names if name.endswith(_BUFFERS)]
    if buffers:
        masks = [name for name in buffers if name.endswith(".attn.bias")]
        params = len(masks) * model.values[n_pos] ** 2 if n_pos in model.values and len(masks) == len(buffers) else None
        found.append(Finding("buffers", len(buffers), tuple(buffers[:2]), params=params))
    scales = [name for name in names if name.endswith(_SCALES)]
    if scales:
        found.append(Finding("scales", len(scales), tuple(scales[:1])))
    return found


def verify(model: Model, config: Mapping[str, Any], index: str | Path, dtype: str | None = None) -> Verification:
    """Compare ``metadata.total_size`` / bytes per parameter of an index with the formula's total.

    The dtype is ``dtype`` when given, else the config's ``torch_dtype`` (or ``dtype``)."""
    path = Path(index)
    total_size, weight_map = _read_index(path)
    if dtype is not None:
        name, size = dtype_size(dtype, "--dtype")
        source = "option"
    else:
        configured = model.dtype
        if not isinstance(configured, str):
            raise LlmcountError(
                f"{path}: cannot tell the checkpoint's dtype: the config has no torch_dtype; "
                f"pass --dtype (one of {', '.join(DTYPES)})"
            )
        name, size = dtype_size(configured, f"{path}: the config's torch_dtype")
        source = "config"
    names = sorted(weight_map)
    return Verification(
        path=str(path),
        name=path.name,
        dtype=name,
        dtype_from=source,
        bytes=size,
        total_size=total_size,
        tensors=len(names),
        shards=len(set(weight_map.values())),
        formula=model.counts.total,
        findings=tuple(_findings(model, names)),
    )


# --- the write-up ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variable:
    latex: str
    key: str
    meaning: str
    name: str
    value: int


def _config_key(key: str, title: str) -> str:
    """The glossary's key for this family: ``num_hidden_layers (GPT-2: n_layer)`` -> ``n_layer`` for GPT-2."""
    match = re.fullmatch(r"(.*) \((.+): (.+)\)", key)
    if not match:
        return key
    return match.group(3) if match.group(2) == title else match.group(1)


def variables(model: Model) -> list[Variable]:
    """The glossary rows of the symbols this model uses, with this model's values."""
    return [
        Variable(
            e.latex, _config_key(e.key, model.architecture.title), e.meaning, e.symbol.name, model.values[e.symbol]
        )
        for e in GLOSSARY
        if e.symbol in model.values and e.symbol in model.derivation.symbols
    ]


def features(model: Model) -> dict[str, Any]:
    """What the prose needs to know about the architecture, read off the terms and the values."""
    paths = {t.path for t in model.derivation.terms}
    v = model.values
    heads, kv_heads = v.get(h), v.get(h_kv)
    kind = None
    if kv_heads is not None:
        kind = "mha" if kv_heads == heads else "mqa" if kv_heads == 1 else "gqa"
    return {
        "moe": model.architecture.is_moe,
        "learned_positions": "embedding/wpe" in paths,
        "fused": "attention/c_attn" in paths,
        "mla": "attention/kv_b_proj" in paths,
        "q_lora": "attention/q_a_proj" in paths,
        "qk_norm": "attention/q_norm" in paths,
        "shared_experts": "moe/shared_experts" in paths,
        "dense_layers": model.derivation.per_dense_layer is not None,
        "classic_mlp": "mlp/c_fc" in paths,
        "experts_d_ff": model.architecture.expert_width == d_ff,  # Mixtral: experts as wide as d_ff
        "tied": model.options.tied,
        "layer_norm": model.architecture.norm == "layer",
        "attention_kind": kind,
        "group_size": heads // kv_heads if kind == "gqa" else None,
        "q_width": heads * v[h_d] if h_d in v else None,  # h·h_d, when it may differ from d
        "ff_ratio": Fraction(v[d_ff], v[d]) if d_ff in v else None,
        "moe_layers": v[N] - v.get(N_dense, 0),
    }


def context(
    model: Model,
    fmt: str,
    lang: str,
    verification: Verification | None = None,
    chart: str | None = None,
) -> dict[str, Any]:
    """Everything a write-up template prints, computed."""
    from ..presets import find

    preset = find(model.name) if model.source == f"preset {model.name}" else None
    counts = model.counts
    moe = model.architecture.is_moe
    layer = leading(model)
    classic = None if moe else CLASSIC * model.values[d] ** 2
    return {
        "fmt": fmt,
        "lang": lang,
        "model": model,
        "model_title": preset.model if preset else model.name,
        "hub_id": preset.hub_id if preset else None,
        "arch": model.architecture,
        "d": model.derivation,
        "counts": counts,
        "values": model.values,
        "v": {s.name: value for s, value in model.values.items()},
        "f": features(model),
        "variables": variables(model),
        "sections": sections(model),
        "embedding_share": Fraction(counts.embedding, counts.total),
        "non_embedding_share": Fraction(counts.non_embedding, counts.total),
        "activated_share": Fraction(counts.activated, counts.total),
        "layer": layer,
        "layer_activated": leading(model, activated=True) if moe else None,
        "classic": classic,
        "classic_error": None if classic is None else Fraction(classic - layer.exact, layer.exact),
        "verification": verification,
        "chart": chart,
    }


def render_writeup(
    model: Model,
    fmt: str = "markdown",
    lang: str = "en",
    verification: Verification | None = None,
    chart: str | None = None,
) -> str:
    """The write-up of ``model`` in ``fmt`` (markdown, latex) and ``lang`` (en, zh)."""
    from . import render

    _choose(fmt, FORMATS, "format")
    _choose(lang, LANGS, "language")
    return render(f"writeup/{fmt}.j2", **context(model, fmt, lang, verification, chart))


def _choose(value: str, choices: tuple[str, ...], what: str) -> None:
    if value not in choices:
        raise LlmcountError(f"unknown {what} {value!r}; choose one of {', '.join(choices)}")


def writeup_data(model: Model, verification: Verification | None) -> dict[str, Any]:
    """The numbers of a write-up, for ``--json``: exact integers; shares and errors as floats."""
    counts = model.counts
    layer = leading(model)
    data: dict[str, Any] = {
        "model": model.name,
        "family": model.architecture.name,
        "source": model.source,
        "total": counts.total,
        "activated": counts.activated,
        "embedding": counts.embedding,
        "non_embedding": counts.non_embedding,
        "sections": [
            {"key": s.key, "count": s.count, "activated": s.activated, "share": float(s.share)} for s in sections(model)
        ],
        "layer": {
            "exact": layer.exact,
            "leading": layer.value,
            "leading_over_d2": float(layer.coefficient),
            "relative_error": float(layer.error),
        },
        "verification": None,
    }
    if verification is not None:
        v = verification
        data["verification"] = {
            "index": v.path,
            "dtype": v.dtype,
            "bytes_per_parameter": v.bytes,
            "total_size": v.total_size,
            "stored_parameters": v.stored,
            "formula": v.formula,
            "difference": v.difference,
            "explained": v.explained,
            "findings": [{"kind": f.kind, "tensors": f.count, "parameters": f.params} for f in v.findings],
        }
    return data


# --- writing files: checked first, written whole or not at all ----------------------------------------------------


def check_target(path: str | Path, what: str = "output") -> Path:
    """A file we may write: its folder must exist and be a folder; raise before anything is computed."""
    target = Path(path).expanduser()
    folder = target.parent
    if target.is_dir():
        raise LlmcountError(f"{path}: is a folder; give a file name for the {what}")
    if not folder.exists():
        raise LlmcountError(f"{path}: cannot write the {what}: folder {folder} does not exist")
    if not folder.is_dir():
        raise LlmcountError(f"{path}: cannot write the {what}: {folder} is not a folder")
    if not os.access(folder, os.W_OK):
        raise LlmcountError(f"{path}: cannot write the {what}: folder {folder} is not writable")
    return target


def _mode(target: Path) -> int:
    """The permissions a new file gets (0666 less the umask), or those of the file it replaces."""
    if target.exists():
        return target.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def save(files: Mapping[Path, bytes]) -> None:
    """Write each file through a temporary file in its own folder and a rename: whole or not at all."""
    for target, data in files.items():
        try:
            fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        except OSError as exc:
            raise LlmcountError(f"{target}: cannot write: {exc.strerror or exc}") from None
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.chmod(temp, _mode(target))
            os.replace(temp, target)
        except OSError as exc:
            Path(temp).unlink(missing_ok=True)
            raise LlmcountError(f"{target}: cannot write: {exc.strerror or exc}") from None


_TEX_UNSAFE = re.compile(r"[\s%#{}\\$&~^]")


def _link(image: Path, post: Path | None, fmt: str) -> str:
    """The chart's path as the post refers to it: relative to the post's folder (or the current one)."""
    link = Path(os.path.relpath(image.resolve(), (post.parent if post else Path()).resolve())).as_posix()
    if fmt == "markdown":
        return quote(link)
    if _TEX_UNSAFE.search(link):
        raise LlmcountError(
            f"{image}: LaTeX cannot include a file whose path has spaces or any of % # {{ }} \\ $ & ~ ^"
        )
    return link


@dataclass(frozen=True)
class WriteUp:
    text: str
    data: dict[str, Any]
    files: dict[Path, bytes]  # what to write: the post with -o, the chart with --chart


def build(
    spec: str,
    fmt: str = "markdown",
    lang: str = "en",
    *,
    output: str | None = None,
    chart: str | None = None,
    index: str | None = None,
    dtype: str | None = None,
) -> WriteUp:
    """The write-up of the model ``spec`` names, with its chart and its verification against ``index``.

    Output paths are checked before anything is computed; nothing is written here (see :func:`save`)."""
    from ..sources import resolve

    _choose(fmt, FORMATS, "format")
    _choose(lang, LANGS, "language")
    out = check_target(output) if output else None
    image = check_target(chart, "chart") if chart else None
    if image is not None and image.suffix.lower() not in CHART_SUFFIXES[fmt]:
        allowed = ", ".join(CHART_SUFFIXES[fmt])
        raise LlmcountError(f"{chart}: a {fmt} write-up can link a chart of type {allowed}")
    link = _link(image, out, fmt) if image is not None else None
    name, source, config = resolve(spec)
    model = read_config(config, source, name)
    verification = verify(model, config, index, dtype) if index else None
    files: dict[Path, bytes] = {}
    if image is not None:
        from .charts import render_chart

        files[image] = render_chart([model], image.suffix.lower().lstrip("."), activated=model.architecture.is_moe)
    text = render_writeup(model, fmt, lang, verification, link)
    if out is not None:
        files[out] = text.encode("utf-8")
    data = {**writeup_data(model, verification), "format": fmt, "lang": lang, "output": output, "chart": chart}
    return WriteUp(text, data, files)
