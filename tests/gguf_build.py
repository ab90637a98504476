"""Real GGUF files for the tests, written with the ``gguf`` package's own writer (``GGUFWriter``).

``write_gguf(config, arch, path)`` builds transformers' model for ``config`` on the meta device, names each parameter
as llama.cpp's converter does (``gguf.get_tensor_name_map``, the converter's own map, and the converter's reshaping:
experts stacked per layer, gpt-oss's gate_up_proj split in two, DeepSeek's kv_b_proj split into attn_k_b and
attn_v_b, a tied head left out), writes the metadata the converter writes for that architecture (llama.cpp
0c1e57098 ``conversion/base.py`` TextModel.set_gguf_parameters and the architecture's own class, transcribed here
independently of llmcount's table), and stores each tensor in a ggml type from ``types``: really quantised with
``gguf.quants`` where it quantises on a CPU (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, BF16, TQ1_0, TQ2_0, MXFP4), otherwise a
zero byte blob of exactly the size the type's blocks take (K- and IQ-quants), as ``GGUFWriter`` accepts them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gguf
import numpy as np
from oracle import _meta_model

QUANTISES = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "BF16", "TQ1_0", "TQ2_0", "MXFP4"}


def hf_shapes(config: dict[str, Any]) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]], Any]:
    """transformers' parameters and buffers of ``config`` (name -> shape), and its config object."""
    model, cfg = _meta_model(json.dumps(config, sort_keys=True))
    params = {n: tuple(p.shape) for n, p in model.named_parameters()}
    buffers = {n: tuple(b.shape) for n, b in model.named_buffers()}
    return params, buffers, cfg


def converted(config: dict[str, Any], arch: str) -> list[tuple[str, tuple[int, ...]]]:
    """(GGUF name, torch-order shape) of every tensor the converter writes for ``config``."""
    params, buffers, cfg = hf_shapes(config)
    arch_id = next(a for a, n in gguf.MODEL_ARCH_NAMES.items() if n == arch)
    names = gguf.get_tensor_name_map(arch_id, cfg.num_hidden_layers)
    out: list[tuple[str, tuple[int, ...]]] = []

    def put(hf: str, shape: tuple[int, ...]) -> None:
        for suffix in (".weight", ".bias"):
            if hf.endswith(suffix):
                out.append((names[hf.removesuffix(suffix)] + suffix, shape))
                return
        out.append((names[hf] + ".weight", shape))

    tied = getattr(cfg, "tie_word_embeddings", False)
    for name, shape in params.items():
        if name == "lm_head.weight" and tied:
            continue
        if arch == "granitemoe":  # transformers 5's names -> the released checkpoint's, which the converter reads
            name = name.replace("block_sparse_moe.router.weight", "block_sparse_moe.router.layer.weight")
            name = name.replace("block_sparse_moe.experts.", "mlp.experts.")
            if name.endswith("shared_mlp.input_linear.weight"):  # conversion/granite.py GraniteMoeModel: split in two
                layer = name.split(".")[2]
                half = (shape[0] // 2, shape[1])
                out.append((f"blk.{layer}.ffn_gate_shexp.weight", half))
                out.append((f"blk.{layer}.ffn_up_shexp.weight", half))
                continue
        base = name.rsplit(".", 1)[0]
        if name.endswith("experts.gate_up_proj"):  # (n, 2f, d) in most classes, (n, d, 2f) in gpt-oss
            n, a, b = shape
            d = cfg.hidden_size
            f = (a if b == d else b) // 2
            put(base + ".gate_proj.weight", (n, f, d))
            put(base + ".up_proj.weight", (n, f, d))
        elif name.endswith("experts.gate_up_proj_bias"):
            n, two_f = shape
            put(base + ".gate_proj.bias", (n, two_f // 2))
            put(base + ".up_proj.bias", (n, two_f // 2))
        elif name.endswith("experts.down_proj"):
            n, a, b = shape
            d = cfg.hidden_size
            put(base + ".down_proj.weight", (n, d, a if b == d else b))
        elif name.endswith("experts.down_proj_bias"):
            put(base + ".down_proj.bias", shape)
        elif name.endswith("self_attn.sinks"):
            put(name, shape)
        elif name.endswith("kv_b_proj.weight"):  # DeepSeek MLA, absorbed: k_b (h, r, nope), v_b (h, v, r)
            h, r = cfg.num_attention_heads, shape[1]
            nope, v = cfg.qk_nope_head_dim, cfg.v_head_dim
            put(name.replace("kv_b_proj", "k_b_proj"), (h, r, nope))
            put(name.replace("kv_b_proj", "v_b_proj"), (h, v, r))
        else:
            put(name, shape)
    for name, shape in buffers.items():  # the router's correction bias the converter writes (DeepSeek-V3)
        if name.endswith("e_score_correction_bias"):
            out.append((names[name.removesuffix("_bias")] + ".bias", shape))
    return out


def metadata(writer: gguf.GGUFWriter, config: dict[str, Any], arch: str, cfg: Any) -> None:
    """The keys llama.cpp's converter writes for this architecture (see the module's docstring)."""
    get = lambda key, default=None: getattr(cfg, key, default)  # noqa: E731
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_context_length(get("max_position_embeddings"))
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_feed_forward_length(get("intermediate_size"))
    writer.add_head_count(cfg.num_attention_heads)
    if arch == "deepseek2":
        writer.add_head_count_kv(1)
    elif get("num_key_value_heads") is not None:
        writer.add_head_count_kv(cfg.num_key_value_heads)
    if get("rms_norm_eps") is not None:
        writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    if get("norm_epsilon") is not None:
        writer.add_layer_norm_eps(cfg.norm_epsilon)
    experts = get("num_local_experts") or get("num_experts") or get("n_routed_experts")
    if experts:
        writer.add_expert_count(experts)
        writer.add_expert_used_count(cfg.num_experts_per_tok)
    if "head_dim" in config and arch != "deepseek2":
        writer.add_key_length(cfg.head_dim)
        writer.add_value_length(cfg.head_dim)
    if arch in ("qwen2moe", "qwen3moe", "deepseek2"):
        writer.add_expert_feed_forward_length(cfg.moe_intermediate_size)
    if arch == "qwen2moe":
        writer.add_expert_shared_feed_forward_length(cfg.shared_expert_intermediate_size)
    if arch == "gpt-oss":
        writer.add_sliding_window(cfg.sliding_window)
        writer.add_expert_feed_forward_length(cfg.intermediate_size)
    if arch in ("gemma2", "gemma3"):
        writer.add_sliding_window(cfg.sliding_window)
    if arch in ("cohere2", "exaone4") or (arch == "olmo2" and "sliding_window" in config):
        writer.add_sliding_window(cfg.sliding_window)
    if arch in ("granite", "granitemoe"):  # conversion/granite.py GraniteModel: the multipliers, when set
        for key, add in (
            ("attention_multiplier", writer.add_attention_scale),
            ("embedding_multiplier", writer.add_embedding_scale),
            ("residual_multiplier", writer.add_residual_scale),
            ("logits_scaling", writer.add_logit_scale),
        ):
            if get(key):
                add(get(key))
    if arch == "cohere2":  # conversion/command_r.py Cohere2Model
        writer.add_logit_scale(cfg.logit_scale)
        writer.add_vocab_size(cfg.vocab_size)
        writer.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
        writer.add_rope_scaling_type(gguf.RopeScalingType.NONE)
    if get("shared_intermediate_size"):  # conversion/granite.py GraniteMoeModel
        writer.add_expert_shared_feed_forward_length(cfg.shared_intermediate_size)
    if get("layer_norm_eps") is not None:
        writer.add_layer_norm_eps(cfg.layer_norm_eps)
    if arch == "phi3":  # conversion/phi.py: 0 stands for a null window
        writer.add_sliding_window(cfg.sliding_window or 0)
    if arch == "deepseek2":
        writer.add_leading_dense_block_count(cfg.first_k_dense_replace)
        writer.add_vocab_size(cfg.vocab_size)
        if cfg.q_lora_rank is not None:
            writer.add_q_lora_rank(cfg.q_lora_rank)
        writer.add_kv_lora_rank(cfg.kv_lora_rank)
        writer.add_key_length(cfg.kv_lora_rank + cfg.qk_rope_head_dim)
        writer.add_value_length(cfg.kv_lora_rank)
        writer.add_key_length_mla(cfg.qk_nope_head_dim + cfg.qk_rope_head_dim)
        writer.add_value_length_mla(cfg.v_head_dim)
        writer.add_expert_shared_count(cfg.n_shared_experts)
        writer.add_rope_dimension_count(cfg.qk_rope_head_dim)
        if config["model_type"] == "deepseek_v3":
            writer.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
            writer.add_expert_group_count(cfg.n_group)
            writer.add_expert_group_used_count(cfg.topk_group)
    else:
        writer.add_token_list([f"t{i}" for i in range(cfg.vocab_size)])


def blob(shape: tuple[int, ...], qtype: gguf.GGMLQuantizationType, seed: int) -> np.ndarray:
    """The stored form of a tensor of ``shape`` (torch order) in ``qtype``: really quantised where gguf.quants can."""
    if qtype == gguf.GGMLQuantizationType.F32:
        return np.full(shape, 0.5, dtype=np.float32)
    if qtype == gguf.GGMLQuantizationType.F16:
        return np.full(shape, 0.5, dtype=np.float16)
    if qtype.name in QUANTISES:
        values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        return gguf.quants.quantize(values, qtype)
    return np.zeros(gguf.quants.quant_shape_to_byte_shape(shape, qtype), dtype=np.uint8)


def write_gguf(
    config: dict[str, Any],
    arch: str,
    path: Path,
    types: tuple[str, ...] = ("Q8_0",),
    extra: tuple[tuple[str, tuple[int, ...]], ...] = (),
    file_type: int | None = None,
) -> dict[str, tuple[str, tuple[int, ...], int]]:
    """Write ``config``'s model as llama.cpp converts it; return name -> (ggml type, shape, stored bytes) as
    ``gguf.GGUFReader`` reads the file back. Matrices take the ``types`` in turn (F32 where the first dimension is no
    multiple of the type's block), vectors F32."""
    _params, _buffers, cfg = hf_shapes(config)
    writer = gguf.GGUFWriter(str(path), arch)
    metadata(writer, config, arch, cfg)
    if file_type is not None:
        writer.add_file_type(file_type)
    tensors = converted(config, arch) + list(extra)
    matrices = 0
    for i, (name, shape) in enumerate(tensors):
        qtype = gguf.GGMLQuantizationType.F32
        if len(shape) >= 2:
            wanted = gguf.GGMLQuantizationType[types[matrices % len(types)]]
            matrices += 1
            if shape[-1] % gguf.GGML_QUANT_SIZES[wanted][0] == 0:
                qtype = wanted
        data = blob(shape, qtype, i)
        if qtype in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            writer.add_tensor(name, data)
        else:
            writer.add_tensor(name, data, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    reader = gguf.GGUFReader(str(path))
    return {
        t.name: (t.tensor_type.name, tuple(int(x) for x in reversed(t.shape)), int(t.n_bytes)) for t in reader.tensors
    }
