"""Remote-code records against the model their own modeling code builds on the meta device.

tests/remote_oracle/<family>.json holds, per family, the public repository and commit of the modeling files, the
configs, and the figures tests/remote_oracle/build.py recorded by building those files (the parameter count of each
config, and every parameter's name and shape for the small ones): re-run it there to check them. Here each figure is
compared with the record's count, and each small config's parameters are written as a checkpoint (zeros of the
recorded shapes, under the recorded names) that ``verify`` must map to the record term by term.
"""

from __future__ import annotations

import json
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
SHAPES = [(f, n) for f, n in CASES if "shapes" in SPECS[f]["figures"][n]]


def config_of(family: str, name: str) -> dict:
    spec = SPECS[family]
    return {**spec["configs"][name]["config"], "model_type": spec.get("model_type", family)}


def test_every_figure_file_names_a_remote_record_and_its_source() -> None:
    assert SPECS, "no figures in tests/remote_oracle"
    for family, spec in SPECS.items():
        assert spec.get("model_type", family) in records.remote_names(), family
        assert len(spec["commit"]) == 40 and spec["repo"].startswith("https://github.com/"), family
        assert set(spec["figures"]) == set(spec["configs"]), f"re-run tests/remote_oracle/build.py {family} --write"
        assert spec["versions"]["transformers"], family


@pytest.mark.parametrize(("family", "name"), CASES)
def test_record_equals_the_remote_code_on_the_meta_device(family: str, name: str) -> None:
    spec = SPECS[family]
    built = spec["figures"][name]["total"]
    counted = read_config(config_of(family, name), name).counts.total
    built_by = f"{spec['model_class']} built {built:,} ({spec['versions']})"
    assert counted == built, f"{family} {name}: record {counted:,}, {built_by}"


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
