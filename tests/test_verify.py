"""verify: formulas against real safetensors checkpoints, reading headers only.

The checkpoints are real: written by transformers' own ``save_pretrained`` for small random configs (its tensor
names, its per-expert layout, its shards and index), then altered with the ``safetensors`` library to carry what
real Hub checkpoints carry (a tied head stored twice, an MTP layer, a padded vocabulary, GPT-2's mask buffers).
The expected checkpoint totals come from the ``safetensors`` library reading the same files, the expected
formula totals from transformers' parameter count. Corrupted files are real files cut or overwritten.
"""

from __future__ import annotations

import json
import math
import struct
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from oracle import VERSIONS, _hf_config, hf_count, meta_total
from refusal import assert_refused
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from test_flops import SMALL
from transformers import AutoModelForCausalLM
from typer.testing import CliRunner
from verify_twins import verify_both_paths  # noqa: F401  (a fixture: each verify checked on both paths)

from llmcount.checkpoint import hub_tensors, read_header, verify
from llmcount.cli import app

pytestmark = pytest.mark.usefixtures("verify_both_paths")


def save_tiny(config: dict[str, Any], folder: Path, **options: Any) -> Path:
    """A real checkpoint: transformers' model for ``config`` (CPU, fp32) written by save_pretrained."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(_hf_config(config))
        model.save_pretrained(folder, **options)
    return folder


def elements_in(folder: Path) -> int:
    """Every tensor's elements, as the safetensors library reads the files."""
    total = 0
    for file in folder.glob("*.safetensors"):
        with safe_open(file, "pt") as handle:
            total += sum(math.prod(handle.get_slice(name).get_shape()) for name in handle.keys())  # noqa: SIM118
    return total


def rewrite(folder: Path, change) -> None:
    """Load model.safetensors, let ``change`` edit the tensor dict, write it back (a real file again)."""
    path = folder / "model.safetensors"
    tensors = load_file(path)
    change(tensors)
    save_file(tensors, path, metadata={"format": "pt"})


def run(*args: str):
    return CliRunner().invoke(app, list(args))


# ---------------------------------------------------------------------------------------------
# checkpoints exactly as transformers writes them


# buffers the model code saves with the weights: listed as differences with a note, never parameters (counts by
# hand from each config: the routing bias is n per MoE layer, Gemma 4's layer_scalar one per layer)
SAVED_BUFFERS = {
    # DeepSeek-V3: 3 layers, the first dense (first_k_dense_replace 1): 2 MoE layers · 8 experts
    "deepseek-v3-mla-q-lora-shared-dense": {"moe/router.e_score_correction_bias": (0, 2 * 8)},
    # Beam: 7 layers, the first min(3, N) dense (BeamConfig's mlp_layer_types): 4 MoE layers · 8 experts
    "beam-sliding-gated-dense-then-moe": {"moe/router.e_score_correction_bias": (0, 4 * 8)},
    # MiMo-V2-Flash: 7 layers, the first dense (MiMoV2FlashConfig's mlp_layer_types): 6 MoE layers · 4 experts
    "mimo-v2-flash-sliding-kv-heads": {"moe/router.e_score_correction_bias": (0, 6 * 4)},
    "gemma4-full-layers-wider-shared-kv": {"buffer/layer_scalar": (0, 6)},  # one per layer, 6 layers
    "gemma4-unified-per-layer-config": {"buffer/layer_scalar": (0, 5)},  # 5 layers
    # Apertus' xIELU keeps beta and eps as buffers, one each per layer: BASE's 2 layers
    "apertus-qk-norm-xielu": {"buffer/act_fn.beta": (0, 2), "buffer/act_fn.eps": (0, 2)},
}

# configs whose tensor names verify does not map to the record's paths yet (their totals are checked): GIT's CLIP vision
# encoder names its layers like a decoder's (image_encoder.vision_model.encoder.layers.N.self_attn), and HRM's two
# stacks (H and L layers) are two layer lists of one name, and Phi-4-multimodal's vision and audio encoders sit under
# model.embed_tokens_extend (image_embed, audio_embed.encoder.encoders.N), names the record's vision/ and audio/ paths
# do not map
NAMES_NOT_MAPPED = {"git-text-only-untied", "hrm-text-cycles", "phi4-multimodal-text-only-sliding"}
# configs transformers cannot build on the CPU to write a checkpoint (xLSTM's fused weights fail its weight init)
NOT_WRITABLE = {"xlstm-fused-chunks-and-steps"}
WRITABLE = sorted(set(SMALL) - NOT_WRITABLE)


@pytest.mark.parametrize("name", WRITABLE)
def test_checkpoint_written_by_transformers_has_the_formulas_total(tmp_path: Path, name: str) -> None:
    config = SMALL[name]
    folder = save_tiny(config, tmp_path / name)
    result = verify(str(folder))
    assert result.checkpoint_total == elements_in(folder)
    assert result.formula_total == meta_total(config), VERSIONS


# every tensor name maps to a record path: decoder-style names, the encoder-style ones (bert.encoder.layer.3.attention
# .self.query), and those a record's [checkpoint] table names (qwen3-moe: transformers 5.23 saves the expert count as
# num_local_experts, an alias the record must read)
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="names not mapped")) if n in NAMES_NOT_MAPPED else n
        for n in WRITABLE
    ],
)
def test_checkpoint_written_by_transformers_matches(tmp_path: Path, name: str) -> None:
    config = SMALL[name]
    folder = save_tiny(config, tmp_path / name)
    result = verify(str(folder))
    differences = {c.path: (c.formula, c.checkpoint) for c in result.differences}
    assert not result.unmapped, [t.name for t in result.unmapped]
    assert differences == SAVED_BUFFERS.get(name, {})
    assert all("buffer" in c.note for c in result.differences)
    assert result.match == (name not in SAVED_BUFFERS)


def test_sharded_checkpoint_with_index(tmp_path: Path) -> None:
    config = SMALL["llama-gqa-head-dim-bias-tied"]
    folder = save_tiny(config, tmp_path / "sharded", max_shard_size="20KB")
    index = folder / "model.safetensors.index.json"
    assert index.is_file() and len(list(folder.glob("*.safetensors"))) > 1
    expected = hf_count(config)
    assert verify(str(folder)).match
    by_index_file = verify(str(folder), checkpoint=str(index))
    assert by_index_file.match and by_index_file.checkpoint_total == expected == elements_in(folder)
    # total_size / 4 bytes: the config transformers wrote says dtype float32
    by_total_size = verify(str(folder), index=str(index))
    assert by_total_size.mode == "index" and by_total_size.match and by_total_size.checkpoint_total == expected
    as_bf16 = verify(str(folder), index=str(index), dtype_name="bf16")
    assert not as_bf16.match and as_bf16.checkpoint_total == 2 * expected


# ---------------------------------------------------------------------------------------------
# what real checkpoints carry beyond the model's parameters


def test_tied_head_stored_twice(tmp_path: Path) -> None:
    config = SMALL["llama-gqa-head-dim-bias-tied"]
    folder = save_tiny(config, tmp_path / "tied")
    rewrite(folder, lambda t: t.__setitem__("lm_head.weight", t["model.embed_tokens.weight"].clone()))
    result = verify(str(folder))
    assert [(c.path, c.formula, c.checkpoint) for c in result.differences] == [("head/lm_head", 0, 97 * 64)]
    assert "tied" in result.differences[0].note
    assert result.checkpoint_total - result.formula_total == 97 * 64


def test_layer_past_num_hidden_layers(tmp_path: Path) -> None:
    config = SMALL["mistral-mha"]  # N = 2 layers: layer 2 is an extra one, in a family with no MTP module
    folder = save_tiny(config, tmp_path / "extra")

    def add_layer(tensors: dict[str, torch.Tensor]) -> None:
        tensors["model.layers.2.eh_proj.weight"] = torch.zeros(64, 128)
        tensors["model.layers.2.enorm.weight"] = torch.zeros(64)

    rewrite(folder, add_layer)
    checks = {c.path: c for c in verify(str(folder)).differences}
    assert (checks["extra/layers.2"].formula, checks["extra/layers.2"].checkpoint) == (0, 64 * 128 + 64)
    assert "num_hidden_layers (2)" in checks["extra/layers.2"].note


def test_partial_mtp_layer_is_mapped_and_what_it_lacks_is_said(tmp_path: Path) -> None:
    config = SMALL["deepseek-v3-mla-q-lora-shared-dense"]  # N = 3 layers: layer 3 is the MTP layer its record names
    folder = save_tiny(config, tmp_path / "mtp")

    def add_mtp(tensors: dict[str, torch.Tensor]) -> None:
        tensors["model.layers.3.eh_proj.weight"] = torch.zeros(64, 128)
        tensors["model.layers.3.enorm.weight"] = torch.zeros(64)

    rewrite(folder, add_mtp)
    result = verify(str(folder))
    rows = {c.path: c for c in result.components}
    assert (rows["mtp/eh_proj"].formula, rows["mtp/eh_proj"].checkpoint) == (64 * 128, 64 * 128)
    assert (rows["mtp/enorm"].formula, rows["mtp/enorm"].checkpoint) == (64, 64)
    assert rows["mtp/embed_tokens"].checkpoint == 0 and "missing" in rows["mtp/embed_tokens"].note
    assert not any(path.startswith("extra/") for path in rows)


def test_padded_vocabulary(tmp_path: Path) -> None:
    config = SMALL["mistral-mha"]  # vocab_size 97, padded to 104 rows in the checkpoint
    folder = save_tiny(config, tmp_path / "padded")

    def pad(tensors: dict[str, torch.Tensor]) -> None:
        for name in ("model.embed_tokens.weight", "lm_head.weight"):
            tensors[name] = torch.zeros(104, 64)

    rewrite(folder, pad)
    checks = {c.path: c for c in verify(str(folder)).differences}
    assert set(checks) == {"embedding/embed_tokens", "head/lm_head"}
    assert checks["embedding/embed_tokens"].checkpoint - checks["embedding/embed_tokens"].formula == 7 * 64
    assert "104 rows, vocab_size is 97" in checks["head/lm_head"].note


def test_gpt2_mask_buffers_and_an_unknown_tensor(tmp_path: Path) -> None:
    config = SMALL["gpt2"]  # 3 layers, n_positions 64
    folder = save_tiny(config, tmp_path / "gpt2")

    def add(tensors: dict[str, torch.Tensor]) -> None:
        for layer in range(3):
            tensors[f"transformer.h.{layer}.attn.bias"] = torch.ones(1, 1, 64, 64)
        tensors["score_bias"] = torch.zeros(5)

    rewrite(folder, add)
    data = json.loads(run("verify", str(folder), "--json").stdout)
    assert data["match"] is False
    assert data["checkpoint_total"] - data["formula_total"] == 3 * 64 * 64 + 5
    by_key = {d.get("component") or d.get("tensor"): d for d in data["differences"]}
    assert by_key["attention/bias"]["checkpoint"] == 3 * 64 * 64 and "mask" in by_key["attention/bias"]["note"]
    assert by_key["score_bias"] == {
        "tensor": "score_bias",
        "formula": 0,
        "checkpoint": 5,
        "note": "no component path for this name",
    }


def test_verify_cli_text_and_json(tmp_path: Path) -> None:
    folder = save_tiny(SMALL["qwen3-qk-norm-head-dim"], tmp_path / "qwen3")
    out = run("verify", str(folder)).stdout
    assert "attention/q_norm" in out and "match" in out
    data = json.loads(run("verify", str(folder), "--json").stdout)
    assert {"formula_total", "checkpoint_total", "match", "differences"} <= set(data)
    assert data["match"] is True and data["differences"] == []
    assert data["formula_total"] == data["checkpoint_total"] == hf_count(SMALL["qwen3-qk-norm-head-dim"])


def test_headers_agree_with_huggingface_hub_parser(tmp_path: Path) -> None:
    """huggingface_hub's own reader of the header (the one --hub uses) gives the same tensors as llmcount's."""
    from huggingface_hub import parse_local_safetensors_file_metadata
    from huggingface_hub.utils import SafetensorsRepoMetadata

    folder = save_tiny(SMALL["mixtral"], tmp_path / "mixtral")
    file = folder / "model.safetensors"
    parsed = parse_local_safetensors_file_metadata(file)
    repo = SafetensorsRepoMetadata(
        metadata=None,
        sharded=False,
        weight_map={name: file.name for name in parsed.tensors},
        files_metadata={file.name: parsed},
    )
    assert sorted(hub_tensors(repo), key=lambda t: t.name) == sorted(read_header(file), key=lambda t: t.name)


def test_verify_hub_reads_headers_through_huggingface_hub(tmp_path: Path, monkeypatch) -> None:
    """--hub, end to end, with the network replaced by local files parsed by huggingface_hub itself."""
    import huggingface_hub
    from huggingface_hub.utils import SafetensorsRepoMetadata

    folder = save_tiny(SMALL["llama-mqa"], tmp_path / "hub")
    parsed = huggingface_hub.parse_local_safetensors_file_metadata(folder / "model.safetensors")

    def from_local_files(repo_id: str, **_: Any) -> SafetensorsRepoMetadata:
        assert repo_id == str(folder)
        return SafetensorsRepoMetadata(None, False, dict.fromkeys(parsed.tensors, "x"), {"model.safetensors": parsed})

    monkeypatch.setattr(huggingface_hub, "model_info", lambda repo_id, **_: None)
    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata", from_local_files)
    data = json.loads(run("verify", str(folder), "--hub", "--json").stdout)
    assert data["mode"] == "hub" and data["match"] is True


# ---------------------------------------------------------------------------------------------
# bad input: one line on stderr, exit 1, nothing on stdout


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    """A real single-file checkpoint of a small Llama, to be broken by the tests."""
    return save_tiny(SMALL["llama-mqa"], tmp_path / "model")


def _header_length(path: Path) -> int:
    return struct.unpack("<Q", path.read_bytes()[:8])[0]


def test_truncated_header(checkpoint: Path) -> None:
    file = checkpoint / "model.safetensors"
    file.write_bytes(file.read_bytes()[: 8 + _header_length(file) // 2])
    assert_refused(run("verify", str(checkpoint)), "model.safetensors", "truncated safetensors header")


def test_file_shorter_than_the_length_field(checkpoint: Path) -> None:
    (checkpoint / "model.safetensors").write_bytes(b"\x10\x00\x00")
    assert_refused(run("verify", str(checkpoint)), "model.safetensors", "truncated")


def test_header_not_json(checkpoint: Path) -> None:
    file = checkpoint / "model.safetensors"
    data = bytearray(file.read_bytes())
    data[8] = ord("#")  # the header's opening brace
    file.write_bytes(bytes(data))
    assert_refused(run("verify", str(checkpoint)), "model.safetensors", "header", "invalid JSON")


def test_header_json_but_not_an_object(checkpoint: Path) -> None:
    header = b"[1, 2, 3]"
    (checkpoint / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    assert_refused(run("verify", str(checkpoint)), "must be a JSON object")


def test_offsets_past_the_end_of_the_file(checkpoint: Path) -> None:
    file = checkpoint / "model.safetensors"
    file.write_bytes(file.read_bytes()[:-100])  # the header is intact, the data is cut short
    assert_refused(run("verify", str(checkpoint)), "model.safetensors", "past the end of the file")


def test_offsets_that_disagree_with_the_shape(tmp_path: Path) -> None:
    header = json.dumps({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}}).encode()
    folder = tmp_path / "odd"
    save_tiny(SMALL["llama-mqa"], folder)
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(12))
    assert_refused(run("verify", str(folder)), "'w'", "needs 16")


def test_unknown_dtype_in_header(tmp_path: Path) -> None:
    header = json.dumps({"w": {"dtype": "F7", "shape": [2], "data_offsets": [0, 2]}}).encode()
    folder = save_tiny(SMALL["llama-mqa"], tmp_path / "f7")
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(2))
    assert_refused(run("verify", str(folder)), "'w'", "unknown dtype 'F7'")


def test_index_names_missing_files(tmp_path: Path) -> None:
    folder = save_tiny(SMALL["llama-mqa"], tmp_path / "sharded", max_shard_size="20KB")
    shards = sorted(folder.glob("*.safetensors"))
    shards[-1].unlink()
    assert_refused(run("verify", str(folder)), "weight_map names missing files", shards[-1].name)


def test_index_lists_a_tensor_its_shard_lacks(tmp_path: Path) -> None:
    folder = save_tiny(SMALL["llama-mqa"], tmp_path / "sharded", max_shard_size="20KB")
    index = folder / "model.safetensors.index.json"
    data = json.loads(index.read_text())
    data["weight_map"]["model.layers.9.mlp.up_proj.weight"] = next(iter(data["weight_map"].values()))
    index.write_text(json.dumps(data))
    assert_refused(run("verify", str(folder)), "model.layers.9.mlp.up_proj.weight", "no such tensor")


def test_index_without_total_size(tmp_path: Path) -> None:
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {}, "weight_map": {}}))
    assert_refused(run("verify", "qwen3-32b", "--index", str(index)), "metadata.total_size")


def test_index_total_size_of_mixed_dtypes(tmp_path: Path) -> None:
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 1001}, "weight_map": {}}))
    assert_refused(run("verify", "qwen3-32b", "--index", str(index), "--dtype", "bf16"), "1,001", "mixed-dtype")


def test_index_not_json(tmp_path: Path) -> None:
    index = tmp_path / "model.safetensors.index.json"
    index.write_text("{not json")
    assert_refused(run("verify", "qwen3-32b", "--index", str(index)), "invalid JSON")


def test_folder_without_safetensors(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(SMALL["llama-mqa"]))
    assert_refused(run("verify", str(folder)), "no *.safetensors")


def test_nothing_to_verify_against() -> None:
    assert_refused(run("verify", "qwen3-32b"), "nothing to verify against", "--index")


def test_conflicting_sources(tmp_path: Path) -> None:
    assert_refused(run("verify", "qwen3-32b", "--index", "a.json", "--hub"), "only one of")


def test_unknown_dtype_for_index() -> None:
    assert_refused(run("verify", "qwen3-32b", "--index", "a.json", "--dtype", "fp7"), "'fp7'", "choices")


def test_hub_offline_says_so(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert_refused(run("verify", "Qwen/Qwen3-32B", "--hub"), "Qwen/Qwen3-32B", "offline")


def test_hub_by_preset_name_uses_its_hub_id(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert_refused(run("verify", "qwen3-32b", "--hub"), "Qwen/Qwen3-32B", "offline")


def test_hub_without_huggingface_hub(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import huggingface_hub now raises ImportError
    assert_refused(run("verify", "qwen3-32b", "--hub"), "huggingface_hub", "pip install")


def test_header_length_over_the_format_limit(checkpoint: Path) -> None:
    file = checkpoint / "model.safetensors"
    file.write_bytes(struct.pack("<Q", 2**40) + file.read_bytes()[8:])
    assert_refused(run("verify", str(checkpoint)), "not a safetensors file", "limit")


def test_index_may_not_point_outside_its_folder(tmp_path: Path) -> None:
    config = SMALL["llama-gqa-head-dim-bias-tied"]
    folder = save_tiny(config, tmp_path / "sharded", max_shard_size="20KB")
    index = folder / "model.safetensors.index.json"
    data = json.loads(index.read_text())
    outside = tmp_path / "elsewhere.safetensors"
    first = next(iter(data["weight_map"]))
    (outside).write_bytes((folder / data["weight_map"][first]).read_bytes())
    for target in (str(outside), "../elsewhere.safetensors"):
        data["weight_map"][first] = target
        index.write_text(json.dumps(data))
        assert_refused(run("verify", str(folder), "--checkpoint", str(index)), "outside the index's folder")
