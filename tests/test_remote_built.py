"""Remote-code records against the model their own modeling code builds on the meta device.

tests/remote_oracle/<family>.json holds, per family, the public repository and commit of the modeling files, the
configs, and the figures tests/remote_oracle/build.py recorded by building those files (the parameter count of each
config, and every parameter's name and shape for the small ones): re-run it there to check them. Here each figure is
compared with the record's count, and each small config's parameters are written as a checkpoint (zeros of the
recorded shapes, under the recorded names) that ``verify`` must map to the record term by term. A multimodal family
(a composite of composites.toml marked ``remote``) is compared whole, and part by part: the JSON's ``parts`` names the
beginnings of each part's parameter names in the modeling file's model (MiniCPM-V's ``vpm.`` and ``resampler.``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from llmcount.checkpoint import verify
from llmcount.formulas import records
from llmcount.formulas.config import read_config

HERE = Path(__file__).parent / "remote_oracle"
SPECS = {path.stem: json.loads(path.read_text("utf-8")) for path in sorted(HERE.glob("*.json"))}
CASES = [(family, name) for family, spec in SPECS.items() for name in spec["configs"]]
SHAPES = [(f, n) for f, n in CASES if "shapes" in SPECS[f]["figures"][n] and "parts" not in SPECS[f]]
PARTS = [(f, n) for f, n in CASES if "shapes" in SPECS[f]["figures"][n] and "parts" in SPECS[f]]
WRITTEN = 50_000_000
"""Parameters of the largest checkpoint a test writes (zeros in bfloat16, 100 MB): a model whose tower its modeling
file fixes at full size (Molmo's CLIP ViT-L/14, 290,909,184 parameters) is verified through an index instead."""
LARGE = [(f, n) for f, n in PARTS if SPECS[f]["figures"][n]["total"] > WRITTEN]
PARTS_WRITTEN = [case for case in PARTS if case not in LARGE]


def remote_type(model_type: str) -> bool:
    composite = records.composite(model_type)
    return model_type in records.remote_names() or (composite is not None and composite.remote)


def counted(config: dict, name: str) -> int:
    model = read_config(config, name)
    return model.whole_total if model.composite is not None else model.counts.total


def config_of(family: str, name: str) -> dict:
    """The config llmcount reads for a figure: the one the modeling code was given, or its ``read_as`` (the same
    sizes where the code takes them from elsewhere than config.json: Moondream's small figures)."""
    spec = SPECS[family]
    entry = spec["configs"][name]
    return {**entry.get("read_as", entry["config"]), "model_type": spec.get("model_type", family)}


def test_every_figure_file_names_a_remote_record_and_its_source() -> None:
    assert SPECS, "no figures in tests/remote_oracle"
    for family, spec in SPECS.items():
        assert remote_type(spec.get("model_type", family)), family
        assert len(spec["commit"]) == 40 and spec["repo"].startswith("https://github.com/"), family
        assert set(spec["figures"]) == set(spec["configs"]), f"re-run tests/remote_oracle/build.py {family} --write"
        assert spec["versions"]["transformers"], family


@pytest.mark.parametrize(("family", "name"), CASES)
def test_record_equals_the_remote_code_on_the_meta_device(family: str, name: str) -> None:
    spec = SPECS[family]
    built = spec["figures"][name]["total"]
    total = counted(config_of(family, name), name)
    built_by = f"{spec['model_class']} built {built:,} ({spec['versions']})"
    assert total == built, f"{family} {name}: record {total:,}, {built_by}"


@pytest.mark.parametrize(("family", "name"), PARTS)
def test_each_part_equals_the_remote_code_module(family: str, name: str) -> None:
    """Each part's count against the parameters under its prefix; the language model against the rest."""
    spec = SPECS[family]
    shapes = spec["figures"][name]["shapes"]
    numel = {key: math.prod(shape) for key, shape in shapes.items()}
    model = read_config(config_of(family, name), name)
    ours = {part.role: part.model.counts.total for part in model.parts}
    built = {
        role: sum(n for k, n in numel.items() if k.startswith(tuple(starts))) for role, starts in spec["parts"].items()
    }
    built["language model"] = sum(numel.values()) - sum(built.values())
    assert {**ours, "language model": model.counts.total} == built, f"{family} {name} ({spec['versions']})"


@pytest.mark.parametrize(("family", "name"), SHAPES)
def test_verify_maps_every_parameter_the_remote_code_builds(tmp_path: Path, family: str, name: str) -> None:
    shapes = SPECS[family]["figures"][name]["shapes"]
    tensors = {key: torch.zeros(shape, dtype=torch.bfloat16) for key, shape in shapes.items()}
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    (tmp_path / "config.json").write_text(json.dumps(config_of(family, name)))
    result = verify(str(tmp_path))
    assert not result.unmapped, [t.name for t in result.unmapped]
    assert result.match, [(c.path, c.formula, c.checkpoint) for c in result.differences]
    assert result.formula_total == sum(t.numel() for t in tensors.values()) == SPECS[family]["figures"][name]["total"]


@pytest.mark.parametrize(("family", "name"), PARTS_WRITTEN)
def test_verify_maps_the_language_model_and_lists_the_parts_apart(tmp_path: Path, family: str, name: str) -> None:
    """A multimodal checkpoint as its modeling file names it: the language model's tensors map to the record term by
    term; the tower's and the projector's (the composite's parts_modules) are listed apart, under other/<module>."""
    spec = SPECS[family]
    shapes = spec["figures"][name]["shapes"]
    tensors = {key: torch.zeros(shape, dtype=torch.bfloat16) for key, shape in shapes.items()}
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    (tmp_path / "config.json").write_text(json.dumps(config_of(family, name)))
    result = verify(str(tmp_path))
    assert not result.unmapped, [t.name for t in result.unmapped]
    apart = {c.path: c.checkpoint for c in result.components if c.path.startswith("other/")}
    assert all(c.path.startswith("other/") for c in result.differences), result.differences
    model = read_config(config_of(family, name), name)
    assert result.formula_total == model.counts.total
    assert sum(apart.values()) == sum(part.model.counts.total for part in model.parts)
    assert {path.removeprefix("other/") for path in apart} == set(records.composite(model.composite.name).parts_modules)


@pytest.mark.parametrize(("family", "name"), LARGE)
def test_a_large_model_maps_its_language_model_and_its_index_bytes(tmp_path: Path, family: str, name: str) -> None:
    """A checkpoint too large to write whole: the language model's tensors (every parameter outside the parts'
    prefixes) written as zeros map to the record term by term; the index of every parameter's name, with
    metadata.total_size in bfloat16 (2 bytes each), matches the whole model's count, its parts' tensors by name."""
    spec = SPECS[family]
    shapes = spec["figures"][name]["shapes"]
    starts = tuple(start for starts in spec["parts"].values() for start in starts)
    (tmp_path / "config.json").write_text(json.dumps({**config_of(family, name), "torch_dtype": "bfloat16"}))
    model = read_config(config_of(family, name), name)
    if model.counts.total <= WRITTEN:  # a language model small enough to write (not moondream2's own 1.4B)
        language = {key: shape for key, shape in shapes.items() if not key.startswith(starts)}
        language = {key: torch.zeros(shape, dtype=torch.bfloat16) for key, shape in language.items()}
        save_file(language, tmp_path / "model.safetensors", metadata={"format": "pt"})
        result = verify(str(tmp_path))
        assert not result.unmapped, [t.name for t in result.unmapped]
        assert result.match, [(c.path, c.formula, c.checkpoint) for c in result.differences]
        assert result.formula_total == sum(t.numel() for t in language.values()) == model.counts.total
        (tmp_path / "model.safetensors").unlink()
    total = sum(math.prod(shape) for shape in shapes.values())
    assert total == spec["figures"][name]["total"]
    weight_map = dict.fromkeys(shapes, "model-00001-of-00001.safetensors")
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 2 * total}, "weight_map": weight_map}))
    result = verify(str(tmp_path), index=str(index))
    assert result.match, [(c.path, c.formula, c.checkpoint) for c in result.differences]
    assert result.checkpoint_total == result.formula_total == total
    parts = next(c for c in result.components if c.path == "parts")
    assert parts.formula == parts.checkpoint == sum(part.model.counts.total for part in model.parts)
