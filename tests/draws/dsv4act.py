"""DeepSeek-V4: sliding-window attention of queries from a low-rank latent against one key/value head, plus, on
compressed layers, the entries of a compressed-sparse-attention (CSA, with a Lightning Indexer) or heavily-compressed
(HCA) compressor; a grouped output projection, sinks, hyper-connections of hc_mult streams, and an MoE block on every
layer (hash_moe layers route by a token-id table). The draws mix every layer kind (layer_types' default too: HCA
then CSA on odd layers), compression rates below, at and above S = 5, 7, 9 and not dividing it, index_topk below and
above the number of compressed entries, one or more heads and streams, and a cache or none (the cache keeps the
indexer's compressed keys)."""

from __future__ import annotations

import random

KINDS = ["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"]
MLP_KINDS = ["hash_moe", "moe"]


def deepseek_v4(rng: random.Random) -> dict:
    layers = rng.choice([2, 3, 4])
    head_dim = rng.choice([16, 32])
    rope = rng.choice([None, 4, 6])  # the legacy qk_rope_head_dim, or DeepseekV4Config's 64/512 of head_dim
    heads = rng.choice([1, 2, 3])
    groups = rng.choice([g for g in (1, 2, 4) if heads * head_dim % g == 0])
    config = {
        "model_type": "deepseek_v4",
        "num_hidden_layers": layers,
        "layer_types": rng.choice([None, [rng.choice(KINDS) for _ in range(layers)]]),
        "mlp_layer_types": rng.choice([None, [rng.choice(MLP_KINDS) for _ in range(layers)]]),
        "hidden_size": rng.choice([16, 32]),  # bf16 grouped matmuls: rows a multiple of 16 bytes
        "moe_intermediate_size": rng.choice([8, 16]),
        "num_attention_heads": heads,
        "head_dim": head_dim,
        "q_lora_rank": rng.choice([8, 12]),
        "o_groups": groups,
        "o_lora_rank": rng.choice([4, 6]),
        "n_routed_experts": rng.choice([2, 4]),
        "num_experts_per_tok": rng.choice([1, 2]),
        "hc_mult": rng.choice([1, 2, 3]),
        "hc_sinkhorn_iters": rng.choice([1, 2, 3]),
        "index_n_heads": rng.choice([1, 2]),
        "index_head_dim": rng.choice([8, 12]),  # RoPE on its last d_rope (at most 6)
        "index_topk": rng.choice([1, 2, 64]),  # fewer or more than the compressed entries
        "compress_rates": {
            "compressed_sparse_attention": rng.choice([2, 3, 4, 8]),
            "heavily_compressed_attention": rng.choice([3, 5, 6, 10]),
        },
        "sliding_window": rng.choice([2, 4, 7, 16]),
        "swiglu_limit": rng.choice([10.0, 0.05]),  # the clamp bites or not: the same storages
        "vocab_size": rng.choice([67, 101]),
        "pad_token_id": 0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "use_cache": rng.choice([True, False]),  # the cache keeps the graph of the indexer's compressed keys
    }
    if rope is not None:
        config["qk_rope_head_dim"] = rope
    return config


DRAWS = {"deepseek_v4": deepseek_v4}
