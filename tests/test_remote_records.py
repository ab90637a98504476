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

import pytest
import torch
from refusal import run
from safetensors.torch import save_file

import llmcount
from llmcount.checkpoint import verify
from llmcount.formulas import records
from llmcount.formulas.config import read_config

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


# ChatGLM2/3 and GLM-4 (model_type chatglm). THUDM/chatglm3-6b's config.json as published; chatglm2-6b has the same
# sizes (seq_length 32768) and its pytorch_model.bin.index.json states total_size 12,487,168,064 bytes of float16: its
# parameters and the rotary inv_freq buffer it saves (kv_channels // 4 = 32 entries), as quoted in public fine-tuning
# tooling that checks a merged checkpoint against it.
CHATGLM3_6B = {
    "_name_or_path": "THUDM/chatglm3-6b",
    "model_type": "chatglm",
    "architectures": ["ChatGLMModel"],
    "auto_map": {
        "AutoConfig": "configuration_chatglm.ChatGLMConfig",
        "AutoModel": "modeling_chatglm.ChatGLMForConditionalGeneration",
        "AutoModelForCausalLM": "modeling_chatglm.ChatGLMForConditionalGeneration",
    },
    "add_bias_linear": False,
    "add_qkv_bias": True,
    "apply_query_key_layer_scaling": True,
    "apply_residual_connection_post_layernorm": False,
    "attention_dropout": 0.0,
    "attention_softmax_in_fp32": True,
    "bias_dropout_fusion": True,
    "ffn_hidden_size": 13696,
    "fp32_residual_connection": False,
    "hidden_dropout": 0.0,
    "hidden_size": 4096,
    "kv_channels": 128,
    "layernorm_epsilon": 1e-05,
    "multi_query_attention": True,
    "multi_query_group_num": 2,
    "num_attention_heads": 32,
    "num_layers": 28,
    "original_rope": True,
    "padded_vocab_size": 65024,
    "post_layer_norm": True,
    "rmsnorm": True,
    "seq_length": 8192,
    "use_cache": True,
    "torch_dtype": "float16",
    "transformers_version": "4.30.2",
    "tie_word_embeddings": False,
    "eos_token_id": 2,
    "pad_token_id": 0,
}
CHATGLM2_6B_TOTAL_SIZE = 12_487_168_064  # bytes, float16, the parameters and 32 inv_freq entries
# THUDM/glm-4-9b-chat: ChatGLM3-6B's layer with 40 layers and GLM-4's vocabulary of 151,552
GLM4_9B = {**CHATGLM3_6B, "_name_or_path": "THUDM/glm-4-9b-chat", "num_layers": 40, "padded_vocab_size": 151552}
GLM4_9B["seq_length"] = 131072


def chatglm_by_hand(layers: int, vocab: int) -> int:
    """modeling_chatglm.py at d = 4096, 32 heads and 2 key-value groups of 128, ffn_hidden_size 13696: per layer
    query_key_value 4096·(32 + 2·2)·128 and its bias (32 + 4)·128, dense 4096·4096, dense_h_to_4h 4096·2·13696,
    dense_4h_to_h 13696·4096 and two RMSNorms 2·4096; the embedding and output_layer V·4096 each, the final norm."""
    layer = 4096 * 36 * 128 + 36 * 128 + 4096 * 4096 + 4096 * 2 * 13696 + 13696 * 4096 + 2 * 4096
    return 2 * vocab * 4096 + layers * layer + 4096


def test_chatglm3_6b_and_glm4_9b_by_hand() -> None:
    assert chatglm_by_hand(28, 65024) == 6_243_584_000 == (CHATGLM2_6B_TOTAL_SIZE - 2 * 32) // 2
    assert read_config(CHATGLM3_6B, "chatglm3-6b").counts.total == 6_243_584_000
    glm4 = read_config(GLM4_9B, "glm-4-9b-chat").counts.total
    assert glm4 == chatglm_by_hand(40, 151552) == 9_399_951_360  # 9.40B


CHATGLM_LAYER_TENSORS = (
    "input_layernorm.weight",
    "self_attention.query_key_value.weight",
    "self_attention.query_key_value.bias",
    "self_attention.dense.weight",
    "post_attention_layernorm.weight",
    "mlp.dense_h_to_4h.weight",
    "mlp.dense_4h_to_h.weight",
)


def test_chatglm_tensor_names_map_to_the_record(tmp_path: Path) -> None:
    """A small checkpoint with chatglm3-6b's tensor names (its inv_freq buffer too), each tensor of the shape
    modeling_chatglm.py gives it: every tensor maps to the record, and the buffer is said to be one."""
    v, d, d_ff, h, g, h_d, layers = 97, 64, 80, 8, 2, 8, 2
    shapes = {
        "input_layernorm.weight": (d,),
        "self_attention.query_key_value.weight": ((h + 2 * g) * h_d, d),
        "self_attention.query_key_value.bias": ((h + 2 * g) * h_d,),
        "self_attention.dense.weight": (d, h * h_d),
        "post_attention_layernorm.weight": (d,),
        "mlp.dense_h_to_4h.weight": (2 * d_ff, d),
        "mlp.dense_4h_to_h.weight": (d, d_ff),
    }
    assert sorted(shapes) == sorted(CHATGLM_LAYER_TENSORS)
    tensors = {
        f"transformer.encoder.layers.{i}.{leaf}": torch.zeros(shape)
        for i in range(layers)
        for leaf, shape in shapes.items()
    }
    tensors |= {"transformer.embedding.word_embeddings.weight": torch.zeros(v, d)}
    tensors |= {
        "transformer.encoder.final_layernorm.weight": torch.zeros(d),
        "transformer.output_layer.weight": torch.zeros(v, d),
    }
    params = sum(t.numel() for t in tensors.values())
    tensors["transformer.rotary_pos_emb.inv_freq"] = torch.zeros(h_d // 4)
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    config = {**CHATGLM3_6B, "padded_vocab_size": v, "hidden_size": d, "ffn_hidden_size": d_ff}
    config |= {"num_attention_heads": h, "multi_query_group_num": g, "kv_channels": h_d, "num_layers": layers}
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = verify(str(tmp_path))
    assert not result.unmapped, [t.name for t in result.unmapped]
    assert result.formula_total == params
    assert {c.path for c in result.differences} <= {"buffer/rotary_pos_emb.inv_freq"}


def test_chatglm_published_config_counts_and_refuses_what_it_does_not_describe(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CHATGLM3_6B))
    result = run("count", str(path), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == 6_243_584_000
    for change, message in (
        ({"position_encoding_2d": True, "inner_hidden_size": 16384}, "the first ChatGLM-6B"),
        ({"pre_seq_len": 128}, "pre_seq_len: a P-tuning v2 prefix encoder"),
        ({"quantization_bit": 4}, "quantization_bit"),
        ({"num_attention_heads": 33}, "num_attention_heads (33) is not divisible by multi_query_group_num (2)"),
    ):
        path.write_text(json.dumps({**CHATGLM3_6B, **change}))
        refused = run("count", str(path))
        assert refused.exit_code == 1 and refused.stdout == "", change
        assert message in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.stderr


# The first Qwen (model_type qwen). Qwen-7B-Chat's config.json as published (a public copy:
# github.com/undefdev/Qwen-7B-Chat config.json, commit 405556da0316d12d3f22161851de0fa05553aae9), with the first
# configs' key names (n_embd, n_head, n_layer, ffn_hidden_size).
QWEN_7B_CHAT = {
    "activation": "swiglu",
    "architectures": ["QWenLMHeadModel"],
    "auto_map": {
        "AutoConfig": "configuration_qwen.QWenConfig",
        "AutoModelForCausalLM": "modeling_qwen.QWenLMHeadModel",
    },
    "bf16": True,
    "ffn_hidden_size": 22016,
    "kv_channels": 128,
    "layer_norm_epsilon": 1e-05,
    "model_type": "qwen",
    "n_embd": 4096,
    "n_head": 32,
    "n_layer": 32,
    "n_positions": 6144,
    "no_bias": True,
    "padded_vocab_size": 151936,
    "pos_emb": "rotary",
    "rotary_emb_base": 10000,
    "rotary_pct": 1.0,
    "seq_length": 2048,
    "tie_word_embeddings": False,
    "vocab_size": 151936,
}
# Qwen-72B's sizes under the later key names
QWEN_72B = {
    "architectures": ["QWenLMHeadModel"],
    "model_type": "qwen",
    "hidden_size": 8192,
    "intermediate_size": 49152,
    "kv_channels": 128,
    "num_attention_heads": 64,
    "num_hidden_layers": 80,
    "no_bias": True,
    "vocab_size": 152064,
}


def qwen_by_hand(layers: int, d: int, heads: int, intermediate: int, vocab: int) -> int:
    """modeling_qwen.py: per layer c_attn d·3·heads·128 with its bias 3·heads·128, c_proj heads·128·d, w1 and w2
    d·(intermediate // 2), c_proj (intermediate // 2)·d and two RMSNorms 2·d; wte and lm_head V·d; ln_f d."""
    half = intermediate // 2
    layer = 3 * d * heads * 128 + 3 * heads * 128 + heads * 128 * d + 3 * d * half + 2 * d
    return 2 * vocab * d + layers * layer + d


def test_qwen_7b_and_72b_by_hand() -> None:
    assert read_config(QWEN_7B_CHAT, "Qwen-7B-Chat").counts.total == qwen_by_hand(32, 4096, 32, 22016, 151936)
    assert qwen_by_hand(32, 4096, 32, 22016, 151936) == 7_721_324_544  # 7.72B
    assert read_config(QWEN_72B, "Qwen-72B").counts.total == qwen_by_hand(80, 8192, 64, 49152, 152064)
    assert qwen_by_hand(80, 8192, 64, 49152, 152064) == 72_287_920_128  # 72.29B


@pytest.mark.parametrize("no_bias", [True, False])
def test_qwen_tensor_names_map_to_the_record(tmp_path: Path, no_bias: bool) -> None:
    """A small checkpoint with Qwen-7B's tensor names, each of the shape modeling_qwen.py gives it (and the biases of
    c_proj, w1, w2 and the MLP's c_proj without no_bias)."""
    v, d, d_ff, h, h_d, layers = 97, 64, 80, 8, 8, 2
    shapes = {
        "ln_1.weight": (d,),
        "attn.c_attn.weight": (3 * h * h_d, d),
        "attn.c_attn.bias": (3 * h * h_d,),
        "attn.c_proj.weight": (h * h_d, d),
        "ln_2.weight": (d,),
        "mlp.w1.weight": (d_ff // 2, d),
        "mlp.w2.weight": (d_ff // 2, d),
        "mlp.c_proj.weight": (d, d_ff // 2),
    }
    if not no_bias:
        shapes |= {"attn.c_proj.bias": (h * h_d,), "mlp.w1.bias": (d_ff // 2,), "mlp.w2.bias": (d_ff // 2,)}
        shapes |= {"mlp.c_proj.bias": (d,)}
    tensors = {f"transformer.h.{i}.{leaf}": torch.zeros(shape) for i in range(layers) for leaf, shape in shapes.items()}
    tensors |= {"transformer.wte.weight": torch.zeros(v, d), "transformer.ln_f.weight": torch.zeros(d)}
    tensors["lm_head.weight"] = torch.zeros(v, d)
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    config = {**QWEN_7B_CHAT, "padded_vocab_size": v, "vocab_size": v, "n_embd": d, "ffn_hidden_size": d_ff}
    config |= {"n_head": h, "kv_channels": h_d, "n_layer": layers, "no_bias": no_bias}
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = verify(str(tmp_path))
    assert not result.unmapped, [t.name for t in result.unmapped]
    assert result.match, [(c.path, c.formula, c.checkpoint) for c in result.differences]
    assert result.formula_total == sum(t.numel() for t in tensors.values())


def test_qwen_refuses_what_it_does_not_describe(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    for change, message in (
        ({"pos_emb": "learned"}, "pos_emb 'learned'"),
        ({"padded_vocab_size": 152064}, "padded_vocab_size (152064) differs from vocab_size (151936)"),
    ):
        path.write_text(json.dumps({**QWEN_7B_CHAT, **change}))
        refused = run("count", str(path))
        assert refused.exit_code == 1 and refused.stdout == "", change
        assert message in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.stderr


# MiMo-7B (model_type mimo): XiaomiMiMo/MiMo-7B-Base's sizes, one MTP layer.
MIMO_7B = {
    "architectures": ["MiMoForCausalLM"],
    "auto_map": {
        "AutoConfig": "configuration_mimo.MiMoConfig",
        "AutoModel": "modeling_mimo.MiMoModel",
        "AutoModelForCausalLM": "modeling_mimo.MiMoForCausalLM",
    },
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "max_window_layers": 36,
    "model_type": "mimo",
    "num_attention_heads": 32,
    "num_hidden_layers": 36,
    "num_key_value_heads": 8,
    "tie_word_embeddings": False,
    "use_sliding_window": False,
    "vocab_size": 151680,
    "num_nextn_predict_layers": 1,
}


def test_mimo_7b_by_hand_with_its_mtp_layer(tmp_path: Path) -> None:
    """modeling_mimo.py: a Qwen2 decoder layer (q with its bias 4096² + 4096, k and v 4096·1024 + 1024 each, o 4096²,
    the MLP 3·4096·11008, two RMSNorms) 36 times, the embedding and the head 151680·4096 each, the final norm; the MTP
    layer is a decoder layer with input_proj 2·4096·4096 and three RMSNorms more. Its forward runs no MTP layer: the
    FLOPs leave it out."""
    layer = 4096**2 + 4096 + 2 * (4096 * 1024 + 1024) + 4096**2 + 3 * 4096 * 11008 + 2 * 4096
    main = 36 * layer + 2 * 151680 * 4096 + 4096
    mtp = layer + 2 * 4096 * 4096 + 3 * 4096
    model = read_config(MIMO_7B, "MiMo-7B-Base")
    assert model.counts.total == main + mtp == 7_833_409_536  # 7.83B
    assert read_config({**MIMO_7B, "num_nextn_predict_layers": 0}, "x").counts.total == main
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MIMO_7B))
    flops = run("flops", str(path), "--seq", "1", "--json")
    assert flops.exit_code == 0, flops.output
    assert "mtp/" not in flops.stdout and "attention/q_proj" in flops.stdout
