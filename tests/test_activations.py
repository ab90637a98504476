"""Activations against autograd: the bytes a training forward keeps for backward, exactly.

Oracle (``tests/activation_oracle.py``, ORACLE.md): the distinct storages ``saved_tensors_hooks`` packs during
a forward with labels of the transformers model built from the same small random config, on the CPU, dropout
off, weights excluded; eager attention (fp32 and bf16) and SDPA (PyTorch's fused flash kernel on the CPU,
the ``--attention flash`` case). The expected numbers come from transformers, never from llmcount.

Batches of one sequence are exact up to two storage details of transformers' code, checked on their own below:
the padded labels (B·S + 1 values, not B·S, when B = 1: the shift is a view, not a copy) and, with one key/value
head (MQA), the keys and values repeated to h heads (a view of the h_kv = 1 head when B = 1, a copy otherwise).
The other tests draw B >= 2 and h_kv >= 2.

Selective and full recomputation have no transformers counterpart; they are checked against a hand
derivation from their definitions (Megatron-LM, Korthikanti et al. 2022) on the llama-3-8b preset.
"""

from __future__ import annotations

import random
import zlib

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from activation_oracle import VERSIONS, saved_bytes
from draws import CASES as DRAWN_CASES
from draws import DRAWS

from llmcount.errors import LlmcountError
from llmcount.formulas.activations import Options, activations
from llmcount.formulas.config import read_config
from llmcount.sources import load

HEAD_DIM_FROM_WIDTH = {"helium", "cohere2", "phi", "stablelm", "persimmon", "cohere_compass_text"}
# RoPE on the first int(h_d · partial_rotary_factor) of each head; some rotary codes need that even: h_d of 4 or 8
PARTIAL_ROPE = {"glm", "glm4", "phi", "nemotron", "stablelm", "persimmon"}
EVEN_ROTARY = {"phi", "nemotron", "stablelm", "persimmon"}

# MoE families drawn by one rule: their config's keys for (routed experts, experts per token, expert width), and
# settings each needs besides (None: a key drawn from the given choices)
MOE = {
    "granitemoe": ("num_local_experts", "num_experts_per_tok", "intermediate_size", {}),
    "granitemoe_swa": ("num_local_experts", "num_experts_per_tok", "intermediate_size", {}),
    "granitemoeshared": (
        "num_local_experts",
        "num_experts_per_tok",
        "intermediate_size",
        {"shared_intermediate_size": [0, 8, 24]},
    ),
    "phimoe": ("num_local_experts", "num_experts_per_tok", "intermediate_size", {}),
    "gpt_oss": ("num_local_experts", "num_experts_per_tok", "intermediate_size", {}),
    "minimax_m2": ("num_local_experts", "num_experts_per_tok", "intermediate_size", {"rotary_dim": [None, 2, 4]}),
    "glm4_moe": (
        "n_routed_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        {"first_k_dense_replace": [0, 1], "n_shared_experts": [1, 2], "norm_topk_prob": [True, False]},
    ),
    "dots1": (
        "n_routed_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        {"first_k_dense_replace": [0, 1], "n_shared_experts": [1, 2], "norm_topk_prob": [True, False]},
    ),
    "solar_open": (
        "n_routed_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        {"n_shared_experts": [1, 2], "norm_topk_prob": [True, False]},
    ),
    "mellum": (
        "num_local_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        {"norm_topk_prob": [True, False], "num_hidden_layers": [2], "mlp_layer_types": [None, ["dense", "sparse"]]},
    ),
    "exaone_moe": (
        "num_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        {"first_k_dense_replace": [0, 1], "num_shared_experts": [1, 2], "norm_topk_prob": [True, False]},
    ),
    "ernie4_5_moe": (
        "moe_num_experts",
        "moe_k",
        "moe_intermediate_size",
        {"moe_layer_start_index": [0, 1], "moe_num_shared_experts": [0, 1, 2]},
    ),
    "hunyuan_v1_moe": ("num_experts", "moe_topk", "intermediate_size", {}),
    "aria_text": ("moe_num_experts", "moe_topk", "intermediate_size", {"moe_num_shared_experts": [1, 2]}),
    "kolibri1": (
        "num_local_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        {
            "shared_expert_intermediate_size": [8, 24],
            "norm_topk_prob": [True, False],
            "num_hidden_layers": [2],
            "layer_types": [None, ["sliding_attention", "full_attention"], ["full_attention"] * 2],
            "sliding_window": [64],
        },
    ),
    "afmoe": (
        "num_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        {
            "num_hidden_layers": [2],
            "num_dense_layers": [0, 1],
            "num_shared_experts": [1, 2],
            "global_attn_every_n_layers": [1, 2],
        },
    ),
    "hy_v3": (
        "num_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        {"num_hidden_layers": [2], "num_shared_experts": [0, 1, 2], "enable_moe_fp32_combine": [True, False]},
    ),
    "flint": (
        "num_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        {
            "num_hidden_layers": [2],
            "shared_expert_intermediate_size": [8, 24],
            "mlp_only_layers": [[], [0]],
            "norm_topk_prob": [True, False],
            "layer_types": [None, ["sliding_attention", "full_attention"]],
        },
    ),
    "llama4_text": (
        "num_local_experts",
        "num_experts_per_tok",
        "intermediate_size",
        {
            "num_hidden_layers": [2],
            "intermediate_size_mlp": [8, 24],
            "interleave_moe_layer_step": [1, 2],  # with step 2 dense layers beside NoPE layers: kinds that overlap
            "no_rope_layers": [[1, 1], [1, 0]],
            "use_qk_norm": [True, False],
            "attn_temperature_tuning": [True, False],
        },
    ),
    "mimo_v2_flash": (
        "n_routed_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        {
            "num_hidden_layers": [2],
            "head_dim": [6, 12],  # RoPE on 2 or 4 dimensions of each head
            "v_head_dim": [4, 8],
            "layer_types": [None, ["full_attention", "sliding_attention"], ["sliding_attention"] * 2],
            "mlp_layer_types": [None, ["sparse", "sparse"]],
            "norm_topk_prob": [True, False],
        },
    ),
    "cohere2_moe": (
        "num_experts",
        "num_experts_per_tok",
        "intermediate_size",
        {
            "num_hidden_layers": [2],
            "first_k_dense_replace": [0, 1],
            "prefix_dense_intermediate_size": [8, 24],
            "prefix_dense_sliding_window_pattern": [1, 2],
            "sliding_window_pattern": [1, 2, 4],
            "expert_selection_fn": ["softmax", "sigmoid"],
            "norm_topk_prob": [True, False],
            "num_shared_experts": [0, 1, 2],
            "shared_expert_combination_strategy": ["sum", "average"],
            "rms_norm_eps": [None, 1e-5],
        },
    ),
}

# A.X K1 and K2: DeepSeek-V3's MLA and MoE, the layer layout drawn (mlp_layer_types, or the dense-first rule)
AXK_DRAWS = {
    "q_lora_rank": [8, 16],  # always a query latent
    "num_hidden_layers": [2],
    "mlp_layer_types": [None, ["dense", "sparse"], ["sparse", "sparse"]],
    "first_k_dense_replace": [0, 1],  # read when mlp_layer_types is null
    "moe_layer_freq": [1, 2],
    "n_routed_experts": [4, 6],
    "num_experts_per_tok": [1, 2],
    "n_shared_experts": [1, 2],
    "moe_intermediate_size": [8, 16],
}

# MLA families besides DeepSeek-V3 (whose draws are its own, above): the latent ranks and head sizes are drawn for all,
# then these keys from their choices (the experts of an MoE family; widths of multiples of 8 for bf16 grouped matmuls)
MLA = {
    "deepseek_v2": {
        "first_k_dense_replace": [0, 1],
        "n_routed_experts": [4, 6],
        "num_experts_per_tok": [1, 2],
        "n_shared_experts": [1, 2],
        "moe_intermediate_size": [8, 16],
        "topk_method": ["greedy", "group_limited_greedy"],
        "n_group": [2],
        "topk_group": [1, 2],
    },
    "minicpm3": {},
    "youtu": {},
    "axk1": {**AXK_DRAWS, "n_group": [2], "topk_group": [1, 2], "norm_topk_prob": [True, False]},
    "axk2": {
        **AXK_DRAWS,
        "n_group": [None, 2],
        "norm_topk_prob": [True, False],
        "gated_norm_rank": [4, 8],
        "index_n_heads": [2, 3],
        "index_head_dim": [12, 16],  # RoPE on its first qk_rope_head_dim
        "index_topk": [4, 2048],  # fewer than S: the indexer's mask leaves keys out
    },
    "glm4_moe_lite": {
        "n_routed_experts": [4, 6],
        "num_experts_per_tok": [1, 2],
        "n_shared_experts": [1, 2],
        "moe_intermediate_size": [8, 16],
        "norm_topk_prob": [True, False],
    },
}


# Families whose config names the drawn sizes otherwise: the key drawn -> the family's own (None: a size the family
# does not have, dropped)
MHA = {"num_key_value_heads": None, "head_dim": None}  # one key/value head per query head, of d / h
KEYS = {
    "gpt2": {"intermediate_size": "n_inner", **MHA},
    "gpt-sw3": {"intermediate_size": "n_inner", **MHA},
    "openai-gpt": {"intermediate_size": None, **MHA},  # its MLP is 4·d wide
    "gpt_bigcode": {"intermediate_size": "n_inner", **MHA},
    "gptj": {"intermediate_size": "n_inner", **MHA},
    "codegen": {"intermediate_size": "n_inner", **MHA},
    "gpt_neo": {"num_hidden_layers": "num_layers", "num_attention_heads": "num_heads", **MHA},
    "opt": {"intermediate_size": "ffn_dim", **MHA},
    "biogpt": MHA,
    "bloom": {"intermediate_size": None, **MHA},  # its MLP is 4·d wide
    "mpt": {"intermediate_size": None, **MHA},
    "ctrl": {"intermediate_size": "dff", **MHA},
    "persimmon": {"num_key_value_heads": None},
    "bitnet": {"head_dim": None},  # its sub-norm over the attention output is d wide: h_d = d / h
    "gpt_neox_japanese": {"intermediate_size": None, **MHA},
    "falcon": {"intermediate_size": "ffn_hidden_size", "num_key_value_heads": "num_kv_heads", "head_dim": None},
    "xglm": {
        "num_hidden_layers": "num_layers",
        "hidden_size": "d_model",
        "num_attention_heads": "attention_heads",
        "intermediate_size": "ffn_dim",
        **MHA,
    },
}
FALCON_LAYOUTS = [(False, True, None), (False, True, 1), (False, False, None), (True, True, None), (True, True, 1)]
ACTIVATION_FUNCTIONS = ["gelu_new", "gelu", "gelu_pytorch_tanh", "relu", "silu"]
# keys drawn from choices for some families
CHOICES = {
    "openai-gpt": {"afn": ["gelu", "relu", "silu"], "n_positions": [16, 40]},
    "gpt2": {"activation_function": ACTIVATION_FUNCTIONS},
    "gpt-sw3": {"activation_function": ACTIVATION_FUNCTIONS},
    "gpt_bigcode": {"activation_function": ACTIVATION_FUNCTIONS, "multi_query": [True, False]},
    "gptj": {"activation_function": ACTIVATION_FUNCTIONS, "rotary_dim": [2, 4]},
    "codegen": {"activation_function": ACTIVATION_FUNCTIONS, "rotary_dim": [2, 4]},
    "gpt_neo": {
        "activation_function": ACTIVATION_FUNCTIONS,
        "max_position_embeddings": [16, 40],
        "window_size": [3, 256],
        "num_hidden_layers": [2],
        "attention_types": [[[["global", "local"], 1]], [[["local"], 2]]],
    },
    "opt": {
        "activation_function": ACTIVATION_FUNCTIONS,
        "do_layer_norm_before": [True, False],
        "word_embed_proj_dim": [None, 16],
        "_remove_final_layer_norm": [False, True],
    },
    "biogpt": {"hidden_act": ACTIVATION_FUNCTIONS},
    "bloom": {"apply_residual_connection_post_layernorm": [False, True]},
    "gpt_neox_japanese": {"intermediate_multiple_size": [2, 3], "rotary_pct": [0.5, 1.0]},
    "falcon": {"multi_query": [True, False], "bias": [False, True]},
    "xglm": {"activation_function": ACTIVATION_FUNCTIONS},
    # past keep_window_size keys the dynamic mask keeps its top-k; CDMoE picks k of floor(sqrt(n))² experts
    "doge": {
        "keep_window_size": [2, 4, 2048],
        "is_moe": [True, False],
        "num_experts": [9, 16],
        "num_experts_per_tok": [1, 3],
    },
}


def _config(model_type: str, rng: random.Random) -> dict:
    """A small config with distinct sizes, so that a wrong coefficient on any symbol shows (a family that
    tests/draws names is drawn there)."""
    if model_type in DRAWS:
        return DRAWS[model_type](rng)
    h_kv = rng.choice([2, 3])
    h = h_kv * rng.choice([1, 2])
    config = {
        "model_type": model_type,
        "num_hidden_layers": rng.choice([1, 2]),
        "hidden_size": rng.choice([16, 20, 24]),
        "intermediate_size": rng.choice([22, 28, 36]),
        "num_attention_heads": h,
        "num_key_value_heads": h_kv,
        "head_dim": rng.choice([4, 6]),
        "vocab_size": rng.choice([67, 101]),
        "tie_word_embeddings": False,
    }
    if config["hidden_size"] % h:  # some config classes check d % h (their default head_dim is d / h)
        config["hidden_size"] = 8 * h
    config["pad_token_id"] = 0  # some config classes default it past a small vocabulary
    if model_type in EVEN_ROTARY:
        config["head_dim"] = rng.choice([4, 8])
    # Helium sizes o_proj by d whatever head_dim says; Cohere2Config requires head_dim = d / h
    if model_type in HEAD_DIM_FROM_WIDTH:
        config["hidden_size"] = h * config["head_dim"]
    if model_type == "cohere":  # per-head LayerNorms of q and k (Command R+)
        config["use_qk_norm"] = rng.choice([True, False])
    if model_type == "cohere2":  # RoPE on the sliding layers only
        config["layer_types"] = rng.choice([["sliding_attention", "full_attention"], ["full_attention"] * 2])
        config["num_hidden_layers"] = 2
    if model_type == "cohere_compass_text":  # RoPE tables per layer type; a null entry: that kind without RoPE
        rope = {"rope_type": "default", "rope_theta": 10000.0}
        config["num_hidden_layers"], config["sliding_window"] = 2, 64  # SDPA keeps a window's mask when S > window
        config["layer_types"] = rng.choice([["sliding_attention", "full_attention"], ["full_attention"] * 2])
        config["rope_parameters"] = {
            "full_attention": rng.choice([rope, None]),
            "sliding_attention": rng.choice([rope, None]),
        }
    if model_type == "diffllama":  # the value heads split in two halves: h_kv even
        config["num_key_value_heads"], config["num_attention_heads"] = rng.choice([(2, 2), (2, 4), (4, 4)])
        config["hidden_size"] = max(config["hidden_size"], 4 * config["num_attention_heads"])
    if model_type == "hyperclovax":  # norms after attention and after the MLP
        config["use_post_norm"] = rng.choice([True, False])
    if model_type in ("gemma2", "gemma3_text", "vaultgemma"):  # Gemma 3 reads attn_logit_softcapping but ignores it
        config["attn_logit_softcapping"] = rng.choice([50.0, None])
        config["final_logit_softcapping"] = rng.choice([30.0, None])
    if model_type == "nanochat":
        config["final_logit_softcapping"] = rng.choice([15.0, None])
    if model_type == "gemma3_text":  # a full-attention layer has its own RoPE tables (rope_local_base_freq)
        config["layer_types"] = rng.choice([["sliding_attention", "full_attention"], ["full_attention"] * 2])
        config["num_hidden_layers"] = 2
    if model_type in ("qwen3_moe", "mixtral", "qwen2_moe", "olmoe", "flex_olmo"):
        # bf16 grouped matmuls on the CPU need rows of a multiple of 16 bytes: widths of multiples of 8
        config["hidden_size"] = rng.choice([16, 24, 32])
        config["num_experts_per_tok"] = rng.choice([1, 2, 3])
        experts = rng.choice([3, 4, 5])
        if model_type in ("mixtral", "olmoe", "flex_olmo"):
            config["num_local_experts" if model_type == "mixtral" else "num_experts"] = experts
            config["intermediate_size"] = rng.choice([8, 16])
            if model_type in ("olmoe", "flex_olmo"):  # q_norm and k_norm are sized d: head_dim = d / h
                config["norm_topk_prob"] = rng.choice([True, False])
                config["head_dim"], config["hidden_size"] = 8, 8 * h
        else:
            config["num_experts"], config["moe_intermediate_size"] = experts, rng.choice([8, 16])
            config["norm_topk_prob"] = rng.choice([True, False])
            config["mlp_only_layers"] = rng.choice([[], [0]])
            if model_type == "qwen2_moe":
                config["shared_expert_intermediate_size"] = rng.choice([8, 24])
    if model_type == "mimo_v2_flash":  # its sliding layers have 2 · h_kv key/value heads: h a multiple of that
        config["num_attention_heads"] = h = 2 * h_kv * rng.choice([1, 2])
    if model_type in MOE:
        # bf16 grouped matmuls on the CPU need rows of a multiple of 16 bytes: widths of multiples of 8
        experts_key, k_key, width_key, settings = MOE[model_type]
        config["hidden_size"] = 8 * h if h * config["head_dim"] % 8 else rng.choice([16, 24, 32])
        config[experts_key] = rng.choice([3, 4, 5])
        config[k_key] = rng.choice([1, 2, 3])
        config[width_key] = rng.choice([8, 16])
        config.update({key: rng.choice(choices) for key, choices in settings.items()})
    if model_type == "deepseek_v3":
        experts = rng.choice([4, 6])
        config.update(
            {
                "hidden_size": rng.choice([16, 24, 32]),
                "first_k_dense_replace": rng.choice([0, 1]),
                "q_lora_rank": rng.choice([8, 16, None]),
                "kv_lora_rank": rng.choice([8, 16]),
                "qk_rope_head_dim": rng.choice([4, 8]),
                "qk_nope_head_dim": rng.choice([8, 16]),
                "v_head_dim": rng.choice([8, 16]),
                "n_routed_experts": experts,
                "num_experts_per_tok": rng.choice([1, 2]),
                "n_group": 2,
                "topk_group": rng.choice([1, 2]),
                "n_shared_experts": rng.choice([1, 2]),
                "moe_intermediate_size": rng.choice([8, 16]),
                "norm_topk_prob": rng.choice([True, False]),
            }
        )
        config.pop("head_dim")
        config["num_key_value_heads"] = config[
            "num_attention_heads"
        ]  # MLA: k and v have h heads; transformers repeats by h / h_kv
    if model_type == "longcat_flash":  # MLA (always a query latent) with h key/value heads; layers of two sublayers
        rope = rng.choice([4, 8])
        config.update(
            {
                "num_layers": config.pop("num_hidden_layers"),
                "hidden_size": rng.choice([16, 24, 32]),
                "ffn_hidden_size": config.pop("intermediate_size"),
                "num_key_value_heads": h,
                "head_dim": rope,  # the rotary tables' width, qk_rope_head_dim for the forward to run
                "q_lora_rank": rng.choice([8, 16]),
                "kv_lora_rank": rng.choice([8, 16]),
                "qk_rope_head_dim": rope,
                "qk_nope_head_dim": rng.choice([8, 16]),
                "v_head_dim": rng.choice([8, 16]),
                "n_routed_experts": rng.choice([3, 4, 5]),
                "zero_expert_num": 0,
                "moe_topk": rng.choice([2, 3]),  # with 1 the expert loop fails (a squeeze drops the choice axis)
                "expert_ffn_hidden_size": rng.choice([8, 16]),
            }
        )
    if model_type == "dbrx":  # attention and MoE sizes in nested objects; heads of d / h
        config["hidden_size"] = config["num_attention_heads"] * rng.choice([4, 8])
        config["attn_config"] = {
            "kv_n_heads": config.pop("num_key_value_heads"),
            "clip_qkv": rng.choice([4.0, 8.0]),  # null fails in transformers (clamp without bounds)
            "rope_theta": 10000.0,
        }
        config["ffn_config"] = {
            "moe_num_experts": rng.choice([3, 4, 5]),
            "moe_top_k": rng.choice([1, 2, 3]),
            "ffn_hidden_size": rng.choice([8, 16]),
            "moe_normalize_expert_weights": rng.choice([None, 1.0, 2.0]),
        }
        del config["head_dim"], config["intermediate_size"]
        for key, name in (
            ("hidden_size", "d_model"),
            ("num_attention_heads", "n_heads"),
            ("num_hidden_layers", "n_layers"),
        ):
            config[name] = config.pop(key)  # DbrxConfig mirrors d_model into ffn_config before reading the aliases
    if model_type in PARTIAL_ROPE:
        config["partial_rotary_factor"] = rng.choice([0.5, 1.0] if model_type in EVEN_ROTARY else [0.25, 0.5, 1.0])
    if model_type in ("phi", "stablelm", "persimmon"):  # LayerNorms of q and k per head
        config["qk_layernorm"] = rng.choice([True, False])
    if model_type == "olmo":  # q, k and v clamped in place
        config["clip_qkv"] = rng.choice([None, 8.0])
    if model_type in ("stablelm", "gpt_neox"):  # attention and the MLP on one norm's output, or one after the other
        config["use_parallel_residual"] = rng.choice([True, False])
    if model_type == "gpt_neox":  # RoPE on the first int(d / h · rotary_pct) of each head
        config["hidden_size"] = config["num_attention_heads"] * rng.choice([4, 8])
        config["rotary_pct"] = rng.choice([0.5, 1.0])
        config.pop("head_dim")  # its rotary embedding would read it, its attention d / h
    if model_type in MLA:
        config.update(
            {
                "hidden_size": rng.choice([16, 24, 32]),
                "q_lora_rank": rng.choice([8, 16, None]),
                "kv_lora_rank": rng.choice([8, 16]),
                "qk_rope_head_dim": rng.choice([4, 8]),
                "qk_nope_head_dim": rng.choice([8, 16]),
                "v_head_dim": rng.choice([8, 16]),
            }
        )
        config.update({key: rng.choice(choices) for key, choices in MLA[model_type].items()})
        if config["hidden_size"] % h:
            config["hidden_size"] = 8 * h
        config.pop("head_dim")
        config["num_key_value_heads"] = config["num_attention_heads"]
    if model_type == "axk2":  # grouped routing or none: n_group and topk_group set together
        config["topk_group"] = None if config["n_group"] is None else rng.choice([1, 2])
    config.update({key: rng.choice(choices) for key, choices in CHOICES.get(model_type, {}).items()})
    if model_type == "falcon":  # the layouts FalconDecoderLayer runs: (new_decoder_architecture, parallel_attn, norms)
        layout = rng.choice(FALCON_LAYOUTS)
        keys = ("new_decoder_architecture", "parallel_attn", "num_ln_in_parallel_attn")
        config.update(dict(zip(keys, layout, strict=True)))
        config["hidden_size"] = config["num_attention_heads"] * rng.choice([4, 8])  # RoPE over d / h: even
        if not layout[0]:  # the old layout has h key/value heads, or one (multi_query)
            config["num_key_value_heads"] = config["num_attention_heads"]
    if model_type == "gpt_neox_japanese":  # RoPE over d / h: even halves
        config["hidden_size"] = config["num_attention_heads"] * rng.choice([4, 8])
    if model_type == "codegen":  # its attention splits the heads in 4 groups
        config["num_attention_heads"] = rng.choice([4, 8])
        config["hidden_size"] = config["num_attention_heads"] * rng.choice([4, 6, 8])
    for key, own in KEYS.get(model_type, {}).items():
        value = config.pop(key)
        if own is not None:
            config[own] = value
    return config


CASES = [
    ("llama", 1, "fp32", "eager"),
    ("llama", 2, "bf16", "eager"),
    ("llama", 3, "fp32", "sdpa"),
    ("mistral", 4, "fp32", "eager"),
    ("qwen2", 5, "bf16", "eager"),
    ("qwen2", 6, "fp32", "sdpa"),
    ("qwen3", 7, "fp32", "eager"),
    ("qwen3", 8, "bf16", "eager"),
    ("qwen3", 9, "fp32", "sdpa"),
    ("qwen3_moe", 10, "fp32", "eager"),
    ("qwen3_moe", 11, "bf16", "eager"),
    ("qwen3_moe", 12, "fp32", "sdpa"),
    ("mixtral", 13, "fp32", "eager"),
    ("mixtral", 14, "bf16", "eager"),
    ("deepseek_v3", 15, "fp32", "eager"),
    ("deepseek_v3", 16, "bf16", "eager"),
    ("deepseek_v3", 17, "fp32", "eager"),
    ("gemma", 18, "fp32", "eager"),
    ("gemma", 19, "bf16", "eager"),
    ("gemma", 20, "fp32", "sdpa"),
    ("granite", 21, "bf16", "eager"),
    ("granite", 22, "fp32", "sdpa"),
    ("olmo2", 23, "fp32", "eager"),
    ("olmo2", 24, "bf16", "eager"),
    ("olmo2", 25, "fp32", "sdpa"),
    ("smollm3", 26, "bf16", "eager"),
    ("internlm3", 27, "fp32", "eager"),
    ("ministral", 28, "bf16", "sdpa"),
    ("cwm", 29, "bf16", "eager"),
    ("iquestcoder", 30, "fp32", "sdpa"),
    ("olmo3", 31, "bf16", "eager"),
    ("hunyuan_v1_dense", 32, "bf16", "eager"),
    ("exaone4", 33, "bf16", "eager"),
    ("exaone4", 34, "fp32", "sdpa"),
    ("gemma2", 35, "fp32", "eager"),
    ("gemma2", 36, "bf16", "eager"),
    ("qwen2_moe", 37, "fp32", "eager"),
    ("qwen2_moe", 38, "bf16", "eager"),
    ("qwen2_moe", 39, "fp32", "sdpa"),
    ("olmoe", 40, "bf16", "eager"),
    ("olmoe", 41, "fp32", "sdpa"),
    ("phi3", 42, "fp32", "eager"),
    ("phi3", 43, "bf16", "eager"),
    ("cohere", 44, "bf16", "eager"),  # with q_norm and k_norm
    ("cohere", 45, "fp32", "sdpa"),
    ("hyperclovax", 44, "fp32", "eager"),  # with the post-norms
    ("hyperclovax", 47, "bf16", "eager"),  # without them
    # seeds drawn to cover each family's variants (the comment names the variant of the drawn config)
    ("cohere2_moe", 0, "bf16", "eager"),  # sigmoid router, renormalized; LayerNorms; no RoPE layer
    ("cohere2_moe", 2, "bf16", "eager"),  # sigmoid router; RMSNorms; a dense layer
    ("cohere2_moe", 10, "bf16", "eager"),  # sigmoid renormalized; RMSNorms; RoPE forced on the dense layer
    ("cohere2_moe", 16, "fp32", "eager"),  # LayerNorms; two shared experts
    ("cohere2_moe", 4, "fp32", "sdpa"),  # softmax router; LayerNorms
    ("cohere2_moe", 23, "fp32", "sdpa"),  # RMSNorms; a dense layer
    ("doge", 0, "fp32", "eager"),  # dense; S past keep_window_size (the top-k mask)
    ("doge", 1, "bf16", "eager"),  # dense; S within keep_window_size
    ("doge", 2, "bf16", "eager"),  # CDMoE, 9 experts, k = 1
    ("doge", 17, "fp32", "eager"),  # CDMoE, 16 experts, k = 3, past keep_window_size, grouped heads
    ("doge", 25, "bf16", "eager"),  # CDMoE, 16 experts, k = 3, past keep_window_size
    ("mimo_v2_flash", 4, "bf16", "eager"),  # a full and a sliding layer (K and V not repeated there); a dense layer
    ("mimo_v2_flash", 7, "fp32", "eager"),  # a full and a sliding layer, h = 4 · h_kv; RoPE on 2 of 6
    ("mimo_v2_flash", 1, "bf16", "eager"),  # sliding layers only, no renormalized top-k; RoPE on 4 of 12
    ("mimo_v2_flash", 0, "fp32", "eager"),  # layer_types' default (full, then sliding), MoE in both layers
    ("axk1", 4, "fp32", "eager"),  # a dense then an MoE layer, renormalized top-k
    ("axk1", 3, "bf16", "eager"),  # mlp_layer_types from moe_layer_freq 2: an MoE then a dense layer
    ("axk1", 0, "bf16", "eager"),  # MoE on both layers, no renormalized top-k
    ("axk1", 7, "fp32", "eager"),  # mlp_layer_types from first_k_dense_replace 0: MoE on both, renormalized
    ("axk2", 0, "fp32", "eager"),  # MoE on both layers, grouped routing; the indexer keeps 4 of 9 keys
    ("axk2", 2, "bf16", "eager"),  # MoE on both, k = 2, grouped, no renormalized top-k
    ("axk2", 3, "bf16", "eager"),  # mlp_layer_types from moe_layer_freq 2: an MoE then a dense layer
    ("axk2", 6, "fp32", "eager"),  # MoE on both, ungrouped routing, no renormalized top-k
    ("axk2", 8, "bf16", "eager"),  # a dense then an MoE layer, ungrouped; the indexer keeps 4 of 5 keys
    ("axk2", 12, "fp32", "eager"),  # mlp_layer_types from first_k_dense_replace 1: a dense then an MoE layer
]


def _record_cases() -> list[tuple[str, int, str, str]]:
    """Every family whose record has an [activations] table and no case above: fp32 and bf16 eager, and SDPA
    when the table has fused-kernel entries. A new table is tested without touching this file."""
    from llmcount.formulas import records
    from llmcount.formulas.activations import table

    named = {case[0] for case in CASES}
    cases = []
    for family in records.families():
        parsed = table(family)
        if parsed is None or family.name in named:
            continue
        seed = zlib.crc32(family.name.encode())  # its own configs, whatever other records are added
        cases += [(family.name, seed, "fp32", "eager"), (family.name, seed + 1, "bf16", "eager")]
        if any(entry.core == "flash" for entry in parsed.saved):
            cases.append((family.name, seed + 2, "fp32", "sdpa"))
    return cases


CASES += DRAWN_CASES
CASES += _record_cases()


@pytest.mark.parametrize(("model_type", "seed", "dtype", "attention"), CASES)
def test_activations_equal_what_autograd_saves(model_type: str, seed: int, dtype: str, attention: str) -> None:
    rng = random.Random(seed)
    config = _config(model_type, rng)
    batch, seq = rng.choice([2, 3]), rng.choice([5, 7, 9])
    expected = saved_bytes(config, batch, seq, dtype, attention)
    model = read_config(config, "random config")
    options = Options(attention="eager" if attention == "eager" else "flash")
    result = activations(model.architecture, model.values, dtype, batch, seq, options, model.keys)
    assert result.bytes == expected, (config, batch, seq, dtype, attention, VERSIONS)


def test_a_batch_of_one_differs_only_by_the_views_the_docstring_names() -> None:
    """B = 1, MQA: the oracle keeps S + 1 labels (8 bytes more) and k, v of one head instead of h repeated."""
    config = {
        "model_type": "llama",
        "num_hidden_layers": 2,
        "hidden_size": 24,
        "intermediate_size": 28,
        "num_attention_heads": 3,
        "num_key_value_heads": 1,
        "head_dim": 6,
        "vocab_size": 67,
    }
    seq, layers, h, h_d = 7, 2, 3, 6
    expected = saved_bytes(config, 1, seq, "fp32", "eager")
    model = read_config(config, "random config")
    result = activations(model.architecture, model.values, "fp32", 1, seq)
    repeated_kv = layers * 2 * (h - 1) * h_d * seq * 4  # k and v: h heads in the formula, one head in the oracle
    assert expected - result.bytes == 8 - repeated_kv, VERSIONS


# ---------------------------------------------------------------------------------------------
# recomputation, by hand on llama-3-8b (d = 4096, h = 32, h_kv = 8, h_d = 128, d_ff = 14336, V = 128256, N = 32)

D, H, H_KV, H_D, D_FF, VOCAB, LAYERS = 4096, 32, 8, 128, 14336, 128256, 32


def _model_level_bf16(batch: int, seq: int) -> int:
    """Once per model: ids (int64), RoPE cos + sin per position, the final norm (fp32 input, fp32 1/RMS, bf16
    normalized), the head's input, fp32 log-probabilities, int64 labels, the loss weight (one fp32 scalar)."""
    per_token = 8 + (4 * D + 4 + 2 * D) + 2 * D + 4 * VOCAB + 8
    return batch * seq * per_token + seq * 2 * H_D * 2 + 4


def _eager_layer_bf16(seq: int) -> int:
    """One layer, per token, bf16 eager: two norms (fp32 input and 1/RMS, bf16 normalized), the q/k/v input,
    q, k, v copied to h heads, fp32 softmax + its bf16 cast, o_proj's input, the MLP input and 4 d_ff."""
    fp32 = 2 * (D + 1) + H * seq
    bf16 = 2 * D + D + 3 * H * H_D + H * seq + H * H_D + D + 4 * D_FF
    return 4 * fp32 + 2 * bf16


def test_selective_recomputation_keeps_q_k_v_instead_of_the_scores() -> None:
    batch, seq = 2, 4096
    model = load("llama-3-8b")
    fp32 = 2 * (D + 1)
    bf16 = 2 * D + D + (H * H_D + 2 * H_KV * H_D) + H * H_D + D + 4 * D_FF
    expected = LAYERS * batch * seq * (4 * fp32 + 2 * bf16) + _model_level_bf16(batch, seq)
    for attention in ("eager", "flash"):
        result = activations(model.architecture, model.values, "bf16", batch, seq, Options(attention, "selective"))
        assert result.bytes == expected


def test_no_recomputation_eager_by_hand() -> None:
    batch, seq = 1, 4096
    model = load("llama-3-8b")
    expected = LAYERS * batch * seq * _eager_layer_bf16(seq) + _model_level_bf16(batch, seq)
    assert activations(model.architecture, model.values, "bf16", batch, seq).bytes == expected


def test_full_recomputation_keeps_each_layer_input_and_one_layer_at_a_time() -> None:
    batch, seq = 1, 4096
    model = load("llama-3-8b")
    expected = LAYERS * batch * seq * 2 * D + batch * seq * _eager_layer_bf16(seq) + _model_level_bf16(batch, seq)
    result = activations(model.architecture, model.values, "bf16", batch, seq, Options("eager", "full"))
    assert result.bytes == expected


# ---------------------------------------------------------------------------------------------
# per GPU: tensor and sequence parallelism (Korthikanti et al. 2022's split), pipeline (1F1B), by hand


def test_tensor_parallel_splits_heads_and_mlp_width_and_sequence_parallel_the_rest() -> None:
    batch, seq, tp = 2, 4096, 8
    model = load("llama-3-8b")
    split_fp32, split_bf16 = H * seq, 3 * H * H_D + H * seq + H * H_D + 4 * D_FF  # probabilities; q k v, o, MLP
    kept_fp32, kept_bf16 = 2 * (D + 1), 4 * D  # two norms' inputs and 1/RMS; normalized twice, q/k/v and MLP input
    model_ids = batch * seq * (8 + 8) + seq * 2 * H_D * 2 + 4  # ids, labels, RoPE tables, loss weight: replicated
    final = batch * seq * (4 * D + 4 + 2 * D + 2 * D)  # the final norm and the head's input: d-sized
    log_probs = batch * seq * 4 * VOCAB // tp  # the vocabulary is split
    layer = batch * seq * (4 * split_fp32 + 2 * split_bf16) // tp
    plain = LAYERS * (layer + batch * seq * (4 * kept_fp32 + 2 * kept_bf16)) + model_ids + final + log_probs
    result = activations(model.architecture, model.values, "bf16", batch, seq, Options(tp=tp))
    assert result.per_gpu_bytes == plain
    sequence = LAYERS * (layer + batch * seq * (4 * kept_fp32 + 2 * kept_bf16) // tp) + model_ids + final // tp
    sequence += log_probs
    result = activations(model.architecture, model.values, "bf16", batch, seq, Options(tp=tp, sequence_parallel=True))
    assert result.per_gpu_bytes == sequence


def test_pipeline_first_stage_keeps_pp_micro_batches_of_its_layers() -> None:
    batch, seq, pp = 1, 4096, 4
    model = load("llama-3-8b")
    stage = LAYERS // pp
    first = pp * stage * batch * seq * _eager_layer_bf16(seq) + batch * seq * 8 + seq * 2 * H_D * 2  # ids, RoPE
    last = stage * batch * seq * _eager_layer_bf16(seq) + _model_level_bf16(batch, seq) - batch * seq * 8 - seq * 512
    result = activations(model.architecture, model.values, "bf16", batch, seq, Options(pp=pp))
    assert result.per_gpu_bytes == max(first, last) == first


def test_mla_with_a_fused_kernel_is_refused_by_name() -> None:
    """MLA's q/k and v head sizes differ, so PyTorch's CPU SDPA falls back to its math kernel (S×S kept, fp32):
    no fused-kernel oracle, so no --attention flash for DeepSeek: refused, never guessed."""
    model = load("deepseek-v3")
    with pytest.raises(LlmcountError, match=r"--attention flash is not derived for DeepSeek-V3 \(deepseek_v3\)"):
        activations(model.architecture, model.values, "bf16", 1, 4096, Options("flash"), model.keys)


def test_every_activation_table_reads_only_its_record_symbols() -> None:
    """Loads every [activations] table (RecordError names an entry using a symbol its record does not read)."""
    from llmcount.formulas import records
    from llmcount.formulas.activations import table

    tables = {f.name: table(f) for f in records.families() if f.activations is not None}
    assert {"llama", "qwen3", "qwen3_moe", "mixtral", "deepseek_v3"} <= set(tables)
    assert all(t is not None and t.saved for t in tables.values())


def test_uneven_pipeline_stages_keep_their_micro_batches() -> None:
    """32 layers in 5 stages: 7, 7, 6, 6, 6; stage s keeps 5 - s + 1 micro-batches: the first, 5 × 7 layers."""
    batch, seq, pp = 1, 2048, 5
    model = load("llama-3-8b")
    per_layer = batch * seq * _eager_layer_bf16(seq)
    first = 5 * 7 * per_layer + batch * seq * 8 + seq * 2 * H_D * 2  # ids and RoPE tables on the first stage
    result = activations(model.architecture, model.values, "bf16", batch, seq, Options(pp=pp), model.keys)
    assert result.per_gpu_bytes == first
    assert "stage 1 of 5" in result.per_gpu_note


def test_a_symbol_only_the_activation_table_reads_is_kept() -> None:
    """Persimmon without qk_layernorm: no parameter term reads h, the attention's h·S entries do; the reader keeps
    h (and d_rope) for them, and the table equals autograd's storages."""
    config = {
        "model_type": "persimmon",
        "num_hidden_layers": 2,
        "hidden_size": 32,
        "num_attention_heads": 4,
        "intermediate_size": 40,
        "vocab_size": 67,
        "qk_layernorm": False,
        "tie_word_embeddings": False,
    }
    model = read_config(config, "random config")
    assert {str(s) for s in model.values} >= {"h", "d_rope"}
    for dtype in ("fp32", "bf16"):
        result = activations(model.architecture, model.values, dtype, 2, 7, Options(), model.keys)
        assert result.bytes == saved_bytes(config, 2, 7, dtype, "eager"), VERSIONS


def test_a_config_the_table_was_not_checked_for_is_refused_by_name() -> None:
    """A table's `refuse` rules: GPT-2's MLP is checked for gelu_new, gelu, gelu_pytorch_tanh, relu and silu only."""
    config = {"model_type": "gpt2", "n_layer": 2, "n_embd": 24, "n_head": 3, "vocab_size": 67}
    config["activation_function"] = "quick_gelu"
    model = read_config(config, "random config")
    with pytest.raises(LlmcountError, match=r"not derived for GPT-2 \(gpt2\): activation_function other than"):
        activations(model.architecture, model.values, "bf16", 2, 8, Options(), model.keys)


def test_a_config_transformers_cannot_train_is_refused_by_name() -> None:
    """Doge's CDMoE with norm_topk_prob divides its softmax output in place: autograd's backward fails on it."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = {"model_type": "doge", "num_hidden_layers": 1, "hidden_size": 16, "intermediate_size": 8}
    config |= {"num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 67, "pad_token_id": 0}
    config |= {"is_moe": True, "num_experts": 9, "num_experts_per_tok": 2, "norm_topk_prob": True}
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config))
    ids = torch.randint(0, 67, (2, 5))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        model(input_ids=ids, labels=ids).loss.backward()
    record = read_config(config, "random config")
    with pytest.raises(LlmcountError, match=r"not derived for Doge \(doge\): is_moe with norm_topk_prob"):
        activations(record.architecture, record.values, "bf16", 2, 8, Options(), record.keys)


LLAMA4_MIXED = {
    "model_type": "llama4_text",
    **{"hidden_size": 16, "intermediate_size": 8, "intermediate_size_mlp": 24, "num_attention_heads": 4},
    **{"num_key_value_heads": 2, "head_dim": 4, "vocab_size": 67, "num_local_experts": 3, "num_experts_per_tok": 1},
    **{"num_hidden_layers": 4, "interleave_moe_layer_step": 2, "pad_token_id": 0, "tie_word_embeddings": False},
}


@pytest.mark.parametrize("no_rope_layers", [[1, 1, 1, 0], [1, 0, 1, 0], [0, 1, 1, 1]])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_layers_of_two_counted_kinds_are_counted_layer_by_layer(no_rope_layers: list[int], dtype: str) -> None:
    """Llama 4 Maverick's layout: dense MLP layers between MoE layers (interleave_moe_layer_step 2) and NoPE layers
    (no_rope_layers 0), so a layer is dense or MoE and, independently, RoPE or NoPE: the table's layer kinds
    overlap, and each combination some layer is of is a kind of its own."""
    config = {**LLAMA4_MIXED, "no_rope_layers": no_rope_layers}
    expected = saved_bytes(config, 2, 7, dtype, "eager")
    model = read_config(config, "Llama 4 mixed layers")
    result = activations(model.architecture, model.values, dtype, 2, 7, Options(attention="eager"), model.keys)
    assert result.bytes == expected, (config, dtype, VERSIONS)
    assert sum(kind.count for kind in result.per_layer_kind) == 4


def test_longcat_zero_experts_are_refused_by_name() -> None:
    """LongCat-Flash's identity experts keep a pair's token and weight where a routed expert keeps its MLP's
    tensors: the bytes depend on how many pairs the router sends to them, so a config with any is refused."""
    model = read_config({"model_type": "longcat_flash"}, "LongCat-Flash defaults")  # 256 zero experts
    with pytest.raises(LlmcountError, match=r"not derived for LongCat-Flash \(longcat_flash\): zero_expert_num > 0"):
        activations(model.architecture, model.values, "bf16", 1, 4096, Options(), model.keys)
