"""verify: tensor names of the families whose checkpoints name things their own way, mapped to the record's paths.

gpt-oss (router with a bias, fused experts with ``gate_up_proj_bias``/``down_proj_bias``, attention sinks), Llama 4
(``feed_forward`` for both the dense MLP and the MoE block, a ``shared_expert``) and JetMoE (a mixture of attention
heads under ``self_attention.experts``, the MoE as ``mlp.input_linear``/``output_linear`` with ``router.layer``).
The checkpoints are real: transformers' ``save_pretrained`` for small configs, whose names were checked against
``named_parameters()`` of the same models on the meta device and against the published Hub checkpoints (gpt-oss's
and JetMoE's Hub names are transformers' names; Llama 4's Hub files wrap the text model in ``language_model.`` and
carry a vision tower). Per-component counts below are derived by hand from the config, in the comments.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from oracle import meta_total
from test_verify import elements_in, rewrite, save_tiny
from verify_twins import verify_both_paths  # noqa: F401  (a fixture: each verify checked on both paths)

from llmcount.checkpoint import verify
from llmcount.formulas import records
from llmcount.formulas.expressions import RecordError

pytestmark = pytest.mark.usefixtures("verify_both_paths")

GPT_OSS = {
    "model_type": "gpt_oss",
    "vocab_size": 100,
    "hidden_size": 32,  # d
    "intermediate_size": 64,  # d_moe
    "num_hidden_layers": 2,  # N
    "num_attention_heads": 4,  # h
    "num_key_value_heads": 2,
    "head_dim": 8,
    "num_local_experts": 4,  # n
    "num_experts_per_tok": 2,
}
LLAMA4 = {
    "model_type": "llama4_text",
    "vocab_size": 100,
    "hidden_size": 32,
    "intermediate_size": 64,  # each expert's (and the shared expert's) width
    "intermediate_size_mlp": 48,  # the dense layers' MLP width
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "num_local_experts": 4,
    "interleave_moe_layer_step": 2,  # layer 0 dense, layer 1 MoE
}
JETMOE = {
    "model_type": "jetmoe",
    "vocab_size": 100,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "kv_channels": 8,
    "intermediate_size": 64,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
}

EXPECTED = {
    "gpt_oss": {
        "attention/sinks": 2 * 4,  # N · h
        "moe/router": 2 * 4 * 32,  # N · n · d
        "moe/router.bias": 2 * 4,  # N · n
        "moe/experts": 2 * 4 * (32 * 2 * 64 + 64 * 32),  # N · n · (d · 2 d_moe + d_moe · d)
        "moe/experts.bias": 2 * 4 * (2 * 64 + 32),  # N · n · (2 d_moe + d)
    },
    "llama4_text": {
        "mlp/gate_proj": 32 * 48,  # one dense layer: d · d_ff
        "mlp/down_proj": 48 * 32,
        "moe/router": 4 * 32,  # one MoE layer: n · d
        "moe/experts": 4 * 3 * 32 * 64,  # n · 3 · d · d_moe
        "moe/shared_expert": 3 * 32 * 64,
    },
    "jetmoe": {
        "attention/experts": 2 * 4 * 2 * 32 * 16,  # N · n · (query in + out): 2 · d · (h_kv · kv_channels)
        "attention/experts.bias": 2 * 32,  # N · d
        "attention/router": 2 * 4 * 32,  # N · n · d
        "attention/kv_proj": 2 * 32 * 2 * 16,  # N · d · 2 (k, v) · h_kv · kv_channels
        "moe/experts": 2 * 4 * 3 * 32 * 64,  # N · n · 3 · d · d_moe
        "moe/router": 2 * 4 * 32,
        "moe/bias": 2 * 32,
    },
}
CONFIGS = {"gpt_oss": GPT_OSS, "llama4_text": LLAMA4, "jetmoe": JETMOE}


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_checkpoint_written_by_transformers_maps_to_every_component(tmp_path: Path, family: str) -> None:
    config = CONFIGS[family]
    folder = save_tiny(config, tmp_path / family)
    result = verify(str(folder))
    assert result.formula_total == meta_total(config)
    assert result.checkpoint_total == elements_in(folder) == meta_total(config)
    assert not result.unmapped, [t.name for t in result.unmapped]
    assert {c.path: (c.formula, c.checkpoint) for c in result.differences} == {}
    found = {c.path: c.checkpoint for c in result.components}
    assert {path: found.get(path) for path in EXPECTED[family]} == EXPECTED[family]
    assert result.match


@pytest.mark.parametrize(
    ("prefix", "head"),
    [("language_model.model.", "language_model.lm_head.weight"), ("model.language_model.", "lm_head.weight")],
    ids=["hub_files", "transformers5_multimodal"],
)
def test_llama4_multimodal_names_and_the_vision_tower(tmp_path: Path, prefix: str, head: str) -> None:
    """Llama 4's Hub checkpoints hold Llama4ForConditionalGeneration: the text model under ``language_model.``,
    beside a vision tower and a projector that the text formula does not count."""
    folder = save_tiny(LLAMA4, tmp_path / "llama4")

    def as_multimodal(tensors: dict[str, torch.Tensor]) -> None:
        for name in list(tensors):
            tensors[head if name == "lm_head.weight" else prefix + name.removeprefix("model.")] = tensors.pop(name)
        tensors["vision_model.patch_embedding.linear.weight"] = torch.zeros(16, 12)
        tensors["multi_modal_projector.linear_1.weight"] = torch.zeros(32, 16)

    rewrite(folder, as_multimodal)
    result = verify(str(folder))
    assert not result.unmapped, [t.name for t in result.unmapped]
    differences = {c.path: (c.formula, c.checkpoint) for c in result.differences}
    assert differences == {"other/vision_model": (0, 16 * 12), "other/multi_modal_projector": (0, 32 * 16)}
    assert all("vision" in c.note for c in result.differences)
    found = {c.path: c.checkpoint for c in result.components}
    assert {path: found.get(path) for path in EXPECTED["llama4_text"]} == EXPECTED["llama4_text"]
    assert result.checkpoint_total - result.formula_total == 16 * 12 + 32 * 16


def test_a_checkpoint_table_names_paths_of_the_record() -> None:
    """``[checkpoint]``'s names and shared take paths of the record's terms; a typo is named, never ignored."""
    record = {
        "model_type": "x",
        "title": "X",
        "symbols": {"V": "vocab_size", "d": "hidden_size"},
        "terms": [{"path": "embedding/embed_tokens", "expr": "V*d", "note": "table"}],
    }
    parsed = records.parse_record({**record, "checkpoint": {"names": {"embedding/embed_tokens": "wte.weight"}}}, "x")
    assert parsed.checkpoint.names == {"embedding/embed_tokens": "wte.weight"}
    with pytest.raises(RecordError, match="'embedding/embed' is not a path of the record's terms"):
        records.parse_record({**record, "checkpoint": {"names": {"embedding/embed": "wte.weight"}}}, "x")
    with pytest.raises(RecordError, match="'head/lm_head' is not a path"):
        records.parse_record({**record, "checkpoint": {"shared": {"embedding/embed_tokens": "head/lm_head"}}}, "x")
    with pytest.raises(RecordError, match=r"unknown fields \['name'\]"):
        records.parse_record({**record, "checkpoint": {"name": {}}}, "x")
