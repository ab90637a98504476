"""GGUF files: count, verify and memory read a .gguf file's header exactly.

The files are real: written by the ``gguf`` package's ``GGUFWriter`` (llama.cpp's own writer) as llama.cpp's converter
writes them (tests/gguf_build.py), with tensors really quantised by ``gguf.quants`` where it quantises on a CPU and
byte blobs of the exact block size otherwise. Expected counts are transformers' (the model built on the meta device
for the same config), expected types, shapes and bytes are ``gguf.GGUFReader``'s reading of the same file.
"""

from __future__ import annotations

import json
import os
import struct
import time
from pathlib import Path

import gguf
import pytest
from gguf_build import write_gguf
from oracle import VERSIONS, meta_total
from refusal import assert_refused, run

from llmcount.gguf_file import read_gguf
from llmcount.gguf_model import verify

SMALL = dict(
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=128,
    vocab_size=1000,
    max_position_embeddings=512,
    pad_token_id=0,
)
MOE = dict(num_experts_per_tok=2, moe_intermediate_size=32)
MLA = dict(kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, first_k_dense_replace=1)

# (GGUF architecture, config, ggml types the matrices take in turn)
CASES = [
    ("llama", dict(model_type="llama", **SMALL), ("Q8_0", "Q4_0")),
    ("llama", dict(model_type="llama", **{**SMALL, "tie_word_embeddings": True}), ("Q5_1", "Q4_1")),
    ("llama", dict(model_type="mixtral", **SMALL, num_local_experts=4, num_experts_per_tok=2), ("Q8_0",)),
    ("mistral3", dict(model_type="ministral3", **SMALL, head_dim=16), ("Q5_0",)),
    ("qwen2", dict(model_type="qwen2", **SMALL), ("Q4_1", "BF16")),
    ("qwen3", dict(model_type="qwen3", **SMALL, head_dim=32), ("Q8_0",)),
    ("qwen3moe", dict(model_type="qwen3_moe", **SMALL, head_dim=16, num_experts=4, **MOE), ("Q8_0", "MXFP4")),
    (
        "qwen2moe",
        dict(model_type="qwen2_moe", **SMALL, num_experts=4, shared_expert_intermediate_size=64, **MOE),
        ("Q8_0",),
    ),
    ("gemma2", dict(model_type="gemma2", **SMALL, head_dim=32, sliding_window=128), ("Q8_0", "F16")),
    ("gemma3", dict(model_type="gemma3_text", **SMALL, head_dim=32, sliding_window=128), ("Q4_0",)),
    ("phi3", dict(model_type="phi3", **SMALL), ("Q8_0",)),
    ("phi3", dict(model_type="phi3", **SMALL, sliding_window=256), ("Q8_0",)),
    (
        "deepseek2",
        dict(model_type="deepseek_v2", **SMALL, n_routed_experts=4, q_lora_rank=None, n_shared_experts=1, **MOE, **MLA),
        ("Q8_0",),
    ),
    (
        "deepseek2",
        dict(
            model_type="deepseek_v3",
            **SMALL,
            n_routed_experts=4,
            q_lora_rank=32,
            n_shared_experts=1,
            n_group=1,
            topk_group=1,
            **MOE,
            **MLA,
        ),
        ("Q8_0",),
    ),
    ("gpt-oss", dict(model_type="gpt_oss", **SMALL, head_dim=16, num_local_experts=4, sliding_window=128), ("MXFP4",)),
    ("granite", dict(model_type="granite", **SMALL), ("TQ2_0", "Q8_0")),
    ("olmo2", dict(model_type="olmo2", **SMALL), ("Q8_0",)),
    ("starcoder2", dict(model_type="starcoder2", **SMALL), ("Q8_0",)),
    ("smollm3", dict(model_type="smollm3", **SMALL), ("Q8_0",)),
    ("olmo2", dict(model_type="olmo3", **SMALL, sliding_window=128), ("Q8_0",)),
    ("olmoe", dict(model_type="olmoe", **SMALL, num_experts=4, num_experts_per_tok=2), ("Q4_0",)),
    ("glm4", dict(model_type="glm4", **SMALL, head_dim=16), ("Q8_0",)),
    ("cohere2", dict(model_type="cohere2", **SMALL, sliding_window=128), ("Q8_0",)),
    ("exaone4", dict(model_type="exaone4", **SMALL, sliding_window=128), ("Q8_0",)),
]


def _id(case) -> str:
    config = case[1]
    return (
        config["model_type"]
        + ("-tied" if config.get("tie_word_embeddings") else "")
        + ("-window" if config.get("sliding_window") and config["model_type"] == "phi3" else "")
    )


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_gguf_counts_equal_transformers(case, tmp_path):
    arch, config, types = case
    path = tmp_path / "model.gguf"
    written = write_gguf(config, arch, path, types)
    result = verify(str(path))
    expected = meta_total(config)
    assert result.formula_total == expected, (result.formula_total, expected, VERSIONS)
    assert result.checkpoint_total == expected, (result.checkpoint_total, expected, VERSIONS)
    assert result.match, [(c.path, c.formula, c.checkpoint) for c in result.differences] + list(result.unmapped)
    # every tensor read back as gguf's own reader reads it: type, logical shape, bytes
    found = {t.name: (t.type, t.shape, t.nbytes) for t in read_gguf(path).tensors}
    assert found == written


def test_every_k_and_iq_quant_sized_from_its_blocks(tmp_path):
    """Types gguf.quants cannot quantise on a CPU, written as byte blobs of their block size, read back exactly."""
    kinds = ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S")
    kinds += ("IQ2_S", "IQ4_XS", "IQ1_M", "TQ1_0", "MXFP4", "Q8_0")
    sizes = {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 3}
    config = dict(model_type="qwen3", **{**SMALL, **sizes}, head_dim=64)
    path = tmp_path / "k.gguf"
    written = write_gguf(config, "qwen3", path, kinds)
    assert {t for t, _, _ in written.values()} == {*kinds, "F32"}
    g = read_gguf(path)
    assert {t.name: (t.type, t.shape, t.nbytes) for t in g.tensors} == written
    for t in g.tensors:  # bytes by hand: blocks of the type's size along the first dimension
        block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[t.type]]
        assert t.nbytes == t.elements // block * size
    assert verify(str(path)).match


def test_rope_freqs_is_listed_not_counted(tmp_path):
    """Llama 3's rope_freqs tensor (llama.cpp's; transformers computes it from the config) is storage, not a
    difference."""
    config = dict(model_type="llama", **SMALL)
    path = tmp_path / "l3.gguf"
    write_gguf(config, "llama", path, ("Q8_0",), extra=(("rope_freqs.weight", (8,)),))
    result = verify(str(path))
    assert result.match and result.checkpoint_total == meta_total(config)
    row = next(c for c in result.components if c.path == "gguf/rope_freqs.weight")
    assert row.storage and row.checkpoint == 8 and "RoPE" in row.note


def test_a_stray_tensor_is_named(tmp_path):
    config = dict(model_type="qwen3", **SMALL, head_dim=32)
    path = tmp_path / "x.gguf"
    write_gguf(config, "qwen3", path, ("Q8_0",), extra=(("blk.0.mystery.weight", (64, 64)),))
    result = verify(str(path))
    assert not result.match
    named = [c.path for c in result.differences] + [t.name for t in result.unmapped]
    assert any("mystery" in n for n in named), named
    assert result.difference == 64 * 64


def test_split_files_read_as_one(tmp_path):
    """gguf-split's layout: the first file holds the metadata, each file its own tensors and split.* keys."""
    config = dict(model_type="qwen3", **SMALL, head_dim=32)
    whole = tmp_path / "whole.gguf"
    written = write_gguf(config, "qwen3", whole, ("Q8_0",))
    reader = gguf.GGUFReader(str(whole))
    tensors = list(reader.tensors)
    halves = [tensors[: len(tensors) // 2], tensors[len(tensors) // 2 :]]
    for i, part in enumerate(halves):
        writer = gguf.GGUFWriter(str(tmp_path / f"m-{i + 1:05d}-of-00002.gguf"), "qwen3")
        if i == 0:
            for field in reader.fields.values():
                if field.name.startswith("qwen3.") or field.name.startswith("tokenizer."):
                    writer.add_key_value(field.name, field.contents(), field.types[0], field.types[-1])
        writer.add_uint16("split.no", i)
        writer.add_uint16("split.count", 2)
        writer.add_int32("split.tensors.count", len(tensors))
        for t in part:
            writer.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
    second = tmp_path / "m-00002-of-00002.gguf"
    g = read_gguf(second)
    assert len(g.files) == 2
    assert {t.name: (t.type, t.shape, t.nbytes) for t in g.tensors} == written
    assert verify(str(second)).checkpoint_total == meta_total(config)
    (tmp_path / "m-00001-of-00002.gguf").unlink()
    assert_refused(run("count", str(second)), "missing m-00001-of-00002.gguf")


def test_cli_count_verify_memory(tmp_path):
    config = dict(model_type="qwen3_moe", **SMALL, head_dim=16, num_experts=4, **MOE)
    path = tmp_path / "Tiny-Q8_0.gguf"
    written = write_gguf(config, "qwen3moe", path, ("Q8_0",), file_type=gguf.LlamaFileType.MOSTLY_Q8_0)
    expected = meta_total(config)
    out = run("count", str(path), "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["total"] == expected and data["gguf"] == {"tensor_elements": expected, "match": True, "differences": 0}
    out = run("verify", str(path), "--strict")
    assert out.exit_code == 0, out.output
    assert "MOSTLY_Q8_0" in out.stdout and "Q8_0" in out.stdout
    out = run("memory", str(path), "--json", "--seq", "100")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["weights_bytes"] == sum(b for _, _, b in written.values())
    experts = next(g for g in data["groups"] if g["component"] == "moe/experts")
    # per layer (2) three stacked expert matrices of 4 x 64 x 32 in Q8_0: 34 bytes per 32 values
    elements = 2 * 3 * 4 * 64 * 32
    assert experts["types"] == {"Q8_0": {"elements": elements, "bytes": elements // 32 * 34}}
    # KV cache by hand: 2 (K, V) x N layers x h_kv x h_d x S tokens x 2 bytes (f16)
    assert data["cache"][0]["bytes"] == 2 * 2 * 2 * 16 * 100 * 2
    out = run("memory", str(path))
    assert out.exit_code == 0 and "moe/experts" in out.stdout and "Q8_0" in out.stdout


# ---------------------------------------------------------------------------------------------------------------
# bad input: one line naming the field, exit 1, quickly


def _header(*, magic=b"GGUF", version=3, tensors=0, kvs=0) -> bytes:
    return magic + struct.pack("<IQQ", version, tensors, kvs)


def _string(text: bytes) -> bytes:
    return struct.pack("<Q", len(text)) + text


def _tensor_info(name: bytes, dims: list[int], type_id: int, offset: int = 0) -> bytes:
    return (
        _string(name)
        + struct.pack("<I", len(dims))
        + b"".join(struct.pack("<Q", d) for d in dims)
        + struct.pack("<IQ", type_id, offset)
    )


def _arch_kv() -> bytes:
    return _string(b"general.architecture") + struct.pack("<I", 8) + _string(b"llama")


BAD = {
    "bad magic": (b"GGML" + b"\0" * 40, "not a GGUF file"),
    "too short": (b"GG", "too short"),
    "truncated header": (_header(kvs=1)[:-3], "truncated GGUF header"),
    "version": (_header(version=7), "GGUF version 7"),
    "absurd tensor count": (_header(tensors=2**60), "the tensor count is"),
    "absurd kv count": (_header(kvs=2**62), "the key-value count is"),
    "absurd array": (
        _header(kvs=1) + _string(b"tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 2**61),
        "the length of array 'tokenizer.ggml.tokens'",
    ),
    "absurd string": (_header(kvs=1) + _string(b"general.name") + struct.pack("<IQ", 8, 2**63), "general.name"),
    "truncated value": (
        _header(kvs=1) + _string(b"general.name") + struct.pack("<I", 8) + _string(b"x")[:-1],
        "past the end",
    ),
    "nested array": (_header(kvs=1) + _string(b"a.b") + struct.pack("<IIQ", 9, 9, 1), "an array of arrays"),
    "unknown value type": (_header(kvs=1) + _string(b"a.b") + struct.pack("<I", 99), "unknown value type 99"),
    "too many dims": (_header(tensors=1, kvs=1) + _arch_kv() + _tensor_info(b"t.weight", [2] * 9, 0), "9 dimensions"),
    "unknown ggml type": (
        _header(tensors=1, kvs=1) + _arch_kv() + _tensor_info(b"blk.0.attn_q.weight", [32, 2], 99),
        "unknown ggml type id 99",
    ),
    "absurd dims": (
        _header(tensors=1, kvs=1) + _arch_kv() + _tensor_info(b"token_embd.weight", [2**40, 2**40], 0),
        "overflow a 64-bit element count",
    ),
    "data past the end": (
        _header(tensors=1, kvs=1) + _arch_kv() + _tensor_info(b"token_embd.weight", [2**20, 2**20], 0),
        "past the end of the file",
    ),
    "partial block": (
        _header(tensors=1, kvs=1) + _arch_kv() + _tensor_info(b"token_embd.weight", [33, 2], 8),
        "blocks of 32",
    ),
    "long name": (_header(tensors=1, kvs=1) + _arch_kv() + _tensor_info(b"x" * 200, [1], 0), "a name of 200 bytes"),
}


@pytest.mark.parametrize("name", sorted(BAD))
@pytest.mark.parametrize("command", ["count", "verify", "memory"])
def test_bad_gguf_is_one_line(name, command, tmp_path):
    data, needle = BAD[name]
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    started = time.monotonic()
    result = run(command, str(path))
    assert time.monotonic() - started < 2
    assert_refused(result, "bad.gguf", needle)


def test_string_arrays_are_bounded_before_they_are_walked(tmp_path):
    """More strings than any vocabulary (2^20 + 1, each 8 bytes of length): refused from the count, not walked."""
    from llmcount.gguf_file import MAX_STRINGS

    n = MAX_STRINGS + 1
    path = tmp_path / "vocab.gguf"
    path.write_bytes(_header(kvs=1) + _string(b"tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, n) + bytes(8 * n))
    started = time.monotonic()
    assert_refused(run("count", str(path)), "more than 1,048,576 strings")
    assert time.monotonic() - started < 2


def test_unknown_architecture_is_refused_by_name(tmp_path):
    path = tmp_path / "odd.gguf"
    writer = gguf.GGUFWriter(str(path), "rwkv7")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert_refused(run("count", str(path)), "GGUF architecture 'rwkv7'", "qwen3moe")
    line = run("count", str(path)).stderr
    assert "tensors" not in line and "vectors" not in line and "common" not in line


def test_not_a_regular_file(tmp_path):
    fifo = tmp_path / "pipe.gguf"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert_refused(run("count", str(fifo)), "not a regular file")
    assert time.monotonic() - started < 2
    folder = tmp_path / "dir.gguf"
    folder.mkdir()
    assert_refused(run("verify", str(folder)))
    assert_refused(run("count", str(tmp_path / "none.gguf")), "no such file")


def test_large_sparse_file_is_not_read_whole(tmp_path):
    """A header that claims a 16 GiB tensor in a sparse file of that size: the header is read, the data is not."""
    path = tmp_path / "big.gguf"
    header = _header(tensors=1, kvs=1) + _arch_kv() + _tensor_info(b"token_embd.weight", [2**17, 2**15], 0)
    with open(path, "wb") as f:
        f.write(header)
        f.truncate(64 + len(header) + 2**34)
    started = time.monotonic()
    g = read_gguf(path)
    assert time.monotonic() - started < 2
    assert g.tensors[0].nbytes == 2**34 and g.tensors[0].shape == (2**15, 2**17)


def test_count_does_not_import_gguf_for_a_config():
    """The gguf package (and numpy) load only for a .gguf file."""
    import subprocess
    import sys

    code = (
        "import sys; from llmcount.cli import main\n"
        "try:\n main(['count', 'qwen3-8b'])\nexcept SystemExit: pass\n"
        "assert 'gguf' not in sys.modules and 'numpy' not in sys.modules, sorted(sys.modules)\n"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", ["bad magic", "absurd array", "absurd tensor count", "unknown ggml type"])
@pytest.mark.parametrize("command", ["count", "verify", "memory"])
def test_hostile_gguf_is_refused_before_the_records_load(name, command, tmp_path):
    """A hostile header is refused by the header reader before the command imports the records and sympy (the
    gguf package loads only for tensor infos): in a fresh process, under 2 s of CPU and 500 MB. Measured with
    `time` on two shared cores: about 0.3 to 0.6 s of CPU where it was 1.1 to 1.7 s with sympy loaded first."""
    import resource
    import subprocess
    import sys

    path = tmp_path / "bad.gguf"
    path.write_bytes(BAD[name][0])
    code = (
        "import sys; from llmcount.cli import main\n"
        f"try:\n main([{command!r}, {str(path)!r}])\nexcept SystemExit as e: code = e.code\n"
        "assert code == 1, code\n"
        "assert 'sympy' not in sys.modules and 'llmcount.formulas.records' not in sys.modules\n"
        # the peak of this process's own memory: ru_maxrss would carry the forking worker's peak across exec
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')))\n"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr
    assert after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime < 2
    assert int(done.stdout.split()[-1]) < 500 * 1024  # VmHWM in kB


# ---------------------------------------------------------------------------------------------------------------
# memory MODEL --quant: llama-quantize's choice of type per tensor (llama.cpp 007dbbf3fd17 src/llama-quant.cpp)


def _more_bits(i: int, n: int) -> bool:
    """llama-quant.cpp's use_more_bits: the first and last eighth of the layers, and every third in between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _q4_k_m_by_hand(config: dict, tied: bool) -> dict[str, str]:
    """Q4_K_M for a Llama-style model (no experts, d a multiple of 256), from llama_tensor_get_type_impl:
    Q4_K everywhere, Q6_K for attn_v and ffn_down on the use_more_bits layers and for output.weight (and for
    token_embd.weight when the head is tied), vectors kept in F32."""
    n = config["num_hidden_layers"]
    types = {"token_embd.weight": "Q6_K" if tied else "Q4_K", "output_norm.weight": "F32"}
    if not tied:
        types["output.weight"] = "Q6_K"
    for i in range(n):
        for name in ("attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"):
            types[f"blk.{i}.{name}.weight"] = "Q4_K"
        for name in ("attn_v", "ffn_down"):
            types[f"blk.{i}.{name}.weight"] = "Q6_K" if _more_bits(i, n) else "Q4_K"
        for name in ("attn_norm", "ffn_norm"):
            types[f"blk.{i}.{name}.weight"] = "F32"
    return types


@pytest.mark.parametrize("tied", [False, True])
def test_q4_k_m_mixture_by_layer(tied):
    from llmcount.formulas.config import read_config
    from llmcount.gguf_quant import predict

    sizes = {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 16, "tie_word_embeddings": tied}
    config = dict(model_type="llama", **{**SMALL, **sizes})
    model = read_config(config, "test")
    found = {q.tensor.name: q.type for q in predict(model, "llama", "q4_k_m")}
    assert found == _q4_k_m_by_hand(config, tied)
    block = {"Q4_K": (256, 144), "Q6_K": (256, 210), "F32": (1, 4)}  # ggml-common.h block_q4_K, block_q6_K
    total = sum(q.tensor.elements // block[q.type][0] * block[q.type][1] for q in predict(model, "llama", "q4_k_m"))
    assert total == sum(q.bytes for q in predict(model, "llama", "q4_k_m"))
    assert sum(q.tensor.elements for q in predict(model, "llama", "q4_k_m")) == meta_total(config)


def test_quant_rules_for_experts_gqa_and_fallback():
    from llmcount.formulas.config import read_config
    from llmcount.gguf_quant import predict

    # 8 experts: attn_v and attn_k in Q8_0, attn_output Q5_K for Q4_K_M (llama_tensor_get_type_impl)
    config = dict(model_type="mixtral", **{**SMALL, "hidden_size": 256, "intermediate_size": 512}, num_local_experts=8)
    got = {q.tensor.name: q.type for q in predict(read_config(config, "test"), "llama", "q4_k_m")}
    assert got["blk.0.attn_v.weight"] == got["blk.1.attn_k.weight"] == "Q8_0"
    assert got["blk.1.attn_output.weight"] == "Q5_K" and got["blk.0.ffn_gate_inp.weight"] == "F32"
    # use_more_bits(i, 2): i >= 7 * 2 // 8 = 1, so layer 1 only
    assert got["blk.0.ffn_down_exps.weight"] == "Q4_K" and got["blk.1.ffn_down_exps.weight"] == "Q6_K"
    # MXFP4_MOE: experts MXFP4, the rest Q8_0
    got = {q.tensor.name: q.type for q in predict(read_config(config, "test"), "llama", "mxfp4_moe")}
    assert got["blk.0.ffn_up_exps.weight"] == "MXFP4" and got["blk.0.attn_q.weight"] == "Q8_0"
    # rows of 64 values: no 256-block fits; Q4_K falls back to Q5_0, Q6_K to Q8_0, output to Q8_0
    got = {
        q.tensor.name: q.type
        for q in predict(read_config(dict(model_type="llama", **SMALL), "test"), "llama", "q4_k_m")
    }
    assert got["blk.1.attn_q.weight"] == got["blk.0.attn_v.weight"] == "Q5_0" and got["blk.1.attn_v.weight"] == "Q8_0"
    assert got["output.weight"] == "Q8_0"


DSV3_SMALL = {
    "model_type": "deepseek_v3",
    "hidden_size": 256,
    "intermediate_size": 512,
    "moe_intermediate_size": 256,
    "num_hidden_layers": 2,
    "first_k_dense_replace": 1,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "n_shared_experts": 1,
    "n_group": 1,
    "topk_group": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "q_lora_rank": 256,
    "kv_lora_rank": 256,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "vocab_size": 512,
}


def test_mla_q4_k_m_by_hand():
    """DeepSeek-V3's MLA under Q4_K_M, every tensor by hand. The converter (conversion/deepseek.py DeepseekV2Model)
    splits kv_b_proj (h·(d_nope + d_v), r_kv) into attn_k_b, ne = [d_nope, r_kv, h], and attn_v_b, ne = [r_kv, d_v,
    h]. llama-quant.cpp's tensor_get_category puts attn_q_a, attn_q_b, attn_kv_a_mqa, attn_k_b and attn_v_b in OTHER
    (no attn_v-like rule: "attn_v_b.weight" does not contain "attn_v.weight"), so they take the base type Q4_K, and
    tensor_type_fallback moves attn_k_b (rows of d_nope = 128, no 256-block) to Q5_0. ffn_down by layer:
    use_more_bits(i, 2) holds for i = 1 only. Block bytes (ggml-common.h): Q4_K 144 per 256, Q6_K 210 per 256, Q5_0
    22 per 32; vectors and the router F32. The router's score-correction bias (exp_probs_b, n values per MoE layer)
    is a buffer of transformers' model, no parameter, but the converter writes it (F32) and the file holds it."""
    from llmcount.formulas.config import read_config
    from llmcount.gguf_quant import predict

    q4k, q6k, q50, f32 = 144 / 256, 210 / 256, 22 / 32, 4
    types = {}
    expected = {}

    def add(name, kind, elements, per):
        types[name], expected[name] = kind, int(elements * per)

    add("token_embd.weight", "Q4_K", 512 * 256, q4k)
    add("output.weight", "Q6_K", 512 * 256, q6k)
    add("output_norm.weight", "F32", 256, f32)
    for i in range(2):
        b = f"blk.{i}."
        add(b + "attn_q_a.weight", "Q4_K", 256 * 256, q4k)
        add(b + "attn_q_a_norm.weight", "F32", 256, f32)
        add(b + "attn_q_b.weight", "Q4_K", 256 * 2 * (128 + 64), q4k)
        add(b + "attn_kv_a_mqa.weight", "Q4_K", 256 * (256 + 64), q4k)
        add(b + "attn_kv_a_norm.weight", "F32", 256, f32)
        add(b + "attn_k_b.weight", "Q5_0", 128 * 256 * 2, q50)
        add(b + "attn_v_b.weight", "Q4_K", 256 * 128 * 2, q4k)
        add(b + "attn_output.weight", "Q4_K", 2 * 128 * 256, q4k)
        add(b + "attn_norm.weight", "F32", 256, f32)
        add(b + "ffn_norm.weight", "F32", 256, f32)
    for name in ("ffn_gate", "ffn_up", "ffn_down"):
        add(f"blk.0.{name}.weight", "Q4_K", 256 * 512, q4k)
    add("blk.1.ffn_gate_inp.weight", "F32", 256 * 4, f32)
    add("blk.1.ffn_gate_exps.weight", "Q4_K", 4 * 256 * 256, q4k)
    add("blk.1.ffn_up_exps.weight", "Q4_K", 4 * 256 * 256, q4k)
    add("blk.1.ffn_down_exps.weight", "Q6_K", 4 * 256 * 256, q6k)
    add("blk.1.ffn_gate_shexp.weight", "Q4_K", 256 * 256, q4k)
    add("blk.1.ffn_up_shexp.weight", "Q4_K", 256 * 256, q4k)
    add("blk.1.ffn_down_shexp.weight", "Q6_K", 256 * 256, q6k)
    add("blk.1.exp_probs_b.bias", "F32", 4, f32)
    model = read_config(DSV3_SMALL, "test")
    got = predict(model, "deepseek2", "q4_k_m")
    assert {q.tensor.name: q.type for q in got} == types
    assert {q.tensor.name: q.bytes for q in got} == expected
    parameters = sum(q.tensor.elements for q in got if not q.tensor.path.startswith("buffer/"))
    assert parameters == model.counts.total  # attn_k_b + attn_v_b hold kv_b_proj
    # MXFP4_MOE: every tensor with ne[2] > 1 (the experts, attn_k_b, attn_v_b) in MXFP4, the rest Q8_0
    got = {q.tensor.name: q.type for q in predict(model, "deepseek2", "mxfp4_moe")}
    assert got["blk.0.attn_k_b.weight"] == got["blk.1.ffn_up_exps.weight"] == "MXFP4"
    assert got["blk.0.attn_q_b.weight"] == got["blk.1.ffn_up_shexp.weight"] == "Q8_0"


def test_mla_reads_back_from_a_file_the_gguf_package_writes(tmp_path):
    """The predicted Q8_0 tensors written with gguf's own quantiser (gguf.quants.quantize) and GGUFWriter, read back
    by llmcount: every tensor's type and bytes as predicted."""
    import numpy as np

    from llmcount.formulas.config import read_config
    from llmcount.gguf_file import read_gguf
    from llmcount.gguf_quant import predict

    model = read_config(DSV3_SMALL, "test")
    planned = predict(model, "deepseek2", "q8_0")
    path = tmp_path / "dsv3-q8_0.gguf"
    writer = gguf.GGUFWriter(str(path), "deepseek2")
    for q in planned:
        t = q.tensor
        shape = [s for s in (t.experts, t.heads) if s > 1] + [t.rows, t.cols]
        data = np.zeros(shape, dtype=np.float32)
        kind = gguf.GGMLQuantizationType[q.type]
        if kind != gguf.GGMLQuantizationType.F32:
            data = gguf.quants.quantize(data, kind)
        writer.add_tensor(t.name, data, raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    read = {t.name: (t.type, t.nbytes) for t in read_gguf(path).tensors}
    assert read == {q.tensor.name: (q.type, q.bytes) for q in planned}


def test_memory_quant_cli():
    out = run("memory", "qwen3-8b", "--quant", "Q4_K_M", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["file_type"] == "MOSTLY_Q4_K_M" and data["tensor_elements"] == data["parameters"]
    head = next(g for g in data["groups"] if g["component"] == "head/lm_head")
    assert set(head["types"]) == {"Q6_K"}
    assert_refused(run("memory", "qwen3-8b", "--quant", "iq2_xs"), "importance matrix")
    assert_refused(run("memory", "qwen3-8b", "--quant", "q9_k"), "not a llama.cpp file type")


QWEN3_4B = {  # Qwen/Qwen3-4B config.json
    "model_type": "qwen3",
    "hidden_size": 2560,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 9728,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
}
# bartowski/Qwen_Qwen3-4B-GGUF README (llama.cpp b5200, every quant made with an importance matrix): file sizes in GB
# (10^9 bytes) rounded to 0.01; a file is its tensors plus a header (the Qwen vocabulary: 151,669 tokens and 151,387
# merges, about 6 MB).
PUBLISHED_QWEN3_4B = {
    "bf16": 8.05,
    "q8_0": 4.28,
    "q6_k": 3.31,
    "q5_k_m": 2.89,
    "q5_k_s": 2.82,
    "q4_1": 2.60,
    "q4_k_m": 2.50,
    "q4_k_s": 2.38,
    "q4_0": 2.38,
}


@pytest.mark.parametrize("ftype", sorted(PUBLISHED_QWEN3_4B))
def test_quant_sizes_match_published_files(ftype):
    from llmcount.formulas.config import read_config
    from llmcount.gguf_quant import predict

    model = read_config(QWEN3_4B, "Qwen3-4B")
    tensors = sum(q.bytes for q in predict(model, "qwen3", ftype, imatrix=True))
    published = PUBLISHED_QWEN3_4B[ftype] * 10**9
    header = (4 * 10**6, 10 * 10**6)  # the header's plausible size
    assert published - 5 * 10**6 <= tensors + header[1] and tensors + header[0] <= published + 5 * 10**6, (
        ftype,
        tensors,
        published,
    )


def test_array_values_kept_are_bounded(tmp_path):
    """64 arrays of 65,536 values (4 Mi in all): the first 16 are kept (2^20 values), the rest skipped by length."""
    from llmcount.gguf_file import MAX_KEPT_VALUES, LongArray

    kv = b"".join(_string(f"x.k{i}".encode()) + struct.pack("<IIQ", 9, 0, 65536) + bytes(65536) for i in range(64))
    path = tmp_path / "arrays.gguf"
    path.write_bytes(_header(kvs=64) + kv)
    meta = read_gguf(path).metadata
    kept = [k for k, v in meta.items() if isinstance(v, list)]
    assert len(kept) * 65536 == MAX_KEPT_VALUES
    assert all(isinstance(meta[f"x.k{i}"], LongArray) for i in range(len(kept), 64))
