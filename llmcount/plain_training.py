"""Training memory per GPU of a config counted by the compiled path (:mod:`llmcount.counting`), without sympy: what
:func:`llmcount.formulas.training.estimate` gives (model states under an optimizer, ZeRO, tensor, pipeline and
expert parallelism; the activations of :mod:`llmcount.formulas.activations`), from the family's training snapshot
(``formulas/compiled_training/<model_type>.json``, made by :mod:`llmcount.formulas.training_snapshot` from the same
record, held equal to the sympy path on every bundled preset and every record's defaults by
``tests/test_plain_training.py``).

The snapshot holds, for each selection of terms the presets and the defaults make, each term's per-layer count
compiled, split as tensor parallelism splits it (the part it divides, the part it keeps whole), whether it is a
weight matrix and its two sides; the record's ``[activations]`` table with each entry's size compiled and split
by monomial as tensor parallelism splits it; and the formulas shown beside the numbers (text, sympy's string,
LaTeX) for the options the generator ran. The numbers are computed here as Python ints (a quotient as a
``Fraction``, rounded where the sympy path rounds); only the formulas are looked up.

Anything else raises :class:`~llmcount.counting.Fallback` before a word is printed, and the caller computes through
the sympy path, which words every refusal: a composite model, a selection or an option set whose formulas the
snapshot lacks (a LoRA target list whose formula it does not hold), layer counts that overlap (a layer of two
counted kinds), a degree that does not divide what it splits, a count that is not whole, an entry summed over the
layers under --pp or --recompute full, LoRA under --tp or on a routed or gradient-free term.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cache
from importlib import resources
from typing import Any

from . import evaluate
from .counting import Counted, Fallback, _condition, compiled
from .dtypes import canonical
from .errors import LlmcountError
from .formulas.reading import _nested_keys, _Reader, read_values
from .shown import Shown

FORMAT = 1
FOLDER = "compiled_training"
COMMON = "_common.json"
FLOAT_16 = ("bf16", "fp16")
WIDTH = {"fp32": 4, "bf16": 2, "fp16": 2}
KEPT_AS = {"sdpa": "flash"}
ENTRY_WIDTH = {"fp32": 4, "int64": 8, "int32": 4, "bool": 1}
SCALE = {"token": ("B", "S"), "position": ("S",), "sequence": ("B",), "step": ()}


@cache
def common() -> dict[str, Any] | None:
    """The model-independent part of the snapshots: the state lines' formulas and the notes."""
    return _read(COMMON)


def _read(name: str) -> dict[str, Any] | None:
    try:
        text = resources.files("llmcount.formulas").joinpath(FOLDER).joinpath(name).read_text("utf-8")
        data = json.loads(text)
    except (OSError, ValueError):
        return None
    return data if data.get("format") == FORMAT else None


@cache
def snapshot(model_type: str) -> dict[str, Any] | None:
    """The training snapshot of ``model_type``, when its count snapshot is current and it was made from the same
    record text."""
    family = compiled(model_type)
    if family is None:
        return None
    data = _read(f"{model_type}.json")
    if data is None or data.get("hash") != family.data.get("hash") or data.get("name") != model_type:
        return None
    return data


@dataclass(frozen=True)
class Parallel:
    """The parallel degrees and the ZeRO stage."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    zero: int = 0
    sequence_parallel: bool = False

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.ep


@dataclass(frozen=True)
class Lora:
    """``formulas.training.Lora``: LoRA of rank ``rank`` on the weight matrices whose group or module name is in
    ``targets``."""

    rank: int
    targets: tuple[str, ...] = ("attention", "mlp")

    def adapted(self, term: dict[str, Any]) -> bool:
        """``formulas.training.Lora.adapted`` of a term of the training snapshot."""
        path = term["path"]
        module = path.split("/", 1)[-1]
        if ".bias" in path or "norm" in module or not term["matrix"] or term["embedding"]:
            return False
        return term["group"] in self.targets or module in self.targets


def lora_key(terms: list[dict[str, Any]], lora: Lora) -> str:
    """The key of the LoRA formula in a selection of the training snapshot: the adapted terms' paths."""
    return ",".join(term["path"] for term in terms if lora.adapted(term))


@dataclass(frozen=True)
class Held:
    """Parameters held by one GPU, by how the optimizer treats them: hidden weight ``matrices``, ``others``
    (embedding, head, norm scales, biases), ``frozen`` (no gradient: the base under LoRA, a record's
    ``grad = false`` terms) and ``adapters`` (LoRA); with Adafactor, ``factored`` second-moment values."""

    matrices: int = 0
    others: int = 0
    frozen: int = 0
    adapters: int = 0
    factored: int = 0

    def __add__(self, other: Held) -> Held:
        return Held(*(a + b for a, b in zip(self.values(), other.values(), strict=True)))

    def times(self, count: int) -> Held:
        return Held(*(count * a for a in self.values()))

    def values(self) -> tuple[int, ...]:
        return (self.matrices, self.others, self.frozen, self.adapters, self.factored)

    @property
    def parameters(self) -> int:
        return self.matrices + self.others + self.frozen + self.adapters

    @property
    def trainable(self) -> int:
        return self.matrices + self.others + self.adapters


@dataclass(frozen=True)
class Line:
    """A model-state line: its formula as text (``text``) and as sympy writes it (``formula``), exact bytes."""

    name: str
    formula: str
    bytes: int
    note: str = ""
    text: str = ""

    @property
    def gib(self) -> float:
        return self.bytes / 2**30


@dataclass(frozen=True)
class Options:
    attention: str = "sdpa"
    recompute: str = "none"
    tp: int = 1
    pp: int = 1
    sequence_parallel: bool = False


@dataclass(frozen=True)
class LayerKind:
    """Activations of one layer of one kind (formulas as text)."""

    name: str
    count: int
    formula: str
    text: str
    bytes: int
    components: tuple[tuple[str, str, int], ...]


@dataclass(frozen=True)
class Activations:
    """``formulas.activations.Activations`` with its formulas as text (``formula``: sympy's string)."""

    dtype: str
    options: Options
    formula: str
    text: str
    latex: str
    bytes: int
    per_layer_kind: tuple[LayerKind, ...]
    model_level: tuple[tuple[str, str, str, int], ...]  # (path, formula, text, bytes)
    per_gpu_bytes: int
    per_gpu_note: str
    per_gpu_layer_bytes: tuple[int, ...] = ()
    assumptions: str = ""
    per_stage_bytes: tuple[int, ...] = ()  # with pipeline parallelism: each stage's bytes, stage 1 first


@dataclass(frozen=True, repr=False)
class Training(Shown):
    """``formulas.training.Training`` of the compiled path (formulas as text)."""

    dtype: str
    optimizer: str
    parallel: Parallel
    parameters: int
    held: Held
    lines: tuple[Line, ...]
    activations: Activations | None = None
    activations_refused: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    no_grad_paths: tuple[str, ...] = ()
    no_grad_parameters: int = 0
    lora: Lora | None = None
    lora_parameters: int | None = None  # trainable adapter parameters of the whole model
    lora_formula: tuple[str, str] | None = None  # the adapters' formula: as the table prints it, as sympy writes it

    @property
    def model_states_bytes(self) -> int:
        return sum(line.bytes for line in self.lines)

    @property
    def activations_bytes(self) -> int | None:
        return None if self.activations is None else self.activations.per_gpu_bytes

    @property
    def total_bytes(self) -> int:
        return self.model_states_bytes + (self.activations_bytes or 0)


def _number(source: str, values: dict[str, Any]) -> int | Fraction:
    try:
        return evaluate.from_source(source)(values)
    except (KeyError, ZeroDivisionError):
        raise Fallback from None


def _int(source: str, values: dict[str, Any]) -> int:
    """``int(expr.subs(values))`` of the sympy path: a quotient truncated toward zero."""
    return int(_number(source, values))


def _whole(value: int | Fraction) -> int:
    number = evaluate.whole(value)
    if number is None:
        raise Fallback  # not a whole number: the sympy path words it
    return number


def _ceil(value: int | Fraction) -> int:
    return -((-value.numerator) // value.denominator) if type(value) is Fraction else value


def compute_dtype(name: str) -> str:
    try:
        compute = canonical(name)
    except LlmcountError:
        raise Fallback from None
    if compute not in WIDTH:
        raise Fallback  # refused by name by the sympy path
    return compute


# --- model states -----------------------------------------------------------------------------------------------


def _padded(values: dict[str, int], tp: int, padded: list[str]) -> dict[str, int]:
    return {**values, **{s: -(-values[s] // tp) * tp for s in padded if values.get(s) is not None}}


def _check_parallel(model: Counted, selection: dict[str, Any], parallel: Parallel, padded: list[str]) -> None:
    """``training.check_parallel``: Fallback where the sympy path refuses (it words the refusal)."""
    values = model.values
    if parallel.zero not in (0, 1, 2, 3) or (parallel.sequence_parallel and parallel.tp == 1):
        raise Fallback
    tp = parallel.tp
    if tp > 1:
        for name in ("h", "h_kv"):
            if values.get(name) is not None and values[name] % tp:
                raise Fallback
        if selection["summed"]:
            raise Fallback
        with_pads = _padded(values, tp, padded)
        for term in selection["terms"]:
            if term["routed"]:
                continue
            if term["refuse_tp"]:
                raise Fallback
            if any(values.get(name) is not None and values[name] % tp for name in term["split_symbols"]):
                raise Fallback
            try:
                count = evaluate.from_source(term["split"])(with_pads)
            except (KeyError, ZeroDivisionError):
                continue  # not a number there: the sympy path checks nothing either
            count = evaluate.whole(count)
            if count is not None and count % tp:
                raise Fallback
    if parallel.ep > 1 and (not model.architecture.is_moe or "n" not in values or values["n"] % parallel.ep):
        raise Fallback
    if parallel.pp > values["N"]:
        raise Fallback


def _held(
    term: dict[str, Any],
    values: dict[str, int],
    parallel: Parallel,
    optimizer: str,
    padded: list[str],
    lora: Lora | None = None,
) -> Held:
    """``training._held``."""
    if term["routed"]:
        count = _int(term["expr"], values)
        if count % parallel.ep:
            raise Fallback
        count //= parallel.ep
    else:
        if parallel.tp > 1 and term["refuse_tp"]:
            raise Fallback
        split = _int(term["split"], _padded(values, parallel.tp, padded))
        count = split // parallel.tp + _int(term["kept"], values)
    if not term["grad"]:
        return Held(frozen=count)
    if lora is not None:
        adapters = lora.rank * _int(term["sides"], values) if lora.adapted(term) else 0
        return Held(frozen=count, adapters=adapters)
    matrix = term["matrix"]
    factored = 0
    if optimizer == "adafactor":
        if parallel.tp > 1:
            raise Fallback
        if matrix:
            if term["routed"] or term["sides"] is None:
                raise Fallback
            factored = _int(term["sides"], values)
        else:
            factored = count
    hidden = matrix and not term["embedding"]
    return Held(matrices=count if hidden else 0, others=0 if hidden else count, factored=factored)


def _state_lines(held: Held, compute: str, optimizer: str, parallel: Parallel) -> list[Line]:
    """``training._state_lines``: the model-state lines, ZeRO's shards applied, formulas from the common snapshot."""
    data = common()
    if data is None:
        raise Fallback
    env = {
        "P": held.parameters,
        "P_t": held.trainable,
        "P_m": held.matrices + held.adapters,
        "P_o": held.others,
        "F": held.factored,
    }
    frozen = f" ({held.frozen:,} of them without gradient)" if held.frozen else ""
    frozen = " (the base frozen)" if held.adapters else frozen
    lines = []
    for name, source, stage, note, plain, sharded in data["states"][f"{compute}|{optimizer}"]:
        size = _int(source, env)
        text, formula = plain
        if name == "weights":
            note += frozen
        if parallel.zero > 0 and stage <= parallel.zero:
            size = -(-size // parallel.dp)
            text, formula = sharded
            note += f", sharded over N_dp = {parallel.dp} ranks (ZeRO-{parallel.zero})"
        lines.append(Line(name, formula, size, note, text))
    return lines


def _no_grad_paths(terms: list[dict[str, Any]]) -> tuple[str, ...]:
    paths = []
    for term in terms:
        if term["grad"]:
            continue
        group = [t for t in terms if t["group"] == term["group"]]
        whole = len(group) > 1 and not any(t["grad"] for t in group)
        path = f"{term['group']}/*" if whole else term["path"]
        if path not in paths:
            paths.append(path)
    return tuple(paths)


# --- activations --------------------------------------------------------------------------------------------------


class _Refused(Exception):
    """Activations refused by the record's table for this config (``activations.NotDerived``)."""

    def __init__(self, why: str) -> None:
        self.why = why


def _keys(model: Counted) -> dict[str, Any]:
    """The config's [keys] and layer counts by name, as ``read_config`` reads them (``Model.keys``)."""
    family = model.architecture
    try:
        reader = _Reader(_nested_keys(model.config, model.source, family), model.source, family)
        namespace, _, _ = read_values(reader)
    except Exception:
        raise Fallback from None
    return {key: namespace[key] for key in (*family.keys, *(symbol.name for symbol, _, _ in family.layers))}


def _kinds(layer_names: list[list[str]], values: dict[str, int], model: Counted, keys: dict[str, Any]) -> list:
    """``layer_kinds.kinds`` for counts that partition the layers: (counted names, [(name, count, where)]); Fallback
    when they overlap (the sympy path tells the kinds layer by layer)."""
    counted = sorted({n for names in layer_names for n in names if n != "N"})
    total = values["N"]
    if any(c not in values for c in counted):
        raise Fallback
    rest = total - sum(values[c] for c in counted)
    if rest < 0:
        raise Fallback
    if counted:
        sets = _memberships(model, values, keys, counted)
        if sets is not None and any(len(s) > 1 for s in sets):
            raise Fallback
    found = [(c, values[c], {"N": 1, **{o: int(o == c) for o in counted}}) for c in counted if values[c] > 0]
    if rest > 0:
        found.append(("", rest, {"N": 1, **{c: 0 for c in counted}}))
    return counted, found


def _memberships(model: Counted, values: dict[str, int], keys: dict[str, Any], names: list[str]) -> list | None:
    family = model.architecture
    tests = [(symbol.name, test) for symbol, test, _ in family.layers if symbol.name in set(names)]
    if len(tests) < len(set(names)):
        return None
    if values["N"] > 100_000:
        raise Fallback
    scope: dict[str, Any] = dict(keys)
    for spec in family.symbols:
        scope[spec.symbol.name] = scope[spec.key] = values.get(spec.symbol.name)
    sets = []
    try:
        for i in range(values["N"]):
            scope["i"] = i
            sets.append(frozenset(name for name, test in tests if test(scope)))
    except Exception:
        return None
    return sets


HEAVIEST_BOUND = " (its layers taken of the heaviest kind: an upper bound)"
MAX_LAYERS = 10_000  # formulas.reading.MAX_LAYERS: layers walked one by one


def stages(layers: int, pp: int) -> list[range]:
    """``layer_kinds.stages``: contiguous runs of layers, as even as possible, the first ``layers mod pp`` longer."""
    if layers > MAX_LAYERS:
        raise Fallback
    size, extra = divmod(layers, pp)
    runs, start = [], 0
    for stage in range(pp):
        end = start + size + (stage < extra)
        runs.append(range(start, end))
        start = end
    return runs


def _layer_sequence(model: Counted, values: dict[str, int], keys: dict[str, Any], found: list) -> list[str] | None:
    """``layer_kinds.layer_sequence`` for kinds that partition the layers (:func:`_kinds`' names)."""
    names = {name for name, _, _ in found}
    tested = {symbol.name for symbol, _, _ in model.architecture.layers} & names
    rest = [name for name, _, _ in found if name not in tested]
    if len(rest) > 1:
        return None
    sets = _memberships(model, values, keys, sorted(tested))
    if sets is None or any(len(s) > 1 or (not s and not rest) for s in sets):
        return None
    sequence = [next(iter(s)) if s else rest[0] for s in sets]
    counts = {name: count for name, count, _ in found}
    return sequence if all(sequence.count(name) == count for name, count in counts.items()) else None


def _uses(source: str, names: Any) -> bool:
    """Whether a compiled expression reads one of ``names``."""
    return any(f"v[{name!r}]" in source for name in names)


def _times(layers: str, where: dict[str, int]) -> int:
    value = evaluate.whole(_number(layers, where))
    if value is None or value < 0:
        raise Fallback
    return value


def _elements(entry: dict[str, Any], env: dict[str, int], tp: int, sp: bool) -> int | Fraction:
    """``Saved.split(tp, sp)`` at ``env``: the elements of one entry one tensor-parallel rank keeps."""
    if tp == 1 or entry["per"] != "token" or entry["dtype"] in ("int64", "int32", "bool"):
        return _number(entry["expr"], env)
    if entry["tp"]:
        whole = _number(entry["expr"], env)
        return Fraction(whole, tp) if entry["tp"] == "split" or sp else whole
    pairs, split, rest = (_number(entry[part], env) for part in ("pairs", "split", "rest"))
    return (Fraction(pairs, tp) if sp else pairs) + Fraction(split, tp) + (Fraction(rest, tp) if sp else rest)


def _holds(text: str, namespace: dict[str, Any]) -> bool:
    """A condition of the table at the config; Fallback where it cannot be answered (the sympy path words it)."""
    try:
        return bool(_condition(text, "a training snapshot")(namespace))
    except Exception:
        raise Fallback from None


def _activations(
    model: Counted,
    table: dict[str, Any],
    keys: dict[str, Any],
    compute: str,
    batch: int,
    seq: int,
    options: Options,
    shared: dict[str, Any] | None = None,
) -> tuple[Activations, dict[str, Any]]:
    """``activations.activations`` with pp = 1; _Refused for the table's refusals, Fallback for what the snapshot
    does not hold. ``shared``: the common snapshot (read from the package without it)."""
    family = model.architecture
    values = dict(model.values)
    for name in (symbol.name for symbol, _, _ in family.layers):
        if name in keys and name not in values:
            values[name] = keys[name]
    namespace = {**keys, **{spec.symbol.name: None for spec in family.symbols}, **values}
    namespace.update({"S": seq, "compute_dtype": compute, "B": batch})
    prefix = f"not derived for {family.title} ({family.name}): "
    for text, reason in table["refuse"]:
        if _holds(text, namespace):
            raise _Refused(prefix + reason)
    data = shared or common()
    if data is None:
        raise Fallback
    assumptions = data["activations"]["assumptions"]
    cores = set(table["cores"])
    if options.attention == "sdpa" and "eager" in cores and "flash" not in cores:
        options = Options("eager", options.recompute, options.tp, options.pp, options.sequence_parallel)
        assumptions = f"{assumptions}; {data['activations']['eager_for_sdpa']}"
    core = "inputs" if options.recompute == "selective" else KEPT_AS.get(options.attention, options.attention)
    saved = table["saved"]
    if any(e["core"] for e in saved) and not any(e["core"] == core for e in saved):
        raise Fallback  # an option the table was not checked for: refused by name by the sympy path
    chosen = []
    for i, e in enumerate(saved):
        if e["core"] and e["core"] != core:
            continue
        if (e["cast"] and compute == "fp32") or (e["fp32_only"] and compute != "fp32"):
            continue
        if e["when"] is not None and not _holds(e["when"], namespace):
            continue
        chosen.append(i)
    layer_entries = [i for i in chosen if saved[i]["layer_symbols"]]
    model_entries = [i for i in chosen if not saved[i]["layer_symbols"]]
    if (options.recompute == "full" or options.pp > 1) and any(saved[i]["summed"] for i in model_entries):
        raise Fallback
    env = {**values, "B": batch, "S": seq}
    width = WIDTH[compute]

    def size(e: dict[str, Any], times: int, tp: int, sp: bool) -> int | Fraction:
        scale = 1
        for name in SCALE[e["per"]]:
            scale *= env[name]
        return times * ENTRY_WIDTH.get(e["dtype"], width) * scale * _elements(e, env, tp, sp)

    counted, kinds = _kinds([saved[i]["layer_symbols"] for i in layer_entries], values, model, keys)

    def layer(where: dict[str, int], tp: int = 1, sp: bool = False) -> list[tuple[str, int]]:
        parts = []
        for i in layer_entries:
            times = _times(saved[i]["layers"], where)
            if times:
                parts.append((saved[i]["path"], _ceil(size(saved[i], times, tp, sp))))
        return parts

    full = [layer(where) for _, _, where in kinds]
    model_level = []
    for i in model_entries:
        times = _int(saved[i]["layers"], {})
        model_level.append((saved[i]["path"], _whole(size(saved[i], times, 1, False))))
    heaviest = -1
    if options.recompute == "full":
        kept = _whole(width * batch * seq * _number(table["layer_input"], values))
        sums = [sum(b for _, b in parts) for parts in full]
        heaviest = max(range(len(sums)), key=sums.__getitem__)
    key = "|".join(
        [
            str(width),
            options.recompute,
            ",".join(map(str, chosen)),
            ";".join(f"{name or '-'}={','.join(counted)}" for name, _, _ in kinds),
            str(heaviest),
        ]
    )
    shown = table["formulas"].get(key)
    if shown is None:
        raise Fallback
    per_kind = []
    for (_, count, _), parts, kind_shown in zip(kinds, full, shown["kinds"], strict=True):
        if options.recompute == "full":
            formula, text = shown["checkpoint"]
            per_kind.append(
                LayerKind(kind_shown["name"], count, formula, text, kept, (("layer input", formula, kept),))
            )
        else:
            components = tuple((p, f, b) for (p, b), f in zip(parts, kind_shown["components"], strict=True))
            per_kind.append(
                LayerKind(
                    kind_shown["name"],
                    count,
                    kind_shown["formula"],
                    kind_shown["text"],
                    sum(b for _, b in parts),
                    components,
                )
            )
    levels = [(p, f, t, b) for (p, b), (f, t) in zip(model_level, shown["model_level"], strict=True)]
    if options.recompute == "full":
        heavy = sum(b for _, b in full[heaviest])
        levels.append(("recomputed layer", *shown["heaviest"], heavy))
    total = sum(k.count * k.bytes for k in per_kind) + sum(level[3] for level in levels)

    tp, sp = options.tp, options.sequence_parallel
    split = [sum(b for _, b in layer(where, tp, sp)) for _, _, where in kinds]
    if options.recompute == "full":
        checkpoint_gpu = _ceil(Fraction(width * batch * seq * _number(table["layer_input"], values), tp if sp else 1))
        layers_gpu = [(count, checkpoint_gpu) for (_, count, _) in kinds]
        working_gpu = max(split)
    else:
        layers_gpu = [(count, b) for (_, count, _), b in zip(kinds, split, strict=True)]
        working_gpu = 0
    level_gpu = 0
    for i in model_entries:
        times = _int(saved[i]["layers"], {})
        level_gpu += _ceil(size(saved[i], times, tp, sp))
    pp = options.pp
    candidates: list[int] = []
    if pp == 1:
        per_gpu = sum(c * b for c, b in layers_gpu) + working_gpu + level_gpu
        note = "one GPU holds every layer"
        if tp > 1:
            note += f", tensor parallel over {tp}" + (" with sequence parallelism" if sp else "")
    else:
        first_level = last_level = 0
        for i in model_entries:
            part = _ceil(size(saved[i], _int(saved[i]["layers"], {}), tp, sp))
            if saved[i]["path"].split("/", 1)[0] == "embedding":
                first_level += part
            else:
                last_level += part
        per_layer_gpu = {name: b for (name, _, _), (_, b) in zip(kinds, layers_gpu, strict=True)}
        runs = stages(values["N"], pp)
        sequence = _layer_sequence(model, values, keys, kinds)
        bound = ""
        if sequence is None:
            sequence = [max(per_layer_gpu, key=per_layer_gpu.get)] * values["N"]
            bound = HEAVIEST_BOUND
        for number, run in enumerate(runs):
            stage = (pp - number) * sum(per_layer_gpu[sequence[i]] for i in run) + working_gpu
            stage += (first_level if number == 0 else 0) + (last_level if number == pp - 1 else 0)
            candidates.append(stage)
        best = max(range(pp), key=candidates.__getitem__)
        per_gpu = candidates[best]
        note = (
            f"pipeline 1F1B: stage s of pp keeps pp - s + 1 micro-batches of its layers in flight; counted: stage "
            f"{best + 1} of {pp}{bound}"
        )
    found = Activations(
        dtype=compute,
        options=options,
        formula=shown["total"][0],
        text=shown["total"][1],
        latex=shown["total"][2],
        bytes=total,
        per_layer_kind=tuple(per_kind),
        model_level=tuple(levels),
        per_gpu_bytes=per_gpu,
        per_gpu_note=note,
        per_gpu_layer_bytes=tuple(b for _, b in layers_gpu),
        assumptions=assumptions,
        per_stage_bytes=tuple(candidates),
    )
    return found, shown


def _stages(
    model: Counted,
    terms: list[dict[str, Any]],
    values: dict[str, int],
    keys: dict[str, Any],
    compute: str,
    optimizer: str,
    parallel: Parallel,
    activations: Activations | None,
    notes: list[str],
    lora: Lora | None = None,
) -> tuple[Held, Activations | None]:
    """``training.training``'s pipeline branch: the parameters of the stage whose model states and activations
    together are the largest, its activations, and the pipeline note (added to ``notes``)."""
    family = model.architecture
    padded = common()["padded"]
    layered = frozenset({"N", *family.layer_symbols})
    summed = [spec.symbol.name for spec in family.symbols if spec.summed]
    level = [t for t in terms if not _uses(t["layers"], layered)]
    if any(_uses(t["expr"], summed) for t in level):
        raise Fallback  # refused by name by the sympy path
    layer_terms = [t for t in terms if _uses(t["layers"], layered)]
    layer_names = [[n for n in sorted(layered) if _uses(t["layers"], [n])] for t in layer_terms]
    _, kinds = _kinds(layer_names, values, model, keys)
    by_name: dict[str, Held] = {}
    weights = {}
    for name, _, where in kinds:
        held = Held()
        for term in layer_terms:
            times = _times(term["layers"], where)
            if times:
                held = held + _held(term, values, parallel, optimizer, padded, lora).times(times)
        by_name[name] = held
        weights[name] = sum(line.bytes for line in _state_lines(held, compute, optimizer, Parallel()))
    runs = stages(values["N"], parallel.pp)
    sequence = _layer_sequence(model, values, keys, kinds)
    bound = ""
    if sequence is None:
        sequence = [max(weights, key=weights.__getitem__)] * values["N"]
        bound = HEAVIEST_BOUND

    def model_level(predicate: Any) -> Held:
        held = Held()
        for term in level:
            if predicate(term):
                times = _int(term["layers"], {})
                held = held + _held(term, values, parallel, optimizer, padded, lora).times(times)
        return held

    first = model_level(lambda t: t["group"] == "embedding")
    last = model_level(lambda t: t["group"] != "embedding")
    paths = {term[0] for term in model.plan.terms}
    if any(c.path == "head/lm_head" for c in family.choices) and "head/lm_head" not in paths:  # a tied head
        last = last + model_level(lambda t: t["group"] == "embedding" and _uses(t["expr"], ["V"]))
    candidates = []
    for number, run in enumerate(runs):
        stage = first if number == 0 else Held()
        for i in run:
            stage = stage + by_name[sequence[i]]
        candidates.append(stage + last if number == parallel.pp - 1 else stage)
    kept = activations.per_stage_bytes if activations is not None and activations.per_stage_bytes else ()
    totals = [
        sum(line.bytes for line in _state_lines(held, compute, optimizer, parallel)) + (kept[j] if kept else 0)
        for j, held in enumerate(candidates)
    ]
    best = max(range(len(candidates)), key=totals.__getitem__)
    if kept:
        note = f"{activations.per_gpu_note.split('; counted:')[0]}; counted: stage {best + 1} of {parallel.pp}{bound}"
        activations = replace(activations, per_gpu_bytes=kept[best], per_gpu_note=note)
    sizes = sorted({len(run) for run in runs}, reverse=True)
    notes.append(
        f"pipeline: stages of {' or '.join(map(str, sizes))} layers; the GPU counted is stage "
        f"{best + 1} of {parallel.pp}, the largest in model states"
        + (" and activations together" if kept else "")
        + bound
    )
    return candidates[best], activations


def estimate(
    model: Counted,
    dtype_name: str = "bf16",
    seq: int = 4096,
    batch: int = 1,
    optimizer: str = "adamw",
    parallel: Parallel | None = None,
    attention: str = "sdpa",
    recompute: str = "none",
    lora: Lora | None = None,
) -> Training:
    """``formulas.training.estimate(model.full(), ...)`` from the snapshots; Fallback for what they do not take (the
    module's docstring)."""
    parallel = parallel or Parallel()
    if not isinstance(model, Counted) or model.composite is not None:
        raise Fallback
    data = snapshot(model.architecture.name)
    shared = common()
    if data is None or shared is None or optimizer not in shared["optimizers"]:
        raise Fallback
    if attention not in ("sdpa", "eager", "flash") or recompute not in ("none", "selective", "full"):
        raise Fallback
    compute = compute_dtype(dtype_name)
    selection = data["selections"].get(model.selection)
    if selection is None:
        raise Fallback
    padded = shared["padded"]
    _check_parallel(model, selection, parallel, padded)
    values = dict(model.values)
    terms = selection["terms"]
    lora_total = lora_formula = None
    if lora is not None:
        lora_total, lora_formula = _lora(selection, values, parallel, lora)
    keys = _keys(model)
    activations, refused = None, ""
    table = data["activations"]
    if table is None:
        refused = (
            f"not derived for {model.architecture.title} ({model.architecture.name}): "
            + shared["activations"]["no_table"]
        )
    else:
        options = Options(attention, recompute, parallel.tp, parallel.pp, parallel.sequence_parallel)
        try:
            activations, _ = _activations(model, table, keys, compute, batch, seq, options)
        except _Refused as exc:
            refused = exc.why
    notes: list[str] = []
    if parallel.pp == 1:
        held = Held()
        for term in terms:
            times = _int(term["layers"], values)
            held = held + _held(term, values, parallel, optimizer, padded, lora).times(times)
    else:
        args = (model, terms, values, keys, compute, optimizer, parallel, activations, notes, lora)
        held, activations = _stages(*args)
    no_grad = [t for t in terms if not t["grad"]]
    no_grad_total = sum(_int(t["total"], values) for t in no_grad)
    if no_grad:
        notes.append(
            f"no gradient: {', '.join(_no_grad_paths(terms))} ({no_grad_total:,} parameters of the model) get none in "
            "a training step of this model (its record marks them grad = false): held as weights only, without "
            "gradients, master copy or optimizer states"
        )
    return Training(
        dtype=compute,
        optimizer=optimizer,
        parallel=parallel,
        parameters=model.total,
        held=held,
        lines=tuple(_state_lines(held, compute, optimizer, parallel)),
        activations=activations,
        activations_refused=refused,
        notes=tuple(notes),
        no_grad_paths=_no_grad_paths(terms),
        no_grad_parameters=no_grad_total,
        lora=lora,
        lora_parameters=lora_total,
        lora_formula=lora_formula,
    )


def _lora(
    selection: dict[str, Any], values: dict[str, int], parallel: Parallel, lora: Lora
) -> tuple[int, tuple[str, str]]:
    """The adapters' trainable parameters and formula (``training.lora_formula``); Fallback where the sympy path
    refuses (tp > 1, a routed or gradient-free term adapted, no matrix adapted) or the snapshot lacks the formula."""
    if parallel.tp > 1:
        raise Fallback
    terms = selection["terms"]
    adapted = [term for term in terms if lora.adapted(term)]
    formula = selection.get("lora", {}).get(lora_key(terms, lora))
    if formula is None or any(t["routed"] or not t["grad"] or t["sides"] is None for t in adapted):
        raise Fallback
    total = sum(_number(t["layers"], values) * lora.rank * _number(t["sides"], values) for t in adapted)
    return int(total), (formula[0], formula[1])


# --- output ---------------------------------------------------------------------------------------------------------


def parallel_data(p: Any) -> dict[str, Any]:
    """The ``parallel`` object of ``memory --training --json``: the layout ``p`` (a Parallel, either path's)."""
    return {
        "tp": p.tp,
        "pp": p.pp,
        "dp": p.dp,
        "ep": p.ep,
        "zero": p.zero,
        "sequence_parallel": p.sequence_parallel,
        "gpus": p.gpus,
    }


def training_data(model: Counted, t: Training, seq: int, batch: int) -> dict[str, Any]:
    """``renderers.training.training_data`` (``memory --training --json``) of an estimate of this module."""
    shared = common()
    notes = shared["notes"]
    assumptions = {
        "optimizer": shared["optimizers"][t.optimizer],
        "model_states": notes["states"],
        "zero": notes["zero"],
        "parallel": notes["parallel"],
        "activations": shared["activations"]["assumptions"],
    }
    latex = None if t.activations is None else t.activations.latex
    lora = None
    if t.lora is not None:
        lora = {
            "rank": t.lora.rank,
            "targets": list(t.lora.targets),
            "trainable_parameters": t.lora_parameters,
            "formula": t.lora_formula[1],
        }
    return training_json(model, t, seq, batch, latex, lora, assumptions)


def training_json(
    model: Any, t: Any, seq: int, batch: int, latex: str | None, lora: dict | None, assumptions: dict[str, str]
) -> dict[str, Any]:
    """``memory --training --json`` of an estimate of either path (this module's, or formulas.training's with sympy
    formulas, written as their strings): ``latex`` the activations' formula in LaTeX, ``lora`` the adapters' object."""
    names = {line.name: line.bytes for line in t.lines}
    a = t.activations
    activations = None
    if a is not None:
        activations = {
            "activations_bytes": a.bytes,
            "per_gpu_bytes": a.per_gpu_bytes,
            "attention": a.options.attention,
            "recompute": a.options.recompute,
            "formula": str(a.formula),
            "latex": latex,
            "per_layer_kind": [
                {
                    "kind": k.name,
                    "layers": k.count,
                    "formula": str(k.formula),
                    "bytes_per_layer": k.bytes,
                    "components": [{"path": c[0], "formula": str(c[1]), "bytes": c[2]} for c in k.components],
                }
                for k in a.per_layer_kind
            ],
            "model_level": [{"path": m[0], "formula": str(m[1]), "bytes": m[-1]} for m in a.model_level],
            "per_gpu_note": a.per_gpu_note,
            "assumptions": a.assumptions,
        }
    return {
        "model": model.name,
        "family": model.architecture.name,
        "mode": "training",
        "dtype": t.dtype,
        "kv_dtype": None,
        "optimizer": t.optimizer,
        "seq": seq,
        "batch": batch,
        "parallel": parallel_data(t.parallel),
        "parameters": t.parameters,
        "parameters_per_gpu": t.held.parameters,
        "trainable_parameters_per_gpu": t.held.trainable,
        "no_gradient": None
        if not t.no_grad_paths
        else {"parameters": t.no_grad_parameters, "paths": list(t.no_grad_paths)},
        "lora": lora,
        "model_states_bytes_per_gpu": t.model_states_bytes,
        "activations_bytes_per_gpu": t.activations_bytes,
        "total_bytes_per_gpu": t.total_bytes,
        "activations_bytes": None if a is None else a.bytes,
        "activations_formula": None if a is None else str(a.formula),
        "per_layer_kind": None if activations is None else activations["per_layer_kind"],
        "weights_bytes": names.get("weights", 0),
        "gradients_bytes": names.get("gradients", 0),
        "optimizer_bytes": sum(size for name, size in names.items() if name not in ("weights", "gradients")),
        "kv_cache_bytes": 0,
        "total_bytes": t.total_bytes,
        "total_gib": t.total_bytes / 2**30,
        "unit": "bytes; GiB = 2^30 bytes",
        "formulas": {line.name: str(line.formula) for line in t.lines},
        "lines": [{"name": line.name, "bytes": line.bytes, "gib": line.gib, "note": line.note} for line in t.lines],
        "activations": activations,
        "activations_refused": t.activations_refused or None,
        "notes": list(t.notes),
        "assumptions": assumptions,
    }


def render_training(model: Counted, t: Training, seq: int, batch: int, width: int | None = None) -> str:
    """``renderers.training.render_training`` (``training_memory.txt.j2``) of an estimate of this module, written out
    in Python (a test holds the two texts equal)."""
    from .plain import fit_table, grouped, wrap

    shared = common()
    notes_of = shared["notes"]
    p = t.parallel
    a = t.activations
    title = (
        f"{model.name} ({model.architecture.title}; {model.source}): training memory per GPU, {t.optimizer}, "
        f"{t.dtype}, B = {batch}, S = {grouped(seq)}"
    )
    out = [wrap(title, width, "  ")]
    line = f"parallel: tp {p.tp}, pp {p.pp}, ep {p.ep}, dp {p.dp} ({grouped(p.gpus)} GPU{'s' if p.gpus > 1 else ''})"
    out.append(line + f", ZeRO-{p.zero}" + (", sequence parallel" if p.sequence_parallel else ""))

    def row(name: str, text: str, size: int, note: str) -> list[str]:
        return [name, text, grouped(size), f"{size / 10**9:.2f}", f"{size / 2**30:.2f}", note]

    rows = [["", "formula (bytes)", "bytes", "GB", "GiB", "note"]]
    rows += [row(ln.name.replace("_", " "), ln.text, ln.bytes, ln.note) for ln in t.lines]
    rows.append(row("model states", "", t.model_states_bytes, ""))
    if a is not None:
        rows.append(["", "", "", "", "", ""])
        for kind in a.per_layer_kind:
            rows.append(row(f"per layer ({kind.name} = {kind.count})", kind.text, kind.bytes, "one layer"))
        for path, _, text, size in a.model_level:
            rows.append(row(path, text, size, "once per model"))
        how = f"{a.options.attention} attention, recompute {a.options.recompute}"
        rows.append(row("activations (model)", "", a.bytes, how))
        rows.append(row("activations per GPU", "", a.per_gpu_bytes, a.per_gpu_note))
    rows.append(["", "", "", "", "", ""])
    rows.append(row("total per GPU", "", t.total_bytes, ""))
    notes = [f"{r[0]}: {r[5]}" for r in rows[1:] if r[5] and r[5] not in ("one layer", "once per model")]
    out += [fit_table([r[:5] for r in rows], "llrrr", width, 1), ""]
    out += [wrap(note, width, "    ") for note in notes]
    if a is not None and (a.per_layer_kind or a.model_level):
        text = "activations: a 'per layer' row is one layer of that kind; the rows after them are held once per model"
        out.append(wrap(text, width, "    "))
    out.append("")
    parameters = (
        f"P = {grouped(t.held.parameters)} parameters on this GPU ({grouped(t.parameters)} in the model); P_t = "
        f"{grouped(t.held.trainable)} trainable"
    )
    out.append(wrap(parameters, width, "  "))
    if t.lora is not None:
        lora = (
            f"LoRA r = {t.lora.rank} on {', '.join(t.lora.targets)}: {grouped(t.lora_parameters)} trainable "
            f"parameters = {t.lora_formula[0]}"
        )
        out.append(wrap(lora, width, "    "))
    if a is not None:
        out.append(wrap(f"activations (model, bytes) = {a.text}", width, "    "))
    else:
        out.append(wrap(f"activations: {t.activations_refused}", width, "  "))
    out += [wrap(note, width, "  ") for note in t.notes]
    optimizer = shared["optimizers"][t.optimizer]
    out.append(
        wrap(
            f"GB = 10^9 bytes, GiB = 2^30 bytes. Optimizer: {optimizer}. Model states: {notes_of['states']}. "
            f"{notes_of['zero']}.",
            width,
            "  ",
        )
    )
    if p.gpus > 1:
        out.append(wrap(f"Parallelism: {notes_of['parallel']}.", width, "  "))
    if a is not None:
        out.append(wrap(f"Activations: {a.assumptions}.", width, "  "))
    return "\n".join(out) + "\n"
