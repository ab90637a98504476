"""Resolve what a user typed into a config: a bundled preset, a config.json file, a folder
holding one, or a Hugging Face Hub id (fetched with huggingface_hub, or found in its cache)."""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import files
from .errors import LlmcountError
from .presets import find, presets

if TYPE_CHECKING:
    from .counting import Counted
    from .formulas.config import Model

_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


def load_counted(spec: str, name: str | None = None, resolved: tuple[str, str, Any] | None = None) -> Counted | Model:
    """The model a user named, as :func:`load` reads it, counted by the compiled path when it takes the config (no
    sympy: a :class:`~llmcount.counting.Counted`), else the :class:`Model` of :func:`load`. The unseen-key note and
    every error are :func:`load`'s. ``resolved``: :func:`resolve`'s answer for ``spec``, when the caller has it."""
    from . import counting

    found, source, config = resolved or resolve(spec)
    try:
        model = counting.read(config, source, files.printable(name) if name else found)
    except counting.Fallback:
        return load(spec, name=name, resolved=(found, source, config))
    note = unseen_note(model, config)
    if note:
        emit_note(note)
    return model


def load(
    spec: str,
    discover: bool = False,
    name: str | None = None,
    resolved: tuple[str, str, Any] | None = None,
    rediscover: bool = False,
) -> Model:
    """The model a user named: preset name, Hub id of a preset, file, folder or Hub id, called ``name`` if
    given. ``discover``: a model_type with no bundled record is read with one derived from transformers' code
    (see discovered.py); ``rediscover``: derived again, whatever the cache holds. ``resolved``: what
    :func:`resolve` gave for ``spec`` already (stdin is read once)."""
    from .formulas import records
    from .formulas.config import find_family, read_config

    found, source, config = resolve(spec) if resolved is None else resolved
    family = None
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if discover:
        _newer_transformers()
    unknown = isinstance(model_type, str) and records.family(model_type) is None
    if unknown and records.composite(model_type) is None and records.by_auto_map(config) is None:
        from . import discovered

        if not discover:
            find_family(model_type, source, discovered.HINT if discovered.available() else "")
        family = discovered.record(model_type, source, rediscover=rediscover)
    model = read_config(config, source, files.printable(name) if name else found, family)
    note = unseen_note(model, config)
    if note:
        emit_note(note)
    return model


HELD_NOTES: list[str] | None = None  # set by the command line while a command runs: its notes, printed on success


def emit_note(note: str) -> None:
    """A note for stderr: printed at once, or held while a command of the command line runs (printed once it has
    succeeded), so that a refusal found after the model is read stays the only line on stderr."""
    if HELD_NOTES is not None:
        HELD_NOTES.append(note)
    else:
        print(note, file=sys.stderr)


MAX_NAMED = 5  # unseen keys named in the note; the others are counted


def unseen_note(model: Model | Counted, config: Any) -> str:
    """One line naming the keys of ``config`` the model's record was not checked against (a key a newer transformers
    added may change the count), or ``""``. A composite config's keys are those of its ``text_config``, and those of
    each tower's sub-config (``vision_config``, ``audio_config``) against the tower's record: one line per record."""
    if model.composite is None:
        return _unseen_line(model.source, model.architecture, config, "")
    outer = config if isinstance(config, dict) else {}
    lines = [_unseen_line(model.source, model.architecture, outer.get("text_config"), "")]
    for part in model.parts:
        if part.config_key:  # a tower read from a sub-config (a projector reads the whole config)
            lines.append(
                _unseen_line(model.source, part.model.architecture, outer.get(part.config_key), part.config_key)
            )
    return "\n".join(line for line in lines if line)


def _unseen_line(source: str, record: Any, config: Any, where: str) -> str:
    """The note of the keys of ``config`` new to ``record`` (``where``: the sub-config they are in, "" for the
    top level or text_config), or ``""``."""
    if not isinstance(config, dict):
        return ""
    keys = record.unseen(config)
    if not keys:
        return ""
    named = ", ".join(_printable(key) for key in keys[:MAX_NAMED])
    more = f" and {len(keys) - MAX_NAMED:,} more" if len(keys) > MAX_NAMED else ""
    which = f"key {named} is" if len(keys) == 1 else f"keys {named}{more} are"
    which = f"{where} {which}" if where else which
    return (
        f"note: {source}: {which} new to the {record.name} record (checked against transformers"
        f" {record.checked_version}); the count may be wrong"
    )


def _printable(key: str) -> str:
    """A config key as one short piece of a line: printable, at most 40 characters."""
    shown = key if key.isprintable() else repr(key)[1:-1]
    return shown if len(shown) <= 40 else shown[:37] + "..."


@functools.cache
def _newer_transformers() -> None:
    """Say once, on stderr, that the installed transformers is newer than the version the records were checked
    against (``--discover`` builds with it)."""
    import importlib.metadata

    from .formulas import records

    try:
        installed = importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        return
    note = records.newer_transformers(installed)
    if note:
        emit_note(note)


def resolve(spec: str) -> tuple[str, str, Any]:
    """``(name, source, parsed config)`` for a spec; raise LlmcountError when there is none. The name and the source
    are shown in every output: each is one visible line (:func:`files.printable`), whatever a file name holds."""
    name, source, config = _resolve(spec)
    return files.printable(name), files.printable(source), config


def _resolve(spec: str) -> tuple[str, str, Any]:
    if spec == STDIN:
        return "stdin", "stdin", read_stdin()
    preset = find(spec)
    if preset is not None:
        return preset.name, f"preset {preset.name}", preset.config()
    path = files.user_path(spec, "model")
    found = files.kind(path, "model")
    if path.name.lower().endswith(".gguf") and found != "folder":  # llama.cpp's format: the config from its metadata
        from .gguf_model import resolve_gguf

        return resolve_gguf(spec)
    if found == "folder":
        config_file = path / "config.json"
        if files.kind(config_file, "config") is None:
            raise LlmcountError(f"{spec}: folder has no config.json")
        return path.resolve().name, str(config_file), read_json(config_file)
    if found is not None:  # a file; read_json refuses a device or FIFO by name
        return _model_name(path), str(path), read_json(path)
    if _HUB_ID.match(spec) and not spec.endswith(".json") and not os.path.isdir(path.parent):
        return spec, f"{spec} (Hub)", read_json(_hub_config(spec))
    if spec.endswith(".json") or "/" in spec or "\\" in spec:
        raise LlmcountError(f"{spec}: no such file or folder")
    close = difflib.get_close_matches(spec.lower(), list(presets()), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see `llmcount list`"
    raise LlmcountError(f"unknown preset {spec!r}{hint}")


def _model_name(path: Path) -> str:
    return path.parent.resolve().name if path.name == "config.json" else path.stem


def read_json(path: Path, what: str = "config") -> Any:
    """A config.json or an index, read strictly: see :mod:`llmcount.files` (a config as transformers reads it,
    NaN and ±Infinity included: the config reader refuses them in the keys it reads)."""
    return files.read_json(path, what, constants=what == "config")


HUB_TIMEOUT = 2.0
"""Seconds to wait for the Hub before giving up: one request, no retries (huggingface_hub retries for a minute)."""


STDIN = "-"  # the spec that means "a config.json piped on standard input"
STDIN_LIMIT = 64 * 2**20  # bytes; a config.json is a few KB


def read_stdin(stream: Any = None) -> Any:
    """The JSON piped on standard input (``cat config.json | llmcount count -``), read once, parsed."""
    import sys

    stream = stream if stream is not None else sys.stdin
    if stream is None or (hasattr(stream, "isatty") and stream.isatty()):
        raise LlmcountError("-: standard input is a terminal; pipe a config.json into it")
    if getattr(stream, "_llmcount_read", False):
        raise LlmcountError("-: standard input given twice; it holds one config (write the other to a file)")
    raw = stream.buffer.read(STDIN_LIMIT + 1) if hasattr(stream, "buffer") else stream.read(STDIN_LIMIT + 1)
    with contextlib.suppress(AttributeError):  # marked as read, for a second '-' in the same call
        stream._llmcount_read = True
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogateescape")
    if len(raw) > STDIN_LIMIT:
        raise LlmcountError(f"stdin: more than {STDIN_LIMIT // 2**20} MiB; a config.json is a few KB")
    if not raw.strip():
        raise LlmcountError("stdin: empty; pipe a config.json into it")
    return files.parse_json(raw, "stdin", constants=True)


def _hub_config(repo_id: str) -> Path:
    """config.json of a Hub repo: downloaded when the Hub answers, else from the local cache; fast when offline
    (one request with a short timeout, never the Hub client's retries). A gated repo, a missing (or private) one and
    a repo without config.json each say so."""
    try:
        import huggingface_hub as hub
        from huggingface_hub import constants, errors
    except ImportError:
        raise LlmcountError(
            f"{repo_id}: not a preset, file or folder; to fetch it from the Hub, "
            "install huggingface_hub (pip install 'llmcount[hub]')"
        ) from None
    from huggingface_hub.utils import logging as hub_logging

    hub_logging.set_verbosity_error()  # one line of ours, not the Hub client's warnings
    cached = _hub_cache(hub, repo_id)
    if constants.HF_HUB_OFFLINE:
        if cached is None:
            raise LlmcountError(
                f"{repo_id}: offline (HF_HUB_OFFLINE is set) and its config.json is not in the local Hugging Face cache"
            )
        return cached
    try:  # one HEAD request: tells a gated repo from a missing one, and fails at once without a network
        hub.get_hf_file_metadata(hub.hf_hub_url(repo_id, "config.json"), timeout=HUB_TIMEOUT)
        return Path(hub.hf_hub_download(repo_id, "config.json", etag_timeout=HUB_TIMEOUT))
    except errors.GatedRepoError:
        raise LlmcountError(
            f"{repo_id}: a gated repo on the Hub: accept its terms on https://huggingface.co/{repo_id} "
            "and log in (hf auth login, or set HF_TOKEN)"
        ) from None
    except errors.RepositoryNotFoundError:
        raise LlmcountError(
            f"{repo_id}: no such repo on the Hub (or a private one: log in with hf auth login, or set HF_TOKEN)"
        ) from None
    except errors.RemoteEntryNotFoundError:
        raise LlmcountError(f"{repo_id}: the repo on the Hub has no config.json") from None
    except Exception as exc:  # no network, a timeout, a server error: the cache, or one line
        if cached is not None:
            return cached
        reason = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise LlmcountError(
            f"{repo_id}: cannot reach the Hub (offline?) and its config.json is not in the local Hugging Face cache "
            f"({reason})"
        ) from None


def _hub_cache(hub: Any, repo_id: str) -> Path | None:
    """The cached config.json of a repo, without any request."""
    try:
        found = hub.try_to_load_from_cache(repo_id, "config.json")
    except Exception:  # an id the cache cannot hold
        return None
    return Path(found) if isinstance(found, str) else None
