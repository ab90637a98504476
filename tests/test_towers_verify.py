"""``verify`` of a multi-tower composite's checkpoint: every tensor of a small checkpoint transformers writes
(save_pretrained of a small model built on the CPU) maps to the language model's components or to the part whose
modules hold it (composites.toml ``modules``: parts/vision, parts/projector, parts/audio, parts/audio_projector), each
part's tensors summing to its count and the formula total to the whole model's parameters."""

from __future__ import annotations

import warnings

import pytest

from llmcount.formulas import records
from llmcount.formulas.config import read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

TEXT = {"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 1}
TEXT |= {"intermediate_size": 16, "vocab_size": 64}
WRITTEN = {
    "gemma4": {
        "text_config": {**TEXT, "head_dim": 16, "vocab_size_per_layer_input": 64, "hidden_size_per_layer_input": 8},
        "vision_config": {"hidden_size": 16, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2}
        | {"num_key_value_heads": 1, "head_dim": 8, "position_embedding_size": 32},
        "audio_config": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "output_proj_dims": 16},
    },
    "qwen2_5_omni_thinker": {
        "text_config": dict(TEXT),
        "vision_config": {"depth": 1, "hidden_size": 8, "num_heads": 1, "intermediate_size": 8, "out_hidden_size": 32},
        "audio_config": {"d_model": 16, "encoder_layers": 1, "encoder_attention_heads": 2, "encoder_ffn_dim": 8}
        | {"output_dim": 32},
    },
    "janus": {
        "text_config": {"model_type": "llama", **TEXT},
        "vision_config": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "mlp_ratio": 2.0}
        | {"image_size": 32, "patch_size": 16, "projection_dim": 32},
        "vq_config": {"embed_dim": 8, "num_embeddings": 16, "base_channels": 32, "channel_multiplier": [1, 1]}
        | {"num_res_blocks": 1, "projection_dim": 32, "image_token_embed_dim": 32, "num_patches": 4}
        | {"latent_channels": 8},
    },
}
PARTS = {
    "gemma4": {"vision", "projector", "audio", "audio_projector"},
    "qwen2_5_omni_thinker": {"vision", "audio"},
    "janus": {"vision", "projector", "vq", "vq_projector"},
}


@pytest.mark.parametrize("model_type", sorted(WRITTEN))
def test_verify_maps_every_tensor_of_a_written_checkpoint_to_its_part(tmp_path, model_type: str) -> None:
    import torch
    import transformers
    from transformers import AutoConfig

    from llmcount.checkpoint import verify

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = AutoConfig.for_model(model_type, **WRITTEN[model_type])
        torch.manual_seed(0)
        built = getattr(transformers, records.composite(model_type).model)(cfg)
        built.save_pretrained(tmp_path)
        want = {name: p.numel() for name, p in built.named_parameters()}
    result = verify(str(tmp_path))
    assert not result.unmapped, [t.name for t in result.unmapped]
    saved = [c for c in result.differences if "buffer/" in c.path]  # buffers saved with the weights, each named
    assert all(c.formula == 0 and "buffer" in c.note for c in saved), saved
    assert not [c for c in result.differences if c not in saved], result.differences
    assert not [c.path for c in result.components if c.path.startswith("other/")]
    model = read_config({"model_type": model_type, **WRITTEN[model_type]}, model_type)
    rows = {c.path.removeprefix("parts/"): c for c in result.components if c.path.count("/") == 1}
    rows = {name: c for name, c in rows.items() if c.path.startswith("parts/")}
    assert set(rows) == PARTS[model_type]
    for part in model.parts:
        row = rows[part.role.removesuffix(" tower").replace(" ", "_")]
        assert row.formula == row.checkpoint == part.model.counts.total
    buffers = sum(c.checkpoint for c in saved)
    assert result.formula_total == model.whole_total == sum(want.values()), oracle.VERSIONS
    assert result.checkpoint_total == result.formula_total + buffers


def test_a_language_model_exported_alone_names_each_part_missing(tmp_path) -> None:
    """A checkpoint without the parts' tensors: the language model against its formula, and a parts/ row for each
    part, its count (transformers' module's) against none."""
    import transformers
    from safetensors.torch import save_file
    from transformers import AutoConfig

    from llmcount.checkpoint import verify

    config = WRITTEN["qwen2_5_omni_thinker"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = transformers.Qwen2_5OmniThinkerForConditionalGeneration(
            AutoConfig.for_model("qwen2_5_omni_thinker", **config)
        )
        built.save_pretrained(tmp_path)
    tensors = {
        n: p.detach().contiguous() for n, p in built.named_parameters() if n.startswith(("model.language", "lm_"))
    }
    (tmp_path / "model.safetensors").unlink()
    save_file(tensors, str(tmp_path / "model.safetensors"))
    result = verify(str(tmp_path))
    model = read_config({"model_type": "qwen2_5_omni_thinker", **config}, "omni")
    held = {"vision": built.model.visual, "audio": built.model.audio_tower}
    want = {f"parts/{name}": (sum(p.numel() for p in module.parameters()), 0) for name, module in held.items()}
    assert {c.path: (c.formula, c.checkpoint) for c in result.differences} == want, oracle.VERSIONS
    assert result.checkpoint_total == model.counts.total and not result.match
    assert result.formula_total == sum(p.numel() for p in built.parameters()), oracle.VERSIONS
