"""A post's written-out prose for a section is used only when the weights are the ones it states; other forms are
explained from the family record's notes. The weights' real shapes come from transformers (the oracle)."""

from __future__ import annotations

import pytest

from llmcount.renderers.writeup import build

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def meta_model(model_type: str, **sizes):
    config = transformers.AutoConfig.for_model(model_type, **sizes)
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config), config


def test_a_gated_query_projection_is_not_told_as_a_plain_one():
    model, config = meta_model("qwen3_next")
    full = config.layer_types.index("full_attention")
    q = model.model.layers[full].self_attn.q_proj
    assert q.out_features == 2 * config.num_attention_heads * config.head_dim  # queries and the output gate
    post = build("qwen3-next-80b-a3b", "markdown", "en").text
    assert "query heads of size" not in post
    assert "query projection and output gate" in post
    # the activated count keeps the shared expert and the rest of the model, and says so
    assert "(everything else runs in full)" in post


def test_a_qk_norm_over_all_heads_is_not_told_as_one_shared_by_all_heads():
    model, config = meta_model("olmo2")
    norm = model.model.layers[0].self_attn.q_norm
    assert norm.weight.numel() == config.num_attention_heads * config.hidden_size // config.num_attention_heads
    post = build("olmo-2-7b", "markdown", "en").text
    assert "one scale shared by all heads" not in post


def test_layer_norms_with_a_bias_are_not_told_as_rms_norms():
    model, _ = meta_model("starcoder2")
    assert model.model.layers[0].input_layernorm.bias is not None
    post = build("starcoder2-7b", "markdown", "en").text
    assert "They are RMSNorms" not in post
