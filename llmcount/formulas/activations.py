"""Activations: the bytes of the tensors one training step keeps for the backward pass, from a record's
optional ``[activations]`` table (format in ``families/README.md``).

The table lists, in reader's order, every tensor that autograd saves during the forward pass of the family's
transformers code: its size per token (or per sequence, per position, or once per step) as a formula over the glossary's
symbols and S, its dtype (the compute dtype, fp32 where the code upcasts, int64 for token ids), and which
attention implementation keeps it. A tensor saved by several operations is listed once, so the sum is the sum
of distinct storages, as the oracle measures it (``tests/test_activations.py``: ``saved_tensors_hooks`` on a
training forward, weights excluded). A family without the table is refused by name, never guessed.

Options:

* ``attention``: ``eager`` keeps the S×S attention probabilities (fp32 softmax output and, in bf16/fp16, its
  cast); ``flash`` (a fused kernel: flash-attention, PyTorch's SDPA flash kernel) keeps only q, k, v, the
  output and the fp32 log-sum-exp per query and head;
* ``recompute`` (Megatron-LM, Korthikanti et al. 2022): ``none``; ``selective`` recomputes the core attention
  (QK^T, softmax, attention over V) in the backward pass and keeps only its inputs q, k, v; ``full`` keeps
  each layer's input (d values per token in the compute dtype) and recomputes the layer, so one layer's
  activations are alive again during its backward (counted once, the heaviest layer);
* tensor parallelism (Korthikanti et al. 2022) divides by tp every saved tensor whose size has a size it splits
  in it (:data:`.training.TP_SPLIT`: heads, MLP widths, the vocabulary, ...) or that its entry marks
  ``tp = "split"`` (a column-parallel layer's output written in d); the others (a column-parallel layer's input,
  norm inputs: B·S·d) are replicated, and divided only with ``sequence_parallel``; token ids and
  per-position tensors are replicated; tensors of token-expert pairs (sizes with k in them) are divided only
  with ``sequence_parallel`` (experts are not split by tp; each rank routes its own tokens, and with balanced
  routing every GPU of an expert-parallel group computes as many pairs as it sends);
* pipeline parallelism (1F1B): stage s (1 to pp) keeps pp - s + 1 micro-batches of its layers in flight (the first
  pp, the last one), stages as in :mod:`.training`; the GPU counted is on the heaviest stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from sympy import Add, Expr, Integer, ceiling, expand

from ..errors import LlmcountError
from .blocks import ONE
from .expressions import Condition, RecordError, condition, formula
from .layer_kinds import Kind, is_model_level, kinds, layer_sequence, stages
from .memory import BITS
from .records import TP_CHOICES, Family
from .symbols import B, N, S, d, k
from .training import TP_SPLIT

ATTENTION = ("sdpa", "eager", "flash")
"""How attention runs in training: ``sdpa``, transformers' default attn_implementation, whose fused kernel (PyTorch's
flash or memory-efficient scaled_dot_product_attention) keeps what a FlashAttention kernel keeps (the entries a
record marks ``core = "flash"``, checked against autograd with SDPA's kernel); ``eager`` keeps the S×S probabilities;
``flash`` (flash_attention_2) keeps the same as ``sdpa``."""
KEPT_AS = {"sdpa": "flash"}  # the record entries an attention implementation keeps, when named after another
EAGER_FOR_SDPA = (
    "sdpa's fused-kernel tensors are not derived for this family, so eager attention's are counted (what "
    "transformers runs for a model without SDPA support; an upper bound where it runs SDPA)"
)
RECOMPUTE = ("none", "selective", "full")
DTYPES = ("compute", "fp32", "int64", "int32", "bool")
PER = ("token", "position", "sequence", "step")
CORE = ("eager", "flash", "inputs")

ASSUMPTIONS = (
    "tensors autograd keeps for backward in one training step, each storage once, as the family's transformers "
    "code saves them with the model in the compute dtype (norms upcast to fp32, eager softmax in fp32), dropout "
    "off; weights, gradients, the optimizer's temporaries and the allocator's workspace are not activations"
)


class NotDerived(LlmcountError):
    """The family has no table, or the config is one its table was not checked for: activations are refused by
    name (``memory --training`` still gives the model states)."""

    def __init__(self, family: Family, reason: str) -> None:
        self.why = f"{self.prefix(family)}{reason}"
        super().__init__(f"activations: {self.why}")

    @staticmethod
    def prefix(family: Family) -> str:
        """What every refusal's ``why`` starts with, before its reason."""
        return f"not derived for {family.title} ({family.name}): "


@dataclass(frozen=True)
class Saved:
    """One saved tensor of the record: elements per token (per position, per sequence, per step), its dtype, where
    kept."""

    path: str
    expr: Expr
    dtype: str = "compute"
    layers: Expr = ONE
    per: str = "token"
    core: str = ""  # "" (always), "eager", "flash" or "inputs" (kept under selective recomputation)
    cast: bool = False  # a copy made only when the compute dtype is not fp32 (in fp32 the same storage as another)
    fp32_only: bool = False  # kept only in fp32 training (the rest of a storage an fp32 view above belongs to)
    summed: bool = False  # a model-level entry that sums tensors of every layer (their sizes differ layer by layer)
    note: str = ""
    when: Condition | None = None  # kept only when this condition on the config holds
    tp: str = ""  # "split" or "replicated": how tensor parallelism treats it, where its size does not tell

    def width(self, compute: str) -> int:
        return {"compute": BITS[compute] // 8, "fp32": 4, "int64": 8, "int32": 4, "bool": 1}[self.dtype]

    def split(self, tp: int, sequence_parallel: bool) -> Expr:
        """The part of :meth:`bytes_formula`'s elements one tensor-parallel rank keeps, as a factor per monomial."""
        if tp == 1 or self.per != "token" or self.dtype in ("int64", "int32", "bool"):
            return self.expr
        if self.tp:
            return self.expr / tp if self.tp == "split" or sequence_parallel else self.expr
        parts = Integer(0)
        for monomial in Add.make_args(self.expr.expand()):
            if k in monomial.free_symbols:  # token-expert pairs: experts are not split by tp, tokens are with sp
                parts += monomial / tp if sequence_parallel else monomial
            elif monomial.free_symbols & set(TP_SPLIT) or sequence_parallel:
                parts += monomial / tp
            else:
                parts += monomial
        return parts


_FIELDS = {"path", "expr", "dtype", "layers", "per", "core", "cast", "fp32_only", "summed", "note", "when", "tp"}


def _saved(data: Any, where: str) -> Saved:
    if not isinstance(data, dict):
        raise RecordError(f"{where}: expected a table")
    unknown = set(data) - _FIELDS
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    path = data.get("path")
    if not isinstance(path, str):
        raise RecordError(f"{where}: 'path' must be a string")
    where = f"{where} ({path})"
    for name, choices in (("dtype", DTYPES), ("per", PER), ("core", CORE), ("tp", TP_CHOICES)):
        if name in data and data[name] not in choices:
            raise RecordError(f"{where}: {name} must be one of {', '.join(choices)}")
    for flag in ("cast", "fp32_only", "summed"):
        if not isinstance(data.get(flag, False), bool):
            raise RecordError(f"{where}: '{flag}' must be true or false")
    return Saved(
        path=path,
        expr=formula(str(data.get("expr", "")), f"{where}.expr"),
        dtype=data.get("dtype", "compute"),
        layers=formula(str(data.get("layers", "1")), f"{where}.layers"),
        per=data.get("per", "token"),
        core=data.get("core", ""),
        cast=data.get("cast", False),
        fp32_only=data.get("fp32_only", False),
        summed=data.get("summed", False),
        note=str(data.get("note", "")),
        when=condition(str(data["when"]), f"{where}.when") if "when" in data else None,
        tp=data.get("tp", ""),
    )


@dataclass(frozen=True)
class Table:
    """A record's ``[activations]`` table, parsed."""

    saved: tuple[Saved, ...]
    note: str = ""
    refuse: tuple[tuple[Condition, str], ...] = ()  # (condition, reason): a config it holds for is refused
    layer_input: Expr = d  # elements per token of a layer's input: what --recompute full keeps of each layer


@cache
def _parse(name: str, table: str) -> Table:
    import json

    data = json.loads(table)
    where = f"families/{name}.toml [activations]"
    unknown = set(data) - {"saved", "note", "refuse", "layer_input"}
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    items = data.get("saved")
    if not isinstance(items, list) or not items:
        raise RecordError(f"{where}: expected [[activations.saved]] entries")
    saved = tuple(_saved(item, f"{where} saved[{i}]") for i, item in enumerate(items))
    refusals = _refusals(data.get("refuse", []), f"{where} refuse")
    layer_input = formula(str(data.get("layer_input", "d")), f"{where}.layer_input")
    return Table(saved, str(data.get("note", "")), refusals, layer_input)


def _refusals(data: Any, where: str) -> tuple[tuple[Condition, str], ...]:
    pairs = isinstance(data, list) and all(
        isinstance(r, list) and len(r) == 2 and all(isinstance(x, str) for x in r) for r in data
    )
    if not pairs:
        raise RecordError(f"{where}: expected a list of [condition, reason] pairs")
    return tuple((condition(text, f"{where} {text!r}"), reason) for text, reason in data)


def table(family: Family) -> Table | None:
    """The family's parsed ``[activations]`` table, None when the record has none; RecordError when an entry
    uses a symbol the record does not read (or count in [layers])."""
    if family.activations is None:
        return None
    import json

    parsed = _parse(family.name, json.dumps(family.activations, sort_keys=True))
    known = {spec.symbol for spec in family.symbols} | {symbol for symbol, _, _ in family.layers} | {S}
    for entry in parsed.saved:
        missing = (entry.expr.free_symbols | entry.layers.free_symbols) - known
        if missing:
            names = ", ".join(sorted(map(str, missing)))
            raise RecordError(
                f"families/{family.name}.toml [activations] {entry.path} uses {names}, not read by the record"
            )
    if not parsed.layer_input.free_symbols <= known - {S}:
        raise RecordError(f"families/{family.name}.toml [activations] layer_input uses a symbol not read by the record")
    return parsed


@dataclass(frozen=True)
class Options:
    attention: str = "eager"  # the record's own default; estimate(), the API and the CLI default to "sdpa"
    recompute: str = "none"
    tp: int = 1
    pp: int = 1
    sequence_parallel: bool = False


@dataclass(frozen=True)
class LayerKind:
    """Activations of one layer of one kind."""

    name: str
    count: int
    formula: Expr  # bytes in one layer
    bytes: int
    components: tuple[tuple[str, Expr, int], ...]  # (path, bytes formula, bytes) in one layer
    layers: Expr = N  # how many layers are of this kind, as an expression (N, N_dense, N - N_dense)


@dataclass(frozen=True)
class Activations:
    """Activations of one training step of B sequences of S tokens: whole model and per GPU."""

    dtype: str
    options: Options
    formula: Expr  # whole model, bytes
    bytes: int  # whole model
    per_layer_kind: tuple[LayerKind, ...]
    model_level: tuple[tuple[str, Expr, int], ...]  # (path, bytes formula, bytes) kept once per model
    per_gpu_bytes: int
    per_gpu_note: str
    per_stage_bytes: tuple[int, ...] = ()  # with pipeline parallelism: each stage's bytes, stage 1 first
    per_gpu_layer_bytes: tuple[int, ...] = ()  # one layer of each kind (per_layer_kind's order) on the counted GPU
    assumptions: str = ASSUMPTIONS


def choose(
    saved: tuple[Saved, ...], compute: str, attention: str, recompute: str, namespace: Mapping[str, Any]
) -> list[Saved]:
    """The entries kept under these options (before full recomputation) for a config (``namespace``: its keys and
    symbols by name, for the entries' ``when``)."""
    if attention not in ATTENTION:
        raise LlmcountError(f"unknown attention {attention!r}; choices: {', '.join(ATTENTION)}")
    if recompute not in RECOMPUTE:
        raise LlmcountError(f"unknown recompute mode {recompute!r}; choices: {', '.join(RECOMPUTE)}")
    core = "inputs" if recompute == "selective" else KEPT_AS.get(attention, attention)
    if any(s.core for s in saved) and not any(s.core == core for s in saved):  # a table without attention fits all
        what = "--recompute selective" if core == "inputs" else f"--attention {attention}"
        raise LlmcountError(f"activations: {what} is not derived for this family: no entries checked against autograd")
    return [
        s
        for s in saved
        if (not s.core or s.core == core)
        and not (s.cast and compute == "fp32")
        and not (s.fp32_only and compute != "fp32")
        and (s.when is None or bool(s.when(namespace)))
    ]


def activations(
    family: Family,
    values: Mapping,
    compute: str,
    batch: int,
    seq: int,
    options: Options | None = None,
    keys: Mapping[str, Any] | None = None,
) -> Activations:
    """Activations of B × S tokens (module docstring); LlmcountError when the record has no ``[activations]``."""
    options = options or Options()
    parsed = table(family)
    if parsed is None:
        raise NotDerived(family, "its record has no [activations] table checked against autograd")
    keys = dict(keys or {})
    counts = {symbol: keys[symbol.name] for symbol, _, _ in family.layers if symbol.name in keys}
    values = {**counts, **values}
    namespace = {**keys, **{spec.symbol.name: None for spec in family.symbols}}
    namespace.update({symbol.name: value for symbol, value in values.items()})
    namespace[S.name] = seq  # a condition may read the sequence length (a mask kept only past a window)
    namespace["compute_dtype"] = compute  # and the training dtype (a model whose forward fails in bf16)
    namespace[B.name] = batch  # and the batch (a copy made only when the batch cannot be folded into a view)
    for test, reason in parsed.refuse:
        if test(namespace):
            raise NotDerived(family, reason)
    assumptions = ASSUMPTIONS
    cores = {s.core for s in parsed.saved}
    if options.attention == "sdpa" and "eager" in cores and "flash" not in cores:
        options, assumptions = replace(options, attention="eager"), f"{ASSUMPTIONS}; {EAGER_FOR_SDPA}"
    try:
        chosen = choose(parsed.saved, compute, options.attention, options.recompute, namespace)
    except LlmcountError as exc:
        raise LlmcountError(str(exc).replace("this family", f"{family.title} ({family.name})")) from None
    env = {**values, B: batch, S: seq}
    counted = {s for e in chosen for s in e.layers.free_symbols}
    layer_entries = [e for e in chosen if not is_model_level(e.layers, counted)]
    model_entries = [e for e in chosen if is_model_level(e.layers, counted)]
    if options.pp > 1 or options.recompute == "full":
        _refuse_summed(family, model_entries, options)

    def evaluate(expr: Expr, what: str) -> int:
        value = expr.subs(env)
        if not value.is_Integer:
            raise LlmcountError(f"activations: {what} does not evaluate to a whole number of bytes ({value})")
        return int(value)

    def layer(kind: Kind, entries, tp=1, sp=False) -> LayerKind:
        parts = []
        for e in entries:
            times = kind.times(e.layers)
            if times:
                f = times * e.width(compute) * _scale(e) * e.split(tp, sp)
                parts.append((e.path, f, e))
        formula_ = _per_token(Add(*(f for _, f, _ in parts))) if parts else Integer(0)
        components = tuple((path, f, _ceil(f, env)) for path, f, _ in parts)
        return LayerKind(kind.name, kind.count, formula_, sum(c[2] for c in components), components, kind.count_expr)

    def model_parts(entries, tp=1, sp=False):
        return tuple((e.path, int(e.layers) * e.width(compute) * _scale(e) * e.split(tp, sp), e) for e in entries)

    layer_kinds = kinds((e.layers for e in layer_entries), values, family, keys)
    full = [layer(k, layer_entries) for k in layer_kinds]
    model_level = tuple((p, f, evaluate(f, p)) for p, f, _ in model_parts(model_entries))
    if options.recompute == "full":
        checkpoint = BITS[compute] // 8 * B * S * parsed.layer_input
        kept = evaluate(checkpoint, "layer input")
        part = (("layer input", checkpoint, kept),)
        per_kind = tuple(LayerKind(k.name, k.count, checkpoint, kept, part, k.layers) for k in full)
        heaviest = max(full, key=lambda k: k.bytes)
        working = ("recomputed layer", heaviest.formula, heaviest.bytes)
        model_level = (*model_level, working)
    else:
        per_kind = tuple(full)
    total_formula = Add(*(k.count_expr * lk.formula for k, lk in zip(layer_kinds, per_kind, strict=True)))
    total_formula += Add(*(f for _, f, _ in model_level))
    total = sum(lk.count * lk.bytes for lk in per_kind) + sum(b for _, _, b in model_level)

    # per GPU: tensor (and sequence) parallel split, pipeline stages
    tp, sp, pp = options.tp, options.sequence_parallel, options.pp
    split = [layer(k, layer_entries, tp, sp) for k in layer_kinds]
    if options.recompute == "full":
        checkpoint_gpu = _ceil(BITS[compute] // 8 * B * S * parsed.layer_input / (tp if sp else 1), env)
        layers_gpu = [(lk.count, checkpoint_gpu) for lk in split]
        working_gpu = max(lk.bytes for lk in split)
    else:
        layers_gpu = [(lk.count, lk.bytes) for lk in split]
        working_gpu = 0
    first_level = sum(_ceil(f, env) for p, f, e in model_parts(model_entries, tp, sp) if _first_stage(e))
    last_level = sum(_ceil(f, env) for p, f, e in model_parts(model_entries, tp, sp) if not _first_stage(e))
    candidates: list[int] = []
    if pp == 1:
        per_gpu = sum(c * b for c, b in layers_gpu) + working_gpu + first_level + last_level
        note = "one GPU holds every layer"
        if tp > 1:
            note += f", tensor parallel over {tp}" + (" with sequence parallelism" if sp else "")
    else:
        per_layer_gpu = {kind.name: size for kind, (_, size) in zip(layer_kinds, layers_gpu, strict=True)}
        runs = stages(values[N], pp)
        sequence = layer_sequence(family, values, keys, layer_kinds)
        if sequence is None:  # the order of the layer kinds cannot be told: the heaviest kind everywhere
            sequence = [max(per_layer_gpu, key=per_layer_gpu.get)] * values[N]
            bound = " (its layers taken of the heaviest kind: an upper bound)"
        else:
            bound = ""
        for number, run in enumerate(runs):
            size = (pp - number) * sum(per_layer_gpu[sequence[i]] for i in run) + working_gpu
            size += (first_level if number == 0 else 0) + (last_level if number == pp - 1 else 0)
            candidates.append(size)
        best = max(range(pp), key=candidates.__getitem__)
        per_gpu = candidates[best]
        note = (
            f"pipeline 1F1B: stage s of pp keeps pp - s + 1 micro-batches of its layers in flight; counted: stage "
            f"{best + 1} of {pp}{bound}"
        )
    return Activations(
        dtype=compute,
        options=options,
        formula=total_formula,
        bytes=total,
        per_layer_kind=per_kind,
        model_level=model_level,
        per_gpu_bytes=per_gpu,
        per_gpu_note=note,
        per_stage_bytes=tuple(candidates) if pp > 1 else (),
        per_gpu_layer_bytes=tuple(size for _, size in layers_gpu),
        assumptions=assumptions,
    )


def _refuse_summed(family: Family, entries: list[Saved], options: Options) -> None:
    """A model-level entry whose size sums a per-layer list (a symbol read with ``entries = "sum"``: query heads that
    differ per layer) or that says ``summed`` (sizes that grow with the layer index) holds every layer's tensors at
    once: it cannot be split into pipeline stages or left out layer by layer, so --pp and --recompute full are
    refused for it by name."""
    for e in entries:
        if e.summed or e.expr.free_symbols & family.summed:
            what = f"--pp {options.pp}" if options.pp > 1 else "--recompute full"
            raise NotDerived(family, f"{what}: {e.path} is summed over the layers (their sizes differ per layer)")


def _per_token(expr: Expr) -> Expr:
    """``B·S·(...)`` when every part is per token, for reading: ``B·S·(16·d + 8·d_ff + ...)``."""
    quotient = expand(expr / (B * S))
    return B * S * quotient if quotient.as_numer_denom()[1] == 1 else expr


def _scale(e: Saved) -> Expr:
    return {"token": B * S, "position": S, "sequence": B, "step": Integer(1)}[e.per]


def _ceil(expr: Expr, env: Mapping) -> int:
    return int(ceiling(expr.subs(env)))


def _first_stage(e: Saved) -> bool:
    """Model-level tensors of the first pipeline stage: the embedding's (token ids, position tables)."""
    return e.path.split("/", 1)[0] == "embedding"
