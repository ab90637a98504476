"""verify: quantised checkpoints count the logical parameters their packed weights hold; scales, zero points and
indices are listed apart as quantisation storage; a packed format llmcount does not read is refused by name.

Files here are synthetic safetensors files (a JSON header and zero bytes, exactly as the format lays them out) with
the tensor names, dtypes and shapes each quantiser writes: GPTQ (AutoGPTQ/GPTQModel: ``qweight`` int32
(in/pack, out), ``qzeros`` (in/g, out/pack), ``scales`` (in/g, out), ``g_idx`` (in)), AWQ GEMM (``qweight``
(in, out/pack)), bitsandbytes 4-bit (``weight`` uint8 (n/2, 1), ``weight.absmax``, ``weight.quant_map``,
``weight.quant_state.bitsandbytes__nf4``) and 8-bit (``weight`` int8, ``SCB``, ``weight_format``), block FP8
(``weight`` F8_E4M3, ``weight_scale_inv`` per 128×128 block) and gpt-oss's MXFP4 (``<name>_blocks`` uint8
(…, blocks, 16), ``<name>_scales`` uint8 (…, blocks)). Every expected count is derived by hand below.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest
import torch
from oracle import meta_total
from refusal import assert_refused, run
from test_verify import rewrite, save_tiny
from test_verify_names import GPT_OSS
from verify_twins import verify_both_paths  # noqa: F401  (a fixture: each verify checked on both paths)

from llmcount.checkpoint import verify

pytestmark = pytest.mark.usefixtures("verify_both_paths")

BYTES = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "I8": 1, "U8": 1, "F8_E4M3": 1}

# A one-layer Llama: d = 32, h = 4, h_kv = 2 (head_dim 8), d_ff = 64, V = 64, untied.
LLAMA = {
    "model_type": "llama",
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 1,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "tie_word_embeddings": False,
}
# (module, in_features, out_features) of every linear layer of layer 0
LINEARS = [
    ("self_attn.q_proj", 32, 32),
    ("self_attn.k_proj", 32, 16),
    ("self_attn.v_proj", 32, 16),
    ("self_attn.o_proj", 32, 32),
    ("mlp.gate_proj", 32, 64),
    ("mlp.up_proj", 32, 64),
    ("mlp.down_proj", 64, 32),
]
# V·d twice (embedding, head) + the linears + 3 RMSNorms of d
LLAMA_PARAMETERS = 2 * 64 * 32 + sum(i * o for _, i, o in LINEARS) + 3 * 32  # = 13,408
GROUP = 16


def write_safetensors(path: Path, tensors: dict[str, tuple[str, tuple[int, ...]]]) -> None:
    """A safetensors file as the format defines it: 8-byte header length, the JSON header, then the data (zeros)."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = math.prod(shape) * BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(offset))


def llama_checkpoint(folder: Path, linear) -> Path:
    """LLAMA's config and a checkpoint whose linear layers ``linear(prefix, in, out)`` writes; the rest F16."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA))
    tensors = {"model.embed_tokens.weight": ("F16", (64, 32)), "lm_head.weight": ("F16", (64, 32))}
    for module, fan_in, fan_out in LINEARS:
        tensors |= linear(f"model.layers.0.{module}", fan_in, fan_out)
    for norm in ("model.layers.0.input_layernorm", "model.layers.0.post_attention_layernorm", "model.norm"):
        tensors[f"{norm}.weight"] = ("F16", (32,))
    write_safetensors(folder / "model.safetensors", tensors)
    return folder


def gptq(prefix: str, fan_in: int, fan_out: int) -> dict:
    return {
        f"{prefix}.qweight": ("I32", (fan_in // 8, fan_out)),  # 4-bit: 8 per int32, along the input
        f"{prefix}.qzeros": ("I32", (fan_in // GROUP, fan_out // 8)),
        f"{prefix}.scales": ("F16", (fan_in // GROUP, fan_out)),
        f"{prefix}.g_idx": ("I32", (fan_in,)),
    }


def awq(prefix: str, fan_in: int, fan_out: int) -> dict:
    return {
        f"{prefix}.qweight": ("I32", (fan_in, fan_out // 8)),  # 4-bit: 8 per int32, along the output
        f"{prefix}.qzeros": ("I32", (fan_in // GROUP, fan_out // 8)),
        f"{prefix}.scales": ("F16", (fan_in // GROUP, fan_out)),
    }


def bnb4(prefix: str, fan_in: int, fan_out: int) -> dict:
    n = fan_in * fan_out
    return {
        f"{prefix}.weight": ("U8", (n // 2, 1)),  # two 4-bit weights per byte
        f"{prefix}.weight.absmax": ("F32", (n // 64,)),  # one per block of 64
        f"{prefix}.weight.quant_map": ("F32", (16,)),
        f"{prefix}.weight.quant_state.bitsandbytes__nf4": ("U8", (120,)),
    }


def bnb8(prefix: str, fan_in: int, fan_out: int) -> dict:
    return {
        f"{prefix}.weight": ("I8", (fan_out, fan_in)),
        f"{prefix}.SCB": ("F32", (fan_out,)),
        f"{prefix}.weight_format": ("U8", ()),
    }


def fp8(prefix: str, fan_in: int, fan_out: int) -> dict:
    return {
        f"{prefix}.weight": ("F8_E4M3", (fan_out, fan_in)),
        f"{prefix}.weight_scale_inv": ("F32", (1, 1)),  # one 128×128 block covers the whole small matrix
    }


# storage elements per linear (in, out), by hand
STORAGE = {
    "gptq": lambda i, o: (i // GROUP) * (o // 8) + (i // GROUP) * o + i,
    "awq": lambda i, o: (i // GROUP) * (o // 8) + (i // GROUP) * o,
    "bnb4": lambda i, o: i * o // 64 + 16 + 120,
    "bnb8": lambda i, o: o + 1,
    "fp8": lambda i, o: 1,
}
WRITERS = {"gptq": gptq, "awq": awq, "bnb4": bnb4, "bnb8": bnb8, "fp8": fp8}
SCHEME_WORDS = {"gptq": "GPTQ 4-bit", "awq": "AWQ 4-bit", "bnb4": "bitsandbytes 4-bit", "bnb8": "bitsandbytes 8-bit"}
SCHEME_WORDS["fp8"] = "block FP8"


def test_the_hand_count_is_transformers_count() -> None:
    assert meta_total(LLAMA) == LLAMA_PARAMETERS == 13_408


@pytest.mark.parametrize("scheme", sorted(WRITERS))
def test_quantised_checkpoint_counts_logical_parameters(tmp_path: Path, scheme: str) -> None:
    folder = llama_checkpoint(tmp_path / scheme, WRITERS[scheme])
    result = verify(str(folder))
    assert result.checkpoint_total == LLAMA_PARAMETERS
    assert result.formula_total == LLAMA_PARAMETERS
    assert result.match, [(c.path, c.formula, c.checkpoint) for c in result.differences]
    storage = {c.path: c.checkpoint for c in result.components if c.storage}
    assert all(path.startswith("quantization/") for path in storage)
    assert sum(storage.values()) == sum(STORAGE[scheme](i, o) for _, i, o in LINEARS)
    assert SCHEME_WORDS[scheme] in result.note and f"{sum(storage.values()):,}" in result.note
    components = {c.path: c.checkpoint for c in result.components if not c.storage}
    assert components["attention/q_proj"] == 32 * 32 and components["mlp/down_proj"] == 64 * 32


def test_quantised_checkpoint_in_the_cli(tmp_path: Path) -> None:
    folder = llama_checkpoint(tmp_path / "gptq", gptq)
    result = run("verify", str(folder))
    assert result.exit_code == 0, result.output
    assert "match" in result.stdout and "storage" in result.stdout and "quantization/qzeros" in result.stdout
    data = json.loads(run("verify", str(folder), "--json").stdout)
    assert data["match"] is True and data["checkpoint_total"] == LLAMA_PARAMETERS and data["differences"] == []


def test_mxfp4_experts_of_gpt_oss(tmp_path: Path) -> None:
    """gpt-oss's Hub layout: each expert projection as ``_blocks`` (n, out, in/32, 16) and ``_scales`` (n, out,
    in/32); biases, router, attention and the rest in bf16."""
    folder = save_tiny(GPT_OSS, tmp_path / "gpt-oss")
    n, d, d_moe = 4, 32, 64

    def as_mxfp4(tensors: dict[str, torch.Tensor]) -> None:
        for layer in (0, 1):
            prefix = f"model.layers.{layer}.mlp.experts."
            for name, out, fan_in in (("gate_up_proj", 2 * d_moe, d), ("down_proj", d, d_moe)):
                del tensors[prefix + name]
                tensors[prefix + name + "_blocks"] = torch.zeros(n, out, fan_in // 32, 16, dtype=torch.uint8)
                tensors[prefix + name + "_scales"] = torch.zeros(n, out, fan_in // 32, dtype=torch.uint8)

    rewrite(folder, as_mxfp4)
    result = verify(str(folder))
    assert result.formula_total == meta_total(GPT_OSS)
    assert result.checkpoint_total == meta_total(GPT_OSS)
    assert result.match, [(c.path, c.formula, c.checkpoint) for c in result.differences]
    experts = next(c for c in result.components if c.path == "moe/experts")
    assert experts.checkpoint == 2 * n * 3 * d * d_moe  # N · n · (d · 2 d_moe + d_moe · d)
    scales = {c.path: c.checkpoint for c in result.components if c.storage}
    assert scales == {"quantization/mxfp4_scales": 2 * n * (2 * d_moe * (d // 32) + d * (d_moe // 32))}
    assert "MXFP4" in result.note


def packed_weight(prefix: str, fan_in: int, fan_out: int) -> dict:
    return {f"{prefix}.weight": ("U8", (fan_out // 4, fan_in))}  # four ternary weights per byte (BitNet-like)


def weight_packed(prefix: str, fan_in: int, fan_out: int) -> dict:
    return {f"{prefix}.weight_packed": ("I32", (fan_out, fan_in // 8)), f"{prefix}.weight_scale": ("F16", (fan_out, 1))}


def qweight_alone(prefix: str, fan_in: int, fan_out: int) -> dict:
    return {f"{prefix}.qweight": ("I32", (fan_in // 8, fan_out))}


def qweight_odd_layout(prefix: str, fan_in: int, fan_out: int) -> dict:
    return {**gptq(prefix, fan_in, fan_out), f"{prefix}.qweight": ("I32", (fan_in // 8, fan_out // 2))}


@pytest.mark.parametrize(
    ("writer", "needles"),
    [
        (packed_weight, ["q_proj.weight", "U8", "does not read"]),
        (weight_packed, ["weight_packed", "compressed-tensors"]),
        (qweight_alone, ["qweight", "scales and qzeros"]),
        (qweight_odd_layout, ["qweight", "neither GPTQ", "AWQ"]),
    ],
    ids=["u8_weight_without_a_format", "compressed_tensors_packed", "qweight_without_qzeros", "qweight_odd_layout"],
)
def test_unknown_packed_format_is_refused_by_name(tmp_path: Path, writer, needles) -> None:
    folder = llama_checkpoint(tmp_path / "packed", writer)
    assert_refused(run("verify", str(folder)), *needles)


def test_mxfp4_blocks_of_the_wrong_shape_are_refused(tmp_path: Path) -> None:
    def odd_blocks(prefix: str, fan_in: int, fan_out: int) -> dict:
        return {
            f"{prefix}.weight_blocks": ("U8", (fan_out, fan_in // 32, 8)),
            f"{prefix}.weight_scales": ("U8", (fan_out, fan_in // 32)),
        }

    folder = llama_checkpoint(tmp_path / "mxfp4", odd_blocks)
    assert_refused(run("verify", str(folder)), "weight_blocks", "MXFP4")
