"""Hy-V4: latent attention with an output gate, sinks and a DeepSeek Sparse Attention indexer ("full" layers run
their own, "shared" ones reuse the last full layer's selection), dense or MoE MLPs (grouped sigmoid routing, clamped
SwiGLU experts), all between hyper-connections of hc_mult streams. The layouts are drawn so that every layer kind
(full or shared indexer; dense or MoE) and every `when` of the table occurs in some case."""

from __future__ import annotations

import random

INDEXER_LAYOUTS = [None, ["full", "shared", "shared"], ["full", "full", "shared"], ["full", "shared", "full"]]
MLP_LAYOUTS = [None, ["dense", "sparse", "sparse"], ["sparse", "dense", "sparse"], ["sparse", "sparse", "dense"]]


def hy_v4(rng: random.Random) -> dict:
    layers = rng.choice([2, 3])
    n_group = rng.choice([1, 2])
    indexers, mlps = rng.choice(INDEXER_LAYOUTS), rng.choice(MLP_LAYOUTS)
    rope = rng.choice([2, 4])
    return {
        "model_type": "hy_v4",
        "num_hidden_layers": layers,
        "indexer_types": indexers if indexers is None else indexers[:layers],
        "mlp_layer_types": mlps if mlps is None else mlps[:layers],
        "hidden_size": rng.choice([16, 24, 32]),  # bf16 grouped matmuls: rows a multiple of 16 bytes
        "intermediate_size": rng.choice([20, 28]),
        "moe_intermediate_size": rng.choice([8, 16]),
        "num_attention_heads": rng.choice([1, 2, 3]),
        "q_lora_rank": rng.choice([8, 12]),
        "kv_lora_rank": rng.choice([8, 16]),
        "qk_rope_head_dim": rope,
        "qk_nope_head_dim": rng.choice([4, 6]),
        "v_head_dim": rng.choice([4, 10]),
        "attention_bias": rng.choice([True, False]),
        "index_n_heads": rng.choice([1, 3]),
        "index_head_dim": rope + rng.choice([0, 4]),  # RoPE on its last qk_rope_head_dim
        "index_topk": rng.choice([3, 2048]),  # fewer than S: the indexer's mask leaves keys out
        "hc_mult": rng.choice([1, 2, 3]),
        "n_routed_experts": n_group * rng.choice([2, 4]),
        "num_experts_per_tok": rng.choice([1, 2]),
        "n_group": n_group,
        "topk_group": rng.choice(range(1, n_group + 1)),
        "n_shared_experts": rng.choice([1, 2]),
        "norm_topk_prob": rng.choice([True, False]),
        "swiglu_limit": rng.choice([10.0, 0.05]),  # the clamp bites or not: the same storages
        "tie_word_embeddings": rng.choice([True, False]),
        "vocab_size": rng.choice([67, 101]),
        "pad_token_id": 0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "use_cache": rng.choice([True, False]),  # the latent written to a cache and read back, or not
    }


DRAWS = {"hy_v4": hy_v4}

CASES = [
    ("hy_v4", 0, "fp32", "eager"),  # indexer_types' default (full, full, shared); MoE, dense, MoE; grouped routing
    #                                 (2 of 2 groups), no renormalized top-k; one stream
    ("hy_v4", 8, "bf16", "eager"),  # one head (values a view of kv_b_proj's output); a dense then an MoE layer, full
    #                                 then shared indexer; grouped routing (1 of 2 groups), renormalized
    ("hy_v4", 10, "bf16", "eager"),  # mlp_layer_types' default; the indexer keeps 3 of 5 keys; two streams
    ("hy_v4", 16, "fp32", "eager"),  # MoE, dense, MoE; full, shared, full indexers; three streams; 3 of 5 keys
    ("hy_v4", 24, "bf16", "eager"),  # three heads, three streams; ungrouped routing; attention biases; a cache
    ("hy_v4", 18, "fp32", "eager"),  # one head, three streams; an MoE then a dense layer; tied head; a cache
    ("hy_v4", 13, "bf16", "eager"),  # one head, one stream; full, shared, shared; grouped, k = 2
    ("hy_v4", 3, "fp32", "eager"),  # MoE on both layers, renormalized top-k; 3 of 9 keys; no cache
]
