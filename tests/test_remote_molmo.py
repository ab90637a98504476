"""Molmo (model_type molmo, remote code): the whole model as its modeling file's MolmoForCausalLM builds it (figures in
tests/remote_oracle/molmo.json, compared whole and part by part in tests/test_remote_built.py), against Molmo-7B-D's
published checkpoint, and MolmoE's configs (another modeling file) refused by name.

The published checkpoint: a public copy of Molmo-7B-D-0924 quantised with bitsandbytes nf4,
github.com/reubzdubz/Molmo7B_D_NF4Quant at commit edf464b955f389104b80bd57a9ecf52ce5530552: its config.json (the
original's, with a quantization_config added), and its model.safetensors.index.json, whose metadata states
total_parameters 8,021,025,280 (the model's parameters before quantisation, as transformers' save_pretrained writes
them) and total_size 6,661,964,712 bytes (nf4 and float16), and whose weight_map, less the quantisation's own tensors
(absmax, quant_map, quant_state), names the tensors ``published_names`` lists: 28 layers of the language model and
the vision backbone's 23 tower layers.

By hand, at Molmo-7B-D's sizes (d = 3584, d_ff = 37888, 28 layers, 28 heads of 128, 4 key-value heads, embedding_size
152064): the language model 2·152064·3584 + 128·3584 + 28·(3584·(3584 + 2·512) + (3584 + 2·512) + 3584² +
3584·37888 + 18944·3584 + 2·3584) + 3584 = 7,616,075,264; the tower (fixed by MolmoForCausalLM) 1024 + 577·1024 +
3·14²·1024 + 2·1024 + 23·(4·(1024² + 1024) + 2·1024·4096 + 4096 + 1024 + 4·1024) = 290,909,184; the connector
4·1024 + 3·(2·1024² + 1024) + 1024² + 1024 + 2·1024·18944 + 18944·3584 = 114,040,832.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from refusal import assert_refused, run

SPEC = json.loads((Path(__file__).parent / "remote_oracle" / "molmo.json").read_text("utf-8"))
MOLMO_7B_D = {
    **SPEC["configs"]["Molmo-7B-D-0924"]["config"],
    "model_type": "molmo",
    "architectures": ["MolmoForCausalLM"],
    "auto_map": {
        "AutoConfig": "config_molmo.MolmoConfig",
        "AutoModelForCausalLM": "modeling_molmo.MolmoForCausalLM",
    },
}
TOTAL_PARAMETERS = 8_021_025_280  # metadata.total_parameters of the published index
LANGUAGE = 2 * 152064 * 3584 + 128 * 3584 + 3584
LANGUAGE += 28 * (3584 * (3584 + 2 * 512) + (3584 + 2 * 512) + 3584**2 + 3584 * 37888 + 18944 * 3584 + 2 * 3584)
TOWER = 1024 + 577 * 1024 + 3 * 14**2 * 1024 + 2 * 1024
TOWER += 23 * (4 * (1024**2 + 1024) + 2 * 1024 * 4096 + 4096 + 1024 + 4 * 1024)
CONNECTOR = 4 * 1024 + 3 * (2 * 1024**2 + 1024) + 1024**2 + 1024 + 2 * 1024 * 18944 + 18944 * 3584

BLOCK = ("att_proj.bias", "att_proj.weight", "attn_norm.weight", "attn_out.weight", "ff_norm.weight")
BLOCK += ("ff_out.weight", "ff_proj.weight")
RESBLOCK = [f"attention.w{x}.{leaf}" for x in "qkvo" for leaf in ("weight", "bias")]
RESBLOCK += [
    f"{m}.{leaf}"
    for m in ("feed_forward.w1", "feed_forward.w2", "attention_norm", "ffn_norm")
    for leaf in ("weight", "bias")
]
BACKBONE = [f"image_vit.{leaf}" for leaf in ("class_embedding", "positional_embedding", "patch_embedding.weight")]
BACKBONE += ["image_vit.pre_ln.weight", "image_vit.pre_ln.bias", "pad_embed"]
BACKBONE += [f"image_pooling_2d.w{x}.{leaf}" for x in "qkvo" for leaf in ("weight", "bias")]
BACKBONE += [f"image_projector.w{i}.weight" for i in (1, 2, 3)]


def published_names(layers: int) -> set[str]:
    """The tensor names of Molmo-7B-D's index (less the quantisation's own), with ``layers`` language-model layers."""
    names = {f"model.transformer.blocks.{i}.{leaf}" for i in range(layers) for leaf in BLOCK}
    names |= {f"model.transformer.{leaf}" for leaf in ("wte.embedding", "wte.new_embedding", "ln_f.weight")}
    names |= {"model.transformer.ff_out.weight"}
    names |= {
        f"model.vision_backbone.image_vit.transformer.resblocks.{i}.{leaf}" for i in range(23) for leaf in RESBLOCK
    }
    return names | {f"model.vision_backbone.{leaf}" for leaf in BACKBONE}


def test_molmo_7b_d_whole_and_by_part(tmp_path: Path) -> None:
    assert (LANGUAGE, TOWER, CONNECTOR) == (7_616_075_264, 290_909_184, 114_040_832)
    assert LANGUAGE + TOWER + CONNECTOR == TOTAL_PARAMETERS == SPEC["figures"]["Molmo-7B-D-0924"]["total"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MOLMO_7B_D))
    result = run("count", str(path), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == TOTAL_PARAMETERS
    text = " ".join(run("count", str(path)).stdout.split())
    for figure in (LANGUAGE, TOWER, CONNECTOR, TOTAL_PARAMETERS):
        assert f"{figure:,}" in text, figure
    assert "as MolmoForCausalLM builds it" in text
    # no config.json of Molmo gives a vision_config: the tower's sizes are the modeling class's own
    assert "vision tower (molmo_vision, from the class's default vision_config)" in text
    assert [p["config"] for p in json.loads(result.stdout)["parts"][1:]] == [
        "the class's default vision_config",
        "the whole config",
    ]


def test_a_tower_read_from_its_sub_config_says_so(tmp_path: Path) -> None:
    """A Gemma 3 config with a vision_config names it; one without names the class's default."""
    for given, said in (
        ({"vision_config": {"model_type": "siglip_vision_model"}}, "from vision_config"),
        ({}, "from the class's default vision_config"),
    ):
        path = tmp_path / "config.json"
        path.write_text(json.dumps({"model_type": "gemma3", **given}))
        text = " ".join(run("count", str(path)).stdout.split())
        assert f"vision tower (siglip_vision_model, {said})" in text, text[:400]


def test_published_tensor_names_are_the_ones_the_modeling_file_builds() -> None:
    """The index's names at 28 layers; the same pattern, at the small figure's two layers, is every parameter name
    the modeling file built (tests/remote_oracle/molmo.json)."""
    assert len(published_names(28)) == 585  # the index's 921 entries less 336 quantisation tensors
    built = set(SPEC["figures"]["small"]["shapes"])
    assert built == published_names(2)
    small = SPEC["configs"]["small"]["config"]
    assert small["num_hidden_layers"] == 2 and small["qkv_bias"]


def test_published_names_at_the_published_sizes_map_and_count(tmp_path: Path) -> None:
    """verify with Molmo-7B-D's index names and its parameters in bfloat16: every name is placed, the bytes match."""
    from llmcount.checkpoint import verify

    (tmp_path / "config.json").write_text(json.dumps({**MOLMO_7B_D, "torch_dtype": "bfloat16"}))
    index = tmp_path / "model.safetensors.index.json"
    weight_map = dict.fromkeys(sorted(published_names(28)), "model-00001-of-00004.safetensors")
    index.write_text(json.dumps({"metadata": {"total_size": 2 * TOTAL_PARAMETERS}, "weight_map": weight_map}))
    result = verify(str(tmp_path), index=str(index))
    assert not result.unmapped, [t.name for t in result.unmapped]
    assert result.match and result.formula_total == TOTAL_PARAMETERS


NF4 = {  # the published copy's quantization_config (bitsandbytes nf4, the vision backbone and the head left alone)
    "quant_method": "bitsandbytes",
    "load_in_4bit": True,
    "load_in_8bit": False,
    "bnb_4bit_quant_type": "nf4",
    "bnb_4bit_use_double_quant": False,
    "bnb_4bit_compute_dtype": "float16",
    "bnb_4bit_quant_storage": "uint8",
    "llm_int8_skip_modules": ["model.vision_backbone", "model.transformer.ff_out", "model.transformer.ln_f"],
    "llm_int8_threshold": 6.0,
    "llm_int8_has_fp16_weight": False,
    "llm_int8_enable_fp32_cpu_offload": False,
}
NF4_TOTAL_SIZE = 6_661_964_712  # metadata.total_size of the published copy's index
QUANTISED = ("att_proj", "attn_out", "ff_out", "ff_proj")  # per layer: weight, absmax, quant_map, quant_state
NF4_LEAVES = ("absmax", "quant_map", "quant_state.bitsandbytes__nf4")


def test_the_published_nf4_index_is_every_byte_of_the_record(tmp_path: Path) -> None:
    """The published copy's index (921 names: the 585 above and, for each of the 4 quantised linears of the 28
    layers, 3 tensors of the quantisation) against its total_size: the language model in nf4 but its head, ln_f
    and the embeddings (skip list, and not nn.Linear) in float16, the vision backbone left alone in float16."""
    from llmcount.checkpoint import verify

    config = {**MOLMO_7B_D, "torch_dtype": "float16", "quantization_config": NF4}
    (tmp_path / "config.json").write_text(json.dumps(config))
    names = published_names(28)
    names |= {f"model.transformer.blocks.{i}.{m}.weight.{x}" for i in range(28) for m in QUANTISED for x in NF4_LEAVES}
    assert len(names) == 921
    index = tmp_path / "model.safetensors.index.json"
    weight_map = dict.fromkeys(sorted(names), "model-00001-of-00002.safetensors")
    index.write_text(json.dumps({"metadata": {"total_size": NF4_TOTAL_SIZE}, "weight_map": weight_map}))
    result = verify(str(tmp_path), index=str(index))
    assert not result.unmapped, [t.name for t in result.unmapped]
    assert result.match, [(c.path, c.formula, c.checkpoint) for c in result.differences]
    assert result.formula_total == result.checkpoint_total == NF4_TOTAL_SIZE


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"d_model": 2048, "moe_num_experts": 64}, "a MolmoE config"),
        ({"intermediate_size": 37887}, "intermediate_size (37887) is odd"),
        ({"embedding_size": 152000}, "embedding_size (152000) is smaller than vocab_size (152064)"),
        ({"layer_norm_type": "gemma_rms"}, "layer_norm_type is not rms, default or low_precision"),
        ({"embedding_size": None}, "embedding_size"),
        ({"num_key_value_heads": 5}, "not divisible by num_key_value_heads (5)"),
    ],
)
def test_other_models_and_bad_keys_are_refused_in_one_line(tmp_path: Path, change: dict, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**MOLMO_7B_D, **change}))
    assert_refused(run("count", str(path)), message)


def test_the_record_cites_the_modeling_file_it_was_read_from() -> None:
    root = Path(__file__).parent.parent / "llmcount" / "formulas"
    for path in ("remote/molmo_language.toml", "towers/molmo_vision.toml", "towers/molmo_projector.toml"):
        head = (root / path).read_text("utf-8")[:1200]
        assert re.search(r"Molmo7B_D_NF4Quant, commit edf464b955f389104b80bd57a9ecf52ce5530552", head), path
