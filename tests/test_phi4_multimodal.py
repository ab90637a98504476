"""Phi-4-multimodal (phi4_multimodal): Phi4MultimodalForCausalLM holds the Phi-3 language model and, in
model.embed_tokens_extend, a SigLIP-style vision encoder and a conformer audio encoder. The record's vision and audio
groups against the parameters of those modules as transformers builds them, the whole against the model, for the
class defaults and hand-set small configs that flip every size of the encoders; what the config classes refuse is
refused by name."""

from __future__ import annotations

import warnings

import pytest

from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

TEXT = {"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 48, "num_attention_heads": 4}
TEXT |= {"num_key_value_heads": 2, "vocab_size": 100, "pad_token_id": None}
VISION = {"hidden_size": 32, "intermediate_size": 40, "num_hidden_layers": 2, "num_attention_heads": 4}
VISION |= {"image_size": 30, "patch_size": 4, "num_channels": 2}
AUDIO = {"hidden_size": 30, "intermediate_size": 20, "num_blocks": 2, "num_attention_heads": 4}  # heads of 7: 28 wide
AUDIO |= {"ext_pw_out_channel": 12, "depthwise_separable_out_channel": 14, "depthwise_multiplier": 2, "kernel_size": 5}
AUDIO |= {"input_size": 37, "nemo_conv_channels": 8, "bias_max_distance": 10, "downsample_rate": 3}
CONFIGS = {
    "defaults": {},
    "small": {**TEXT, "vision_config": VISION, "audio_config": AUDIO},
    # int(log2(6)) = 2 stages, ceil(ceil(37 / 2) / 2) = 10 bins; one bucket per distance
    "time-reduction-6-symmetric": {
        **TEXT,
        "vision_config": VISION,
        "audio_config": {**AUDIO, "time_reduction": 6, "bias_symmetric": True},
    },
    # a saved config's nemo_final_size is what the subsampling's Linear reads, whatever input_size says
    "nemo-final-size-given": {**TEXT, "vision_config": VISION, "audio_config": {**AUDIO, "nemo_final_size": 7}},
    "audio-head-dim": {**TEXT, "audio_config": {**AUDIO, "head_dim": 5, "time_reduction": 32}},
    "tied": {**TEXT, "tie_word_embeddings": True, "audio_config": {**AUDIO, "time_reduction": 2}},
}


def parts(config: dict) -> dict[str, int]:
    """The parameters of the vision and audio parts and of the whole model transformers builds on the meta device."""
    import torch
    from transformers import AutoModelForCausalLM

    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_config(oracle._hf_config(config))
    extend = model.model.embed_tokens_extend
    return {
        "vision": sum(p.numel() for p in extend.image_embed.parameters()),
        "audio": sum(p.numel() for p in extend.audio_embed.parameters()),
        "total": sum(p.numel() for p in model.parameters()),
    }


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_encoders_and_the_whole_equal_transformers(name: str) -> None:
    config = {"model_type": "phi4_multimodal", **CONFIGS[name]}
    model = read_config(config, name)
    by_group = {
        group: sum(c.count for c in model.counts.components if c.path.startswith(f"{group}/"))
        for group in ("vision", "audio")
    }
    expected = parts(config)
    assert {**by_group, "total": model.counts.total} == expected, oracle.VERSIONS
    assert model.counts.total == oracle.meta_total(config)


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"audio_config": {"time_reduction": 7}}, "time_reduction must be a multiple of 2"),
        ({"vision_config": {"hidden_size": 30}}, r"vision_config.hidden_size \(30\) is not divisible"),
    ],
)
def test_what_transformers_refuses_is_refused_by_name(keys: dict, message: str) -> None:
    config = {"model_type": "phi4_multimodal", **TEXT, **keys}
    with pytest.raises(oracle.TransformersRejected):
        oracle.meta_total(config)
    with pytest.raises(RuleRefusal, match=message):
        read_config(config, "test")
