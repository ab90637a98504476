"""Checkpoints read as strictly as the safetensors library reads them, shards counted once, verify --strict.

Every file here is real: written by the ``safetensors`` library (or transformers' ``save_pretrained``), then
corrupted byte by byte or by rewriting its header. Where the library itself is the judge, the test asks it too.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refusal import assert_refused, run
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from test_flops import SMALL
from test_verify import elements_in, save_tiny
from verify_twins import verify_both_paths  # noqa: F401  (a fixture: each verify checked on both paths)

from llmcount.checkpoint import read_header
from llmcount.errors import LlmcountError

pytestmark = pytest.mark.usefixtures("verify_both_paths")

TINY = SMALL["llama-mqa"]


def split(path: Path) -> tuple[dict, bytes]:
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + length]), data[8 + length :]


def join(path: Path, header: dict | bytes, data: bytes) -> None:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


def library_accepts(path: Path) -> bool:
    try:
        with safe_open(path, "pt") as handle:
            for name in handle.keys():  # noqa: SIM118
                handle.get_slice(name).get_shape()
        return True
    except Exception:
        return False


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """Three tensors of different dtypes and sizes, as the safetensors library writes them."""
    path = tmp_path / "small.safetensors"
    tensors = {"a": torch.ones(2, 3), "b": torch.zeros(5, dtype=torch.bfloat16), "c": torch.ones(4, dtype=torch.int8)}
    save_file(tensors, path, metadata={"format": "pt"})
    return path


def _ordered(header: dict) -> list[str]:
    return sorted((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"])


def test_library_written_file_is_read_like_the_library(small: Path) -> None:
    tensors = {t.name: t.shape for t in read_header(small)}
    with safe_open(small, "pt") as handle:
        assert tensors == {name: tuple(handle.get_slice(name).get_shape()) for name in handle.keys()}  # noqa: SIM118


def _overlap(header: dict, data: bytes) -> tuple[dict, bytes]:
    second = _ordered(header)[1]
    begin, end = header[second]["data_offsets"]
    header[second]["data_offsets"] = [begin - 2, end - 2]  # same length, starts inside the first
    return header, data


def _gap(header: dict, data: bytes) -> tuple[dict, bytes]:
    last = _ordered(header)[-1]
    begin, end = header[last]["data_offsets"]
    header[last]["data_offsets"] = [begin + 4, end + 4]
    return header, data[:begin] + bytes(4) + data[begin:]


def _gap_at_start(header: dict, data: bytes) -> tuple[dict, bytes]:
    for name in _ordered(header):
        begin, end = header[name]["data_offsets"]
        header[name]["data_offsets"] = [begin + 8, end + 8]
    return header, bytes(8) + data


def _trailing(header: dict, data: bytes) -> tuple[dict, bytes]:
    return header, data + b"\0" * 3


def _shape_disagrees(header: dict, data: bytes) -> tuple[dict, bytes]:
    header["a"]["shape"] = [3, 3]
    return header, data


def _same_range_twice(header: dict, data: bytes) -> tuple[dict, bytes]:
    header["a2"] = dict(header["a"])
    return header, data


def _metadata_not_strings(header: dict, data: bytes) -> tuple[dict, bytes]:
    header["__metadata__"] = {"format": 1}
    return header, data


CORRUPTIONS = {
    "overlapping_tensors": (_overlap, "overlap"),
    "gap_between_tensors": (_gap, "belong to no tensor"),
    "gap_before_the_first_tensor": (_gap_at_start, "before the first tensor"),
    "trailing_bytes": (_trailing, "trailing bytes"),
    "shape_disagrees_with_byte_length": (_shape_disagrees, "needs"),
    "two_tensors_on_the_same_bytes": (_same_range_twice, "overlap"),
    "metadata_not_strings": (_metadata_not_strings, "__metadata__"),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_corrupted_header_refused_like_the_library(small: Path, name: str) -> None:
    corrupt, needle = CORRUPTIONS[name]
    join(small, *corrupt(*split(small)))
    assert not library_accepts(small), "the corruption should be one the safetensors library refuses"
    with pytest.raises(LlmcountError, match=needle):
        read_header(small)
    config = small.parent / "config.json"
    config.write_text(json.dumps(TINY))
    assert_refused(run("verify", str(config), "--checkpoint", str(small)), "small.safetensors", needle)


def test_duplicate_tensor_name_in_one_header(small: Path) -> None:
    header, data = split(small)
    raw = json.dumps(header).encode()
    entry = json.dumps({"a": header["a"]})[1:-1].encode()
    join(small, raw[:-1] + b", " + entry + b"}", data)
    with pytest.raises(LlmcountError, match="'a' appears twice"):
        read_header(small)


def test_sub_byte_dtype_of_odd_length(tmp_path: Path) -> None:
    path = tmp_path / "f4.safetensors"
    join(path, {"w": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, bytes(2))
    with pytest.raises(LlmcountError, match="12 bits, not whole bytes"):
        read_header(path)


def test_header_of_an_empty_object_and_no_data(tmp_path: Path) -> None:
    path = tmp_path / "empty.safetensors"
    join(path, b"{}", b"")
    assert read_header(path) == [] and library_accepts(path)


def test_every_single_byte_corruption_is_refused_or_read_as_the_library_reads_it(small: Path) -> None:
    original = small.read_bytes()
    (length,) = struct.unpack("<Q", original[:8])
    checked = 0
    for position in range(8 + length):
        for value in {original[position] ^ 1, ord("9"), ord('"'), ord("}"), 0}:
            data = bytearray(original)
            data[position] = value
            small.write_bytes(bytes(data))
            try:
                ours = {t.name: (t.dtype, t.shape) for t in read_header(small)}
            except LlmcountError as exc:
                assert "\n" not in str(exc)
                continue
            assert library_accepts(small), f"byte {position} set to {value}: read by llmcount, refused by safetensors"
            theirs = {}
            with safe_open(small, "pt") as handle:
                for name in handle.keys():  # noqa: SIM118
                    theirs[name] = tuple(handle.get_slice(name).get_shape())
            assert {n: s for n, (_, s) in ours.items()} == theirs
            checked += 1
    assert checked  # some corruptions (inside a name, in the metadata) leave a valid file


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.binary(max_size=300), st.integers(min_value=0, max_value=400))
def test_any_header_bytes_are_read_or_give_one_error(tmp_path_factory, header: bytes, extra: int) -> None:
    path = tmp_path_factory.mktemp("h") / "x.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(extra))
    try:
        read_header(path)
    except LlmcountError as exc:
        assert "\n" not in str(exc)


# ---------------------------------------------------------------------------------------------
# shards and files beside them


@pytest.fixture
def sharded(tmp_path: Path) -> Path:
    return save_tiny(TINY, tmp_path / "sharded", max_shard_size="20KB")


def _index(folder: Path) -> tuple[Path, dict]:
    index = folder / "model.safetensors.index.json"
    return index, json.loads(index.read_text())


def test_a_shard_named_two_ways_is_read_once(sharded: Path) -> None:
    index, data = _index(sharded)
    for i, name in enumerate(sorted(data["weight_map"])):
        if i % 2:
            data["weight_map"][name] = "./" + data["weight_map"][name]
    index.write_text(json.dumps(data))
    result = json.loads(run("verify", str(sharded), "--json").stdout)
    assert result["checkpoint_total"] == elements_in(sharded)
    assert result["match"] is True


def test_the_same_tensor_in_two_shards(sharded: Path) -> None:
    _, data = _index(sharded)
    first, second = sorted(set(data["weight_map"].values()))[:2]
    moved = next(name for name, file in data["weight_map"].items() if file == first)
    tensors = load_file(sharded / second)
    tensors[moved] = load_file(sharded / first)[moved]
    save_file(tensors, sharded / second, metadata={"format": "pt"})
    assert_refused(run("verify", str(sharded)), repr(moved), "also in")


def test_weight_map_points_to_the_wrong_shard(sharded: Path) -> None:
    index, data = _index(sharded)
    files = sorted(set(data["weight_map"].values()))
    shared = next(f for f in files if list(data["weight_map"].values()).count(f) > 1)  # still read after the move
    name = next(name for name, file in data["weight_map"].items() if file == shared)
    other = next(f for f in files if f != shared)
    data["weight_map"][name] = other
    index.write_text(json.dumps(data))
    assert_refused(run("verify", str(sharded)), repr(name), other, f"it is in {shared}")


def test_consolidated_beside_model_safetensors_is_named_not_counted(tmp_path: Path) -> None:
    folder = save_tiny(TINY, tmp_path / "mistral")
    shutil.copy(folder / "model.safetensors", folder / "consolidated.safetensors")
    result = json.loads(run("verify", str(folder), "--json").stdout)
    assert result["match"] is True
    assert result["checkpoint_total"] == elements_in(folder) // 2
    assert "consolidated.safetensors" in result["note"]
    assert "consolidated.safetensors" in run("verify", str(folder)).stdout


def test_consolidated_beside_an_index_is_named_not_counted(sharded: Path) -> None:
    total = elements_in(sharded)
    shutil.copy(sorted(sharded.glob("model-*.safetensors"))[0], sharded / "consolidated.safetensors")
    result = json.loads(run("verify", str(sharded), "--json").stdout)
    assert result["checkpoint_total"] == total and "consolidated.safetensors" in result["note"]


def test_consolidated_alone_is_counted(tmp_path: Path) -> None:
    folder = save_tiny(TINY, tmp_path / "only")
    (folder / "model.safetensors").rename(folder / "consolidated.safetensors")
    result = json.loads(run("verify", str(folder), "--json").stdout)
    assert result["checkpoint_total"] == elements_in(folder) and not result["note"]


def test_several_indexes_in_a_folder(sharded: Path) -> None:
    index, _ = _index(sharded)
    shutil.copy(index, sharded / "other.safetensors.index.json")
    index.rename(sharded / "third.safetensors.index.json")
    assert_refused(run("verify", str(sharded)), "several safetensors indexes", "--checkpoint")


# ---------------------------------------------------------------------------------------------
# verify --strict


def test_strict_passes_a_matching_checkpoint(tmp_path: Path) -> None:
    folder = save_tiny(TINY, tmp_path / "m")
    result = run("verify", str(folder), "--strict")
    assert result.exit_code == 0, result.output
    assert "match" in result.stdout


def test_strict_fails_a_differing_checkpoint_after_the_report(tmp_path: Path) -> None:
    folder = save_tiny(TINY, tmp_path / "m")
    tensors = load_file(folder / "model.safetensors")
    tensors["model.layers.0.extra.weight"] = torch.ones(3)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    default = run("verify", str(folder))
    assert default.exit_code == 0 and "differs" in default.stdout  # a report by default
    strict = run("verify", str(folder), "--strict")
    assert strict.exit_code == 1
    assert "differs" in strict.stdout  # the report still says where
    lines = strict.stderr.strip().splitlines()
    assert len(lines) == 1 and "--strict" in lines[0] and "parameters" in lines[0]


def test_shape_whose_element_count_overflows_64_bits(tmp_path: Path) -> None:
    path = tmp_path / "big.safetensors"
    join(path, {"w": {"dtype": "F32", "shape": [10**99] * 3000, "data_offsets": [0, 4]}}, bytes(4))
    with pytest.raises(LlmcountError, match="overflows a 64-bit element count") as caught:
        read_header(path)
    assert len(str(caught.value)) < 400  # the shape is shown cut short


def test_huge_tensor_name_is_cut_short_in_the_message(tmp_path: Path) -> None:
    path = tmp_path / "long.safetensors"
    join(path, {"x" * 1_000_000: {"dtype": "F7", "shape": [1], "data_offsets": [0, 1]}}, bytes(1))
    with pytest.raises(LlmcountError, match="unknown dtype 'F7'") as caught:
        read_header(path)
    assert len(str(caught.value)) < 400
