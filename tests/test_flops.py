"""FLOPs against the oracle: torch's FlopCounterMode on transformers' own models, on the meta device.

Convention under test (llmcount's default): matmuls only at 2·m·n·k, the full S×S attention matrices that eager
attention computes (``attn_implementation="eager"``), the LM head at every position. MoE models are built with
``experts_implementation="batched_mm"``, which gathers the weights of the k chosen experts of every token and
multiplies with them (transformers/integrations/moe.py): it computes exactly k experts per token, no more, so
the counter sees the same work llmcount counts — no "dense experts" convention is needed (but for the
families of ``DENSE_EXPERTS``, whose code ignores it: their excess is subtracted, exactly). An all-ones
attention_mask is passed (without one, a packed-sequence check calls ``.item()`` on meta tensors).
"""

from __future__ import annotations

import json
import warnings
from fractions import Fraction
from typing import Any

import oracle
import pytest
import sympy
import torch
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from oracle import VERSIONS, _hf_config
from test_oracle import CONFIGS
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoModelForCausalLM
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import RuleRefusal, read_config
from llmcount.formulas.derivation import Derivation
from llmcount.formulas.flops import CAUSAL_CONVENTION, CONVENTION, Flops
from llmcount.presets import presets
from llmcount.sources import load


def hf_forward_flops(config: dict[str, Any], batch: int, seq: int) -> int:
    """FLOPs FlopCounterMode counts in one forward pass of transformers' model for ``config`` (meta device)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = _hf_config(config)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(
                cfg, attn_implementation="eager", experts_implementation="batched_mm"
            )
        ids = torch.ones(batch, seq, dtype=torch.long, device="meta")
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
    return counter.get_total_flops()


def llmcount_forward(config: dict[str, Any], batch: int, seq: int, causal: bool = False) -> int:
    model = read_config(config, "test")
    return Flops(model.derivation, causal=causal).evaluate(model.values, seq, batch).forward


# transformers code that multiplies every token by all n routed experts, whatever experts_implementation says: the
# counter then sees 2·T·(n - k)/n more FLOPs per routed parameter than the k of n llmcount counts (the model's work)
DENSE_EXPERTS = {
    "llama4_text": "Llama4TextExperts runs torch.bmm over all n experts and weights them by the router's scores",
}


def dense_experts_excess(config: dict[str, Any], batch: int, seq: int) -> int:
    """FLOPs transformers spends on the n - k experts a token is not routed to, for the families of DENSE_EXPERTS."""
    if config["model_type"] not in DENSE_EXPERTS:
        return 0
    model = read_config(config, "test")
    n, k = (next(v for s, v in model.values.items() if s.name == name) for name in ("n", "k"))
    routed = sum(int((t.layers * t.expr).subs(model.values)) for t in model.derivation.terms if t.routed)
    excess = 2 * batch * seq * routed * (n - k)
    assert excess % n == 0
    return excess // n


def assert_equal_to_counter(config: dict[str, Any], batch: int, seq: int) -> None:
    expected = hf_forward_flops(config, batch, seq) - dense_experts_excess(config, batch, seq)
    got = llmcount_forward(config, batch, seq)
    assert got == expected, (
        f"B={batch} S={seq}: llmcount {got:,} != FlopCounterMode {expected:,} ({VERSIONS})\n"
        f"config {json.dumps(config, sort_keys=True)}"
    )


SIZES = [(1, 1), (1, 7), (2, 16), (3, 33)]

BASE = {"vocab_size": 97, "hidden_size": 64, "intermediate_size": 80, "num_hidden_layers": 2}
GQA = {**BASE, "num_attention_heads": 8, "num_key_value_heads": 2}
FALCON = {"model_type": "falcon", "vocab_size": 97, "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2}
BIGCODE = {"model_type": "gpt_bigcode", "vocab_size": 97, "n_embd": 32, "n_head": 4, "n_layer": 2, "n_positions": 64}
SMALL = {
    # GQA with head_dim != d/h (64/8 = 8, head_dim 12), biases on every projection, tied head
    "llama-gqa-head-dim-bias-tied": {
        **GQA,
        "model_type": "llama",
        "head_dim": 12,
        "attention_bias": True,
        "mlp_bias": True,
        "tie_word_embeddings": True,
    },
    "llama-mqa": {**GQA, "model_type": "llama", "num_key_value_heads": 1},
    "mistral-mha": {**GQA, "model_type": "mistral", "num_key_value_heads": 8},
    "qwen2-qkv-bias": {**GQA, "model_type": "qwen2"},
    "qwen3-qk-norm-head-dim": {**GQA, "model_type": "qwen3", "head_dim": 6},
    "gpt2": {"model_type": "gpt2", "vocab_size": 97, "n_embd": 48, "n_head": 4, "n_layer": 3, "n_positions": 64},
    "mixtral": {**GQA, "model_type": "mixtral", "num_local_experts": 5, "num_experts_per_tok": 2},
    "qwen3-moe-with-dense-layers": {
        **GQA,
        "model_type": "qwen3_moe",
        "num_hidden_layers": 4,
        "num_experts": 6,
        "num_experts_per_tok": 3,
        "moe_intermediate_size": 24,
        "mlp_only_layers": [1],
        "decoder_sparse_step": 1,
    },
    "deepseek-v3-mla-q-lora-shared-dense": {
        **BASE,
        "model_type": "deepseek_v3",
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "q_lora_rank": 12,
        "kv_lora_rank": 10,
        "qk_rope_head_dim": 4,
        "qk_nope_head_dim": 6,
        "v_head_dim": 5,
        "n_routed_experts": 8,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 16,
        "n_shared_experts": 1,
        "first_k_dense_replace": 1,
        "n_group": 2,
        "topk_group": 1,
    },
    # full layers 0 and 5, sliding layers with twice the key/value heads and a sink per head; q/k heads of 12, v of 5
    "mimo-v2-flash-sliding-kv-heads": {
        **GQA,
        "model_type": "mimo_v2_flash",
        "num_hidden_layers": 7,
        "head_dim": 12,
        "v_head_dim": 5,
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 16,
        "sliding_window": 5,
        "attention_bias": True,
    },
    # Gemma 4: layers 2 and 5 full with wider heads (global_head_dim 12, one key/value head, keys that are the
    # values), the others sliding with heads of 8; the last two layers reuse earlier keys and values; an MoE block
    "gemma4-full-layers-wider-shared-kv": {
        **GQA,
        "model_type": "gemma4_text",
        "num_hidden_layers": 6,
        "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2,
        "head_dim": 8,
        "global_head_dim": 12,
        "attention_k_eq_v": True,
        "num_global_key_value_heads": 1,
        "num_kv_shared_layers": 2,
        "vocab_size_per_layer_input": 97,
        "hidden_size_per_layer_input": 4,
        "sliding_window": 5,
        "enable_moe_block": True,
        "num_experts": 4,
        "top_k_experts": 2,
        "moe_intermediate_size": 16,
    },
    # Gemma 4 Unified's text model: full layers 3 and 4 with heads of 16 (per_layer_config), sliding ones of 8
    "gemma4-unified-per-layer-config": {
        **GQA,
        "model_type": "gemma4_unified_text",
        "num_hidden_layers": 5,
        "layer_types": ["sliding_attention"] * 3 + ["full_attention"] * 2,
        "head_dim": 8,
        "per_layer_config": {"3": {"head_dim": 16}, "4": {"head_dim": 16}},
        "sliding_window": 4,
        "tie_word_embeddings": False,
    },
    # layers 0 and 3 full, 1 and 2 sliding (window local_attention // 2 = 4); the prediction head's dense d to d
    "modernbert-decoder": {
        **BASE,
        "model_type": "modernbert-decoder",
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "local_attention": 8,
        "pad_token_id": 0,  # the class's 50283 lies outside the small vocabulary
        "attention_bias": True,
        "tie_word_embeddings": False,
    },
    "deepseek-v2-mla-no-q-lora-biases": {
        **BASE,
        "model_type": "deepseek_v2",
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "q_lora_rank": None,
        "kv_lora_rank": 10,
        "qk_rope_head_dim": 4,
        "qk_nope_head_dim": 6,
        "v_head_dim": 5,
        "n_routed_experts": 6,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 16,
        "n_shared_experts": 2,
        "first_k_dense_replace": 0,
        "attention_bias": True,
        "mlp_bias": True,
    },
    # sliding layers with RoPE and full NoPE layers (the sixth and the last), gated attention, grouped routing
    "beam-sliding-gated-dense-then-moe": {
        **GQA,
        "model_type": "beam",
        "num_hidden_layers": 7,
        "head_dim": 8,
        "num_experts": 8,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 16,
        "n_group": 2,
        "topk_group": 1,
        "sliding_window": 3,
    },
    # pre-norm XLM-RoBERTa-XL as a decoder, untied: the head's separate bias vector is no matmul
    "xlm-roberta-xl-decoder-untied": {
        "model_type": "xlm-roberta-xl",
        **{"vocab_size": 97, "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2},
        **{"intermediate_size": 48, "is_decoder": True, "tie_word_embeddings": False},
    },
    # BERT as an untied decoder: the head's separate bias vector (cls.predictions.bias) is no matmul
    "bert-decoder-untied": {
        "model_type": "bert",
        **{"vocab_size": 97, "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2},
        **{"intermediate_size": 48, "is_decoder": True, "tie_word_embeddings": False},
    },
    # RoFormer without embedding_size: the embeddings are d wide (RoFormerConfig's None means hidden_size)
    "roformer-decoder-untied": {
        "model_type": "roformer",
        **{"vocab_size": 97, "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2},
        **{"intermediate_size": 48, "is_decoder": True, "tie_word_embeddings": False},
    },
    # heads that read another width than d: OPT-350m's word_embed_proj_dim (tied), RoFormer's and ELECTRA's
    # embedding_size, RemBERT's output_embedding_size: the head costs 2 · width · V per token, not 2 · d · V
    "opt-projected-embeddings": {
        "model_type": "opt",
        **{"vocab_size": 97, "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2},
        **{"ffn_dim": 48, "word_embed_proj_dim": 16, "max_position_embeddings": 64},
    },
    "roformer-narrow-embeddings": {
        "model_type": "roformer",
        **{"vocab_size": 97, "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2},
        **{"intermediate_size": 48, "is_decoder": True, "embedding_size": 16},
    },
    "electra-narrow-embeddings": {
        "model_type": "electra",
        **{"vocab_size": 97, "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2},
        **{"intermediate_size": 48, "is_decoder": True, "embedding_size": 16},
    },
    # Llama's attention with q_norm and k_norm; an ungated MLP whose xIELU scalars are no matmul
    "apertus-qk-norm-xielu": {**GQA, "model_type": "apertus", "head_dim": 12, "attention_bias": True},
    # differential attention: two eager calls over the same scores' inputs, each with half the value heads (repeated)
    "diffllama-two-maps": {
        **GQA,
        "model_type": "diffllama",
        "num_key_value_heads": 4,
        "head_dim": 6,
        "attention_bias": True,
    },
    # Falcon's three layouts of the fused query_key_value: grouped heads (expanded to h), multi-query, h of each; ALiBi
    "falcon-new-decoder-grouped": {**FALCON, "new_decoder_architecture": True, "num_kv_heads": 2},
    "falcon-multi-query-alibi-sequential": {**FALCON, "alibi": True, "parallel_attn": False, "bias": True},
    "falcon-rw-heads": {**FALCON, "multi_query": False, "alibi": True},
    # GPTBigCode: one shared key/value head (multi_query), or h of each
    "gpt-bigcode-multi-query": {**BIGCODE},
    "gpt-bigcode-heads": {**BIGCODE, "multi_query": False, "tie_word_embeddings": False},
    # HRM-Text: two stacks of 2 layers reused over c_H · (c_L + 1) = 2 · 3 passes, each weight once per pass
    "hrm-text-cycles": {
        **{"model_type": "hrm_text", "vocab_size": 97, "hidden_size": 32, "intermediate_size": 40, "head_dim": 6},
        **{"num_hidden_layers": 2, "num_attention_heads": 4, "H_cycles": 2, "L_cycles": 2, "attention_bias": True},
    },
    "rembert-output-width": {
        "model_type": "rembert",
        **{"vocab_size": 97, "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2},
        **{"intermediate_size": 48, "is_decoder": True, "input_embedding_size": 16, "output_embedding_size": 24},
    },
    # Mllama's text model, layer 1 a cross-attention layer: without vision states it is skipped whole
    "mllama-text-cross-layer-skipped": {
        **GQA,
        "model_type": "mllama_text_model",
        "num_hidden_layers": 3,
        "cross_attention_layers": [1],
        "pad_token_id": 0,  # the class's 128004 lies outside the small vocabulary
    },
    # Moshi's text decoder: its cache slides (sliding_window), its mask does not: full attention is counted
    "moshi-cache-window-only": {**GQA, "model_type": "moshi", "ffn_dim": 48, "sliding_window": 4},
    # GIT on text alone: the CLIP vision encoder does not run; the untied output layer with its bias
    "git-text-only-untied": {
        "model_type": "git",
        **{"vocab_size": 97, "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2},
        **{"intermediate_size": 48, "tie_word_embeddings": False},
        "vision_config": {"num_hidden_layers": 1, "hidden_size": 8, "intermediate_size": 8, "num_attention_heads": 2},
    },
    # Phi-4-multimodal on token ids alone: neither the vision nor the audio encoder runs; every layer slides (W = 5)
    "phi4-multimodal-text-only-sliding": {
        **GQA,
        "model_type": "phi4_multimodal",
        "sliding_window": 5,
        "pad_token_id": 0,  # the class's 199999 lies outside the small vocabulary
        "vision_config": {"num_hidden_layers": 1, "hidden_size": 8, "intermediate_size": 8, "num_attention_heads": 2},
        "audio_config": {"num_blocks": 1, "hidden_size": 8, "intermediate_size": 8, "num_attention_heads": 2},
    },
    # Laguna: query heads per layer (2 to 8 against h_kv = 2), sliding and full layers, a dense first layer, a gate
    # per channel of every head
    "laguna-heads-per-layer": {
        **{"model_type": "laguna", "vocab_size": 97, "hidden_size": 32, "num_hidden_layers": 4, "head_dim": 8},
        **{"num_attention_heads": 4, "num_key_value_heads": 2, "num_attention_heads_per_layer": [4, 8, 2, 6]},
        **{"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8, "intermediate_size": 16},
        **{"shared_expert_intermediate_size": 12, "sliding_window": 3, "gating": "per-element"},
        "layer_types": ["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
    },
}

# the decoders of encoder-decoder models as their *ForCausalLM runs them on token ids alone: no encoder states, so no
# cross-attention (its weights are parameters no matmul uses); position tables longer than the longest S drawn here
DECODER = {
    **{"vocab_size": 97, "d_model": 32, "decoder_layers": 2, "encoder_layers": 2, "decoder_attention_heads": 4},
    **{"decoder_ffn_dim": 48, "max_position_embeddings": 64, "max_target_positions": 64, "pad_token_id": 1},
}
SMALL |= {
    "bart-decoder": {**DECODER, "model_type": "bart"},
    "whisper-decoder-untied": {**DECODER, "model_type": "whisper", "tie_word_embeddings": False},
    "trocr-cross-attention-width": {**DECODER, "model_type": "trocr", "cross_attention_hidden_size": 24},
    "bigbird-pegasus-biases": {**DECODER, "model_type": "bigbird_pegasus", "use_bias": True},
    "marian-decoder": {**DECODER, "model_type": "marian"},
    # xLSTM with fused projections (its CPU build fails in transformers' weight init; the meta device skips it): the
    # mLSTM's chunks of 4 and the single steps of the tokens left
    "xlstm-fused-chunks-and-steps": {
        "model_type": "xlstm",
        **{"vocab_size": 97, "hidden_size": 32, "num_blocks": 2, "num_hidden_layers": 2, "num_heads": 4},
        **{"weight_mode": "fused", "chunk_size": 4, "use_bias": True},
    },
}

# MLA with a lightning indexer (DeepSeek Sparse Attention), small: 3 layers, q and kv latents of 6 and 5, top-2 keys
DSA = {
    **{"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 3, "num_attention_heads": 4, "pad_token_id": 0},
    **{"num_key_value_heads": 4, "q_lora_rank": 6, "kv_lora_rank": 5, "qk_rope_head_dim": 2, "qk_nope_head_dim": 4},
    **{"v_head_dim": 3, "index_n_heads": 3, "index_head_dim": 4, "index_topk": 2, "n_routed_experts": 4},
    **{"num_experts_per_tok": 2, "moe_intermediate_size": 6, "intermediate_size": 10, "n_group": 1, "topk_group": 1},
}

# models whose forward reads tensor values (XLM asserts on the lengths with .item()): counted on a small CPU model
CPU_SMALL = {
    # XLM: an encoder (bidirectional), a language embedding, an untied prediction layer with bias
    "xlm-languages-untied": {
        "model_type": "xlm",
        **{"vocab_size": 97, "emb_dim": 32, "n_heads": 4, "n_layers": 2, "n_langs": 3, "pad_token_id": 0},
        "tie_word_embeddings": False,
    },
    "xlm-causal": {"model_type": "xlm", "vocab_size": 97, "emb_dim": 48, "n_heads": 6, "n_layers": 3, "causal": True},
    # JetMoE: k = 3 of 4 attention experts, each h_kv = 2 query heads of 6 against the repeated keys (the experts loop
    # reads the routing's sizes with .tolist()); the MLP experts' output bias is no matmul
    "jetmoe-mixture-of-attention": {
        **{"model_type": "jetmoe", "vocab_size": 97, "hidden_size": 32, "num_hidden_layers": 2, "kv_channels": 6},
        **{"num_key_value_heads": 2, "num_local_experts": 4, "num_experts_per_tok": 3, "intermediate_size": 20},
        "tie_word_embeddings": False,
    },
    # MLA with DeepSeek Sparse Attention: the indexer's top-k mask (which meta tensors cannot compute) over the full
    # eager scores; the indexer's own scores and head weighting are matmuls too
    "deepseek-v32-indexer": {**DSA, "model_type": "deepseek_v32", "first_k_dense_replace": 1},
    # A.X K2: DeepSeek-V3.2's attention with a fused query and gate projection, gated norms whose low-rank MLPs count
    "axk2-gated-norms": {**DSA, "model_type": "axk2", "first_k_dense_replace": 1, "gated_norm_rank": 3},
    # Hy-V4: an indexer on the "full" layers only, an output gate, sinks, hyper-connections of 2 streams
    # GLM-MoE-DSA: an indexer on layer 0 only ("FSS"); the others reuse its selection
    "glm-moe-dsa-shared-indexer": {
        **DSA,
        "model_type": "glm_moe_dsa",
        "first_k_dense_replace": 1,
        "index_topk_pattern": "FSS",
    },
    "hy-v4-shared-indexer": {**DSA, "model_type": "hy_v4", "hc_mult": 2, "indexer_types": ["full", "shared", "full"]},
}


def test_small_configs_cover_every_family() -> None:
    assert {config["model_type"] for config in [*SMALL.values(), *CPU_SMALL.values()]} <= set(records.names())


@pytest.mark.parametrize(("batch", "seq"), SIZES)
@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_config_equals_flop_counter(name: str, batch: int, seq: int) -> None:
    assert_equal_to_counter(SMALL[name], batch, seq)


def _costed_presets() -> list[str]:
    """Presets whose record derives FLOPs (it has an [attention] section and no [[state]] layers)."""
    # a whole multimodal preset: its language model's record is another preset's; its towers: test_tower_flops.py
    whole = {n for n, p in presets().items() if records.composite(p.config()["model_type"])}
    costed = [(n, load(n).architecture) for n in presets() if n not in whole]
    return sorted(n for n, family in costed if family.attention is not None and not family.states)


@pytest.mark.parametrize(("batch", "seq"), SIZES)
@pytest.mark.parametrize("name", sorted(CPU_SMALL))
def test_small_cpu_config_equals_flop_counter(name: str, batch: int, seq: int) -> None:
    from test_state_flops import counter_flops

    config = CPU_SMALL[name]
    got = llmcount_forward(config, batch, seq)
    expected = counter_flops(config, batch, seq)
    assert got == expected, f"B={batch} S={seq}: llmcount {got:,} != FlopCounterMode {expected:,} ({VERSIONS})"


@pytest.mark.parametrize(("batch", "seq"), [(1, 2048), (2, 333)])
@pytest.mark.parametrize("name", _costed_presets())
def test_preset_equals_flop_counter(name: str, batch: int, seq: int) -> None:
    """The real configs, at real sequence lengths (on the meta device nothing is computed)."""
    config = {k: v for k, v in presets()[name].config().items() if k != "quantization_config"}
    assert_equal_to_counter(config, batch, seq)


def _runnable(config: dict[str, Any]) -> dict[str, Any]:
    """Make a drawn config one the forward pass accepts: DeepSeek's attention needs h_kv = h (its eager code
    repeats keys h // h_kv times and the latent keys are per head), and its grouped routing a group count
    that divides n."""
    if config["model_type"].startswith("deepseek"):
        config = {**config, "num_key_value_heads": config["num_attention_heads"], "n_group": 1, "topk_group": 1}
    return config


@pytest.mark.parametrize("family", sorted(CONFIGS))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_config_equals_flop_counter(family: str, data: st.DataObject) -> None:
    """The hypothesis strategies of test_oracle.py (every switch of every family), run forward."""
    config = _runnable(data.draw(CONFIGS[family], label="config"))
    batch, seq = data.draw(st.integers(1, 3), label="B"), data.draw(st.integers(1, 40), label="S")
    if family == "gpt2":
        seq = min(seq, config.get("n_positions", 1024))
    try:
        read_config(config, "hypothesis")
    except LlmcountError:  # e.g. no intermediate_size: test_oracle.py checks when that is right
        reject()
    try:
        expected = hf_forward_flops(config, batch, seq)
    except Exception:  # transformers refuses the config (its config class, constructor or forward raises)
        reject()
    got = llmcount_forward(config, batch, seq)
    assert got == expected, f"B={batch} S={seq}: {got:,} != {expected:,} ({VERSIONS})\n{json.dumps(config)}"


# records checked on drawn configs here, counted on CPU (their forward reads tensor values: the indexers' top-k masks,
# JetMoE's expert loop, Mllama's cross-attention layers): the drawing of test_records, switches flipped, small even
# sizes, windows within the drawn lengths, encoders that do not run made small (SMALL_ENCODERS), and heads of an even
# width of two channels or more (rotary embeddings turn pairs of channels; torch computes a Q·Kᵀ over heads of one
# channel otherwise than as the matmul the counter sees)
DRAWN = [
    *("apertus", "axk2", "deepseek_v32", "diffllama", "falcon", "git", "glm_moe_dsa", "gpt_bigcode", "hrm_text"),
    *("deepseek_v4", "hy_v4", "jetmoe", "mllama_text_model", "moshi", "phi4_multimodal"),
    *("sarvam_moe", "sarvam_mla", "exaone", "apertus1p5_text", "dory", "lara_mini"),  # types new in transformers 5.24
]
DRAWN_WINDOWS = {"sliding_window": [2, 3, 5]}
SMALL_ENCODERS = {  # encoders that do not run on token ids alone: small ones keep the CPU build small
    "phi4_multimodal": {
        "vision_config": {"num_hidden_layers": 1, "hidden_size": 8, "intermediate_size": 8, "num_attention_heads": 2},
        "audio_config": {"num_blocks": 1, "hidden_size": 8, "intermediate_size": 8, "num_attention_heads": 2},
    },
}


@pytest.mark.parametrize("model_type", DRAWN)
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn_config_equals_flop_counter(model_type: str, data: st.DataObject) -> None:
    from test_state_flops import counter_flops

    config = data.draw(oracle.drawn_config(records.family(model_type), st.sampled_from([2, 4, 8])), label="config")
    for key, choices in DRAWN_WINDOWS.items():
        if isinstance(config.get(key), int):
            config[key] = data.draw(st.sampled_from(choices))
    config.update(SMALL_ENCODERS.get(model_type, {}))
    batch, seq = data.draw(st.integers(1, 2), label="B"), data.draw(st.integers(1, 12), label="S")
    try:
        model = read_config(config, "drawn config")
    except LlmcountError:  # a config llmcount refuses (transformers' checks, a record's stated rules)
        reject()
    try:
        got = llmcount_forward(config, batch, seq)
    except RuleRefusal:  # FLOPs refused for this config with a stated reason
        reject()
    if model.counts.total > oracle.MAX_PARAMETERS:  # the forward pass builds real weights
        reject()
    named = {symbol.name: value for symbol, value in model.values.items()}
    head = named.get("h_d") or named["d"] // named.get("h", 1)
    if head < 2 or head % 2 or any(value % 2 for name, value in named.items() if name in ("h_d", "d_rope", "d_nope")):
        reject()
    try:
        expected = counter_flops(config, batch, seq)
    except Exception:  # transformers refuses the config (its config class, constructor or forward raises)
        reject()
    message = f"{model_type} B={batch} S={seq}: {got:,} != {expected:,} ({VERSIONS})\n{json.dumps(config)}"
    assert got == expected, message


@st.composite
def laguna_config(draw: st.DrawFn) -> dict[str, Any]:
    """Laguna with 1 to 4 layers, each with its own query heads (a multiple of h_kv), kind of attention and MLP."""
    layers, h_kv, head = draw(st.integers(1, 4)), draw(st.sampled_from([1, 2])), draw(st.sampled_from([2, 4, 8]))
    per_layer = st.lists(st.integers(1, 4).map(lambda g: g * h_kv), min_size=layers, max_size=layers)
    kinds = st.lists(st.sampled_from(["sliding_attention", "full_attention"]), min_size=layers, max_size=layers)
    mlps = st.lists(st.sampled_from(["dense", "sparse"]), min_size=layers, max_size=layers)
    config = {"model_type": "laguna", "vocab_size": 40, "hidden_size": draw(st.sampled_from([16, 24]))}
    config |= {"head_dim": head}
    config |= {"num_hidden_layers": layers, "num_attention_heads": 2 * h_kv, "num_key_value_heads": h_kv}
    config |= {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8, "intermediate_size": 12}
    config |= {"shared_expert_intermediate_size": 8, "sliding_window": draw(st.integers(2, 6))}
    config |= {"gating": draw(st.sampled_from([True, False, "per-head", "per-element"]))}
    lists = {"num_attention_heads_per_layer": per_layer, "layer_types": kinds, "mlp_layer_types": mlps}
    for key, values in lists.items():
        if draw(st.booleans()):
            config[key] = draw(values)
    return config


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(config=laguna_config(), batch=st.integers(1, 2), seq=st.integers(1, 12))
def test_drawn_laguna_equals_flop_counter(config: dict[str, Any], batch: int, seq: int) -> None:
    """Query heads that differ per layer, summed over the full and over the sliding layers, at S below, at and above
    the window (eager computes the full matrix on the sliding layers too)."""
    assert_equal_to_counter(config, batch, seq)


@pytest.mark.parametrize(("batch", "seq"), [(1, 5), (2, 33)])
@pytest.mark.parametrize("model_type", [name for name in DRAWN if name not in ("jetmoe", "lara_mini")])
def test_class_defaults_equal_flop_counter(model_type: str, batch: int, seq: int) -> None:
    """The config classes' defaults (the released models' sizes) on the meta device (JetMoE's by hand below; Lara
    Mini's recurrent mask reads tensor values, which meta tensors have not: its drawn configs run on the CPU above)."""
    assert_equal_to_counter(oracle.runnable_defaults(model_type), batch, seq)


def test_jetmoe_class_defaults_by_hand() -> None:
    """JetMoeConfig() (JetMoE-8B: N = 12, d = 2048, h_kv = 16 heads of 128, k = 2 of n = 8 experts, d_moe = 5632,
    V = 32,000, tied), whose expert loop cannot run on the meta device. Per token and layer at S = 2048: the two
    routers 2 · d · n each, the k attention experts' query and output maps 2 · k · 2 · d · h_kv · h_d, the shared
    kv_proj 2 · d · 2 · h_kv · h_d, scores and values over k · h_kv heads 2 · 2 · S · k · h_kv · h_d, the k MLP
    experts 2 · k · 3 · d · d_moe; the head 2 · d · V."""
    N, V, d, h_kv, h_d, n, k, d_moe, S = 12, 32000, 2048, 16, 128, 8, 2, 5632, 2048
    routers = 2 * (2 * d * n)
    attention = 2 * k * 2 * d * h_kv * h_d + 2 * d * 2 * h_kv * h_d + 2 * 2 * S * k * h_kv * h_d
    per_layer = routers + attention + 2 * k * 3 * d * d_moe
    assert per_layer == 65_536 + 33_554_432 + 16_777_216 + 33_554_432 + 138_412_032
    config = oracle.runnable_defaults("jetmoe")
    assert llmcount_forward(config, 1, S) == S * (N * per_layer + 2 * d * V)


# ---------------------------------------------------------------------------------------------
# the causal convention, training, per token: hand derivations


def test_causal_counts_the_lower_triangle() -> None:
    """Causal: each of h query heads meets S(S+1)/2 keys in all, so scores and values cost
    2·B·h·(S(S+1)/2)·(h_d + h_d) per layer instead of 2·B·h·S²·(2h_d)."""
    config = SMALL["llama-gqa-head-dim-bias-tied"]  # N=2, h=8, h_d=12
    batch, seq = 3, 10
    full, causal = llmcount_forward(config, batch, seq), llmcount_forward(config, batch, seq, causal=True)
    per_pair = 2 * 8 * (12 + 12)  # 2 FLOPs · h heads · (q·k over h_d + a·v over h_d)
    assert full - causal == 2 * batch * per_pair * (seq * seq - seq * (seq + 1) // 2)


def test_per_token_training_and_rule_of_thumb_by_hand() -> None:
    """Llama-3-8B at S = 2048: every figure derived by hand from the published config."""
    N, V, d, d_ff, h, h_kv, h_d, S = 32, 128256, 4096, 14336, 32, 8, 128, 2048
    per_layer = 2 * (d * h * h_d + 2 * d * h_kv * h_d + h * h_d * d + 3 * d * d_ff) + 2 * 2 * S * h * h_d
    per_token = N * per_layer + 2 * d * V
    model = load("llama-3-8b")
    counts = Flops(model.derivation).evaluate(model.values, S, 2)
    assert counts.per_token == per_token
    assert counts.forward == 2 * S * per_token
    assert counts.training == 3 * counts.forward
    assert counts.rule_of_thumb == 6 * 8_030_261_248 * 2 * S  # 8,030,261,248 parameters (Meta's model card: 8.03B)
    assert counts.rule_error == Fraction(counts.rule_of_thumb, counts.training) - 1


def test_moe_counts_k_of_n_experts_and_the_router() -> None:
    """Mixtral-8x7B per token per layer: router 2·d·n, k = 2 experts of 3·d·d_ff each at 2 FLOPs per weight."""
    model = load("mixtral-8x7b")
    terms = {t.path: t for t in Flops(model.derivation).terms}
    d, d_ff, n, k = 4096, 14336, 8, 2
    assert terms["moe/experts"].per_token.subs(model.values) == 2 * k * 3 * d * d_ff
    assert terms["moe/router"].per_token.subs(model.values) == 2 * d * n


def test_mla_scores_use_the_query_key_and_value_head_sizes() -> None:
    """DeepSeek-V3: scores over d_nope + d_rope = 192 per head, values over d_v = 128, h = 128 heads."""
    model = load("deepseek-v3")
    terms = {t.path: t for t in Flops(model.derivation).terms}
    S = sympy.Symbol("S", positive=True, integer=True)
    assert sympy.expand(terms["attention/scores"].per_token.subs(model.values) - 2 * S * 128 * 192) == 0
    assert sympy.expand(terms["attention/values"].per_token.subs(model.values) - 2 * S * 128 * 128) == 0


def test_formula_is_symbolic_in_s_and_b_and_evaluates_to_the_count() -> None:
    flops = Flops(Derivation(records.family("qwen3")))
    names = {s.name for s in flops.forward.free_symbols}
    assert {"S", "B"} <= names
    model = load("qwen3-32b")
    values = {**model.values, sympy.Symbol("S", positive=True, integer=True): 4096}
    values[sympy.Symbol("B", positive=True, integer=True)] = 2
    assert flops.forward.subs(values) == flops.evaluate(model.values, 4096, 2).forward


# ---------------------------------------------------------------------------------------------
# the command line


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_flops_json_form() -> None:
    data = json.loads(run("flops", "mixtral-8x7b", "--seq", "4096", "--json").stdout)
    assert {"forward_flops", "per_token", "training_flops", "convention", "components"} <= set(data)
    assert all(isinstance(data[key], int) for key in ("forward_flops", "per_token", "training_flops"))
    assert data["forward_flops"] == sum(c["flops"] for c in data["components"])
    assert data["per_token"] * 4096 == data["forward_flops"]
    assert data["training_flops"] == 3 * data["forward_flops"]
    assert data["convention"] == CONVENTION
    assert [c["path"] for c in data["components"]][-1] == "head/lm_head"
    assert {"path", "formula", "flops"} == set(data["components"][0])
    config = {k: v for k, v in presets()["mixtral-8x7b"].config().items() if k != "quantization_config"}
    assert data["forward_flops"] == hf_forward_flops(config, 1, 4096)


def test_flops_causal_and_training_text() -> None:
    causal = json.loads(run("flops", "qwen3-32b", "--seq", "8192", "--causal", "--json").stdout)
    full = json.loads(run("flops", "qwen3-32b", "--seq", "8192", "--json").stdout)
    assert causal["convention"] == CAUSAL_CONVENTION and causal["forward_flops"] < full["forward_flops"]
    out = " ".join(run("flops", "qwen3-32b", "--seq", "8192", "--training").stdout.split())  # lines unwrapped
    assert "3 × forward" in out and "6·P_act·B·S" in out and "against the training count" in out
    assert f"{full['training_flops']:,}" in out


@pytest.mark.parametrize("family", sorted({c["model_type"] for c in SMALL.values()}))
@pytest.mark.parametrize("fmt", ["text", "markdown", "latex"])
def test_formula_flops_of_every_family_in_every_format(family: str, fmt: str) -> None:
    result = run("formula", family, "--flops", "--format", fmt)
    assert result.exit_code == 0, result.output
    assert "S" in result.stdout and "B" in result.stdout


def test_formula_flops_json_parses_and_matches_the_count() -> None:
    data = json.loads(run("formula", "llama", "--flops", "--json").stdout)
    symbols = {name: sympy.Symbol(name) for name in data["symbols"]}  # N and S are not sympy's N() and S
    forward = sympy.parse_expr(data["forward"], local_dict=symbols)
    values = json.loads(run("count", "llama-3-8b", "--json").stdout)["values"]
    expected = json.loads(run("flops", "llama-3-8b", "--seq", "2048", "--json").stdout)["forward_flops"]
    assert forward.subs({symbols[k]: v for k, v in {**values, "S": 2048, "B": 1}.items()}) == expected


def assert_refused(result, *needles: str, code: int = 1) -> None:
    assert result.exit_code == code, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize(
    ("option", "value"), [("--seq", "0"), ("--seq", "-5"), ("--seq", "2.5"), ("--batch", "0"), ("--batch", "x")]
)
def test_flops_refuses_bad_sizes(option: str, value: str) -> None:
    assert_refused(run("flops", "qwen3-32b", option, value), option, "positive integer", value, code=2)


def test_flops_of_unknown_model() -> None:
    assert_refused(run("flops", "qwen3-32", "--seq", "8"), "unknown preset")
