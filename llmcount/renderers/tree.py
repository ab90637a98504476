"""The module tree of a model in the layout of transformers' ``print(model)``, from the family record's terms
evaluated on the config: no torch, no model built.

What the record knows, and so what the tree shows:

* a weight matrix the record writes as ``in·out`` (``d*h*h_d``, ``h*h_d*d``, ``d_ff*d``: the records write
  the input width first) is ``Linear(in_features=…, out_features=…, bias=…)``; the split is made at the hidden
  size d when d is the first or last factor, else after a first factor that is a width (``r_q*h*(d_nope +
  d_rope)``); the LM head maps d to V; ``bias=True`` when the record has the weight's ``.bias`` term;
* a vocabulary or position table is ``Embedding(rows, d)``;
* a norm is ``RMSNorm((x,))`` when the record's note says RMSNorm, ``LayerNorm((x,))`` for a scale and a shift
  (``2*x``), else ``Norm((x,))``;
* anything else (routed experts stored as one tensor, convolutions, per-head scalars, a weight whose factors do
  not split into in and out) shows its parameter count and formula instead of a shape.

Container and class names (``self_attn``, ``DecoderLayer``) are generic, and the modules of a layer come in
reader's order, unless the record's ``[tree]`` table gives the model code's: the top class, the base model's
attribute and class, the layer list's attribute and the layer's class, each group's container
(``containers.attention = ["attn", "GPT2Attention"]``), the order the layer defines its modules in (``order``),
and how its linear layers print (``linear = "Conv1D(nf={out}, nx={in})"``, for the weights inside the layers).
The leaf names are the model code's. Modules without parameters (rotary embeddings, activations, dropout) are not
shown; ``eps`` is not either.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sympy import Expr, Integer, Mul, Symbol, expand

from ..errors import LlmcountError
from ..formulas.blocks import Term
from ..formulas.config import Model
from ..formulas.expressions import RecordError, formula
from ..formulas.flops import is_norm
from ..formulas.layer_kinds import MAX_LAYERS
from ..formulas.symbols import N, V, d, d_ff, d_moe, d_nope, d_rope, d_v, h_d, n_pos, r_kv, r_q

IN_WIDTHS = (V, d, d_ff, h_d, n_pos, d_moe, r_q, r_kv, d_rope, d_nope, d_v)
"""Sizes a Linear's input may be when the split is not at d (MLA's q_b_proj from r_q, kv_b_proj from r_kv)."""

CONTAINERS = {
    "attention": ("self_attn", "Attention"),
    "linear_attention": ("linear_attn", "LinearAttention"),
    "mlp": ("mlp", "MLP"),
    "moe": ("mlp", "MoE"),
}
INDENT = "  "
MAX_RUNS = 6
"""Up to this many runs of identical layers are listed as transformers lists them ((0-2): 3 x ...); more (layers
of two kinds alternating) are listed once per kind, with their indices."""


@dataclass(frozen=True)
class Names:
    """The names a tree prints: generic, or the model code's from the record's ``[tree]`` table."""

    top: str = "ForCausalLM"
    model: str = "model"
    model_class: str = "Model"
    layers: str = "layers"
    layer_class: str = "DecoderLayer"
    containers: Mapping[str, tuple[str, str]] = field(default_factory=lambda: dict(CONTAINERS))
    order: tuple[str, ...] = ()
    linear: str | None = None  # a format with {in} and {out}, for the weights inside the layers
    named: bool = False  # the class names are the model code's (the record's [tree] table gives them)
    renamed: Mapping[str, str] = field(default_factory=dict)  # record name -> the model code's (router -> gate)

    @property
    def linear_class(self) -> str | None:
        """The class name of ``linear``: Conv1D."""
        return None if self.linear is None else self.linear.split("(", 1)[0]

    @classmethod
    def of(cls, model: Model) -> Names:
        table = model.architecture.tree
        if not table:
            return cls()
        containers = {**CONTAINERS, **{g: tuple(pair) for g, pair in table.get("containers", {}).items()}}
        return cls(
            top=table.get("class", cls.top),
            model=table.get("model", cls.model),
            model_class=table.get("model_class", cls.model_class),
            layers=table.get("layers", cls.layers),
            layer_class=table.get("layer_class", cls.layer_class),
            containers=containers,
            order=tuple(table.get("order", ())),
            linear=table.get("linear"),
            named=bool({"class", "model_class", "layer_class"} & set(table)),
            renamed=dict(table.get("names", {})),
        )

    def rank(self, key: str) -> int:
        """Where a module (a leaf's name or a group) goes among its siblings: by ``order``, else after those."""
        return self.order.index(key) if key in self.order else len(self.order)


def factors(text: str) -> list[str]:
    """The top-level factors of a product as written: ``d*h*(a + b)`` -> ['d', 'h', '(a + b)']; one item when
    the formula is not a product (``a + b``, ``d/h``, ``x**2``)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and char in "+-/" and i > 0:
            return [text]
        if depth == 0 and char == "*":
            if text[i : i + 2] == "**" or text[i - 1] == "*":
                return [text]
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def linear_shape(term: Term) -> tuple[Expr, Expr] | None:
    """(in, out) of a weight matrix, from the order the record writes its factors in; None when they do not
    split (see the module docstring)."""
    if term.path == "head/lm_head":
        rest = expand(term.expr / d)
        return (d, rest) if d not in rest.free_symbols and term.expr.has(d) else None
    parts = factors(term.text or str(term.expr))
    if len(parts) < 2:
        return None
    try:
        exprs = [formula(p, term.path) for p in parts]
    except (LlmcountError, RecordError):
        return None
    if exprs[0] == d and d not in Mul(*exprs[1:]).free_symbols:
        shape = (d, Mul(*exprs[1:]))
    elif exprs[-1] == d and d not in Mul(*exprs[:-1]).free_symbols:
        shape = (Mul(*exprs[:-1]), d)
    elif exprs[0] in IN_WIDTHS:
        shape = (exprs[0], Mul(*exprs[1:]))
    else:
        return None
    return shape if expand(shape[0] * shape[1] - term.expr) == 0 else None


def _int(expr: Expr, values: dict[Symbol, int]) -> int:
    value = expr.subs(values)
    if not (isinstance(value, Integer) or getattr(value, "is_Integer", False)):
        raise LlmcountError(f"{expr} is not a whole number on this config")
    return int(value)


COUNT = {"en": "{count:,} parameters ({formula})", "zh": "{count:,} 个参数 ({formula})"}
"""A module shown by its parameter count, in the post's language."""


def leaf(
    term: Term,
    model: Model,
    biased: set[str],
    lang: str = "en",
    linear: str | None = None,
    renamed: Mapping[str, str] | None = None,
) -> str:
    """One line of the tree: ``(q_proj): Linear(in_features=5120, out_features=8192, bias=False)``, or in the
    ``linear`` format the record gives (``Conv1D(nf={out}, nx={in})``)."""
    values = model.values
    name = term.path.split("/", 1)[1]
    if renamed:
        name = renamed.get(name, name)
        biased = {renamed.get(n, n) for n in biased}
    if term.group == "embedding" and term.embedding:
        rows = expand(term.expr / d)
        if term.expr.has(d) and d not in rows.free_symbols:
            return f"({name}): Embedding({_int(rows, values)}, {values[d]})"
    elif is_norm(term.path):
        expr = term.expr
        if expr.is_Symbol:
            kind = "RMSNorm" if "rmsnorm" in term.note.lower() else "Norm"
            return f"({name}): {kind}(({values[expr]},))"
        if expr.is_Mul and expr.args[0] == 2 and len(expr.args) == 2 and expr.args[1].is_Symbol:
            return f"({name}): LayerNorm(({values[expr.args[1]]},))"
    elif not term.routed:
        shape = linear_shape(term)
        if shape is not None:
            a, b = (_int(x, values) for x in shape)
            if linear is not None:
                return f"({name}): " + linear.format_map({"in": a, "out": b, "bias": name in biased})
            return f"({name}): Linear(in_features={a}, out_features={b}, bias={name in biased})"
    count = _int(term.expr, values)
    return f"({name}): " + COUNT[lang].format(count=count, formula=term.text or term.expr)


def _ranges(indices: Sequence[int]) -> str:
    """0, 1, 2, 4 -> '0-2, 4'."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    texts = [str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs]
    if len(texts) > 4:  # a line of a code block must fit a page: the first two and the last, the count says more
        texts = [*texts[:2], "...", texts[-1]]
    return ", ".join(texts)


def _layer_indices(model: Model, layers: Expr) -> frozenset[int] | None:
    """The indices of the layers a term's ``layers`` expression counts, when the config says which (and has at
    most :data:`MAX_LAYERS` layers: the tree walks them one by one)."""
    times = layer_times(model, layers)
    return None if times is None else frozenset(i for i, m in enumerate(times) if m > 0)


def layer_times(model: Model, layers: Expr) -> tuple[int, ...] | None:
    """How many times each layer carries a term counted on ``layers`` layers (``2*N``: twice in every layer;
    ``N + N_sliding``: once, and once more in a sliding layer), when the config says which layers: by the record's
    ``[printed]`` ``index`` rule for that count (or its ``shared`` layers, for a count of shared blocks), else from the
    layers each layer-count symbol counts. None when
    neither tells (or the config has more than :data:`MAX_LAYERS` layers)."""
    total = model.values.get(N)
    if total is None or total > MAX_LAYERS:
        return None
    ruled = _ruled(model, layers, total)
    if ruled is not None:
        return ruled
    shared = (model.architecture.printed or {}).get("shared", {})
    for count, printed_in in shared.items():  # blocks shared between layers print in each layer that uses one
        if expand(formula(count, "[printed] shared") - layers) == 0:
            return layer_times(model, formula(printed_in, "[printed] shared"))
    every = frozenset(range(total))
    known = {symbol: frozenset(indices) for symbol, indices in model.layer_indices.items()}
    if layers == N:
        return (1,) * total
    found = None
    if layers in known and len(known[layers]) == _int(layers, model.values):
        found = known[layers]
    rest = expand(N - layers)
    if found is None and rest in known and len(known[rest]) == _int(rest, model.values):
        found = every - known[rest]
    if found is not None:
        return tuple(int(i in found) for i in range(total))
    return _combined(model, layers, total, known)


def _ruled(model: Model, layers: Expr, total: int) -> tuple[int, ...] | None:
    """The layers of ``layers`` by the record's ``[printed]`` ``index`` rule (a condition of the layer index i over
    the config's keys and the record's symbols, as ``[layers]`` writes them): once each in the layers it holds for,
    when they are as many as ``layers`` counts; None without a rule (or when the config cannot answer it)."""
    from ..formulas.expressions import condition

    rules = (model.architecture.printed or {}).get("index", {})
    for text, rule in rules.items():
        if expand(formula(text, "[printed] index") - layers) != 0:
            continue
        scope: dict[str, object] = {**model.config, **model.keys}
        for spec in model.architecture.symbols:
            if spec.symbol in model.values:
                scope[spec.symbol.name] = model.values[spec.symbol]
                if isinstance(spec.key, str):
                    scope[spec.key] = model.values[spec.symbol]
        scope |= {symbol.name: value for symbol, value in model.values.items()}
        test = condition(rule, "[printed] index")
        try:
            chosen = []
            for i in range(total):
                scope["i"] = i
                chosen.append(int(bool(test(scope))))
        except Exception:  # a rule the config cannot answer: the layers are not told
            return None
        return tuple(chosen) if sum(chosen) == _int(layers, model.values) else None
    return None


def _combined(model: Model, layers: Expr, total: int, known: Mapping[Symbol, frozenset[int]]) -> tuple[int, ...] | None:
    """The layers of a whole-number combination of layer counts (``N_full + N_sliding``, ``N - N_dense - N_mtp``,
    ``2*N``, ``N + N_sliding``): how many times each layer is counted, when every count's layers are known, no layer
    is counted a negative number of times and the times add up to what the expression counts."""
    parts = expand(layers).as_coefficients_dict()
    if not parts or any(not getattr(c, "is_Integer", False) for c in parts.values()):
        return None
    times = [0] * total
    for symbol, coefficient in parts.items():
        if symbol == N:
            members = range(total)
        elif symbol in known and len(known[symbol]) == _int(symbol, model.values):
            members = known[symbol]
        else:
            return None
        for i in members:
            times[i] += int(coefficient)
    if min(times) < 0 or sum(times) != _int(layers, model.values):
        return None
    return tuple(times)


def _ordered(terms: list[Term], names: Names) -> list[Term]:
    """A layer's terms in the order the model code defines its modules (``names.order``: groups and leaves among
    their siblings), reader's order where it says nothing; a group's terms stay together."""
    units: list[tuple[str, list[Term]]] = []
    for term in terms:
        group = term.group if term.group in names.containers else None
        if group is not None and units and units[-1][0] == group:
            units[-1][1].append(term)
        else:
            units.append((group or term.path.split("/", 1)[1], [term]))
    units.sort(key=lambda unit: names.rank(unit[0]))
    return [t for _, unit in units for t in sorted(unit, key=lambda t: names.rank(t.path.split("/", 1)[1]))]


def _block(terms: list[Term], model: Model, biased: set[str], depth: int, lang: str, names: Names) -> list[str]:
    """The lines of one layer's modules: each group in its container, the norms directly."""
    lines: list[str] = []
    pad = INDENT * depth
    open_group = None
    for term in _ordered(terms, names):
        group = term.group if term.group in names.containers else None
        if group != open_group:
            if open_group is not None:
                lines.append(f"{pad})")
            if group is not None:
                attribute, kind = names.containers[group]
                lines.append(f"{pad}({attribute}): {kind}(")
            open_group = group
        inner = pad + (INDENT if group is not None else "")
        lines.append(inner + leaf(term, model, biased, lang, names.linear, names.renamed))
    if open_group is not None:
        lines.append(f"{pad})")
    return lines


def module_tree(model: Model, lang: str = "en") -> str:
    """The tree, as plain text for a code block (see the module docstring)."""
    terms = [t for t in model.derivation.terms if not t.path.endswith(".bias")]
    biased = {t.path.split("/", 1)[1].removesuffix(".bias") for t in model.derivation.terms if t.path.endswith(".bias")}
    heads = [t for t in terms if t.group == "head"]
    layered = [t for t in terms if t.layers != 1]
    before = [t for t in terms if t.layers == 1 and t.group == "embedding"]
    after = [t for t in terms if t.layers == 1 and t not in before and t not in heads]
    names = Names.of(model)
    lines = [f"{names.top}(", f"{INDENT}({names.model}): {names.model_class}("]
    lines += [INDENT * 2 + leaf(t, model, biased, lang) for t in before]
    if layered:
        lines.append(f"{INDENT * 2}({names.layers}): ModuleList(")
        lines += _layers(layered, model, biased, lang, names)
        lines.append(f"{INDENT * 2})")
    lines += [INDENT * 2 + leaf(t, model, biased, lang) for t in after]
    lines.append(f"{INDENT})")
    lines += [INDENT + leaf(t, model, biased, lang, renamed=names.renamed) for t in heads]
    if not heads and model.tied and d in model.values and V in model.values:
        head = names.renamed.get("lm_head", "lm_head")
        shape = f"in_features={model.values[d]}, out_features={model.values[V]}"
        lines.append(f"{INDENT}({head}): Linear({shape}, bias=False)")
    lines.append(")")
    return "\n".join(lines)


def _layers(layered: list[Term], model: Model, biased: set[str], lang: str, names: Names) -> list[str]:
    pad = INDENT * 3
    indices = {t.layers: _layer_indices(model, t.layers) for t in layered}
    if any(v is None for v in indices.values()):  # the config does not say which layers: one block per count
        lines = []
        for layers in dict.fromkeys(t.layers for t in layered):
            count = _int(layers, model.values)
            lines.append(f"{pad}({layers}): {count} x {names.layer_class}(")
            lines += _block([t for t in layered if t.layers == layers], model, biased, 4, lang, names)
            lines.append(f"{pad})")
        return lines
    total = model.values[N]
    kinds = [tuple(t for t in layered if i in indices[t.layers]) for i in range(total)]
    runs: list[tuple[int, int]] = []  # (first, last) of consecutive identical layers
    for i in range(total):
        if runs and kinds[runs[-1][0]] == kinds[i]:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    if len(runs) <= MAX_RUNS:
        blocks = [(f"{a}" if a == b else f"{a}-{b}", b - a + 1, kinds[a]) for a, b in runs]
    else:
        distinct = list(dict.fromkeys(kinds))
        blocks = [
            (_ranges([i for i in range(total) if kinds[i] == k]), sum(1 for x in kinds if x == k), k) for k in distinct
        ]
    lines = []
    for label, count, terms in blocks:
        lines.append(
            f"{pad}({label}): " + (f"{count} x {names.layer_class}(" if count > 1 else f"{names.layer_class}(")
        )
        lines += _block(list(terms), model, biased, 4, lang, names)
        lines.append(f"{pad})")
    return lines


ACTIVATIONS = {
    "gelu": "GELUActivation()",
    "gelu_10": "ClippedGELUActivation()",
    "gelu_fast": "FastGELUActivation()",
    "gelu_new": "NewGELUActivation()",
    "gelu_python": "GELUActivation()",
    "gelu_pytorch_tanh": "GELUTanh()",
    "gelu_python_tanh": "GELUTanh()",
    "gelu_accurate": "AccurateGELUActivation()",
    "hardswish": "Hardswish()",
    "laplace": "LaplaceActivation()",
    "leaky_relu": "LeakyReLU(negative_slope=0.01)",
    "linear": "LinearActivation()",
    "mish": "MishActivation()",
    "quick_gelu": "QuickGELUActivation()",
    "relu": "ReLU()",
    "relu2": "ReLUSquaredActivation()",
    "relu6": "ReLU6()",
    "sigmoid": "Sigmoid()",
    "silu": "SiLUActivation()",
    "sqrtsoftplus": "SqrtSoftplusActivation()",
    "swish": "SiLU()",
    "tanh": "Tanh()",
    "prelu": "PReLU(num_parameters=1)",
    "xielu": "XIELUActivation()",
}
"""What ``print`` shows for the module ``ACT2FN[name]`` builds: transformers 5.24.0 ``activations.py`` (ACT2CLS)."""

_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


class _Unfit(Exception):
    """The config leaves the record's printed tree (a kind of layer it has no template for)."""


def _field(text: str, model: Model) -> str:
    """One ``{...}`` of a ``[printed]`` template at this config (see :func:`printed_tree`)."""
    kind, _, rest = text.partition(":")
    if kind in ("key", "act") and rest:
        first, *rewrites = rest.split(" ")
        key, _, default = first.partition("=")
        value = model.config.get(key, json.loads(default)) if default else model.config.get(key)
        if kind == "act":
            value = dict(r.split("=", 1) for r in rewrites if "=" in r).get(value, value)  # as the class reads it
            if not isinstance(value, str) or value not in ACTIVATIONS:
                raise _Unfit(f"activation {value!r}")
            return ACTIVATIONS[value]
        return str(value)
    if kind == "pad" and rest:  # torch's Embedding prints its padding_idx only when it has one
        key, _, default = rest.partition("=")
        value = model.config.get(key, json.loads(default)) if default else model.config.get(key)
        return "" if value is None else f", padding_idx={value}"
    if kind == "bias" and rest:
        return str(any(t.path == rest + ".bias" for t in model.terms))
    return str(_int(formula(text, "[printed]"), model.values))


def _fill(template: str, model: Model) -> str:
    def one(match: re.Match) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        return _field(match.group(1), model)

    return _FIELD.sub(one, template)


def module_list(reprs: list[str], name: str = "ModuleList") -> str:
    """``torch.nn.ModuleList.__repr__`` of modules with these reprs: runs of equal ones collapsed, (0-63): 64 x ...
    (``name``: the list's class name)."""
    if not reprs:
        return name + "()"
    blocks: list[list] = []
    for i, text in enumerate(reprs):
        if blocks and blocks[-1][2] == text:
            blocks[-1][1] = i
        else:
            blocks.append([i, i, text])
    lines = []
    for a, b, text in blocks:
        label = f"({a}): " if a == b else f"({a}-{b}): {b - a + 1} x "
        first, *rest = (label + text).split("\n")
        lines.append("\n".join([first, *[("  " + line) if line.strip() else "" for line in rest]]))
    return name + "(\n  " + "\n  ".join(lines) + "\n)"


def _unbuilt(text: str, when: Mapping[str, str], model: Model) -> str:
    """``text`` without the one-line modules of ``when`` whose config key is false (the model does not build them)."""
    for name, rule in when.items():
        key, _, default = rule.partition("=")
        if not model.config.get(key, json.loads(default)):
            text = "\n".join(line for line in text.split("\n") if not line.lstrip().startswith(f"({name}): "))
    return text


def stack_counts(model: Model) -> frozenset[Expr]:
    """The layer counts of the ``[printed]`` table's ``stacks``: lists of layers apart from the decoder's (a vision
    tower's encoder layers), each printed as one repeated layer."""
    table = model.architecture.printed or {}
    return frozenset(
        formula(stack["count"], "[printed] stacks")
        for i, stack in enumerate(table.get("stacks", ()))
        if f"{{stack:{i}}}" in table.get("text", "")  # not a list inside a layer (its layers are the decoder's)
    )


def layer_kinds(model: Model, stacks: frozenset[Expr] | None = None) -> list[tuple[str, ...]] | None:
    """Each decoder layer's kind, as a ``[printed]`` table keys its templates: the paths of the record's terms in
    that layer (biases aside; ``path*2`` for a term the layer carries twice, see :func:`layer_times`), and
    ``@symbol`` for each of the table's ``by`` symbols whose layers include it. None when the config does not say
    which layers a term (or a ``by`` symbol) counts."""
    total = model.values.get(N)
    apart = stack_counts(model) if stacks is None else stacks
    layered = [
        t for t in model.derivation.terms if t.layers != 1 and t.layers not in apart and not t.path.endswith(".bias")
    ]
    named = {symbol.name: symbol for symbol in model.layer_indices}
    by = [named.get(name) for name in (model.architecture.printed or {}).get("by", ())]
    if None in by:  # a `by` symbol this config does not give layer by layer
        return None
    times = {layers: layer_times(model, layers) for layers in [*(t.layers for t in layered), *by]}
    if total is None or any(v is None for v in times.values()):
        return None
    return [
        tuple(
            sorted(
                {
                    t.path + (f"*{times[t.layers][i]}" if times[t.layers][i] > 1 else "")
                    for t in layered
                    if times[t.layers][i] > 0
                }
            )
        )
        + tuple(f"@{symbol}" for symbol in by if times[symbol][i] > 0)
        for i in range(total)
    ]


def _expand(template: str, lists: Mapping[str, str], model: Model) -> str:
    """``template`` filled in, each placeholder of ``lists`` (``{layers}``, ``{stack:0}``) replaced by its list's
    lines, indented as the line it stands on."""
    for j, placeholder in enumerate(lists):
        template = template.replace(placeholder, f"\0{j}\0")
    lines = []
    for line in _fill(template, model).split("\n"):
        for j, block in enumerate(lists.values()):
            if f"\0{j}\0" in line:
                pad = " " * (len(line) - len(line.lstrip(" ")))
                first, *rest = block.split("\n")
                line = line.replace(f"\0{j}\0", "\n".join([first, *[pad + x if x.strip() else "" for x in rest]]))
        lines.append(line)
    return "\n".join(lines)


def printed_tree(model: Model) -> str | None:
    """What ``print(model)`` prints in transformers for this config: the record's ``[printed]`` table (written by
    ``python -m llmcount.discover.printed`` from a model built on the meta device) filled in with the config's values.
    A template's ``{formula}`` is a size in the record's symbols, ``{key:name=default}`` a config value,
    ``{act:name=default}`` the activation module the config names (``{act:name=default a=b}``: the config class
    reads a as b), ``{bias:path}`` whether the config has the term's bias, ``{pad:pad_token_id=default}`` an
    Embedding's padding_idx, ``{layers}`` the decoder layers' list (one template per kind of layer, by the record's
    terms in it; once per stack when the model runs several stacks of the same layers). None when the record has no
    such table or the config has a kind of layer the table does not describe."""
    table = model.architecture.printed
    if not table or "text" not in table:
        return None
    total = model.values.get(N)
    if total is None or total > MAX_LAYERS:
        return None
    keys = layer_kinds(model)
    if keys is None:
        return None
    kinds = {tuple(layer["terms"]): layer["text"] for layer in table["layers"]}
    try:
        stacks = {}
        for i, stack in enumerate(table.get("stacks", ())):
            count = _int(formula(stack["count"], "[printed] stacks"), model.values)
            if count > MAX_LAYERS:
                return None
            stacks[f"{{stack:{i}}}"] = module_list([_fill(stack["text"], model)] * count)
        filled: dict[tuple[str, ...], str] = {}
        reprs = []
        renamed = Names.of(model).renamed
        for key in keys:
            if key not in kinds:
                composed = _composed(key, kinds, renamed)
                if composed is None:
                    return None
                kinds[key] = composed
            if key not in filled:
                filled[key] = _unbuilt(_expand(kinds[key], stacks, model), table.get("when", {}), model)
            reprs.append(filled[key])
        lines = _expand(table["text"], {"{layers}": module_list(reprs), **stacks}, model).split("\n")
    except (_Unfit, LlmcountError, RecordError):
        return None
    return "\n".join(lines).rstrip("\n")


def _group(entry: str) -> str:
    """The group of a kind's entry: ``attention`` of ``attention/q_proj``; a ``by`` entry (``@N_sliding``) its own."""
    return entry.split("/", 1)[0]


def _children(text: str) -> list[tuple[str, list[str]]] | None:
    """A layer template's modules: (attribute, lines) of each line or block at the first indent; None when the text
    is not one module of modules."""
    lines = text.split("\n")
    if len(lines) < 3 or not lines[0].endswith("(") or lines[-1] != ")":
        return None
    children: list[tuple[str, list[str]]] = []
    for line in lines[1:-1]:
        match = re.match(r"^  \(([\w.]+)\): ", line)
        if match:
            children.append((match.group(1), [line]))
        elif children and (line.startswith("   ") or line == "  )"):
            children[-1][1].append(line)
        else:
            return None
    return children


def _groups_in(lines: list[str], key: tuple[str, ...], renamed: Mapping[str, str]) -> set[str]:
    """The groups of ``key`` whose modules one child prints (a module of a term's path, by the model code's name)."""
    text = "\n".join(lines)
    found = set()
    for entry in key:
        if entry.startswith("@"):
            continue
        parts = entry.split("/", 1)[1].split("*", 1)[0].split(".")
        if any(f"({renamed.get(part, part)}):" in text for part in parts):
            found.add(_group(entry))
    return found


def _composed(key: tuple[str, ...], kinds: Mapping[tuple[str, ...], str], renamed: Mapping[str, str]) -> str | None:
    """The template of a kind of layer no build printed, from those of kinds that were: a printed kind whose modules
    differ from it in whole groups (its MLP dense where the kind's is a mixture of experts), each such group's
    modules taken from a printed kind that has exactly the terms of that group the kind has. None when no printed
    kinds combine into it (each module of one group only, the replaced modules in the same places)."""

    def by_group(entries: tuple[str, ...]) -> dict[str, frozenset[str]]:
        out: dict[str, set[str]] = {}
        for entry in entries:
            out.setdefault(_group(entry), set()).add(entry)
        return {g: frozenset(v) for g, v in out.items()}

    want = by_group(key)
    for base, text in kinds.items():
        have = by_group(base)
        if {e for e in base if e.startswith("@")} != {e for e in key if e.startswith("@")}:
            continue
        differ = {g for g in set(want) | set(have) if want.get(g) != have.get(g)}
        children = _children(text)
        if children is None or not differ or len(differ) > 2:
            continue
        marked = [(name, lines, _groups_in(lines, base, renamed)) for name, lines in children]
        if any(len(groups) > 1 and groups & differ for _, _, groups in marked):
            continue
        # the modules each differing group needs, from a printed kind with exactly that group's terms
        wanted: list[tuple[str, list[str]]] = []
        for group in sorted(g for g in differ if g in want):
            donor = next(
                (
                    other
                    for other, other_text in kinds.items()
                    if by_group(other).get(group) == want[group] and _children(other_text) is not None
                ),
                None,
            )
            if donor is None:
                break
            wanted += [
                (name, lines)
                for name, lines in _children(kinds[donor]) or []
                if _groups_in(lines, donor, renamed) == {group}
            ]
        else:
            kept: list[tuple[str, list[str]]] = []
            placed = False
            for name, lines, groups in marked:
                if groups & differ:
                    if not placed:  # the new modules where the replaced ones were
                        kept += wanted
                        placed = True
                    continue
                kept.append((name, lines))
            if not placed:
                continue
            names = [name for name, _ in kept]
            if len(set(names)) != len(names):
                continue
            return "\n".join([text.split("\n", 1)[0], *(line for _, lines in kept for line in lines), ")"])
    return None
