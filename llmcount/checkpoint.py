"""Reconcile a parameter formula with a real checkpoint, reading only metadata.

A safetensors file starts with an 8-byte little-endian header length ``n``, then ``n`` bytes of JSON:
``{"__metadata__": {...}, "<tensor name>": {"dtype": "BF16", "shape": [...], "data_offsets": [begin, end]}, ...}``,
offsets counted from the end of the header. Only that header is read, never a tensor. A sharded checkpoint adds
``model.safetensors.index.json``: ``{"metadata": {"total_size": bytes}, "weight_map": {tensor: file}}``.

Three sources: the headers of local files (every tensor's elements, mapped to llmcount's component paths),
the headers on the Hugging Face Hub (``huggingface_hub.get_safetensors_metadata``, no weights downloaded), or an
index's ``total_size`` divided by the bytes of the checkpoint's dtype.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .dtypes import BITS, TORCH_NAMES, lookup
from .dtypes import canonical as dtype
from .errors import LlmcountError
from .files import json_text, kind, open_regular, parse_text, printable, short, user_path
from .plain import is_norm
from .presets import find
from .sizes import gb_gib
from .sources import read_json, resolve

if TYPE_CHECKING:
    from .formulas.config import Model

MAX_HEADER = 100_000_000  # the safetensors format's own limit on the header size
DTYPE_BITS = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E4M3": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2": 8,
    "F8_E5M2FNUZ": 8,
    "F8_E8M0": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "I64": 64,
    "U64": 64,
    "F64": 64,
    "C64": 64,
}
QUANTIZATION_LEAVES = ("weight_scale_inv", "weight_scale", "input_scale", "scales", "qzeros", "g_idx")
TORCH_DTYPES: dict[str, str] = TORCH_NAMES
"""A checkpoint's dtype as torch and a config's ``torch_dtype`` name it -> llmcount's short name (:mod:`.dtypes`)."""


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


def torch_dtype(name: str, where: str) -> tuple[str, int]:
    """``(torch's name, bytes per element)`` of a checkpoint's dtype (``bf16``, ``torch.bfloat16``, ...)."""
    try:
        found = lookup(name)
    except LlmcountError:
        raise LlmcountError(f"{where}: unknown dtype {short(name)}; choose one of {', '.join(TORCH_DTYPES)}") from None
    if found.torch is None or found.bits % 8:
        raise LlmcountError(
            f"{where}: {found.name} is not a dtype a checkpoint stores whole bytes of; choose one of "
            f"{', '.join(TORCH_DTYPES)}"
        )
    return found.torch, found.bits // 8


# ---------------------------------------------------------------------------------------------------------------
# reading headers and index files


def read_header(path: Path) -> list[Tensor]:
    """The tensors a safetensors file declares, checked as strictly as the safetensors library checks them: a JSON
    object, ``__metadata__`` of strings, each tensor's bytes equal to its dtype's size times its elements, and the
    tensors' byte ranges tiling the data that follows the header exactly (no overlap, no gap, no trailing bytes).
    Only the header is read, never a tensor."""
    file, size = open_regular(path, "safetensors file")
    with file:
        try:
            prefix = file.read(8)
            if len(prefix) < 8:
                raise LlmcountError(f"{path}: truncated safetensors file ({size} bytes, no 8-byte header length)")
            (length,) = struct.unpack("<Q", prefix)
            if length > MAX_HEADER:
                raise LlmcountError(
                    f"{path}: not a safetensors file: its header length field says {length:,} bytes, "
                    f"over the format's limit of {MAX_HEADER:,}"
                )
            if 8 + length > size:
                raise LlmcountError(
                    f"{path}: truncated safetensors header: its length field says {length:,} bytes, "
                    f"only {size - 8:,} follow"
                )
            raw = file.read(length)
        except OSError as exc:
            raise LlmcountError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) < length:  # the file shrank since the stat
        raise LlmcountError(f"{path}: truncated safetensors header while reading it")
    where = f"{path}: safetensors header"
    text = json_text(raw, where)
    del raw
    header = parse_text(text, where)
    if not isinstance(header, dict):
        raise LlmcountError(f"{path}: safetensors header must be a JSON object")
    metadata = header.get("__metadata__", {})
    if metadata is None:  # mlx writes null without metadata; the safetensors library reads it as none
        metadata = {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise LlmcountError(f"{path}: safetensors header: __metadata__ must be an object of strings")
    data_size = size - 8 - length
    tensors, spans = [], []
    for name, entry in header.items():
        if name != "__metadata__":
            tensors.append(_tensor(path, name, entry, data_size))
            spans.append((*entry["data_offsets"], name))
    _check_tiling(path, sorted(spans), data_size)
    return tensors


def _check_tiling(path: Path, spans: list[tuple[int, int, str]], data_size: int) -> None:
    """The sorted byte ranges of the tensors must follow each other from 0 to the end of the file."""
    end, previous = 0, None
    for begin, stop, name in spans:
        if begin < end:
            raise LlmcountError(
                f"{path}: tensors {short(previous)} and {short(name)} overlap: bytes {begin:,} to {min(stop, end):,} "
                "of the data belong to both"
            )
        if begin > end:
            where = f"after tensor {short(previous)}" if previous else "before the first tensor"
            raise LlmcountError(f"{path}: {begin - end:,} bytes of data {where} belong to no tensor")
        end, previous = stop, name
    if end != data_size:
        raise LlmcountError(
            f"{path}: {data_size - end:,} trailing bytes after the last tensor's data belong to no tensor"
        )


def _tensor(path: Path | str, name: str, entry: Any, data_size: int | None) -> Tensor:
    """One header entry, checked: known dtype, a shape of non-negative ints, offsets inside the data."""
    if not isinstance(entry, dict):
        raise LlmcountError(f"{path}: tensor {short(name)}: header entry must be an object")
    kind, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if kind not in DTYPE_BITS:
        raise LlmcountError(f"{path}: tensor {short(name)}: unknown dtype {short(kind)}")
    if not isinstance(shape, list) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in shape):
        raise LlmcountError(
            f"{path}: tensor {short(name)}: shape must be a list of non-negative integers, got {short(shape)}"
        )
    elements = 0 if 0 in shape else 1
    for size in shape if elements else ():
        elements *= size
        if elements >= 2**64:  # as the safetensors library, whose sizes are 64-bit
            raise LlmcountError(f"{path}: tensor {short(name)}: shape {short(shape)} overflows a 64-bit element count")
    tensor = Tensor(name, kind, tuple(shape))
    if data_size is None:  # headers from the Hub: the file's size is not known here
        return tensor
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) for x in offsets)
        and 0 <= offsets[0] <= offsets[1]
    ):
        raise LlmcountError(f"{path}: tensor {short(name)}: data_offsets must be [begin, end], got {short(offsets)}")
    if offsets[1] > data_size:
        raise LlmcountError(
            f"{path}: tensor {short(name)}: data_offsets {offsets} point past the end of the file "
            f"({data_size:,} bytes of data)"
        )
    bits = tensor.elements * DTYPE_BITS[kind]
    if bits % 8:
        raise LlmcountError(f"{path}: tensor {short(name)}: {kind} {short(shape)} is {bits} bits, not whole bytes")
    expected = bits // 8
    if offsets[1] - offsets[0] != expected:
        raise LlmcountError(
            f"{path}: tensor {short(name)}: data_offsets span {offsets[1] - offsets[0]:,} bytes, "
            f"but {kind} {short(list(shape))} needs {expected:,}"
        )
    return tensor


def read_index(path: Path) -> dict[str, Any]:
    """A ``*.safetensors.index.json``, checked: an object with a ``weight_map`` of tensor -> file name."""
    if path.suffix == ".safetensors":
        raise LlmcountError(f"{path}: a safetensors file, not its index; pass model.safetensors.index.json")
    index = read_json(path, "safetensors index")
    if not isinstance(index, dict):
        raise LlmcountError(f"{path}: not a safetensors index: it must be a JSON object")
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not all(isinstance(f, str) for f in weight_map.values()):
        raise LlmcountError(f"{path}: not a safetensors index: no weight_map of tensor names to files")
    metadata = index.get("metadata", {})
    if not isinstance(metadata, dict):
        raise LlmcountError(f"{path}: not a safetensors index: key 'metadata' must be an object")
    return index


MAX_TOTAL_SIZE = 2**64 - 1  # bytes: safetensors' sizes and offsets are 64-bit
MAX_EXACT_FLOAT = 2**53  # a float total_size (some writers put 1234.0) is read only where a double holds it exactly


def total_size(path: Path, index: dict[str, Any]) -> int:
    """An index's ``metadata.total_size``: the bytes of every tensor, a positive integer of at most 64 bits (a float
    only if whole and exact: ``1e308`` is refused, never printed as a 309-digit number)."""
    size = index.get("metadata", {}).get("total_size")
    if isinstance(size, float) and size.is_integer() and abs(size) <= MAX_EXACT_FLOAT:
        size = int(size)
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise LlmcountError(
            f"{path}: not a safetensors index: no positive integer metadata.total_size, got {short(size)}"
        )
    if size > MAX_TOTAL_SIZE:
        raise LlmcountError(f"{path}: metadata.total_size {size:.3e} is larger than a 64-bit size (safetensors' limit)")
    return size


STRAY = "consolidated"
"""Mistral ships ``consolidated.safetensors`` (its own format, the same weights again) beside the Hugging Face files."""


@dataclass(frozen=True)
class Checkpoint:
    tensors: list[Tensor]
    ignored: tuple[Path, ...] = ()  # files beside it that hold the same weights again


def read_checkpoint(path: Path) -> list[Tensor]:
    """Every tensor of a checkpoint: see :func:`load_checkpoint`."""
    return load_checkpoint(path).tensors


def load_checkpoint(path: Path) -> Checkpoint:
    """Every tensor of a checkpoint: a ``.safetensors`` file, an index (its shards must sit beside it) or a folder
    (its ``model.safetensors.index.json`` or only index if it has one, else every ``*.safetensors`` in it). Beside
    other safetensors, ``consolidated*.safetensors`` are ignored and named. A file named twice (``./a`` and ``a``)
    is read once; a tensor in two files is an error."""
    found = kind(path, "checkpoint")
    if found is None:
        raise LlmcountError(f"{path}: no such file or folder")
    if found != "folder":
        if not path.name.endswith(".json"):
            return _holding(path, Checkpoint(_read_files([path])[0]))
        return _holding(path, Checkpoint(_read_index_shards(path)))
    indexes = sorted(path.glob("*.safetensors.index.json"))
    tensor_files = sorted(path.glob("*.safetensors"))
    ignored = [f for f in tensor_files if f.name.startswith(STRAY)]
    if indexes:
        chosen = [i for i in indexes if i.name == "model.safetensors.index.json"] or [
            i for i in indexes if not i.name.startswith(STRAY)
        ]
        if len(chosen) != 1:
            chosen = chosen or indexes
            if len(chosen) > 1:
                names = ", ".join(i.name for i in chosen[:3])
                raise LlmcountError(f"{path}: several safetensors indexes ({names}); pass one with --checkpoint")
        index = read_index(chosen[0])
        listed = {os.path.realpath(path / f) for f in index["weight_map"].values() if "\0" not in f}
        strays = tuple(f for f in ignored if os.path.realpath(f) not in listed)
        return _holding(chosen[0], Checkpoint(_read_index_shards(chosen[0], index), strays))
    if not tensor_files:
        raise LlmcountError(f"{path}: folder has no *.safetensors files")
    if len(ignored) == len(tensor_files):  # only Mistral's format: count it
        ignored = []
    kept = [f for f in tensor_files if f not in ignored]
    return _holding(path, Checkpoint(_read_files(kept)[0], tuple(ignored)))


def _holding(path: Path, checkpoint: Checkpoint) -> Checkpoint:
    """``checkpoint``, refused when it holds no tensor (an empty weight_map, headers of ``{}``): there is nothing to
    compare with the formula, and every component would read as missing."""
    if not checkpoint.tensors:
        raise LlmcountError(f"{path}: the checkpoint holds no tensors (an empty weight_map or safetensors header)")
    return checkpoint


def _read_files(paths: list[Path]) -> tuple[list[Tensor], dict[str, str]]:
    """The tensors of several safetensors files, each file read once (by its real path), and the real path of the
    file each tensor name is in; the same tensor name in two files is an error."""
    tensors: list[Tensor] = []
    owner: dict[str, str] = {}
    seen: set[str] = set()
    for file in paths:
        real = os.path.realpath(file)
        if real in seen:
            continue
        seen.add(real)
        for tensor in read_header(file):
            if tensor.name in owner:
                raise LlmcountError(
                    f"{file}: tensor {short(tensor.name)} is also in {Path(owner[tensor.name]).name}: "
                    "a checkpoint stores each tensor once"
                )
            owner[tensor.name] = real
            tensors.append(tensor)
    return tensors, owner


def _read_index_shards(path: Path, index: dict[str, Any] | None = None) -> list[Tensor]:
    """The tensors of the shards an index names (``index``: the index, when read already)."""
    weight_map = (index if index is not None else read_index(path))["weight_map"]
    folder = Path(os.path.realpath(path.parent))
    bad = sorted({f for f in weight_map.values() if not f or "\0" in f})
    if bad:
        raise LlmcountError(f"{path}: weight_map names a file {short(bad[0])} that cannot exist")
    outside = sorted({f for f in weight_map.values() if not Path(os.path.realpath(folder / f)).is_relative_to(folder)})
    if outside:
        raise LlmcountError(f"{path}: weight_map names files outside the index's folder: {', '.join(outside[:3])}")
    missing = sorted({f for f in weight_map.values() if kind(path.parent / f, "shard") is None})
    if missing:
        raise LlmcountError(f"{path}: weight_map names missing files: {', '.join(missing[:3])}")
    tensors, owner = _read_files([path.parent / f for f in sorted(set(weight_map.values()))])
    for name, file in weight_map.items():
        if owner.get(name) != os.path.realpath(path.parent / file):
            where = f"; it is in {Path(owner[name]).name}" if name in owner else ""
            raise LlmcountError(
                f"{path}: weight_map puts tensor {short(name)} in {short(file)}, whose header has no such tensor{where}"
            )
    return tensors


def read_hub(repo_id: str) -> list[Tensor]:
    """Every tensor of a Hub repo's safetensors, from the headers alone (huggingface_hub fetches byte ranges).

    Every request waits at most ``HUB_TIMEOUT`` seconds for the Hub (huggingface_hub's default is 10 s, none for
    the repo lookup); a first lookup of the repo tells a missing repo from one without safetensors, and fails at
    once without a network."""
    try:
        import huggingface_hub as hub
        from huggingface_hub import constants
    except ImportError:
        raise LlmcountError(f"{repo_id}: --hub needs huggingface_hub (pip install 'llmcount[hub]')") from None
    if constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE"):
        raise LlmcountError(f"{repo_id}: cannot read safetensors headers from the Hub: offline (HF_HUB_OFFLINE is set)")
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError
    from huggingface_hub.utils import logging as hub_logging

    from .sources import HUB_TIMEOUT

    hub_logging.set_verbosity_error()  # one line of ours, not the Hub client's warnings
    try:
        hub.model_info(repo_id, timeout=HUB_TIMEOUT)
        metadata = hub.get_safetensors_metadata(repo_id, timeout=HUB_TIMEOUT)
    except GatedRepoError:
        raise LlmcountError(
            f"{repo_id}: a gated repo on the Hub: accept its terms on https://huggingface.co/{repo_id} "
            "and log in (hf auth login, or set HF_TOKEN)"
        ) from None
    except RepositoryNotFoundError:
        raise LlmcountError(
            f"{repo_id}: no such repo on the Hub (or a private one: log in with hf auth login, or set HF_TOKEN)"
        ) from None
    except Exception as exc:  # no safetensors, network errors: one message
        if "Timeout" in type(exc).__name__ or isinstance(exc, TimeoutError):
            reason = f"the Hub did not answer within {HUB_TIMEOUT:g} s"
        else:
            unreachable = isinstance(exc, OSError) or "Connect" in type(exc).__name__
            reason = ("cannot reach the Hub (offline?): " if unreachable else "") + _first_line(exc)
        raise LlmcountError(f"{repo_id}: cannot read safetensors headers from the Hub: {reason}") from None
    return hub_tensors(metadata)


def hub_tensors(metadata: Any) -> list[Tensor]:
    """Tensors of a ``huggingface_hub`` ``SafetensorsRepoMetadata``, checked like local headers."""
    tensors = []
    for file, file_metadata in sorted(metadata.files_metadata.items()):
        for name, info in file_metadata.tensors.items():
            entry = {"dtype": info.dtype, "shape": list(info.shape), "data_offsets": list(info.data_offsets)}
            tensors.append(_tensor(file, name, entry, None))
    return tensors


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# ---------------------------------------------------------------------------------------------------------------
# tensor names -> llmcount component paths


_WRAPPERS = ("model", "transformer", "language_model")
"""Module names a checkpoint puts around the decoder: ``model.layers...``, a multimodal checkpoint's
``language_model.model.layers...`` (Llama 4's Hub files) or ``model.language_model.layers...`` (transformers 5)."""
_OTHER_TOWERS = ("vision_model", "vision_tower", "visual", "multi_modal_projector", "audio_tower")
"""Top-level modules of a multimodal checkpoint that a text model's formula does not count."""
_ATTENTION = ("self_attn", "attn", "self_attention")
_CROSS_ATTENTION = ("encoder_attn", "cross_attn")
"""An encoder-decoder's cross-attention (BART's ``encoder_attn``) or Mllama's ``cross_attn``: group cross_attention."""
_FFN = ("mlp", "block_sparse_moe", "feed_forward")
_EXPERTS = ("experts", "input_linear", "output_linear", "switch_mlp", "switch_glu")
"""Routed experts: per-expert modules (``experts.3.w1``), fused tensors (``experts.gate_up_proj``, gpt-oss and Llama 4),
JetMoE's ``input_linear``/``output_linear`` that hold every expert in one 3-D tensor, or mlx-lm's stacked
``switch_mlp``/``switch_glu`` (mlx_lm/models/switch_layers.py)."""


@dataclass(frozen=True)
class Paths:
    """What tensor names are mapped to: the paths of a formula, a record's own names for checkpoint tensors (a dotted
    ending of the name -> a path), its saved buffers, and the paths that some tensor's modules name in full
    (``group.module``: BERT's ``attention.output.dense``), which a shorter name (``output.dense``) then does not
    take."""

    known: frozenset[str]
    layered: frozenset[str] = frozenset()  # the known paths of terms in the layers (the others are once per model)
    names: Mapping[str, str] = dataclasses.field(default_factory=dict)
    buffers: tuple[str, ...] = ()
    claimed: frozenset[str] = frozenset()
    others: tuple[str, ...] = ()  # a composite's top-level modules of its other parts (its record's ``parts_modules``)


_LAYER_LISTS = ("layers", "h", "layer")
"""The module lists that hold the decoder layers: ``model.layers.3``, GPT-2's ``h.3``, BERT's ``encoder.layer.3``."""


def component_path(name: str, layers: int, paths: Paths | set[str]) -> str | None:
    """The llmcount path of a checkpoint tensor (``model.layers.3.self_attn.q_proj.weight`` ->
    ``attention/q_proj``), or None when the name has no recognisable structure.

    Per-expert tensors map to ``moe/experts``; a bias to ``<path>.bias`` (a norm's shift to the norm itself; a fused
    tensor's ``<name>_bias``, as gpt-oss's ``experts.gate_up_proj_bias``, too); layers at or past
    ``num_hidden_layers`` to ``extra/layers.<i>``; quantisation scales to ``quantization/<leaf>``; a record's saved
    buffers to ``buffer/<name>``; an unknown top-level or per-layer module to ``other/<module>``, a multimodal
    checkpoint's vision tower to ``other/<tower>``. A name the usual module names do not place is matched by its
    modules to the path whose module is their longest dotted ending (``bert.encoder.layer.0.attention.self.query``
    -> ``attention/query``). Paths outside the known ones are things the formula does not count (buffers, a second
    copy of a tied head, a layer the model code leaves out).
    """
    if not isinstance(paths, Paths):
        paths = Paths(frozenset(paths))
    parts = name.split(".")
    while parts[0] in _WRAPPERS and len(parts) > 1:
        parts = parts[1:]
    *modules, leaf = parts
    if leaf in QUANTIZATION_LEAVES:
        return f"quantization/{leaf}"
    top = modules[0] if modules else leaf  # a top-level parameter of a part (DeepSeek-VL2's image_newline)
    if (modules and top in _OTHER_TOWERS) or top in paths.others:
        return f"other/{top}"
    at = next((i for i, m in enumerate(modules[:-1]) if m in _LAYER_LISTS and modules[i + 1].isdigit()), None)
    if at is not None and int(modules[at + 1]) >= layers:
        return f"extra/layers.{modules[at + 1]}"
    own = _own_name(name, paths)
    if own is not None:
        return own
    if at is not None:
        modules = modules[at + 2 :]
        path = _layer_path(modules, leaf, paths.known)
    elif len(modules) == 1 and modules[0] in _TABLES:
        path = f"{_TABLES[modules[0]]}/{modules[0]}"
    else:
        path = None
    if path not in paths.known:
        path = _by_name(modules, leaf, paths, at is not None) or path
        if path is None and at is None and len(modules) == 1:
            path = f"other/{modules[0]}"
    is_bias = leaf == "bias" or (leaf.endswith("_bias") and path is not None and path.endswith("/experts"))
    if path is None or not is_bias or path.endswith(("/bias", ".bias")) or (is_norm(path) and path in paths.known):
        return path
    return f"{path}.bias"


_TABLES = {"embed_tokens": "embedding", "wte": "embedding", "wpe": "embedding", "lm_head": "head"}


def _ends(name: str, ending: str) -> bool:
    return name == ending or name.endswith("." + ending)


def _own_name(name: str, paths: Paths) -> str | None:
    """The path a record names for this tensor, or ``buffer/<name>`` for one of its saved buffers."""
    for ending, path in paths.names.items():
        if _ends(name, ending):
            return path
    for ending in paths.buffers:
        if _ends(name, ending):
            return f"buffer/{ending}"
    return None


def _by_name(modules: list[str], leaf: str, paths: Paths, in_layer: bool) -> str | None:
    """The known path named by the longest dotted ending of the tensor's modules (first of its modules and leaf
    when the leaf is not a weight: ``router.scale``, ``cls.predictions.bias``), as ``group.module`` or as
    ``module`` alone (a path another tensor names in full not taken), among the paths of the layers for a tensor
    of a layer and the others for the others; None when no ending or two paths match one."""
    candidates = [p for p in paths.known if (p in paths.layered) == in_layer]
    forms = {"weight": [modules], "bias": [modules, [*modules, leaf]]}.get(leaf, [[*modules, leaf], modules])
    for form in forms:
        for start in range(len(form)):
            ending = ".".join(form[start:])
            full = [p for p in candidates if p.replace("/", ".", 1) == ending]
            named = [p for p in candidates if p.partition("/")[2] == ending and p not in paths.claimed]
            found = full or named
            if found:
                return found[0] if len(found) == 1 else None
    return None


def claimed(names: list[str], known: set[str]) -> frozenset[str]:
    """The known paths some tensor's modules name in full, ``group.module`` (layer and expert indices aside)."""
    modules = {re.sub(r"\.\d+(?=\.|$)", "", name.rpartition(".")[0]) for name in names}
    return frozenset(path for path in known if any(_ends(m, path.replace("/", ".", 1)) for m in modules))


def _norm_or_other(module: str, known: set[str]) -> str:
    return f"norms/{module}" if f"norms/{module}" in known else f"other/{module}"


def _layer_path(modules: list[str], leaf: str, known: set[str]) -> str | None:
    """The path of a tensor inside one decoder layer, from its module names (``self_attn``, ``q_proj``);
    a tensor directly on the attention module is a buffer or parameter named by its leaf (GPT-2's ``attn.bias``
    mask, gpt-oss's ``self_attn.sinks``)."""
    if not modules:
        return None
    group, rest = modules[0], modules[1:]
    if group in _CROSS_ATTENTION:
        return f"cross_attention/{rest[0] if rest else leaf}"
    if group in _ATTENTION:
        if rest and rest[0] == "experts" and "attention/experts" in known:  # JetMoE's mixture of attention heads
            if rest[1:2] == ["router"]:
                return "attention/router"
            return "attention/experts.bias" if leaf == "bias" and len(rest) == 1 else "attention/experts"
        return f"attention/{rest[0] if rest else leaf}"
    if group in _FFN:
        if not rest:  # a tensor on the MoE block itself: JetMoE's output bias
            return f"moe/{leaf}" if f"moe/{leaf}" in known else f"mlp/{leaf}"
        module = rest[0]
        if f"mlp/{module}" in known:
            return f"mlp/{module}"
        if module in _EXPERTS:
            return "moe/experts"
        if module in ("gate", "router"):  # router.weight, router.bias; JetMoE's router.layer.weight
            return "moe/router" if leaf == "weight" else f"moe/router.{leaf}"
        if module in ("shared_experts", "shared_expert"):
            return f"moe/{module}" if f"moe/{module}" in known else "moe/shared_experts"
        return f"moe/{module}" if f"moe/{module}" in known else f"mlp/{module}"
    return _norm_or_other(group, known) if not rest else None


# ---------------------------------------------------------------------------------------------------------------
# what tensor names alone (an index) tell about a difference


def named(model: Any) -> dict[str, int]:
    """A model's values by symbol name: the sympy path's :class:`Model` keys them by Symbol, the compiled path's
    (:class:`llmcount.plain_verify.Read`) by name."""
    return {getattr(symbol, "name", symbol): value for symbol, value in model.values.items()}


_LAYER = re.compile(r"(?:^|\.)(?:layers|h|layer)\.(\d+)\.")
_BUFFERS = (".attn.bias", ".attn.masked_bias", "rotary_emb.inv_freq", "e_score_correction_bias")
_SCALES = ("_scale_inv", ".weight_scale", ".input_scale")


@dataclass(frozen=True)
class Finding:
    """Something in the checkpoint that makes its size differ from the model's parameters."""

    kind: str  # tied_head | missing_head | extra_layers | buffers | scales
    count: int  # tensors
    examples: tuple[str, ...]
    params: int | None = None  # the parameters it accounts for, when the names say enough to know
    layers: tuple[int, ...] = ()

    @property
    def size(self) -> int | None:
        return None if self.params is None else abs(self.params)


def findings(model: Model, names: list[str]) -> list[Finding]:
    """What the tensor names of an index tell about the difference between the checkpoint and the model's
    parameters: a tied head stored twice (:math:`Vd` more), a missing head (:math:`Vd` fewer), layers at or past N
    (MTP), buffers (GPT-2's :math:`n_{pos}^2` masks), quantisation scales. With shapes, see :func:`compare`."""
    found = []
    ending = model.architecture.checkpoint.names.get("head/lm_head", "lm_head.weight")  # the record's name for it
    head = [name for name in names if name == ending or name.endswith(f".{ending}")]
    values = named(model)
    vocab_table = values["V"] * values["d"]
    if model.tied and head:
        found.append(Finding("tied_head", len(head), tuple(head), params=vocab_table))
    if not model.tied and not head:
        found.append(Finding("missing_head", 0, (), params=-vocab_table))
    layers = values["N"]
    extra = sorted({int(m.group(1)) for name in names if (m := _LAYER.search(name)) and int(m.group(1)) >= layers})
    if extra:
        tensors = [name for name in names if (m := _LAYER.search(name)) and int(m.group(1)) >= layers]
        found.append(Finding("extra_layers", len(tensors), tuple(tensors[:2]), layers=tuple(extra)))
    buffers = [name for name in names if name.endswith(_BUFFERS)]
    if buffers:
        masks = [name for name in buffers if name.endswith(".attn.bias")]
        params = len(masks) * values["n_pos"] ** 2 if "n_pos" in values and len(masks) == len(buffers) else None
        found.append(Finding("buffers", len(buffers), tuple(buffers[:2]), params=params))
    scales = [name for name in names if name.endswith(_SCALES)]
    if scales:
        found.append(Finding("scales", len(scales), tuple(scales[:1])))
    return found


# ---------------------------------------------------------------------------------------------------------------
# the comparison


@dataclass(frozen=True)
class ComponentCheck:
    path: str
    formula: int
    checkpoint: int
    note: str = ""
    storage: bool = False  # quantisation storage (scales, zero points): listed, never a parameter or a difference

    @property
    def differs(self) -> bool:
        return not self.storage and self.formula != self.checkpoint


@dataclass(frozen=True)
class Verification:
    """A formula's counts next to a checkpoint's: per component, and tensors that map to none."""

    model: str
    source: str  # where the checkpoint's numbers come from
    mode: str  # "headers", "hub" or "index"
    formula_total: int
    checkpoint_total: int
    components: tuple[ComponentCheck, ...]
    unmapped: tuple[Tensor, ...] = ()
    note: str = ""
    unit: str = "parameters"  # "bytes": an index's total_size against a quantisation scheme's predicted bytes
    stored: tuple[tuple[str, int], ...] = ()  # a quantised checkpoint's bytes per component, storage included

    @property
    def match(self) -> bool:
        return self.formula_total == self.checkpoint_total and not self.differences_count

    @property
    def difference(self) -> int:
        """Checkpoint total minus formula total."""
        return self.checkpoint_total - self.formula_total

    @property
    def differences(self) -> list[ComponentCheck]:
        return [c for c in self.components if c.differs]

    @property
    def differences_count(self) -> int:
        return len(self.differences) + len(self.unmapped)


def _note(path: str, formula: int, checkpoint: int, model: Model, rows: dict[str, set[int]]) -> str:
    """Why a component's checkpoint count differs from the formula's, when the reason is a known one."""
    if formula == checkpoint:
        return ""
    if path.count("/") > 1 and path.startswith("mtp/"):  # a tensor of the MTP module's decoder layer
        inner = _note(path.removeprefix("mtp/"), formula, checkpoint, model, {})
        return f"MTP module: {inner}" if inner else ""
    if path == "head/lm_head" and not formula and model.tied:
        return "the head is tied to the embedding (tie_word_embeddings): the checkpoint stores it a second time"
    if path.startswith("extra/layers."):
        return (
            f"a layer past num_hidden_layers ({named(model)['N']}): the model code does not build it "
            "(a multi-token-prediction module?)"
        )
    if path.startswith("quantization/"):
        return "quantisation scales or zero points, not parameters of the model"
    if path.startswith("buffer/"):
        return "a buffer of the model, saved with the weights: not a parameter"
    if path == "moe/router.e_score_correction_bias":
        return "a buffer in transformers' model (routing bias), not a parameter"
    if path.startswith("parts/") and "/buffer/" in path:
        return "a buffer of the part, saved with the weights: not a parameter"
    if path.startswith("parts/"):
        return f"the {path.removeprefix('parts/').replace('_', ' ')} part's tensors in the checkpoint against its count"
    parts = model.composite.parts_modules if model.composite is not None else ()
    if path.removeprefix("other/") in (*_OTHER_TOWERS, *parts):  # parts_modules: the composite's own (embed_audio)
        return "a multimodal checkpoint's vision or audio part: not in the text model's formula"
    if path in ("attention/bias", "attention/masked_bias"):
        return "GPT-2's causal-mask buffers, stored in the checkpoint"
    if path.endswith("rotary_emb"):
        return "rotary inv_freq buffers, stored in the checkpoint"
    vocab = named(model)["V"] if path.startswith(("embedding/", "head/")) and rows.get(path) else None
    if vocab is not None and rows[path] != {vocab}:
        found = ", ".join(str(r) for r in sorted(rows[path]))
        return f"checkpoint has {found} rows, vocab_size is {vocab} (padded vocabulary?)"
    if not checkpoint:
        return "missing from the checkpoint"
    if not formula:
        return "not in the formula"
    return ""


# ---------------------------------------------------------------------------------------------------------------
# quantised checkpoints: packed weights as the parameters they stand for, their scales and zeros as storage

_STORAGE_LEAVES = (*QUANTIZATION_LEAVES, "SCB", "weight_format", "absmax", "quant_map", "nested_absmax")
_STORAGE_LEAVES += ("nested_quant_map", "biases", "weight_shape", "weight_zero_point", "weight_global_scale")
_STORAGE_LEAVES += ("input_global_scale", "activation_scale")  # MLX's biases; compressed-tensors' bookkeeping
_PACKED_DTYPES = ("U8", "I16", "U16", "I32", "U32", "I64", "U64")
"""Integer dtypes a quantiser packs several low-bit weights into (int8 weights, one per byte, are read as they are)."""


@dataclass(frozen=True)
class Dequantised:
    """A checkpoint's tensors with packed weights replaced by the logical weights they hold."""

    tensors: tuple[Tensor, ...]  # parameters: unquantised tensors and the logical shapes of packed ones
    storage: tuple[Tensor, ...]  # scales, zero points, g_idx, absmax, block scales: quantisation storage
    schemes: tuple[str, ...]  # the formats found, in words


def dequantise(tensors: list[Tensor]) -> Dequantised:
    """Recognise the common quantised formats from tensor names, dtypes and shapes alone, and count each packed
    weight as the parameters it holds; LlmcountError naming the tensor for a packed weight whose format is not one
    of these (never a packed tensor counted as if each element were one weight).

    - GPTQ and AWQ (GEMM): ``qweight`` int32 holds ``pack = 32 / bits`` weights per element; ``pack`` is read from
      ``scales`` (one column per output) over ``qzeros`` (``out / pack`` columns). GPTQ packs the input dimension,
      ``qweight`` (in/pack, out); AWQ the output one, ``qweight`` (in, out/pack). ``qzeros``, ``scales``, ``g_idx``
      are storage.
    - bitsandbytes 4-bit (NF4/FP4): ``weight`` uint8 with ``weight.absmax``/``weight.quant_state.*`` beside it holds
      two weights per byte (an odd count is padded by one); ``absmax``, ``quant_map``, ``nested_*``,
      ``quant_state.*`` are storage. 8-bit (LLM.int8): ``weight`` int8, one weight per element; ``SCB`` and
      ``weight_format`` are storage.
    - Block FP8 (DeepSeek-V3, Qwen3-FP8) and compressed-tensors FP8: ``weight`` float8, one weight per element;
      ``weight_scale_inv``, ``weight_scale``, ``input_scale`` are storage.
    - MXFP4 (gpt-oss): ``<name>_blocks`` uint8 (…, blocks, 16) holds 32 FP4 weights per block (two per byte);
      ``<name>_scales`` uint8 (…, blocks), one E8M0 scale per block, is storage.
    """
    by_name = {t.name: t for t in tensors}
    out: list[Tensor] = []
    storage: list[Tensor] = []
    schemes: list[str] = []

    def found(scheme: str) -> None:
        if scheme not in schemes:
            schemes.append(scheme)

    for tensor in tensors:
        name = tensor.name
        base, _, leaf = name.rpartition(".")
        if ".quant_state." in name or leaf in _STORAGE_LEAVES or leaf.endswith("_scale_inv"):
            storage.append(tensor)  # (fused FP8 experts: gate_up_proj_scale_inv)
        elif leaf == "qweight":
            shape, scheme = _gptq_awq_shape(tensor, by_name.get(f"{base}.scales"), by_name.get(f"{base}.qzeros"))
            out.append(Tensor(f"{base}.weight", tensor.dtype, shape))
            found(scheme)
        elif name.endswith("_blocks") and tensor.dtype == "U8" and name.removesuffix("_blocks") + "_scales" in by_name:
            scales = by_name[name.removesuffix("_blocks") + "_scales"]
            if len(tensor.shape) < 2 or tensor.shape[-1] != 16 or scales.shape != tensor.shape[:-1]:
                raise LlmcountError(
                    f"tensor {short(name)}: MXFP4 blocks must be (..., blocks, 16) bytes beside (..., blocks) scales; "
                    f"got {list(tensor.shape)} and {list(scales.shape)}"
                )
            out.append(Tensor(name.removesuffix("_blocks"), "F4", (*tensor.shape[:-2], tensor.shape[-2] * 32)))
            found("MXFP4 (32 FP4 weights per 16-byte block, one E8M0 scale per block)")
        elif name.endswith("_scales") and name.removesuffix("_scales") + "_blocks" in by_name:
            storage.append(tensor)
        elif (
            leaf == "weight"
            and tensor.dtype == "U8"
            and (f"{name}.absmax" in by_name or f"{name}.quant_map" in by_name)
        ):
            out.append(Tensor(name, "NF4", (2 * tensor.elements,)))
            found("bitsandbytes 4-bit (two weights per byte)")
        elif leaf == "weight_packed" or (leaf == "weight" and tensor.dtype in _PACKED_DTYPES):
            what = "compressed-tensors packed weights" if leaf == "weight_packed" else f"a {tensor.dtype} weight"
            raise LlmcountError(
                f"tensor {short(name)}: {what} {list(tensor.shape)} packs several low-bit weights per element in a "
                "format llmcount does not read (GPTQ, AWQ, bitsandbytes, FP8 and MXFP4 it does); "
                "verify an unquantised checkpoint instead"
            )
        else:
            if leaf == "weight" and tensor.dtype == "I8" and f"{base}.SCB" in by_name:
                found("bitsandbytes 8-bit (one int8 weight per element)")
            elif tensor.dtype.startswith("F8") and f"{name}_scale_inv" in by_name:
                found("block FP8 (one float8 weight per element, weight_scale_inv per block)")
            elif tensor.dtype.startswith("F8") and f"{name}_scale" in by_name:
                found("FP8 (one float8 weight per element, weight_scale)")
            out.append(tensor)
    return Dequantised(tuple(out), tuple(storage), tuple(schemes))


def _gptq_awq_shape(qweight: Tensor, scales: Tensor | None, qzeros: Tensor | None) -> tuple[tuple[int, int], str]:
    """(out, in) of the weight a GPTQ or AWQ ``qweight`` packs, and the format in words."""
    name = short(qweight.name)
    if qweight.dtype != "I32" or len(qweight.shape) != 2:
        raise LlmcountError(
            f"tensor {name}: a qweight must be a 2-D int32 tensor, got {qweight.dtype} {list(qweight.shape)}"
        )
    if scales is None or qzeros is None or len(scales.shape) != 2 or len(qzeros.shape) != 2:
        raise LlmcountError(
            f"tensor {name}: a qweight needs 2-D scales and qzeros beside it to tell how many weights each int32 "
            "holds; verify an unquantised checkpoint instead"
        )
    out_features = scales.shape[1]
    if not qzeros.shape[1] or out_features % qzeros.shape[1] or out_features // qzeros.shape[1] not in (2, 4, 8, 16):
        raise LlmcountError(
            f"tensor {name}: scales {list(scales.shape)} and qzeros {list(qzeros.shape)} give no whole number of "
            "2-, 4-, 8- or 16-bit weights per int32"
        )
    pack = out_features // qzeros.shape[1]
    rows, columns = qweight.shape
    bits = 32 // pack
    if columns == out_features:  # GPTQ: the input dimension packed
        return (out_features, rows * pack), f"GPTQ {bits}-bit ({pack} weights per int32 of qweight)"
    if columns * pack == out_features:  # AWQ (GEMM): the output dimension packed
        return (out_features, rows), f"AWQ {bits}-bit ({pack} weights per int32 of qweight)"
    raise LlmcountError(
        f"tensor {name}: qweight {list(qweight.shape)} fits neither GPTQ's (in/{pack}, {out_features}) nor "
        f"AWQ's (in, {out_features}/{pack}) layout beside scales {list(scales.shape)}"
    )


def _shared(path: str, shared: Mapping[str, str]) -> str:
    """The path whose tensors hold ``path`` (itself, unless the record says another; a bias follows its weight)."""
    if path in shared:
        return shared[path]
    weight = path.removesuffix(".bias")
    return f"{shared[weight]}.bias" if weight != path and weight in shared else path


def _storage_path(name: str) -> str:
    """``quantization/<what>`` for a quantisation storage tensor: its leaf, or ``quant_state`` / ``mxfp4_scales``."""
    if ".quant_state." in name:
        return "quantization/quant_state"
    leaf = name.rpartition(".")[2]
    if leaf.endswith("_scales") and leaf not in _STORAGE_LEAVES:
        return "quantization/mxfp4_scales"
    return f"quantization/{leaf}"


def compare(model: Model, tensors: list[Tensor], source: str, mode: str, quant: Any = None) -> Verification:
    """Count every tensor's elements under its component path and set them next to the formula's counts; a
    quantised checkpoint's packed weights count as the weights they hold, its scales and zeros as storage. Terms
    the record says the checkpoint stores in another path's tensors (``shared``: the same module on layers of
    another kind) are counted under that path."""
    names = model.architecture.checkpoint
    formula: dict[str, int] = {}
    layered: set[str] = set()
    for term, component in zip(model.terms, model.counts.components, strict=True):
        path = _shared(component.path, names.shared)
        formula[path] = formula.get(path, 0) + component.count
        if term.layers != 1:
            layered.add(path)
    from .quant.headers import stored_bytes, unpack

    original = tensors
    tensors, caveat = unpack(tensors, quant)
    plain = dequantise(tensors)
    if quant is not None and quant.scheme.method in ("mlx", "compressed-tensors"):
        plain = dataclasses.replace(plain, schemes=(*plain.schemes, quant.label + (f"; {caveat}" if caveat else "")))
    known = frozenset(formula)
    paths = Paths(
        known,
        frozenset(layered),
        {ending: _shared(path, names.shared) for path, ending in names.names.items()},
        names.buffers,
        claimed([t.name for t in plain.tensors], known),
        model.composite.parts_modules if model.composite is not None else (),
    )
    found: dict[str, int] = {}
    rows: dict[str, set[int]] = {}
    unmapped = []
    place = _mtp_places(model)
    part_of = part_places(model)
    layers = named(model)["N"]
    for tensor in plain.tensors:
        path = place(tensor.name) if place is not None else None
        path = path or (part_of(tensor.name) if part_of is not None else None)
        path = path or component_path(tensor.name, layers, paths)
        if path is None:
            unmapped.append(tensor)
            continue
        found[path] = found.get(path, 0) + tensor.elements
        if tensor.shape:
            rows.setdefault(path, set()).add(tensor.shape[0])
    stored: dict[str, int] = {}
    for tensor in plain.storage:
        stored[_storage_path(tensor.name)] = stored.get(_storage_path(tensor.name), 0) + tensor.elements
    paths_ = paths
    mtp_note = ""
    if place is not None and any(p.startswith("mtp/") for p in found):  # the checkpoint stores the MTP module
        module = place.module  # type: ignore[attr-defined]
        for component in module.components:
            path = _shared(component.path, names.shared) if component.path.count("/") > 1 else component.path
            formula[path] = formula.get(path, 0) + component.count
        mtp_note = _mtp_note(module)
    parts_note = ""
    notes = {}
    if part_of is not None:  # each part's tensors (its modules) against its count, whether the checkpoint has them
        for name, part in part_of.parts.items():  # type: ignore[attr-defined]
            path, count = f"parts/{name}", part.model.counts.total
            formula[path] = formula.get(path, 0) + count
            if found.get(path, 0) != count:
                notes[path] = part_note(part, part_of.modules[name], count, found.get(path, 0), "the checkpoint")
        parts_note = (
            "the formula is the whole model: each part's tensors (its modules) are set against its count (parts/<name>)"
        )
    paths = [*formula, *sorted(set(found) - set(formula))]
    checks = tuple(
        ComponentCheck(
            p,
            formula.get(p, 0),
            found.get(p, 0),
            notes.get(p) or _note(p, formula.get(p, 0), found.get(p, 0), model, rows),
        )
        for p in paths
    )
    storage_note = "quantisation storage, not parameters"
    checks += tuple(ComponentCheck(p, 0, n, storage_note, storage=True) for p, n in sorted(stored.items()))
    note = ""
    stored_groups: tuple[tuple[str, int], ...] = ()
    if plain.schemes or plain.storage:
        stored_groups = stored_bytes(original, lambda name: component_path(name, layers, paths_))
        order = {c.path: i for i, c in enumerate(checks)}
        stored_groups = tuple(sorted(stored_groups, key=lambda group: order.get(group[0], len(order))))
        schemes = "; ".join(plain.schemes) or "quantisation storage tensors"
        note = (
            f"quantised checkpoint: {schemes}; checkpoint total = the logical parameters the packed weights hold; "
            f"{sum(stored.values()):,} elements of quantisation storage listed separately (quantization/*)"
        )
    return Verification(
        model=(model.whole_name or model.name) if part_of is not None else model.name,
        source=printable(source),
        mode=mode,
        formula_total=sum(formula.values()) if mtp_note or parts_note else model.counts.total,
        checkpoint_total=sum(t.elements for t in plain.tensors),
        components=checks,
        unmapped=tuple(unmapped),
        note="; ".join(n for n in (note, mtp_note, parts_note) if n),
        stored=stored_groups,
    )


def part_name(role: str) -> str:
    """A part's ``--part`` name from its role: ``vision tower`` -> ``vision``, ``audio projector`` ->
    ``audio_projector``."""
    return role.removesuffix(" tower").replace(" ", "_")


_TOWER_MODULES = ("vision_tower", "vision_model", "visual", "audio_tower")
_PROJECTOR_MODULES = ("multi_modal_projector", "mm_projector")
"""The usual top-level modules of a composite's first tower and of its projector (transformers 5's
``model.vision_tower``, Qwen-VL's ``visual``, Qwen2-Audio's ``audio_tower``): where a composite's record names no
``modules``, a composite without other towers or ``parts_modules`` keeps its parts' tensors in these."""


def part_modules(model: Model) -> dict[str, tuple[str, ...]]:
    """The top-level modules of the checkpoint that hold each part of a composite, by the part's ``--part`` name:
    the record's ``modules``, else the usual ones (:data:`_TOWER_MODULES`, :data:`_PROJECTOR_MODULES`) for a
    composite whose parts are one tower and its projector; empty where neither says."""
    composite = getattr(model, "composite", None)
    parts = getattr(model, "parts", ())
    if composite is None or not parts:
        return {}
    if composite.modules:
        return dict(composite.modules)
    if composite.towers or composite.parts_modules:
        return {}
    usual = {}
    for part in parts:
        usual[part_name(part.role)] = _PROJECTOR_MODULES if part.role == "projector" else _TOWER_MODULES
    return usual


def part_places(model: Model) -> Any:
    """A function giving the ``parts/<name>`` path of a tensor of one of a composite's parts (None for any other
    tensor), by the top-level module its name starts with (after an optional ``model.``) and :func:`part_modules`;
    with the parts by name as its ``parts`` attribute and their modules as ``modules``. None for a model whose parts'
    modules nothing names, or with no part counted."""
    parts = {part_name(part.role): part for part in getattr(model, "parts", ())}
    modules = {name: found for name, found in part_modules(model).items() if name in parts}
    if not modules:
        return None
    owner = {module: name for name, found in modules.items() for module in found}

    def place(tensor: str) -> str | None:
        names = tensor.split(".")
        # a part's own parameter sits right under model. (DeepSeek-VL hybrid's model.high_res_vision_alpha)
        top = names[1] if names[0] == "model" and len(names) > 1 and names[1] in owner else names[0]
        name = owner.get(top)
        if name is None:
            return None
        buffers = parts[name].model.architecture.checkpoint.buffers
        saved = next((ending for ending in buffers if _ends(tensor, ending)), None)
        return f"parts/{name}/buffer/{saved}" if saved is not None else f"parts/{name}"

    place.parts = parts  # type: ignore[attr-defined]
    place.modules = modules  # type: ignore[attr-defined]
    return place


def part_note(part: Any, modules: tuple[str, ...], formula: int, checkpoint: int, where: str) -> str:
    """Why a part's tensors in a checkpoint differ from its count: none of them there, fewer, or more."""
    held = ", ".join(modules)
    if not checkpoint:
        return (
            f"missing: {where} holds none of the {part.role}'s tensors (modules {held}), {formula:,} parameters "
            "(a language-model-only export, or a shard not downloaded?)"
        )
    if checkpoint < formula:
        return f"{formula - checkpoint:,} of the {part.role}'s {formula:,} parameters are missing from {where}"
    return f"{where} holds {checkpoint - formula:,} more in the {part.role}'s modules ({held}) than its count"


def _mtp_note(module: Any, where: str = "its tensors are the mtp/ rows") -> str:
    return (
        f"the checkpoint stores the MTP module ({module.key} = {module.layers}, {module.total:,} parameters), which "
        f"transformers does not build: {where}, counted with the record's MTP formula and included in the formula "
        "total"
    )


def _mtp_places(model: Model) -> Any:
    """A function giving the ``mtp/`` path of a tensor of the checkpoint's MTP module (None for any other tensor),
    with the module as its ``module`` attribute; None when the model's record describes no MTP module or its config
    declares none."""
    if getattr(model, "mtp_config", None) is None:  # the record describes none (the compiled path reads no other)
        return None
    from .formulas import mtp

    module = mtp.module(model)
    if module is None:
        return None
    names = mtp.tensor_names(module, model.values)
    decoder = module.decoder
    shared = decoder.architecture.checkpoint.shared
    layered = frozenset(_shared(t.path, shared) for t in decoder.terms if t.layers != 1)
    own_names = {**decoder.architecture.checkpoint.names, **module.spec.names}  # the MTP layer's names first
    inner = Paths(layered, layered, {e: _shared(p, shared) for p, e in own_names.items()})

    def place(name: str) -> str | None:
        own, rest = names.match(name)
        if own is not None:
            return own
        if rest is None:
            return None
        path = component_path(f"model.layers.0.{rest}", 1, inner)
        return f"mtp/{path}" if path is not None else "mtp/other"

    place.module = module  # type: ignore[attr-defined]
    return place


def verify_index(model: Model, path: Path, dtype_name: str | None, config_dtype: str | None) -> Verification:
    """``metadata.total_size`` / bytes per element of the checkpoint's dtype, against the formula's total (with the
    MTP module's parameters when the index lists its tensors)."""
    index = read_index(path)
    size = total_size(path, index)
    name = dtype_name or config_dtype
    if name is None:
        raise LlmcountError(f"{path}: the config names no dtype; pass --dtype")
    name = dtype(name)
    bits = BITS[name]
    if size * 8 % bits:
        raise LlmcountError(
            f"{path}: total_size {size:,} is not a whole number of {name} elements: a mixed-dtype checkpoint? "
            "verify its safetensors headers instead"
        )
    checkpoint = size * 8 // bits
    from .quant.index import explain, stored_parts

    note = f"metadata.total_size {size:,} bytes ({gb_gib(size)}) at {bits} bits per element ({name}): "
    note += "assumes every tensor is stored in that dtype"
    names = list(index["weight_map"])
    formula, checks = model.counts.total, []
    place = _mtp_places(model)
    listed = [n for n in names if place(n) is not None] if place is not None else []
    if listed:  # the index lists the MTP module: the formula counts it, and the difference it makes is said
        module = place.module  # type: ignore[union-attr]
        formula += module.total
        names = [n for n in names if place(n) is None]
        checks.append(ComponentCheck("mtp", module.total, module.total, _mtp_index_note(module)))
        note += f"; {_mtp_note(module, f'the index lists its {len(listed)} tensors')}"
    parts, names = stored_parts(model, names, 1, name)  # a composite's parts, each listed in the index or missing
    formula += sum(c.formula for c in parts)
    checks += parts
    bias = 32 // bits if 32 % bits == 0 else None
    biases = [n for n in listed if n.endswith("e_score_correction_bias")]
    values = named(model)
    if biases and bias is not None and "n" in values:  # the MTP layer's own routing biases, (n,) float32
        stored = len(biases) * values["n"] * bias
        why = f"{len(biases)} routing-bias buffer(s) e_score_correction_bias of the MTP module, (n,) float32: "
        why += "not parameters"
        checks.append(ComponentCheck("mtp/buffer/e_score_correction_bias", 0, stored, why))
        formula_rest = formula + stored
    else:
        formula_rest = formula
    for check in _kept_float32(model, names, bits, name):
        checks.append(check)
        formula_rest += check.checkpoint
        note += f", but {check.path.removesuffix(' (float32)')}, which the record says is stored in float32"
    missing = sum(c.formula - c.checkpoint for c in parts)  # a part the index lists no tensor of: its row says so
    checks += explain(model, names, checkpoint - formula_rest + missing, 1, bias, name)
    return Verification(
        model=(model.whole_name or model.name) if parts else model.name,
        source=printable(str(path)),
        mode="index",
        formula_total=formula,
        checkpoint_total=checkpoint,
        components=tuple(checks),
        note=note,
    )


def _kept_float32(model: Model, names: list[str], bits: int, dtype_name: str) -> list[ComponentCheck]:
    """The paths the record says the published checkpoint stores in float32 whatever its dtype (``[checkpoint]
    float32``), where the index lists their tensors: the elements of ``dtype_name`` they take beyond their count
    (a float32 value is 32 / bits of them)."""
    kept = model.architecture.checkpoint.float32
    if not kept or bits >= 32 or 32 % bits:
        return []
    counts: dict[str, int] = {}
    layered: set[str] = set()
    for term, component in zip(model.terms, model.counts.components, strict=True):
        counts[component.path] = counts.get(component.path, 0) + component.count
        if term.layers != 1:
            layered.add(component.path)
    own = model.architecture.checkpoint
    known = frozenset(counts)
    paths = Paths(known, frozenset(layered), dict(own.names.items()), own.buffers, claimed(names, known))
    checks = []
    for path in kept:
        listed = [n for n in names if component_path(n, named(model)["N"], paths) == path]
        if not listed or not counts.get(path):
            continue
        extra = counts[path] * (32 // bits - 1)
        note = (
            f"{len(listed)} tensors ({listed[0]} ...) the published checkpoint stores in float32 (the record's "
            f"[checkpoint] float32): {counts[path]:,} parameters at 4 bytes, {extra * bits // 8:,} bytes more than "
            f"{dtype_name}"
        )
        checks.append(ComponentCheck(f"{path} (float32)", 0, extra, note))
    return checks


def _mtp_index_note(module: Any) -> str:
    return (
        f"the MTP module the index lists: {module.total:,} parameters ({module.key} = {module.layers}), which "
        "transformers does not build; what total_size holds beyond it and the rest is named below"
    )


def _quant(config: Any, source: str) -> Any:
    """The config's quantisation scheme (:mod:`llmcount.quant`), or None."""
    from .quant.config import read_quant

    return read_quant(config, source)


def _read(config: Any, source: str, name: str, quantised_index: bool) -> Any:
    """The model verify compares: read by the compiled path where it takes the config (no sympy:
    :func:`llmcount.plain_verify.read`), else by the sympy path, which words every refusal. ``quantised_index``:
    ``--index`` was given, whose bytes a quantisation scheme's plan predicts through the sympy path."""
    from .plain_verify import read

    model = read(config, source, name)
    if model is not None and not (quantised_index and _quant(config, source) is not None):
        return model
    from .formulas.config import read_config

    return read_config(config, source, name)


def verify(
    spec: str,
    index: str | None = None,
    checkpoint: str | None = None,
    hub: bool = False,
    dtype_name: str | None = None,
) -> Verification:
    """Verify the model ``spec`` names against: ``index`` (total_size), ``checkpoint`` (a folder, file or index
    whose headers are read), the Hub (``hub``), or, when ``spec`` is a folder, its own safetensors."""
    if dtype_name is not None:
        dtype_name = dtype(dtype_name)
    name, source, config = resolve(spec)
    model = _read(config, source, name, quantised_index=index is not None)
    if index is not None:
        from .quant.config import read_quant

        quant = read_quant(config, source)
        if quant is not None:
            from .quant.index import verify_index as verify_stored

            return verify_stored(model, user_path(index, "index"), quant, dtype_name)
        return verify_index(model, user_path(index, "index"), dtype_name, model.dtype)
    if hub:
        preset = find(spec)
        if preset is not None and not preset.hub_id:
            raise LlmcountError(f"{spec}: a reconstruction from its paper, no checkpoint on the Hub to verify")
        repo_id = preset.hub_id if preset else spec
        return compare(model, read_hub(repo_id), f"{repo_id} (Hub headers)", "hub", _quant(config, source))
    if checkpoint is None:
        if kind(user_path(spec, "model"), "model") != "folder":
            raise LlmcountError(
                f"{spec}: nothing to verify against: give a folder with safetensors, --checkpoint PATH, "
                "--index FILE or --hub"
            )
        checkpoint = spec
    path = user_path(checkpoint, "checkpoint")
    loaded = load_checkpoint(path)
    result = compare(model, loaded.tensors, str(path), "headers", _quant(config, source))
    if loaded.ignored:
        names = ", ".join(f.name for f in loaded.ignored)
        note = f"not counted: {names}, the same weights again in Mistral's own format"
        result = dataclasses.replace(result, note="; ".join(n for n in (result.note, note) if n))
    return result
