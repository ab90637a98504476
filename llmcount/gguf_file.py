"""GGUF files (llama.cpp's format), read from their header alone: the metadata, and every tensor's ggml type,
logical shape, element count and exact stored bytes.

Layout (ggml ``docs/gguf.md``; ``ggml/src/gguf.cpp`` of llama.cpp 0c1e57098, the commit the ``gguf`` package
0.19.0 ships with): the magic ``GGUF``, a uint32 version (2 or 3), uint64 tensor and key-value counts, the key-values
(a string key, a uint32 value type, the value; an array is a uint32 element type, a uint64 length and the elements),
then per tensor a string name, a uint32 dimension count (at most 4), uint64 dimensions ``ne`` (innermost first), a
uint32 ggml type and a uint64 offset into the data section, which starts at the next multiple of
``general.alignment`` (32 by default). A tensor of type t holds ``prod(ne) / block(t)`` blocks of ``bytes(t)`` each,
``ne[0]`` a multiple of the block size; each tensor's offset is the sum of the earlier tensors' sizes, each padded
to the alignment (gguf.cpp refuses any other offset). Block sizes and bytes are the ``gguf`` package's
``GGML_QUANT_SIZES`` and its type ids ``GGMLQuantizationType`` (llama.cpp's own Python reader and writer).

The header is parsed here with the package's constants rather than with ``gguf.GGUFReader``: the reader maps the
whole file and walks every count the file states without bounds (an array length of 2^60 loops for ever), so a
hostile file could hang it. Here every count is bounded by the bytes left in the file before anything is read, the
file is read in chunks (never mapped), strings arrays (the tokenizer's vocabulary) are walked without being kept,
and each refusal is one LlmcountError naming the file and the field. A model split into files
``NAME-00001-of-00003.gguf`` (llama.cpp's ``gguf-split``) is read as one: the first file's metadata, every file's
tensors.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import LlmcountError
from .files import kind, open_regular, short, user_path

MAGIC = b"GGUF"
VERSIONS = (2, 3)  # version 1 (uint32 counts) was replaced in 2023; gguf.cpp reads 2 and 3 only
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_NAME = 64  # GGML_MAX_NAME: gguf.cpp refuses a tensor name of 64 bytes or more
MAX_KEY = 65_535  # the spec's limit on a key's length
MAX_TENSORS = 1_000_000  # DeepSeek-V3's files hold ~1,100 tensors each
MAX_KV = 100_000  # real files hold a few dozen keys
MAX_ARRAY = 1 << 24  # elements of one array (the largest vocabularies are ~262k tokens, merges ~500k)
MAX_STRINGS = 1 << 20  # strings walked over the whole header (Llama 3: 128k tokens + 280k merges): bounds its time
MAX_KEPT_STRING = 1 << 20  # a longer string value (a chat template is ~10 KB) is skipped, its length kept
MAX_KEPT_ARRAY = 1 << 16  # a longer array's values are not kept (only per-layer lists are read)
MAX_KEPT_VALUES = 1 << 20  # array values kept over the whole header: the bound on the memory a header can take
MAX_SPLITS = 1_000
CHUNK = 1 << 20
SPLIT_NAME = re.compile(r"^(?P<stem>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")

# GGUFValueType -> struct format, for the scalar types (gguf.constants.GGUFValueType; gguf.cpp's type sizes)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_U64 = struct.Struct("<Q")


@dataclass(frozen=True)
class LongArray:
    """An array value too long to keep (a vocabulary): its element type's name and its length."""

    type: str
    length: int


@dataclass(frozen=True)
class GgufTensor:
    """One tensor of a GGUF file as its header declares it."""

    name: str
    type: str  # the ggml type's name, as gguf.GGMLQuantizationType names it: F32, BF16, Q4_K, IQ4_XS, MXFP4 ...
    type_id: int
    ne: tuple[int, ...]  # ggml's dimensions, innermost first
    nbytes: int  # stored bytes: blocks x bytes per block
    offset: int  # from the start of its file's data section
    file: str = ""  # the split file that holds it (its name)

    @property
    def shape(self) -> tuple[int, ...]:
        """The logical shape, outermost first as torch orders it: (out, in) for a linear layer's weight."""
        return tuple(reversed(self.ne))

    @property
    def elements(self) -> int:
        count = 1
        for n in self.ne:
            count *= n
        return count


@dataclass(frozen=True)
class GgufFile:
    """A GGUF model: its metadata (the first split's), its tensors (every split's) and where they came from."""

    path: str
    version: int
    metadata: dict[str, Any]
    tensors: tuple[GgufTensor, ...]
    files: tuple[str, ...] = ()
    file_bytes: int = 0  # the size of every file together
    data_bytes: int = 0  # the data sections, alignment padding included
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def architecture(self) -> str | None:
        arch = self.metadata.get("general.architecture")
        return arch if isinstance(arch, str) else None

    @property
    def tensor_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)


def is_gguf(spec: str) -> bool:
    """Whether what the user typed names a GGUF file (by its extension; the file is checked when read)."""
    return isinstance(spec, str) and spec.lower().endswith(".gguf")


def gguf_package(what: str = "reading a GGUF file"):
    """The gguf package (llama.cpp's own reader and type tables); LlmcountError with the install hint when it is not
    installed."""
    try:
        import gguf
    except ImportError:
        raise LlmcountError(f"{what} needs the gguf package (pip install 'llmcount[gguf]')") from None
    return gguf


@lru_cache(maxsize=1)
def _quant_sizes() -> tuple[dict[int, tuple[str, int, int]], str]:
    """ggml type id -> (name, elements per block, bytes per block), from the gguf package, and its version. Loaded
    when a header's tensor infos are checked, after its magic, counts and key-values: a hostile header is refused
    before the gguf package (and numpy) is imported."""
    gguf = gguf_package()
    from importlib import metadata

    sizes = {
        int(t): (t.name, *gguf.GGML_QUANT_SIZES[t]) for t in gguf.GGMLQuantizationType if t in gguf.GGML_QUANT_SIZES
    }
    try:
        version = metadata.version("gguf")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source checkout of gguf-py
        version = "unknown"
    return sizes, version


class _Cursor:
    """Reads a file forward in chunks; every read names the field it is for, so a short file says where it ends."""

    def __init__(self, file: Any, size: int, path: str) -> None:
        self.file, self.size, self.path = file, size, path
        self.pos = 0
        self.buf = b""
        self.base = 0

    def left(self) -> int:
        return self.size - self.pos

    def _need(self, n: int, what: str) -> None:
        if n > self.size - self.pos:
            raise LlmcountError(
                f"{self.path}: truncated GGUF header: the file ends inside {what} (byte {self.pos:,} of {self.size:,})"
            )
        if self.pos + n > self.base + len(self.buf) or self.pos < self.base:
            try:
                self.file.seek(self.pos)
                self.buf = self.file.read(max(n, CHUNK))
            except OSError as exc:
                raise LlmcountError(f"{self.path}: cannot read: {exc.strerror or exc}") from None
            self.base = self.pos
            if len(self.buf) < n:  # the file shrank since the stat
                raise LlmcountError(f"{self.path}: truncated GGUF header: the file ends inside {what}")

    def unpack(self, fmt: str, what: str) -> Any:
        n = struct.calcsize(fmt)
        self._need(n, what)
        (value,) = struct.unpack_from(fmt, self.buf, self.pos - self.base)
        self.pos += n
        return value

    def take(self, n: int, what: str) -> bytes:
        self._need(n, what)
        at = self.pos - self.base
        self.pos += n
        return self.buf[at : at + n]

    def skip(self, n: int, what: str) -> None:
        if n > self.size - self.pos:
            raise LlmcountError(
                f"{self.path}: truncated GGUF header: the file ends inside {what} (byte {self.pos:,} of {self.size:,})"
            )
        self.pos += n

    def string(self, what: str, limit: int | None = None) -> str | None:
        """A GGUF string (uint64 length, UTF-8 bytes); None (skipped) when longer than ``limit``."""
        length = self.unpack("<Q", f"the length of {what}")
        if length > self.left():
            raise LlmcountError(
                f"{self.path}: {what}: a string of {length:,} bytes, past the end of the file ({self.left():,} left)"
            )
        if limit is not None and length > limit:
            self.skip(length, what)
            return None
        raw = self.take(length, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise LlmcountError(f"{self.path}: {what} is not UTF-8 text") from None


def _bounded(path: str, count: int, what: str, limit: int, left: int, least: int) -> None:
    """A count the file states: at most ``limit`` and at most what the bytes left can hold (``least`` bytes each)."""
    if count > limit or count * least > left:
        raise LlmcountError(
            f"{path}: {what} is {count:,}: "
            + (
                f"over the limit of {limit:,}"
                if count > limit
                else f"the {left:,} bytes left in the file cannot hold that many"
            )
        )


class _Header:
    """Parse one file's header with a cursor; ``strings`` counts the strings walked and the array values kept so far
    (all splits together)."""

    def __init__(self, path: str, cursor: _Cursor, strings: list[int]):
        self.path, self.c, self.strings = path, cursor, strings

    def value(self, vtype: int, key: str) -> Any:
        what = f"the value of key {short(key)}"
        if vtype in _SCALARS:
            return self.c.unpack(_SCALARS[vtype], what)
        if vtype == _STRING:
            value = self.c.string(what, MAX_KEPT_STRING)
            return value if value is not None else LongArray("string", 0)
        if vtype == _ARRAY:
            etype = self.c.unpack("<I", f"the element type of key {short(key)}")
            length = self.c.unpack("<Q", f"the length of key {short(key)}")
            if etype == _ARRAY:
                raise LlmcountError(f"{self.path}: key {short(key)}: an array of arrays (gguf.cpp reads none)")
            if etype != _STRING and etype not in _SCALARS:
                raise LlmcountError(f"{self.path}: key {short(key)}: unknown array element type {etype}")
            least = 8 if etype == _STRING else struct.calcsize(_SCALARS[etype])
            _bounded(self.path, length, f"the length of array {short(key)}", MAX_ARRAY, self.c.left(), least)
            if etype == _STRING:
                return self.strings_array(length, key)
            if length > MAX_KEPT_ARRAY or self.strings[1] + length > MAX_KEPT_VALUES:
                self.c.skip(length * least, what)
                return LongArray(_type_name(etype), length)
            self.strings[1] += length
            raw = self.c.take(length * least, what)
            return list(struct.unpack(f"<{length}{_SCALARS[etype][1]}", raw))
        raise LlmcountError(f"{self.path}: key {short(key)}: unknown value type {vtype}")

    def strings_array(self, length: int, key: str) -> Any:
        self.strings[0] += length
        if self.strings[0] > MAX_STRINGS:
            raise LlmcountError(f"{self.path}: more than {MAX_STRINGS:,} strings in the header's arrays")
        if length <= 1024:
            values = [self.c.string(f"entry {i} of key {short(key)}", MAX_KEPT_STRING) for i in range(length)]
            if all(v is not None for v in values):
                return values
            return LongArray("string", length)
        c, unpack = self.c, _U64.unpack_from
        buf, base, off, end = c.buf, c.base, c.pos - c.base, c.size - c.base
        for i in range(length):  # the tight loop of the header: a vocabulary's 262k strings, walked not kept
            if off + 8 > len(buf):
                if off + 8 > end:
                    c.pos = min(base + off, c.size)
                    raise LlmcountError(
                        f"{self.path}: truncated GGUF header: the file ends inside entry {i} of key {short(key)}"
                    )
                c.pos = base + off
                c._need(8, f"entry {i} of key {short(key)}")
                buf, base, off, end = c.buf, c.base, 0, c.size - c.base
            off += 8 + unpack(buf, off)[0]
        c.pos = base + off
        if c.pos > c.size:
            raise LlmcountError(f"{self.path}: truncated GGUF header: the file ends inside key {short(key)}")
        return LongArray("string", length)

    def tensor(self, index: int, alignment_later: bool = True) -> tuple[str, int, tuple[int, ...], int]:
        where = f"tensor {index}"
        length = self.c.unpack("<Q", f"the name length of {where}")
        if length >= MAX_NAME:
            raise LlmcountError(
                f"{self.path}: {where}: a name of {length:,} bytes (gguf.cpp reads at most {MAX_NAME - 1})"
            )
        try:
            name = self.c.take(length, f"the name of {where}").decode("utf-8")
        except UnicodeDecodeError:
            raise LlmcountError(f"{self.path}: {where}: its name is not UTF-8 text") from None
        where = f"tensor {short(name)}"
        n_dims = self.c.unpack("<I", f"the dimension count of {where}")
        if n_dims > MAX_DIMS:
            raise LlmcountError(f"{self.path}: {where}: {n_dims:,} dimensions (ggml has at most {MAX_DIMS})")
        ne = tuple(self.c.unpack("<Q", f"the dimensions of {where}") for _ in range(n_dims))
        type_id = self.c.unpack("<I", f"the ggml type of {where}")
        offset = self.c.unpack("<Q", f"the data offset of {where}")
        return name, type_id, ne, offset


def _type_name(vtype: int) -> str:
    names = {0: "uint8", 1: "int8", 2: "uint16", 3: "int16", 4: "uint32", 5: "int32", 6: "float32", 7: "bool"}
    return {8: "string", 10: "uint64", 11: "int64", 12: "float64", **names}.get(vtype, str(vtype))


def _read_one(path: Path, strings: list[int]):
    """``(version, metadata, tensors, data bytes, file size)`` of one GGUF file, checked as gguf.cpp checks it."""
    name = str(path)
    file, size = open_regular(path, "GGUF file")
    with file:
        c = _Cursor(file, size, name)
        magic = c.take(4, "the magic") if size >= 4 else b""
        if magic != MAGIC:
            if size < 4:
                raise LlmcountError(f"{name}: not a GGUF file: {size} bytes, too short for the magic GGUF")
            raise LlmcountError(f"{name}: not a GGUF file: it starts with {magic!r}, not the magic b'GGUF'")
        version = c.unpack("<I", "the version")
        if version not in VERSIONS:
            if version & 0xFFFF == 0 and (version >> 24) in VERSIONS:
                raise LlmcountError(f"{name}: a big-endian GGUF file; only little-endian files are read")
            raise LlmcountError(f"{name}: GGUF version {version}; versions 2 and 3 are read")
        n_tensors = c.unpack("<Q", "the tensor count")
        n_kv = c.unpack("<Q", "the key-value count")
        _bounded(name, n_kv, "the key-value count", MAX_KV, c.left(), 8 + 4 + 1)
        h = _Header(name, c, strings)
        metadata: dict[str, Any] = {}
        for i in range(n_kv):
            key = c.string(f"the name of key {i}", MAX_KEY)
            if key is None:
                raise LlmcountError(f"{name}: key {i}: a name over {MAX_KEY:,} bytes")
            if key in metadata:
                raise LlmcountError(f"{name}: key {short(key)} appears twice")
            vtype = c.unpack("<I", f"the value type of key {short(key)}")
            metadata[key] = h.value(vtype, key)
        _bounded(name, n_tensors, "the tensor count", MAX_TENSORS, c.left(), 8 + 4 + 4 + 8)
        infos = [h.tensor(i) for i in range(n_tensors)]
        alignment = metadata.get("general.alignment", 32)
        if "general.alignment" in metadata and (
            not isinstance(alignment, int)
            or isinstance(alignment, bool)
            or alignment <= 0
            or alignment & (alignment - 1)
        ):
            raise LlmcountError(f"{name}: general.alignment is {short(alignment)}, not a power of two")
        data_start = -(-c.pos // alignment) * alignment if n_tensors else c.pos
        sizes, version_text = _quant_sizes() if infos else ({}, "")
        tensors, seen, expected = [], set(), 0
        for tname, type_id, ne, offset in infos:
            where = f"{name}: tensor {short(tname)}"
            if tname in seen:
                raise LlmcountError(f"{where}: the name appears twice")
            seen.add(tname)
            if type_id not in sizes:
                raise LlmcountError(
                    f"{where}: unknown ggml type id {type_id} (the gguf package {version_text} knows "
                    f"{', '.join(str(t) for t in sorted(sizes))})"
                )
            tname_type, block, type_bytes = sizes[type_id]
            elements = 1
            for n in ne:
                elements *= n
            if elements >= 1 << 63:
                raise LlmcountError(f"{where}: dimensions {list(ne)} overflow a 64-bit element count")
            if ne and ne[0] % block:
                raise LlmcountError(
                    f"{where}: {tname_type} stores blocks of {block} values, but its first dimension is {ne[0]:,}"
                )
            nbytes = elements // block * type_bytes
            if offset != expected:
                raise LlmcountError(
                    f"{where}: data offset {offset:,}, expected {expected:,} (each tensor follows the one before, "
                    f"padded to {alignment} bytes)"
                )
            if data_start + offset + nbytes > size:
                raise LlmcountError(
                    f"{where}: its {nbytes:,} bytes of data end past the end of the file ({size:,} bytes): truncated?"
                )
            expected = offset + -(-nbytes // alignment) * alignment
            tensors.append(GgufTensor(tname, tname_type, type_id, ne, nbytes, offset, path.name))
    return version, metadata, tensors, expected, size


def split_files(path: Path) -> list[Path]:
    """The files of a split model, given any one of them (``NAME-00002-of-00003.gguf``), in order; ``[path]`` for a
    file that is not a split."""
    match = SPLIT_NAME.match(path.name)
    if not match:
        return [path]
    count = int(match["count"])
    if not 1 <= int(match["no"]) <= count or count > MAX_SPLITS:
        raise LlmcountError(f"{path}: split number {match['no']} of {match['count']} is out of range")
    parts = [path.with_name(f"{match['stem']}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)]
    missing = [p.name for p in parts if kind(p, "GGUF split") is None]
    if missing:
        raise LlmcountError(f"{path}: a split model of {count} files; missing {', '.join(missing[:3])}")
    return parts


@lru_cache(maxsize=8)
def _read_cached(real: str, stamp: tuple[tuple[int, int], ...]) -> GgufFile:
    del stamp  # part of the cache key only: a file rewritten since is read again
    return _read(Path(real))


def read_gguf(spec: str | Path) -> GgufFile:
    """The GGUF file (or split model) ``spec`` names, read from its header(s); cached per file and modification."""
    path = user_path(str(spec), "GGUF file")
    found = kind(path, "GGUF file")
    if found is None:
        raise LlmcountError(f"{path}: no such file")
    if found != "file":
        open_regular(path, "GGUF file")  # refuses a folder, device or FIFO by name
    stamps = []
    for part in split_files(path):  # every file's size and time: a split rewritten or removed is read again
        try:
            info = os.stat(part)
        except OSError as exc:
            raise LlmcountError(f"{part}: cannot read the GGUF file: {exc.strerror or exc}") from None
        stamps.append((info.st_mtime_ns, info.st_size))
    result = _read_cached(os.path.realpath(path), tuple(stamps))
    return result if result.path == str(path) else _renamed(result, str(path))


def check_header(spec: str) -> None:
    """Read the header of the GGUF file ``spec`` names (nothing when it names none), before a command imports the
    records and sympy: a hostile file is refused on the header reader's own cost, and a good one is cached."""
    if is_gguf(spec):
        read_gguf(spec)


def _renamed(found: GgufFile, path: str) -> GgufFile:
    from dataclasses import replace

    return replace(found, path=path)


def _read(path: Path) -> GgufFile:
    parts = split_files(path)
    strings = [0, 0]  # strings walked, array values kept
    metadata: dict[str, Any] = {}
    tensors: list[GgufTensor] = []
    names: dict[str, str] = {}
    version, file_bytes, data_bytes = 0, 0, 0
    for number, part in enumerate(parts, 1):
        v, meta, found, data, size = _read_one(part, strings)
        if number == 1:
            version, metadata = v, meta
        if len(parts) > 1:
            count, no = meta.get("split.count"), meta.get("split.no")
            if count is not None and (count != len(parts) or no != number - 1):
                raise LlmcountError(
                    f"{part}: its split.no {short(no)} and split.count {short(count)} do not fit its name "
                    f"(file {number} of {len(parts)})"
                )
        for tensor in found:
            if tensor.name in names:
                raise LlmcountError(f"{part}: tensor {short(tensor.name)} is also in {names[tensor.name]}")
            names[tensor.name] = part.name
        tensors += found
        file_bytes += size
        data_bytes += data
    if len(parts) > 1:
        stated = metadata.get("split.tensors.count")
        if stated is not None and stated != len(tensors):
            raise LlmcountError(f"{parts[0]}: split.tensors.count is {short(stated)}, the files hold {len(tensors)}")
    return GgufFile(
        path=str(path),
        version=version,
        metadata=metadata,
        tensors=tuple(tensors),
        files=tuple(p.name for p in parts),
        file_bytes=file_bytes,
        data_bytes=data_bytes,
    )
