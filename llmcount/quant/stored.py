"""The bytes a model's weights take as a quantised checkpoint stores them, per component, from its config alone.

Each term of the family record is one weight (or bias, or norm) per layer. A weight matrix gets its (out, in) shape
from the order the record writes its factors in (:func:`llmcount.renderers.tree.linear_shape`: input width first);
an MLP written as one term, ``c·d·W`` (``3·n·d·d_moe`` for n routed experts, ``3·d·n_s·d_moe`` for shared ones), is
c - 1 matrices from d to W and one from W back to d, per expert. A weight whose shape the record does not tell is
refused by name when the scheme would convert it.

Which layer a term is on decides its module name, the one transformers' model gives it
(``transformer.h.3.attn.c_attn``, from the record's ``[printed]`` tree: :mod:`llmcount.quant.modules`; else the
``[tree]`` names, else ``model.layers.3.self_attn.q_proj``), and so whether the config's skip lists
(``modules_to_not_convert``, compressed-tensors' ``ignore``, MLX's per-module entries) leave it alone; layers are
walked one by one for that. Its class decides whether the method converts it at all (Conv1D, FalconLinear:
:data:`llmcount.quant.schemes.CLASSES`). Skip-list entries that name no module of the model are listed in
:attr:`Plan.unmatched`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from sympy import expand

from ..errors import LlmcountError
from ..formulas.config import Model
from ..formulas.derivation import evaluate_int
from ..formulas.flops import is_norm
from ..formulas.symbols import N, d, n
from .config import Quant
from .modules import ModuleNames
from .schemes import Scheme, Stored, converts_class, dim

CODE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8, "I16": 16, "U16": 16, "F16": 16,
    "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "I64": 64, "U64": 64, "F64": 64,
}  # fmt: skip
"""Bits per element of a safetensors dtype code."""

DTYPE_CODES = {"fp32": "F32", "bf16": "BF16", "fp16": "F16", "fp8": "F8_E4M3", "fp8_e5m2": "F8_E5M2", "int8": "I8"}
"""llmcount's short dtype names -> safetensors codes."""

REST_DEFAULT = {"mxfp4": ("BF16", "the config names no dtype; gpt-oss's released checkpoints store every "
                          "unquantised tensor in BF16 (their safetensors headers)")}  # fmt: skip
"""The checkpoint dtype of a scheme's unquantised tensors when the config names none."""


@dataclass(frozen=True)
class Matrix:
    """``count`` weight matrices of shape (out_f, in_f), all under one component path and module name."""

    path: str
    module: str  # the module name of one of them, for the skip lists (layer index filled in)
    count: int
    out_f: int
    in_f: int
    kind: str  # linear | expert | embedding | head | router


@dataclass(frozen=True)
class TensorBytes:
    """Tensors a scheme stores for some matrices (or a kept tensor): its suffix, one shape, dtype, how many."""

    suffix: str
    shape: tuple[int, ...]
    dtype: str
    count: int
    weight: bool

    @property
    def bytes(self) -> int:
        elements = 1
        for x in self.shape:
            elements *= x
        return self.count * (elements * CODE_BITS[self.dtype] // 8)


@dataclass(frozen=True)
class Group:
    """One component path as stored: its logical parameters, its bytes and how it is stored."""

    path: str
    parameters: int
    tensors: tuple[TensorBytes, ...]
    stored_as: str  # the scheme's label, or the dtype code of a tensor kept as it is

    @property
    def bytes(self) -> int:
        return sum(t.bytes for t in self.tensors)

    @property
    def weight_bytes(self) -> int:
        return sum(t.bytes for t in self.tensors if t.weight)

    @property
    def storage_bytes(self) -> int:
        return sum(t.bytes for t in self.tensors if not t.weight)


@dataclass(frozen=True)
class Plan:
    """A model's weights as one quantised checkpoint stores them."""

    quant: Quant
    dtype: str  # the checkpoint dtype of what the scheme leaves alone (a safetensors code)
    groups: tuple[Group, ...]
    notes: tuple[str, ...] = ()
    unmatched: tuple[str, ...] = ()  # skip-list entries that name no module of the model

    @property
    def bytes(self) -> int:
        return sum(g.bytes for g in self.groups)

    @property
    def parameters(self) -> int:
        return sum(g.parameters for g in self.groups)

    def by_kind(self) -> dict[str, tuple[int, int]]:
        """(parameters, bytes) of the quantised groups and of the ones kept in the checkpoint dtype."""
        out: dict[str, tuple[int, int]] = {}
        for g in self.groups:
            for t in g.tensors:
                key = t.dtype if t.suffix == "" else self.quant.scheme.name
                params, size = out.get(key, (0, 0))
                out[key] = (params, size + t.bytes)
            key = self.quant.scheme.name if g.stored_as != self.dtype else self.dtype
            params, size = out.get(key, (0, 0))
            out[key] = (params + g.parameters, size)
        return out


def rest_dtype(quant: Quant, config_dtype: str | None, given: str | None, where: str) -> tuple[str, str]:
    """The dtype code of the unquantised tensors and a note: ``given`` (--dtype), else the config's, else the
    scheme's known default, else refused."""
    from ..dtypes import canonical

    name = given or config_dtype
    if name is not None:
        short = canonical(name)
        if short not in DTYPE_CODES:
            raise LlmcountError(f"{where}: {short} is not a dtype a checkpoint stores its unquantised tensors in")
        return DTYPE_CODES[short], ""
    if quant.scheme.method in REST_DEFAULT:
        return REST_DEFAULT[quant.scheme.method]
    raise LlmcountError(f"{where}: the config names no dtype for the tensors {quant.label} leaves alone; pass --dtype")


EVERY_LINEAR = {
    "fp8": "transformers 5.24.0's FP8 quantiser (quantizer_finegrained_fp8.py)",
    "fbgemm_fp8": "transformers 5.24.0's FBGEMM FP8 quantiser (quantizer_fbgemm_fp8.py)",
    "bitsandbytes": "transformers 5.24.0's bitsandbytes quantiser (integrations/bitsandbytes.py)",
    "awq": "transformers 5.24.0's AWQ quantiser (quantizer_awq.py, replace_with_awq_linear)",
    "compressed-tensors": "compressed-tensors (targets Linear)",
}
"""Methods whose code converts every nn.Linear of the model outside the config's skip lists, a composite's vision
tower's included (each quantiser's ``get_modules_to_not_convert`` adds only the LM head and tied modules); GPTQ
(optimum converts the decoder blocks only), MXFP4 (experts only) and MLX (per-module entries) are not among them."""


MAX_LAYERS = 1_000  # layers sized one by one, each tensor by name (real models have fewer than 300)


def plan(model: Model, quant: Quant, dtype_code: str, note: str = "") -> Plan:
    """Every term of ``model`` as ``quant`` stores it (see the module docstring).

    Which module each weight of each layer is, whether the scheme converts it and with which sizes, and the skip-list
    entries that name no module do not depend on the model's sizes: they are worked out once per :func:`_structure`
    of the model under ``quant`` (:class:`_Skeleton`), the layers whose modules are decided alike taken together, and
    a model of the same structure (another vocabulary or width) only sizes its tensors."""
    layers_n = model.values.get(N, 0)
    if layers_n > MAX_LAYERS:  # bounded before the walk over every layer's tensors
        raise LlmcountError(
            f"{model.name}: num_hidden_layers is {layers_n:,}; {quant.label} is sized tensor by tensor, for up to "
            f"{MAX_LAYERS:,} layers"
        )
    key = _structure(model, quant)
    skeleton = _SKELETONS.get(key)
    if skeleton is None:
        skeleton = _Skeleton(model, quant)
    quant = skeleton.quant
    values = model.values
    table, refused = skeleton.table, skeleton.refused
    if refused and quant.scheme.converts != "experts":
        raise LlmcountError(
            f"{model.name}: {quant.label} is not sized for the {model.architecture.name} record: {refused}"
        )
    groups: list[Group] = []
    sized = skeleton.sized
    for at, (term, component) in enumerate(zip(model.terms, model.counts.components, strict=True)):
        kept = TensorBytes("", (component.count,), dtype_code, 1, True)
        how = skeleton.how[at]
        if how == "kept":
            groups.append(Group(term.path, component.count, (kept,), dtype_code))
            continue
        if how == "tied":
            raise LlmcountError(
                f"{model.name}: {quant.label} is not sized for the {model.architecture.name} record's {term.path} "
                f"once the config lists the modules to leave alone: {skeleton.tied_why}"
            )
        per_layer = evaluate_int(term.expr, values, term.path)
        written = table.get(term.path)
        shapes = _written(written, term, values) if written is not None else _matrices(term, values, per_layer)
        if shapes is None:
            if _is_vector(term):
                groups.append(Group(term.path, component.count, (kept,), dtype_code))
                continue
            raise LlmcountError(
                f"{model.name}: term {term.path} ({term.text or term.expr}): the record does not tell this weight's "
                f"(out, in) shape, which {quant.label} needs"
            )
        rest = per_layer - sum(count * out_f * in_f for _, _, count, out_f, in_f in shapes)
        if rest < 0:
            raise LlmcountError(f"{model.name}: term {term.path}: quant/shapes.toml lists more than the term holds")
        tensors: list[TensorBytes] = []
        entries, layers = skeleton.entries(at, term, shapes)
        if rest:  # a bias written in the same term as its weight: kept as it is
            tensors.append(TensorBytes("", (rest * layers,), dtype_code, 1, True))
        for entry in entries:
            _, _, count, out_f, in_f = shapes[entry.shape]
            if entry.decision is None:  # the model's last parameter: its module left alone
                tensors.append(TensorBytes("", (out_f * in_f,), dtype_code, 1, True))
                continue
            count = count * entry.layers - entry.less
            if not count:
                continue
            skipped, sizes, cls = entry.decision
            if skipped or not _fits(quant, out_f, in_f) or not converts_class(quant.scheme.method, cls):
                tensors.append(TensorBytes("", (count * out_f * in_f,), dtype_code, 1, True))
                continue
            made_key = (sizes, dtype_code, out_f, in_f)
            made = sized.get(made_key)
            if made is None:  # the same sizes and shape store the same tensors (every expert of every layer)
                where = f"{model.name}: {term.path}"
                made = sized[made_key] = _stored(quant, dict(sizes), dtype_code, 1, out_f, in_f, where)
            tensors.extend(TensorBytes(t.suffix, t.shape, t.dtype, count, t.weight) for t in made)
        groups.append(Group(term.path, component.count, _merge(tensors), _label(tensors, quant, dtype_code)))
    if key is not None:
        _SKELETONS[key] = skeleton  # kept once the walk passed (a refused model is refused again, worded alike)
        if len(_SKELETONS) > MAX_SKELETONS:
            del _SKELETONS[next(iter(_SKELETONS))]
    notes = [note] if note else []
    towers = skeleton.towers
    if towers:
        notes.append(
            f"the parts beside the language model ({', '.join(map(repr, towers))} in the config's skip list) are "
            "left unquantised, in the checkpoint dtype"
        )
    every_linear = EVERY_LINEAR.get(quant.scheme.method)
    parts = getattr(model, "parts", ())
    if parts and every_linear and quant.stated and not towers:
        notes.append(
            f"the config's skip list names none of the parts beside the language model, and {every_linear} converts "
            "every linear layer outside it: the checkpoint may hold the parts' linear layers quantised too, which "
            "llmcount does not size (they are counted unquantised, in the checkpoint dtype)"
        )
    if quant.scheme.name == "bnb-nf4-double":
        notes.append(
            "not counted: the digits of nested_offset (a float, the mean of the absmax values, typically 17 to 20 "
            "characters) in each weight's quant_state JSON"
        )
    unplaced = sorted(set(quant.overrides) - skeleton.matched)
    if unplaced:
        raise LlmcountError(
            f"{model.name}: quantization.{unplaced[0]}: names a module llmcount does not place among the record's "
            "weights"
        )
    return Plan(quant, dtype_code, tuple(groups), tuple(notes), skeleton.unmatched(model))


MAX_SKELETONS = 256  # structures kept (a batch of many families); the oldest is dropped first
_SKELETONS: dict[tuple, _Skeleton] = {}


def _structure(model: Model, quant: Quant) -> tuple | None:
    """What decides the module names and the scheme's decisions of ``model``'s weights under ``quant``, its sizes
    aside: the record (by identity, held by the skeleton kept), the composite, the terms (path, formula, layers),
    the values of the layer counts, the layers of each kind, the tied and last-parameter entries of
    ``shapes.toml`` the config's keys select, and the scheme as the config gives it. None when a part of it cannot
    be keyed (then nothing is kept)."""
    try:
        layered = set()
        terms = []
        for t in model.terms:
            terms.append((t.path, t.expr, t.layers))
            if t.layers != 1:
                layered |= t.layers.free_symbols
        counts = (model.values.get(N), tuple(sorted((s.name, model.values.get(s)) for s in layered)))
        indices = tuple(sorted((s.name, tuple(v)) for s, v in model.layer_indices.items()))
        composite = getattr(model, "composite", None)
        key = (
            id(model.architecture),
            id(composite),
            tuple(terms),
            counts,
            indices,
            tied_paths(model),
            _last_parameter(model),
            repr(quant),
        )
        hash(key)
    except TypeError:
        return None
    return key


class _Entry(NamedTuple):
    """Layers of one term whose module for one of its matrices (``shape``: its index among the term's matrices) is
    decided alike: ``decision`` (skipped, sizes, class), or None for the model's last parameter (one matrix kept);
    ``layers`` of them, ``less`` matrices fewer (the last parameter's, kept apart)."""

    shape: int
    decision: tuple[bool, tuple, str] | None
    layers: int
    less: int


class _Skeleton:
    """What :func:`plan` works out of a model's structure under a scheme (:func:`_structure`), sizes aside: per term
    how it is held (kept as it is, refused as tied, or planned: ``how``), and for a planned term, its matrices'
    modules on each layer decided and taken together (:meth:`entries`); the modules placed and the overrides
    matched, for the skip-list entries that name no module (:meth:`unmatched`)."""

    def __init__(self, model: Model, quant: Quant) -> None:
        from ..renderers.tree import Names
        from .composite import for_language_model

        self.architecture = model.architecture  # held: the structure's key names it by identity
        self.quant, self.back, self.towers = for_language_model(quant, model)
        quant = self.quant
        self.names = Names.of(model)
        self.real = ModuleNames.of(model)
        self.table, self.refused = written_shapes(model.architecture.name)
        fp32_kept = _fp32_kept(model) if quant.scheme.method in KEEPS_FP32_MODULES else frozenset()
        tied, self.tied_why = tied_paths(model)
        self.last = _last_parameter(model) if quant.own_skips else ""
        self.how: list[str] = []
        for term in model.terms:
            listed = isinstance(self.table.get(term.path), list)
            if not _convertible(term, quant.scheme, listed) or term.path in fp32_kept:  # _keep_in_fp32_modules too
                self.how.append("kept")
            elif term.path in tied:
                self.how.append("kept" if quant.own_skips else "tied")
            elif isinstance(self.table.get(term.path), str):  # not an nn.Linear: no scheme converts it
                self.how.append("kept")
            else:
                self.how.append("planned")
        self.has_head = any(t.path == "head/lm_head" for t in model.terms)
        self.matched: set[str] = set()
        self.placed: set[str] = set()
        self.sized: dict[tuple, list[TensorBytes]] = {}  # (sizes, dtype, out, in) -> the tensors stored
        self._entries: dict[tuple, tuple[tuple[_Entry, ...], int]] = {}
        self._unmatched: tuple[str, ...] | None = None
        self._model = model  # the layers of each term, walked once per term

    def entries(self, at: int, term, shapes: list[Shape]) -> tuple[tuple[_Entry, ...], int]:
        """The term's matrices on its layers, decided, in the order the layers and matrices are walked (a kind of
        decision first met earlier comes first); and the term's layer count."""
        last = shapes[-1][:2]
        alone = term.path == self.last and shapes[-1][2] == 1  # the last parameter's module holds one matrix
        key = (at, tuple((kind, module) for kind, module, *_ in shapes), alone)
        found = self._entries.get(key)
        if found is not None:
            return found
        quant, real, names = self.quant, self.real, self.names
        layers = list(_layers(self._model, term))
        order: dict[tuple, list[int]] = {}  # (matrix, decision) -> [layers, less], first met first
        out: list[tuple] = []
        for layer in layers:
            for i, (kind, module, *_) in enumerate(shapes):
                less = 0
                if term.path == self.last and layer == layers[-1] and (kind, module) == last:
                    out.append((i, None))  # the last parameter's matrix, kept
                    if alone:
                        continue
                    less = 1
                full, cls = real.name(term.path, module, layer) or (_module_name(names, term.path, module, layer), "")
                self.placed.update(_candidates(full, kind))
                skipped, sizes = _decide(quant, full, kind, self.matched)
                decision = (skipped, tuple(sizes.items()), cls)
                slot = order.get((i, decision))
                if slot is None:
                    slot = order[(i, decision)] = [0, 0]
                    out.append((i, decision))
                slot[0] += 1
                slot[1] += less
        entries = tuple(
            _Entry(i, None, 1, 0) if decision is None else _Entry(i, decision, *order[(i, decision)])
            for i, decision in out
        )
        found = self._entries[key] = (entries, len(layers))
        return found

    def unmatched(self, model: Model) -> tuple[str, ...]:
        """The skip-list entries that name no module of the model, as the config writes them."""
        if self._unmatched is None:
            every = self.real.every or frozenset(self.placed)
            if self.has_head:  # "lm_head" names the head whatever its module (_candidates)
                every = every | {"lm_head"}
            back = self.back
            self._unmatched = tuple(dict.fromkeys(back.get(entry, entry) for entry in self.quant.unmatched(every)))
        return self._unmatched


@lru_cache(maxsize=1)
def _shapes_file() -> dict[str, Any]:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    from importlib import resources

    return tomllib.loads(resources.files(__package__).joinpath("shapes.toml").read_text("utf-8"))


def written_shapes(record: str) -> tuple[Mapping[str, Any], str]:
    """The weights of ``record`` that ``shapes.toml`` writes out (path -> matrices, or why it is no Linear), and
    the reason the record is refused under a converting scheme ("" when it is not)."""
    data = _shapes_file()
    return data.get(record, {}), data.get("refused", {}).get(record, "")


KEEPS_FP32_MODULES = ("fp8", "fbgemm_fp8", "mxfp4", "awq", "bitsandbytes")
"""The methods whose transformers quantiser adds the model's ``_keep_in_fp32_modules`` to the modules it leaves
alone, whatever the config lists (``get_modules_to_not_convert`` in quantizers/base.py, called by
quantizer_finegrained_fp8.py, quantizer_fbgemm_fp8.py, quantizer_mxfp4.py, quantizer_awq.py, quantizer_bnb_4bit.py and
quantizer_bnb_8bit.py, transformers 5.24.0)."""


def _fp32_kept(model: Model) -> frozenset[str]:
    """The terms of ``model`` that its transformers class lists in ``_keep_in_fp32_modules``, as ``shapes.toml``'s
    ``[keep.<record>]`` names them."""
    entry = _shapes_file().get("keep", {}).get(model.architecture.name)
    return frozenset(entry["paths"]) if entry else frozenset()


def tied_paths(model: Model) -> tuple[frozenset[str], str]:
    """The terms of ``model`` that transformers ties across layers (``_tied_weights_keys``) as ``shapes.toml``'s
    ``[tied.<record>]`` lists them (when the record key it names is true), and why. transformers' quantisers leave
    tied modules unconverted when the config gives no skip list (``get_keys_to_not_convert``, quantizers/base.py
    5.24.0: tied keys, the last parameter's module and the output embedding)."""
    entry = _shapes_file().get("tied", {}).get(model.architecture.name)
    if not entry or not model.keys.get(entry["when"]):
        return frozenset(), ""
    return frozenset(entry["paths"]), entry["why"]


def _last_parameter(model: Model) -> str:
    """The term whose last matrix is the model's last parameter (``named_parameters()`` order) when that is no
    LM head, as ``shapes.toml``'s ``[last.<record>]`` names it (when the record key it names is true): transformers'
    quantisers leave that module alone too when the config gives no skip list (``get_keys_to_not_convert``)."""
    entry = _shapes_file().get("last", {}).get(model.architecture.name)
    if not entry or not model.keys.get(entry["when"]):
        return ""
    return entry["path"]


def _written(entries: list, term, values: Mapping) -> list[Shape]:
    """The matrices ``shapes.toml`` writes for a term: (kind, module, count, out, in) per entry."""
    from ..formulas.expressions import formula

    module = term.path.partition("/")[2]
    kind = "head" if term.path == "head/lm_head" else "linear"
    out = []
    for entry in entries:
        suffix, out_text, in_text, *count = entry
        where = f"quant/shapes.toml {term.path}"
        dims = [evaluate_int(formula(x, where), values, where) for x in (out_text, in_text, *count)]
        name = f"{module}.{suffix}" if suffix else module
        out.append((kind, name, dims[2] if count else 1, dims[0], dims[1]))
    return out


def _label(tensors: list[TensorBytes], quant: Quant, dtype_code: str) -> str:
    kept = any(t.suffix == "" for t in tensors)
    packed = any(t.suffix for t in tensors)
    if kept and packed:
        return f"{quant.scheme.name} (part in {dtype_code})"
    return quant.scheme.name if packed else dtype_code


def _merge(tensors: list[TensorBytes]) -> tuple[TensorBytes, ...]:
    """Equal tensors summed into one entry with their count, first appearance first."""
    out: dict[tuple, TensorBytes] = {}
    for t in tensors:
        key = (t.suffix, t.shape, t.dtype, t.weight) if t.suffix else ("", t.dtype)
        if key in out:
            old = out[key]
            if t.suffix:
                out[key] = TensorBytes(t.suffix, t.shape, t.dtype, old.count + t.count, t.weight)
            else:
                out[key] = TensorBytes("", (old.shape[0] + t.shape[0],), t.dtype, 1, True)
        else:
            out[key] = t
    return tuple(out.values())


def _convertible(term, scheme: Scheme, listed: bool = False) -> bool:
    """Whether the scheme's code would look at this term at all (a bias never; MXFP4 only the experts; what
    ``shapes.toml`` lists as nn.Linear modules always, in a norm or among the embeddings too; else a norm or an
    embedding never)."""
    path = term.path
    if path.endswith(".bias"):
        return False
    if scheme.converts == "experts":
        return term.routed
    if listed:  # an nn.Linear, wherever the record files it (a gate MLP inside a norm)
        return True
    if is_norm(path) or (not term.matmul and not term.embedding):
        return False
    if any(path == k or (k.endswith("/") and path.startswith(k)) for k in scheme.keeps):
        return False
    if term.group == "embedding":
        return scheme.converts == "quantizable" and term.path == "embedding/embed_tokens"
    return True


def _is_vector(term) -> bool:
    try:
        poly = expand(term.expr).as_poly()
    except Exception:
        return False
    return poly is not None and poly.total_degree() <= 1


Shape = tuple[str, str, int, int, int]  # kind, module, count per layer, out, in


def _matrices(term, values: Mapping, per_layer: int) -> list[Shape] | None:
    """The matrices of one layer's term: (kind, module name, count, out, in), or None when not known."""
    module = term.path.partition("/")[2]
    if term.path == "embedding/embed_tokens":
        return [("embedding", module, 1, per_layer // values[d], values[d])]
    split = _mlp(term, values)
    if split is not None:
        return split
    shape = _linear_shape(term)
    if shape is None:
        return None
    a, b = (evaluate_int(x, values, term.path) for x in shape)
    kind = "head" if term.path == "head/lm_head" else "router" if module == "router" else "linear"
    return [(kind, module, 1, b, a)]


_FORMS: dict[tuple, Any] = {}  # a term's (path, formula, text, routed) -> what _mlp_form / linear_shape make of it
MAX_FORMS = 4096


def _form(kind: str, term, make) -> Any:
    """``make(term)``, kept by what it reads of the term (its formula's form does not change with the sizes)."""
    key = (kind, term.path, term.expr, term.text, term.routed)
    try:
        return _FORMS[key]
    except KeyError:
        pass
    except TypeError:  # a part that cannot be keyed: made every time
        return make(term)
    made = make(term)
    if len(_FORMS) >= MAX_FORMS:
        _FORMS.clear()
    _FORMS[key] = made
    return made


def _linear_shape(term) -> tuple | None:
    from ..renderers.tree import linear_shape

    return _form("linear", term, linear_shape)


def _mlp(term, values: Mapping) -> list[Shape] | None:
    """An MLP written as one term ``c·[n·]d·W`` (c = 2 or 3): its matrices per layer. Only in an MLP's group
    (``mlp/``, ``moe/``) or a module named ``mlp``: elsewhere ``2·d·W`` is one fused projection (Mamba's in_proj,
    a query and its gate), written out in shapes.toml."""
    form = _form("mlp", term, _mlp_form)
    if form is None:
        return None
    coefficient, width = form
    experts = values[n] if term.routed else 1
    if width.free_symbols - set(values):
        return None
    w = evaluate_int(width, values, term.path)
    module = term.path.partition("/")[2]
    kind = "expert" if term.routed else "linear"
    ins = [("gate_proj", w, values[d]), ("up_proj", w, values[d])][3 - coefficient :]
    return [(kind, f"{module}.{name}", experts, o, i) for name, o, i in [*ins, ("down_proj", values[d], w)]]


def _mlp_form(term) -> tuple[int, Any] | None:
    """The coefficient c and the width W of an MLP term ``c·[n·]d·W`` (:func:`_mlp`), or None when it is none."""
    group, _, leaf = term.path.partition("/")
    if group not in ("mlp", "moe") and not leaf.endswith("mlp"):
        return None
    expr = expand(term.expr)
    coefficient, rest = expr.as_coeff_Mul()
    if coefficient not in (2, 3) or not rest.is_Mul or d not in rest.free_symbols:
        return None
    width = rest / d
    if term.routed:
        if n not in width.free_symbols:
            return None
        width = width / n
    if d in width.free_symbols:
        return None
    return int(coefficient), width


def _layers(model: Model, term) -> Iterator[int | None]:
    """The layer indices a term is on (None for a term outside the layers)."""
    layers = term.layers
    if layers == 1:
        yield None
        return
    total = model.values[N]
    if layers == N:
        yield from range(total)
        return
    kinds = model.layer_indices
    for symbol, indices in kinds.items():
        if layers == symbol:
            yield from indices
            return
        if expand(layers - (N - symbol)) == 0:
            yield from (i for i in range(total) if i not in set(indices))
            return
    count = evaluate_int(layers, model.values, term.path)
    yield from range(count)  # a layer count the record does not tie to indices: the first ones, for the names


def _module_name(names, path: str, module: str, layer: int | None) -> str:
    """The module name a checkpoint gives this weight on ``layer``: ``model.layers.3.self_attn.q_proj``."""
    group, _, leaf = path.partition("/")
    if layer is None:
        return "lm_head" if group == "head" else f"{names.model}.{leaf}"
    container = names.containers.get(group, (group,))[0]
    head, _, tail = module.partition(".")
    head = names.renamed.get(head, head)
    return f"{names.model}.{names.layers}.{layer}.{container}.{head}" + (f".{tail}" if tail else "")


def _candidates(full: str, kind: str) -> list[str]:
    """Other names the same module goes by in checkpoints (a router as ``gate`` or ``router``; MLX's switch_mlp)."""
    out = [full]
    base = full.rpartition(".")[0]
    if kind == "router":
        out += [f"{base}.gate", f"{base}.router"]
    if kind == "expert":
        out += [base, full.replace(".experts.", ".switch_mlp.")]
    if kind == "head":
        out += ["lm_head"]
    return out


def _decide(quant: Quant, full: str, kind: str, matched: set[str]) -> tuple[bool, dict[str, int]]:
    """Whether the module is left alone, and the sizes it is quantised with (MLX's per-module overrides)."""
    names = _candidates(full, kind)
    sizes = dict(quant.scheme.sizes or {})
    sizes.update(quant.sizes)
    for name in names:
        if name in quant.overrides:
            matched.add(name)
            entry = quant.overrides[name]
            if entry is False:
                return True, sizes
            sizes.update({"bits": entry.get("bits", sizes["bits"]), "g": entry.get("group_size", sizes["g"])})
    if kind == "head" and quant.own_skips:
        return True, sizes
    return any(quant.skipped(name) for name in names), sizes


def _fits(quant: Quant, out_f: int, in_f: int) -> bool:
    """MLX quantises only layers whose input width is a multiple of the model's group size, and leaves the rest
    (mlx_lm 0.32.2 utils.py quantize_model, wrapped_predicate)."""
    if quant.scheme.converts == "quantizable":
        return in_f % quant.sizes["g"] == 0
    return True


def _stored(quant: Quant, sizes: Mapping[str, int], dtype_code: str, count: int, out_f: int, in_f: int, where: str):
    env = dict(sizes)
    env.update(out_f=out_f, in_f=in_f)
    if quant.scheme.name == "gptq":
        g = env["g"] if env["g"] > 0 else in_f
        env["groups"] = -(-in_f // g)
    elif quant.scheme.name == "ct-pack":
        env["groups"] = -(-in_f // env["g"]) if quant.strategy == "group" else 1
    elif quant.scheme.name == "ct-fp8":
        if quant.strategy == "block":
            env["scale_rows"], env["scale_cols"] = -(-out_f // env["b0"]), -(-in_f // env["b1"])
        elif quant.strategy == "channel":
            env["scale_rows"], env["scale_cols"] = out_f, 1
        else:
            env["scale_rows"], env["scale_cols"] = 1, 1
    if quant.scheme.method == "bitsandbytes":
        env["state_json"] = len(_bnb_state(quant, dtype_code, out_f, in_f))
    for first, second in quant.scheme.divides:
        if not second.isdigit() and second not in quant.sizes:  # a size the config does not set (channel: no group)
            continue
        a, b = env[first], int(second) if second.isdigit() else env[second]
        if a % b:
            raise LlmcountError(
                f"{where}: {quant.label}: a weight of shape ({out_f}, {in_f}) has {first.removesuffix('_f')} = {a}, "
                f"not a multiple of {b}, which the packer needs"
            )
    if "bits" in env and quant.scheme.name == "mlx" and (in_f * env["bits"]) % 32:
        raise LlmcountError(f"{where}: {quant.label}: in = {in_f} at {env['bits']} bits is no whole number of uint32")
    out = []
    for t in quant.scheme.tensors:
        if t.when and t.when not in quant.flags:
            continue
        shape = tuple(dim(x, env) for x in t.shape)
        out.append(TensorBytes(_suffix(t, quant), shape, _code(t, quant, dtype_code), count, t.weight))
    return out


TORCH_NAMES = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}


def _bnb_state(quant: Quant, dtype_code: str, out_f: int, in_f: int) -> str:
    """The JSON bitsandbytes packs into ``weight.quant_state.bitsandbytes__<type>`` (0.50.2 QuantState.as_dict with
    packed=True: json.dumps of the non-tensor entries), without the digits of ``nested_offset``."""
    import json

    kind = "nf4" if "nf4" in quant.flags else "fp4"
    state: dict = {"quant_type": kind, "blocksize": 64, "dtype": TORCH_NAMES.get(dtype_code, dtype_code)}
    state["shape"] = [out_f, in_f]
    if quant.scheme.name == "bnb-nf4-double":
        state.update(nested_blocksize=256, nested_dtype="float32", nested_offset=0)
        return json.dumps(state)[: -len("0}")] + "}"
    return json.dumps(state)


def _suffix(t: Stored, quant: Quant) -> str:
    if "{type}" in t.suffix:
        return t.suffix.replace("{type}", "nf4" if "nf4" in quant.flags else "fp4")
    return t.suffix


def _code(t: Stored, quant: Quant, dtype_code: str) -> str:
    if t.dtype == "$dtype":
        return dtype_code
    if t.dtype == "$scale":
        return quant.scale_dtype or dtype_code
    return t.dtype
