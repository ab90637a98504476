"""A multimodal config's skip lists apply to its language model (llmcount/quant/composite.py).

The oracle is transformers 5.24.0's own reading: the composite model (Qwen2_5_VLForConditionalGeneration,
Gemma3ForConditionalGeneration) built on the meta device; each entry of the config mapped to that model's module tree
by its checkpoint conversion mapping as the FP8 quantiser does it (``_normalize_modules_to_not_convert``,
quantizers/quantizer_finegrained_fp8.py: ``rename_source_key`` of every renaming in ``get_model_conversion_mapping``);
then ``should_convert_module`` (quantizers/quantizers_utils.py) decides for every nn.Linear. llmcount's decision for the
same module (named as the text record names it: ``model.language_model.`` is ``model.`` there) must agree, and an
entry naming the tower or projector must be recognised, not reported as matching nothing.

The Qwen2.5-VL list is the one Qwen/Qwen2.5-VL-32B-Instruct-AWQ publishes (``modules_to_not_convert: ["visual"]``, read
from a public copy of its config.json); the Gemma 3 lists are in the two layouts released bitsandbytes and
compressed-tensors checkpoints use (transformers 4's ``language_model.model.layers.N`` and ``vision_tower``, and
transformers 5's ``model.language_model.layers.N`` and ``model.vision_tower``), built here by hand.
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
import torch

from llmcount.formulas.config import read_config
from llmcount.quant.composite import for_language_model
from llmcount.quant.config import read_quant
from llmcount.quant.stored import plan

QWEN25_VL = {
    "model_type": "qwen2_5_vl",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vision_config": {
        "depth": 1,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "out_hidden_size": 64,
        "fullatt_block_indexes": [0],
    },
}
GEMMA3 = {
    "model_type": "gemma3",
    "torch_dtype": "bfloat16",
    "mm_tokens_per_image": 4,
    "text_config": {
        "model_type": "gemma3_text",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "vocab_size": 256,
    },
    "vision_config": {
        "model_type": "siglip_vision_model",
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "image_size": 28,
        "patch_size": 14,
    },
}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 64, "version": "gemm", "zero_point": True}
BNB = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}

CASES = [
    ("qwen2.5-vl awq as published", QWEN25_VL, {**AWQ, "modules_to_not_convert": ["visual"]}),
    (
        "qwen2.5-vl transformers 5 names",
        QWEN25_VL,
        {**AWQ, "modules_to_not_convert": ["model.visual", "model.language_model.layers.1.mlp", "lm_head"]},
    ),
    (
        "qwen2.5-vl transformers 4 names",
        QWEN25_VL,
        {**AWQ, "modules_to_not_convert": ["visual", "model.layers.2.self_attn.o_proj", "model.layers.0"]},
    ),
    (
        "gemma3 bnb transformers 4 names",
        GEMMA3,
        {
            **BNB,
            "llm_int8_skip_modules": [
                "lm_head",
                "multi_modal_projector",
                "vision_tower",
                "language_model.model.layers.0.mlp",
                "language_model.model.layers.2.self_attn.q_proj",
            ],
        },
    ),
    (
        "gemma3 bnb transformers 5 names",
        GEMMA3,
        {
            **BNB,
            "llm_int8_skip_modules": [
                "model.vision_tower",
                "model.multi_modal_projector",
                "model.language_model.layers.1",
                "language_model.lm_head",
            ],
        },
    ),
]


def _composite(config: dict):
    from transformers import AutoConfig, Gemma3ForConditionalGeneration, Qwen2_5_VLForConditionalGeneration

    classes = {"qwen2_5_vl": Qwen2_5_VLForConditionalGeneration, "gemma3": Gemma3ForConditionalGeneration}
    body = {k: v for k, v in config.items() if k not in ("model_type", "quantization_config")}
    if config["model_type"] == "qwen2_5_vl":  # a flat released config.json: the text keys at the top
        body = {"text_config": {k: v for k, v in body.items() if k != "vision_config"}, **body}
    cfg = AutoConfig.for_model(config["model_type"], **body)
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        return classes[config["model_type"]](cfg)


def _oracle(model, entries: list[str], method: str) -> dict[str, bool]:
    """Every nn.Linear of the composite -> whether transformers leaves it unconverted (the config's entries, mapped,
    with the method's own: ``get_modules_to_not_convert``, AWQ with ``add_default_skips=True`` as
    quantizer_awq.py calls it)."""
    from transformers.conversion_mapping import get_model_conversion_mapping
    from transformers.quantizers.base import HfQuantizer
    from transformers.quantizers.quantizers_utils import should_convert_module

    renamings = get_model_conversion_mapping(model)
    normalised = []
    for entry in entries:
        renamed = entry + "."
        for rename in renamings:
            renamed, _ = rename.rename_source_key(renamed)
        normalised.append(renamed.removesuffix("."))
    normalised = HfQuantizer.get_modules_to_not_convert(
        model, normalised, model._keep_in_fp32_modules, add_default_skips=method == "awq"
    )
    return {
        name: not should_convert_module(name, normalised)
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear)
    }


@pytest.mark.parametrize(("name", "config", "qc"), CASES, ids=[c[0] for c in CASES])
def test_skip_entries_as_transformers_reads_them(name: str, config: dict, qc: dict) -> None:
    config = {**config, "quantization_config": qc}
    entries = qc.get("modules_to_not_convert") or qc.get("llm_int8_skip_modules")
    expected = _oracle(_composite(config), entries, qc["quant_method"])
    model = read_config(config, name)
    quant, _back, towers = for_language_model(read_quant(config, name), model)
    language = {k: v for k, v in expected.items() if k.startswith("model.language_model.") or k == "lm_head"}
    parts = {k: v for k, v in expected.items() if k not in language}
    assert language and parts
    ours = {k: quant.skipped(k.replace("model.language_model.", "model.", 1)) for k in language}
    ours["lm_head"] = ours["lm_head"] or quant.own_skips  # the method's own skip of the head (stored.py _decide)
    assert ours == language
    assert all(parts.values()) and towers  # every tower/projector Linear is left alone, and llmcount says so
    stored = plan(model, read_quant(config, name), "BF16")
    assert stored.unmatched == ()
    assert any("beside the language model" in note for note in stored.notes)


def test_a_language_model_entry_changes_the_bytes() -> None:
    """The entry for layer 1's MLP keeps its three matrices in bf16: 3 · 64 · 128 parameters at 2 bytes."""
    base = {**QWEN25_VL, "quantization_config": {**AWQ, "modules_to_not_convert": ["visual"]}}
    more = {
        **QWEN25_VL,
        "quantization_config": {**AWQ, "modules_to_not_convert": ["visual", "model.language_model.layers.1.mlp"]},
    }
    model = read_config(base, "q")
    kept = [plan(model, read_quant(c, "q"), "BF16") for c in (base, more)]
    mlp = {g.path: g for g in kept[1].groups if g.path.startswith("mlp/")}
    assert all("BF16" in g.stored_as or "bf16" in g.stored_as.lower() for g in mlp.values())
    per_matrix_awq = 64 * 128 // 2 + (128 // 64) * 64 * 2 + (128 // 64) * (64 // 8) * 4  # qweight, scales, qzeros
    assert kept[1].bytes - kept[0].bytes == 3 * (64 * 128 * 2 - per_matrix_awq)


def test_an_unknown_composite_entry_is_still_said() -> None:
    config = {**QWEN25_VL, "quantization_config": {**AWQ, "modules_to_not_convert": ["model.language_model.nope"]}}
    stored = plan(read_config(config, "q"), read_quant(config, "q"), "BF16")
    assert stored.unmatched == ("model.language_model.nope",)


@pytest.mark.parametrize(("name", "config", "qc"), [("gemma3 bnb", GEMMA3, BNB), ("qwen2.5-vl awq", QWEN25_VL, AWQ)])
def test_a_skip_list_naming_no_tower_is_said(name: str, config: dict, qc: dict) -> None:
    """With no skip list naming the tower, transformers' quantiser converts the tower's linear layers too (its own
    skips are the LM head and tied modules only): llmcount, which sizes the parts unquantised, says so."""
    from transformers.quantizers.base import HfQuantizer
    from transformers.quantizers.quantizers_utils import should_convert_module

    config = {**config, "quantization_config": qc}
    model = _composite(config)
    skips = HfQuantizer.get_modules_to_not_convert(
        model, None, model._keep_in_fp32_modules, qc["quant_method"] == "awq"
    )
    linears = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    tower = [n for n in linears if not n.startswith("model.language_model.") and n != "lm_head"]
    assert tower and all(should_convert_module(n, skips) for n in tower), "transformers 5.24.0"
    stored = plan(read_config(config, name), read_quant(config, name), "BF16")
    assert any("names none of the parts beside the language model" in note for note in stored.notes)
    key, towers = (
        ("llm_int8_skip_modules", ["vision_tower"]) if "bnb" in name else ("modules_to_not_convert", ["visual"])
    )
    named = {**config, "quantization_config": {**qc, key: towers}}
    stored = plan(read_config(named, name), read_quant(named, name), "BF16")
    assert not any("names none" in note for note in stored.notes)


@pytest.mark.parametrize("quantised", [False, True])
def test_index_mode_counts_the_parts_the_index_names(quantised: bool, tmp_path) -> None:
    """``verify --index`` on a composite checkpoint whose index names the tower's and projector's tensors: their
    parameters (transformers' whole model less its language model, built on the meta device) are in the formula, in
    the checkpoint dtype, and the total matches; an index without them names each part missing."""
    import json

    from refusal import run

    config = {**GEMMA3, "quantization_config": BNB} if quantised else dict(GEMMA3)
    built = _composite(config)
    names = [name for name, _ in built.named_parameters()]
    language = sum(p.numel() for n, p in built.named_parameters() if n.startswith("model.language_model."))
    language += 0 if config["text_config"].get("tie_word_embeddings", True) else built.lm_head.weight.numel()
    parts = sum(p.numel() for p in built.parameters()) - language
    model = read_config(config, "g")
    assert model.counts.total == language and parts > 0, "transformers 5.24.0"
    lm_bytes = plan(model, read_quant(config, "g"), "BF16").bytes if quantised else 2 * language
    (tmp_path / "config.json").write_text(json.dumps(config))
    text_only = [n for n in names if not n.startswith(("model.vision_tower.", "model.multi_modal_projector."))]
    for listed, total, whole in ((names, lm_bytes + 2 * parts, True), (text_only, lm_bytes, False)):
        index = tmp_path / "model.safetensors.index.json"
        index.write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": dict.fromkeys(listed, "a")}))
        result = run("verify", str(tmp_path), "--index", str(index), "--json")
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        formula = lm_bytes + 2 * parts if quantised else language + parts  # bytes, or parameters
        assert data["match"] == whole and data["formula_total"] == formula, result.stdout
        missing = {d["component"]: d["checkpoint"] for d in data["differences"]}
        assert missing == ({} if whole else {"parts/vision": 0, "parts/projector": 0}), data["differences"]
