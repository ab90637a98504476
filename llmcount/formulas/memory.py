"""Memory of a model: weights per dtype, the KV cache, and the states of mixed-precision AdamW training.

Every amount is an exact number of bytes (a Python int); GiB = 2^30 bytes is made at output.

* weights: :math:`\\lceil P\\,b/8 \\rceil` for :math:`P` parameters of :math:`b` bits each (int4: two per byte),
  every parameter in the one dtype; with group quantisation, one scale of the scale dtype per group of G
  parameters, :math:`\\lceil P/G \\rceil` scales (zero points, when a scheme has them, are not counted);
* KV cache, elements per token: :math:`2 N h_{kv} h_d` (MHA/GQA/MQA; GPT-2: :math:`2Nd`); MLA stores the
  latent, :math:`N (r_{kv} + d_{rope})`, as serving engines and transformers' own DeepSeek cache do; the
  expanded keys and values would be :math:`N h (d_{nope} + d_{rope} + d_v)`. Times :math:`B S` tokens; what a
  record's ``[[cache]]`` states per sequence (a formula in S), times :math:`B`;
* training (``TRAINING_ASSUMPTIONS``): 16 bytes per parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from sympy import Add, Expr, Integer, Min, Symbol, ceiling

from ..dtypes import BITS, canonical
from ..errors import LlmcountError
from ..plain_memory import FLOAT_16, INDEXER, INFERENCE_ASSUMPTIONS, STATE_ASSUMPTION  # shared with the numeric path
from ..shown import Shown
from .derivation import Derivation, evaluate_int
from .flops import attention_spec
from .records import Attention, Family
from .symbols import B, S

P = Symbol("P", positive=True, integer=True)
"""The model's total parameter count, as one symbol, to keep memory formulas short."""


TRAINING_ASSUMPTIONS = (
    "mixed-precision AdamW: weights and gradients in bf16/fp16 (2 + 2 bytes), an fp32 master copy of the weights "
    "(4) and fp32 Adam first and second moments (4 + 4): 16 bytes per parameter; with --dtype fp32 there is no "
    "master copy and weights and gradients take 4 + 4: again 16. Activations, temporary buffers, the framework "
    "and fragmentation are not counted; nothing is sharded (one replica)"
)


def dtype(name: str) -> str:
    """The canonical name of a dtype (``bfloat16`` -> ``bf16``), in the one vocabulary of :mod:`llmcount.dtypes`;
    LlmcountError listing the choices otherwise."""
    return canonical(name)


def nbytes(elements: int, dtype_name: str) -> int:
    """Bytes of ``elements`` values of a dtype, a partly used last byte counted whole (int4)."""
    return -(-elements * BITS[dtype_name] // 8)


def kv_elements_per_token(spec: Attention, expanded: bool = False, values: Mapping[Symbol, int] | None = None) -> Expr:
    """KV-cache elements per token over the attention layers that cache (see the module docstring); a count of
    sliding layers that ``values`` leaves out (a config without a window, or with no layer that slides) is 0."""
    if expanded and spec.kv_expanded is not None:
        return spec.cache_layers * spec.kv_expanded
    idle = {symbol: 0 for symbol in spec.cache_windowed.free_symbols - set(values)} if values else {}
    indexer = spec.indexed * spec.indexed_kv if spec.indexed is not None else Integer(0)
    return (spec.total("kv") + indexer).subs(idle)


WINDOW_NOTE = (
    "{kind} layers keep min(S, W - 1) tokens, as transformers' DynamicSlidingWindowLayer does "
    "(serving engines allocate W)"
)


ZERO = Integer(0)


@dataclass(frozen=True)
class LayerKind:
    """What one kind of layer keeps per sequence while generating: ``tokens`` tokens of ``per_token`` elements
    (keys and values) and a fixed state of ``per_sequence`` elements (Mamba, linear attention), in each of
    ``layers`` layers."""

    kind: str  # full_attention, sliding_attention, chunked_attention, or a state's name (linear_attention, mamba)
    layers: Expr
    per_token: Expr
    tokens: Expr
    per_sequence: Expr
    note: str
    per_sequence_fp32: Expr = ZERO  # the part of the fixed state kept in fp32 whatever the cache dtype
    per_token_fp32: Expr = ZERO  # elements per token kept in fp32 whatever the cache dtype (indexer keys)
    grown: Expr = ZERO  # elements per sequence as a formula in S, beside keys and values (a record's [[cache]])
    grown_fp32: Expr = ZERO  # the part of such a formula kept in fp32 whatever the cache dtype

    @property
    def elements(self) -> Expr:
        """Elements this kind keeps for B sequences in the cache dtype."""
        return B * self.layers * (self.tokens * self.per_token + self.per_sequence + self.grown)

    @property
    def elements_fp32(self) -> Expr:
        """Elements this kind keeps for B sequences in fp32."""
        return B * self.layers * (self.tokens * self.per_token_fp32 + self.per_sequence_fp32 + self.grown_fp32)

    @property
    def is_state(self) -> bool:
        return self.per_sequence != 0 or self.per_sequence_fp32 != 0


def layer_kinds(family: Family, values: dict[Symbol, int], expanded: bool = False) -> list[LayerKind]:
    """The cache of each kind of layer a record describes. Full layers keep S tokens; sliding and chunked layers
    min(S, W - 1) when the config gives the window W (transformers' convention: :data:`WINDOW_NOTE`); the
    layers of a ``[[cache]]`` keep its formula in S (compressed entries, the tokens of an unfinished window); the
    layers of a ``[[state]]`` keep their fixed state, whatever S."""
    kinds = []
    spec = family.attention
    if spec is not None:
        per_layer = spec.kv_expanded if expanded and spec.kv_expanded is not None else spec.kv
        note = (spec.expanded_note if expanded and spec.kv_expanded is not None else spec.note) + ", for B·S tokens"
        note += f"; {spec.not_run}" if spec.not_run else ""
        window, layers = spec.window, spec.cache_layers
        if window is None or not window.free_symbols <= set(values):
            idle = {symbol: 0 for symbol in spec.cache_windowed.free_symbols - set(values)}  # no window: none slides
            kinds.append(LayerKind("full_attention", layers.subs(idle), per_layer, S, Integer(0), note))
        else:
            sliding = spec.cache_windowed
            if sliding != layers and sliding.subs(values) == layers.subs(values):
                sliding = layers  # every layer slides: N, not N_sliding (as records write N for N_dense = N)
            name = "chunked_attention" if spec.chunked else "sliding_attention"
            if evaluate_int(sliding, values, "sliding layers") and evaluate_int(window, values, "window") < 2:
                # DynamicSlidingWindowLayer keeps the last W - 1 tokens by slicing [-(W - 1):]: W = 1 keeps all
                raise LlmcountError(
                    f"{family.title} ({family.name}): a window of {window.subs(values)} on its {name.split('_')[0]} "
                    "layers is not modelled (transformers' cache then keeps every token); give a window of 2 or more"
                )
            kinds.append(LayerKind("full_attention", layers - sliding, per_layer, S, Integer(0), note))
            own = spec.widths(sliding=True)[2] if not expanded or spec.kv_expanded is None else per_layer
            windowed = f"{spec.sliding_note}, for B·S tokens; " if spec.sliding_note else f"{note}; "
            windowed += WINDOW_NOTE.format(kind=name.split("_")[0])
            kinds.append(LayerKind(name, sliding, own, Min(S, window - 1), Integer(0), windowed))
    if spec is not None and spec.indexed is not None:
        note = (spec.indexed_note or "indexer keys") + ", for B·S tokens"
        if spec.indexed_dtype == "fp32":
            note += ", in fp32 whatever the cache dtype, as transformers keeps them"
            kinds.append(LayerKind(INDEXER, spec.indexed, ZERO, S, ZERO, note, per_token_fp32=spec.indexed_kv))
        else:
            kinds.append(LayerKind(INDEXER, spec.indexed, spec.indexed_kv, S, ZERO, note))
    for kept in family.caches:
        _check_window(family, kept.expr, kept.layers, values)
        grown = kept.expr - kept.fp32
        kinds.append(LayerKind(kept.name, kept.layers, ZERO, ZERO, ZERO, kept.note, grown=grown, grown_fp32=kept.fp32))
    # a count of sliding layers the config leaves out (no layer slides) is 0 for the states of those layers too
    idle = {s: 0 for s in spec.windowed.free_symbols - set(values)} if spec is not None and spec.window else {}
    for state in family.states:
        layers = state.layers.subs(idle)
        kept = [part for part, dtype in (("conv", state.conv_dtype), ("recurrent", state.recurrent_dtype)) if dtype]
        fp32 = sum((getattr(state, part) for part in kept), Integer(0))
        note = state.note
        if kept:
            note += f"; the {' and '.join(kept)} part in fp32 whatever the cache dtype, as transformers keeps it"
        kinds.append(LayerKind(state.name, layers, Integer(0), Integer(0), state.elements - fp32, note, fp32))
    return kinds


def _check_window(family: Family, expr: Expr, layers: Expr, values: dict[Symbol, int]) -> None:
    """Refuse, by name, a window below 2 in what some layers keep (a ``[[cache]]`` formula that reads the window):
    transformers' sliding cache then keeps every token, which min(S, W - 1) does not say."""
    window = family.attention.window if family.attention is not None else None
    if window is None or not window.free_symbols & expr.free_symbols or not window.free_symbols <= set(values):
        return
    if evaluate_int(layers, values, "layers") and evaluate_int(window, values, "window") < 2:
        raise LlmcountError(
            f"{family.title} ({family.name}): a window of {window.subs(values)} is not modelled (transformers' cache "
            "then keeps every token); give a window of 2 or more"
        )


def per_token_bytes(family: Family, env: dict[Symbol, int], kv_dtype: str) -> int:
    """Bytes of keys and values one more token adds over all attention layers, no window binding."""
    spec = family.attention
    assert spec is not None
    elements = evaluate_int(kv_elements_per_token(spec, values=env), env, "KV cache per token")
    if spec.indexed is None or spec.indexed_dtype is None:
        return nbytes(elements, kv_dtype)
    indexer = evaluate_int(spec.indexed * spec.indexed_kv, env, "indexer keys per token")
    return nbytes(elements - indexer, kv_dtype) + nbytes(indexer, spec.indexed_dtype)


def cache_family(derivation: Derivation) -> Family:
    """The derivation's family, when its record says what its layers keep; refused by name otherwise."""
    family = derivation.architecture
    if family.attention is None and not family.states and not family.caches:
        attention_spec(derivation)  # raises, naming the family
    return family


def beyond_family(family: Family, seq: int, values: Mapping[Symbol, int]) -> Family:
    """The family as its cache is at S: past [attention]'s longest S, its layers keep ``beyond_kv`` per token
    (BigBird's block-sparse layers: nothing); refused by name there when the record does not say."""
    spec = family.attention
    if spec is None or not spec.is_beyond(seq, values):
        return family
    if spec.beyond_kv is None:
        spec.check_seq(f"{family.title} ({family.name})", seq, values)
    note = spec.beyond_note or spec.beyond
    beyond = replace(spec, kv=spec.beyond_kv, note=note, kv_expanded=None, longest=None, beyond_kv=None)
    return replace(family, attention=beyond)


@dataclass(frozen=True)
class Line:
    """One amount of memory: its formula (in the glossary's symbols, ``P`` and ``S``, ``B``) and exact bytes;
    ``name`` is a snake_case key (``kv_cache``)."""

    name: str
    formula: Expr
    bytes: int
    note: str = ""
    in_total: bool = True

    @property
    def gib(self) -> float:
        return self.bytes / 2**30


@dataclass(frozen=True)
class KindAmount:
    """The cache of one kind of layer on one config: how many layers, the formula (bytes) and exact bytes."""

    kind: str
    layers: int
    formula: Expr
    bytes: int
    note: str


@dataclass(frozen=True, repr=False)
class Memory(Shown):
    """A memory estimate: lines in reading order and the total of those that count."""

    mode: str  # "inference" or "training"
    dtype: str
    parameters: int
    parameters_formula: Expr
    lines: tuple[Line, ...]
    assumptions: str
    kv_dtype: str | None = None  # inference only, like the three below
    seq: int | None = None
    batch: int | None = None
    kv_per_token_bytes: int | None = None
    per_layer_kind: tuple[KindAmount, ...] = ()
    scheme: str = ""  # the quantisation scheme the weights are stored in ("": every parameter in dtype)
    stored: tuple = ()  # rows of llmcount.quant.report.Row: each tensor group as the scheme stores it

    @property
    def total_bytes(self) -> int:
        return sum(line.bytes for line in self.lines if line.in_total)

    @property
    def total_gib(self) -> float:
        return self.total_bytes / 2**30

    def bytes_of(self, name: str) -> int:
        """Bytes of the line called ``name``, 0 when there is none."""
        return next((line.bytes for line in self.lines if line.name == name), 0)


def _amount(name: str, elements: Expr, dtype_name: str, env: dict[Symbol, int], note: str, in_total: bool = True):
    """A line for ``elements`` values of a dtype: formula elements·bits/8, bytes rounded up to whole bytes."""
    formula = elements * BITS[dtype_name] / 8
    return Line(name, formula, nbytes(evaluate_int(elements, env, name), dtype_name), note, in_total)


def _fp32_part(derivation: Derivation, values: dict[Symbol, int], dtype_name: str) -> tuple[Expr, int, str]:
    """The parameters a 16-bit model keeps in fp32 (the record's ``[weights] fp32`` terms): their formula, their
    count and a note naming them; ``(0, 0, "")`` in fp32 and in the other dtypes, and for records with none."""
    kept = derivation.architecture.fp32_weights if dtype_name in FLOAT_16 else ()
    terms = [t for t in derivation.terms if t.path in kept]
    if not terms:
        return Integer(0), 0, ""
    count = sum(c.count for c in derivation.evaluate(values).components if c.path in kept)
    paths = ", ".join(dict.fromkeys(t.path for t in terms))
    note = f"{paths} ({count:,} parameters) in fp32, as the modeling code keeps them"
    return Add(*(t.total for t in terms)), count, note


def _weights_line(derivation: Derivation, values: dict[Symbol, int], dtype_name: str, env: dict[Symbol, int]) -> Line:
    """Every parameter in ``dtype_name``, but those the record keeps in fp32 (:func:`_fp32_part`) in 4 bytes."""
    fp32, count, note = _fp32_part(derivation, values, dtype_name)
    if not count:
        return _amount("weights", P, dtype_name, env, f"P parameters, every one in {dtype_name}")
    formula = (P - fp32) * BITS[dtype_name] / 8 + fp32 * BITS["fp32"] / 8
    nbytes_ = nbytes(env[P] - count, dtype_name) + nbytes(count, "fp32")
    return Line("weights", formula, nbytes_, f"P parameters in {dtype_name}, but {note}")


def inference(
    derivation: Derivation,
    values: dict[Symbol, int],
    dtype_name: str = "bf16",
    kv_dtype: str | None = None,
    seq: int = 4096,
    batch: int = 1,
    group_size: int | None = None,
    scale_dtype: str = "fp16",
    overhead_percent: int = 0,
    max_positions: int | None = None,
    weights: tuple[Line, ...] | None = None,
    scheme: str = "",
    stored: tuple = (),
) -> Memory:
    """Weights (+ quantisation scales) + KV cache for B × S tokens (+ a stated overhead), in bytes.

    ``kv_dtype`` defaults to the weights' dtype for fp32/bf16/fp16 and to bf16 for quantised weights
    (weight quantisation leaves the cache in 16 bits). A sliding window that S (or the model's context length,
    ``max_positions``) never reaches is said so in the note of its layers. ``weights``: the lines of weights as a
    quantisation ``scheme`` stores them (:mod:`llmcount.quant.report`), in place of every parameter in one dtype.
    """
    dtype_name = dtype(dtype_name)
    kv_dtype = dtype(kv_dtype) if kv_dtype else (dtype_name if BITS[dtype_name] >= 16 else "bf16")
    parameters = derivation.evaluate(values).total
    env = {**values, P: parameters, S: seq, B: batch}
    family = beyond_family(cache_family(derivation), seq, values)

    lines = [_weights_line(derivation, values, dtype_name, env)]
    if weights is not None:
        lines = list(weights)
    elif group_size is not None:
        scale_dtype = dtype(scale_dtype)
        note = f"one {scale_dtype} scale per group of G = {group_size} parameters (no zero points)"
        lines.append(_amount("quantisation_scales", ceiling(P / group_size), scale_dtype, env, note))
    kinds = [kind for kind in layer_kinds(family, values) if evaluate_int(kind.layers, env, kind.kind)]
    amounts = tuple(
        KindAmount(
            k.kind,
            evaluate_int(k.layers, env, k.kind),
            k.elements * BITS[kv_dtype] / 8 + k.elements_fp32 * BITS["fp32"] / 8,
            nbytes(evaluate_int(k.elements, env, k.kind), kv_dtype)
            + nbytes(evaluate_int(k.elements_fp32, env, k.kind), "fp32"),
            k.note + _unreached(family, k.kind, env, seq, max_positions),
        )
        for k in kinds
    )
    attention = [a for k, a in zip(kinds, amounts, strict=True) if not k.is_state]
    if attention:
        formula = Add(*(a.formula for a in attention))
        note = "; ".join(dict.fromkeys(part for a in attention for part in a.note.split("; ")))
        lines.append(Line("kv_cache", formula, sum(a.bytes for a in attention), note))
    states = [a for k, a in zip(kinds, amounts, strict=True) if k.is_state]
    if states:
        formula = Add(*(a.formula for a in states))
        note = "; ".join(f"{a.kind}: {a.note}" for a in states) + "; fixed per sequence, whatever S"
        lines.append(Line("state", formula, sum(a.bytes for a in states), note))
    windowed = any(k.kind not in ("full_attention", INDEXER) and not k.is_state for k in kinds)
    if family.attention is not None and family.attention.kv_expanded is not None:
        expanded = Add(*(k.elements for k in layer_kinds(family, values, expanded=True) if not k.is_state))
        note = family.attention.expanded_note
        lines.append(_amount("kv_cache_expanded", expanded, kv_dtype, env, note, in_total=False))
    if overhead_percent:
        counted = [line for line in lines if line.in_total]
        base = sum(line.bytes for line in counted)
        formula = Add(*(line.formula for line in counted)) * overhead_percent / 100
        note = f"stated overhead: {overhead_percent}% of the lines above (activations, workspace, fragmentation)"
        lines.append(Line("overhead", formula, -(-base * overhead_percent // 100), note))
    return Memory(
        mode="inference",
        dtype=dtype_name,
        kv_dtype=kv_dtype,
        seq=seq,
        batch=batch,
        parameters=parameters,
        parameters_formula=derivation.total,
        lines=tuple(lines),
        kv_per_token_bytes=None if windowed or family.attention is None else per_token_bytes(family, env, kv_dtype),
        per_layer_kind=amounts,
        scheme=scheme,
        stored=stored,
        assumptions=(
            INFERENCE_ASSUMPTIONS
            if not scheme
            else INFERENCE_ASSUMPTIONS.replace(
                "every parameter stored in the weights' dtype", f"the weights as stored by {scheme}"
            )
        )
        + (f"; {STATE_ASSUMPTION.format(kinds=', '.join(a.kind.replace('_', ' ') for a in states))}" if states else ""),
    )


def _unreached(family: Family, kind: str, env: dict[Symbol, int], seq: int, max_positions: int | None) -> str:
    """A note for sliding or chunked layers whose window does not bind: it is at least the model's context length
    (then it never applies), or S is shorter than it (then it does not at this S)."""
    if kind not in ("sliding_attention", "chunked_attention") or family.attention is None:
        return ""
    window = evaluate_int(family.attention.window, env, "window")
    if max_positions is not None and window - 1 >= max_positions:
        return (
            f"; the window W = {window:,} is not below the model's context length (max_position_embeddings "
            f"{max_positions:,}): it never applies, these layers keep every token as full layers do"
        )
    if window - 1 >= seq:
        return f"; at S = {seq:,} the window W = {window:,} is not reached: these layers keep every token"
    return ""


def training(derivation: Derivation, values: dict[Symbol, int], dtype_name: str = "bf16") -> Memory:
    """Weights, gradients and AdamW states of mixed-precision training (``TRAINING_ASSUMPTIONS``):
    :math:`2P + 2P + 4P + 4P + 4P = 16P` bytes (fp32: :math:`4P + 4P + 4P + 4P`)."""
    dtype_name = dtype(dtype_name)
    if dtype_name not in ("fp32", *FLOAT_16):
        raise LlmcountError(f"training: dtype {dtype_name} is not supported; choices: fp32, {', '.join(FLOAT_16)}")
    parameters = derivation.evaluate(values).total
    width = BITS[dtype_name] // 8
    fp32, count, kept = _fp32_part(derivation, values, dtype_name)
    # (name, formula, bytes, note): a parameter kept in fp32 has an fp32 gradient and needs no master copy
    mixed = width * (P - fp32) + 4 * fp32
    mixed_bytes = width * (parameters - count) + 4 * count
    also = f"; {kept}" if kept else ""
    parts = [
        ("weights", mixed, mixed_bytes, f"{dtype_name} weights{also}"),
        ("gradients", mixed, mixed_bytes, f"{dtype_name} gradients{also}"),
    ]
    if dtype_name != "fp32":
        master = "fp32 master copy of the weights" + (", but not of those kept in fp32" if kept else "")
        parts.append(("master_weights", 4 * (P - fp32), 4 * (parameters - count), master))
    parts += [("adam_m", 4 * P, 4 * parameters, "fp32 Adam first moment")]
    parts += [("adam_v", 4 * P, 4 * parameters, "fp32 Adam second moment")]
    return Memory(
        mode="training",
        dtype=dtype_name,
        parameters=parameters,
        parameters_formula=derivation.total,
        lines=tuple(Line(name, formula, size, note) for name, formula, size, note in parts),
        assumptions=TRAINING_ASSUMPTIONS,
    )
