"""Input files, read defensively: the paths users type, and the one strict JSON reader behind config.json,
safetensors indexes and safetensors headers.

Hostile files are refused with one LlmcountError naming the file and the problem, quickly and in bounded memory:
only regular files are opened (a device, FIFO or folder is refused from its ``stat``, before any ``open`` that
could block), at most :data:`MAX_BYTES`; then the text must be UTF-8 JSON with at most :data:`MAX_VALUES` values
and :data:`MAX_CONTAINERS` arrays and objects, nested at most :data:`MAX_DEPTH` levels, integers of at most
:data:`MAX_DIGITS` digits, finite numbers (no ``NaN``, ``Infinity``, ``1e999``), no key twice in one object and no
unpaired ``\\u`` surrogate. Every rule holds for the whole document, under keys llmcount never reads too, but one: a
config is read as transformers reads it (Python's ``json``), so ``NaN``, ``Infinity`` and ``-Infinity`` (and a number
too large for a float, which json reads as infinity) are read as floats with ``constants=True``; transformers' own
configs hold them (``time_step_limit: [0.0, Infinity]``), and the config reader refuses one only in a key it reads,
by name. Depth is checked after parsing (a RecursionError past ~1000 levels is caught): a bracket pre-scan that skips
strings cost more than the parse itself on a 100 MB index (1.5 s against 0.3 s).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import IO, Any

from .errors import LlmcountError

MAX_BYTES = 100_000_000  # a config, an index: far larger than any real one (the biggest indexes are ~10 MB)
MAX_DIGITS = 100  # an integer longer than this is not a size, and int() of a huge one is quadratic
MAX_DEPTH = 64  # real configs nest 3 levels; json's recursion would fail near 1000
MAX_CONTAINERS = 500_000  # arrays and objects: a header of 100k tensors has 300k
MAX_VALUES = 1_000_000  # "," and ":" in the raw text (an over-count): a header of 100k tensors has 900k


def user_path(spec: str, what: str = "file") -> Path:
    """The path a user typed, ``~`` expanded; one LlmcountError for a name no file can have."""
    if not spec:
        raise LlmcountError(f"the {what} name is empty")
    if "\0" in spec:
        raise LlmcountError(f"{spec!r}: not a valid {what} name: it contains a NUL byte")
    try:
        return Path(spec).expanduser()
    except RuntimeError:  # ~nosuchuser
        user = spec[1:].split("/", 1)[0].split(os.sep, 1)[0]
        raise LlmcountError(f"{spec}: no user {user!r} to expand ~{user} for the {what}") from None


def kind(path: Path, what: str = "file", action: str = "read") -> str | None:
    """``"file"``, ``"folder"``, ``"other"`` (device, FIFO, socket) or None when nothing is there; a path the system
    refuses (a name too long, a folder that may not be entered, a file used as a folder, a symlink loop) is an
    LlmcountError saying it cannot ``action`` the ``what``."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        file = next((p for p in reversed(path.parents) if os.path.isfile(p)), path.parent)
        raise LlmcountError(f"{path}: cannot {action} the {what}: {file} is a file, not a folder") from None
    except OSError as exc:
        raise LlmcountError(f"{path}: cannot {action} the {what}: {exc.strerror or exc}") from None
    except ValueError:  # a NUL byte in the name
        raise LlmcountError(f"{path!r}: cannot {action} the {what}: the name contains a NUL byte") from None
    return "file" if stat.S_ISREG(mode) else "folder" if stat.S_ISDIR(mode) else "other"


def open_regular(path: Path | str, what: str = "file") -> tuple[IO[bytes], int]:
    """An open binary file and its size; refuse anything but a regular file, without blocking on it.

    ``stat`` first (a FIFO or a device is never opened), then ``open`` with ``O_NONBLOCK`` and ``fstat`` again:
    a FIFO swapped in between the two is still refused, and opening it cannot block."""
    found = kind(Path(path), what)
    if found is None:
        raise LlmcountError(f"{path}: cannot read the {what}: no such file")
    if found == "file":
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode):
                return os.fdopen(fd, "rb"), info.st_size
            os.close(fd)
        except OSError as exc:
            raise LlmcountError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
        found = "other"
    if found == "folder":
        raise LlmcountError(f"{path}: is a folder, not a {what}")
    raise LlmcountError(f"{path}: not a regular file (a device, FIFO or socket); cannot read it as a {what}")


def read_bytes(path: Path | str, what: str = "file", limit: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes."""
    file, size = open_regular(path, what)
    with file:
        if size > limit:
            raise LlmcountError(f"{path}: {size:,} bytes, over the limit of {limit:,} for a {what}")
        try:
            raw = file.read(limit + 1)
        except OSError as exc:
            raise LlmcountError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    if len(raw) > limit:  # it grew since the stat
        raise LlmcountError(f"{path}: over the limit of {limit:,} bytes for a {what}")
    return raw


def read_json(path: Path | str, what: str = "JSON file", constants: bool = False) -> Any:
    """A JSON file, read strictly (see the module's docstring); ``constants``: NaN and ±Infinity are floats."""
    raw = read_bytes(path, what)
    text = json_text(raw, str(path))
    del raw
    return parse_text(text, str(path), constants)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename, so that a reader never
    sees half a file; the temporary file is removed when the write fails (OSError propagates)."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def short(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to about ``limit`` characters: a name or value from a hostile file can be megabytes long."""
    if isinstance(value, (list, dict, str)) and len(value) > limit:
        value = value[:limit] if isinstance(value, (list, str)) else dict(list(value.items())[:4])
        return repr(value)[:limit] + "…"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


_INVISIBLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def printable(text: str) -> str:
    """A name taken from input (a folder, a file, a config) as it is shown in every output: each control character,
    line or paragraph separator, zero-width or bidirectional control as a visible escape (``\\n``, ``\\x1b``,
    ``\\u202e``), so that a name is one line and can neither drive a terminal nor reorder or break the text around
    it; the rest, markup characters included, is for each output format's own escaping."""
    return _INVISIBLE.sub(_visible, text)


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if char in named:
        return named[char]
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


class _Refused(Exception):
    """Raised by the decoder hooks; turned into an LlmcountError with the place it points at."""

    def __init__(self, message: str, token: str, nth: int = 1) -> None:
        super().__init__(message)
        self.token, self.nth = token, nth  # the nth occurrence of token in the text is the culprit


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise _Refused(f"an integer of {digits:,} digits (at most {MAX_DIGITS} are read)", text[:MAX_DIGITS])
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_DIGITS:
        raise _Refused(f"a number of {len(text):,} characters (at most {MAX_DIGITS} are read)", text[:MAX_DIGITS])
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text} is out of range (it would be read as infinity)", text)
    return value


def _constant(text: str) -> float:
    raise _Refused(f"{text} is not a JSON number (NaN and Infinity are refused)", text)


def _float_or_infinity(text: str) -> float:
    """A JSON number as Python's json reads it: a number too large for a float is infinity."""
    if len(text) > MAX_DIGITS:
        raise _Refused(f"a number of {len(text):,} characters (at most {MAX_DIGITS} are read)", text[:MAX_DIGITS])
    return float(text)


_CONSTANTS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(f"key {short(key)} appears twice in one object", json.dumps(key), nth=2)
            seen.add(key)
    return obj


_DECODER = json.JSONDecoder(
    parse_int=_int, parse_float=_float, parse_constant=_constant, object_pairs_hook=_object, strict=True
)
_LENIENT_DECODER = json.JSONDecoder(  # a config, as transformers reads it: NaN and ±Infinity are floats
    parse_int=_int,
    parse_float=_float_or_infinity,
    parse_constant=_CONSTANTS.__getitem__,
    object_pairs_hook=_object,
    strict=True,
)


def _where(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    return f"line {line}, column {index - text.rfind(chr(10), 0, index)}"


def parse_json(raw: bytes, where: str, constants: bool = False) -> Any:
    """Strict JSON from UTF-8 bytes; ``where`` (a file, a file's header) starts every message; ``constants``: NaN
    and ±Infinity are floats."""
    return parse_text(json_text(raw, where), where, constants)


def json_text(raw: bytes, where: str) -> str:
    """The text of a JSON document, after the checks that need only counting bytes (drop ``raw`` after this:
    a 100 MB document should not be held as bytes, text and values at once)."""
    values = raw.count(b",") + raw.count(b":")  # inside strings too: an over-count, at C speed
    if values > MAX_VALUES:
        raise LlmcountError(f"{where}: too many JSON values (over {MAX_VALUES:,}); not a config, index or header")
    if raw.count(b"[") + raw.count(b"{") > MAX_CONTAINERS:
        raise LlmcountError(f"{where}: too many JSON arrays and objects (over {MAX_CONTAINERS:,})")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LlmcountError(f"{where}: not UTF-8 text (byte {exc.start:,} is invalid)") from None


def parse_text(text: str, where: str, constants: bool = False) -> Any:
    """Strict JSON from text that passed :func:`json_text` (with ``constants``, NaN and ±Infinity are floats)."""
    if not text.strip():
        raise LlmcountError(f"{where}: empty; expected a JSON object")
    if text.startswith("\ufeff"):  # transformers' json.loads refuses it too
        raise LlmcountError(f"{where}: starts with a byte-order mark (BOM); save it as UTF-8 without one")
    try:
        value = (_LENIENT_DECODER if constants else _DECODER).decode(text)
    except json.JSONDecodeError as exc:
        raise LlmcountError(f"{where}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except _Refused as exc:
        at = -1
        for _ in range(exc.nth):
            at = text.find(exc.token, at + 1)
        place = f" at {_where(text, at)}" if at >= 0 else ""
        raise LlmcountError(f"{where}: invalid JSON{place}: {exc}") from None
    except RecursionError:
        raise LlmcountError(f"{where}: JSON nested more than {MAX_DEPTH} levels deep") from None
    if (text.count("[") + text.count("{") > MAX_DEPTH) and _depth(value) > MAX_DEPTH:
        raise LlmcountError(f"{where}: JSON nested more than {MAX_DEPTH} levels deep")
    if _SURROGATE.search(text):  # rare: only then look for one left unpaired, which could never be printed
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            match = _LONE_SURROGATE.search(text)
            place = f" at {_where(text, match.start())}" if match else ""
            raise LlmcountError(f"{where}: invalid JSON{place}: a \\u escape of an unpaired surrogate") from None
    return value


_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F]"
)


def _depth(value: Any) -> int:
    """How many arrays and objects deep ``value`` nests, level by level without recursion; stops past MAX_DEPTH."""
    depth, level = 0, [value] if isinstance(value, (dict, list)) else []
    while level and depth <= MAX_DEPTH:
        depth += 1
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, (dict, list))
        ]
    return depth
