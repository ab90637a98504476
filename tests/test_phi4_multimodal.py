"""Phi-4-multimodal (phi4_multimodal): Phi4MultimodalForCausalLM holds the Phi-3 language model and, in
model.embed_tokens_extend, a SigLIP-style vision encoder and a conformer audio encoder. The record's vision and audio
groups against the parameters of those modules as transformers builds them, the whole against the model, for the
class defaults and hand-set small configs that flip every size of the encoders; what the config classes refuse is
refused by name. On token ids alone (what flops and memory count) no encoder module runs, the encoders get no
gradient, and the FLOPs and the cache are the decoder's."""

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


# ---------------------------------------------------------------------------------------------
# costs on token ids alone: the encoders do not run, get no gradient, keep nothing


def train_on_token_ids(config: dict, batch: int = 2, seq: int = 5) -> tuple[set[str], int, int]:
    """The encoder modules that ran in one training step on token ids alone (CPU, eager), the parameters of the
    model and those with a gradient after the backward."""
    import torch
    from transformers import AutoModelForCausalLM

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(oracle._hf_config(config), attn_implementation="eager")
    model.train()
    ran: set[str] = set()
    for name, module in model.model.embed_tokens_extend.named_modules():
        if name:  # the feature embedding itself runs: it finds no image and no audio to embed
            module.register_forward_hook(lambda *_, name=name: ran.add(name))
    ids = torch.randint(0, model.config.vocab_size, (batch, seq))
    model(input_ids=ids, labels=ids).loss.backward()
    graded = sum(p.numel() for p in model.parameters() if p.grad is not None)
    return ran, sum(p.numel() for p in model.parameters()), graded


def test_on_token_ids_alone_the_encoders_do_not_run_and_get_no_gradient() -> None:
    """Phi4MultimodalFeatureEmbedding runs an encoder only when image_pixel_values (audio_input_features) are given:
    no encoder module runs, and exactly the vision and audio groups (grad = false) are left without a gradient, so
    memory --training keeps no gradient and no optimizer state for them."""
    from llmcount.formulas import training

    config = {"model_type": "phi4_multimodal", **CONFIGS["small"]}
    ran, parameters, graded = train_on_token_ids(config)
    assert ran == set(), oracle.VERSIONS
    encoders = parts(config)
    assert parameters - graded == encoders["vision"] + encoders["audio"]
    result = training.training(read_config(config, "test"), "bf16", "adamw")
    assert (result.held.parameters, result.held.trainable) == (parameters, graded)
    assert result.no_grad_parameters == parameters - graded


def test_flops_on_token_ids_alone_by_hand() -> None:
    """The small config (N = 2, d = 64, h = 4, h_kv = 2, h_d = 16, d_ff = 48, V = 100) at B = 2, S = 7: per token
    and layer qkv_proj 2·64·(4 + 4)·16, o_proj 2·64·64, the MLP 2·3·64·48, scores and values 2·2·7·4·16; the head
    2·64·100; the encoders nothing. The counter agrees (tests/test_flops.py)."""
    from llmcount.formulas.flops import Flops

    per_layer = 2 * 64 * 8 * 16 + 2 * 64 * 64 + 2 * 3 * 64 * 48 + 2 * 2 * 7 * 4 * 16
    model = read_config({"model_type": "phi4_multimodal", **CONFIGS["small"]}, "test")
    counts = Flops(model.derivation).evaluate(model.values, 7, 2)
    assert counts.forward == 2 * 7 * (2 * per_layer + 2 * 64 * 100) == 1_433_600


@pytest.mark.parametrize(
    "keys",
    [
        {"sliding_window": 3},  # every layer keeps W - 1 = 2 tokens
        {"sliding_window": 3, "layer_types": ["full_attention", "sliding_attention"]},
        {"sliding_window": 3, "num_hidden_layers": 3, "layer_types": ["sliding_attention"] * 3},
        {},
    ],
)
def test_cache_on_token_ids_alone_equals_transformers(keys: dict) -> None:
    """Keys and values of the decoder's layers only (2 · h_kv · h_d per token, S or W - 1 of them), what
    transformers' cache holds after a forward of B = 2 sequences of S = 6 tokens."""
    from llmcount.formulas import memory

    config = {"model_type": "phi4_multimodal", **CONFIGS["small"], **keys}
    model = read_config(config, "test")
    result = memory.inference(model.derivation, model.values, "fp32", seq=6, batch=2)
    assert result.bytes_of("kv_cache") == oracle.cache_bytes(config, 2, 6), oracle.VERSIONS


@pytest.mark.parametrize("command", [["flops", "--seq", "16"], ["memory", "--seq", "16"], ["memory", "--training"]])
def test_the_output_says_image_and_audio_input_is_not_counted(tmp_path, command: list[str]) -> None:
    import json

    from typer.testing import CliRunner

    from llmcount.cli import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "phi4_multimodal", **CONFIGS["small"]}))
    result = CliRunner().invoke(app, [command[0], str(path), *command[1:]])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    if command[-1] == "--training":
        assert "no gradient: vision/*, audio/*" in text
    else:
        assert "so image and audio input is not counted" in text
