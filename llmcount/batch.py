"""Many models at once: count a list of specs, or every config.json below a folder or a Hugging Face
cache. One bad config is one failed :class:`Result`, never the end of the batch."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import LlmcountError

if TYPE_CHECKING:
    from .counting import Counted
    from .formulas.config import Model

MAX_FILES = 10_000  # config.json files scan reads at most
MAX_DEPTH = 8  # folders below the root scan descends at most (a cache's config sits at depth 3)
MAX_ENTRIES = 1_000_000  # folder entries scan looks at, at most: a bound on time in a huge tree
ROW_FIELDS = ("model", "family", "source", "total", "activated", "embedding", "non_embedding")
CACHE_PREFIX = "models--"  # huggingface_hub's folder for a repo: models--{org}--{name}


@dataclass(frozen=True)
class Result:
    """One spec of a batch: its model, or the one-line reason it has none."""

    spec: str
    model: Model | Counted | None = None
    error: str | None = None
    stored: Mapping[str, Any] | None = None  # the stored-bytes columns (quant.count.STORED_FIELDS), when sized


def load_one(spec: str, name: str | None = None, discover: bool = False, rediscover: bool = False) -> Result:
    """The model a spec names (as ``llmcount count`` reads it), named ``name`` if given; a failure is
    a Result whose error names the spec."""
    from .sources import load, load_counted

    try:
        if discover or rediscover:
            model = load(spec, discover or rediscover, name, rediscover=rediscover)
        else:
            model = load_counted(spec, name)
        model.counts  # noqa: B018 -- evaluate now, so a config that cannot be counted fails here
    except LlmcountError as exc:
        message = str(exc)
        return Result(spec, error=message if message.startswith(spec) else f"{spec}: {message}")
    return Result(spec, model)


def count_all(specs: Iterable[str], discover: bool = False, rediscover: bool = False) -> Iterator[Result]:
    """Each spec's Result, in order, lazily (``rediscover``: each discovered record derived again, once)."""
    again = set()
    for spec in specs:
        yield load_one(spec, discover=discover, rediscover=rediscover and spec not in again)
        again.add(spec)


def row(model: Model | Counted) -> dict[str, Any]:
    """A model's line in a batch: ROW_FIELDS, exact integers."""
    from .counting import Counted

    if isinstance(model, Counted):
        data = model.summary()
    else:
        from .renderers import summary_data

        data = summary_data(model)
    for key in ROW_FIELDS:  # a composite with a part left out: its counts are under language_model_* keys only
        data.setdefault(key, None)
    return data


@dataclass
class Scan:
    """The config.json files below ``root``, found lazily; ``truncated`` says a bound stopped the walk."""

    root: Path
    max_files: int = MAX_FILES
    max_depth: int = MAX_DEPTH
    truncated: str | None = None

    def __post_init__(self) -> None:
        self.root = Path(self.root).expanduser()
        if not self.root.is_dir():
            what = "no such folder" if not self.root.exists() else "not a folder"
            raise LlmcountError(f"{self.root}: {what}")

    def configs(self) -> Iterator[Path]:
        """Every ``config.json`` below the root, depth first in name order, each folder visited once
        (symlinked folders are followed, loops are not), within the bounds."""
        seen: set[tuple[int, int]] = set()
        found = entries = 0
        stack: list[tuple[Path, int]] = [(self.root, 0)]
        while stack:
            folder, depth = stack.pop()
            try:
                info = folder.stat()
                if (info.st_dev, info.st_ino) in seen:
                    continue
                seen.add((info.st_dev, info.st_ino))
                with os.scandir(folder) as it:
                    children = sorted(it, key=lambda e: e.name)
            except OSError:
                continue  # unreadable folders are skipped, as find(1) reports and goes on
            subfolders = []
            for entry in children:
                entries += 1
                if entries > MAX_ENTRIES:
                    self.truncated = f"stopped after looking at {MAX_ENTRIES:,} entries"
                    return
                if entry.name == "config.json" and _is_file(entry):
                    if found == self.max_files:
                        self.truncated = f"stopped after {self.max_files:,} config.json files (--max-files)"
                        return
                    found += 1
                    yield Path(entry.path)
                elif depth < self.max_depth and not entry.name.startswith(".") and _is_dir(entry):
                    subfolders.append(Path(entry.path))
            stack.extend((sub, depth + 1) for sub in reversed(subfolders))

    def name(self, config: Path) -> str:
        """What to call the model of a config found in the scan: ``org/name`` inside a Hugging Face cache
        (with ``@revision`` when the cache holds several snapshots), else its folder relative to the root."""
        parts = config.relative_to(self.root).parts[:-1]
        # the root itself may be a repo's folder (models--org--name) or its snapshots/ folder
        above = self.root.resolve().parts[-2:]
        full = (*above, *parts)
        for i, part in enumerate(full):
            if part.startswith(CACHE_PREFIX) and full[i + 1 : i + 2] == ("snapshots",) and len(full) > i + 2:
                repo = part[len(CACHE_PREFIX) :].replace("--", "/")
                snapshots = config.parents[len(full) - i - 2]
                if sum(1 for p in snapshots.iterdir() if p.is_dir()) > 1:
                    repo += "@" + full[i + 2][:7]
                return "/".join([repo, *full[i + 3 :]])
        return "/".join(parts) if parts else self.root.resolve().name

    def results(self) -> Iterator[Result]:
        for config in self.configs():
            yield load_one(str(config), self.name(config))


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell: text that a spreadsheet would run as a formula (a model or file name starting with
    ``=``, ``+``, ``-`` or ``@``) is kept as text by a leading ``'``, as OWASP advises; numbers are left alone."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def csv_line(values: Sequence[Any]) -> str:
    """One CSV record (RFC 4180 quoting, cells from :func:`csv_cell`), without its line end."""
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([csv_cell(v) for v in values])
    return _utf8(out.getvalue())


def jsonl_line(data: Mapping[str, Any]) -> str:
    return _utf8(json.dumps(data, ensure_ascii=False))


def _utf8(text: str) -> str:
    """``text`` as it can be written in UTF-8: the undecodable bytes of a file name (lone surrogates) as ``\\udcXX``,
    which in a JSON string is the escape of the same character."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
