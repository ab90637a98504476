"""The multi-token-prediction (MTP, "next-n") module a released checkpoint stores beside the model.

DeepSeek-V3, GLM-4.5, Qwen3-Next, Qwen3.5 and others publish one or more extra decoder layers that predict a further
token (used by serving engines for speculative decoding). transformers does not build them: its classes ignore those
tensors on load. A record's optional ``[mtp]`` table describes the module from the released checkpoints' tensor
names and shapes (see families/README.md): how many MTP layers the config declares (``count``), the config keys that
make the record's own decoder layer the MTP layer (``decoder``), where the checkpoint stores them (``layers``,
``first``) and the module's own weights (``[[mtp.terms]]``, each with the ``tensor`` that holds it).

The module is counted by reading the config again with those keys (one decoder layer) and adding its own weights,
so the MTP layer is exactly the record's layer of that kind: parameters = N_mtp · (one decoder layer) + the terms.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sympy import Expr, Symbol

from ..counting import MtpTotals
from ..errors import LlmcountError
from .blocks import Term
from .symbols import N, N_mtp

if TYPE_CHECKING:
    from .config import Model
    from .records import Choice, SymbolSpec


@dataclass(frozen=True)
class Mtp:
    """A record's ``[mtp]`` table, parsed and checked."""

    count: SymbolSpec  # N_mtp: the config key giving how many MTP decoder layers, with the config class's default
    decoder: Mapping[str, Any]  # config keys that make the record's decoder layer the MTP layer (one layer)
    layers: str  # tensor-name prefix of MTP decoder layer i ("model.layers.{i}", "mtp.layers.{i}")
    first: Expr  # i of the first MTP layer in ``layers``: N (after the model's layers) or 0
    terms: tuple[Choice, ...]  # the module's own weights, over the record's symbols and N_mtp
    tensors: Mapping[str, str]  # a term's path -> the module holding it ("model.layers.{i}.eh_proj", "mtp.fc")
    source: str  # the released checkpoints the layout was read from
    note: str = ""
    names: Mapping[str, str] = field(default_factory=dict)  # a decoder path -> its tensor's name in the MTP layer
    # when the MTP layer is part of the record's decoder layer (LongCat-Flash's: one of its two attention and MLP
    # sublayers, no MoE): a decoder path prefix -> the share of those terms it holds; terms no prefix names are left out
    share: Mapping[str, Any] = field(default_factory=dict)

    def share_of(self, path: str) -> Any:
        """The share of the decoder term ``path`` the MTP layer holds (1 without ``share``), None when it has none."""
        from sympy import Integer

        if not self.share:
            return Integer(1)
        found = [prefix for prefix in self.share if path.startswith(prefix)]
        return self.share[max(found, key=len)] if found else None


_FIELDS = {"count", "decoder", "layers", "first", "source", "note", "terms", "names", "share"}


def parse(data: Any, where: str, symbols: set[Symbol]) -> Mtp:
    """The ``[mtp]`` table; RecordError naming the field otherwise. ``symbols``: those the record reads."""
    from .expressions import formula
    from .records import RecordError, _choice, _symbol_spec, _table, _text

    table = _table(data, where)
    unknown = set(table) - _FIELDS
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    count = _symbol_spec("N_mtp", table.get("count"), f"{where}.count")
    decoder = _table(table.get("decoder", {}), f"{where}.decoder")
    if 1 not in (decoder.get("num_hidden_layers"), decoder.get("num_layers")):  # num_layers: LongCat-Flash's N
        raise RecordError(f"{where}.decoder: num_hidden_layers = 1 (the keys of one MTP decoder layer)")
    layers = _text(table, "layers", where)
    if "{i}" not in layers:
        raise RecordError(f"{where}.layers: a tensor-name prefix with {{i}}, the layer's index (model.layers.{{i}})")
    first = formula(_text(table, "first", where, "0"), f"{where}.first")
    terms, tensors = [], {}
    known = symbols | {N_mtp}
    for i, entry in enumerate(table.get("terms", [])):
        at = f"{where} terms[{i}]"
        entry = dict(_table(entry, at))
        tensor = entry.pop("tensor", None)
        if not isinstance(tensor, str) or not tensor:
            raise RecordError(f"{at}: 'tensor', the module of the checkpoint that holds it, is required")
        choice = _choice(entry, at)
        if not choice.term.path.startswith("mtp/"):
            raise RecordError(f"{at}: an MTP term's path starts with mtp/")
        missing = (choice.term.expr.free_symbols | choice.term.layers.free_symbols) - known
        if missing:
            names = ", ".join(sorted(s.name for s in missing))
            raise RecordError(f"{at}: uses {names}, which the record does not read")
        if ("{i}" in tensor) != (N_mtp in choice.term.layers.free_symbols):
            raise RecordError(f"{at}: a tensor of each MTP layer has {{i}} in its name and layers over N_mtp")
        terms.append(choice)
        tensors[choice.term.path] = tensor
    if not terms:
        raise RecordError(f"{where}: an MTP module needs [[mtp.terms]] (its own weights besides the decoder layer)")
    source, note = _text(table, "source", where), _text(table, "note", where, "")
    names = _table(table.get("names", {}), f"{where}.names")
    if not all(isinstance(v, str) and v for v in names.values()):
        raise RecordError(f"{where}.names: each decoder path takes the tensor name the MTP layer gives it")
    share = {}
    for prefix, text in _table(table.get("share", {}), f"{where}.share").items():
        value = formula(text, f"{where}.share.{prefix}") if isinstance(text, str) else None
        if value is None or not value.is_Rational or not 0 < value <= 1:
            raise RecordError(f'{where}.share.{prefix}: a fraction of the decoder layer\'s terms, "1/2" (0 < it ≤ 1)')
        share[prefix] = value
    return Mtp(count, decoder, layers, first, tuple(terms), tensors, source, note, names, share)


@dataclass(frozen=True)
class MtpComponent:
    path: str  # mtp/<own weight> or mtp/<the decoder layer's path>
    formula: str  # over the glossary's symbols and N_mtp
    count: int
    activated: int
    embedding: bool = False


@dataclass(frozen=True)
class MtpModule(MtpTotals):
    """The MTP module of one config: N_mtp decoder layers and the module's own weights, counted exactly."""

    layers: int  # N_mtp
    key: str  # the config key it was read from
    components: tuple[MtpComponent, ...]
    decoder: Model  # one MTP decoder layer, read with the record's ``decoder`` keys
    spec: Mtp = field(repr=False)

    @property
    def note(self) -> str:
        return self.spec.note

    @property
    def source(self) -> str:
        return self.spec.source


def _count(model: Model, spec: Mtp) -> int:
    from .config import _Reader
    from .layer_kinds import MAX_LAYERS

    reader = _Reader(model.mtp_config, model.source, model.architecture)
    value = reader.symbol(spec.count, {})
    if value is not None and value > MAX_LAYERS:
        raise LlmcountError(
            f"{model.source}: key '{spec.count.key}' is {value:,}; MTP layers are counted up to {MAX_LAYERS:,}"
        )
    return 0 if value is None else value


def module(model: Model) -> MtpModule | None:
    """The MTP module of ``model``'s config; None when its record has no [mtp] table or the config declares 0 layers."""
    from .config import read_config
    from .derivation import evaluate_int

    spec = model.architecture.mtp
    if spec is None or model.mtp_config is None:
        return None
    layers = _count(model, spec)
    if not layers:
        return None
    # lists of one entry per layer (layer_types, mlp_layer_types) describe the model's N layers, not the MTP layer:
    # left out, so that the record's defaults and ``decoder`` say what the MTP layer is
    per_layer = {k for k, v in model.mtp_config.items() if isinstance(v, list) and len(v) == model.values.get(N, 0) > 1}
    config = {k: v for k, v in model.mtp_config.items() if k not in per_layer} | dict(spec.decoder)
    family = replace(model.architecture, mtp=None)
    decoder = read_config(config, f"{model.source} (MTP layer)", model.name, family)
    components = []
    values = {**model.values, N_mtp: layers}
    for term, component in zip(decoder.terms, decoder.counts.components, strict=True):
        part = spec.share_of(term.path)
        if term.layers == 1 or part is None:  # the embedding, the final norm and the head: the model's, not the layer's
            continue
        per_layer = term.layers.subs(N, 1) if spec.share else 1  # the record's layer holds it that many times
        shown = str(N_mtp * part * per_layer * term.expr)
        count, activated = layers * component.count * part, layers * component.activated * part
        if not (count.is_Integer and activated.is_Integer):
            raise LlmcountError(f"{model.source}: the MTP layer's share {part} of {term.path} is not a whole count")
        components.append(MtpComponent(f"mtp/{term.path}", shown, int(count), int(activated), term.embedding))
    namespace = {**decoder.keys, **{s.name: v for s, v in values.items()}}
    for choice in spec.terms:
        if choice.when is not None and not choice.when(namespace):
            continue
        term: Term = choice.term
        try:
            count = evaluate_int(term.total, values, term.path)
            activated = evaluate_int(term.activated, values, term.path)
        except ValueError as exc:
            raise LlmcountError(f"{model.source}: the MTP module's {term.path} cannot be counted: {exc}") from None
        components.append(MtpComponent(term.path, str(term.total), count, activated, term.embedding))
    return MtpModule(layers, spec.count.key, tuple(components), decoder, spec)


DECLARING_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers", "mtp_num_layers")
"""Config keys by which a config class declares multi-token-prediction layers (a record's [checked] keys hold those
of its class): a record without an [mtp] table whose class has one refuses --mtp saying so, and one that reads it (a
model class that builds its MTP layers: MiMo's remote code) says they are counted already."""


def require(model: Model) -> MtpModule:
    """The MTP module, or LlmcountError naming why there is none (``--mtp`` on a model without one)."""
    found = module(model)
    if found is not None:
        return found
    spec = model.architecture.mtp
    if spec is None:
        record = model.architecture
        built = [key for key in DECLARING_KEYS if key in record.read_keys()]
        if built:  # the model class builds its MTP layers: they are terms of the record already
            raise LlmcountError(
                f"{model.source}: --mtp: the multi-token-prediction layers of {record.title} ({record.name}),"
                f" {built[0]} of them, are built by its model class and counted in its total already"
            )
        declared = [key for key in DECLARING_KEYS if key in (record.checked_keys or ())]
        if declared:  # the config class has MTP layers, whose checkpoint layout no [mtp] table describes
            raise LlmcountError(
                f"{model.source}: --mtp: {record.title} ({record.name}) declares multi-token-prediction layers"
                f" ({', '.join(declared)} of its config class), but its record has no [mtp] table: the layout of"
                " those layers in its checkpoints is not described yet"
            )
        raise LlmcountError(
            f"{model.source}: --mtp: {record.title} ({record.name}) has no multi-token-prediction layers in its"
            " checkpoints"
        )
    raise LlmcountError(f"{model.source}: --mtp: the config declares no MTP layers ({spec.count.key} = 0)")


def with_memory(
    found: MtpModule, result: Any, seq: int, batch: int, overhead_percent: int = 0, max_positions: int | None = None
) -> Any:
    """An inference :class:`~llmcount.formulas.memory.Memory` with the MTP module added, as a serving engine that
    loads it for speculative decoding holds it: its weights in the weights' dtype (``mtp_weights``) and the keys and
    values (or state) of its N_mtp decoder layers for the same B × S tokens (``mtp_kv_cache``), each its own line."""
    from sympy import Add, Integer

    from . import memory as mem

    dtype_name, kv_dtype = result.dtype, result.kv_dtype
    weights = mem.nbytes(found.total, dtype_name)
    note = f"the checkpoint's MTP module, {found.total:,} parameters ({found.key} = {found.layers}) in {dtype_name}"
    lines = [mem.Line("mtp_weights", Integer(found.total) * mem.BITS[dtype_name] / 8, weights, note)]
    layer = mem.inference(
        found.decoder.derivation, found.decoder.values, dtype_name, kv_dtype, seq, batch, None, "fp16", 0, max_positions
    )
    cache = [line for line in layer.lines if line.name in ("kv_cache", "state") and line.in_total]
    part = found.spec.share_of("attention/") or 0  # the MTP layer's share of the decoder layer's attention
    cache = [replace(line, formula=line.formula * part, bytes=int(line.bytes * part)) for line in cache] if part else []
    if cache:
        formula = Add(*(line.formula for line in cache)).subs(mem.P, found.total).subs(N, N_mtp)  # N = 1 layer
        note = (
            f"keys and values of the MTP module's {found.layers} decoder layer(s), as one more layer of the model "
            f"for the same B × S tokens ({cache[0].note})"
        )
        lines.append(mem.Line("mtp_kv_cache", formula, found.layers * sum(line.bytes for line in cache), note))
    kept = [line for line in result.lines if line.name != "overhead"]
    overhead = [line for line in result.lines if line.name == "overhead"]
    if overhead and overhead_percent:  # the stated overhead is a percent of every line above it: the MTP lines too
        counted = [line for line in (*kept, *lines) if line.in_total]
        base = sum(line.bytes for line in counted)
        formula = Add(*(line.formula for line in counted)) * overhead_percent / 100
        overhead = [replace(overhead[0], formula=formula, bytes=-(-base * overhead_percent // 100))]
    return replace(result, lines=(*kept, *lines, *overhead))


@dataclass(frozen=True)
class TensorNames:
    """Where a checkpoint stores the MTP module: the modules of its own weights, and each MTP decoder layer's prefix."""

    own: tuple[tuple[str, str], ...]  # (module name, term path), longest name first
    layers: tuple[str, ...]  # "model.layers.61", ...

    def match(self, name: str) -> tuple[str | None, str | None]:
        """``(path, None)`` for a tensor of the module's own weights (``<path>.bias`` for a bias), ``(None, rest)``
        for a tensor of an MTP decoder layer (``rest``: its name inside the layer, ``self_attn.q_a_proj.weight``),
        ``(None, None)`` for any other tensor."""
        for module_name, path in self.own:
            if name.startswith(module_name + ".") and "." not in name[len(module_name) + 1 :]:
                return (f"{path}.bias" if name.endswith(".bias") else path), None
        for prefix in self.layers:
            if name.startswith(prefix + "."):
                return None, name[len(prefix) + 1 :]
        return None, None


def tensor_names(found: MtpModule, values: Mapping[Symbol, int]) -> TensorNames:
    """The tensor names of ``found`` in a checkpoint of the config whose symbols are ``values``."""
    from .derivation import evaluate_int

    first = evaluate_int(found.spec.first, dict(values), "first MTP layer")
    indices = range(first, first + found.layers)
    own = []
    for path, module_name in found.spec.tensors.items():
        own += [(module_name.format(i=i), path) for i in indices] if "{i}" in module_name else [(module_name, path)]
    own.sort(key=lambda pair: -len(pair[0]))
    return TensorNames(tuple(own), tuple(found.spec.layers.format(i=i) for i in indices))
