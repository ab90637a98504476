"""Records of families published with remote code (llmcount/formulas/remote/): their modeling file is not in
transformers, so the oracles are published checkpoints: the tensor names and ``metadata.total_size`` of their index
files, with the config.json published beside them.

InternLM2 (7B, 32 layers): a public copy of a Hub checkpoint, github.com/NanSang2000/S1mpleAgent (config.json at
commit 03da3f20510ae96533ca4c3eb0bbb258753ffed5, model.safetensors.index.json at commit
d64cff5906b6ecadbaecc70399eb56dbadb009fe): total_size 15,475,417,088 bytes, float16; its weight_map names per layer
attention.wqkv, attention.wo, attention_norm, feed_forward.w1/w2/w3, ffn_norm, and model.tok_embeddings,
model.norm, output.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from refusal import run
from safetensors.torch import save_file

import llmcount
from llmcount.checkpoint import verify
from llmcount.formulas import records

INTERNLM2_7B = {  # the published config.json (its model_type and auto_map as published: model_type "internlm")
    "architectures": ["InternLM2ForCausalLM"],
    "auto_map": {
        "AutoConfig": "configuration_internlm.InternLMConfig",
        "AutoModelForCausalLM": "modeling_internlm2.InternLM2ForCausalLM",
        "AutoModel": "modeling_internlm2.InternLM2ForCausalLM",
    },
    "bias": False,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "model_type": "internlm",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "pad_token_id": 2,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 1.0, "type": "dynamic"},
    "rope_theta": 1000000,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
    "transformers_version": "4.33.2",
    "use_cache": True,
    "vocab_size": 92544,
}
INTERNLM2_7B_TOTAL_SIZE = 15_475_417_088  # bytes, float16
LAYER_TENSORS = (
    "attention.wo.weight",
    "attention.wqkv.weight",
    "attention_norm.weight",
    "feed_forward.w1.weight",
    "feed_forward.w2.weight",
    "feed_forward.w3.weight",
    "ffn_norm.weight",
)


def published_names(layers: int) -> list[str]:
    names = [f"model.layers.{i}.{leaf}" for i in range(layers) for leaf in LAYER_TENSORS]
    return [*names, "model.norm.weight", "model.tok_embeddings.weight", "output.weight"]


def test_remote_records_are_found_but_not_listed_with_transformers_families() -> None:
    assert "internlm2" in records.remote_names() and "internlm2" not in records.names()
    assert records.family("internlm2").title.endswith("(remote code)")


def test_internlm2_index_total_size(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(INTERNLM2_7B))
    index = tmp_path / "model.safetensors.index.json"
    weight_map = dict.fromkeys(published_names(32), "model-00001-of-00002.safetensors")
    index.write_text(json.dumps({"metadata": {"total_size": INTERNLM2_7B_TOTAL_SIZE}, "weight_map": weight_map}))
    result = verify(str(tmp_path), index=str(index))
    assert result.match and result.checkpoint_total == result.formula_total == INTERNLM2_7B_TOTAL_SIZE // 2


def test_internlm2_tensor_names_map_to_the_record(tmp_path: Path) -> None:
    """A small checkpoint with the published names, each tensor of the shape modeling_internlm2.py gives it."""
    v, d, d_ff, h, h_kv, layers = 97, 64, 80, 8, 2, 2
    h_d = d // h
    shapes = {
        "attention.wqkv.weight": ((h + 2 * h_kv) * h_d, d),
        "attention.wo.weight": (d, h * h_d),
        "attention_norm.weight": (d,),
        "feed_forward.w1.weight": (d_ff, d),
        "feed_forward.w3.weight": (d_ff, d),
        "feed_forward.w2.weight": (d, d_ff),
        "ffn_norm.weight": (d,),
    }
    tensors = {f"model.layers.{i}.{leaf}": torch.zeros(shape) for i in range(layers) for leaf, shape in shapes.items()}
    tensors |= {"model.tok_embeddings.weight": torch.zeros(v, d), "model.norm.weight": torch.zeros(d)}
    tensors["output.weight"] = torch.zeros(v, d)
    assert sorted(tensors) == sorted(published_names(layers))
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    config = {**INTERNLM2_7B, "model_type": "internlm2", "vocab_size": v, "hidden_size": d}
    config |= {"intermediate_size": d_ff, "num_attention_heads": h, "num_key_value_heads": h_kv, "num_hidden_layers": 2}
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = verify(str(tmp_path))
    assert not result.unmapped, [t.name for t in result.unmapped]
    assert result.match, [(c.path, c.formula, c.checkpoint) for c in result.differences]
    assert result.formula_total == sum(t.numel() for t in tensors.values())


def test_internlm2_published_config_counts_through_its_auto_map(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(INTERNLM2_7B))
    result = run("count", str(path), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == INTERNLM2_7B_TOTAL_SIZE // 2
    assert "InternLM2ForCausalLM" in result.stderr and "internlm2 record" in result.stderr
    model = llmcount.load(str(path)).model
    assert model.architecture.name == "internlm2"
