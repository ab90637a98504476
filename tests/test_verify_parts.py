"""``verify`` of a composite checkpoint part by part: small checkpoints transformers writes (save_pretrained of a
small model built on the CPU), whole or with a part's tensors taken out (a language-model-only export, a shard not
downloaded), set against the whole model's formula. Each part's expected count is the numel of transformers'
module that holds it (the module named in the table below), never llmcount's."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

from refusal import run  # noqa: E402

from llmcount.checkpoint import verify  # noqa: E402
from llmcount.formulas import records  # noqa: E402

TEXT = {"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 1}
TEXT |= {"intermediate_size": 16, "vocab_size": 64}
VIT = {"hidden_size": 16, "intermediate_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2}
VIT |= {"image_size": 32, "patch_size": 8}
WRITTEN = {
    "gemma3": {"text_config": {**TEXT, "head_dim": 16}, "vision_config": VIT, "mm_tokens_per_image": 4},
    "llava": {"text_config": {"model_type": "llama", **TEXT}, "vision_config": {**VIT, "projection_dim": 16}},
    "qwen2_5_vl": {
        "text_config": dict(TEXT),
        "vision_config": {"depth": 2, "hidden_size": 8, "num_heads": 1, "intermediate_size": 8}
        | {"out_hidden_size": 32, "fullatt_block_indexes": [1]},
    },
    "qwen2_audio": {
        "text_config": {"model_type": "qwen2", **TEXT},
        "audio_config": {"d_model": 16, "encoder_layers": 2, "encoder_attention_heads": 2, "encoder_ffn_dim": 8},
    },
}
# each part's --part name and the module of transformers' model that holds it
PARTS = {
    "gemma3": {"vision": "model.vision_tower", "projector": "model.multi_modal_projector"},
    "llava": {"vision": "model.vision_tower", "projector": "model.multi_modal_projector"},
    "qwen2_5_vl": {"vision": "model.visual"},
    "qwen2_audio": {"audio": "model.audio_tower", "projector": "model.multi_modal_projector"},
}
CASES = [(model_type, part) for model_type in sorted(PARTS) for part in PARTS[model_type]]


class Written:
    """A small model of ``model_type`` and the tensors save_pretrained writes of it, by name (transformers writes
    some classes' tensors under their Hub names: LLaVA's ``vision_tower.`` for ``model.vision_tower.``)."""

    def __init__(self, model_type: str, folder: Path) -> None:
        import torch
        import transformers
        from safetensors.torch import load_file
        from transformers import AutoConfig

        self.config = {"model_type": model_type, **WRITTEN[model_type]}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cfg = AutoConfig.for_model(model_type, **WRITTEN[model_type])
            torch.manual_seed(0)
            self.built = getattr(transformers, records.composite(model_type).model)(cfg)
            self.built.save_pretrained(folder)
        self.files = {path.name: path.read_bytes() for path in folder.iterdir() if path.suffix == ".json"}
        self.tensors = load_file(str(folder / "model.safetensors"))
        self.modules = PARTS[model_type]
        self.whole = sum(p.numel() for p in self.built.parameters())

    def count(self, part: str) -> int:
        return sum(p.numel() for p in self.built.get_submodule(self.modules[part]).parameters())

    def names(self, part: str) -> list[str]:
        """The written tensors of the module that holds ``part`` (``model.`` before its name or not)."""
        leaf = self.modules[part].removeprefix("model.") + "."
        return [name for name in self.tensors if name.removeprefix("model.").startswith(leaf)]

    def save(self, folder: Path, without: tuple[str, ...] = ()) -> Path:
        """The checkpoint written into ``folder`` without the tensors named in ``without``."""
        from safetensors.torch import save_file

        for name, text in self.files.items():
            (folder / name).write_bytes(text)
        kept = {name: t for name, t in self.tensors.items() if name not in without}
        save_file(kept, str(folder / "model.safetensors"), metadata={"format": "pt"})
        return folder


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, Written]:
    return {model_type: Written(model_type, tmp_path_factory.mktemp(model_type)) for model_type in PARTS}


def _rows(result) -> dict[str, tuple[int, int]]:
    return {c.path: (c.formula, c.checkpoint) for c in result.components if c.path.startswith("parts/")}


@pytest.mark.parametrize("model_type", sorted(PARTS))
def test_a_whole_checkpoint_matches_part_by_part(tmp_path, written, model_type: str) -> None:
    model = written[model_type]
    result = verify(str(model.save(tmp_path)))
    want = {f"parts/{part}": (model.count(part), model.count(part)) for part in PARTS[model_type]}
    assert _rows(result) == want, oracle.VERSIONS
    assert result.formula_total == result.checkpoint_total == model.whole, oracle.VERSIONS
    assert result.match, result.differences


@pytest.mark.parametrize(("model_type", "part"), CASES)
def test_a_part_left_out_is_named_missing_with_its_count(tmp_path, written, model_type: str, part: str) -> None:
    """A checkpoint without one part's tensors (a shard not downloaded): that part's row, its count against none,
    the others' rows equal, and no match."""
    model = written[model_type]
    result = verify(str(model.save(tmp_path, tuple(model.names(part)))))
    count = model.count(part)
    assert result.difference == -count and not result.match
    assert [(c.path, c.formula, c.checkpoint) for c in result.differences] == [(f"parts/{part}", count, 0)]
    note = result.differences[0].note
    assert note.startswith("missing: the checkpoint holds none of the") and f"{count:,} parameters" in note, note
    others = {path: row for path, row in _rows(result).items() if path != f"parts/{part}"}
    assert all(formula == found for formula, found in others.values()), others


@pytest.mark.parametrize("model_type", sorted(PARTS))
def test_a_language_model_exported_alone_names_every_part(tmp_path, written, model_type: str) -> None:
    model = written[model_type]
    parts = tuple(name for part in PARTS[model_type] for name in model.names(part))
    result = verify(str(model.save(tmp_path, parts)))
    assert _rows(result) == {f"parts/{part}": (model.count(part), 0) for part in PARTS[model_type]}
    assert result.checkpoint_total == model.whole - sum(model.count(part) for part in PARTS[model_type])
    assert result.formula_total == model.whole and not result.match


@pytest.mark.parametrize("model_type", sorted(PARTS))
def test_a_tower_missing_one_tensor_says_how_many_parameters(tmp_path, written, model_type: str) -> None:
    model = written[model_type]
    tower = next(iter(PARTS[model_type]))
    dropped = model.names(tower)[-1]
    size = model.tensors[dropped].numel()
    result = verify(str(model.save(tmp_path, (dropped,))))
    count = model.count(tower)
    assert _rows(result)[f"parts/{tower}"] == (count, count - size)
    assert f"{size:,} of the" in result.differences[0].note and result.difference == -size


def _index(folder: Path, model: Written, names: list[str]) -> Path:
    """An index listing ``names`` with the float32 bytes of their tensors as total_size."""
    size = sum(4 * model.tensors[name].numel() for name in names)
    path = folder / "listed.index.json"
    path.write_text(json.dumps({"metadata": {"total_size": size}, "weight_map": dict.fromkeys(names, "x")}))
    return path


@pytest.mark.parametrize(("model_type", "part"), CASES)
def test_an_index_without_a_part_names_it(tmp_path, written, model_type: str, part: str) -> None:
    model = written[model_type]
    (tmp_path / "config.json").write_text(json.dumps(model.config))
    names = list(model.tensors)
    whole = verify(str(tmp_path), index=str(_index(tmp_path, model, names)), dtype_name="float32")
    assert whole.match and whole.formula_total == model.whole, whole.components
    listed = [name for name in names if name not in model.names(part)]
    result = verify(str(tmp_path), index=str(_index(tmp_path, model, listed)), dtype_name="float32")
    count = model.count(part)
    assert [(c.path, c.formula, c.checkpoint) for c in result.differences] == [(f"parts/{part}", count, 0)]
    assert "the index holds none of the" in result.differences[0].note
    assert result.formula_total == model.whole and result.difference == -count


def test_the_command_says_which_part_is_missing(tmp_path, written) -> None:
    model = written["qwen2_audio"]
    folder = model.save(tmp_path, tuple(model.names("audio")))
    result = run("verify", str(folder), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["match"] is False
    [row] = data["differences"]
    assert (row["component"], row["formula"], row["checkpoint"]) == ("parts/audio", model.count("audio"), 0)
    assert "audio tower" in row["note"]
    strict = run("verify", str(folder), "--strict")
    assert strict.exit_code == 1 and "parts/audio" in strict.stdout and "(--strict)" in strict.stderr
