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

CASES = [
    ("deepseek_v4", 0, "fp32", "eager"),  # three CSA layers (4 entries of 2 tokens, S = 9), two heads, three streams,
    #                                       one Sinkhorn iteration, index_topk above the entries; no cache
    ("deepseek_v4", 1, "bf16", "eager"),  # two CSA layers, one head (keys and values one storage), hash_moe routing,
    #                                       index_topk 1 of 4 entries; no cache
    ("deepseek_v4", 3, "fp32", "eager"),  # layer_types' default (two HCA), three heads, 2 entries of 3 tokens (S = 7,
    #                                       not a multiple); a cache; qk_rope_head_dim 4
    ("deepseek_v4", 10, "bf16", "eager"),  # sliding, sliding, CSA, CSA: 3 entries of 3 tokens (S = 9, a multiple);
    #                                        index_topk 2 of 3; a cache (the indexer's compressed keys kept)
    ("deepseek_v4", 19, "fp32", "eager"),  # sliding, CSA, CSA, HCA: one head, three streams, three Sinkhorn iterations;
    #                                        the HCA rate 10 above S = 5 (no entry, nothing kept by its compressor)
    ("deepseek_v4", 26, "bf16", "eager"),  # HCA, HCA, sliding, sliding: one head, 3 entries of 3 tokens (S = 9);
    #                                        a cache
    ("deepseek_v4", 24, "fp32", "eager"),  # layer_types' default over 4 layers (HCA ×3, then CSA): one entry of 4
    #                                        tokens (S = 7), index_topk above it; a cache
    ("deepseek_v4", 34, "bf16", "eager"),  # sliding, CSA, CSA, sliding: one head, index_topk 1 of 2 entries; a cache
    ("deepseek_v4", 38, "fp32", "eager"),  # sliding, CSA, HCA, CSA: three heads and streams, both rates 3 (S = 5); a
    #                                        cache
    ("deepseek_v4", 9, "fp32", "eager"),  # HCA, sliding, CSA: one head, one stream; the CSA rate 8 above S = 7 (no
    #                                       entry), the HCA rate 3 (2 entries)
    ("deepseek_v4", 5, "fp32", "eager"),  # HCA ×3 then sliding, the HCA rate at S = 5 (one entry), a cache; qk_rope 6
    ("deepseek_v4", 18, "bf16", "eager"),  # sliding only, S = 7 at the window; hash_moe then moe; a cache
]
