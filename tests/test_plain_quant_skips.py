"""``Quant.skipped`` matches a ``modules_to_not_convert`` name as transformers 5.24's ``should_convert_module`` does
(quantizers/quantizers_utils.py: the name as a character suffix of the module's, or as a prefix up to a module
boundary), whether the list holds a few names (matched one by one) or many (matched through a set of suffixes)."""

from __future__ import annotations

from dataclasses import replace

from llmcount.quant.config import read_quant

MODULES = (
    "model.layers.0.self_attn.q_proj",
    "model.layers.11.mlp.experts.7.gate_proj",
    "model.layers.3.mlp.gate",
    "lm_head",
    "model.embed_tokens",
    "visual.blocks.0.attn.qkv",
    "model.layers.2.mlp.shared_expert_gate",
)


def _expected(module: str, names: list[str]) -> bool:
    """should_convert_module's test of plain names, written out: a key that is a suffix of the module's name, or a
    prefix ending at a module boundary."""
    return any((name and module.endswith(name)) or module == name or module.startswith(name + ".") for name in names)


def _quant(names: list[str]):
    config = {"model_type": "llama", "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True}}
    quant = read_quant(config, "test")
    return replace(quant, skip=tuple(names))


def test_a_few_names_and_many_names_match_alike() -> None:
    few = ["lm_head", "gate", "proj", "model", "visual", "", "ead", "experts"]
    many = few + [f"unused_{i}" for i in range(40)]  # past the size at which a set of suffixes is made
    for names in ([], few[:1], few[1:2], few, many):
        quant = _quant(names)
        for module in MODULES:
            assert quant.skipped(module) == _expected(module, names), (module, names)
