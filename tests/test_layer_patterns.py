"""Layer patterns that the drawn configs of ``test_records`` leave at their defaults, against transformers.

``oracle.drawn_config`` draws sizes and flips switches, but keeps the lists per layer at what the config class derives
(it draws them only when the class cannot derive them for the drawn number of layers) and integer pattern keys at
the class's defaults; a record's other branches (a layer list given, a pattern string, a frequency, two shared
blocks) are counted here on small hand-made configs and compared with ``sum(numel())`` over transformers' model on
meta.
"""

from __future__ import annotations

import pytest

from llmcount.formulas.config import read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

GLM_DSA = {  # six small layers: one dense, then MoE
    "model_type": "glm_moe_dsa",
    "num_hidden_layers": 6,
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 48,
    "moe_intermediate_size": 16,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "q_lora_rank": 24,
    "kv_lora_rank": 16,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 8,
    "v_head_dim": 8,
    "index_n_heads": 2,
    "index_head_dim": 8,
    "first_k_dense_replace": 1,
}

LONGCAT = {  # two layers of two sublayers; 4 routed and 2 zero-computation experts
    "model_type": "longcat_flash",
    "vocab_size": 64,
    "hidden_size": 32,
    "ffn_hidden_size": 48,
    "expert_ffn_hidden_size": 16,
    "num_attention_heads": 4,
    "n_routed_experts": 4,
    "zero_expert_num": 2,
    "moe_topk": 2,
    "q_lora_rank": 24,
    "kv_lora_rank": 16,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 8,
    "v_head_dim": 8,
}

MIMO = {  # sliding layers have twice the key/value heads and sinks
    "model_type": "mimo_v2_flash",
    "num_hidden_layers": 4,
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 48,
    "moe_intermediate_size": 16,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 12,
    "v_head_dim": 8,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
}

HY_V3 = {
    "model_type": "hy_v3",
    "num_hidden_layers": 4,
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 48,
    "moe_intermediate_size": 16,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "num_shared_experts": 2,
}

HY_V4 = {  # seven layers: indexers on 0, 1 and 5 by default
    **{key: value for key, value in GLM_DSA.items() if key not in ("first_k_dense_replace", "num_key_value_heads")},
    "model_type": "hy_v4",
    "num_hidden_layers": 7,
    "hc_mult": 3,
    "pad_token_id": None,  # the class's default, 120002, lies outside the small vocabulary
}

AXK2 = {  # four layers, gated norms of rank 4
    **{key: value for key, value in GLM_DSA.items() if key != "first_k_dense_replace"},
    "model_type": "axk2",
    "num_hidden_layers": 4,
    "gated_norm_rank": 4,
}

ZAMBA = {  # a small Zamba: the shared block counts once, however many hybrid layers use it
    "model_type": "zamba",
    "num_hidden_layers": 8,
    "vocab_size": 64,
    "hidden_size": 16,
    "intermediate_size": 24,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "mamba_d_state": 4,
    "mamba_dt_rank": 3,
    "pad_token_id": None,
}

OLMO_HYBRID = {  # 0.75 · 22 / 4 = 4.125: the linear key heads are 4 wide, the value heads 8
    "model_type": "olmo_hybrid",
    "num_hidden_layers": 6,
    "vocab_size": 64,
    "hidden_size": 22,
    "intermediate_size": 24,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 6,
    "pad_token_id": None,
}

ZAMBA2 = {  # six layers, hybrid ones at 1, 3 and 4
    "model_type": "zamba2",
    "num_hidden_layers": 6,
    "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid", "hybrid", "mamba"],
    "vocab_size": 64,
    "hidden_size": 16,
    "intermediate_size": 24,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "mamba_d_state": 4,
    "n_mamba_heads": 4,
    "adapter_rank": 3,
    "pad_token_id": None,
}

LFM3 = {  # nine layers: by default conv at 0, 1, 3, 5, 7; full at 2, 6; sliding at 4, 8
    "model_type": "lfm3",
    "num_hidden_layers": 9,
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "pad_token_id": 0,  # the default, 124,893, lies outside a small vocabulary
}

ZAYA = {  # four small layers, top-1 of 4 experts
    "model_type": "zaya",
    "num_hidden_layers": 4,
    "vocab_size": 64,
    "hidden_size": 32,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "moe_intermediate_size": 16,
    "num_experts": 4,
    "router_hidden_size": 12,
}

BEAM = {  # seven layers: sliding but the sixth and the last; three dense, then MoE
    "model_type": "beam",
    "num_hidden_layers": 7,
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 48,
    "moe_intermediate_size": 16,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "num_experts": 8,
    "num_experts_per_tok": 2,
}

MINIMAX_M3 = {  # four small layers; the indexer heads and width differ from the attention's
    "model_type": "minimax_m3_vl_text",
    "num_hidden_layers": 4,
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 8,
    "dense_intermediate_size": 24,
    "shared_intermediate_size": 12,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "index_n_heads": 2,
    "index_head_dim": 6,
}

INKLING = {  # five small layers; the sliding layers' heads and width differ from the full ones'
    "model_type": "inkling_text",
    "num_hidden_layers": 5,
    "vocab_size": 64,
    "hidden_size": 32,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "swa_num_attention_heads": 6,
    "swa_num_key_value_heads": 3,
    "swa_head_dim": 4,
    "sliding_window_size": 12,
    "d_rel": 3,
    "rel_extent": 20,
    "conv_kernel_size": 3,
    "intermediate_size": 40,
    "moe_intermediate_size": 8,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "n_shared_experts": 1,
}

INKLING2 = {  # the sliding layers' heads and width differ from the full ones'; no residual queries on layer 0
    "model_type": "inkling2_text",
    "vocab_size": 64,
    "hidden_size": 32,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "swa_num_attention_heads": 6,
    "swa_num_key_value_heads": 3,
    "swa_head_dim": 4,
    "sliding_window_size": 12,
    "d_rel": 3,
    "rel_extent": 20,
    "sconv_kernel_size": 3,
    "intermediate_size": 8,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
}

BAILING_HYBRID = {  # four small layers; without linear_head_dim the KDA heads are head_dim wide
    "model_type": "bailing_hybrid",
    "num_hidden_layers": 4,
    "vocab_size": 64,
    "pad_token_id": 0,
    "hidden_size": 32,
    "intermediate_size": 40,
    "moe_intermediate_size": 8,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "kv_lora_rank": 12,
    "qk_rope_head_dim": 4,
    "qk_nope_head_dim": 6,
    "v_head_dim": 10,
    "head_dim": 6,
    "num_experts": 8,
    "num_experts_per_token": 2,
    "num_expert_group": 2,
    "topk_group": 1,
    "first_k_dense_replace": 1,
}

BLT = {  # small parts; the encoder's 2 · 8 patch states differ from the global width 12: a projection
    "model_type": "blt",
    "vocab_size": 24,
    "encoder_hash_byte_group_vocab": 10,
    "encoder_config": {"vocab_size": 20, "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 2},
    "global_config": {"hidden_size": 12, "num_attention_heads": 3, "num_hidden_layers": 2, "intermediate_size": 20},
    "decoder_config": {"hidden_size": 6, "num_attention_heads": 2, "num_hidden_layers": 3, "hidden_size_global": 12},
    "patcher_config": {"vocab_size": 20, "hidden_size": 4, "num_attention_heads": 2, "num_hidden_layers": 1},
}

DOTS3 = {  # six small layers (0, 1 and 5 global); the sliding layers' sizes as the released checkpoint's swa_* keys
    "model_type": "dots3_note_text",
    "num_hidden_layers": 6,
    "vocab_size": 64,
    "pad_token_id": 0,
    "hidden_size": 32,
    "intermediate_size": 40,
    "moe_intermediate_size": 8,
    "shared_experts_intermediate_size": 12,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "q_lora_rank": 16,
    "kv_lora_rank": 12,
    "qk_rope_head_dim": 4,
    "qk_nope_head_dim": 6,
    "v_head_dim": 10,
    "head_dim": 10,
    "index_n_heads": 2,
    "index_head_dim": 8,
    "swa_num_attention_heads": 2,
    "swa_num_key_value_heads": 2,
    "swa_head_dim": 8,
    "swa_q_lora_rank": 6,
    "swa_kv_lora_rank": 5,
    "swa_qk_nope_head_dim": 6,
    "swa_v_head_dim": 3,
}
DOTS3_TYPES = ["full_attention", "sliding_attention", "indexed_attention", "sliding_attention", "full_attention"]
DOTS3_SLIDING = {
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "kv_lora_rank": 7,
    "qk_nope_head_dim": 4,
    "head_dim": 8,
}

CASES = {
    # indexers on layers 0, 1, 3, 5 (the class derives "full" where max(i - offset + 1, 0) % freq == 0)
    "glm_moe_dsa index_topk_freq": {**GLM_DSA, "index_topk_freq": 2},
    "glm_moe_dsa index_skip_topk_offset": {**GLM_DSA, "index_topk_freq": 3, "index_skip_topk_offset": 0},
    "glm_moe_dsa index_topk_pattern string": {**GLM_DSA, "index_topk_pattern": "FSSFSF"},
    "glm_moe_dsa index_topk_pattern list": {**GLM_DSA, "index_topk_pattern": ["full", "shared"] * 3},
    "glm_moe_dsa indexer_types": {**GLM_DSA, "indexer_types": ["full", "shared", "shared", "full", "full", "shared"]},
    "glm_moe_dsa mlp_layer_types": {**GLM_DSA, "mlp_layer_types": ["dense", "sparse", "dense"] * 2},
    # num_hidden_layers (2 per decoder layer) given instead of num_layers: the config class halves it
    "longcat_flash num_hidden_layers": {**LONGCAT, "num_hidden_layers": 6},
    "longcat_flash num_layers": {**LONGCAT, "num_layers": 3},
    "longcat_flash without zero experts": {**LONGCAT, "num_layers": 1, "zero_expert_num": 0},
    "mimo_v2_flash layer_types": {**MIMO, "layer_types": ["sliding_attention", "full_attention"] * 2},
    "mimo_v2_flash mlp_layer_types": {**MIMO, "mlp_layer_types": ["sparse", "dense", "dense", "sparse"]},
    "mimo_v2_flash default pattern": {**MIMO, "num_hidden_layers": 7},
    "hy_v3 mlp_layer_types": {**HY_V3, "mlp_layer_types": ["sparse", "dense", "sparse", "dense"]},
    "hy_v3 biases, no shared experts": {**HY_V3, "mlp_bias": True, "num_shared_experts": 0},
    "hy_v4 default pattern": HY_V4,
    "hy_v4 indexer_types": {**HY_V4, "indexer_types": ["full", "shared", "full", "full", "shared", "shared", "full"]},
    "hy_v4 mlp_layer_types": {**HY_V4, "mlp_layer_types": ["sparse", "dense"] * 3 + ["dense"]},
    "axk2 first_k_dense_replace, moe_layer_freq": {**AXK2, "first_k_dense_replace": 0, "moe_layer_freq": 2},
    "axk2 mlp_layer_types": {**AXK2, "mlp_layer_types": ["sparse", "dense", "dense", "sparse"]},
    "minimax_m3_vl_text layer_types, mlp_layer_types": {
        **MINIMAX_M3,
        "layer_types": ["full_attention", "minimax_m3_sparse", "minimax_m3_sparse", "full_attention"],
        "mlp_layer_types": ["dense", "sparse", "dense", "sparse"],
    },
    "minimax_m3_vl_text sparse_attention_config, moe_layer_freq": {
        **MINIMAX_M3,
        "sparse_attention_config": {"sparse_attention_freq": [0, 1, 1, 0], "sparse_num_index_heads": 3},
        "moe_layer_freq": [0, 0, 1, 1],
    },
    "minimax_m3_vl_text legacy indexer width": {
        **MINIMAX_M3,
        "sparse_attention_config": {"sparse_attention_freq": [1, 1, 1, 1], "sparse_index_dim": 10},
    },
    "inkling_text layer_types, mlp_layer_types": {
        **INKLING,
        "layer_types": ["hybrid", "hybrid_sliding", "hybrid", "hybrid_sliding", "hybrid_sliding"],
        "mlp_layer_types": ["dense", "sparse", "dense", "sparse", "sparse"],
    },
    "inkling_text local_layer_ids, dense_mlp_idx": {**INKLING, "local_layer_ids": [0, 3], "dense_mlp_idx": 2},
    "inkling_text dense_intermediate_size": {  # the experts then take intermediate_size, the dense MLP this
        **{key: value for key, value in INKLING.items() if key != "conv_kernel_size"},
        "dense_intermediate_size": 24,
        "dense_mlp_idx": 1,
        "num_hidden_layers": 7,
        "sconv_kernel_size": 2,
    },
    "inkling2_text default pattern": {**INKLING2, "num_hidden_layers": 7},  # layer 5 full
    "inkling2_text layer_types, a full first layer": {
        **INKLING2,
        "num_hidden_layers": 4,
        "layer_types": ["hybrid", "hybrid_sliding", "hybrid", "hybrid_sliding"],
    },
    "inkling2_text layer_types, all full": {**INKLING2, "num_hidden_layers": 2, "layer_types": ["hybrid", "hybrid"]},
    "bailing_hybrid layer_group_size": {**BAILING_HYBRID, "layer_group_size": 2, "short_conv_kernel_size": 3},
    "bailing_hybrid layer_types, mlp_layer_types": {
        **BAILING_HYBRID,
        "layer_types": ["full_attention", "linear_attention", "full_attention", "linear_attention"],
        "mlp_layer_types": ["sparse", "dense", "sparse", "dense"],
    },
    "bailing_hybrid linear sizes given": {
        **BAILING_HYBRID,
        "linear_num_heads": 3,
        "linear_head_dim": 5,
        "linear_conv_kernel_dim": 2,
        "attention_bias": True,
    },
    "blt hash n-gram sizes": {**BLT, "encoder_hash_byte_group_size": [2, 3], "encoder_hash_byte_group_nb_functions": 2},
    "blt empty hash n-gram sizes": {**BLT, "encoder_hash_byte_group_size": []},  # the config class's six sizes
    "blt tied, no patcher": {**BLT, "tie_word_embeddings": True, "patch_in_forward": False},
    "dots3_note_text swa keys": DOTS3,
    "dots3_note_text use_dsa false": {**DOTS3, "use_dsa": False},  # no indexers
    "dots3_note_text no sliding window": {**DOTS3, "use_sliding_window": False},
    "dots3_note_text layer_types, use_dsa": {
        **DOTS3,
        "use_dsa": True,
        "layer_types": [*DOTS3_TYPES, "sliding_attention"],
    },
    "dots3_note_text layer_types, no dsa": {
        **DOTS3,
        "use_dsa": False,
        "layer_types": [*DOTS3_TYPES, "sliding_attention"],
    },
    "dots3_note_text moe_layer_freq, legacy shared width, biases": {
        **DOTS3,
        "moe_layer_freq": 2,
        "first_k_dense_replace": 2,
        "moe_shared_expert_intermediate_size": 20,
        "attention_bias": True,
        "n_shared_experts": 2,
    },
    "dots3_note_text mlp_layer_types": {
        **DOTS3,
        "mlp_layer_types": ["sparse", "dense", "sparse", "dense", "dense", "sparse"],
    },
    "dots3_note_text per_layer_config": {  # a saved config: the sliding layers' overrides, indices as "03" or "3"
        **{key: value for key, value in DOTS3.items() if not key.startswith("swa_")},
        "layer_types": ["indexed_attention"] * 2
        + ["sliding_attention"] * 2
        + ["indexed_attention", "sliding_attention"],
        "per_layer_config": {"2": DOTS3_SLIDING, "03": DOTS3_SLIDING, "5": DOTS3_SLIDING},
    },
    "zamba attn_layer_period": {**ZAMBA, "attn_layer_period": 2, "attn_layer_offset": 1},  # hybrid: 2, 4, 6
    "zamba layers_block_type": {**ZAMBA, "layers_block_type": ["hybrid", "mamba", "mamba", "hybrid"] * 2},
    "zamba no hybrid layer": {**ZAMBA, "layers_block_type": ["mamba"] * 8},
    "zamba untied, biases": {**ZAMBA, "tie_word_embeddings": False, "mamba_proj_bias": True, "mamba_dt_rank": "auto"},
    "olmo_hybrid default pattern": OLMO_HYBRID,  # layer 3 full
    "olmo_hybrid three layers": {**OLMO_HYBRID, "num_hidden_layers": 3},  # the last layer full
    "olmo_hybrid layer_types": {**OLMO_HYBRID, "layer_types": ["full_attention", "linear_attention"] * 3},
    "olmo_hybrid linear heads": {**OLMO_HYBRID, "linear_num_key_heads": 2, "linear_num_value_heads": 4},
    "beam default patterns": BEAM,
    "beam layer_types, mlp_layer_types": {
        **BEAM,
        "layer_types": ["full_attention", "sliding_attention"] * 3 + ["full_attention"],
        "mlp_layer_types": ["sparse", "dense", "sparse", "sparse", "dense", "sparse", "sparse"],
    },
    "beam two layers, tied, biases": {
        **BEAM,
        "num_hidden_layers": 2,
        "tie_word_embeddings": True,
        "attention_bias": True,
    },
    "lfm3 default pattern": LFM3,
    "lfm3 layer_types, legacy 'attention'": {
        **LFM3,
        "layer_types": ["attention", "conv", "sliding_attention", "conv", "conv", "full_attention", *["conv"] * 3],
    },
    "lfm3 untied, biases, no gate, no sandwich norms": {
        **LFM3,
        "tie_word_embeddings": False,
        "conv_bias": True,
        "attention_bias": True,
        "use_attention_gate": False,
        "use_sandwich_norm": False,
    },
    "xlm sinusoidal positions, four languages, causal": {
        **{"model_type": "xlm", "n_layers": 2, "emb_dim": 32, "n_heads": 4, "vocab_size": 64, "pad_token_id": 0},
        **{"sinusoidal_embeddings": True, "n_langs": 4, "causal": True, "gelu_activation": False},
    },
    "zaya default pattern": ZAYA,
    "zaya hybrid_sliding layers, CCA kernels 3 and 1": {
        **ZAYA,
        "layer_types": ["hybrid", "hybrid_sliding", "hybrid_sliding", "hybrid"],
        "sliding_window": 8,
        "cca_time0": 3,
        "cca_time1": 1,
    },
    "zaya untied, biases, head bias": {
        **ZAYA,
        "tie_word_embeddings": False,
        "attention_bias": True,
        "lm_head_bias": True,
    },
    "zaya tied, head bias": {**ZAYA, "lm_head_bias": True},
    "zamba2 tied": ZAMBA2,
    "zamba2 tied, two blocks, attention adapters": {
        **ZAMBA2,
        "num_mem_blocks": 2,
        "use_shared_attention_adapter": True,
    },
    "zamba2 untied, attention adapters, biases": {
        **ZAMBA2,
        "tie_word_embeddings": False,
        "use_shared_attention_adapter": True,
        "add_bias_linear": True,
    },
    "zamba2 no hybrid layer": {**ZAMBA2, "layers_block_type": ["mamba"] * 6, "mamba_ngroups": 2},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_layer_pattern_equals_transformers(case: str) -> None:
    config = CASES[case]
    assert read_config(config, case).counts.total == oracle.meta_total(config), f"{case} ({oracle.VERSIONS})"


@pytest.mark.parametrize("model_type", ["gpt_neox", "stablelm"])
def test_partial_rope_that_turns_no_channel(model_type: str) -> None:
    """Heads of 2 channels and a rotary fraction of 0.25: int(2 · 0.25) = 0 channels turn (d_rope = 0), a model
    transformers builds; counted, not refused."""
    config = {"model_type": model_type, "hidden_size": 16, "num_attention_heads": 8, "num_hidden_layers": 2}
    config |= {"intermediate_size": 32, "vocab_size": 100, "num_key_value_heads": 8}
    if model_type == "gpt_neox":
        del config["num_key_value_heads"]
    assert read_config(config, "test").counts.total == oracle.meta_total(config)


ROPE = {"rope_type": "default", "rope_theta": 10000.0}
PARTIAL_ROPE = {  # a head of 16 channels in each
    "glm": {"head_dim": 16, "pad_token_id": None},
    "glm4": {"head_dim": 16, "pad_token_id": None},
    "glm4_moe": {"head_dim": 16, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8},
    "minimax_m2": {"head_dim": 16, "num_local_experts": 4, "num_experts_per_tok": 2},
    "nemotron": {"head_dim": 16},
    "phi": {},
    "stablelm": {},
}


@pytest.mark.parametrize("model_type", sorted(PARTIAL_ROPE))
@pytest.mark.parametrize(
    "keys",
    [
        {"partial_rotary_factor": 0.25},  # the released checkpoints' place
        {"rope_parameters": {**ROPE, "partial_rotary_factor": 0.75}},  # transformers 5's
        {"partial_rotary_factor": 0.25, "rope_parameters": {**ROPE, "partial_rotary_factor": 0.75}},  # nested wins
        {"partial_rotary_factor": 0.25, "rope_parameters": ROPE},  # nested object without it: the top-level one
        {"rope_parameters": ROPE},  # neither: the class default
    ],
    ids=["top", "nested", "both", "nested-object-without-it", "neither"],
)
def test_partial_rotary_factor_read_where_transformers_reads_it(model_type: str, keys: dict) -> None:
    """d_rope, the rotated channels of a head, against the rotary embedding transformers builds: inv_freq holds one
    frequency per pair of rotated channels, d_rope = 2 · len(inv_freq)."""
    import torch
    from transformers import AutoModelForCausalLM

    from llmcount.formulas.symbols import d_rope

    config = {"model_type": model_type, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}
    config |= {"intermediate_size": 80, "vocab_size": 97, "num_hidden_layers": 1, **PARTIAL_ROPE[model_type], **keys}
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(oracle._hf_config(config))
    (inv_freq,) = [buffer for name, buffer in model.named_buffers() if name.endswith("rotary_emb.inv_freq")]
    assert read_config(config, "test").values[d_rope] == 2 * inv_freq.shape[0], oracle.VERSIONS
