"""The module tree of layers a weight's count does not name one by one: a ``[printed]`` ``index`` rule over the layer
index (every layer but the first, the layers before the key/value-sharing ones) and weights a layer carries more than
once (``2*N``, ``N + N_sliding``), against transformers' own ``print(model)`` of configs other than the class
defaults the main tree test builds."""

from __future__ import annotations

import re

import pytest

from llmcount.formulas import records
from llmcount.formulas.config import read_config
from llmcount.renderers.tree import layer_times, printed_tree

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")


def printed(config: dict) -> str:
    """``print(model)`` of transformers' causal LM for ``config``, built on the meta device."""
    model, _ = oracle._meta_model(oracle._freeze(config))
    return str(model)


MODERNBERT_SMALL = {
    "model_type": "modernbert-decoder", "num_hidden_layers": 5, "hidden_size": 64, "intermediate_size": 96,
    "num_attention_heads": 4, "vocab_size": 100, "global_attn_every_n_layers": 2, "pad_token_id": 0,
}  # fmt: skip


def test_every_layer_but_the_first_prints_its_attention_norm() -> None:
    """ModernBERT-decoder counts attn_norm on N - 1 layers; the record's index rule says which ("i > 0"): layer 0
    prints an Identity there (a hand-read fact of ModernBertDecoderLayer), the others a LayerNorm of d."""
    tree = printed_tree(read_config(MODERNBERT_SMALL, "modernbert small"))
    assert tree == printed(MODERNBERT_SMALL)
    assert "(0): ModernBertDecoderLayer(\n        (attn_norm): Identity()" in tree
    assert "(1-4): 4 x ModernBertDecoderLayer(\n        (attn_norm): LayerNorm((64,)" in tree


@pytest.mark.parametrize(("layers", "shared"), [(10, 4), (12, 0)])
def test_the_key_value_sharing_layers_print_no_key_projection(layers: int, shared: int) -> None:
    """Gemma 3n's last num_kv_shared_layers layers reuse earlier keys and values and build no k_proj or v_proj."""
    base = oracle.class_defaults("gemma3n_text")
    config = {
        **base,
        "num_hidden_layers": layers,
        "num_kv_shared_layers": shared,
        "layer_types": base["layer_types"][:layers],
        "activation_sparsity_pattern": base["activation_sparsity_pattern"][:layers],
        "intermediate_size": base["intermediate_size"][:layers],
    }
    tree = printed_tree(read_config(config, "gemma3n small"))
    assert tree == printed(config)
    last = f"({layers - shared}-{layers - 1}): {shared} x Gemma3nTextDecoderLayer("
    if shared:
        first, rest = tree.split(last)
        assert "(k_proj): Linear" in first and "(k_proj)" not in rest and "(v_proj)" not in rest
    else:
        assert f"(0-{layers - 1}): {layers} x Gemma3nTextDecoderLayer(" in tree


MIMO_SMALL = {
    "model_type": "mimo_v2_flash", "num_hidden_layers": 4, "hidden_size": 64, "intermediate_size": 96,
    "moe_intermediate_size": 32, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 16, "v_head_dim": 8,
    "n_routed_experts": 4, "num_experts_per_tok": 2, "vocab_size": 100,
    "layer_types": ["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
    "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"],
}  # fmt: skip


def test_a_projection_counted_twice_in_a_layer_prints_twice_as_wide() -> None:
    """MiMo-V2-Flash counts k_proj on N + N_sliding layers: once on a full layer, twice on a sliding one, whose key
    projection has 2 · h_kv heads of h_d = 2 · 2 · 16 = 64 outputs (32 on a full layer)."""
    model = read_config(MIMO_SMALL, "mimo small")
    k_proj = next(t for t in model.derivation.terms if t.path == "attention/k_proj")
    assert layer_times(model, k_proj.layers) == (1, 2, 2, 1)
    tree = printed_tree(model)
    assert tree == printed(MIMO_SMALL)
    assert tree.count("(k_proj): Linear(in_features=64, out_features=64, bias=False)") == 1  # layers 1-2, one run
    assert tree.count("(k_proj): Linear(in_features=64, out_features=32, bias=False)") == 2  # layer 0, layer 3


def test_two_of_each_module_in_every_layer() -> None:
    """LongCat-Flash counts its attention, MLP and norms on 2*N layers: every layer holds two of each."""
    config = {**oracle.class_defaults("longcat_flash"), "num_layers": 3, "hidden_size": 256}
    model = read_config(config, "longcat small")
    assert all(layer_times(model, t.layers) == (2, 2, 2) for t in model.derivation.terms if str(t.layers) == "2*N")
    tree = printed_tree(model)
    assert tree == printed(config)
    assert "(self_attn): ModuleList(\n          (0-1): 2 x LongcatFlashMLA(" in tree


def test_two_stacks_of_the_same_layers() -> None:
    """HRM's text model runs two stacks of N layers (the record counts their weights on 2*N layers)."""
    config = {**oracle.class_defaults("hrm_text"), "num_layers_per_stack": 3, "hidden_size": 192}
    tree = printed_tree(read_config(config, "hrm small"))
    assert tree == printed(config)
    assert tree.count("(0-2): 3 x HrmTextDecoderLayer(") == 2


def _with_index(model_type: str, index: dict[str, str]) -> records.Family:
    from dataclasses import replace

    family = records.family(model_type)
    return replace(family, printed={**family.printed, "index": index})


def test_a_rule_that_picks_other_than_the_count_leaves_the_generic_tree() -> None:
    """A rule choosing 3 of 5 layers for a count of N - 1 = 4 is not believed: no printed tree (the write-up then
    shows the generic one)."""
    family = _with_index("modernbert-decoder", {"N - 1": "i > 1"})
    assert printed_tree(read_config(MODERNBERT_SMALL, "modernbert small", family=family)) is None


@pytest.mark.parametrize(
    ("index", "message"),
    [
        ({"N - 1": 3}, "index maps a layer count"),
        ({"N - 1": "i >"}, "index['N - 1']"),
        ({"N -": "i > 0"}, "index"),
    ],
)
def test_a_bad_index_rule_is_refused_by_name(index, message) -> None:
    from llmcount.formulas.expressions import RecordError
    from llmcount.formulas.records import parse_record

    record = {
        "model_type": "toy",
        "title": "Toy",
        "symbols": {"d": "hidden_size"},
        "terms": [{"path": "norms/norm", "expr": "d"}],
        "printed": {"index": index},
    }
    with pytest.raises(RecordError, match=re.escape(message)):
        parse_record(record, "families/toy.toml")


def test_a_tower_of_its_own_depth_prints_as_a_stack() -> None:
    """GIT's vision encoder has vision_config.num_hidden_layers layers (N_vis) of its own width, printed in the tree
    as one repeated layer (``[[printed.stacks]]``): 3 layers of 64 here, beside 2 decoder layers of 32."""
    config = {
        **oracle.class_defaults("git"),
        "num_hidden_layers": 2,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_attention_heads": 4,
        "vision_config": {
            "num_hidden_layers": 3,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_attention_heads": 4,
        },
    }
    tree = printed_tree(read_config(config, "git small"))
    assert tree == printed(config)
    assert "(0-2): 3 x GitVisionEncoderLayer(" in tree and "(0-1): 2 x GitLayer(" in tree
    assert "(k_proj): Linear(in_features=64, out_features=64, bias=True)" in tree


def test_a_stack_without_its_placeholder_is_refused_by_name() -> None:
    from llmcount.formulas.expressions import RecordError
    from llmcount.formulas.records import parse_record

    record = {
        "model_type": "toy",
        "title": "Toy",
        "symbols": {"d": "hidden_size"},
        "terms": [{"path": "norms/norm", "expr": "d"}],
        "printed": {"text": "{layers}", "layers": [], "stacks": [{"count": "N", "text": "X()"}]},
    }
    with pytest.raises(RecordError, match=re.escape("text takes {stack:0} once")):
        parse_record(record, "families/toy.toml")


def test_shared_blocks_print_in_each_layer_that_uses_them() -> None:
    """Zamba2 counts its shared transformer block once (num_mem_blocks) and prints it inside every hybrid layer
    (``[printed]`` ``shared``), with one adapter per hybrid layer in its list: 3 hybrid layers here, so 3 adapters."""
    types = ["mamba", "hybrid", "mamba", "hybrid", "mamba", "mamba", "hybrid", "mamba"]
    config = {
        **oracle.class_defaults("zamba2"),
        "num_hidden_layers": 8,
        "layers_block_type": types,
        "hybrid_layer_ids": [1, 3, 6],
    }
    tree = printed_tree(read_config(config, "zamba2 small"))
    assert tree == printed(config)
    assert tree.count("(shared_transformer): Zamba2AttentionDecoderLayer(") == 3
    assert "(gate_up_proj_adapter_list): ModuleList(\n" in tree and "(0-2): 3 x Sequential(" in tree
