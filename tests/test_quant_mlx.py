"""MLX checkpoints written by MLX itself (mlx 0.32.4 on the CPU, mlx-lm 0.32.2: the model classes ``mlx_lm.convert``
builds, quantised by ``mlx_lm.utils.quantize_model`` and saved by ``mx.save_safetensors``): llmcount's bytes from
the config equal the file's, and ``verify`` reads the uint32 weights back as the model's parameters. The MoE case
carries mlx-lm's own per-module entry (the router at 8 bits, group 64) in the config's ``quantization``."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

mx = pytest.importorskip("mlx.core")
pytest.importorskip("mlx_lm")

import quant_models  # noqa: E402
from mlx.utils import tree_flatten  # noqa: E402
from mlx_lm.utils import quantize_model  # noqa: E402

from llmcount.checkpoint import verify  # noqa: E402
from llmcount.formulas.config import read_config  # noqa: E402
from llmcount.quant.config import read_quant  # noqa: E402
from llmcount.quant.stored import plan, rest_dtype  # noqa: E402

COMMON = {"rms_norm_eps": 1e-6, "max_position_embeddings": 128, "rope_theta": 1e6}
QWEN3 = {**quant_models.QWEN3, **COMMON}
QWEN3_MOE = {
    "model_type": "qwen3_moe",
    "hidden_size": 64,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 2,
    "mlp_only_layers": [0],
    "decoder_sparse_step": 1,
    "norm_topk_prob": True,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 32,
    "vocab_size": 200,
    **COMMON,
}
CASES = {
    "qwen3-4bit-g32": (QWEN3, False, 32, 4),
    "qwen3-tied-8bit-g64": (QWEN3, True, 32, 8),
    "qwen3-edge-g64": ({**QWEN3, "intermediate_size": 176}, False, 64, 4),  # 96 and 176: no multiple of 64
    "qwen3_moe-4bit-g32": (QWEN3_MOE, False, 32, 4),
}


def written(args: dict[str, Any], folder: Path, group: int, bits: int) -> tuple[dict[str, Any], int]:
    module = importlib.import_module(f"mlx_lm.models.{args['model_type']}")
    model = module.Model(module.ModelArgs.from_dict(args))
    model.set_dtype(mx.bfloat16)
    model, config = quantize_model(model, dict(args), group_size=group, bits=bits)
    weights = dict(tree_flatten(model.parameters()))
    folder.mkdir()
    mx.save_safetensors(str(folder / "model.safetensors"), weights)
    config = {**config, "torch_dtype": "bfloat16"}
    (folder / "config.json").write_text(json.dumps(config))
    return config, sum(v.nbytes for v in weights.values())


@pytest.mark.parametrize("case", sorted(CASES))
def test_mlx_files(case: str, tmp_path: Path) -> None:
    args, tied, group, bits = CASES[case]
    config, expected = written({**args, "tie_word_embeddings": tied}, tmp_path / "ckpt", group, bits)
    model = read_config(config, "test")
    quant = read_quant(config, "test")
    code, _ = rest_dtype(quant, model.dtype, None, "test")
    assert plan(model, quant, code).bytes == expected, f"{case}: mlx 0.32.4 / mlx-lm 0.32.2 file bytes"
    result = verify(str(tmp_path / "ckpt"))
    assert result.match, (result.differences, result.unmapped)
    assert sum(size for _, size in result.stored) == expected  # bytes as stored, per component
