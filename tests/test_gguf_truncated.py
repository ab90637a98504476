"""A GGUF file cut at every field boundary of its header (the magic, version and counts, each key-value pair's name
length, name, value type, array type and length and each value, each tensor info's name, dims, type and offset, the
alignment padding, the data), as ``gguf.GGUFReader`` lays the fields out in the whole file: every cut is refused with
one line naming the problem, never read, within bounded time; through the CLI one line on stderr, exit 1."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

gguf = pytest.importorskip("gguf")

from gguf_build import write_gguf  # noqa: E402
from refusal import assert_refused, run  # noqa: E402

from llmcount.errors import LlmcountError  # noqa: E402
from llmcount.gguf_file import read_gguf  # noqa: E402

CONFIG = {
    "model_type": "qwen3",
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 32,
    "vocab_size": 8,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-6,
}


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> tuple[bytes, list[int]]:
    path = tmp_path_factory.mktemp("gguf") / "whole.gguf"
    write_gguf(CONFIG, "qwen3", path, types=("Q8_0",))
    reader = gguf.GGUFReader(path)
    cuts = {0, 1, 4, 8, 16, 23, reader.data_offset - 1, reader.data_offset, path.stat().st_size - 1}
    for field in [*reader.fields.values(), *(t.field for t in reader.tensors)]:
        at = field.offset
        for part in field.parts:
            cuts.update((at, at + 1, at + part.nbytes - 1))
            at += part.nbytes
    return path.read_bytes(), sorted(c for c in cuts if 0 <= c < path.stat().st_size)


def test_every_field_boundary(whole, tmp_path: Path) -> None:
    data, cuts = whole
    path = tmp_path / "cut.gguf"
    assert len(cuts) > 100
    read = []
    for cut in cuts:
        path.write_bytes(data[:cut])
        started = time.monotonic()
        try:
            read_gguf(path)
            read.append(cut)
        except LlmcountError as exc:
            assert "\n" not in str(exc), (cut, str(exc))
        assert time.monotonic() - started < 2, cut
    assert not read, f"cut files read as whole: {read[:10]}"


@pytest.mark.parametrize("where", [0.1, 0.5, 0.99])
def test_through_the_cli(whole, where: float, tmp_path: Path) -> None:
    data, cuts = whole
    cut = cuts[int(where * (len(cuts) - 1))]
    path = tmp_path / "cut.gguf"
    path.write_bytes(data[:cut])
    for command in ("count", "memory", "verify"):
        assert_refused(run(command, str(path)))
