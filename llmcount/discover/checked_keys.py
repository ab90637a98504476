"""``python -m llmcount.discover.checked_keys [MODEL_TYPE ...]``: list in each family record every key of its config
class in the installed transformers (its ``[checked]`` table), so that a config carrying a key the record has not seen
is said on stderr when it is counted.

A maintainer tool (it needs transformers): run it after adding records or after re-checking the records against a new
transformers release (``tests/test_records.py``). Without model types it fills every bundled record. The keys are the
config class's dataclass fields, the keys its ``to_dict`` writes for the class defaults and the names of its
``attribute_map``, less those common to every config (``records.COMMON_KEYS``); and, as ``ignored``, the keys of the
record's bundled presets (published config.json files) that the class does not have, when transformers builds the
same number of parameters without them (GPT-2's n_ctx, DeepSeek-V3's ep_size). The table is written last in the
record (replacing the one there); a transformers other than ``records.CHECKED_AGAINST`` is named in it.

Example: ``python -m llmcount.discover.checked_keys bailing_hybrid``
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import re
import sys
import warnings
from pathlib import Path

from ..files import write_atomic
from ..formulas import records

_HEADER = re.compile(r"^\[checked\]")
_TABLE = re.compile(r"^\[\[?[A-Za-z_]")  # the next table header ends the [checked] table
_WIDTH = 120


def class_keys(model_type: str) -> list[str]:
    """Every key of ``model_type``'s config class in the installed transformers, sorted, less the common ones."""
    from transformers import CONFIG_MAPPING

    config_class = CONFIG_MAPPING[model_type]
    keys = set(getattr(config_class, "attribute_map", {}) or {})
    if dataclasses.is_dataclass(config_class):
        keys |= {field.name for field in dataclasses.fields(config_class)}
    # defaults the class itself refuses: its fields and attribute_map are the keys
    with warnings.catch_warnings(), contextlib.suppress(Exception):
        warnings.simplefilter("ignore")
        keys |= set(config_class().to_dict())
    return sorted(key for key in keys if key not in records.COMMON_KEYS)


def ignored_keys(model_type: str, keys: list[str]) -> list[str]:
    """Keys of the record's bundled presets outside ``keys`` that transformers builds the same count without."""
    from ..presets import presets
    from .probe import Refused, build

    found: set[str] = set()
    for preset in presets().values():
        config = preset.config()
        if config.get("model_type") != model_type:
            continue
        seen = set(keys) | records.family(model_type).read_keys() | records.COMMON_KEYS
        extra = sorted(k for k in config if k not in seen and not k.startswith("_"))
        if not extra:
            continue
        given = {k: v for k, v in config.items() if k not in ("model_type", "quantization_config")}
        try:
            same = build(model_type, given).total == build(model_type, given, drop=tuple(extra)).total
        except Refused:
            continue
        if same:
            found |= set(extra)
        else:
            print(f"{model_type}: preset {preset.name}'s keys {', '.join(extra)} change the count", file=sys.stderr)
    return sorted(found)


def _array(name: str, keys: list[str]) -> list[str]:
    lines = [f"{name} = ["]
    row = " "
    for key in keys:
        item = f' "{key}",'
        if len(row) + len(item) > _WIDTH:
            lines.append(row)
            row = " "
        row += item
    if row.strip():
        lines.append(row)
    lines.append("]")
    return lines


def table(keys: list[str], version: str, ignored: list[str] = ()) -> str:
    """The ``[checked]`` table of a record, as TOML, keys wrapped at the project's line width."""
    lines = ["[checked]  # every key of the config class, whether it changes the count or not (discover.checked_keys)"]
    if version != records.CHECKED_AGAINST:
        lines.append(f'transformers = "{version}"')
    lines += _array("keys", keys)
    if ignored:
        lines.append("# keys of the bundled presets the class does not have: the same count without them")
        lines += _array("ignored", list(ignored))
    return "\n".join(lines) + "\n"


def with_table(text: str, checked: str) -> str:
    """A record's text with its ``[checked]`` table replaced by ``checked`` (or appended at the end)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _HEADER.match(line)), None)
    if start is not None:
        end = next((i for i in range(start + 1, len(lines)) if _TABLE.match(lines[i])), len(lines))
        rest = "".join(lines[end:])
        head = "".join(lines[:start]).rstrip("\n") + "\n"
        return head + "\n" + checked + ("\n" + rest if rest else "")
    return text.rstrip("\n") + "\n\n" + checked


def records_to_fill(needs: str, model_types: list[str]):
    """For a script that writes a table into the bundled records: (the transformers module, the records' folder,
    the model_types named, else every record's); an exit code after one line on stderr when transformers is missing
    (2) or a name has no record (1)."""
    try:
        import transformers
    except ImportError:
        print(f"{needs}: pip install '.[test]'", file=sys.stderr)
        return 2
    names = model_types or list(records.names())
    unknown = [name for name in names if name not in records.names()]
    if unknown:
        print(f"no record for {', '.join(unknown)}", file=sys.stderr)
        return 1
    return transformers, Path(records.__file__).parent / "families", names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m llmcount.discover.checked_keys", description=__doc__.splitlines()[0]
    )
    parser.add_argument("model_types", nargs="*", help="records to fill (default: every bundled record)")
    args = parser.parse_args(argv)
    chosen = records_to_fill("checked_keys needs transformers", args.model_types)
    if isinstance(chosen, int):
        return chosen
    transformers, folder, names = chosen
    for name in names:
        path = folder / f"{name}.toml"
        keys = class_keys(name)
        ignored = ignored_keys(name, keys)
        write_atomic(path, with_table(path.read_text("utf-8"), table(keys, transformers.__version__, ignored)))
        records.load(path)  # the record still parses
        print(f"{name}: {len(keys)} keys")
    return 0


if __name__ == "__main__":
    sys.exit(main())
