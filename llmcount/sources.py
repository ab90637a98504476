"""Resolve what a user typed into a config: a bundled preset, a config.json file, a folder
holding one, or a Hugging Face Hub id (fetched with huggingface_hub, or found in its cache)."""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any

from . import files
from .errors import LlmcountError
from .formulas.hf import Model, read_config
from .presets import find, presets

_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


def load(spec: str) -> Model:
    """The model a user named: preset name, Hub id of a preset, file, folder or Hub id."""
    name, source, config = resolve(spec)
    return read_config(config, source, name)


def resolve(spec: str) -> tuple[str, str, Any]:
    """``(name, source, parsed config)`` for a spec; raise LlmcountError when there is none."""
    preset = find(spec)
    if preset is not None:
        return preset.name, f"preset {preset.name}", preset.config()
    path = files.user_path(spec, "model")
    found = files.kind(path, "model")
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
    """A config.json or an index, read strictly: see :mod:`llmcount.files`."""
    return files.read_json(path, what)


def _hub_config(repo_id: str) -> Path:
    """config.json of a Hub repo: downloaded when online, else from the local cache."""
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise LlmcountError(
            f"{repo_id}: not a preset, file or folder; to fetch it from the Hub, "
            "install huggingface_hub (pip install 'llmcount[hub]')"
        ) from None
    from huggingface_hub.utils import logging as hub_logging

    hub_logging.set_verbosity_error()  # one line of ours, not the Hub client's retries
    for local_only in (False, True):
        try:
            return Path(hf_hub_download(repo_id, "config.json", local_files_only=local_only))
        except Exception:  # any Hub failure: try the cache, then give up
            continue
    raise LlmcountError(
        f"{repo_id}: could not fetch config.json from the Hub (offline, private or no such repo) "
        "and it is not in the local Hugging Face cache"
    )
