"""Every number a post prints is the config's, never a default the record falls back to.

Two ways a post printed a class default where the config gives its own value: a ``[printed]`` template (the module
tree) whose field was found by its value at the class defaults, a literal (GIT's vision positions, 197) or another
symbol equal to it there (ZAYA's convolution kernel read as ``h_kv``, 2 at the defaults, its stride as ``k``); and
the notation's "not in this config" note, which looked for a key among the config's top-level names only, so a
value under a sub-config (``vision_config.image_size``) or under an alias of the key (``n_embed`` for Falcon's
``hidden_size``) was said to be the default. Each case is checked on a config that differs from the class defaults
in the key concerned, against transformers' own ``print(model)``.
"""

from __future__ import annotations

import re

import pytest

from llmcount.formulas.config import read_config
from llmcount.renderers.tree import printed_tree
from llmcount.renderers.writeup import build

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")


def printed(config: dict) -> str:
    """``print(model)`` of transformers' causal LM for ``config``, built on the meta device."""
    model, _ = oracle._meta_model(oracle._freeze(config))
    return str(model)


def test_zaya_prints_its_own_convolution_kernels_and_router_classes(tmp_path):
    """cca_time0 = 3 and cca_time1 = 4 taps (the defaults: 2 and 2, which equal h_kv there), 6 + 2 heads (CCA's
    channels (h + h_kv)·h_d, its groups h + h_kv), 12 experts (the router's n + 1 classes)."""
    config = {
        **oracle.runnable_defaults("zaya"),
        "cca_time0": 3,
        "cca_time1": 4,
        "num_attention_heads": 6,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "hidden_size": 256,
        "num_experts": 12,
        "num_hidden_layers": 2,
        "vocab_size": 64,
        "layer_types": ["hybrid", "hybrid"],
    }
    tree = printed_tree(read_config(config, "zaya"))
    assert tree == printed(config)
    assert "(conv_qk_depthwise): Conv1d(256, 256, kernel_size=(3,), stride=(1,), groups=256)" in tree
    assert "(conv_qk_grouped): Conv1d(256, 256, kernel_size=(4,), stride=(1,), groups=8)" in tree
    assert "(out_proj): Linear(in_features=256, out_features=13, bias=False)" in tree
    path = tmp_path / "config.json"
    path.write_text(__import__("json").dumps(config))
    assert "kernel_size=(3,)" in build(str(path)).text


def test_git_prints_the_positions_of_its_own_image_size(tmp_path):
    """A 384-pixel image in 16-pixel patches: 24² = 576 patches and the class token, 577 learned positions (the
    default 224 pixels give 197)."""
    config = oracle.with_key(oracle.runnable_defaults("git"), "vision_config.image_size", 384)
    config = oracle.with_key(config, "vision_config.num_hidden_layers", 1)
    tree = printed_tree(read_config({**config, "num_hidden_layers": 1}, "git"))
    assert tree == printed({**config, "num_hidden_layers": 1})
    assert "(position_embedding): Embedding(577, 768)" in tree


def notation_row(text: str, key: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("| ") and f"`{key}`" in line)


def test_a_sub_configs_key_the_config_gives_is_not_called_a_default(tmp_path):
    config = oracle.with_key(oracle.runnable_defaults("git"), "vision_config.image_size", 384)
    path = tmp_path / "config.json"
    path.write_text(__import__("json").dumps(config))
    row = notation_row(build(str(path)).text, "vision_config.image_size")
    assert "not in this config" not in row and row.endswith("| 576 |")
    del config["vision_config"]["image_size"]  # absent: the class's 224 pixels, 196 patches
    path.write_text(__import__("json").dumps(config))
    row = notation_row(build(str(path)).text, "vision_config.image_size")
    assert "not in this config: the default $224$" in row and row.endswith("| 196 |")


def test_a_key_given_under_its_alias_is_not_called_a_default(tmp_path):
    """FalconConfig's attribute_map reads n_embed as hidden_size: a config giving n_embed gives the width."""
    config = {**oracle.runnable_defaults("falcon"), "n_embed": 256, "num_attention_heads": 4, "num_hidden_layers": 2}
    config.pop("hidden_size", None)
    path = tmp_path / "config.json"
    path.write_text(__import__("json").dumps(config))
    text = build(str(path)).text
    row = notation_row(text, "hidden_size")
    assert "not in this config" not in row and row.endswith("| 256 |")
    assert re.search(r"\(word_embeddings\): Embedding\(\d+, 256\)", text)


# Templates whose widths discovery wrote as the numbers it saw at the class defaults, each checked on a config that
# differs from them in that width: MPT's and BLOOM's MLP output (4·d: 8192 and 256 there), GPT's c_proj input (4·d,
# 3072), RoFormer's sinusoidal positions (d / h per head, 64), DiffLlama's group norm (2·h_d, 128).
WIDTHS = {
    "mpt": {"d_model": 96, "n_heads": 4, "n_layers": 1, "vocab_size": 64},
    "bloom": {"hidden_size": 96, "n_head": 4, "n_layer": 1, "vocab_size": 64},
    "openai-gpt": {"n_embd": 96, "n_head": 4, "n_layer": 1, "vocab_size": 64},
    "roformer": {
        "hidden_size": 96,
        "embedding_size": 96,
        "num_attention_heads": 4,
        "num_hidden_layers": 1,
        "vocab_size": 64,
    },
    "diffllama": {
        "hidden_size": 96,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "num_hidden_layers": 1,
        "head_dim": 12,
    },
}


@pytest.mark.parametrize("model_type", list(WIDTHS))
def test_a_width_the_template_held_as_a_number_is_the_configs(model_type):
    config = {**oracle.runnable_defaults(model_type), **WIDTHS[model_type]}
    tree = printed_tree(read_config(config, model_type))
    assert tree is not None and tree == printed(config), model_type


LINEAR = {  # Gated DeltaNet sizes unlike the defaults, where the conv width 8192 equals d·d_conv (2048·4) or N·h_d
    "linear_num_key_heads": 2,
    "linear_key_head_dim": 8,
    "linear_num_value_heads": 4,
    "linear_value_head_dim": 8,
    "linear_conv_kernel_dim": 3,
    "num_hidden_layers": 2,
    "layer_types": ["linear_attention", "full_attention"],
}


@pytest.mark.parametrize("model_type", ["qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"])
def test_gated_deltanet_prints_its_own_convolution(model_type):
    """The causal convolution over queries, keys and values: 2·h_lk·d_lk + h_lv·d_lv = 64 channels, a kernel of 3
    and a padding of 2 (the defaults: 8192 channels, 4 and 3)."""
    config = {**oracle.runnable_defaults(model_type), **LINEAR}
    tree = printed_tree(read_config(config, model_type))
    assert tree is not None and tree == printed(config), model_type
    assert "(conv1d): Conv1d(64, 64, kernel_size=(3,), stride=(1,), padding=(2,), groups=64, bias=False)" in tree


@pytest.mark.parametrize("model_type", ["mamba", "falcon_mamba"])
def test_mamba_prints_its_own_state_and_kernel(model_type):
    """x_proj maps to the time-step rank and twice the state size (r_dt + 2·d_state: 4 + 16 at d = 64 and a state of
    8; the defaults give 80), the convolution pads d_conv - 1 (2 for a kernel of 3; the defaults: 3)."""
    config = {
        **oracle.runnable_defaults(model_type),
        "hidden_size": 64,
        "state_size": 8,
        "conv_kernel": 3,
        "num_hidden_layers": 1,
        "vocab_size": 64,
    }
    config.pop("intermediate_size", None)
    config.pop("time_step_rank", None)
    tree = printed_tree(read_config(config, model_type))
    assert tree is not None and tree == printed(config), model_type
    assert "(x_proj): Linear(in_features=128, out_features=20, bias=False)" in tree
