"""Inference memory of a config counted by the compiled path (:mod:`llmcount.counting`), without sympy: what
:func:`llmcount.formulas.memory.inference` gives for every parameter in one dtype and the KV cache of B × S tokens,
from the memory plans of the family's snapshot (made by :mod:`llmcount.formulas.snapshot` from the same record,
checked equal to the sympy path for every bundled preset and every record's defaults by ``tests/test_plain_memory.py``).

A plan describes the cache of the configs whose values hold the same window symbols (:func:`_key`): each kind of
layer's layers and elements as compiled expressions, its note, and its formula (text and sympy's string) for each
width of the cache's dtype; the kv_cache and state lines' formulas for each set of kinds that are on some layer.
Anything else raises :class:`~llmcount.counting.Fallback` before a word is printed, and the caller computes through
the sympy path, which words every refusal: a record without a plan for this config, a window below 2, S past the
longest S the record describes, a count that is not whole, a selection of terms whose formula the snapshot lacks.

The numbers here are bytes as Python ints; only the formulas shown beside them are text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import evaluate
from .counting import Fallback, _value
from .dtypes import BITS, canonical
from .errors import LlmcountError
from .shown import Shown

if TYPE_CHECKING:
    from .counting import Counted

FLOAT_16 = ("bf16", "fp16")
INFERENCE_ASSUMPTIONS = (
    "every parameter stored in the weights' dtype; the KV cache of B sequences of S tokens in the KV dtype; "
    "activations, temporary buffers, the framework and fragmentation are not counted unless an overhead is stated"
)
STATE_ASSUMPTION = (
    "the fixed state of the {kinds} layers in the KV dtype, except the recurrent states that transformers' torch "
    "code keeps in fp32 whatever the model's dtype (a record's recurrent_dtype)"
)
INDEXER = "indexer"  # the kind of the indexer keys some attention layers cache besides their keys and values
POSITION_KEYS = ("max_position_embeddings", "n_positions")  # as formulas.config reads the context length


def nbytes(elements: int, dtype_name: str) -> int:
    """Bytes of ``elements`` values of a dtype, a partly used last byte counted whole (int4)."""
    return -(-elements * BITS[dtype_name] // 8)


def max_positions(config: Any) -> int | None:
    """The config's max_position_embeddings (n_positions), as :func:`llmcount.formulas.config.read_config` reads it."""
    if not isinstance(config, dict):
        return None
    positions = next((config[key] for key in POSITION_KEYS if key in config), None)
    return positions if type(positions) is int and positions > 0 else None


@dataclass(frozen=True)
class Line:
    """One amount of memory (``formulas.memory.Line``): its formula as text (``text``: as the table prints it;
    ``formula``: as sympy writes it, the JSON's) and exact bytes."""

    name: str
    formula: str
    bytes: int
    note: str = ""
    in_total: bool = True
    text: str = ""

    @property
    def gib(self) -> float:
        return self.bytes / 2**30


@dataclass(frozen=True)
class KindAmount:
    """The cache of one kind of layer on one config (``formulas.memory.KindAmount``), its formula as text."""

    kind: str
    layers: int
    formula: str
    bytes: int
    note: str
    text: str = ""


@dataclass(frozen=True, repr=False)
class Memory(Shown):
    """An inference memory estimate with the fields of ``formulas.memory.Memory`` (formulas as text)."""

    mode: str
    dtype: str
    parameters: int
    parameters_formula: str
    lines: tuple[Line, ...]
    assumptions: str
    kv_dtype: str | None = None
    seq: int | None = None
    batch: int | None = None
    kv_per_token_bytes: int | None = None
    per_layer_kind: tuple[KindAmount, ...] = ()
    scheme: str = ""
    stored: tuple = ()

    @property
    def total_bytes(self) -> int:
        return sum(line.bytes for line in self.lines if line.in_total)

    @property
    def total_gib(self) -> float:
        return self.total_bytes / 2**30

    def bytes_of(self, name: str) -> int:
        """Bytes of the line called ``name``, 0 when there is none."""
        return next((line.bytes for line in self.lines if line.name == name), 0)


def _whole(source: str, values: dict[str, int]) -> int:
    number = evaluate.whole(_value(evaluate.from_source(source), values))
    if number is None:
        raise Fallback  # not a whole number: the sympy path words it
    return number


def _key(names: list[str], values: dict[str, int], equal: bool) -> str:
    """``snapshot._memory_key``: which window symbols the values hold, and whether every caching layer slides."""
    return ",".join(name for name in names if name in values) + ("|all" if equal else "")


def inference(
    model: Counted,
    dtype_name: str = "bf16",
    kv_dtype: str | None = None,
    seq: int = 4096,
    batch: int = 1,
    max_positions: int | None = None,
) -> Memory:
    """``formulas.memory.inference(model.derivation, model.values, dtype_name, kv_dtype, seq, batch,
    max_positions=max_positions)`` of the sympy path, from the snapshot; :class:`Fallback` for what it does not take
    (see the module's docstring). A dtype that is not one is refused by name (LlmcountError), as there."""
    dtype_name = canonical(dtype_name)
    kv_dtype = canonical(kv_dtype) if kv_dtype else (dtype_name if BITS[dtype_name] >= 16 else "bf16")
    family = model.architecture
    memory = family.data.get("memory")
    shown = model.shown
    if memory is None or shown is None:
        raise Fallback
    values = dict(model.values)
    parameters = model.total
    env = {**values, "P": parameters, "S": seq, "B": batch}
    window = None
    equal = False
    if memory["window"] is not None and set(memory["window"][1]) <= values.keys():
        window = _whole(memory["window"][0], env)
        if window < 2:
            raise Fallback  # transformers' cache keeps every token then: the sympy path refuses it by name
        equal = _whole(memory["sliding"][0], env) == _whole(memory["sliding"][1], env)
    longest = memory["longest"]
    if longest is not None and set(longest[1]) <= values.keys() and seq > _whole(longest[0], env):
        raise Fallback  # beyond what [attention] describes: the sympy path reads what runs there
    plan = memory["plans"].get(_key(memory["names"], values, equal))
    if plan is None:
        raise Fallback
    lines = [_weights(model, shown, memory, dtype_name, parameters)]
    bits = str(BITS[kv_dtype])
    kinds, amounts, pattern = [], [], ""
    for kind in plan["kinds"]:
        layers = _whole(kind["layers"], env)
        pattern += "1" if layers else "0"
        if not layers:
            continue
        size = nbytes(_whole(kind["elements"], env), kv_dtype) + nbytes(_whole(kind["fp32"], env), "fp32")
        text, formula = kind["formula"][bits]
        note = kind["note"] + _unreached(kind["kind"], window, seq, max_positions)
        kinds.append(kind)
        amounts.append(KindAmount(kind["kind"], layers, formula, size, note, text))
    formulas = plan["lines"][pattern][bits]
    attention = [a for k, a in zip(kinds, amounts, strict=True) if not k["state"]]
    if attention:
        text, formula = formulas["kv_cache"]
        note = "; ".join(dict.fromkeys(part for a in attention for part in a.note.split("; ")))
        lines.append(Line("kv_cache", formula, sum(a.bytes for a in attention), note, text=text))
    states = [a for k, a in zip(kinds, amounts, strict=True) if k["state"]]
    if states:
        text, formula = formulas["state"]
        note = "; ".join(f"{a.kind}: {a.note}" for a in states) + "; fixed per sequence, whatever S"
        lines.append(Line("state", formula, sum(a.bytes for a in states), note, text=text))
    windowed = any(k["kind"] not in ("full_attention", INDEXER) and not k["state"] for k in kinds)
    expanded = plan["expanded"]
    if expanded is not None:
        text, formula = expanded["formula"][bits]
        size = nbytes(_whole(expanded["elements"], env), kv_dtype)
        lines.append(Line("kv_cache_expanded", formula, size, expanded["note"], in_total=False, text=text))
    per_token = plan["per_token"]
    assumptions = INFERENCE_ASSUMPTIONS
    if states:
        assumptions += f"; {STATE_ASSUMPTION.format(kinds=', '.join(a.kind.replace('_', ' ') for a in states))}"
    return Memory(
        mode="inference",
        dtype=dtype_name,
        kv_dtype=kv_dtype,
        seq=seq,
        batch=batch,
        parameters=parameters,
        parameters_formula=shown["total"],
        lines=tuple(lines),
        kv_per_token_bytes=None if windowed or per_token is None else _per_token(per_token, env, kv_dtype),
        per_layer_kind=tuple(amounts),
        assumptions=assumptions,
    )


def _weights(model: Counted, shown: dict[str, Any], memory: dict[str, Any], dtype_name: str, parameters: int) -> Line:
    """``memory._weights_line``: every parameter in ``dtype_name``, but those the record keeps in fp32 in 4 bytes."""
    kept = shown.get("fp32_weights") if dtype_name in FLOAT_16 else None
    if kept is not None:
        count = sum(c.count for c in model.components if c.path in kept["paths"])
        if count:
            paths = ", ".join(kept["paths"])
            note = f"{paths} ({count:,} parameters) in fp32, as the modeling code keeps them"
            size = nbytes(parameters - count, dtype_name) + nbytes(count, "fp32")
            text, formula = kept["formula"]
            return Line("weights", formula, size, f"P parameters in {dtype_name}, but {note}", text=text)
    text, formula = memory["weights"][str(BITS[dtype_name])]
    size = nbytes(parameters, dtype_name)
    return Line("weights", formula, size, f"P parameters, every one in {dtype_name}", text=text)


def _per_token(per_token: dict[str, Any], env: dict[str, int], kv_dtype: str) -> int:
    """``memory.per_token_bytes``: the bytes one more token adds over all attention layers."""
    elements = _whole(per_token["elements"], env)
    if per_token["indexer"] is None:
        return nbytes(elements, kv_dtype)
    indexer = _whole(per_token["indexer"], env)
    return nbytes(elements - indexer, kv_dtype) + nbytes(indexer, per_token["indexer_dtype"])


def _unreached(kind: str, window: int | None, seq: int, max_positions: int | None) -> str:
    """``memory._unreached``: a note for sliding or chunked layers whose window does not bind."""
    if kind not in ("sliding_attention", "chunked_attention") or window is None:
        return ""
    if max_positions is not None and window - 1 >= max_positions:
        return (
            f"; the window W = {window:,} is not below the model's context length (max_position_embeddings "
            f"{max_positions:,}): it never applies, these layers keep every token as full layers do"
        )
    if window - 1 >= seq:
        return f"; at S = {seq:,} the window W = {window:,} is not reached: these layers keep every token"
    return ""


def memory_data(model: Any, memory: Any) -> dict[str, Any]:
    """The JSON form of a memory estimate (``memory --json``), of this module's :class:`Memory` or of
    ``formulas.memory.Memory`` (formulas as text either way): the fields every mode has."""
    return {
        "model": model.name,
        "mode": memory.mode,
        "dtype": memory.dtype,
        "kv_dtype": memory.kv_dtype,
        "seq": memory.seq,
        "batch": memory.batch,
        "parameters": memory.parameters,
        "weights_bytes": memory.bytes_of("weights"),
        "kv_cache_bytes": memory.bytes_of("kv_cache"),
        "kv_cache_per_token_bytes": memory.kv_per_token_bytes,
        "state_bytes": memory.bytes_of("state"),
        "per_layer_kind": [
            {"kind": a.kind, "layers": a.layers, "bytes": a.bytes, "formula": str(a.formula), "note": a.note}
            for a in memory.per_layer_kind
        ],
        "total_bytes": memory.total_bytes,
        "total_gib": memory.total_gib,
        "unit": "bytes; GiB = 2^30 bytes",
        "formulas": {"P": str(memory.parameters_formula), **{line.name: str(line.formula) for line in memory.lines}},
        "lines": [
            {"name": line.name, "bytes": line.bytes, "gib": line.gib, "in_total": line.in_total, "note": line.note}
            for line in memory.lines
        ],
        "assumptions": memory.assumptions,
    }


def render_memory(model: Counted, memory: Memory, width: int | None = None) -> str:
    """``renderers.render_memory`` of an inference estimate, the branch of ``costs_memory.txt.j2`` it takes, written
    out in Python (a test holds the two texts equal)."""
    from .plain import count, fit_table, grouped, wrap

    title = (
        f"{model.name} ({model.architecture.title}; {model.source}): inference memory, weights {memory.dtype}, KV "
        f"cache {memory.kv_dtype}, B = {memory.batch}, S = {grouped(memory.seq)}"
    )
    out = [wrap(title, width, "  ")]
    rows = [["", "formula (bytes)", "bytes", "GB", "GiB"]]
    for line in memory.lines:
        name = line.name.replace("_", " ")
        size = line.bytes
        rows.append([name if line.in_total else f"({name})", line.text, grouped(size), f"{size / 10**9:.2f}"])
        rows[-1].append(f"{line.gib:.2f}")
    total = memory.total_bytes
    rows += [["", "", "", "", ""], ["total", "", grouped(total), f"{total / 10**9:.2f}", f"{memory.total_gib:.2f}"]]
    out.append(fit_table(rows, "llrrr", width, 1))
    if len(memory.per_layer_kind) > 1:
        kinds = [["layer kind", "layers", "formula (bytes)", "bytes", "GB", "GiB"]]
        for a in memory.per_layer_kind:
            size = a.bytes
            kinds.append([a.kind.replace("_", " "), grouped(a.layers), a.text, grouped(size), f"{size / 10**9:.2f}"])
            kinds[-1].append(f"{size / 2**30:.2f}")
        out += ["", fit_table(kinds, "lrlrrr", width, 2)]
    out.append("")
    out += [wrap(f"{line.name.replace('_', ' ')}: {line.note}", width, "    ") for line in memory.lines]
    out += ["", f"P = {grouped(memory.parameters)} parameters ({count(memory.parameters)})"]
    if memory.kv_per_token_bytes is not None:
        out.append(f"KV cache per token: {grouped(memory.kv_per_token_bytes)} bytes ({memory.kv_dtype})")
    out.append(wrap(f"GB = 10^9 bytes, GiB = 2^30 bytes. Assumptions: {memory.assumptions}.", width, "  "))
    return "\n".join(out) + "\n"


SEARCH_LIMIT = 2**40
"""The search stops here (about 10^12 tokens or sequences): beyond it the answer is "no limit from memory"."""

STANDARD_KINDS = ("full_attention", "sliding_attention", "chunked_attention", INDEXER)
"""The kinds of layer whose cache keeps tokens (and, for a state, a fixed state) without a record's ``[[cache]]``
formula: a cache that shrinks as tokens are folded is not searched (the sympy path refuses it by name)."""


@dataclass(frozen=True, repr=False)
class Fit(Shown):
    """What fits in ``capacity`` bytes. ``None`` for a maximum means the search limit fits: memory sets no limit."""

    capacity: int
    dtype: str
    kv_dtype: str
    overhead_percent: int
    weights: int  # weights + quantisation scales, bytes
    seq: int
    max_seq: int | None  # at B = 1
    max_seq_total: int | None  # total bytes at (max_seq, B = 1)
    max_batch: int | None  # at S = seq
    max_batch_total: int | None
    max_positions: int | None = None  # the model's context length (max_position_embeddings), when the config has it
    max_seq_by_memory: int | None = None  # the longest S memory allows, before the cap at max_positions

    @property
    def capped(self) -> bool:
        """The context length, not memory, sets the longest S."""
        return self.max_seq != self.max_seq_by_memory

    @property
    def seq_beyond_context(self) -> bool:
        """The S of the largest B is longer than the model's context length: that B is memory's answer for a length
        the model was not built for (the S is the user's, so it is said, not changed)."""
        return self.max_positions is not None and self.seq > self.max_positions


def largest(fits: Callable[[int], bool]) -> int | None:
    """The largest x >= 0 with ``fits(x)`` (``fits`` non-increasing from True to False; ``fits(0)`` assumed),
    ``None`` when :data:`SEARCH_LIMIT` fits. Doubling, then bisection: about 2·log2(x) calls."""
    if not fits(1):
        return 0
    low, high = 1, 2
    while fits(high):
        if high >= SEARCH_LIMIT:
            return None
        low, high = high, min(2 * high, SEARCH_LIMIT)
    while high - low > 1:  # fits(low) and not fits(high)
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


def searched(
    total: Callable[[int, int], Any],
    first: Any,
    weights: int,
    capacity: int,
    seq: int,
    max_positions: int | None,
    overhead_percent: int = 0,
) -> Fit:
    """The :class:`Fit` of a memory ``total(S, B)`` (``first`` its value at S = B = 1; ``weights`` its bytes that do
    not grow with S or B): the longest S at B = 1, capped at ``max_positions``, and the most B at ``seq``."""
    by_memory = largest(lambda s: total(s, 1).total_bytes <= capacity)
    max_seq = by_memory
    if max_positions is not None and (by_memory is None or by_memory > max_positions):
        max_seq = max_positions
    max_batch = largest(lambda b: total(seq, b).total_bytes <= capacity)
    return Fit(
        capacity=capacity,
        dtype=first.dtype,
        kv_dtype=first.kv_dtype or first.dtype,
        overhead_percent=overhead_percent,
        weights=weights,
        seq=seq,
        max_seq=max_seq,
        max_seq_total=total(max_seq, 1).total_bytes if max_seq else None,
        max_batch=max_batch,
        max_batch_total=total(seq, max_batch).total_bytes if max_batch else None,
        max_positions=max_positions,
        max_seq_by_memory=by_memory,
    )


def fit(
    model: Counted,
    capacity: int,
    dtype_name: str = "bf16",
    kv_dtype: str | None = None,
    seq: int = 4096,
    max_positions: int | None = None,
) -> Fit:
    """``formulas.capacity.fit(model.derivation, model.values, capacity, dtype_name, kv_dtype, seq,
    max_positions=max_positions)`` of the sympy path (no overhead, scales or parts), searched over :func:`inference`;
    :class:`Fallback` for a config whose cache the search does not take as it is (a record's [[cache]] layers, S past
    the longest S its [attention] describes) or whose memory :func:`inference` does not take (the sympy path words
    the refusal); LlmcountError (:func:`too_small`) for weights that do not fit."""
    memory = model.architecture.data.get("memory")
    if memory is None or memory["longest"] is not None or model.parts:
        raise Fallback  # a cache that may change past the longest S described, a composite's parts: the sympy path
    plans = memory["plans"].values()
    if any(not kind["state"] and kind["kind"] not in STANDARD_KINDS for plan in plans for kind in plan["kinds"]):
        raise Fallback  # a [[cache]] the record states: the sympy path refuses the search by name

    def total(s: int, b: int) -> Memory:
        return inference(model, dtype_name, kv_dtype, s, b, max_positions)

    first = total(1, 1)
    weights = first.bytes_of("weights")
    if weights > capacity:
        raise too_small(capacity, weights, first.dtype)
    return searched(total, first, weights, capacity, seq, max_positions)


def too_small(capacity: int, weights: int, dtype_name: str) -> LlmcountError:
    """The refusal of a capacity below the weights alone, naming both amounts and the shortfall."""
    from .sizes import gb_gib

    short = weights - capacity
    return LlmcountError(
        f"--gpu-memory: {capacity:,} bytes ({gb_gib(capacity)}) is smaller than the weights alone, "
        f"{weights:,} bytes ({gb_gib(weights)}) in {dtype_name}, by {short:,} bytes ({gb_gib(short)})"
    )


FIT_NOTE = (
    "the largest values whose inference memory (weights, scales, KV cache, the stated overhead) is at most "
    "the capacity; null: no limit from memory up to 2^40; max_seq_at_batch_1 is at most the model's context "
    "length (max_position_embeddings, when the config gives it; capped_by_context), max_seq_by_memory is not; "
    "max_batch_at_seq is at the seq asked for, which seq_beyond_context says is longer than the context length"
)
FIT_METHOD = (
    "Found by searching the exact inference memory (llmcount memory), so sliding windows and fixed states are taken "
    "as the cache holds them; the longest S is at most the model's context length when its config gives one "
    "(max_position_embeddings), and an S given for the largest B that is longer than it is said to be."
)
FIT_WIDTH = 80  # as renderers.costs_glance renders it


def fit_data(model: Any, f: Fit) -> dict[str, Any]:
    """The JSON form of ``memory --gpu-memory`` (of a :class:`Counted` or a ``formulas.config.Model``)."""
    return {
        "model": model.name,
        "gpu_memory_bytes": f.capacity,
        "dtype": f.dtype,
        "kv_dtype": f.kv_dtype,
        "overhead_percent": f.overhead_percent,
        "weights_bytes": f.weights,
        "max_seq_at_batch_1": f.max_seq,
        "total_bytes_at_max_seq": f.max_seq_total,
        "max_position_embeddings": f.max_positions,
        "max_seq_by_memory": f.max_seq_by_memory,
        "capped_by_context": f.capped,
        "seq": f.seq,
        "seq_beyond_context": f.seq_beyond_context,
        "max_batch_at_seq": f.max_batch,
        "total_bytes_at_max_batch": f.max_batch_total,
        "unit": "bytes; GiB = 2^30 bytes",
        "note": FIT_NOTE,
    }


def _answer(value: int | None, unit: str, total: int | None) -> str:
    """A searched maximum in words: no limit, none, or the value and the total it takes."""
    from .sizes import gb_gib

    if value is None:
        return f"no limit from memory (up to 2^40 {unit}: the cache stops growing)"
    if value == 0:
        return f"none: not even one {unit[:-1]} fits"
    return f"{value:,} {unit} (total {gb_gib(total)})"


def _longest(f: Fit) -> str:
    """The line of the longest S at B = 1, said to be the context length when that, not memory, sets it."""
    from .sizes import gb_gib

    if not f.capped:
        return "longest S at B = 1: " + _answer(f.max_seq, "tokens", f.max_seq_total)
    alone = "no limit (the cache stops growing)" if f.max_seq_by_memory is None else f"{f.max_seq_by_memory:,} tokens"
    return (
        f"longest S at B = 1: {f.max_seq:,} tokens, the model's context length (max_position_embeddings; total "
        f"{gb_gib(f.max_seq_total)}); memory alone would allow {alone}"
    )


def render_fit(model: Any, f: Fit) -> str:
    """``renderers.costs_glance.render_fit`` (``costs_fit.txt.j2``) written out in Python (a test holds the two texts
    equal): the capacity, the weights and what is left, then the longest S and the largest B."""
    from .plain import table, wrap
    from .sizes import gb_gib

    width = FIT_WIDTH
    out = [
        wrap(
            f"{model.name} ({model.architecture.title}; {model.source}): what fits in {f.capacity:,} bytes "
            f"({gb_gib(f.capacity)})",
            width,
        ),
        wrap(f"weights {f.dtype}, KV cache {f.kv_dtype}, overhead {f.overhead_percent}% of weights + KV cache", width),
    ]
    rows = [["", "bytes", "GB", "GiB"]]
    for name, size in (("capacity", f.capacity), ("weights", f.weights), ("left", f.capacity - f.weights)):
        rows.append([name, f"{size:,}", f"{size / 10**9:.2f}", f"{size / 2**30:.2f}"])
    out += [table(rows, "lrrr"), "", wrap(_longest(f), width, "  ")]
    beyond = ""
    if f.seq_beyond_context:
        beyond = (
            f"; but S is longer than the model's context length, {f.max_positions:,} tokens "
            "(max_position_embeddings), which the model was not built for"
        )
    largest_b = f"largest B at S = {f.seq:,}: " + _answer(f.max_batch, "sequences", f.max_batch_total) + beyond
    out += [wrap(largest_b, width, "  "), wrap(FIT_METHOD, width)]
    return "\n".join(out) + "\n"
