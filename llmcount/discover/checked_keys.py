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
    """Every key of ``model_type``'s config class in the installed transformers and of the text configs of the
    composites whose language model it counts (:func:`text_keys`), sorted, less the common ones."""
    from transformers import CONFIG_MAPPING

    keys = set(config_class_keys(CONFIG_MAPPING[model_type])) if model_type in CONFIG_MAPPING else set()
    return sorted(keys | text_keys(model_type))


def text_keys(model_type: str) -> set[str]:
    """The keys of the text configs that composites count with the record ``model_type``: their text config class's
    and those the composite class writes into its default text config (PaliGemmaConfig's num_image_tokens), less the
    common ones."""
    from transformers import CONFIG_MAPPING

    keys: set[str] = set()
    for outer in records.composites():
        if outer.name not in CONFIG_MAPPING or getattr(records.family(outer.text), "name", None) != model_type:
            continue
        with warnings.catch_warnings(), contextlib.suppress(Exception):
            warnings.simplefilter("ignore")
            text = getattr(CONFIG_MAPPING[outer.name](), "text_config", None)
            keys |= set(config_class_keys(type(text))) | set(text.to_dict())
    return {key for key in keys if key not in records.COMMON_KEYS}


def tower_classes(name: str) -> list[type]:
    """The config classes a tower record ``name`` reads its sub-config as: the class of the model_type it is named
    after, and each composite's class for the sub-config whose tower it is (its ``sub_configs``, when that is not
    AutoConfig); none for a projector, which reads the whole composite config."""
    from transformers import CONFIG_MAPPING, AutoConfig

    from ..formulas.parts import slots

    found = [CONFIG_MAPPING[name]] if name in CONFIG_MAPPING else []
    for outer in records.composites():
        if outer.name not in CONFIG_MAPPING:
            continue  # remote code: no config class in transformers
        for slot in slots(outer):
            if slot.tower != name:
                continue
            sub = getattr(CONFIG_MAPPING[outer.name], "sub_configs", {}).get(slot.key)
            if sub is AutoConfig:  # any model_type: the one the composite class builds by default, if it builds one
                with warnings.catch_warnings(), contextlib.suppress(Exception):
                    warnings.simplefilter("ignore")
                    sub = type(getattr(CONFIG_MAPPING[outer.name](), slot.key))
            if isinstance(sub, type) and sub is not AutoConfig and sub not in found:
                found.append(sub)
    return found


def tower_keys(name: str) -> list[str]:
    """Every key of the config classes of the tower record ``name`` (:func:`tower_classes`) and the keys a composite
    class writes into its default sub-config of that tower (LlavaConfig's vision_config carries a vocab_size), sorted,
    less the common ones; empty when it has no class (a projector, a tower of remote code)."""
    from transformers import CONFIG_MAPPING

    from ..formulas.parts import slots

    classes = tower_classes(name)
    if not classes:
        return []
    keys = set().union(*(config_class_keys(c) for c in classes))
    for outer in records.composites():
        for slot in slots(outer) if outer.name in CONFIG_MAPPING else ():
            if slot.tower == name:
                with warnings.catch_warnings(), contextlib.suppress(Exception):
                    warnings.simplefilter("ignore")
                    keys |= set(getattr(CONFIG_MAPPING[outer.name](), slot.key).to_dict())
    return sorted(key for key in keys if key not in records.COMMON_KEYS)


def tower_ignored(name: str, keys: list[str]) -> list[str]:
    """Keys of the bundled presets' sub-configs read with the tower record ``name`` that are outside ``keys`` and that
    transformers builds the same whole composite without (Qwen2.5-VL-7B's vision_config carries in_chans)."""
    from ..formulas.parts import slots
    from ..presets import presets

    record, found = records.tower(name), set()
    for preset in presets().values():
        config = preset.config()
        outer = records.composite(config.get("model_type", ""))
        for slot in slots(outer) if outer is not None else ():
            sub = config.get(slot.key)
            if (
                not isinstance(sub, dict)
                or (sub.get("model_type", slot.tower) if slot.any_type else slot.tower) != name
            ):
                continue
            seen = set(keys) | record.read_keys() | records.COMMON_KEYS
            extra = sorted(k for k in sub if k not in seen and not k.startswith("_"))
            if not extra:
                continue
            given = {k: v for k, v in config.items() if k not in ("model_type", "quantization_config")}
            without = {**given, slot.key: {k: v for k, v in sub.items() if k not in extra}}
            try:
                same = _whole_total(outer.name, given) == _whole_total(outer.name, without)
            except Exception:  # whatever transformers raises: it refused the config
                continue
            if same:
                found |= set(extra)
            else:
                print(
                    f"{name}: preset {preset.name}'s {slot.key} keys {', '.join(extra)} change the count",
                    file=sys.stderr,
                )
    return sorted(found)


def _whole_total(model_type: str, given: dict) -> int:
    """The parameters of transformers' AutoModel of a composite config, built on the meta device."""
    import torch
    from transformers import AutoConfig, AutoModel

    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = AutoModel.from_config(AutoConfig.for_model(model_type, **given))
    return sum(p.numel() for p in model.parameters())


def config_class_keys(config_class: type) -> list[str]:
    """Every key of a config class, sorted, less the common ones."""
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


def records_to_fill(needs: str, model_types: list[str], towers: bool = False):
    """For a script that writes a table into the bundled records: (the transformers module, the records' folder,
    the model_types named, else every record's); an exit code after one line on stderr when transformers is missing
    (2) or a name has no record (1). ``towers``: a name may be a tower record's too (in ``towers/``)."""
    try:
        import transformers
    except ImportError:
        print(f"{needs}: pip install '.[test]'", file=sys.stderr)
        return 2
    names = model_types or list(records.names())
    unknown = [name for name in names if name not in records.names() and not (towers and name in records.tower_names())]
    if unknown:
        print(f"no record for {', '.join(unknown)}", file=sys.stderr)
        return 1
    return transformers, Path(records.__file__).parent / "families", names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m llmcount.discover.checked_keys", description=__doc__.splitlines()[0]
    )
    parser.add_argument("model_types", nargs="*", help="records to fill (default: every bundled record)")
    parser.add_argument(
        "--towers", action="store_true", help="every tower record a config class reads (and the records named)"
    )
    args = parser.parse_args(argv)
    chosen = records_to_fill("checked_keys needs transformers", args.model_types, towers=True)
    if isinstance(chosen, int):
        return chosen
    transformers, folder, names = chosen
    if args.towers:  # the tower records, besides the families named (none named: the towers alone)
        named = names if args.model_types else []
        names = [*named, *(name for name in records.tower_names() if tower_keys(name) and name not in named)]
    for name in names:
        if name in records.names():
            path = folder / f"{name}.toml"
            keys = class_keys(name)
            ignored = ignored_keys(name, keys)
        else:  # a tower record: the keys of the classes its sub-config is read as
            path, keys = folder.parent / "towers" / f"{name}.toml", tower_keys(name)
            if not keys:
                print(f"{name}: no config class in transformers reads it (a projector, or remote code)")
                continue
            ignored = tower_ignored(name, keys)
        write_atomic(path, with_table(path.read_text("utf-8"), table(keys, transformers.__version__, ignored)))
        records.load(path)  # the record still parses
        print(f"{name}: {len(keys)} keys")
    return 0


if __name__ == "__main__":
    sys.exit(main())
