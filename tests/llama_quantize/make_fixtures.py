"""Write the fixture ``types.json``: the ggml type and stored bytes of every tensor in GGUF files made by llama.cpp's
own ``llama-quantize``, for tests/test_gguf_llama_quantize.py.

Not run by the tests (CI has no llama.cpp build). To regenerate, build ``llama-quantize`` from llama.cpp (the tree
llama-cpp-python 0.3.36 vendors, commit 0c1e57098bba) and run, from the repository root::

    LLAMA_QUANTIZE=/path/to/bin/llama-quantize python tests/llama_quantize/make_fixtures.py

For each case an F16 GGUF of a small model is written with the ``gguf`` package's ``GGUFWriter`` as llama.cpp's
converter writes it (names and metadata from tests/gguf_build.py; convert_hf_to_gguf.py ``--outtype f16`` stores
vectors, norms, tensors not named ``.weight`` and those ModelBase.prepare_tensors forces to F32 (conversion/base.py:
FFN_GATE_INP, FFN_GATE_INP_SHEXP ...) in F32, every other tensor in F16), then
``llama-quantize model-f16.gguf out.gguf TYPE`` is run for every file type and ``gguf.GGUFReader`` reads each output
back. Q2_K_S needs an importance matrix to write a file; its types come from ``--dry-run``'s table instead.
Granite's and Cohere 2's files carry the keys their converters add (logit scale and multipliers; conversion/granite.py,
conversion/command_r.py), which llama.cpp's loader requires. With ``IMATRIX_ONLY=1`` and case names, the named cases
get their files for :data:`IMATRIX` quantised with an importance matrix of ones (``--imatrix``) added instead.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import gguf  # noqa: E402
import numpy as np  # noqa: E402
from gguf_build import converted, hf_shapes, metadata  # noqa: E402

F32_ALWAYS = ("ffn_gate_inp.", "ffn_gate_inp_shexp.", "position_embd.", "token_types.", "ssm_conv1d.", "shortconv.conv")

BASE = dict(
    hidden_size=256,
    num_attention_heads=4,
    intermediate_size=512,
    vocab_size=512,
    max_position_embeddings=1024,
    rms_norm_eps=1e-6,
    pad_token_id=0,
)
# (case id, GGUF architecture, transformers config, file types)
ALL = [
    *("q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q2_k_s", "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m"),
    *("q5_k_s", "q5_k_m", "q6_k", "iq4_nl", "iq4_xs", "tq1_0", "tq2_0", "mxfp4_moe", "f16", "bf16"),
]
SOME = ["q2_k", "q3_k_m", "q4_k_s", "q4_k_m", "q5_k_m", "q6_k", "q8_0", "iq4_xs", "mxfp4_moe"]
CASES = [
    ("llama-16-gqa4", "llama", dict(model_type="llama", **BASE, num_hidden_layers=16, num_key_value_heads=1), ALL),
    (
        "qwen3-16-tied",
        "qwen3",
        dict(model_type="qwen3", **BASE, num_hidden_layers=16, num_key_value_heads=2, head_dim=64,
             tie_word_embeddings=True),
        ALL,
    ),
    (
        "qwen3moe-8x-8",
        "qwen3moe",
        dict(model_type="qwen3_moe", **BASE, num_hidden_layers=8, num_key_value_heads=2, head_dim=64, num_experts=8,
             num_experts_per_tok=2, moe_intermediate_size=256),
        ALL,
    ),
    (
        "mixtral-4x-9",
        "llama",
        dict(model_type="mixtral", **BASE, num_hidden_layers=9, num_key_value_heads=1, num_local_experts=4,
             num_experts_per_tok=2),
        ALL,
    ),
    ("phi3-12-fused", "phi3", dict(model_type="phi3", **BASE, num_hidden_layers=12, num_key_value_heads=4), ALL),
    (
        "gemma3-10-fallback",
        "gemma3",
        dict(model_type="gemma3_text", **{**BASE, "intermediate_size": 288}, num_hidden_layers=10,
             num_key_value_heads=1, head_dim=64, sliding_window=128),
        ALL,
    ),
    (
        "llama-80-70b",
        "llama",
        dict(model_type="llama", **{**BASE, "intermediate_size": 256}, num_hidden_layers=80, num_key_value_heads=1),
        ["q2_k", "q2_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m", "iq4_xs"],
    ),
    (
        "qwen2moe-4x-8-shared",
        "qwen2moe",
        dict(model_type="qwen2_moe", **BASE, num_hidden_layers=8, num_key_value_heads=2, num_experts=4,
             num_experts_per_tok=2, moe_intermediate_size=256, shared_expert_intermediate_size=512),
        ALL,
    ),
    (
        "deepseek-v3-mla-6",
        "deepseek2",
        dict(model_type="deepseek_v3", **{**BASE, "num_attention_heads": 2}, num_hidden_layers=6,
             num_key_value_heads=2, first_k_dense_replace=1, n_routed_experts=4, num_experts_per_tok=2,
             n_shared_experts=1, n_group=1, topk_group=1, moe_intermediate_size=256, q_lora_rank=256,
             kv_lora_rank=256, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128),
        ALL,
    ),
    (
        "gpt-oss-8x-4",
        "gpt-oss",
        dict(model_type="gpt_oss", **BASE, num_hidden_layers=4, num_key_value_heads=2, head_dim=64,
             num_local_experts=8, num_experts_per_tok=2, sliding_window=128),
        ALL,
    ),
    (
        "starcoder2-8-biases",
        "starcoder2",
        dict(model_type="starcoder2", **BASE, num_hidden_layers=8, num_key_value_heads=2),
        ALL,
    ),
    *(
        (f"{model_type}-8", arch, dict(model_type=model_type, **BASE, num_hidden_layers=8, **extra), SOME)
        for model_type, arch, extra in (
            ("qwen2", "qwen2", dict(num_key_value_heads=2)),
            ("gemma2", "gemma2", dict(num_key_value_heads=2, head_dim=64, sliding_window=128)),
            ("olmo2", "olmo2", dict(num_key_value_heads=4)),
            ("glm4", "glm4", dict(num_key_value_heads=2, head_dim=64)),
            ("smollm3", "smollm3", dict(num_key_value_heads=2)),
            ("stablelm", "stablelm", dict(num_key_value_heads=4)),
            ("olmoe", "olmoe", dict(num_key_value_heads=4, num_experts=8, num_experts_per_tok=2)),
            ("granite", "granite", dict(num_key_value_heads=2, embedding_multiplier=12.0, logits_scaling=8.0,
                                        residual_multiplier=0.22, attention_multiplier=0.0078125)),
            ("cohere2", "cohere2", dict(num_key_value_heads=2, sliding_window=128, logit_scale=0.25)),
            ("granitemoe", "granitemoe", dict(num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=2)),
            ("granitemoeshared", "granitemoe", dict(num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=2,
                                                    shared_intermediate_size=256)),
        )
    ),
]  # fmt: skip


def write_source(config: dict, arch: str, path: Path) -> None:
    _params, _buffers, cfg = hf_shapes(config)
    writer = gguf.GGUFWriter(str(path), arch)
    metadata(writer, config, arch, cfg)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    rng = np.random.default_rng(0)
    for name, shape in converted(config, arch):
        if (
            len(shape) < 2
            or name.endswith("_norm.weight")
            or not name.endswith(".weight")
            or any(p in name for p in F32_ALWAYS)
        ):
            writer.add_tensor(name, rng.standard_normal(shape).astype(np.float32))
        else:
            writer.add_tensor(name, (0.02 * rng.standard_normal(shape)).astype(np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


IMATRIX = ("q4_0", "q5_0", "iq4_nl", "iq4_xs", "q2_k_s", "q4_k_m")
"""File types also written with an importance matrix (``--imatrix``), which changes their mixture."""


def write_imatrix(source: Path, path: Path) -> None:
    """An importance matrix for every matrix of ``source``, in the GGUF layout llama.cpp's loader reads
    (common/imatrix-loader.cpp: ``<tensor>.in_sum2`` and ``<tensor>.counts``, F32, one row and count per expert, and
    the keys imatrix.datasets, imatrix.chunk_count, imatrix.chunk_size): every value 1, every count 1."""
    writer = gguf.GGUFWriter(str(path), "imatrix")
    writer.add_type("imatrix")
    writer.add_array(gguf.Keys.IMatrix.DATASETS, ["ones"])
    writer.add_uint32(gguf.Keys.IMatrix.CHUNK_COUNT, 1)
    writer.add_uint32(gguf.Keys.IMatrix.CHUNK_SIZE, 512)
    for t in gguf.GGUFReader(str(source)).tensors:
        shape = [int(x) for x in t.shape]  # ne order
        if len([x for x in shape if x > 1]) < 2 or not t.name.endswith(".weight"):
            continue
        mats = shape[2] if len(shape) > 2 else 1
        writer.add_tensor(t.name + ".in_sum2", np.ones((mats, shape[0]), dtype=np.float32))
        writer.add_tensor(t.name + ".counts", np.ones((mats, 1), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def read(path: Path) -> list[list]:
    reader = gguf.GGUFReader(str(path))
    return [[t.name, t.tensor_type.name, int(t.n_bytes)] for t in reader.tensors]


DRY = re.compile(r"^\[\s*\d+/\s*\d+\]\s+(\S+)\s+- \[.*?\], type =\s+(\w+), size = [^(]*(?:\((\w+)\))?\s*$")
DRY_RUN = ("q2_k_s",)


def dry_run(binary: str, env: dict, source: Path, ftype: str) -> list[list]:
    """(name, type, None) per tensor from ``--dry-run``'s table (sizes there are rounded MiB: bytes left None)."""
    cmd = [binary, "--dry-run", str(source), ftype.upper(), "1"]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    rows = [DRY.match(line) for line in (run.stdout + run.stderr).splitlines()]
    return [[m[1], (m[3] or m[2]).upper(), None] for m in rows if m]


def main() -> None:
    """All cases, or those named on the command line (merged into the existing types.json)."""
    binary = os.environ["LLAMA_QUANTIZE"]
    wanted = set(sys.argv[1:])
    env = {**os.environ, "LD_LIBRARY_PATH": str(Path(binary).parent)}
    out = {
        "made_by": "llama-quantize built from llama.cpp 0c1e57098bba (vendored by llama-cpp-python 0.3.36), run as "
        "`llama-quantize model-f16.gguf out.gguf TYPE 1` on the F16 file make_fixtures.py writes (gguf "
        f"{version('gguf')}); types and bytes read back with gguf.GGUFReader",
        "cases": json.loads((HERE / "types.json").read_text())["cases"] if wanted else {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for case, arch, config, ftypes in CASES:
            if wanted and case not in wanted:
                continue
            source = Path(tmp) / f"{case}-source.gguf"
            try:
                write_source(config, arch, source)
            except KeyError as exc:  # a tensor tests/gguf_build.py does not name for this architecture
                print(f"{case}: no source file: {exc!r}", flush=True)
                continue
            if os.environ.get("IMATRIX_ONLY"):
                entry = out["cases"][case]
                imat = Path(tmp) / f"{case}-imatrix.gguf"
                write_imatrix(source, imat)
                entry["imatrix"] = {}
                for ftype in IMATRIX:
                    target = Path(tmp) / f"{case}-{ftype}-imatrix.gguf"
                    cmd = [binary, "--imatrix", str(imat), str(source), str(target), ftype.upper(), "1"]
                    run = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
                    if run.returncode:
                        raise SystemExit(f"{case} {ftype} imatrix: {run.stderr[-2000:]}")
                    table = read(target)
                    assert [n for n, _t, _b in table] == entry["names"], (case, ftype)
                    entry["imatrix"][ftype] = [[t, b] for _n, t, b in table]
                    target.unlink()
                    print(case, ftype, "imatrix", sum(b for _n, _t, b in table), flush=True)
                continue
            entry = {"arch": arch, "config": config, "source": read(source), "quantised": {}}
            entry["names"] = None  # llama-quantize's order: the model loader's (layer number, then name)
            for ftype in ftypes:
                if ftype in DRY_RUN:
                    table = dry_run(binary, env, source, ftype)
                    entry["quantised"][ftype] = [[t, b] for _n, t, b in table]
                    entry["names"] = entry["names"] or [n for n, _t, _b in table]
                    assert [n for n, _t, _b in table] == entry["names"], (case, ftype)
                    continue
                target = Path(tmp) / f"{case}-{ftype}.gguf"
                cmd = [binary, str(source), str(target), ftype.upper(), "1"]
                run = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
                if run.returncode:  # llama.cpp cannot load this file: the case is left out, and said
                    print(f"{case} {ftype}: llama-quantize failed: {run.stderr.strip().splitlines()[-1:]}", flush=True)
                    break
                table = read(target)
                entry["quantised"][ftype] = [[t, b] for _n, t, b in table]
                entry["names"] = entry["names"] or [n for n, _t, _b in table]
                assert [n for n, _t, _b in table] == entry["names"], (case, ftype)
                target.unlink()
                print(case, ftype, sum(b for _t, b in entry["quantised"][ftype]), flush=True)
            if len(entry["quantised"]) == len(ftypes):
                out["cases"][case] = entry
            source.unlink()
    (HERE / "types.json").write_text(json.dumps(out, indent=None, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
