"""A GGUF file as a model: its metadata mapped to the transformers config of its architecture (``gguf_archs.toml``,
transcribed from llama.cpp's converter), and its tensors (``blk.3.attn_q.weight``) mapped to the record's component
paths through the converter's own name map (``gguf.TensorNameMap``: every Hugging Face name a GGUF tensor is written
from), so that ``count``, ``verify`` and ``memory`` read a ``.gguf`` file as they read a config and a checkpoint.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import LlmcountError
from .files import short
from .gguf_file import GgufFile, GgufTensor, LongArray, read_gguf

ARCHS_FILE = Path(__file__).with_name("gguf_archs.toml")
_BLOCK = re.compile(r"^blk\.(\d+)\.(.+)$")


@lru_cache(maxsize=1)
def archs() -> dict[str, Any]:
    """The architecture table (see gguf_archs.toml)."""
    try:
        import tomllib
    except ImportError:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    with open(ARCHS_FILE, "rb") as f:
        return tomllib.load(f)


def supported() -> list[str]:
    """The GGUF architectures read (the tables of gguf_archs.toml that name a model_type)."""
    return sorted(k for k, v in archs().items() if isinstance(v, dict) and "model_type" in v)


def _arch(g: GgufFile) -> tuple[str, dict[str, Any]]:
    arch = g.architecture
    if arch is None:
        raise LlmcountError(f"{g.path}: no general.architecture string in the GGUF metadata")
    table = archs()
    if arch not in supported():
        raise LlmcountError(
            f"{g.path}: GGUF architecture {short(arch)} has no mapping to a transformers config here; "
            f"read are: {', '.join(supported())}"
        )
    return arch, table[arch]


def _value(g: GgufFile, arch: str, key: str) -> Any:
    full = key if key.startswith(("general.", "tokenizer.", "split.")) else f"{arch}.{key}"
    return g.metadata.get(full)


def _number(g: GgufFile, arch: str, key: str, value: Any) -> Any:
    if isinstance(value, LongArray):
        raise LlmcountError(f"{g.path}: {arch}.{key} is an array of {value.length:,} values; a number is read here")
    return value


def _mapped(g: GgufFile, arch: str, rule: Any) -> tuple[bool, Any]:
    """(found, value) of one rule of gguf_archs.toml."""
    if isinstance(rule, str):
        value = _value(g, arch, rule)
        return value is not None, _number(g, arch, rule, value)
    keys = rule.get("keys", [])
    if rule.get("zero") == "null":  # the converter writes 0 for a null (Phi-3's sliding_window)
        found, value = _mapped(g, arch, {k: v for k, v in rule.items() if k != "zero"})
        return found, None if value == 0 else value
    for key in keys:
        value = _value(g, arch, key)
        if value is not None:
            value = _number(g, arch, key, value)
            minus = rule.get("minus")
            if minus is not None:
                other = _value(g, arch, minus)
                if not isinstance(other, int) or not isinstance(value, int):
                    raise LlmcountError(f"{g.path}: {arch}.{key} and {arch}.{minus} must be integers")
                value -= other
            return True, value
    return (True, None) if rule.get("absent") == "null" else (False, None)


def variant(g: GgufFile) -> tuple[str, str, dict[str, Any]]:
    """(GGUF architecture, the model_type it is read as, the rules of keys) for a file."""
    arch, table = _arch(g)
    model_type, rules = table["model_type"], {**archs()["common"], **table.get("keys", {})}
    for name, spec in table.get("variants", {}).items():
        value = _value(g, arch, spec["when"])
        if value is not None and ("equals" not in spec or value == spec["equals"]):
            model_type, rules = name, {**rules, **spec.get("keys", {})}
    return arch, model_type, rules


def config(g: GgufFile) -> dict[str, Any]:
    """The transformers config.json a GGUF file's metadata stands for (see gguf_archs.toml)."""
    arch, model_type, rules = variant(g)
    result: dict[str, Any] = {"model_type": model_type}
    for key, rule in rules.items():
        found, value = _mapped(g, arch, rule)
        if found:
            result[key] = value
    if "vocab_size" not in result:
        tokens = g.metadata.get("tokenizer.ggml.tokens")
        if tokens is not None:
            result["vocab_size"] = tokens.length if isinstance(tokens, LongArray) else len(tokens)
        else:
            embedding = next((t for t in g.tensors if t.name == "token_embd.weight"), None)
            if embedding is not None and len(embedding.ne) == 2:
                result["vocab_size"] = embedding.ne[1]
    result["tie_word_embeddings"] = not any(t.name == "output.weight" for t in g.tensors)
    return result


def load_model(spec: str):
    """The :class:`~llmcount.formulas.config.Model` of a GGUF file: its config read with its record."""
    from .formulas.config import read_config

    name, source, found = resolve_gguf(spec)
    return read_config(found, source, name)


def resolve_gguf(spec: str) -> tuple[str, str, dict[str, Any]]:
    """``(name, source, config)`` of a GGUF file, as :func:`llmcount.sources.resolve` gives them for a config."""
    g = read_gguf(spec)
    return model_name(g), f"{g.path} (GGUF metadata)", config(g)


def model_name(g: GgufFile) -> str:
    name = g.metadata.get("general.name")
    return name if isinstance(name, str) and name else Path(g.files[0] if g.files else g.path).stem


# ---------------------------------------------------------------------------------------------------------------
# tensor names


@lru_cache(maxsize=64)
def _sources(arch: str) -> dict[str, tuple[str, ...]]:
    """GGUF name template (``blk.{bid}.attn_q``) -> the Hugging Face name templates llama.cpp's converter writes it
    from (``model.layers.{bid}.self_attn.q_proj`` ...), for the tensors of one architecture (gguf.TensorNameMap)."""
    import gguf

    found = next((a for a, name in gguf.MODEL_ARCH_NAMES.items() if name == arch), None)
    if found is None:
        return {}
    kinds = set(gguf.MODEL_TENSORS.get(found, ()))
    result: dict[str, tuple[str, ...]] = {}
    for table in (gguf.TensorNameMap.mappings_cfg, gguf.TensorNameMap.block_mappings_cfg):
        for kind, names in table.items():
            if kind in kinds:
                result[gguf.TENSOR_NAMES[kind]] = tuple(names)
    return result


@dataclass(frozen=True)
class Mapped:
    """The GGUF tensors as the checkpoint tensors of the record they stand for, and the tensors that are none."""

    tensors: tuple[Any, ...]  # checkpoint.Tensor, named as transformers names them
    groups: Mapping[str, tuple[GgufTensor, ...]]  # component path (or the GGUF name) -> the GGUF tensors under it
    not_parameters: tuple[tuple[GgufTensor, str], ...]  # (tensor, why it is no parameter)


def map_tensors(g: GgufFile, model: Any) -> Mapped:
    """Name every GGUF tensor as the transformers tensor it was converted from: among the names the converter's map
    gives for its GGUF name, the one whose component path the record knows (a name none places keeps its GGUF
    name, and ``verify`` lists it as a difference)."""
    from .checkpoint import Paths, Tensor, component_path
    from .formulas.symbols import N

    arch, _model_type, _rules = variant(g)
    table = archs()[arch]
    reasons = archs()["not_parameters"]
    split = table.get("split", {})
    sources = _sources(arch)
    names = model.architecture.checkpoint
    known = set()
    layered = set()
    for term, component in zip(model.terms, model.counts.components, strict=True):
        path = _shared(component.path, names.shared)
        known.add(path)
        if term.layers != 1:
            layered.add(path)
    paths = Paths(
        frozenset(known),
        frozenset(layered),
        {e: _shared(p, names.shared) for p, e in names.names.items()},
        names.buffers,
    )
    layers = model.values[N]
    parsed = []
    options: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (template, leaf) -> (name, path) the record knows
    for tensor in g.tensors:
        stem, _, leaf = tensor.name.rpartition(".")
        if leaf not in ("weight", "bias"):
            stem, leaf = tensor.name, ""
        match = _BLOCK.match(stem)
        base = match[2] if match else stem
        template = f"blk.{{bid}}.{split.get(base, base)}" if match else split.get(base, base)
        parsed.append((tensor, base, template, leaf, match))
        if base in reasons or (template, leaf) in options:
            continue
        found = []
        suffix = f".{leaf}" if leaf else ""
        candidates = sorted(sources.get(template, ()), key=lambda c: not c.startswith("model."))  # transformers' first
        for candidate in candidates:
            name = (candidate.format(bid=0) if match else candidate) + suffix
            path = component_path(name, layers, paths)
            if path in known:
                found.append((candidate + suffix, path))
        options[(template, leaf)] = found
    # a path that is some GGUF tensor's only place is not taken by another that has other places (Gemma 2's and
    # GLM-4's four norms: post_attention_norm is the record's post_self_attn_layernorm when ffn_norm is its
    # post_attention_layernorm)
    only = {found[0][1] for found in options.values() if len({p for _, p in found}) == 1}
    chosen_of: dict[tuple[str, str], tuple[str, str] | None] = {}
    for key, found in options.items():
        distinct = {p for _, p in found}
        free = [f for f in found if f[1] not in only] if len(distinct) > 1 else found
        chosen_of[key] = (free or found or [None])[0]
    out: list[Any] = []
    groups: dict[str, list[GgufTensor]] = {}
    skipped: list[tuple[GgufTensor, str]] = []
    for tensor, base, template, leaf, match in parsed:
        if base in reasons:
            skipped.append((tensor, reasons[base]))
            continue
        picked = chosen_of.get((template, leaf))
        if picked is None:
            name, path = tensor.name, None
        else:
            name, path = (picked[0].format(bid=match[1]) if match else picked[0]), picked[1]
        out.append(Tensor(name, tensor.type, tensor.shape))
        groups.setdefault(path or component_path(name, layers, paths) or name, []).append(tensor)
    return Mapped(tuple(out), {k: tuple(v) for k, v in groups.items()}, tuple(skipped))


def _shared(path: str, shared: Mapping[str, str]) -> str:
    from .checkpoint import _shared as shared_path

    return shared_path(path, shared)


# ---------------------------------------------------------------------------------------------------------------
# verify, count and memory of a GGUF file


def _types_note(tensors: list[GgufTensor]) -> str:
    """``Q4_K ×28, Q6_K ×4`` for the tensors of one component."""
    counts: dict[str, int] = {}
    for t in tensors:
        counts[t.type] = counts.get(t.type, 0) + 1
    return ", ".join(f"{name} ×{n}" for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def file_type(g: GgufFile) -> str:
    """The file's ``general.file_type`` by llama.cpp's name (``MOSTLY_Q4_K_M``), or the ggml types it holds."""
    value = g.metadata.get("general.file_type")
    if isinstance(value, int) and not isinstance(value, bool):
        import gguf

        try:
            return gguf.LlamaFileType(value).name
        except ValueError:
            return f"file type {value}"
    return "no general.file_type"


def verify(spec: str):
    """A GGUF file's tensors against the formula of the config its metadata stands for, per component, each GGUF
    tensor counted as its logical elements (``ne``), whatever ggml type stores it."""
    from .checkpoint import ComponentCheck, compare

    g = read_gguf(spec)
    model = load_model(spec)
    mapped = map_tensors(g, model)
    result = compare(model, list(mapped.tensors), g.path, "gguf")
    by_path = mapped.groups
    components = tuple(
        c
        if c.note or c.path not in by_path
        else dataclasses.replace(c, note="stored as " + _types_note(by_path[c.path]))
        for c in result.components
    )
    extra = tuple(
        ComponentCheck(f"gguf/{t.name}", 0, t.elements, why, storage=True) for t, why in mapped.not_parameters
    )
    parts = [f"GGUF {g.architecture} read as {model.architecture.name}", file_type(g)]
    parts.append(f"{len(g.tensors):,} tensors, {g.tensor_bytes:,} bytes of tensor data in {len(g.files)} file(s)")
    if result.note:
        parts.append(result.note)
    return dataclasses.replace(result, components=components + extra, note="; ".join(parts))


@dataclass(frozen=True)
class StoredGroup:
    """The stored bytes of one component of a GGUF file, by ggml type."""

    path: str
    elements: int
    bytes: int
    types: Mapping[str, tuple[int, int]]  # ggml type -> (elements, bytes)

    @property
    def bits_per_weight(self) -> float:
        return 8 * self.bytes / self.elements if self.elements else 0.0


def stored(spec: str) -> tuple[GgufFile, Any, tuple[StoredGroup, ...]]:
    """The GGUF file, its model, and its tensors' stored bytes per component (and per llama.cpp-only tensor)."""
    g = read_gguf(spec)
    model = load_model(spec)
    mapped = map_tensors(g, model)
    groups: dict[str, dict[str, list[int]]] = {}
    for path, tensors in mapped.groups.items():
        for t in tensors:
            slot = groups.setdefault(path, {}).setdefault(t.type, [0, 0])
            slot[0] += t.elements
            slot[1] += t.nbytes
    for t, _why in mapped.not_parameters:
        slot = groups.setdefault(f"gguf/{t.name}", {}).setdefault(t.type, [0, 0])
        slot[0] += t.elements
        slot[1] += t.nbytes
    order = [c.path for c in model.counts.components]
    keyed = sorted(groups, key=lambda p: (order.index(p) if p in order else len(order), p))
    result = tuple(
        StoredGroup(
            p,
            sum(v[0] for v in groups[p].values()),
            sum(v[1] for v in groups[p].values()),
            {k: (v[0], v[1]) for k, v in sorted(groups[p].items(), key=lambda kv: -kv[1][1])},
        )
        for p in keyed
    )
    return g, model, result
