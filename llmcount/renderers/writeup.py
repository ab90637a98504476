"""The write-up: a blog-ready derivation of one model's parameter count, in Markdown or LaTeX, English or Chinese.

``build(spec, ...)`` gathers what the templates print and renders it. Everything numeric is computed here,
as exact integers and Fractions: the sections in reader's order with their counts and shares, the
leading-order term of one layer and its relative error, and the check against a checkpoint's
``model.safetensors.index.json``. The templates (``templates/writeup/``) only format, through filters.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import stat
import tempfile
import time
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sympy import Expr, Poly

from .. import files
from ..analysis.approx import top_terms
from ..checkpoint import TORCH_DTYPES, Finding, findings, read_index, torch_dtype, total_size
from ..errors import LlmcountError
from ..files import user_path
from ..formulas.config import Model, config_key, read_config
from ..formulas.derivation import Counts, evaluate_int, gather
from ..formulas.expressions import RecordError, formula
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
    k,
    n,
    n_pos,
    n_s,
    r_kv,
    r_q,
)
from .attention_kinds import attention_kinds
from .card import card_check
from .filters import latex
from .tree import Names, module_tree, printed_tree

FORMATS = ("markdown", "latex", "html")
SECTIONS = ("tree", "params", "weights", "formula", "embedding", "leading", "shares", "flops", "memory", "attention")
"""The parts of a post --sections chooses, in the post's order: tree (the module tree as ``print(model)`` shows
it), params (notation, one section per component with its formula, the total and the activated count as sums of the
components, the model card), weights (each component's table of weights: formula, count, copies), formula (the total
and activated counts as one formula of the config's sizes, substituted), embedding (embedding and non-embedding
parameters), leading (one layer to leading order, the 12·d² rule), shares (where the parameters sit, the chart),
flops (forward FLOPs per token at S), memory (weights per dtype, the KV cache per token), attention (MHA, GQA, MQA
and MLA compared, the model's own kind substituted). The check against a checkpoint comes with --index."""
DEFAULT_SECTIONS = ("tree", "params", "shares")
"""A post as the posts it serves are written: the architecture, each module's formula, the total, the activated
parameters of an MoE model, the shares. The rest (the long form, costs) is asked for with --sections."""
ALL = "all"
"""``--sections all``: every part but the optional ones (the long form)."""
OPTIONAL_SECTIONS = ("training", "quant")
"""Parts a post has only when asked: training (model states and activations per GPU, ``--training``), quant (the
scheme and its bits per weight by tensor class, for a config that declares one)."""
ALL_SECTIONS = SECTIONS + OPTIONAL_SECTIONS
DEFAULT_SEQ = 4096
"""The sequence length S of the flops and memory sections unless --seq says otherwise."""
FLAVORS = ("dollars", "commonmark")
"""How a Markdown post writes its math: $…$ and $$…$$ (KaTeX, MathJax, most math extensions), or for a renderer
with none, $`…`$ and ```math fences, which plain CommonMark keeps as code."""
LANGS = ("en", "zh")
CHART_SUFFIXES = {"markdown": (".png", ".svg", ".pdf"), "latex": (".png", ".pdf")}  # pdflatex can't include SVG
# html: the chart is drawn inline (SVG) into the page, so there is no chart file to link

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
    note: str = ""  # the family record's note on this weight


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
    skipped: list | None = None  # [(layers, [expr / n])]: the routed experts a token skips are these times (n - k)

    @property
    def described(self) -> bool:
        """Whether the write-up's own prose covers exactly these modules; if not, the post explains the section
        from the family record's notes, so that a new family never gets another family's description."""
        names = {r.name.removesuffix(".bias") for r in self.rows}
        if self.key in PROSE_UNBIASED and self.biased:
            return False
        if names not in PROSE_COVERS.get(self.key, []):
            return False
        forms = PROSE_FORMS.get(self.key, {})
        return all(
            any((r.expr - form).expand() == 0 for form in forms[r.name])
            for r in self.rows
            if not r.bias and r.name in forms
        )

    def row(self, name: str) -> Row | None:
        return next((r for r in self.rows if r.name == name), None)

    @property
    def biased(self) -> list[Row]:
        return [r for r in self.rows if r.bias]


PROSE_COVERS = {  # the modules each section's written-out prose (writeup/<lang>.j2) describes, set by set
    "embedding": [{"embed_tokens"}, {"wte", "wpe"}],
    "attention": [
        {"q_proj", "k_proj", "v_proj", "o_proj"},
        {"q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm"},
        {"c_attn", "c_proj"},
        {"q_a_proj", "q_a_layernorm", "q_b_proj", "kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj", "o_proj"},
        {"q_proj", "kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj", "o_proj"},
    ],
    "mlp": [{"c_fc", "c_proj"}, {"gate_proj", "up_proj", "down_proj"}],
    "moe": [{"router", "experts"}, {"router", "experts", "shared_experts"}],
    "norms": [{"ln_1", "ln_2", "ln_f"}, {"input_layernorm", "post_attention_layernorm", "norm"}],
    "head": [set(), {"lm_head"}],
}


_q_mla = d * h * (d_nope + d_rope)
PROSE_FORMS = {  # the weights of one layer the prose states, by section and module: another form is the notes' to say
    "embedding": {"embed_tokens": [V * d], "wte": [V * d], "wpe": [n_pos * d]},
    "attention": {
        "q_proj": [d * h * h_d, _q_mla],
        "k_proj": [d * h_kv * h_d],
        "v_proj": [d * h_kv * h_d],
        "o_proj": [h * h_d * d, h * d_v * d],
        "q_norm": [h_d],
        "k_norm": [h_d],
        "c_attn": [3 * d * d],
        "c_proj": [d * d],
        "q_a_proj": [d * r_q],
        "q_a_layernorm": [r_q],
        "q_b_proj": [_q_mla / d * r_q],
        "kv_a_proj_with_mqa": [d * (r_kv + d_rope)],
        "kv_a_layernorm": [r_kv],
        "kv_b_proj": [h * r_kv * (d_nope + d_v)],
    },
    "mlp": {name: [d * d_ff] for name in ("gate_proj", "up_proj", "down_proj", "c_fc", "c_proj")},
    "moe": {
        "router": [d * n],
        "experts": [3 * d * d_moe * n, 3 * d * d_ff * n],
        "shared_experts": [3 * n_s * d * d_moe],
    },
    "norms": {name: [d] for name in ("input_layernorm", "post_attention_layernorm", "norm")}
    | {name: [2 * d] for name in ("ln_1", "ln_2", "ln_f")},
    "head": {"lm_head": [V * d]},
}


PROSE_UNBIASED = {"moe"}  # sections whose written-out prose says their weights have no bias (gpt-oss' have)


def _rows(terms, values) -> tuple[Row, ...]:
    """The weights of ``terms`` evaluated with ``values``, one row each."""
    return tuple(
        Row(
            name=t.path.split("/", 1)[1],
            expr=t.expr,
            each=int(t.expr.subs(values)),
            layers=t.layers,
            copies=int(t.layers.subs(values)),
            bias=t.path.endswith(".bias"),
            note=t.note,
        )
        for t in terms
    )


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
        rows = _rows(terms, model.values)
        count = sum(counts[t.path].count for t in terms)
        active = sum(counts[t.path].activated for t in terms)
        result.append(
            Section(
                key=key,
                rows=rows,
                groups=model.derivation.grouped(terms=terms),
                activated_groups=model.derivation.grouped(True, terms),
                count=count,
                activated=active,
                share=Fraction(count, total),
                activated_share=Fraction(active, activated),
                skipped=_skipped(terms, model.values, count - active),
            )
        )
    return result


def _skipped_moe(parts: list[Section]) -> Section | None:
    """The one mixture-of-experts section whose routed experts are all a token leaves out (its ``skipped``), when
    every other part runs in full: the activated count is then the total less those experts' ``n - k``."""
    moe = [s for s in parts if s.key == "moe"]
    if len(moe) != 1 or moe[0].skipped is None or any(s.activated != s.count for s in parts if s.key != "moe"):
        return None
    return moe[0]


def _skipped(terms: list, values: Mapping, gap: int) -> list | None:
    """The routed expert weights a token does not use, as ``[(layers, [expr / n])]`` times :math:`n - k`: the
    activated count of a block is its count minus these (``P_moe - N\\,3\\,d\\,d_{moe}\\,(n - k)``). None when the
    block has no routed weight, when they sit on layers of several counts, or when a weight is not ``n`` times a
    per-expert size; the post then derives the activated count in full."""
    routed = [t for t in terms if t.routed]
    groups = gather((t.layers, t.expr / n) for t in routed)
    if not routed or len(groups) != 1 or any(n in e.free_symbols for _, exprs in groups for e in exprs):
        return None
    layers, exprs = groups[0]
    return groups if evaluate_int(layers * sum(exprs) * (n - k), dict(values), "routed") == gap else None


PART_KEYS = {"vision tower": "vision", "projector": "projector", "audio tower": "audio"}
"""The section key of each part of a whole composite model besides its language model."""


def part_sections(model: Model) -> list[Section]:
    """One section per part of a whole composite model (vision tower, projector), after the language model's, with
    shares of the whole model; empty when the model is not a whole composite."""
    whole = model.whole_total
    if whole is None:
        return []
    activated = model.counts.activated + sum(part.model.counts.activated for part in model.parts)
    result = []
    for part in model.parts:
        derivation, values, counts = part.model.derivation, part.model.values, part.model.counts
        rows = _rows(derivation.terms, values)
        result.append(
            Section(
                key=PART_KEYS.get(part.role, part.role.removesuffix(" tower").replace(" ", "_")),
                rows=rows,
                groups=derivation.grouped(),
                activated_groups=derivation.grouped(True),
                count=counts.total,
                activated=counts.activated,
                share=Fraction(counts.total, whole),
                activated_share=Fraction(counts.activated, activated),
            )
        )
    return result


def whole_counts(model: Model) -> Counts:
    """The counts of the whole composite model: the language model's and its parts' summed."""
    every = (model.counts, *(part.model.counts for part in model.parts))
    return Counts(
        total=sum(c.total for c in every),
        activated=sum(c.activated for c in every),
        embedding=sum(c.embedding for c in every),
        components=tuple(component for c in every for component in c.components),
        values={name: value for c in reversed(every) for name, value in c.values.items()},
    )


def post_sections(model: Model) -> tuple[list[Section], Counts]:
    """The sections a post derives and the counts they add up to: the language model's, and for a whole composite
    model its parts after them, with shares of the whole model."""
    parts = sections(model)
    if model.whole_total is None:
        return parts, model.counts
    counts = whole_counts(model)
    parts = parts + part_sections(model)
    return [
        replace(p, share=Fraction(p.count, counts.total), activated_share=Fraction(p.activated, counts.activated))
        for p in parts
    ], counts


CHECK_COMMENT = {"en": "shapes only, no memory", "zh": "只建形状，不分配内存"}
"""The comment on the line that builds the model on the meta device, in the post's language."""


def check_code(model: Model, preset: Any, total: int, lang: str = "en") -> str:
    """The few lines of Python that build ``model`` on PyTorch's meta device with transformers and print its
    parameter count (``total``): what a reader runs to check the post, its comment in ``lang``."""
    cls = model.composite.model if model.whole_total is not None else printed_tree(model).split("(", 1)[0]
    where = preset.hub_id if preset and preset.hub_id else "path/to/the/model"  # the folder holding config.json
    return "\n".join(
        [
            "import torch",
            f"from transformers import AutoConfig, {cls}",
            "",
            f'config = AutoConfig.from_pretrained("{where}")',
            f'with torch.device("meta"):  # {CHECK_COMMENT[lang]}',
            f"    model = {cls}(config)",
            f'print(f"{{sum(p.numel() for p in model.parameters()):,}}")  # {total:,}',
        ]
    )


ELIDED = "..."
"""The line a post's module tree shows in place of layer groups that repeat groups printed above."""


@dataclass(frozen=True)
class Abridged:
    """A printed module tree as a post shows it: each kind of layer group once, the repeats left out."""

    text: str
    left_out: str = ""  # the layer indices of the groups left out, as print(model) labels them ("4-6, 8-10, ...")
    first: str = ""  # the first index left out
    last: str = ""  # the last index left out
    inner: bool = False  # a module inside a layer group shown as `...`: the same module printed in full above


ELIDED_LINES = 3
"""A module's lines are elided when it repeats one printed above and holds at least this many: shorter ones are
quicker to read than the note saying where they are."""


def _block_end(lines: list[str], i: int, indent: str) -> int:
    """The index of the line closing the block opened at ``lines[i]`` (its ``)`` at the same indent)."""
    return next(j for j in range(i + 1, len(lines)) if lines[j] == f"{indent})")


def abridged(printed: str) -> Abridged:
    """``printed`` (``print(model)``'s text) with every layer group that repeats an earlier one (the same modules
    and shapes; a hybrid model's alternating linear and full attention layers print one group per run) replaced by one
    ``...`` line, and inside the groups shown, the body of a module that repeats one printed above (the same name,
    class and lines: DeepSeek's attention in its dense and its MoE layers) replaced by ``...``: the lines shown stay
    transformers' own."""
    lines = printed.split("\n")
    header = re.compile(r"^(\s*)\((\d+(?:-\d+)?)\): (?:\d+ x )?(.*)$")
    out, seen, dropped, i = [], set(), [], 0
    while i < len(lines):
        line = lines[i]
        match = header.match(line)
        if not match:
            out.append(line)
            i += 1
            continue
        indent, label, rest = match.groups()
        end = _block_end(lines, i, indent) if rest.endswith("(") else i
        body = (indent, rest, *lines[i + 1 : end + 1])
        if body in seen:
            if not dropped or out[-1] != f"{indent}{ELIDED}":
                out.append(f"{indent}{ELIDED}")
            dropped.append(label)
        else:
            seen.add(body)
            out.extend(lines[i : end + 1])
        i = end + 1
    out, runs = _repeated_runs(out)
    out, inner = _inner_repeats(out)
    inner = inner or runs
    if not dropped:
        return Abridged("\n".join(out), inner=inner)
    first, last = dropped[0].split("-")[0], dropped[-1].split("-")[-1]
    return Abridged("\n".join(out), ", ".join(dropped), first, last, inner)


def _repeated_runs(lines: list[str]) -> tuple[list[str], bool]:
    """``lines`` with each run of a layer group's modules that repeat, line for line, the same modules of a group
    printed above (a hybrid's attention layer has the MoE block and the norms of the linear-attention layers above)
    replaced by one ``...`` line, when the run holds at least two lines and the group has a module of its own (a
    group of modules all printed above keeps their names, their bodies elided by :func:`_inner_repeats`)."""
    header = re.compile(r"^(\s*)\((\d+(?:-\d+)?)\): (?:\d+ x )?(.*)\($")
    out, seen, elided, i = [], set(), False, 0
    while i < len(lines):
        match = header.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        indent = match.group(1)
        end = _block_end(lines, i, indent)
        children, j = [], i + 1
        while j < end:  # the group's modules: a line each, or a block to its closing line
            child = lines[j]
            last = _block_end(lines, j, indent + "  ") if child.endswith("(") else j
            children.append(tuple(lines[j : last + 1]))
            j = last + 1
        out.append(lines[i])
        if all(child in seen for child in children):  # a layer of modules all printed above: each shown by name
            out.extend(line for child in children for line in child)
            out.append(lines[end])
            i = end + 1
            continue
        run: list[tuple[str, ...]] = []
        for child in [*children, None]:
            if child is not None and child in seen:
                run.append(child)
                continue
            if sum(len(c) for c in run) >= 2:
                out.append(f"{indent}  {ELIDED}")
                elided = True
            else:
                out.extend(line for c in run for line in c)
            run = []
            if child is not None:
                out.extend(child)
        seen.update(children)
        out.append(lines[end])
        i = end + 1
    return out, elided


def _inner_repeats(lines: list[str]) -> tuple[list[str], bool]:
    """``lines`` with the body of every named module that repeats one printed above replaced by one ``...`` line."""
    opener = re.compile(r"^(\s*)\(([A-Za-z_]\w*)\): \w+\($")
    out, seen, elided, i = [], set(), False, 0
    while i < len(lines):
        match = opener.match(lines[i])
        if match:
            indent = match.group(1)
            end = _block_end(lines, i, indent)
            key = tuple(line[len(indent) :] for line in lines[i:end])
            if key in seen and end - i - 1 >= ELIDED_LINES:
                out += [lines[i], f"{indent}  {ELIDED}", lines[end]]
                elided, i = True, end + 1
                continue
            seen.add(key)
        out.append(lines[i])
        i += 1
    return out, elided


@dataclass(frozen=True)
class Slice:
    """One slice of a pie chart: a section, or the small sections together."""

    sections: tuple[Section, ...]
    count: int
    share: Fraction


PIE_SMALL = Fraction(3, 100)
"""Sections under this share of a pie are drawn as one slice: side by side, their labels would overprint."""


def pie(parts: list[Section]) -> list[Slice]:
    """The slices of a pie of ``parts``, in reader's order; two or more sections under PIE_SMALL are one slice,
    last."""
    items = [(s, s.count) for s in parts if s.count]
    whole = sum(n for _, n in items)
    small = [(s, n) for s, n in items if Fraction(n, whole) < PIE_SMALL]
    if len(small) < 2:
        small = []
    slices = [Slice((s,), n, Fraction(n, whole)) for s, n in items if (s, n) not in small]
    if small:
        rest = sum(n for _, n in small)
        slices.append(Slice(tuple(s for s, _ in small), rest, Fraction(rest, whole)))
    return slices


# --- one layer, to leading order ----------------------------------------------------------------------------------
# Not ``llmcount approx``'s definition: that one substitutes the config's ratios and keeps the top power of d as
# the width grows with the head counts (h, h_kv) and the head sizes fixed; this one keeps, at the config's values,
# the terms quadratic in the sizes (WIDTHS, head sizes included) with head and expert counts fixed: the weight
# matrices. They differ on MLA (kv_a_proj's d·d_rope is a matrix here, linear in d there).


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

    @property
    def rest_terms(self) -> list:
        """The terms left out (biases, norm scales, the router), in reader's order."""
        return [e for e in self.exact_terms if e not in self.terms]


def leading(model: Model, activated: bool = False) -> Leading:
    """The leading-order terms of one layer (an MoE layer for MoE models; ``activated``: per token)."""
    exprs = model.derivation.layer_terms(activated=activated)
    if not exprs:  # no weights repeated per layer (HRM's blocks are counted as a whole)
        raise LlmcountError(f"{model.name}: no per-layer terms to approximate")
    kept = top_terms(exprs, _order)
    exact = sum(int(e.subs(model.values)) for e in exprs)
    value = sum(int(e.subs(model.values)) for e in kept)
    width = model.values[d]
    return Leading(exprs, exact, kept, value, Fraction(value, width**2), Fraction(value - exact, exact))


CLASSIC = 12
"""The classic rule of thumb: a GPT-2 block has 4d² attention + 8d² MLP (d_ff = 4d) = 12d² parameters."""


# --- forward FLOPs and memory ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FlopsPart:
    """Forward FLOPs per token at S (eager attention over the full S×S matrix, :data:`flops.CONVENTION`; layers that
    keep a state: their sequence mixing as transformers' torch path computes it, :data:`flops.STATE_CONVENTION`);
    or, for a family the FLOPs formula refuses, why: ``refused`` is "attention" (no [attention] and no [[state]] in
    its record), "states" (a kind of state layer without a FLOPs formula) or "longest" (S beyond the longest sequence
    its [attention] describes, ``longest``)."""

    seq: int
    groups: list | None = None  # [(layers, [per-layer exprs])] of FLOPs per token, for the derive macro
    values: dict | None = None  # the config's values and S
    per_token: int | Fraction = 0  # a mean: a fraction when the convolutions' extra outputs or chunk padding add some
    attention: int = 0  # of which the score and value matmuls QK^T and AV
    linear: int = 0  # of which the weights of the layers (2 per parameter, routed experts k of n)
    head: int = 0  # of which the LM head, 2·d·V
    state: int | Fraction = 0  # of which the sequence mixing of the state layers (convolutions, scans)
    state_kinds: tuple[str, ...] = ()  # the state layers' kinds (mamba, linear_attention, ...)
    refused: str | None = None
    longest: int | None = None  # refused "longest": the longest S the record's attention describes
    beyond: int | None = None  # S is past that longest S and the record's [[flops]] say what runs there

    @property
    def attention_share(self) -> Fraction:
        return Fraction(self.attention, self.per_token)

    @property
    def state_share(self) -> Fraction:
        return Fraction(self.state) / Fraction(self.per_token)


def flops_part(model: Model, seq: int = DEFAULT_SEQ) -> FlopsPart:
    from ..formulas.flops import Flops, state_flops
    from ..formulas.symbols import S

    family = model.architecture
    try:
        state_flops(model.derivation)  # refuses a kind of state layer without a formula
    except LlmcountError:
        missing = any(state.flops is None for state in family.states)
        return FlopsPart(seq, refused="states" if missing else "attention")
    try:
        flops = Flops(model.derivation).at(model.values, seq)  # past the longest S: what the record says runs there
    except LlmcountError:  # the model runs an attention the record does not describe
        return FlopsPart(seq, refused="longest", longest=family.attention.limit(model.values))
    counts = flops.evaluate(model.values, seq, 1)
    by_kind: dict[str, Fraction] = {"attention": Fraction(0), "head": Fraction(0), "linear": Fraction(0)}
    by_kind["state"] = Fraction(0)
    scans = {op.path: state.name for state in family.states for op in state.flops or ()}
    for c in counts.components:  # a kind of layer this config has none of has no component
        if c.path in scans:
            kind = "state"
        elif c.path.startswith(("attention/scores", "attention/values")) or _extra_scores(c.path):
            kind = "attention"
        else:
            kind = "head" if c.path == "head/lm_head" else "linear"
        by_kind[kind] += Fraction(c.flops, seq)
    assert sum(by_kind.values()) == counts.per_token
    parts = {kind: _whole(value) for kind, value in by_kind.items()}
    kinds = tuple(dict.fromkeys(scans[c.path] for c in counts.components if c.path in scans))
    past = family.attention.limit(model.values) if flops.beyond else None
    values = {**model.values, S: seq}
    return FlopsPart(seq, flops.grouped(), values, counts.per_token, **parts, state_kinds=kinds, beyond=past)


def _extra_scores(path: str) -> bool:
    """Scores of a record's ``[[flops]]`` in the attention (an indexer's, those over compressed entries): they grow
    with S as the attention scores do."""
    return path.startswith("attention/") and path.endswith(".scores")


def _whole(value: Fraction) -> int | Fraction:
    """An int when the fraction is whole."""
    return value.numerator if value.denominator == 1 else value


@dataclass(frozen=True)
class KvKind:
    """The cache of one kind of layer at S tokens (full, sliding or chunked attention)."""

    kind: str
    layers: int
    bytes: int
    tokens: int  # the tokens each of these layers keeps: S, or min(S, W - 1) with a window


@dataclass(frozen=True)
class MemoryPart:
    """Weights in every dtype of the table, and the KV cache per token (``kv_groups``: elements per token over
    all attention layers, to derive) in ``kv_dtype``; ``kv_groups`` is None for a family whose record says
    nothing of what its layers cache."""

    parameters: int
    rows: list  # capacity.WeightRow: name, bits, bytes, note
    dtype: str  # the dtype of the derivation line: the config's when it is one of the table's, else bf16
    dtype_from_config: bool
    bytes_per_parameter: Fraction
    weights: int
    seq: int
    kv_dtype: str = "bf16"
    kv_groups: list | None = None
    kv_elements: int = 0
    kv_bytes: int = 0  # per token, over all attention layers
    kv_seq_bytes: int = 0  # for S tokens of one sequence, windows applied
    kinds: tuple[KvKind, ...] = ()
    expanded_groups: list | None = None  # MLA: the keys and values expanded to h heads, elements per token
    expanded_elements: int = 0
    states: bool = False  # some layers keep a fixed recurrent state instead (not derived here)
    kv_fp32_indexer: bool = False  # the indexer keys in the cache are kept in fp32 (4 bytes per element)
    indexer: KvKind | None = None  # the indexer keys some layers cache besides, all S tokens
    longest: int | None = None  # not derived: S is longer than the record's attention describes (this S)
    beyond_empty: bool = False  # ... and the record says the layers keep nothing in the cache there
    grown: bool = False  # some layers keep more than keys and values per token (a record's [[cache]]): kv_seq_bytes


def kv_groups(spec) -> list:
    """KV-cache elements per token as ``[(layers, per-layer elements)]``: the full layers that cache, then the
    sliding ones."""
    return [(spec.cache_layers - spec.cache_windowed, spec.kv), (spec.cache_windowed, spec.sliding_kv)]


def memory_part(model: Model, seq: int = DEFAULT_SEQ) -> MemoryPart:
    from ..dtypes import BITS, lookup
    from ..formulas import memory
    from ..formulas.capacity import TABLE_DTYPES, weights_table

    # the whole model's weights where a composite's parts are counted (the vision tower and projector with the
    # language model), as `llmcount memory` puts them in its weights line
    parameters = model.whole_total or model.counts.total
    rows = [r for r in weights_table(parameters) if r.name != "fp16"]  # fp16: bf16's size, one row says it
    try:
        configured = lookup(model.dtype).name if isinstance(model.dtype, str) else None
    except LlmcountError:
        configured = None
    name = configured if configured in TABLE_DTYPES else "bf16"
    weights = memory.nbytes(parameters, name)
    part = MemoryPart(parameters, rows, name, configured == name, Fraction(BITS[name], 8), weights, seq)
    family = model.architecture
    spec = family.attention
    if spec is None:
        return MemoryPart(**{**part.__dict__, "states": bool(family.states)})
    limit = spec.limit(model.values)
    if limit is not None and seq > limit:  # beyond_kv 0: the layers the model runs there keep nothing
        empty = spec.beyond_kv is not None and evaluate_int(spec.beyond_kv, model.values, "KV cache beyond") == 0
        return MemoryPart(**{**part.__dict__, "longest": limit, "beyond_empty": empty})
    kv_dtype = "bf16"
    values = model.values
    inference = memory.inference(model.derivation, values, name if BITS[name] >= 16 else "bf16", kv_dtype, seq, 1)
    if family.caches:  # no per-token formula: the bytes of one sequence at S, as `llmcount memory` gives them
        return MemoryPart(**{**part.__dict__, "grown": True, "kv_seq_bytes": inference.bytes_of("kv_cache")})
    elements = evaluate_int(memory.kv_elements_per_token(spec, values=values), values, "KV cache per token")

    def layer_bytes(kind: str) -> int:
        width = spec.widths(sliding=kind != "full_attention")[2]
        return memory.nbytes(evaluate_int(width, values, "KV cache per layer"), kv_dtype)

    kinds = tuple(
        KvKind(a.kind, a.layers, a.bytes, a.bytes // (a.layers * layer_bytes(a.kind)))
        for a in inference.per_layer_kind
        if a.kind.endswith("_attention")
    )
    indexer = next(
        (KvKind(a.kind, a.layers, a.bytes, seq) for a in inference.per_layer_kind if a.kind == "indexer"), None
    )
    groups = [(spec.cache_layers, [spec.kv])]
    if spec.sliding_kv is not None and spec.cache_windowed.free_symbols <= set(values):
        groups = [(layers, [kv]) for layers, kv in kv_groups(spec) if layers.subs(values) != 0]
    if spec.indexed is not None and spec.indexed.subs(values) != 0:
        groups.append((spec.indexed, [spec.indexed_kv]))  # the indexer keys some layers cache besides
    expanded = None
    if spec.kv_expanded is not None:
        expanded = [(spec.cache_layers, [spec.kv_expanded])]
    return MemoryPart(
        **{
            **part.__dict__,
            "kv_dtype": kv_dtype,
            "kv_groups": groups,
            "kv_elements": elements,
            "kv_bytes": memory.per_token_bytes(family, values, kv_dtype),
            "kv_seq_bytes": inference.bytes_of("kv_cache"),
            "kinds": kinds,
            "indexer": indexer,
            "expanded_groups": expanded,
            "expanded_elements": 0
            if expanded is None
            else evaluate_int(memory.kv_elements_per_token(spec, expanded=True), values, "expanded KV cache"),
            "states": bool(family.states),
            "kv_fp32_indexer": spec.indexed is not None and spec.indexed_dtype == "fp32" and len(groups) > 1,
        }
    )


SPEED_GPU = "h100-sxm"
"""The GPU the memory section's roofline speed is stated for (llmcount.gpus; ``llmcount speed --gpu`` for others)."""
SPEED_BATCH = 64  # the larger batch the section's decode bound is also stated at


@dataclass(frozen=True)
class SpeedPart:
    """The roofline (:mod:`llmcount.roofline`) of the memory section: on :data:`SPEED_GPU`, weights in the
    section's dtype, bf16 KV cache, prefill of one sequence of S tokens and decode at S for B = 1 and
    :data:`SPEED_BATCH`; ``formula``: the bounds as LaTeX from sympy. ``derived`` False: the FLOPs are not derived."""

    gpu: str
    gpu_source: str
    bandwidth_gbs: Fraction
    peak_tflops: Fraction | None
    dtype: str
    seq: int
    compute: str = "bf16"  # the dtype of the peak
    derived: bool = False
    prefill_seconds: Fraction = Fraction(0)
    prefill_bound: str = ""
    decode_rate: Fraction = Fraction(0)  # tokens/s of one sequence
    decode_bound: str = ""
    decode_bytes: Fraction = Fraction(0)  # bytes one step reads at B = 1
    batch: int = SPEED_BATCH
    batch_rate: Fraction = Fraction(0)  # tokens/s of the batch together
    batch_bound: str = ""
    experts: Fraction | None = None  # expected distinct routed experts per layer at B = SPEED_BATCH
    moe: tuple[int, int] | None = None
    formula: str = ""
    scheme_zh: str = ""  # with a quantised checkpoint: its scheme in Chinese, and the dtype of the rest
    rest: str = ""


def speed_formula() -> str:
    """The prefill and decode bounds as one LaTeX line, from sympy expressions."""
    from sympy import Eq, Max, Symbol

    from .filters import latex

    peak, bandwidth, batch = Symbol(r"\Pi"), Symbol(r"\mathrm{BW}"), Symbol("B")
    prefill = Eq(
        Symbol(r"t_{\mathrm{pre}}"),
        Max(Symbol(r"F_{\mathrm{pre}}") / peak, Symbol(r"M_{\mathrm{pre}}") / bandwidth),
        evaluate=False,
    )
    decode = Eq(
        Symbol(r"t_{\mathrm{dec}}"),
        Max(Symbol(r"M_{\mathrm{dec}}") / bandwidth, batch * Symbol(r"F_{\mathrm{tok}}") / peak),
        evaluate=False,
    )
    return rf"{latex(prefill)}, \qquad {latex(decode)}"


def speed_part(model: Model, memory: MemoryPart, stored: Any = None) -> SpeedPart:
    """The roofline of the memory section; ``stored``: the checkpoint's quantisation (a QuantPart), whose stored
    bytes the weights are read at instead of the section's dtype."""
    from .. import roofline as rl
    from ..gpus import gpu

    card = gpu(SPEED_GPU)
    compute = "fp8" if memory.dtype.startswith("fp8") else "bf16"
    part = SpeedPart(
        card.title, card.source, card.bandwidth_gbs, card.peak_tflops(compute), memory.dtype, memory.seq, compute
    )
    try:
        plan = getattr(stored, "plan", None)
        weights = rl.plain_weights(model, memory.dtype) if plan is None else rl.scheme_weights(model, plan)
        if plan is not None:
            part = replace(part, dtype=weights.stored_as, scheme_zh=plan.quant.label_zh, rest=plan.dtype)
        result = rl.roofline(model, weights, card, [1, SPEED_BATCH], memory.seq, "bf16", compute)
    except LlmcountError:
        return part
    (prefill, _), (one, many) = result.prefill, result.decode
    return SpeedPart(
        **{
            **part.__dict__,
            "derived": True,
            "prefill_seconds": prefill.seconds,
            "prefill_bound": prefill.bound,
            "decode_rate": 1 / one.seconds,
            "decode_bound": one.bound,
            "decode_bytes": one.bytes,
            "batch_rate": SPEED_BATCH / many.seconds,
            "batch_bound": many.bound,
            "experts": many.experts,
            "moe": result.moe,
            "formula": speed_formula(),
        }
    )


# --- verification against a safetensors index ----------------------------------------------------------------------


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


def verify(model: Model, config: Mapping[str, Any], index: str | Path, dtype: str | None = None) -> Verification:
    """Compare ``metadata.total_size`` / bytes per parameter of an index with the formula's total.

    The dtype is ``dtype`` when given, else the config's ``torch_dtype`` (or ``dtype``)."""
    path = user_path(str(index), "index")
    index_data = read_index(path)
    weight_map, size_in_bytes = index_data["weight_map"], total_size(path, index_data)
    if dtype is not None:
        name, size = torch_dtype(dtype, "--dtype")
        source = "option"
    else:
        configured = model.dtype
        if not isinstance(configured, str):
            raise LlmcountError(
                f"{path}: cannot tell the checkpoint's dtype: the config has no torch_dtype; "
                f"pass --dtype (one of {', '.join(TORCH_DTYPES)})"
            )
        name, size = torch_dtype(configured, f"{path}: the config's torch_dtype")
        source = "config"
    names = sorted(weight_map)
    return Verification(
        path=str(path),
        name=path.name,
        dtype=name,
        dtype_from=source,
        bytes=size,
        total_size=size_in_bytes,
        tensors=len(names),
        shards=len(set(weight_map.values())),
        formula=model.counts.total,
        findings=tuple(findings(model, names)),
    )


# --- the write-up ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variable:
    latex: str
    key: str
    meaning: str
    name: str
    value: int
    default: str | None = None  # the config lacks the key: the default the value comes from, as LaTeX math


def _given(present: Collection[str] | Mapping[str, Any], key: str, aliases: Collection[str] = ()) -> bool:
    """Whether the config gives ``key``: under its own name or one of its ``aliases`` (the config class's
    attribute_map), a dotted key (``vision_config.image_size``) inside its sub-config."""
    if any(name in present for name in (key, *aliases)):
        return True
    head, _, rest = key.partition(".")
    return (
        bool(rest)
        and isinstance(present, Mapping)
        and isinstance(present.get(head), Mapping)
        and (_given(present[head], rest))
    )


def _default(model: Model, symbol, present: Collection[str] | Mapping[str, Any] | None) -> str | None:
    """How the value of ``symbol`` was made when the config has no key for it (``4\\,d``, ``128``), else None;
    ``present``: the config (or only its keys)."""
    if present is None:
        return None
    spec = next((s for s in model.architecture.symbols if s.symbol == symbol), None)
    if spec is None or not spec.default_text or _given(present, spec.key, model.architecture.aliases.get(spec.key, ())):
        return None
    text = spec.default_text
    try:
        if text.count("//") == 1:  # integer division, d // h: the floor of d / h
            top, bottom = (latex(formula(part, spec.key)) for part in text.split("//"))
            return rf"\left\lfloor {top}/{bottom} \right\rfloor"
        return latex(formula(text, spec.key))
    except (LlmcountError, RecordError):  # a rule the formula parser does not take: none shown
        return None


def variables(model: Model, present: Collection[str] | None = None) -> list[Variable]:
    """The glossary rows of the symbols this model uses, with this model's values; with the config's keys
    (``present``), a value the config does not give says which default it is."""
    return [
        Variable(
            e.latex,
            _given_key(config_key(model, e.symbol), present),
            e.meaning,
            e.symbol.name,
            model.values[e.symbol],
            _default(model, e.symbol, present),
        )
        for e in GLOSSARY
        if e.symbol in model.values and e.symbol in model.derivation.symbols
    ]


def _given_key(key: str, present: Collection[str] | None) -> str:
    """A symbol read from one of several keys (``layer_types, full_attention_interval``): the ones the config gives,
    when it gives any; all of them otherwise."""
    names = key.split(", ")
    given = [name for name in names if present is not None and name in present]
    return ", ".join(given) if given and len(names) > 1 else key


def part_variables(model: Model) -> list[Variable]:
    """The glossary rows of the symbols of a whole composite model's parts that the language model does not have,
    their keys under the sub-config that gives them (``vision_config.hidden_size``)."""
    if model.whole_total is None:
        return []
    seen = {symbol.name for symbol in model.values}
    rows = []
    for part in model.parts:
        for row in variables(part.model):
            if row.name in seen:
                continue
            seen.add(row.name)
            if part.config_key and "." not in row.key:
                row = replace(row, key=f"{part.config_key}.{row.key}")
            rows.append(row)
    return rows


def features(model: Model) -> dict[str, Any]:
    """What the prose needs to know about the architecture, read off the terms and the values."""
    paths = {t.path for t in model.derivation.terms}
    v = model.values
    heads, kv_heads = v.get(h), v.get(h_kv)
    spec = model.architecture.attention
    kv = spec.kv if spec is not None else None
    kind = None
    if kv_heads is not None and heads is not None:
        kind = "mha" if kv_heads == heads else "mqa" if kv_heads == 1 else "gqa"
    return {
        "moe": model.architecture.is_moe,
        "learned_positions": "embedding/wpe" in paths,
        "fused": "attention/c_attn" in paths,
        # what a layer caches per token, when it is one of the two the prose explains (others: the formula alone)
        "kv_d": kv == 2 * d,
        "kv_heads": kv == 2 * h_kv * h_d,
        "mla": "attention/kv_b_proj" in paths,
        "q_lora": "attention/q_a_proj" in paths,
        "qk_norm": "attention/q_norm" in paths,
        "shared_experts": "moe/shared_experts" in paths,
        "dense_layers": model.derivation.per_dense_layer is not None,
        # the dense layers form a leading block (DeepSeek's first_k_dense_replace), or are spread (every other)
        "dense_indices": model.layer_indices.get(N_dense, ()),
        "dense_first": v.get(N_dense, 0) > 0 and model.layer_indices.get(N_dense, ()) == tuple(range(v[N_dense])),
        "classic_mlp": "mlp/c_fc" in paths,
        "experts_d_ff": any(t.routed and d_ff in t.expr.free_symbols for t in model.derivation.terms),  # Mixtral
        "tied": model.tied,
        "layer_norm": "norms/ln_1" in paths,
        "attention_kind": kind,
        "group_size": heads // kv_heads if kind == "gqa" else None,
        "q_width": heads * v[h_d] if h_d in v and heads is not None else None,  # h·h_d, when it may differ from d
        "ff_ratio": Fraction(v[d_ff], v[d]) if d_ff in v else _up_ratio(model),
        "moe_layers": v[N] - v.get(N_dense, 0),
    }


def _preset(model: Model):
    """The bundled preset ``model`` was read from, or None (a file, a Hub id)."""
    from ..presets import find

    name = model.whole_name or model.name
    return find(name) if model.source == f"preset {name}" else None


def _up_ratio(model: Model) -> Fraction | None:
    """A classic MLP's width over d when the config gives no d_ff (GPT-1 fixes it at 4·d): c_fc's weights over N·d²."""
    up = next((c.count for c in model.counts.components if c.path == "mlp/c_fc"), None)
    if up is None or not model.values.get(N) or not model.values.get(d):
        return None
    return Fraction(up, model.values[N] * model.values[d] ** 2)


def display_name(model: Model) -> str:
    """The name a reader knows the model by: a preset's model name (Qwen3-32B for the preset qwen3-32b), else
    the name it was given (a Hub id, a folder's name)."""
    preset = _preset(model)
    return preset.model if preset else model.name


def context(
    model: Model,
    fmt: str,
    lang: str,
    verification: Verification | None = None,
    chart: str | None = None,
    present: Collection[str] | None = None,
    show: tuple[str, ...] = DEFAULT_SECTIONS,
    seq: int = DEFAULT_SEQ,
    training: Any = None,
    author: str | None = None,
    date: str | None = None,
    quant: Any = None,
) -> dict[str, Any]:
    """Everything a write-up template prints, computed; ``present``: the keys the config has; ``author`` and
    ``date``: the byline the user gives (none by default)."""
    preset = _preset(model)
    hub = model.source == f"{model.whole_name or model.name} (Hub)"
    moe = model.architecture.is_moe
    try:
        layer = leading(model)
    except LlmcountError:  # layers of several kinds (linear and full attention): no one layer to approximate
        layer = None
    classic = None if moe or layer is None else CLASSIC * model.values[d] ** 2
    parts, counts = post_sections(model)
    whole = model.whole_total is not None
    printed = printed_tree(model) if "tree" in show else None
    shown_tree = abridged(printed) if printed else None
    dense = model.layer_indices.get(N_dense, ())
    if dense and dense == tuple(range(len(dense))):  # a leading dense block: a token meets it before the MoE
        keys = [p.key for p in parts]
        if "moe" in keys and "mlp" in keys and keys.index("mlp") > keys.index("moe"):
            mlp = parts.pop(keys.index("mlp"))
            parts.insert(keys.index("moe"), mlp)
    return {
        "fmt": fmt,
        "lang": lang,
        "show": show,
        "model": model,
        "model_title": preset.model if preset else (model.whole_name if whole else "") or model.name,
        "whole": whole,
        # the parts of a whole composite model: section key -> the record it is read with and the key it is read from
        "towers": {
            PART_KEYS.get(part.role, part.role.replace(" ", "_")): {
                "record": part.model.architecture.name,
                "title": part.model.architecture.title,
                "config_key": part.config_key,
                "absent": part.absent,  # the class's default sub-config: the config has none
            }
            for part in (model.parts if whole else ())
        },
        "hub_id": preset.hub_id if preset else None,
        "source": {
            "kind": "preset" if preset else "hub" if hub else "file",
            "name": model.name if preset or hub else model.source,
        },
        "arch": model.architecture,
        "d": model.derivation,
        "counts": counts,
        "values": {**{k: v for p in model.parts for k, v in p.model.values.items()}, **model.values},
        "v": {s.name: value for s, value in model.values.items()},
        "f": features(model),
        "variables": variables(model, present) + part_variables(model),
        "sections": parts,
        "skipped_moe": _skipped_moe(parts),
        "embedding_groups": list(dict.fromkeys(t.group for t in model.derivation.terms if t.embedding)),
        "pie": pie(parts),
        "embedding_share": Fraction(counts.embedding, counts.total),
        "non_embedding_share": Fraction(counts.non_embedding, counts.total),
        "activated_share": Fraction(counts.activated, counts.total),
        "layer": layer,
        "layer_activated": leading(model, activated=True) if moe and layer is not None else None,
        "classic": classic,
        "classic_error": None if classic is None else Fraction(classic - layer.exact, layer.exact),
        "verification": verification,
        "chart": chart,
        "flops": flops_part(model, seq) if "flops" in show else None,
        "memory": (memory := memory_part(model, seq) if "memory" in show else None),
        "speed": speed_part(model, memory, quant) if memory is not None else None,
        "tree": (shown_tree.text if shown_tree else module_tree(model, lang)) if "tree" in show else None,
        "tree_left_out": shown_tree if shown_tree and (shown_tree.left_out or shown_tree.inner) else None,
        "check": check_code(model, preset, counts.total, lang) if printed else None,
        # the printed tree's top class (print(model) of the language model's class, for a composite model)
        "tree_printed": printed.split("(", 1)[0] if printed else None,
        "tree_language_model": model.composite is not None,
        "tree_names": Names.of(model),
        "card": card_check(model, preset.card) if preset else None,
        "kinds": attention_kinds(model, features(model)) if "attention" in show else None,
        "training": training if "training" in show else None,
        "tex_chart": _tex_chart(model, fmt, lang, chart, show),
        "byline": " · ".join(part for part in (author, date) if part) or None,
        "author": author,
        "date": date,
        "source_line": True,
        "quant": quant if "quant" in show else None,
        "stored": quant,  # the checkpoint's quantisation, for the memory section's first sentence
    }


def _tex_chart(model: Model, fmt: str, lang: str, chart: str | None, show: tuple[str, ...]) -> dict | None:
    """The chart a LaTeX post draws itself when no chart file is linked (see :func:`.charts.tex_chart`)."""
    if fmt != "latex" or chart is not None or "shares" not in show:
        return None
    from .charts import tex_chart

    return tex_chart(model, model.architecture.is_moe, lang)


def render_writeup(
    model: Model,
    fmt: str = "markdown",
    lang: str = "en",
    verification: Verification | None = None,
    chart: str | None = None,
    chart_svg: bytes | None = None,
    present: Collection[str] | None = None,
    show: tuple[str, ...] = DEFAULT_SECTIONS,
    seq: int = DEFAULT_SEQ,
    training: Any = None,
    math: str = "mathml",
    author: str | None = None,
    date: str | None = None,
    quant: Any = None,
) -> str:
    """The write-up of ``model`` in ``fmt`` (markdown, latex, html) and ``lang`` (en, zh); ``training``: the
    training section's :class:`~.writeup_training.TrainingPart`, when shown.

    html: the Markdown post made one self-contained page (see :mod:`.html`), with ``chart_svg`` inline and its math
    rendered by ``math`` (mathml or katex)."""
    from . import render

    _choose(fmt, FORMATS, "format")
    _choose(lang, LANGS, "language")
    if fmt == "html":
        from .html import CHART_ALT, page

        link = CHART_ALT if chart_svg is not None else None
        text = _tidy(
            render(
                "writeup/markdown.j2",
                **context(model, fmt, lang, verification, link, present, show, seq, training, author, date, quant),
            )
        )
        return page(text, lang, chart_svg, math)
    text = _tidy(
        render(
            f"writeup/{fmt}.j2",
            **context(model, fmt, lang, verification, chart, present, show, seq, training, author, date, quant),
        )
    )
    return _display_in_paragraph(text) if fmt == "latex" else text


def _tidy(text: str) -> str:
    """One blank line between blocks wherever sections were left out (no block of a post has a blank line)."""
    return re.sub(r"\n{3,}", "\n\n", text)


_LEAD_IN = re.compile(
    r"(?m)^((?!\s*(?:\\(?:section|subsection|begin|end|par|medskip|vspace)\b|[{}%]))[^\n]*\S)\n\n(\\\[)"
)


def _display_in_paragraph(text: str) -> str:
    """A LaTeX display formula in the paragraph of the text that leads into it: TeX breaks no page just before a
    display in a paragraph (``\\predisplaypenalty``), where a blank line between them would let the text end one
    page and its formula start the next."""
    return _LEAD_IN.sub(r"\1\n\2", text)


def parse_sections(value: str | None) -> tuple[str, ...]:
    """``--sections params,shares`` -> ('params', 'shares'), in the post's order; None: the default post
    (DEFAULT_SECTIONS); ``all``: every part but the optional ones (training), which may be added (``all,training``)."""
    if value is None:
        return DEFAULT_SECTIONS
    asked = [part.strip() for part in value.split(",")]
    for part in asked:
        if part != ALL:
            _choose(part, ALL_SECTIONS, "section")
    if ALL in asked:
        asked += SECTIONS
    return tuple(s for s in ALL_SECTIONS if s in asked)


def _choose(value: str, choices: tuple[str, ...], what: str) -> None:
    if value not in choices:
        raise LlmcountError(f"unknown {what} {value!r}; choose one of {', '.join(choices)}")


def writeup_data(model: Model, verification: Verification | None) -> dict[str, Any]:
    """The numbers of a write-up, for ``--json``: exact integers; shares and errors as floats."""
    from . import summary_data

    try:
        layer = leading(model)
    except LlmcountError:  # layers of several kinds: no one layer
        layer = None
    data: dict[str, Any] = {
        **summary_data(model, language_model=True),
        "sections": [
            {"key": s.key, "count": s.count, "activated": s.activated, "share": float(s.share)} for s in sections(model)
        ],
        "layer": None
        if layer is None
        else {
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


STDOUT = "-"
"""``-o -``: the write-up goes to stdout, as without ``-o``."""


def _kind(path: Path) -> str:
    """What ``path`` names, symlinks followed: file, folder, stream (character device or FIFO), other or missing."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return "missing"  # or a dangling symlink, or under a file: the folder checks say which
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "folder"
    return "stream" if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) else "other"


def check_target(path: str | Path, what: str = "output") -> Path:
    """A file we may write, checked before anything is computed.

    A symlink is followed (the file it points to is written); a character device or FIFO (``/dev/stdout``)
    is written into as it is; a folder or any other special file is refused."""
    if not str(path):
        raise LlmcountError(f"cannot write the {what}: the file name is empty")
    if str(path) == STDOUT:
        raise LlmcountError(f"{STDOUT}: cannot write the {what} to stdout; give a file name")
    target = user_path(str(path), what)
    files.kind(target, what, "write")  # a name too long, a folder not to be entered, a file used as a folder
    kind = _kind(target)
    if kind == "stream":
        if not os.access(target, os.W_OK):
            raise LlmcountError(f"{path}: cannot write the {what}: not writable")
        return target
    if kind == "folder":
        raise LlmcountError(f"{path}: is a folder; give a file name for the {what}")
    if kind == "other":
        raise LlmcountError(f"{path}: cannot write the {what}: not a regular file")
    target = Path(os.path.realpath(target))
    if target.is_symlink():
        raise LlmcountError(f"{path}: cannot write the {what}: too many levels of symbolic links")
    if _read_only(target):
        raise LlmcountError(f"{path}: cannot write the {what}: the file is read-only")
    folder = target.parent
    if not folder.exists():
        raise LlmcountError(f"{path}: cannot write the {what}: folder {folder} does not exist")
    if not folder.is_dir():
        raise LlmcountError(f"{path}: cannot write the {what}: {folder} is not a folder")
    if not os.access(folder, os.W_OK):
        raise LlmcountError(f"{path}: cannot write the {what}: folder {folder} is not writable")
    return target


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same real path, or one existing file under two names (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _read_only(target: Path) -> bool:
    """Whether an existing file may not be written: this user has no write permission, or nobody has (a file made
    read-only on purpose, which a rename over it would replace even where the folder allows it, or for root)."""
    try:
        mode = target.stat().st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) and (not os.access(target, os.W_OK) or not mode & 0o222)


def _mode(target: Path) -> int:
    """The permissions a new file gets (0666 less the umask), or those of the file it replaces."""
    if target.exists():
        return target.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def save(files: Mapping[Path, bytes]) -> None:
    """Write the files together or not at all: each regular file (through symlinks, the file they point to) to a
    temporary file in its own folder first, then every one renamed over its target; a character device or FIFO
    written directly, once every temporary file is ready. On an error, Ctrl-C or SIGTERM the temporary files are
    removed and no target is touched."""
    streams = {path: data for path, data in files.items() if _kind(path) == "stream"}
    regular = {Path(os.path.realpath(path)): data for path, data in files.items() if path not in streams}
    if len(regular) + len(streams) < len(files):
        raise LlmcountError(f"{', '.join(str(p) for p in files)}: two outputs name the same file")
    staged: list[tuple[str, Path]] = []
    with _terminate_as_exit():
        try:
            for target, data in regular.items():
                staged.append((_stage(target, data), target))
            for path, data in streams.items():
                _write_into(path, data)
            placed: list[tuple[Path, str | None]] = []  # (target, its former content kept aside, or None)
            try:
                for temp, target in staged:
                    keep = _keep_aside(target)
                    placed.append((target, keep))
                    try:
                        os.replace(temp, target)
                    except OSError as exc:
                        raise LlmcountError(f"{target}: cannot write: {exc.strerror or exc}") from None
            except BaseException:  # a later rename failed: undo the earlier ones, no post without its chart
                for target, keep in reversed(placed):
                    with suppress(OSError):
                        if keep is not None:
                            os.replace(keep, target)
                        elif target.exists():
                            target.unlink()
                raise
            for _, keep in placed:
                if keep is not None:
                    Path(keep).unlink(missing_ok=True)
        finally:
            for temp, _ in staged:
                Path(temp).unlink(missing_ok=True)  # gone already when renamed


@contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """SIGTERM raises SystemExit(143) meanwhile, so that ``finally`` blocks remove temporary files (Ctrl-C already
    raises KeyboardInterrupt)."""

    def terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    try:
        previous = signal.signal(signal.SIGTERM, terminate)
    except ValueError:  # not the main thread: signals go elsewhere
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _keep_aside(target: Path) -> str | None:
    """A hard link to ``target``'s present content beside it (so that a failed save can put it back), or None
    when there is no file yet or the folder allows no link."""
    if not target.is_file():
        return None
    aside = target.parent / f".{target.name}.{os.getpid()}.old"
    try:
        aside.unlink(missing_ok=True)
        os.link(target, aside)
    except OSError:
        return None
    return str(aside)


FIFO_WAIT = 1.0  # seconds a FIFO given to -o may take to get a reader


def _write_into(target: Path, data: bytes) -> None:
    """Write into a character device or FIFO; a FIFO that no process opens for reading within a second is refused
    (a blocking open would wait for ever)."""
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    deadline = time.monotonic() + FIFO_WAIT
    while True:
        try:
            fd = os.open(target, flags)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise LlmcountError(f"{target}: cannot write: {exc.strerror or exc}") from None
            if time.monotonic() > deadline:  # no reader yet: a reader started alongside gets this long to open it
                raise LlmcountError(f"{target}: cannot write: a FIFO that no process reads") from None
            time.sleep(0.01)
    try:
        os.set_blocking(fd, True)
        with open(fd, "wb", closefd=False) as out:
            out.write(data)
    except OSError as exc:
        raise LlmcountError(f"{target}: cannot write: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _stage(target: Path, data: bytes) -> str:
    """A temporary file beside ``target`` holding ``data``, with the permissions ``target`` will have; a read-only
    ``target`` is refused (the rename would replace it)."""
    if _read_only(target):
        raise LlmcountError(f"{target}: cannot write: the file is read-only")
    try:
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise LlmcountError(f"{target}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(temp, _mode(target))
    except BaseException as exc:
        Path(temp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise LlmcountError(f"{target}: cannot write: {exc.strerror or exc}") from None
        raise
    return temp


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


def targets(
    output: str | None, chart: str | None, fmt: str
) -> tuple[str | None, Path | None, Path | None, str, str | None]:
    """The paths a write-up goes to, checked before anything is computed: ``(output, post, chart image, the image's
    suffix, the image's link from the post)``; ``-o -`` (or none) is stdout, whose output is None."""
    if output == STDOUT:
        output = None
    out = check_target(output) if output is not None else None
    image = check_target(chart, "chart") if chart is not None else None
    if out is not None and image is not None and _same_file(out, image):
        raise LlmcountError(f"{chart}: --chart and -o name the same file; give the chart its own name")
    suffix = Path(chart).suffix.lower() if chart is not None else ""  # the name asked for, not a symlink's target
    if image is not None and fmt == "html":
        raise LlmcountError(f"{chart}: an HTML write-up carries its chart inline; --chart is for markdown and latex")
    if image is not None and suffix not in CHART_SUFFIXES[fmt]:
        allowed = ", ".join(CHART_SUFFIXES[fmt])
        raise LlmcountError(f"{chart}: a {fmt} write-up can link a chart of type {allowed}")
    post = out if out is not None and _kind(out) != "stream" else None  # a link from /dev/stdout: from here
    link = _link(image, post, fmt) if image is not None else None
    return output, out, image, suffix, link


def build(
    spec: str,
    fmt: str = "markdown",
    lang: str = "en",
    *,
    output: str | None = None,
    chart: str | None = None,
    index: str | None = None,
    dtype: str | None = None,
    flavor: str = "dollars",
    sections: str | None = None,
    seq: int = DEFAULT_SEQ,
    training: Any = None,
    math: str = "mathml",
    author: str | None = None,
    date: str | None = None,
) -> WriteUp:
    """The write-up of the model ``spec`` names, with its chart and its verification against ``index``;
    with ``training`` (a :class:`~.writeup_training.Settings`), its training-memory section too.

    Output paths are checked before anything is computed; nothing is written here (see :func:`save`)."""
    from ..sources import resolve
    from .writeup_training import Settings, training_json, training_part

    _choose(fmt, FORMATS, "format")
    _choose(lang, LANGS, "language")
    _choose(flavor, FLAVORS, "flavor")
    for option, value in (("--author", author), ("--date", date)):
        if value is not None and (not value.strip() or len(value) > 200 or not value.isprintable()):
            raise LlmcountError(f"{option}: give one line of printable text, at most 200 characters")
    show = parse_sections(sections)
    if training is not None and "training" not in show:
        show = (*show, "training")
    if "training" in show and training is None:
        training = Settings()
    if chart is not None and "shares" not in show:
        raise LlmcountError("--chart draws the shares section: add shares to --sections, or drop --chart")
    if flavor != "dollars" and fmt != "markdown":
        raise LlmcountError(f"--flavor {flavor} is for --format markdown, not {fmt}")
    if math != "mathml" and fmt != "html":
        raise LlmcountError(f"--math {math} is for --format html, not {fmt}")
    output, out, image, suffix, link = targets(output, chart, fmt)
    name, source, config = resolve(spec)
    model = read_config(config, source, name)
    verification = verify(model, config, index, dtype) if index is not None else None
    trained = training_part(model, training, seq) if "training" in show else None
    from ..quant import writeup as quant_writeup

    quantised = quant_writeup.quant_part(model, config, source, spec=spec) if "quant" in show else None
    if quantised is None and "memory" in show:  # the memory section says how the checkpoint stores its weights
        with suppress(LlmcountError):  # a scheme llmcount does not size: the section as without one
            quantised = quant_writeup.quant_part(model, config, source, spec=spec)
    files: dict[Path, bytes] = {}
    inline = None
    if image is not None:
        from .charts import render_chart

        files[image] = render_chart([model], suffix.lstrip("."), activated=model.architecture.is_moe, lang=lang)
    elif fmt == "html" and "shares" in show:  # inline in the page, written here: no matplotlib needed
        from .charts import svg_chart

        inline = svg_chart([model], activated=model.architecture.is_moe, lang=lang)
    present = config  # what the config gives: a composite's language model reads its text_config
    if model.composite is not None and isinstance(config.get("text_config"), dict):
        present = config["text_config"]
    text = render_writeup(
        model, fmt, lang, verification, link, inline, present, show, seq, trained, math, author, date, quantised
    )
    if flavor == "commonmark":
        from .html import fence_math

        text = fence_math(text)
    if out is not None:
        files[out] = text.encode("utf-8")
    data = {**writeup_data(model, verification), "format": fmt, "lang": lang, "output": output, "chart": chart}
    data["flavor"] = flavor
    data["shown"] = list(show)
    data["seq"] = seq
    if "flops" in show:
        part = flops_part(model, seq)
        data["flops"] = (
            {"refused": part.refused}
            if part.refused
            else {"per_token": part.per_token, "layers": part.linear, "attention": part.attention, "head": part.head}
        )
    card = card_check(model, preset.card) if (preset := _preset(model)) else None
    data["card"] = (
        None
        if card is None
        else {
            "stated": card.card.text,
            "total": card.total,
            "agrees": None if card.match is None else {"count": card.match[0], "how": card.match[1]},
            "hub": None if card.hub is None else card.hub.text,
            "mtp": card.has_mtp,
            "vision": card.vision,
        }
    )
    if "attention" in show:
        kinds = attention_kinds(model, features(model))
        data["attention_kinds"] = (
            None
            if kinds is None
            else [
                {"kind": k.key, "own": k.own, "parameters": k.params, "kv_elements_per_token": k.kv_elements}
                for k in kinds
            ]
        )
    if "memory" in show:
        mem = memory_part(model, seq)
        data["memory"] = {
            "weights_bytes": {row.name: row.bytes for row in mem.rows},
            "kv_dtype": mem.kv_dtype if mem.kv_groups else None,
            "kv_bytes_per_token": mem.kv_bytes if mem.kv_groups else None,
            "kv_bytes_per_sequence": mem.kv_seq_bytes if mem.kv_groups else None,
        }
        speed = speed_part(model, mem)
        data["memory"]["roofline"] = (
            None
            if not speed.derived
            else {
                "gpu": speed.gpu,
                "seq": speed.seq,
                "prefill_seconds": float(speed.prefill_seconds),
                "decode_tokens_per_second": float(speed.decode_rate),
                f"decode_tokens_per_second_at_batch_{speed.batch}": float(speed.batch_rate),
            }
        )
    if trained is not None:
        data["training"] = training_json(model, trained)
    if quantised is not None:
        data["quant"] = quant_writeup.part_data(quantised)
    return WriteUp(text, data, files)
