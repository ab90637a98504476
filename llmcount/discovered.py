"""Records derived at run time from transformers' model code, for a model_type with no bundled record.

``--discover`` asks for it: the maintainer tool in :mod:`llmcount.discover` (which needs torch and transformers)
drafts the record, checks it against transformers on the class defaults and on random configs, and keeps it in
the user cache folder, one file per model_type and transformers version. A draft that is not exact on every
check is refused, never used. The cached record is read like any other record, so the next run needs neither
torch nor transformers.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from .errors import LlmcountError
from .files import read_bytes, write_atomic
from .formulas import records
from .formulas.expressions import RecordError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

HINT = "; `llmcount count --discover` derives a record from transformers' code"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")  # every transformers model_type, and safe as a file name


def available() -> bool:
    """torch and transformers are installed (found, not imported)."""
    return all(importlib.util.find_spec(name) is not None for name in ("torch", "transformers"))


def cache_folder() -> Path:
    """``$LLMCOUNT_CACHE``, else ``$XDG_CACHE_HOME/llmcount``, else ``~/.cache/llmcount``; records below it."""
    root = os.environ.get("LLMCOUNT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "llmcount"
    )
    return Path(root) / "records"


def cached_path(model_type: str, version: str) -> Path:
    return cache_folder() / f"{model_type}@{version}.toml"


def failed_path(model_type: str, version: str) -> Path:
    return cache_folder() / f"{model_type}@{version}.failed"


SEAL = "# sha256 "  # the last line of a cached record: the digest of the text above it (a truncated file fails it)


def sealed(text: str) -> str:
    """``text`` with its digest as the last line, as it is kept in the cache."""
    return f"{text}{SEAL}{hashlib.sha256(text.encode('utf-8')).hexdigest()}\n"


def unsealed(raw: bytes) -> str:
    """The text of a cached record, or ValueError saying why it cannot be trusted (cut short, edited)."""
    text = raw.decode("utf-8")
    body, _, last = text.rstrip("\n").rpartition("\n")
    if not last.startswith(SEAL):
        raise ValueError("it does not end with its digest line (cut short?)")
    if hashlib.sha256((body + "\n").encode("utf-8")).hexdigest() != last[len(SEAL) :].strip():
        raise ValueError("its digest does not match its text (cut short or edited)")
    return body + "\n"


def record(
    model_type: str, source: str, say=lambda text: print(text, file=sys.stderr), rediscover: bool = False
) -> records.Family:
    """The record of ``model_type`` derived from transformers' code: from the cache, or discovered and cached.
    ``say`` is told where the record comes from, in one line. A discovery that failed before is refused with its
    cached reason unless ``rediscover``; a cached record that cannot be trusted is said and discovered again."""
    if not isinstance(model_type, str) or not _NAME.match(model_type):
        raise LlmcountError(f"{source}: model_type {str(model_type)[:60]!r} is not a transformers model_type name")
    if not available():
        raise LlmcountError(
            f"{source}: unsupported model_type {model_type!r}; --discover needs torch and transformers"
            " (pip install 'llmcount[test]')"
        )
    version = importlib.metadata.version("transformers")
    path = cached_path(model_type, version)
    failed = failed_path(model_type, version)
    if not rediscover:
        family = _cached(path, model_type, version, say)
        if family is not None:
            say(f"note: {model_type} is counted with a record discovered from transformers {version} (cached: {path})")
            return family
        reason = _failed_before(failed, model_type, version, say)
        if reason:
            raise LlmcountError(
                f"{source}: discovery of {model_type!r} from transformers {version} failed before: {reason}"
                f" (cached: {failed}; --rediscover tries again)"
            )
    return _discover(model_type, version, path, source, say)


def _cached(path: Path, model_type: str, version: str, say) -> records.Family | None:
    """The cached record at ``path`` if it is whole, of ``model_type`` and of transformers ``version``; None when
    there is none, or (said in one line) when it cannot be trusted."""
    if not os.path.lexists(path):
        return None
    try:  # whatever is there (a FIFO, a link to a device) is read as a record or ignored
        raw = read_bytes(path, "cached record", records.MAX_RECORD_BYTES)
        text = unsealed(raw)
        family = records.parse_record(tomllib.loads(text), str(path))
        if family.name != model_type:
            raise ValueError(f"it is a record of model_type {family.name!r}, not {model_type!r}")
        if family.checked_version != version:
            raise ValueError(f"it was discovered from transformers {family.checked_version}, not {version}")
    except (LlmcountError, RecordError, ValueError, RecursionError) as error:  # TOMLDecodeError, UnicodeDecodeError
        say(f"note: ignoring the cached record {path}: {_short(error)}; discovering {model_type} again")
        return None
    return family


def _failed_before(path: Path, model_type: str, version: str, say) -> str:
    """The reason a discovery of ``model_type`` from transformers ``version`` failed, from the cache; "" when none
    is cached or (said in one line) the file is not one this module wrote."""
    if not os.path.lexists(path):
        return ""
    try:
        text = read_bytes(path, "cached failure", 4096).decode("utf-8")
        head, _, reason = text.strip().partition(": ")
        if head != f"{model_type}@{version}" or not reason or "\n" in reason:
            raise ValueError("not a failure this version of llmcount wrote")
    except (LlmcountError, ValueError) as error:
        say(f"note: ignoring the cached failure {path}: {_short(error)}; discovering {model_type} again")
        return ""
    return reason


def transformers_types() -> frozenset[str] | None:
    """The model_types transformers registers, read from the source of its auto mappings without importing it
    (importing ``CONFIG_MAPPING`` takes seconds); None when the files are not laid out as expected."""
    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "models" / "auto"
    names: set[str] = set()
    for name in ("auto_mappings.py", "configuration_auto.py"):
        try:
            tree = ast.parse((folder / name).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in tree.body:
            if any(isinstance(n, ast.Name) and n.id == "CONFIG_MAPPING_NAMES" for n in ast.walk(node)):
                names.update(_type_config_pairs(node))
    return frozenset(names) if len(names) >= 100 else None


def _type_config_pairs(node: ast.AST):
    """The model_types of the ``(type, "...Config")`` pairs and ``{type: "...Config"}`` entries under ``node``."""
    for child in ast.walk(node):
        if isinstance(child, ast.Tuple) and len(child.elts) == 2:
            pairs = [tuple(child.elts)]
        elif isinstance(child, ast.Dict):
            pairs = list(zip(child.keys, child.values, strict=True))
        else:
            continue
        for key, value in pairs:
            if _text(key) and _text(value).endswith("Config"):
                yield key.value


def _text(node) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _unknown(model_type: str, version: str, source: str, known) -> LlmcountError:
    close = difflib.get_close_matches(model_type, sorted(known), n=3, cutoff=0.6)
    hint = f"; closest: {', '.join(close)}" if close else ""
    return LlmcountError(f"{source}: model_type {model_type!r} is unknown to transformers {version} too{hint}")


def _discover(model_type: str, version: str, path: Path, source: str, say) -> records.Family:
    known = transformers_types()
    if known is not None and model_type not in known:  # refused before importing transformers
        raise _unknown(model_type, version, source, known)
    from transformers import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:
        raise _unknown(model_type, version, source, CONFIG_MAPPING.keys())
    from .discover.core import Discoverer
    from .discover.verify import first_failure, verify

    start = time.monotonic()
    failed = failed_path(model_type, version)
    try:
        discoverer = Discoverer(model_type, log=lambda text: None)
        text = discoverer.run().text
    except Exception as error:  # model code the method cannot express: one line, the reason, kept
        reason = _short(error)
        kept = _keep_failure(failed, model_type, version, reason)
        raise LlmcountError(f"{source}: cannot discover a record for {model_type!r}: {reason} ({kept})") from None
    with tempfile.TemporaryDirectory(prefix="llmcount-") as folder:
        draft = Path(folder) / f"{model_type}.toml"
        draft.write_text(text, encoding="utf-8")
        checks = verify(discoverer, draft)
        wrong = first_failure(checks)
        if wrong:
            reason = f"the drafted record is not exact: {wrong}"
            kept = _keep_failure(failed, model_type, version, reason)
            raise LlmcountError(f"{source}: {reason}; not used ({kept})")
        family = records.load(draft)
    kept = _keep(path, sealed(text))
    with contextlib.suppress(OSError):
        failed.unlink(missing_ok=True)
    seconds = time.monotonic() - start
    say(
        f"note: {model_type} has no bundled record; discovered one from transformers {version}'s code in"
        f" {seconds:.0f} s, exact on the class defaults and {len(checks) - 1} random configs ({kept})"
    )
    return family


def _keep_failure(path: Path, model_type: str, version: str, reason: str) -> str:
    """Cache why a discovery failed, so that the next run says it at once; say where."""
    kept = _keep(path, f"{model_type}@{version}: {reason}\n")
    return f"reason {kept}; --rediscover tries again" if kept.startswith("cached") else kept


def _keep(path: Path, text: str) -> str:
    """Write the record into the cache through a temporary file; say where, or why it could not."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    except OSError as error:
        return f"not cached: {error.strerror or error} ({path.parent})"
    return f"cached: {path}"


def _short(error: Exception) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 400 else text[:397] + "..."  # room for where and why (a tensor, the numbers)
