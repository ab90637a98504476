"""Records derived at run time from transformers' model code, for a model_type with no bundled record.

``--discover`` asks for it: the maintainer tool in :mod:`llmcount.discover` (which needs torch and transformers)
drafts the record, checks it against transformers on the class defaults and on random configs, and keeps it in
the user cache folder, one file per model_type and transformers version. A draft that is not exact on every
check is refused, never used. The cached record is read like any other record, so the next run needs neither
torch nor transformers.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from .errors import LlmcountError
from .files import write_atomic
from .formulas import records
from .formulas.expressions import RecordError

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


def record(model_type: str, source: str, say=lambda text: print(text, file=sys.stderr)) -> records.Family:
    """The record of ``model_type`` derived from transformers' code: from the cache, or discovered and cached.
    ``say`` is told where the record comes from, in one line."""
    if not isinstance(model_type, str) or not _NAME.match(model_type):
        raise LlmcountError(f"{source}: model_type {str(model_type)[:60]!r} is not a transformers model_type name")
    if not available():
        raise LlmcountError(
            f"{source}: unsupported model_type {model_type!r}; --discover needs torch and transformers"
            " (pip install 'llmcount[test]')"
        )
    version = importlib.metadata.version("transformers")
    path = cached_path(model_type, version)
    if os.path.lexists(path):  # whatever is there (a FIFO, a link to a device) is read as a record or refused
        try:
            family = records.load(path)
            if family.name != model_type:
                raise RecordError(f"{path}: a record of model_type {family.name!r}, not {model_type!r}")
        except (OSError, RecordError) as error:
            raise LlmcountError(f"{error} (a cached discovered record: delete it to discover again)") from None
        say(f"note: {model_type} is counted with a record discovered from transformers {version} (cached: {path})")
        return family
    return _discover(model_type, version, path, source, say)


def _discover(model_type: str, version: str, path: Path, source: str, say) -> records.Family:
    from transformers import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:
        raise LlmcountError(f"{source}: model_type {model_type!r} is unknown to transformers {version} too")
    from .discover.core import Discoverer
    from .discover.verify import verify

    start = time.monotonic()
    try:
        discoverer = Discoverer(model_type, log=lambda text: None)
        text = discoverer.run().text
    except Exception as error:  # model code the method cannot express: one line, the reason
        raise LlmcountError(f"{source}: cannot discover a record for {model_type!r}: {_short(error)}") from None
    with tempfile.TemporaryDirectory(prefix="llmcount-") as folder:
        draft = Path(folder) / f"{model_type}.toml"
        draft.write_text(text, encoding="utf-8")
        checks = verify(discoverer, draft)
        wrong = [check for check in checks if not check.exact]
        if wrong:
            raise LlmcountError(
                f"{source}: the record discovered for {model_type!r} is not exact ({wrong[0].line()}); not used"
            )
        family = records.load(draft)
    kept = _keep(path, text)
    seconds = time.monotonic() - start
    say(
        f"note: {model_type} has no bundled record; discovered one from transformers {version}'s code in"
        f" {seconds:.0f} s, exact on the class defaults and {len(checks) - 1} random configs ({kept})"
    )
    return family


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
    return text if len(text) <= 160 else text[:157] + "..."
