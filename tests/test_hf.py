"""A family record knows which config key each family gives a symbol under."""

import pytest

from llmcount.formulas import records
from llmcount.formulas.config import config_key
from llmcount.formulas.symbols import N, N_dense, S, d, h_kv, n, n_pos
from llmcount.presets import presets
from llmcount.sources import load


@pytest.mark.parametrize(
    ("family", "symbol", "key"),
    [
        # read off the published config.json files and transformers' config classes
        ("gpt2", N, "n_layer"),
        ("gpt2", d, "n_embd"),
        ("gpt2", n_pos, "n_positions"),
        ("llama", N, "num_hidden_layers"),
        ("llama", h_kv, "num_key_value_heads"),
        ("mixtral", n, "num_local_experts"),
        ("qwen3_moe", n, "num_experts"),
        ("deepseek_v3", n, "n_routed_experts"),
        ("deepseek_v3", N_dense, "first_k_dense_replace"),
        ("qwen3_moe", N_dense, "mlp_only_layers, decoder_sparse_step"),
        ("qwen3", S, "(none: --seq)"),
    ],
)
def test_config_key(family, symbol, key):
    assert config_key(records.family(family), symbol) == key


@pytest.mark.parametrize(  # a whole multimodal preset reads its sizes from text_config (tests/test_towers.py)
    "name", sorted(n for n, p in presets().items() if records.composite(p.config()["model_type"]) is None)
)
def test_every_value_comes_from_a_key_the_config_has_or_a_default(name):
    config = presets()[name].config()
    model = load(name)
    absent = {s for s in model.values if not any(k in config for k in config_key(model, s).split(", "))}
    # e.g. head_dim defaults to hidden_size // num_attention_heads, GPT-2's n_inner to 4·n_embd
    defaulted = {spec.symbol for spec in model.architecture.symbols if spec.default is not records.REQUIRED}
    counted = {symbol for symbol, _, _ in model.architecture.layers}  # layer counts come from conditions
    assert absent <= defaulted | counted, absent
