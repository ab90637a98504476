"""A quantised model's plan (``quant.stored.plan``) works out the module names and the scheme's decisions once per
structure of the model under a scheme (``_Skeleton``) and sizes the tensors of every model of that structure from
it. A plan made from a skeleton kept from another model (another vocabulary, MLP width or expert count) equals the
plan of a fresh walk, on the released quantised presets, on schemes given as --quant to dense, MoE, Conv1D and
composite presets, with a skip list naming one layer's module and MLX per-module overrides, and on the last-parameter
and tied-block rules (the walk itself is tested against transformers' quantisers and released checkpoints in
test_quant*.py)."""

from __future__ import annotations

import pytest

from llmcount.formulas import records, snapshot
from llmcount.formulas.config import read_config
from llmcount.presets import presets
from llmcount.quant import stored
from llmcount.quant.config import read_quant
from llmcount.quant.report import from_options, model_plan


def _config(base: dict, step: int) -> dict:
    """``base`` with its vocabulary, MLP width and expert count moved by ``step`` (the sizes, not the structure)."""
    config = dict(base)
    text = dict(config.get("text_config") or {})
    target = text if text else config
    target["vocab_size"] = target.get("vocab_size", 32000) + 7 * step
    for key, by in (("intermediate_size", 128), ("moe_intermediate_size", 128), ("num_local_experts", 8)):
        if isinstance(target.get(key), int):
            target[key] += by * step
    if text:
        config["text_config"] = text
    return config


def _plans(base: dict, quant_name: str | None, steps=(0, 1, 2)) -> None:
    """The plans of ``base`` moved by each step, each from the skeleton kept by the one before, equal fresh walks."""
    stored._SKELETONS.clear()
    kept = []
    for step in steps:
        config = _config(base, step)
        model = read_config(config, "test", "test")
        quant = from_options(quant_name, None, None) if quant_name else read_quant(config, "test")
        kept.append(model_plan(model, quant, "bf16", "test"))
        assert len(stored._SKELETONS) == 1  # one structure: the first model's skeleton serves the others
    for step, reused in zip(steps, kept, strict=True):
        stored._SKELETONS.clear()
        config = _config(base, step)
        model = read_config(config, "test", "test")
        quant = from_options(quant_name, None, None) if quant_name else read_quant(config, "test")
        assert reused == model_plan(model, quant, "bf16", "test"), (step, quant_name)
    assert kept[0].bytes != kept[-1].bytes  # the sizes moved, and the bytes with them


@pytest.mark.parametrize("preset", ["deepseek-v3", "gpt-oss-20b"])
def test_released_quantised_presets(preset: str) -> None:
    _plans(presets()[preset].config(), None)


@pytest.mark.parametrize(
    ("preset", "scheme"),
    [
        ("qwen3-30b-a3b", "gptq"),
        ("mixtral-8x7b", "mlx"),
        ("gpt2", "nf4-double"),
        ("qwen3-8b", "awq"),
        ("qwen2.5-vl-7b", "fp8-block"),
    ],
)
def test_schemes_given_as_options(preset: str, scheme: str) -> None:
    _plans(presets()[preset].config(), scheme)


def test_a_skip_list_naming_one_layers_module_and_mlx_overrides() -> None:
    base = presets()["qwen3-0.6b"].config()
    skips = ["model.layers.3.mlp.down_proj", "lm_head"]
    _plans({**base, "quantization_config": {"quant_method": "fp8", "modules_to_not_convert": skips}}, None)
    overrides = {"model.layers.2.self_attn.q_proj": {"bits": 8, "group_size": 64}, "model.layers.5.mlp.up_proj": False}
    _plans({**base, "quantization": {"bits": 4, "group_size": 64, **overrides}}, None)


@pytest.mark.parametrize(
    ("model_type", "tied"), [("gemma3n_text", True), ("gemma3n_text", False), ("zamba", True), ("zamba", False)]
)
def test_last_parameter_and_tied_blocks(model_type: str, tied: bool) -> None:
    defaults = snapshot._default_config(records.family(model_type))  # the record's own defaults
    base = {**defaults, "torch_dtype": "bfloat16", "tie_word_embeddings": tied}
    base["quantization_config"] = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    _plans(base, None, steps=(0, 1))
