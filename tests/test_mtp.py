"""The multi-token-prediction (MTP) module of released checkpoints: counted, added with --mtp, mapped by verify.

transformers does not build the MTP module, so the oracles are: the published tensor names and shapes of
DeepSeek-V3's layer 61 and the Hub's parameter total of its checkpoint (figures below, with their sources), and
transformers' own decoder layer (a model built with one layer more: its last layer is what the MTP module's decoder
layer is) for the counts and for small checkpoints written by save_pretrained.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from oracle import VERSIONS, _freeze, _hf_config, _meta_model, class_defaults, hf_count, meta_total
from refusal import assert_refused, run
from safetensors.torch import load_file, save_file
from test_flops import SMALL
from test_verify import elements_in
from transformers import AutoConfig, AutoModelForCausalLM

import llmcount
from llmcount.checkpoint import verify
from llmcount.formulas import mtp, records
from llmcount.formulas.config import read_config

# ---------------------------------------------------------------------------------------------------------------
# DeepSeek-V3 as published

# The tensors of layer 61 that are the MTP module's own (the rest of layer 61 is a decoder layer named as the model's),
# with their shapes in the Hub's safetensors headers of deepseek-ai/DeepSeek-V3, as printed by model-inspect
# (github.com/simpx/model-inspect README.md, commit 5894630bcee8b6b22b81b41583d8be09b05c1112); the module's parts as
# DeepSeek's README_WEIGHTS.md lists them (mirrored in tenstorrent/tt-metal models/demos/deepseek_v3/reference/
# README_WEIGHTS.md, commit f3712cc6f089cb59d2c8379118a0701de6dd1ade): embed_tokens, enorm, hnorm, eh_proj, a decoder
# layer "identical to the main model's", shared_head (norm and head).
DEEPSEEK_V3_LAYER_61 = {
    "model.layers.61.embed_tokens.weight": (129280, 7168),
    "model.layers.61.enorm.weight": (7168,),
    "model.layers.61.hnorm.weight": (7168,),
    "model.layers.61.eh_proj.weight": (7168, 14336),
    "model.layers.61.shared_head.norm.weight": (7168,),
    "model.layers.61.shared_head.head.weight": (129280, 7168),
}
DEEPSEEK_V3_OWN_PATHS = {
    "model.layers.61.embed_tokens.weight": "mtp/embed_tokens",
    "model.layers.61.enorm.weight": "mtp/enorm",
    "model.layers.61.hnorm.weight": "mtp/hnorm",
    "model.layers.61.eh_proj.weight": "mtp/eh_proj",
    "model.layers.61.shared_head.norm.weight": "mtp/shared_head.norm",
    "model.layers.61.shared_head.head.weight": "mtp/shared_head.head",
}
# The Hub's safetensors metadata of deepseek-ai/DeepSeek-V3 gives 684,531,386,000 parameters (the preset's published
# source, llmcount/presets/index.json): every stored tensor's elements, MTP module, routing-bias buffers and FP8 block
# scales included.
DEEPSEEK_V3_HUB_ELEMENTS = 684_531_386_000


def test_deepseek_v3_mtp_tensors_are_the_published_ones() -> None:
    model = llmcount.load("deepseek-v3").model
    found = mtp.module(model)
    assert found is not None and found.layers == 1
    names = mtp.tensor_names(found, model.values)
    counts = {c.path: c.count for c in found.components}
    for name, shape in DEEPSEEK_V3_LAYER_61.items():
        path, rest = names.match(name)
        assert (path, rest) == (DEEPSEEK_V3_OWN_PATHS[name], None), name
        assert counts[path] == math.prod(shape), name
    # the decoder layer's tensors are the model's names under model.layers.61
    assert names.match("model.layers.61.self_attn.q_a_proj.weight") == (None, "self_attn.q_a_proj.weight")
    assert names.match("model.layers.60.self_attn.q_a_proj.weight") == (None, None)


def test_deepseek_v3_mtp_decoder_layer_is_transformers_layer() -> None:
    """The MTP decoder layer equals layer 61 of DeepseekV3ForCausalLM built with 62 layers (an MoE layer)."""
    config = AutoConfig.for_model("deepseek_v3", num_hidden_layers=62)
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_config(config)
    layer_61 = sum(p.numel() for name, p in model.named_parameters() if name.startswith("model.layers.61."))
    found = mtp.module(llmcount.load("deepseek-v3").model)
    decoder = sum(c.count for c in found.components if c.path.count("/") > 1)
    assert decoder == layer_61 == 11_507_286_016, VERSIONS


def test_deepseek_v3_hub_total_is_model_mtp_buffers_and_fp8_scales() -> None:
    """The Hub's count of deepseek-ai/DeepSeek-V3 = transformers' model + the MTP module + the stored routing-bias
    buffers + the FP8 block scales, each derived here by hand from the config: nothing left unexplained."""
    model = llmcount.load("deepseek-v3").model
    found = mtp.module(model)
    d, v, r_q, r_kv, h, d_ff, d_moe, n = 7168, 129280, 1536, 512, 128, 18432, 2048, 256
    own = 2 * v * d + 2 * d * d + 3 * d  # embed_tokens and shared_head.head, eh_proj, enorm, hnorm, shared_head.norm
    assert found.total - own == 11_507_286_016
    assert found.total == 13_463_426_048

    def scales(out: int, inp: int) -> int:  # weight_scale_inv: one fp32 per 128 × 128 block of an FP8 weight
        return math.ceil(out / 128) * math.ceil(inp / 128)

    attention = scales(r_q, d) + scales(h * 192, r_q) + scales(r_kv + 64, d)  # q_a, q_b, kv_a_proj_with_mqa
    attention += scales(h * 256, r_kv) + scales(d, h * 128)  # kv_b, o_proj
    dense = 2 * scales(d_ff, d) + scales(d, d_ff)
    moe = (n + 1) * (2 * scales(d_moe, d) + scales(d, d_moe))  # the routed experts and the shared expert
    layers, dense_layers = 61 + 1, 3  # with the MTP layer, an MoE layer
    fp8_scales = layers * attention + dense_layers * dense + (layers - dense_layers) * moe
    routing_bias = (layers - dense_layers) * n  # e_score_correction_bias, a buffer in transformers
    assert model.counts.total + found.total + routing_bias + fp8_scales == DEEPSEEK_V3_HUB_ELEMENTS


# ---------------------------------------------------------------------------------------------------------------
# count and memory


def test_count_says_the_mtp_module_and_mtp_counts_it() -> None:
    plain = run("count", "deepseek-v3")
    assert plain.exit_code == 0
    assert "671,026,404,352" in plain.stdout
    line = " ".join(plain.stdout.split())
    assert "+ 13.46B MTP module in the checkpoint (num_nextn_predict_layers = 1; 684.49B with it)" in line
    assert "--mtp counts it" in line
    counted = run("count", "deepseek-v3", "--mtp", "--json")
    data = json.loads(counted.stdout)
    assert data["total"] == 671_026_404_352 + 13_463_426_048
    assert data["total_without_mtp"] == 671_026_404_352
    assert data["mtp"]["counted"] and data["mtp"]["total"] == 13_463_426_048
    assert "transformers does not build" in data["mtp"]["note"]
    assert sum(c["count"] for c in data["components"]) == data["total"]
    assert json.loads(run("count", "deepseek-v3", "--json").stdout)["mtp"]["counted"] is False


def test_memory_mtp_adds_its_weights_and_its_layer_cache() -> None:
    plain = json.loads(run("memory", "deepseek-v3", "--json").stdout)
    with_mtp = json.loads(run("memory", "deepseek-v3", "--mtp", "--json").stdout)
    lines = {line["name"]: line["bytes"] for line in with_mtp["lines"]}
    assert lines["mtp_weights"] == 2 * 13_463_426_048  # bf16
    # one MLA layer's latent cache: (r_kv + d_rope) elements per token, bf16, S = 4096
    assert lines["mtp_kv_cache"] == 2 * (512 + 64) * 4096
    assert with_mtp["total_bytes"] == plain["total_bytes"] + lines["mtp_weights"] + lines["mtp_kv_cache"]


def test_mtp_refused_on_a_model_without_mtp_layers(tmp_path: Path) -> None:
    assert_refused(run("count", "qwen3-8b", "--mtp"), "--mtp", "qwen3", "no multi-token-prediction layers")
    assert_refused(run("memory", "llama-2-7b", "--mtp"), "--mtp", "llama")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**SMALL["deepseek-v3-mla-q-lora-shared-dense"], "num_nextn_predict_layers": 0}))
    assert_refused(run("count", str(config), "--mtp"), "num_nextn_predict_layers = 0")
    plain = run("count", str(config))
    assert plain.exit_code == 0 and "MTP" not in plain.stdout


# ---------------------------------------------------------------------------------------------------------------
# verify: a small checkpoint with an MTP module, written by transformers


def save_with_mtp(config: dict[str, Any], folder: Path, count: int = 1) -> tuple[Path, int]:
    """A checkpoint as DeepSeek publishes one: the model of ``config`` written by save_pretrained with ``count``
    layers more (transformers' own layers, named model.layers.N ...), the config saying N layers and
    num_nextn_predict_layers = count, and each MTP layer's own weights added with the safetensors library. Returns
    the folder and the MTP module's parameters: transformers' extra layers plus the own weights (2Vd + 2d² + 3d)."""
    layers = config["num_hidden_layers"]
    bigger = {**config, "num_hidden_layers": layers + count}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(_hf_config(bigger))
        model.save_pretrained(folder)
    extra = sum(
        p.numel()
        for name, p in model.named_parameters()
        if any(name.startswith(f"model.layers.{layers + j}.") for j in range(count))
    )
    path = folder / "model.safetensors"
    tensors = load_file(path)
    v, d = config["vocab_size"], config["hidden_size"]
    for j in range(count):
        at = f"model.layers.{layers + j}"
        tensors[f"{at}.embed_tokens.weight"] = torch.zeros(v, d)
        tensors[f"{at}.enorm.weight"] = torch.zeros(d)
        tensors[f"{at}.hnorm.weight"] = torch.zeros(d)
        tensors[f"{at}.eh_proj.weight"] = torch.zeros(d, 2 * d)
        tensors[f"{at}.shared_head.norm.weight"] = torch.zeros(d)
        tensors[f"{at}.shared_head.head.weight"] = torch.zeros(v, d)
    save_file(tensors, path, metadata={"format": "pt"})
    written = json.loads((folder / "config.json").read_text())
    written.update(num_hidden_layers=layers, num_nextn_predict_layers=count)
    (folder / "config.json").write_text(json.dumps(written))
    return folder, extra + count * (2 * v * d + 2 * d * d + 3 * d)


@pytest.mark.parametrize("count", [1, 2])
def test_verify_maps_the_mtp_layers(tmp_path: Path, count: int) -> None:
    config = SMALL["deepseek-v3-mla-q-lora-shared-dense"]  # 3 layers, the first dense, 8 experts
    folder, module = save_with_mtp(config, tmp_path / "mtp", count)
    result = verify(str(folder))
    assert not result.unmapped, [t.name for t in result.unmapped]
    assert result.checkpoint_total == elements_in(folder)
    assert result.formula_total == hf_count(config) + module, VERSIONS
    # what differs is the routing bias, a buffer transformers saves: 2 MoE layers of the model and each MTP layer
    differences = {c.path: (c.formula, c.checkpoint) for c in result.differences}
    assert differences == {
        "moe/router.e_score_correction_bias": (0, 2 * 8),
        "mtp/moe/router.e_score_correction_bias": (0, count * 8),
    }
    assert all("buffer" in c.note for c in result.differences)
    rows = {c.path: (c.formula, c.checkpoint) for c in result.components}
    assert rows["mtp/eh_proj"] == (count * 2 * 64 * 64,) * 2
    assert rows["mtp/moe/experts"][0] == rows["mtp/moe/experts"][1] > 0
    assert not any(p.startswith("extra/") for p in rows)
    assert "MTP module" in result.note and "transformers does not build" in result.note


def test_verify_without_mtp_tensors_adds_no_mtp_rows(tmp_path: Path) -> None:
    """A checkpoint that leaves the MTP module out (the config still declares it) is the model alone."""
    config = SMALL["deepseek-v3-mla-q-lora-shared-dense"]
    folder = tmp_path / "plain"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        AutoModelForCausalLM.from_config(_hf_config(config)).save_pretrained(folder)
    result = verify(str(folder))
    assert result.formula_total == hf_count(config)
    assert not any(c.path.startswith("mtp") for c in result.components)


def test_verify_index_explains_total_size_by_the_mtp_module(tmp_path: Path) -> None:
    config = SMALL["deepseek-v3-mla-q-lora-shared-dense"]
    folder, module = save_with_mtp(config, tmp_path / "mtp")
    tensors = load_file(folder / "model.safetensors")
    buffers = sum(t.numel() for name, t in tensors.items() if name.endswith("e_score_correction_bias"))
    parameters = {name: t for name, t in tensors.items() if not name.endswith("e_score_correction_bias")}
    save_file(parameters, folder / "model.safetensors", metadata={"format": "pt"})
    index = folder / "model.safetensors.index.json"
    total = sum(t.numel() for t in parameters.values())
    weight_map = dict.fromkeys(parameters, "model.safetensors")
    index.write_text(json.dumps({"metadata": {"total_size": 4 * total}, "weight_map": weight_map}))
    assert buffers == 3 * 8
    result = verify(str(folder), index=str(index))
    assert result.checkpoint_total == total == hf_count(config) + module
    assert result.match and result.formula_total == total
    (row,) = result.components
    assert (row.path, row.formula, row.checkpoint) == ("mtp", module, module)
    assert "the index lists its" in result.note and "MTP module" in result.note


def test_mtp_decoder_is_read_with_the_config_checks() -> None:
    """The MTP decoder layer goes through the record's checks as the model does: a config the record refuses is
    refused before any MTP count."""
    config = {**SMALL["deepseek-v3-mla-q-lora-shared-dense"], "num_nextn_predict_layers": 3}
    model = read_config(config, "test")
    found = mtp.module(model)
    assert found.layers == 3
    one = mtp.module(read_config({**config, "num_nextn_predict_layers": 1}, "test"))
    assert found.total == 3 * one.total


# ---------------------------------------------------------------------------------------------------------------
# every record with an [mtp] table: its MTP decoder layer is transformers' layer of that kind

MTP_FAMILIES = sorted(name for name in records.names() if records.family(name).mtp is not None)
# a record whose MTP layer is a share of its decoder layer (LongCat-Flash's) is checked in test_remote_longcat_mtp.py
WHOLE_LAYER = [name for name in MTP_FAMILIES if not records.family(name).mtp.share]


def test_the_families_with_an_mtp_module() -> None:
    expected = {"deepseek_v3", "deepseek_v32", "glm4_moe", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"}
    assert expected <= set(MTP_FAMILIES)


@pytest.mark.parametrize("model_type", WHOLE_LAYER)
def test_mtp_decoder_layer_is_transformers_layer_of_that_kind(model_type: str) -> None:
    family = records.family(model_type)
    spec = family.mtp
    config = {**class_defaults(model_type), "model_type": model_type, spec.count.key: 2}
    found = mtp.module(read_config(config, "test"))
    assert found is not None and found.layers == 2
    layers = config.get("num_hidden_layers")
    per_layer = {k for k, v in config.items() if isinstance(v, list) and len(v) == layers}  # the model's N layers
    one_layer = {k: v for k, v in config.items() if k not in per_layer} | dict(spec.decoder)
    model, _ = _meta_model(_freeze(one_layer))
    layer = sum(p.numel() for name, p in model.named_parameters() if ".layers.0." in f".{name}")
    decoder = sum(c.count for c in found.components if c.path.count("/") > 1)
    assert decoder == 2 * layer, VERSIONS
    own = sum(c.count for c in found.components if c.path.count("/") == 1)
    assert found.total == decoder + own


# Qwen3-Next's layout: mtp.fc, mtp.pre_fc_norm_embedding, mtp.pre_fc_norm_hidden, mtp.norm and mtp.layers.{i}, a
# full-attention decoder layer of the model's kind (vLLM qwen3_next_mtp.py)
QWEN3_NEXT = {
    "model_type": "qwen3_next",
    "vocab_size": 97,
    "hidden_size": 64,
    "intermediate_size": 80,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 8,
    "linear_value_head_dim": 8,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 24,
}


def save_one_layer_more(bigger: dict[str, Any], folder: Path) -> tuple[int, dict[str, Any]]:
    """The model of ``bigger`` written by save_pretrained; returns its last decoder layer's parameters and the
    file's tensors, for a test to rename that layer as an MTP layer and add the MTP module's own weights."""
    last = bigger["num_hidden_layers"] - 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(_hf_config(bigger))
        model.save_pretrained(folder)
    layer = sum(p.numel() for name, p in model.named_parameters() if name.startswith(f"model.layers.{last}."))
    return layer, load_file(folder / "model.safetensors")


def rewrite(folder: Path, tensors: dict[str, Any], **config: Any) -> None:
    """``tensors`` saved over the folder's model.safetensors, and ``config`` over keys of its config.json."""
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    written = json.loads((folder / "config.json").read_text())
    written.update(config)
    (folder / "config.json").write_text(json.dumps(written))


def test_verify_maps_qwen3_next_mtp_tensors(tmp_path: Path) -> None:
    layers = QWEN3_NEXT["num_hidden_layers"]
    kinds = ["linear_attention", "linear_attention", "linear_attention", "full_attention"]
    bigger = {**QWEN3_NEXT, "num_hidden_layers": layers + 1, "layer_types": [*kinds, "full_attention"]}
    folder = tmp_path / "qwen3-next"
    layer, stored = save_one_layer_more(bigger, folder)
    tensors = {}
    for name, tensor in stored.items():
        tensors[name.replace(f"model.layers.{layers}.", "mtp.layers.0.")] = tensor
    d = QWEN3_NEXT["hidden_size"]
    tensors |= {
        "mtp.fc.weight": torch.zeros(d, 2 * d),
        "mtp.pre_fc_norm_embedding.weight": torch.zeros(d),
        "mtp.pre_fc_norm_hidden.weight": torch.zeros(d),
        "mtp.norm.weight": torch.zeros(d),
    }
    rewrite(folder, tensors, num_hidden_layers=layers, layer_types=kinds, mtp_num_hidden_layers=1)
    result = verify(str(folder))
    assert not result.unmapped, [t.name for t in result.unmapped]
    assert result.match, [(c.path, c.formula, c.checkpoint) for c in result.differences]
    plain = {**QWEN3_NEXT, "layer_types": kinds}
    assert result.formula_total == result.checkpoint_total == meta_total(plain) + layer + 2 * d * d + 3 * d, VERSIONS
    assert {c.path for c in result.components} >= {"mtp/fc", "mtp/norm", "mtp/attention/q_proj", "mtp/moe/experts"}


@pytest.mark.parametrize(
    "value, needle",
    [
        (-1, "must be at least 0"),
        (10**9, "MTP layers are counted up to"),
        ("2", "must be an integer"),
        (True, "integer"),
    ],
)
def test_bad_mtp_layer_counts_are_one_line(tmp_path: Path, value: Any, needle: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**SMALL["deepseek-v3-mla-q-lora-shared-dense"], "num_nextn_predict_layers": value}))
    for args in (["count", str(path)], ["count", str(path), "--mtp"], ["memory", str(path), "--mtp"]):
        assert_refused(run(*args), "num_nextn_predict_layers", needle)


@pytest.mark.parametrize(
    "change, needle",
    [
        (lambda m: m.update(extra=1), "unknown fields"),
        (lambda m: m["terms"][0].pop("tensor"), "'tensor'"),
        (lambda m: m.update(decoder={"first_k_dense_replace": 0}), "num_hidden_layers = 1"),
        (lambda m: m.update(layers="model.layers"), "{i}"),
        (lambda m: m["terms"][0].update(path="eh_proj"), "mtp/"),
        (lambda m: m["terms"][0].update(expr="d_sh*d"), "does not read"),
        (lambda m: m["terms"][0].update(tensor="model.eh_proj"), "{i}"),
        (lambda m: m.update(terms=[]), "needs [[mtp.terms]]"),
    ],
)
def test_a_bad_mtp_table_is_refused_naming_the_field(change, needle: str) -> None:
    text = (Path(records.__file__).parent / "families" / "deepseek_v3.toml").read_text("utf-8")
    data = records.tomllib.loads(text)
    change(data["mtp"])
    with pytest.raises(records.RecordError, match=re.escape(needle)):
        records.parse_record(data, "deepseek_v3.toml")


def test_verify_maps_mimo_v2_flash_mtp_tensors(tmp_path: Path) -> None:
    """MiMo-V2-Flash's layout (vLLM mimo_v2_flash_mtp.py): model.mtp.layers.{i} holds enorm, hnorm, eh_proj,
    final_layernorm and a sliding-window decoder block with a dense MLP, its second norm named pre_mlp_layernorm."""
    config = SMALL["mimo-v2-flash-sliding-kv-heads"]
    layers = config["num_hidden_layers"]
    kinds = ["full_attention" if i == 0 or (i + 1) % 6 == 0 else "sliding_attention" for i in range(layers)]
    mlps = ["dense" if i == 0 else "sparse" for i in range(layers)]
    plain = {**config, "layer_types": kinds, "mlp_layer_types": mlps}
    bigger = {**plain, "num_hidden_layers": layers + 1}
    bigger |= {"layer_types": [*kinds, "sliding_attention"], "mlp_layer_types": [*mlps, "dense"]}
    folder = tmp_path / "mimo"
    layer, stored = save_one_layer_more(bigger, folder)
    tensors = {}
    for name, tensor in stored.items():
        name = name.replace(f"model.layers.{layers}.", "model.mtp.layers.0.")
        tensors[name.replace("mtp.layers.0.post_attention_layernorm", "mtp.layers.0.pre_mlp_layernorm")] = tensor
    d = config["hidden_size"]
    for leaf, shape in (("enorm", (d,)), ("hnorm", (d,)), ("eh_proj", (d, 2 * d)), ("final_layernorm", (d,))):
        tensors[f"model.mtp.layers.0.{leaf}.weight"] = torch.zeros(shape)
    rewrite(
        folder, tensors, num_hidden_layers=layers, layer_types=kinds, mlp_layer_types=mlps, num_nextn_predict_layers=1
    )
    result = verify(str(folder))
    assert not result.unmapped, [t.name for t in result.unmapped]
    differences = {c.path: (c.formula, c.checkpoint) for c in result.differences}
    assert differences == {"moe/router.e_score_correction_bias": (0, 6 * 4)}, differences  # a buffer (6 MoE layers)
    assert result.formula_total == meta_total(plain) + layer + 2 * d * d + 3 * d, VERSIONS
    rows = {c.path: (c.formula, c.checkpoint) for c in result.components}
    assert rows["mtp/norms/post_attention_layernorm"] == (d, d)


GLM4_MOE = {  # GLM-4.5's layout is DeepSeek-V3's: model.layers.N.{embed_tokens, enorm, hnorm, eh_proj, shared_head}
    "model_type": "glm4_moe",
    "vocab_size": 97,
    "hidden_size": 64,
    "intermediate_size": 80,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
    "n_group": 1,
    "topk_group": 1,
    "attention_bias": True,
}


def test_verify_maps_glm4_moe_mtp_layer(tmp_path: Path) -> None:
    folder, module = save_with_mtp(GLM4_MOE, tmp_path / "glm")
    result = verify(str(folder))
    assert not result.unmapped, [t.name for t in result.unmapped]
    assert result.formula_total == meta_total(GLM4_MOE) + module, VERSIONS
    differences = {c.path: (c.formula, c.checkpoint) for c in result.differences}
    assert differences == {
        "moe/router.e_score_correction_bias": (0, 2 * 8),
        "mtp/moe/router.e_score_correction_bias": (0, 8),
    }


def test_verify_index_names_what_else_than_the_mtp_module_it_holds(tmp_path: Path) -> None:
    """An index whose total_size also holds the routing-bias buffers: the mtp row says how much is not the module."""
    config = SMALL["deepseek-v3-mla-q-lora-shared-dense"]
    folder, module = save_with_mtp(config, tmp_path / "mtp")
    tensors = load_file(folder / "model.safetensors")
    index = folder / "model.safetensors.index.json"
    total = sum(t.numel() for t in tensors.values())
    weight_map = dict.fromkeys(tensors, "model.safetensors")
    index.write_text(json.dumps({"metadata": {"total_size": 4 * total}, "weight_map": weight_map}))
    result = verify(str(folder), index=str(index))
    row, own, buffers = result.components
    assert (row.path, row.formula, row.checkpoint) == ("mtp", module, module)
    # the rest of total_size: routing biases of 8 experts, float32 buffers: 2 MoE layers' and the MTP layer's own
    assert (buffers.path, buffers.formula, buffers.checkpoint) == ("buffer/e_score_correction_bias", 0, 2 * 8)
    assert (own.path, own.formula, own.checkpoint) == ("mtp/buffer/e_score_correction_bias", 0, 8)
    assert "2 routing-bias buffers" in buffers.note
    assert not result.match
