"""LongCat-Flash's MTP module (families/longcat_flash.toml [mtp]) against the checkpoint's tensor list.

The checkpoint's MTP tensors are those vLLM's loader reads (vllm-project/vllm
vllm/model_executor/models/longcat_flash_mtp.py, commit 0bb55d60cb667d2f4e263b55304a30b38fe2e55c,
``new_to_old_names_mapping``; SGLang's longcat_flash_nextn.py lists the same): model.mtp.embed_tokens,
model.mtp.layers.0.{eh_proj, enorm.m, hnorm.m, input_layernorm, post_attention_layernorm}, its MLA attention
model.mtp.layers.0.self_attn.{q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj,
o_proj}, its dense MLP model.mtp.layers.0.transformer_layer.mlp.{gate_proj, up_proj, down_proj} (of ffn_hidden_size:
vLLM's FlashConfig takes intermediate_size from it) and model.mtp.norm. The layer's attention, MLP and two norms are
one sublayer of transformers' LongcatFlashDecoderLayer (self_attn.0, mlps.0, input_layernorm.0,
post_attention_layernorm.0): the test writes those, built by transformers, under the MTP names.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import torch
from oracle import VERSIONS, _hf_config, meta_total
from refusal import run
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

from llmcount.checkpoint import verify
from llmcount.formulas import mtp
from llmcount.formulas.config import read_config

SMALL = {
    "model_type": "longcat_flash",
    "vocab_size": 97,
    "hidden_size": 64,
    "num_layers": 2,
    "ffn_hidden_size": 80,
    "expert_ffn_hidden_size": 16,
    "num_attention_heads": 4,
    "q_lora_rank": 24,
    "kv_lora_rank": 16,
    "qk_rope_head_dim": 8,
    "head_dim": 8,
    "qk_nope_head_dim": 12,
    "v_head_dim": 10,
    "n_routed_experts": 4,
    "zero_expert_num": 2,
    "moe_topk": 2,
}
SUBLAYER = {  # transformers' name of sublayer 0 -> the checkpoint's MTP layer's name
    "self_attn.0.": "self_attn.",
    "mlps.0.": "transformer_layer.mlp.",
    "input_layernorm.0.": "input_layernorm.",
    "post_attention_layernorm.0.": "post_attention_layernorm.",
}


def mtp_by_hand(d: int, d_ff: int, vocab: int, h: int, r_q: int, r_kv: int, nope: int, rope: int, v: int) -> int:
    """One MLA attention (q_a_proj d·r_q, q_a_layernorm r_q, q_b_proj r_q·h·(nope + rope), kv_a_proj_with_mqa
    d·(r_kv + rope), kv_a_layernorm r_kv, kv_b_proj r_kv·h·(nope + v), o_proj h·v·d), a dense MLP 3·d·d_ff and its two
    norms; enorm, hnorm, eh_proj 2·d·d and the final norm; the embedding's copy V·d."""
    attention = d * r_q + r_q + r_q * h * (nope + rope) + d * (r_kv + rope) + r_kv + r_kv * h * (nope + v) + h * v * d
    return attention + 3 * d * d_ff + 2 * d + 2 * d + 2 * d * d + d + vocab * d


def test_longcat_flash_chat_mtp_module_by_hand() -> None:
    """LongCat-Flash-Chat's sizes (LongcatFlashConfig's defaults): d = 6144, ffn_hidden_size 12288, V = 131072, 64
    heads, q_lora_rank 1536, kv_lora_rank 512, 128 + 64 query dims, 128 value dims."""
    model = read_config({"model_type": "longcat_flash"}, "LongCat-Flash-Chat")
    found = mtp.module(model)
    assert found is not None and found.layers == 1
    assert found.total == mtp_by_hand(6144, 12288, 131072, 64, 1536, 512, 128, 64, 128) == 1_197_899_776
    shown = {c.path: c.formula for c in found.components}
    assert shown["mtp/attention/q_a_proj"] == "N_mtp*d*r_q" and shown["mtp/mlp/up_proj"] == "N_mtp*d*d_ff"
    assert not any(path.startswith("mtp/moe/") for path in shown)


def test_count_mtp_adds_it(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL))
    plain = json.loads(run("count", str(path), "--json").stdout)["total"]
    result = run("count", str(path), "--mtp", "--json")
    assert result.exit_code == 0, result.output
    small = mtp_by_hand(64, 80, 97, 4, 24, 16, 12, 8, 10)
    assert json.loads(result.stdout)["total"] == plain + small


def test_verify_maps_the_published_mtp_names(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(_hf_config(SMALL))
    tensors = {name: p.detach().clone() for name, p in model.named_parameters()}
    own_layer = 0
    for name, tensor in list(tensors.items()):
        for old, new in SUBLAYER.items():
            prefix = f"model.layers.1.{old}"
            if name.startswith(prefix):
                tensors[f"model.mtp.layers.0.{new}{name[len(prefix) :]}"] = tensor.clone()
                own_layer += tensor.numel()
    d = SMALL["hidden_size"]
    tensors["model.mtp.embed_tokens.weight"] = torch.zeros(SMALL["vocab_size"], d)
    for leaf, shape in (("eh_proj.weight", (d, 2 * d)), ("enorm.m.weight", (d,)), ("hnorm.m.weight", (d,))):
        tensors[f"model.mtp.layers.0.{leaf}"] = torch.zeros(shape)
    tensors["model.mtp.norm.weight"] = torch.zeros(d)
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    (tmp_path / "config.json").write_text(json.dumps(SMALL))
    result = verify(str(tmp_path))
    assert not [t.name for t in result.unmapped if t.name.startswith("model.mtp.")]
    rows = {c.path: (c.formula, c.checkpoint) for c in result.components if c.path.startswith("mtp/")}
    assert rows and all(formula == stored for formula, stored in rows.values()), rows
    small = mtp_by_hand(64, 80, 97, 4, 24, 16, 12, 8, 10)
    assert sum(stored for _, stored in rows.values()) == small
    assert own_layer == small - (2 * d * d + 3 * d + SMALL["vocab_size"] * d), VERSIONS  # transformers' sublayer 0
    assert result.formula_total == meta_total(SMALL) + small, VERSIONS
