"""Serving memory per GPU: the weights and the KV cache one GPU holds when an inference engine runs the model over
``tp`` tensor-parallel, ``pp`` pipeline, ``dp`` data-parallel ranks (``ep``: experts over ranks), whether that fits
a named GPU, and the longest context and most concurrent sequences that fit (:func:`fit`).

Every amount is an exact number of bytes (a Python int); GB (10^9) and GiB (2^30) are made at output.

The split is vLLM's (``SERVING_ASSUMPTIONS``); the sizes tp splits and keeps whole are those of training's
Megatron-LM layout (:mod:`llmcount.formulas.training`: ``TP_SPLIT``, ``TP_REPLICATED``, :func:`tp_split`), with
three differences an inference engine makes: the vocabulary is padded to a multiple of 64 rows before it is split
(:data:`VOCAB_PADDING`), key-value heads fewer than tp are copied rather than refused
(:func:`~llmcount.formulas.training.kv_replicated`), and the routed experts are divided over the tp·dp ranks
(:data:`EXPERTS_NOTE`). The KV cache per GPU is transformers' cache (:func:`llmcount.formulas.memory.layer_kinds`)
split the same way: a per-token amount written in a size tp splits (heads, or d = h·d_h for the keys and values of
all heads) is divided by tp, one written only in sizes tp keeps whole (MLA's latent r_kv + d_rope, an indexer's
keys) is on every tp rank. :func:`fit` takes the KV rule as a callable, so an engine's own cache rule can replace
transformers'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from .errors import LlmcountError
from .shown import Shown
from .sizes import gb_gib
from .tower_parallel import placement

if TYPE_CHECKING:
    from sympy import Expr, Symbol

    from .formulas.config import Model
    from .formulas.layer_kinds import Kind

VOCAB_PADDING = 64
"""vLLM pads the vocabulary to a multiple of 64 rows (``DEFAULT_VOCAB_PADDING_SIZE``, ``pad_vocab_size``) and then
divides the padded rows over the tp ranks (``divide``, which asserts it divides): VocabParallelEmbedding and
ParallelLMHead, vllm/model_executor/layers/vocab_parallel_embedding.py, vLLM commit 00db0119c376."""


@cache
def head_rows() -> dict[Symbol, Symbol]:
    """Per vocabulary size, the key under which a layout's values keep the head's rows per rank times tp (the
    embedding's are under the size itself): no formula has these symbols. Built when first asked for, so that the
    numeric path imports no sympy."""
    from sympy import Symbol

    from .formulas.training import TP_PADDED

    return {symbol: Symbol(f"{symbol}__head_rows_times_tp") for symbol in TP_PADDED}


EXPERTS_NOTE = (
    "routed experts over the tp·dp ranks: with expert parallelism (vLLM's --enable-expert-parallel: EP size = TP × "
    "DP, docs/serving/expert_parallel_deployment.md) n / (tp·dp) whole experts per GPU, without it each expert's "
    "matrices split over the same tp·dp ranks (FusedMoE flattens tp across dp): the same bytes per GPU"
)

STAGE_SPLITS = {
    "vllm": "vLLM's get_pp_indices splits them (the stages before the last one layer longer)",
    "sglang": "SGLang's get_pp_indices splits them (the last stages one layer longer)",
    "tensorrt-llm": "TensorRT-LLM's Mapping.pp_layers splits them (torch.tensor_split: the first stages one layer "
    "longer)",
}
"""How each engine splits the layers over pipeline stages (llmcount/engines/<name>.toml ``[pipeline]``)."""

ASSUMPTION_PARTS = {
    "tp": "vLLM's layout: column-parallel q/k/v and gate/up, row-parallel o and down, the embedding and head by "
    f"padded vocabulary rows (a multiple of {VOCAB_PADDING}, then / tp); norms, routers, MLA's down-projections and "
    "row-parallel biases whole on every rank; key-value heads fewer than tp copied (one per rank)",
    "experts": EXPERTS_NOTE,
    "pp": "pp splits the layers as {split}, the embedding on the first stage, the final norm and head on the last "
    "(a tied head: a copy of the embedding there), each stage's KV cache that of its own layers, and the GPU counted "
    "is the heaviest stage",
    "dp": "dp replicas each hold the weights and their own B sequences",
    "rest": "GPUs = tp·pp·dp; activations, CUDA graphs, the engine's workspace and fragmentation are not counted",
}
SERVING_ASSUMPTIONS = "; ".join(part.format(split=STAGE_SPLITS["vllm"]) for part in ASSUMPTION_PARTS.values())
"""All of :data:`ASSUMPTION_PARTS`; a shard states those of its layout (:func:`assumptions`)."""


def assumptions(layout: Layout, routed: bool) -> str:
    """The parts of :data:`ASSUMPTION_PARTS` that apply to ``layout`` (the experts' when the model has them)."""
    parts = ["tp"] + (["experts"] if routed else []) + (["pp"] if layout.pp > 1 else [])
    parts += (["dp"] if layout.dp > 1 else []) + ["rest"]
    said = {**ASSUMPTION_PARTS}
    if _engine_name(layout) in STAGE_SPLITS:
        said["pp"] = said["pp"].format(split=STAGE_SPLITS[_engine_name(layout)])
    if _engine_name(layout) == "llama.cpp":
        said["tp"] = "llama.cpp's --split-mode layer: whole layers on each GPU, split as noted"
        said["pp"] = "the GPU counted is the one whose layers, output layer and KV cache are the largest"
    elif _engine_name(layout) != "vllm":
        said["tp"] = (
            f"{_engine_title(layout)}'s layout: column-parallel q/k/v and gate/up, row-parallel o and down, the "
            "embedding and head by vocabulary rows as its model file lays them (noted); norms, routers, MLA's "
            "down-projections and row-parallel biases whole on every rank; key-value heads fewer than tp copied (one "
            "per rank)"
        )
    return "; ".join(said[part] for part in parts)


KvRule = Callable[[int, int], int]
"""KV-cache bytes one GPU holds for (S tokens, B sequences): transformers' cache split over the ranks by default
(:meth:`Plan.kv_bytes`); an engine's rule plugs in as ``kv(plan) -> KvRule`` (:func:`shard`, :func:`fit`)."""


class _Tabled(Shown):
    """A result shown in a notebook as the rows of :meth:`table_rows` (bytes in B, GB and GiB)."""

    def table_rows(self) -> tuple[str, list[tuple[str, str]]]:  # pragma: no cover - each result gives its own
        raise NotImplementedError

    def _table(self):
        from .renderers.notebook import Table

        caption, rows = self.table_rows()
        return Table(caption, ("", "value"), tuple(rows), "lr")

    def _repr_html_(self) -> str:
        return self._table().html()

    def _repr_markdown_(self) -> str:
        return self._table().markdown()


def _b(size: int) -> str:
    return f"{size:,} B ({gb(size)})"


@dataclass(frozen=True)
class Layout:
    """Parallel degrees of an inference engine: GPUs = tp · pp · dp; ``ep`` is 1 or tp · dp (vLLM's EP group);
    ``engine``: the engine whose layout of the vocabulary rows the weights follow (vLLM's when None)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    engine: str | None = None  # whose vocabulary rows per rank (engines/weights.py); None: vLLM's

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp


@dataclass(frozen=True, repr=False)
class Shard(_Tabled):
    """What one GPU holds: the weights of its share of the model and its KV cache for B sequences of S tokens."""

    layout: Layout
    dtype: str
    kv_dtype: str
    seq: int
    batch: int
    parameters: int  # of the whole model
    gpu_parameters: int  # on the GPU counted (vocabulary padding and copies included)
    weights_bytes: int
    kv_bytes: int
    stage: int  # with pp > 1 the stage (1 to pp) of the GPU counted; 0 without
    vocab_padded: int | None = None  # rows of the padded vocabulary, when the model has one
    notes: tuple[str, ...] = field(default_factory=tuple)
    assumptions: str = SERVING_ASSUMPTIONS

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_bytes

    def table_rows(self) -> tuple[str, list[tuple[str, str]]]:
        layout = self.layout
        caption = f"per GPU: tp {layout.tp} × pp {layout.pp} × dp {layout.dp}, B = {self.batch:,} × S = {self.seq:,}"
        return caption, [
            ("parameters", f"{self.gpu_parameters:,} of {self.parameters:,}"),
            ("weights", _b(self.weights_bytes)),
            ("KV cache", _b(self.kv_bytes)),
            ("total", _b(self.total_bytes)),
        ]


@dataclass(frozen=True)
class Share:
    """The share of a GPU an engine lets the weights and its KV cache use, as the engine's own setting applies it:
    ``of = "total"``: weights + KV cache within ``fraction`` of the GPU's memory (vLLM's gpu_memory_utilization,
    SGLang's mem_fraction_static); ``of = "free"``: the KV cache within ``fraction`` of what the weights leave
    (TensorRT-LLM's free_gpu_memory_fraction, LMDeploy's cache_max_entry_count). ``rounding``: ceil or floor of the
    product, as the engine takes it."""

    engine: str  # the engine's title
    option: str  # the engine's name of the setting
    fraction: Any  # a Fraction in (0, 1]
    of: str  # "total" or "free"
    rounding: str = "floor"
    source: str = ""
    reserve: int = 0  # bytes the engine sets aside from what the weights leave before taking its share
    reserve_rule: str = ""
    default: bool = False  # the engine's own default, applied without --gpu-memory-utilization

    def _product(self, amount: int) -> int:
        product = amount * self.fraction
        return -(-product.numerator // product.denominator) if self.rounding == "ceil" else int(product)

    def room(self, capacity: int, held: int) -> int:
        """The bytes the weights (``held``) and the KV cache may take on a GPU of ``capacity`` bytes."""
        if self.of == "total":
            return self._product(capacity)
        if capacity < held:
            return capacity
        return held + self._product(max(0, capacity - held - self.reserve))

    @property
    def said(self) -> str:
        what = "of the GPU for the weights and the KV cache" if self.of == "total" else "of what the weights leave"
        if self.reserve:
            what += f" less a runtime reserve of {self.reserve:,} bytes, {self.reserve_rule}"
        default = " (its default: --gpu-memory-utilization to change it)" if self.default else ""
        return (
            f"{self.engine}'s {self.option} = {self.fraction.numerator / self.fraction.denominator:g}{default}: {what}"
            + (f" ({self.source})" if self.source else "")
        )


@dataclass(frozen=True, repr=False)
class GpuFit(_Tabled):
    """A shard against one GPU's memory: what is left, and why it does not fit when it does not."""

    gpu: str  # the GPU's title
    capacity: int  # bytes, the datasheet's memory
    shard: Shard
    source: str = ""
    share: Share | None = None  # the engine's share of the GPU, when given

    @property
    def room(self) -> int:
        """The bytes the weights and the KV cache may take: the GPU's, or the engine's share of it."""
        return self.capacity if self.share is None else self.share.room(self.capacity, self.shard.weights_bytes)

    @property
    def left(self) -> int:
        return self.room - self.shard.total_bytes

    @property
    def fits(self) -> bool:
        return self.left >= 0

    def table_rows(self) -> tuple[str, list[tuple[str, str]]]:
        caption, rows = self.shard.table_rows()
        rows += [
            (self.gpu, _b(self.capacity)),
            ("left", _b(self.left)),
            ("fits" if self.fits else "does not fit", self.why),
        ]
        return caption, rows

    @property
    def why(self) -> str:
        s = self.shard
        room = self.room
        of = "" if self.share is None else f" ({self.share.engine}'s {self.share.option} share of it)"
        if s.weights_bytes > room:
            return f"the weights alone ({gb(s.weights_bytes)}) exceed the {self.gpu}'s {gb(room)}{of}"
        if not self.fits:
            return (
                f"the weights ({gb(s.weights_bytes)}) leave {gb(room - s.weights_bytes)}{of}, the KV cache of "
                f"{s.batch:,} × {s.seq:,} tokens needs {gb(s.kv_bytes)}: {gb(-self.left)} short"
            )
        return f"{gb(self.left)} left for activations, the engine's workspace and more sequences"


gb = gb_gib  # bytes in GB and GiB both: ``80.00 GB = 74.51 GiB``


# --- the checks and the values the ranks see ------------------------------------------------------------------


def _layout_values(model: Model, layout: Layout) -> dict[Symbol, int]:
    """The sizes as one rank sees them before dividing: vocabulary padded, key-value heads below tp raised to tp;
    LlmcountError naming the key or option when a degree does not divide what it splits."""
    from .formulas import training as tr
    from .formulas.symbols import N, d_moe, n

    values = tr.kv_replicated(model, layout.tp)
    ranks = layout.tp * layout.dp
    routed = [t for t in model.derivation.terms if t.routed]
    if layout.ep > 1 and not routed:
        raise LlmcountError(f"--ep {layout.ep}: {model.name} has no routed experts to divide")
    if layout.ep not in (1, ranks):
        give = f"--ep 1 or --ep {ranks}" if ranks > 1 else f"--tp and --dp whose product is {layout.ep}"
        raise LlmcountError(
            f"--ep {layout.ep}: an inference engine's expert-parallel group is the tp·dp ranks (vLLM: EP size = TP × "
            f"DP = {ranks} here); give {give}"
        )
    if routed and layout.dp > 1:
        from .engines import engine

        refused = engine(_engine_name(layout)).refused.get("dp_experts")
        if refused:
            raise LlmcountError(f"{_engine_title(layout)}: {refused}")
    if routed and ranks > 1:
        if layout.ep > 1 and values.get(n) is not None and values[n] % ranks:
            raise LlmcountError(f"--ep {layout.ep} does not divide the number of routed experts n = {values[n]}")
        width = values.get(d_moe)
        if layout.ep == 1 and width is not None and width % ranks:
            raise LlmcountError(
                f"tp·dp = {ranks} ranks split each routed expert and do not divide "
                f"{tr._key(model, d_moe, 'moe_intermediate_size')} = {width} (give --ep {ranks})"
            )
    if layout.pp > values[N]:
        raise LlmcountError(f"--pp {layout.pp} is more than the number of layers N = {values[N]}")
    if layout.tp > 1:
        tr.check_parallel(model, tr.Parallel(tp=layout.tp), values)
    placed = placement(model, layout.tp, layout.pp)  # the parts besides the language model: refused when not placed
    if placed is not None and (layout.tp > 1 or layout.pp > 1) and _engine_name(layout) != "vllm":
        raise LlmcountError(
            f"{_engine_title(layout)} with --tp/--pp: where it places the parts besides the language model of "
            f"{model.whole_name or model.name} is not transcribed (vLLM's is: give --engine vllm)"
        )
    padded = dict(values)
    for symbol, (embedding, head) in vocab_splits(model, layout).items():
        padded[symbol] = embedding.rows * layout.tp  # one rank's rows, times tp: the split part is divided by tp
        padded[head_rows()[symbol]] = head.rows * layout.tp
    return padded


def _engine_name(layout: Layout) -> str:
    from .engines import TRANSFORMERS, engine

    name = engine(layout.engine).name if layout.engine else "vllm"
    return "vllm" if name == TRANSFORMERS else name


def _engine_title(layout: Layout) -> str:
    from .engines import engine

    return engine(_engine_name(layout)).title


def vocab_splits(model: Model, layout: Layout) -> dict[Symbol, Any]:
    """The vocabulary rows one rank holds of the embedding and of the head, per vocabulary size of the model, as the
    layout's engine lays them out (:func:`llmcount.engines.weights.vocab_splits`); LlmcountError naming the key."""
    from .engines.weights import vocab_splits as splits
    from .formulas import training as tr

    return {
        symbol: splits(
            layout.engine,
            model.architecture.name,
            model.values[symbol],
            layout.tp,
            tr._key(model, symbol, str(symbol)),
            model.tied,
        )
        for symbol in tr.TP_PADDED
        if model.values.get(symbol) is not None
    }


def _term_parameters(term: Any, env: Mapping[Symbol, int], layout: Layout) -> int:
    """Parameters one GPU holds of one instance of ``term``."""
    from .formulas import training as tr
    from .formulas.derivation import evaluate_int

    if term.routed:
        count = evaluate_int(term.expr, dict(env), term.path)
        ranks = layout.tp * layout.dp
        if count % ranks:
            raise LlmcountError(f"tp·dp = {ranks} ranks do not divide {term.path} ({count:,} parameters)")
        return count // ranks
    split, kept = tr.tp_split(term, layout.tp)
    env = dict(env)
    if term.group != "embedding":  # the head: its own rows per rank (the embedding's are env's)
        rows = head_rows()
        env |= {s: env[rows[s]] for s in tr.TP_PADDED if s in term.expr.free_symbols and rows[s] in env}
    part = evaluate_int(split, env, term.path)
    if part % layout.tp:
        raise LlmcountError(f"--tp {layout.tp} does not divide the {part:,} parameters of {term.path} it splits")
    return part // layout.tp + evaluate_int(kept, env, term.path)


# --- the KV cache one rank keeps ------------------------------------------------------------------------------


def _rank_split(expr: Expr, tp: int, what: str) -> tuple[Expr, Expr]:
    """An amount per token or per sequence as (the part tp divides, the part every rank keeps whole); LlmcountError
    naming ``what`` when a part has neither kind of size."""
    from sympy import Integer, expand

    from .formulas import training as tr
    from .formulas.symbols import B, S, d

    split, kept = Integer(0), Integer(0)
    divided = set(tr.TP_SPLIT) | {d}  # d: the keys and values of all h heads, h·d_h (records write 2·d for MHA)
    for monomial in expand(expr).as_ordered_terms():
        sizes = monomial.free_symbols - {S, B}
        if sizes & divided:
            split += monomial
        elif sizes & set(tr.TP_REPLICATED) or not sizes or tp == 1:
            kept += monomial
        else:
            raise LlmcountError(
                f"--tp {tp}: cannot tell how tensor parallelism splits the cache of the {what} layers ({monomial}): "
                "its size has no head count, width or latent rank an engine splits or keeps"
            )
    return split, kept


@dataclass(frozen=True)
class _RankKind:
    """One kind of layer's cache per rank, per layer and per sequence: elements in the cache dtype and in fp32, as
    functions of S (split parts already divided by tp); ``copied``: elements kept whole on every rank."""

    kind: str
    layers: Expr
    cache: Callable[[int], int]
    fp32: Callable[[int], int]
    copied: bool


def _rank_kinds(model: Model, env: Mapping[Symbol, int], tp: int, seq: int) -> list[_RankKind]:
    from sympy import Integer

    from .formulas import memory as mem
    from .formulas.derivation import evaluate_int
    from .formulas.symbols import S

    family = mem.beyond_family(mem.cache_family(model.derivation), seq, model.values)
    found = []
    for lk in mem.layer_kinds(family, dict(model.values)):
        if not evaluate_int(lk.layers, dict(env), lk.kind):
            continue
        parts = {
            "cache": lk.tokens * lk.per_token + lk.per_sequence + lk.grown,
            "fp32": lk.tokens * lk.per_token_fp32 + lk.per_sequence_fp32 + lk.grown_fp32,
        }
        functions, copied = {}, False
        for name, expr in parts.items():
            split, kept = _rank_split(expr, tp, lk.kind.replace("_", " "))
            copied = copied or (tp > 1 and kept != 0 and Integer(0) != kept.subs(S, 1).subs(dict(env)))

            def per_rank(s: int, split: Expr = split, kept: Expr = kept, what: str = lk.kind) -> int:
                local = {**env, S: s}
                whole = evaluate_int(split, local, what)
                if whole % tp:
                    raise LlmcountError(f"--tp {tp} does not divide the {whole:,} cache elements of a {what} layer")
                return whole // tp + evaluate_int(kept, local, what)

            functions[name] = per_rank
        found.append(_RankKind(lk.kind, lk.layers, functions["cache"], functions["fp32"], copied))
    return found


def _kv_bytes(kinds: list[_RankKind], counts: Mapping[str, int], kv_dtype: str, seq: int, batch: int) -> int:
    """Bytes of the cache of ``counts[kind]`` layers of each kind, B sequences of S tokens, rounded per kind as
    :func:`llmcount.formulas.memory.inference` rounds them."""
    from .dtypes import nbytes

    total = 0
    for k in kinds:
        layers = counts.get(k.kind, 0)
        if layers:
            total += nbytes(batch * layers * k.cache(seq), kv_dtype) + nbytes(batch * layers * k.fp32(seq), "fp32")
    return total


# --- one GPU ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """A model laid out over the ranks: what the GPU counted holds, as numbers and functions of (S, B)."""

    model: Model
    layout: Layout
    dtype: str
    kv_dtype: str
    parameters: int  # on the GPU counted
    layer_counts: Mapping[str, int]  # layers of each cache kind on the GPU counted
    kinds: tuple[_RankKind, ...]
    stage: int
    vocab_padded: int | None
    notes: tuple[str, ...]

    @property
    def weights_bytes(self) -> int:
        from .dtypes import nbytes

        if self.stored_bytes is None:
            return nbytes(self.parameters, self.dtype)
        return self.stored_bytes + nbytes(self.parts_parameters, self.dtype)  # the parts in the weights' dtype

    def kv_bytes(self, seq: int, batch: int) -> int:
        """transformers' cache, split over the ranks as the module docstring says: the default KV rule."""
        kinds = self.kinds
        spec = self.model.architecture.attention
        if spec is not None and spec.is_beyond(seq, self.model.values) != spec.is_beyond(
            self.at_seq, self.model.values
        ):
            kinds = tuple(_rank_kinds(self.model, self.env, self.layout.tp, seq))  # the cache past [attention]'s S
        return _kv_bytes(list(kinds), self.layer_counts, self.kv_dtype, seq, batch)

    at_seq: int = 1
    env: Mapping[Symbol, int] = field(default_factory=dict)
    stored_bytes: int | None = None  # the weights as a quantisation scheme stores them, on the GPU counted
    held: Mapping[str, int] = field(default_factory=dict)  # term path -> parameters the GPU counted holds of it
    # of ``parameters``: those of the parts besides the language model (vision tower, projector) on the GPU counted
    parts_parameters: int = 0
    sequence: tuple[tuple[str, ...], ...] | None = None  # with pp: the cache kinds of each layer, in order, if known
    layers: range | None = None  # with pp: the indices of the layers of this GPU's stage


def stored_on_plan(laid: Plan, groups: Any, label: str) -> int:
    """Bytes the GPU of ``laid`` (one rank of one pipeline stage) holds of weights stored as ``groups`` (path,
    parameters, bytes: a quantised checkpoint's tensor groups, :class:`llmcount.quant.stored.Plan`'s): each group's
    bytes in proportion to the parameters the rank holds of its term (a stage holds its layers' share, the first
    the embedding, the last the head; packed weights, scales and zeros split with the rows or columns they belong
    to, as vLLM's quantised linear layers shard them); LlmcountError naming the path when a share is not a whole
    number of bytes (the rank's part is then not whole quantisation groups, which vLLM refuses to load)."""
    layout = laid.layout
    known = {t.path for t in laid.model.derivation.terms}
    total = 0
    for path, parameters, size in groups:
        if path not in known:
            raise LlmcountError(f"{label}: the stored tensor group {path} is not a term of the model")
        share = laid.held.get(path, 0)  # 0: a term of another pipeline stage
        if (size * share) % parameters:
            where = f"--tp {layout.tp}" + (f" --pp {layout.pp} (stage {laid.stage})" if layout.pp > 1 else "")
            raise LlmcountError(
                f"{label} under {where}: the rank's share of {path} ({share:,} of {parameters:,} parameters) is not "
                "a whole number of stored bytes: not whole quantisation groups"
            )
        total += size * share // parameters
    return total


def stored_on_rank(model: Model, layout: Layout, groups: Any, label: str) -> int:
    """:func:`stored_on_plan` on the largest stage's GPU of ``layout``."""
    return max(stored_on_plan(p, groups, label) for p in stage_plans(model, layout))


def with_stored(plans: list[Plan], stored: tuple[Any, ...] | None) -> list[Plan]:
    """``plans`` with the weights as ``stored`` ((path, parameters, bytes) groups, label) stores them, per GPU."""
    if stored is None:
        return plans
    groups, label = stored[:2]
    return [replace(p, stored_bytes=stored_on_plan(p, groups, label)) for p in plans]


def stage_plans(
    model: Model, layout: Layout, dtype_name: str = "bf16", kv_dtype: str | None = None, seq: int = 1
) -> list[Plan]:
    """What a GPU of each pipeline stage of ``model`` laid out as ``layout`` holds (one plan without pp): its
    parameters and the layers of each cache kind it keeps; LlmcountError naming the key or option when the layout
    does not divide the model. ``seq``: the S whose cache the plans are built for (it matters only past the longest
    S a record's [attention] describes)."""
    from .dtypes import BITS, nbytes
    from .formulas import training as tr
    from .formulas.derivation import evaluate_int
    from .formulas.layer_kinds import is_model_level
    from .formulas.memory import dtype as canonical
    from .formulas.symbols import N, V

    dtype_name = canonical(dtype_name)
    kv_dtype = canonical(kv_dtype) if kv_dtype else (dtype_name if BITS[dtype_name] >= 16 else "bf16")
    env = _layout_values(model, layout)
    terms = model.derivation.terms
    counted = model.derivation.layer_counts
    layer_terms = [t for t in terms if not is_model_level(t.layers, counted)]
    model_terms = [t for t in terms if is_model_level(t.layers, counted)]
    kinds = _rank_kinds(model, env, layout.tp, seq)
    notes = []

    def model_level(predicate) -> int:
        return sum(_term_parameters(t, env, layout) * int(t.layers) for t in model_terms if predicate(t))

    def model_paths(predicate) -> dict[str, int]:
        return _summed((t.path, _term_parameters(t, env, layout) * int(t.layers)) for t in model_terms if predicate(t))

    paths: list[dict[str, int]] = []  # per GPU counted: term path -> parameters held
    sequence = None  # with pp: the cache kinds of each layer of the model, when the order of the layers is known
    indices: list[range] = []
    llama_cpp = _engine_name(layout) == "llama.cpp"

    def on_cpu(t: Any) -> bool:  # llama.cpp's input layer; a tied head loads the token embedding again on the GPU
        return llama_cpp and t.group == "embedding" and not (model.tied and V in t.expr.free_symbols)

    if layout.pp == 1:
        parameters = model_level(lambda t: not on_cpu(t))
        parameters += sum(
            _term_parameters(t, env, layout) * evaluate_int(t.layers, dict(env), t.path) for t in layer_terms
        )
        held = [(0, parameters, {k.kind: evaluate_int(k.layers, dict(env), k.kind) for k in kinds})]
        cpu = {t.path for t in model_terms if on_cpu(t)}
        paths.append(_summed(row for row in _held_rows(terms, env, layout, counted) if row[0] not in cpu))
        if cpu:
            notes.append(
                "the token embedding stays in host memory (llama.cpp keeps the input layer on the CPU), not on the GPU"
            )
    else:
        per_kind: dict[str, tuple[int, dict[str, int]]] = {}
        kind_paths: dict[str, dict[str, int]] = {}

        def weigh(kind: Kind) -> int:
            parameters = sum(_term_parameters(t, env, layout) * kind.times(t.layers) for t in layer_terms)
            per_kind[kind.name] = (parameters, {k.kind: kind.times(k.layers) for k in kinds})
            kind_paths[kind.name] = _summed(
                (t.path, _term_parameters(t, env, layout) * kind.times(t.layers)) for t in layer_terms
            )
            return nbytes(parameters, dtype_name) + _kv_bytes(kinds, per_kind[kind.name][1], kv_dtype, max(seq, 1), 1)

        if llama_cpp:  # whole layers over the devices, the input layer on the CPU (engines/weights.py layer_split)
            from .engines.weights import layer_split

            indices = layer_split(model.values[N], layout.pp)
        else:  # the engine's split (vLLM's get_pp_indices without one)
            from .engines import pipeline_stages

            indices = pipeline_stages(layout.engine, model.values[N], layout.pp)
        runs, bound = tr.stage_kinds(model, layout.pp, weigh, indices, [k.layers for k in kinds])
        if not bound:  # the cache kinds of each layer, in order (an engine's KV cache groups per stage need them)
            sequence = tuple(
                tuple(name for name, times in per_kind[kind.name][1].items() if times) for run in runs for kind in run
            )
        first = 0 if llama_cpp else model_level(lambda t: t.group == "embedding")
        last = model_level(lambda t: t.group != "embedding")
        if model.tied:  # vLLM's last rank builds the embedding too when the head is tied to it
            last += model_level(lambda t: t.group == "embedding" and V in t.expr.free_symbols)
        first_paths = {} if llama_cpp else model_paths(lambda t: t.group == "embedding")
        last_paths = model_paths(lambda t: t.group != "embedding")
        if model.tied:
            tied = model_paths(lambda t: t.group == "embedding" and V in t.expr.free_symbols)
            last_paths = _summed([*last_paths.items(), *tied.items()])
        held = []
        for number, run in enumerate(runs):
            parameters = (first if number == 0 else 0) + (last if number == layout.pp - 1 else 0)
            rows = [
                *(first_paths.items() if number == 0 else ()),
                *(last_paths.items() if number == layout.pp - 1 else ()),
            ]
            counts: dict[str, int] = {}
            for kind in run:
                parameters += per_kind[kind.name][0]
                rows += kind_paths[kind.name].items()
                for name, times in per_kind[kind.name][1].items():
                    counts[name] = counts.get(name, 0) + times
            held.append((number + 1, parameters, counts))
            paths.append(_summed(rows))
        sizes = "/".join(str(len(run)) for run in runs)
        if llama_cpp:
            notes.append(
                f"llama.cpp --split-mode layer over {layout.pp} GPUs of equal --tensor-split shares, every layer "
                f"offloaded: {sizes} layers, layer i on GPU ⌊i · {layout.pp} / {model.values[N] + 1}⌋, the output "
                "layer (final norm and head) on the last; the token embedding stays in host memory (llama.cpp keeps "
                f"the input layer on the CPU), not on any GPU{bound}"
            )
        else:
            notes.append(f"pipeline: stages of {sizes} layers, as {_stage_split(layout)}{bound}")
    vocab = None
    for embedding, head in vocab_splits(model, layout).values():
        vocab = embedding.padded if vocab is None else vocab
        if _engine_name(layout) == "llama.cpp":  # no tp: its placement of the layers is noted above
            continue
        if _engine_name(layout) == "vllm":
            original, padded = embedding.vocab, embedding.padded
            padding = (
                f"vocabulary of {original:,} rows padded to {padded:,}, a multiple of {VOCAB_PADDING} as vLLM pads it"
                if padded != original
                else f"vocabulary of {padded:,} rows, a multiple of {VOCAB_PADDING}: vLLM's padding adds none"
            )
            notes.append(padding + (f"; {embedding.rows:,} rows per tp rank" if layout.tp > 1 else ""))
            continue
        title = _engine_title(layout)
        notes.append(embedding.said(title))
        if not model.tied and any(t.group != "embedding" and V in t.expr.free_symbols for t in terms):
            notes.append(head.said(title))
    for symbol in tr.KV_HEADS:
        own = model.values.get(symbol)
        if own is not None and own < layout.tp:
            key = tr._key(model, symbol, str(symbol))
            notes.append(
                f"{key} = {own} < tp = {layout.tp}: each rank keeps one key-value head, each head copied on "
                f"{layout.tp // own} ranks (weights and KV cache)"
            )
    copied = sorted({k.kind.replace("_", " ") for k in kinds if k.copied})
    if copied:
        notes.append(
            f"the cache of the {', '.join(copied)} layers is in part written in sizes tp keeps whole (MLA's latent "
            "r_kv + d_rope, an indexer's keys): that part is on every tp rank"
        )
    if layout.dp > 1:
        notes.append(f"dp = {layout.dp} replicas, each with the weights above and its own B sequences")
    placed = placement(model, layout.tp, layout.pp)
    if placed is not None:  # the parts on the first stage's GPU (the only one without pp)
        notes.append(placed.note)
        held = [(stage, parameters + (placed.parameters if stage <= 1 else 0), c) for stage, parameters, c in held]
    if model.composite is not None and not model.composite.whole:
        counted = "the parts above" if placed is not None else "the language model only"
        notes.append(f"{counted}: {model.composite.left_out} of {model.whole_name or model.name} not counted per GPU")
    return [
        Plan(
            model,
            layout,
            dtype_name,
            kv_dtype,
            parameters,
            counts,
            tuple(kinds),
            stage,
            vocab,
            tuple(notes),
            seq,
            env,
            held=held_paths,
            parts_parameters=placed.parameters if placed is not None and stage <= 1 else 0,
            sequence=sequence,
            layers=indices[stage - 1] if stage and indices else None,
        )
        for (stage, parameters, counts), held_paths in zip(held, paths, strict=True)
    ]


def _stage_split(layout: Layout) -> str:
    return STAGE_SPLITS[_engine_name(layout)]


def _summed(rows: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for path, parameters in rows:
        out[path] = out.get(path, 0) + parameters
    return out


def _held_rows(terms: Any, env: Mapping[Symbol, int], layout: Layout, counted: Any) -> Any:
    """(path, parameters held on one rank) of every term, without pipeline stages."""
    from .formulas.derivation import evaluate_int
    from .formulas.layer_kinds import is_model_level

    for t in terms:
        layers = int(t.layers) if is_model_level(t.layers, counted) else evaluate_int(t.layers, dict(env), t.path)
        yield t.path, _term_parameters(t, env, layout) * layers


def _rule(laid: Plan, kv: Callable[[Plan], KvRule] | None) -> KvRule:
    return kv(laid) if kv is not None else laid.kv_bytes


def heaviest(plans: list[Plan], seq: int, batch: int, kv: Callable[[Plan], KvRule] | None = None) -> Plan:
    """The plan whose weights and KV cache of B sequences of S tokens are the largest (the first of equals)."""
    return max(plans, key=lambda p: p.weights_bytes + _rule(p, kv)(seq, batch))


def plan(model: Model, layout: Layout, dtype_name: str = "bf16", kv_dtype: str | None = None, seq: int = 1) -> Plan:
    """The GPU of the heaviest stage at S = ``seq``, B = 1 (:func:`stage_plans`)."""
    return heaviest(stage_plans(model, layout, dtype_name, kv_dtype, seq), max(seq, 1), 1)


def shard(
    model: Model,
    layout: Layout,
    dtype_name: str = "bf16",
    kv_dtype: str | None = None,
    seq: int = 4096,
    batch: int = 1,
    kv: Callable[[Plan], KvRule] | None = None,
    stored: tuple[Any, ...] | None = None,
) -> Shard:
    """What one GPU holds (:class:`Shard`), on the pipeline stage whose weights and KV cache of B × S tokens are the
    largest; ``kv(plan)`` gives the KV rule in place of transformers' cache split over the ranks; ``stored``: the
    weights as a quantisation scheme stores them ((path, parameters, bytes) groups, the scheme's label), split as
    :func:`stored_on_rank` says."""
    plans = with_stored(stage_plans(model, layout, dtype_name, kv_dtype, seq), stored)
    laid = heaviest(plans, seq, batch, kv)
    notes = laid.notes
    if laid.stage:
        notes = (
            *notes,
            f"the GPU counted is stage {laid.stage} of {layout.pp}, the largest in weights and KV cache at "
            f"B = {batch:,}, S = {seq:,}",
        )
    return Shard(
        layout=layout,
        dtype=laid.dtype,
        kv_dtype=laid.kv_dtype,
        seq=seq,
        batch=batch,
        parameters=model.counts.total + sum(part.model.counts.total for part in model.parts),
        gpu_parameters=laid.parameters,
        weights_bytes=laid.weights_bytes,
        kv_bytes=_rule(laid, kv)(seq, batch),
        stage=laid.stage,
        vocab_padded=laid.vocab_padded,
        notes=notes,
        assumptions=assumptions(layout, any(t.routed for t in model.derivation.terms)),
    )


# --- the context an engine accepts -----------------------------------------------------------------------------


def context_limit(config: Mapping[str, Any], max_positions: int | None) -> tuple[int, str] | None:
    """The longest sequence an engine accepts for this config, and how it was derived: max_position_embeddings,
    times the rope scaling factor as vLLM reads ``rope_scaling`` / ``rope_parameters`` (yarn from its
    ``original_max_position_embeddings``; su, longrope and llama3 not lengthened; the model_types of
    vLLM record's ``[context] already_scaled`` not at all): vllm/config/model.py, _get_and_verify_max_len. None
    without a length."""
    from .engines import engine

    if max_positions is None:
        return None
    rules = engine("vllm").context
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else None
    source = text if text is not None and ("rope_scaling" in text or "rope_parameters" in text) else config
    rope = source.get("rope_parameters") or source.get("rope_scaling")
    model_type = str(source.get("model_type", config.get("model_type", "")))
    how = f"max_position_embeddings {max_positions:,}"
    if not isinstance(rope, dict) or any(name in model_type for name in rules["already_scaled"]):
        return max_positions, how
    nested = all(isinstance(value, dict) for value in rope.values()) and rope
    entries = list(rope.values()) if nested else [rope]
    limit, factor = max_positions, 1
    for entry in entries:
        kind = entry.get("rope_type", entry.get("type"))
        if kind in rules["unscaled_rope"] or kind is None:
            continue
        value = entry.get("factor", factor)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 2**20:
            factor = value
        original = entry.get("original_max_position_embeddings")
        if kind == "yarn" and isinstance(original, int) and not isinstance(original, bool) and 0 < original < 2**40:
            limit = original
            how = f"original_max_position_embeddings {original:,} (yarn)"
    if factor != 1:
        how += f" × rope factor {factor}"
    return int(limit * factor), how


def context_warning(name: str, seq: int, limit: tuple[int, str] | None) -> str | None:
    """The warning for a sequence past the context an engine accepts; None when it is within it."""
    if limit is None or seq <= limit[0]:
        return None
    return (
        f"warning: {name}: S = {seq:,} is beyond the model's context length {limit[0]:,} ({limit[1]}); "
        "an engine refuses it (vLLM: max_model_len)"
    )


# --- what fits -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Fit(_Tabled):
    """The longest S at B = 1 and the most sequences at ``seq`` that fit on each of ``layout.gpus`` GPUs, or why none
    does and what would."""

    gpu: str
    capacity: int  # bytes per GPU
    layout: Layout
    dtype: str
    kv_dtype: str
    weights_bytes: int  # per GPU
    seq: int
    max_seq: int | None  # None: memory sets no limit below the search's end; 0: nothing fits
    max_batch: int | None
    context: int | None  # the context an engine accepts, when the config gives one
    context_how: str = ""
    reason: str = ""  # why nothing fits at B = 1 (or at seq)
    would: tuple[str, ...] = ()  # what would fit instead
    notes: tuple[str, ...] = ()

    @property
    def capped(self) -> bool:
        return self.context is not None and (self.max_seq is None or self.max_seq > self.context)

    @property
    def longest(self) -> int | None:
        """The longest S: the memory's, capped at the context an engine accepts."""
        return self.context if self.capped else self.max_seq

    def table_rows(self) -> tuple[str, list[tuple[str, str]]]:
        def shown(value: int | None) -> str:
            return "no limit from memory" if value is None else f"{value:,}"

        rows = [("weights per GPU", _b(self.weights_bytes)), ("longest context, one sequence", shown(self.longest))]
        rows.append((f"sequences at S = {self.seq:,}", shown(self.max_batch)))
        if self.reason:
            rows.append(("nothing fits", self.reason))
        return f"{self.layout.gpus} × {self.gpu} ({gb(self.capacity)} each)", rows


def fit(
    model: Model,
    capacity: int,
    layout: Layout,
    dtype_name: str = "bf16",
    kv_dtype: str | None = None,
    seq: int = 4096,
    context: tuple[int, str] | None = None,
    kv: Callable[[Plan], KvRule] | None = None,
    gpu: str = "",
    stored: tuple[Any, ...] | None = None,
    share: Share | None = None,
) -> Fit:
    """The longest S (B = 1) and the most sequences B (at ``seq``) whose weights and KV cache per GPU fit in
    ``capacity`` bytes, by an integer search over the KV rule (``kv(plan)``: transformers' cache split over the
    ranks by default; an engine's rule plugs in). When nothing fits, the reason and what would: more GPUs (the
    smallest tp, doubling, that the model divides and that fits), a smaller KV dtype, a shorter context.
    ``stored``: the weights as a quantisation scheme stores them ((path, parameters, bytes) groups, the scheme's
    label, the dtype shown), per GPU as :func:`stored_on_plan` splits them. ``share``: the engine's share of the GPU
    (:class:`Share`), which bounds the weights and the KV cache in place of ``capacity``."""
    from .formulas.capacity import searchable
    from .plain_memory import SEARCH_LIMIT as LIMIT
    from .plain_memory import largest

    def room(held: int) -> int:
        return capacity if share is None else share.room(capacity, held)

    if kv is None:  # transformers' cache: the search needs a total that grows with S
        searchable(model.derivation, model.values, "fit")
    plans = with_stored(stage_plans(model, layout, dtype_name, kv_dtype), stored)
    rules = [(p.weights_bytes, _rule(p, kv)) for p in plans]
    laid = max(plans, key=lambda p: p.weights_bytes)
    weights = laid.weights_bytes

    def fits(s: int, b: int) -> bool:  # on every stage's GPU
        return all(held + rule(s, b) <= room(held) for held, rule in rules)

    reason, would = "", []
    of = "" if share is None else f" ({share.engine}'s {share.option} share of it)"
    if weights > room(weights):
        reason = f"the weights per GPU ({gb(weights)}) exceed the GPU's {gb(room(weights))}{of}"
        max_seq = max_batch = 0
    else:
        max_seq = largest(lambda s: fits(s, 1))
        max_batch = largest(lambda b: fits(seq, b))
        worst = heaviest(plans, seq, 1, kv)
        if max_seq == 0:
            reason = (
                f"the weights ({gb(weights)}) leave {gb(room(weights) - weights)}{of}, less than one token's KV cache"
            )
        elif max_batch == 0:
            reason = f"one sequence of {seq:,} tokens does not fit: its KV cache needs {gb(_rule(worst, kv)(seq, 1))}"
    if reason:
        would = _alternatives(model, capacity, layout, laid, seq, max_seq, kv, stored, room)
    context_len, how = context if context is not None else (None, "")
    notes = list(laid.notes)
    if share is not None:
        notes.append(f"{share.said}: {gb(room(weights))} of {gb(capacity)} for the weights and the KV cache")
    if max_seq is not None and max_seq >= LIMIT:
        max_seq = None
    return Fit(
        gpu=gpu,
        capacity=capacity,
        layout=layout,
        dtype=laid.dtype if stored is None else stored[2],
        kv_dtype=laid.kv_dtype,
        weights_bytes=weights,
        seq=seq,
        max_seq=max_seq,
        max_batch=max_batch,
        context=context_len,
        context_how=how,
        reason=reason,
        would=tuple(would),
        notes=tuple(notes),
    )


MAX_TP = 1024


def _wider(model: Model, layout: Layout) -> list[Layout]:
    """Layouts with more GPUs to try, fewest first: tp doubled while the model's heads allow it, then, at the widest
    tp found, pp doubled up to the number of layers."""
    from .formulas.symbols import N

    found, tp = [], layout.tp * 2
    widest = layout.tp
    while tp <= MAX_TP:
        wider = replace(layout, tp=tp, ep=tp * layout.dp if layout.ep > 1 else 1)
        try:
            _layout_values(model, wider)
        except LlmcountError:
            tp *= 2
            continue
        found.append(wider)
        widest, tp = tp, tp * 2
    pp = layout.pp * 2
    while pp <= model.values[N]:
        found.append(replace(layout, tp=widest, pp=pp, ep=widest * layout.dp if layout.ep > 1 else 1))
        pp *= 2
    return found


def _alternatives(
    model: Model,
    capacity: int,
    layout: Layout,
    laid: Plan,
    seq: int,
    max_seq: int | None,
    kv,
    stored=None,
    room: Callable[[int], int] | None = None,
) -> list[str]:
    """What would fit one sequence of ``seq`` tokens when ``layout`` does not: more GPUs, fp8 weights (unless the
    weights are quantised already), an fp8 KV cache, a shorter context. ``room``: the bytes the weights and the KV
    cache may take, given the weights (the GPU's memory by default)."""
    from .dtypes import BITS

    def limit(held: int) -> int:
        return capacity if room is None else room(held)

    def fits(plans: list[Plan]) -> bool:
        return all(p.weights_bytes + _rule(p, kv)(seq, 1) <= limit(p.weights_bytes) for p in plans)

    would = []
    for wider in _wider(model, layout):
        try:
            if fits(with_stored(stage_plans(model, wider, laid.dtype, laid.kv_dtype, seq), stored)):
                flags = f"--tp {wider.tp}" + (f" --pp {wider.pp}" if wider.pp > 1 else "")
                would.append(f"{flags} ({wider.gpus} GPUs): one sequence of {seq:,} tokens fits")
                break
        except LlmcountError:
            continue
    if (
        stored is None
        and BITS[laid.dtype] > 8
        and laid.weights_bytes > limit(laid.weights_bytes)
        and fits(stage_plans(model, layout, "fp8", laid.kv_dtype, seq))
    ):
        would.append(f"weights in fp8 (an fp8 checkpoint, --dtype fp8): one sequence of {seq:,} tokens fits")
    if (
        laid.weights_bytes <= limit(laid.weights_bytes)
        and BITS[laid.kv_dtype] > 8
        and fits(with_stored(stage_plans(model, layout, laid.dtype, "fp8", seq), stored))
    ):
        would.append(f"--kv-dtype fp8: one sequence of {seq:,} tokens fits")
    if max_seq:
        would.append(f"--seq {max_seq:,} or shorter: one sequence fits")
    if not would:
        would.append("nothing tried fits: more GPUs (tp and pp as the model allows), fp8 weights or KV cache")
    return would
