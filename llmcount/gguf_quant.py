"""Which ggml type llama.cpp's quantizer (``llama-quantize``) gives each tensor of a model for a file type (Q4_K_M,
Q8_0 ...), and the exact bytes that makes.

Transcribed from llama.cpp ``src/llama-quant.cpp`` at commit 007dbbf3fd17 (its type mixture is the one of 0c1e57098, the
tree the ``gguf`` package 0.19.0 ships with; the later commit adds tensors it never quantises):
``llama_ftype_get_default_type`` (the file type's base type), ``tensor_allows_quantization`` (1-D tensors, norms,
routers ``ffn_gate_inp`` stay as they are), ``tensor_get_category`` and ``llama_tensor_get_type_impl`` (the mixture:
more bits for attn_v, ffn_down, attn_output, the output and a tied token embedding, by layer and by the model's
grouped-query ratio and expert count), ``tensor_type_fallback`` (a type whose block does not divide the row falls back
to a smaller block, else F16). The ``LLM_TYPE_70B`` rule follows ``src/models/{llama,qwen2,olmo,deci}.cpp``.
The low-bit IQ1/IQ2/IQ3 mixtures depend on an importance matrix and are refused by name. llama.cpp counts ffn_down's
layers over ``block_count`` (``n_layer_all``, MTP layers included); for every architecture mapped here the converter
writes no MTP layers, so that is num_hidden_layers.

Checked against files llama.cpp's own ``llama-quantize`` wrote (built from 0c1e57098bba, the tree llama-cpp-python
0.3.36 vendors), every tensor's type and bytes, for llama, qwen3 (tied), qwen3moe (8 experts), mixtral (4 experts), phi3
(fused attn_qkv), gemma3 (rows that fall back), an 80-layer llama (LLM_TYPE_70B), qwen2moe, deepseek2 (MLA), gpt-oss and
starcoder2, every file type here (qwen2, gemma2, olmo2, glm4, smollm3, stablelm, olmoe on nine) (and Q4_0, Q5_0, IQ4_NL,
IQ4_XS, Q2_K_S with an importance matrix): tests/test_gguf_llama_quantize.py and tests/llama_quantize/. llama-quantize
walks the tensors in its loader's order (layer number, then name, the ones outside the layers first), which keeps each
layer's attn_v and ffn_down in layer order, as here.

A model's GGUF tensors come from its record's components through ``[tensors]`` of gguf_archs.toml (the tensors
llama.cpp's converter writes for each component and the width ``ne[0]`` of their rows); the type of every tensor the
quantizer leaves alone is the converter's: F32 for vectors and routers, the input file's type (``source``) otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .errors import LlmcountError

# file type -> (gguf.LlamaFileType name, its default ggml type): llama_ftype_get_default_type
FILE_TYPES = {
    "f32": ("ALL_F32", "F32"),
    "f16": ("MOSTLY_F16", "F16"),
    "bf16": ("MOSTLY_BF16", "BF16"),
    "q4_0": ("MOSTLY_Q4_0", "Q4_0"),
    "q4_1": ("MOSTLY_Q4_1", "Q4_1"),
    "q5_0": ("MOSTLY_Q5_0", "Q5_0"),
    "q5_1": ("MOSTLY_Q5_1", "Q5_1"),
    "q8_0": ("MOSTLY_Q8_0", "Q8_0"),
    "q2_k": ("MOSTLY_Q2_K", "Q2_K"),
    "q2_k_s": ("MOSTLY_Q2_K_S", "Q2_K"),
    "q3_k_s": ("MOSTLY_Q3_K_S", "Q3_K"),
    "q3_k_m": ("MOSTLY_Q3_K_M", "Q3_K"),
    "q3_k_l": ("MOSTLY_Q3_K_L", "Q3_K"),
    "q4_k_s": ("MOSTLY_Q4_K_S", "Q4_K"),
    "q4_k_m": ("MOSTLY_Q4_K_M", "Q4_K"),
    "q5_k_s": ("MOSTLY_Q5_K_S", "Q5_K"),
    "q5_k_m": ("MOSTLY_Q5_K_M", "Q5_K"),
    "q6_k": ("MOSTLY_Q6_K", "Q6_K"),
    "iq4_nl": ("MOSTLY_IQ4_NL", "IQ4_NL"),
    "iq4_xs": ("MOSTLY_IQ4_XS", "IQ4_XS"),
    "tq1_0": ("MOSTLY_TQ1_0", "TQ1_0"),
    "tq2_0": ("MOSTLY_TQ2_0", "TQ2_0"),
    "mxfp4_moe": ("MOSTLY_MXFP4_MOE", "MXFP4"),
}
NEEDS_IMATRIX = ("iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq2_m", "iq3_xxs", "iq3_xs", "iq3_s", "iq3_m")
SEVENTY_B = {"llama": "distinct_kv", "qwen2": "any", "olmo": "any", "deci": "any"}  # 80 layers -> LLM_TYPE_70B
FALLBACK = {  # tensor_type_fallback
    **dict.fromkeys(("IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ4_XS"), "IQ4_NL"),
    **dict.fromkeys(("Q2_K", "Q3_K", "TQ1_0", "TQ2_0"), "Q4_0"),
    "Q4_K": "Q5_0",
    "Q5_K": "Q5_1",
    "Q6_K": "Q8_0",
}
FLOATS = ("F32", "F16", "BF16")


def is_file_type(name: str) -> bool:
    """Whether ``--quant NAME`` names a llama.cpp file type (known or not: q9_k is refused by :func:`file_type`),
    rather than a safetensors quantisation scheme."""
    key = name.strip().lower()
    return key in FILE_TYPES or key in NEEDS_IMATRIX or re.match(r"(i?q|tq)[0-9]", key) is not None


def file_type(name: str) -> str:
    """The canonical file type (``q4_k_m``) of what a user typed (``Q4_K_M``, ``q4_k_m``)."""
    key = name.strip().lower().replace("-", "_")
    if key in NEEDS_IMATRIX:
        raise LlmcountError(
            f"--quant {name}: llama.cpp's {key.upper()} mixture depends on an importance matrix (--imatrix) and is not "
            f"transcribed here; choose one of {', '.join(FILE_TYPES)}"
        )
    if key not in FILE_TYPES:
        raise LlmcountError(f"--quant {name}: not a llama.cpp file type; choose one of {', '.join(FILE_TYPES)}")
    return key


@dataclass(frozen=True)
class Planned:
    """One GGUF tensor as llama.cpp's converter writes it: its name, ne[0] (row width), rows and expert count."""

    name: str
    path: str
    layer: int | None
    cols: int
    rows: int
    experts: int = 1
    heads: int = 1  # ne[2] of a 3-D tensor that holds no experts (DeepSeek's attn_k_b and attn_v_b, one per head)

    @property
    def elements(self) -> int:
        return self.cols * self.rows * self.experts * self.heads


def _layer_sets(model: Any) -> dict[str, tuple[int, ...]]:
    """Each term's layer expression (as text) -> the layer indices it counts."""
    from .formulas.reading import MAX_LAYERS
    from .formulas.symbols import N

    n = model.values[N]
    if n > MAX_LAYERS:  # a GGUF's tensors are listed layer by layer: bounded before the walk
        raise LlmcountError(f"num_hidden_layers is {n:,}; a GGUF's tensors are listed for up to {MAX_LAYERS:,} layers")
    sets: dict[str, tuple[int, ...]] = {"N": tuple(range(n)), "1": ()}
    for symbol, indices in model.layer_indices.items():
        sets[str(symbol)] = tuple(indices)
        sets[f"N - {symbol}"] = tuple(i for i in range(n) if i not in set(indices))
        sets[f"-{symbol} + N"] = sets[f"N - {symbol}"]
    return sets


def plan(model: Any, arch: str | None = None) -> list[Planned]:
    """The GGUF tensors of a model, in the converter's order (per layer, then the rest); ``arch``: the GGUF
    architecture, whose own ``[<arch>.tensors]`` names replace the shared ones."""
    from .formulas.symbols import d
    from .gguf_model import archs

    own = archs().get(arch, {}).get("tensors", {}) if arch else {}
    table = {**archs()["tensors"], **own}
    vectors = tuple(archs()["vectors"]["paths"])
    sets = _layer_sets(model)
    hidden = model.values[d]
    experts_n = next((c for s, c in model.values.items() if s.name == "n"), 1)
    tensors: list[Planned] = []
    for term, component in zip(model.terms, model.counts.components, strict=True):
        layers_text = str(term.layers)
        if layers_text not in sets:
            raise LlmcountError(
                f"--quant: {model.name}: component {term.path} is on the layers {layers_text}, not placed here"
            )
        layers: tuple[int | None, ...] = sets[layers_text] or (None,)
        per = component.count // len(layers)
        if not per:
            continue
        spec = table.get(term.path)
        suffix = "weight"
        sizes: list[int] | None = None  # per GGUF name, when they differ
        base = table.get(term.path.removesuffix(".bias")) if term.path.endswith(".bias") else None
        if spec is None and base is not None:  # a weight's bias: <its GGUF name>.bias, one per matrix
            spec, suffix = {"gguf": base["gguf"], "vector": True}, "bias"
            if "d" in base and len(base["gguf"]) > 1:  # a matrix's bias is its rows: d for "out", the rest split
                out = hidden * (experts_n if base.get("experts") else 1)
                ins = (per - base["d"].count("out") * out) // max(1, base["d"].count("in"))
                sizes = [out if side == "out" else ins for side in base["d"]]
        if spec is not None and spec.get("vector") and term.path.startswith("norms/") and per == 2 * hidden:
            spec = {"gguf": [f"{spec['gguf'][0]}.weight", f"{spec['gguf'][0]}.bias"], "vector": True, "named": True}
        if spec is None:
            if not (term.path.startswith(vectors) or term.path.endswith(".bias")):
                raise LlmcountError(
                    f"--quant: {model.name}: no GGUF tensor layout for component {term.path} "
                    f"({model.architecture.name}); see gguf_archs.toml [tensors]"
                )
            spec = {"gguf": [term.path.replace("/", ".")], "vector": True}
        names = spec["gguf"]
        experts = experts_n if spec.get("experts") else 1
        each = per // len(names) // experts
        for layer in layers:
            for i, gname in enumerate(names):
                full = gname if spec.get("named") else f"{gname}.{suffix}"  # a LayerNorm's weight and bias
                name = f"blk.{layer}.{full}" if layer is not None else full
                if spec.get("vector"):
                    tensors.append(Planned(name, term.path, layer, sizes[i] if sizes else each, 1, experts))
                    continue
                if "shape" in spec:  # ne[0], ne[1] (and ne[2]) as formulas: a tensor the converter reshapes
                    cols, rows, *heads = (_dim(x, model, term.path) for x in spec["shape"][i])
                    tensors.append(Planned(name, term.path, layer, cols, rows, experts, heads[0] if heads else 1))
                    continue
                side = spec["d"][i]
                cols = hidden if side == "in" else each // hidden
                tensors.append(Planned(name, term.path, layer, cols, each // cols, experts))
    for gname, spec in archs().get("buffers", {}).get(model.architecture.name, {}).items():
        size = _dim(spec["size"], model, f"buffers {gname}")
        on = dict.fromkeys(t.layer for t in tensors if t.path == spec["on"] and t.layer is not None)
        tensors.extend(Planned(f"blk.{layer}.{gname}.bias", f"buffer/{gname}", layer, size, 1) for layer in on)
    return tensors


def _dim(text: str, model: Any, path: str) -> int:
    from .formulas.derivation import evaluate_int
    from .formulas.expressions import formula

    where = f"gguf_archs.toml [tensors] {path}"
    return evaluate_int(formula(text, where), model.values, where)


def _use_more_bits(i: int, n: int) -> bool:
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _category(name: str) -> str:
    """tensor_get_category."""
    if name == "output.weight":
        return "output"
    if name in ("token_embd.weight", "per_layer_token_embd.weight"):
        return "token_embd"
    for key, category in (
        ("attn_qkv.weight", "attn_qkv"),
        ("attn_kv_b.weight", "attn_kv_b"),
        ("attn_v.weight", "attn_v"),
        ("attn_k.weight", "attn_k"),
        ("attn_q.weight", "attn_q"),
        ("attn_output.weight", "attn_output"),
        ("ffn_up", "ffn_up"),
        ("ffn_gate", "ffn_gate"),
        ("ffn_down", "ffn_down"),
    ):
        if key in name:
            return category
    return "other"


NOT_QUANTISED = (
    "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
    "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight", "attn_rel_b.weight",
    *(f"time_mix_{x}.weight" for x in ("first", "w0", "w1", "w2", "v0", "v1", "v2", "a0", "a1", "a2", "g1", "g2",
                                        "decay_w1", "decay_w2", "lerp_fused")),
)  # fmt: skip
"""Name parts tensor_allows_quantization never quantises (llama.cpp 007dbbf3f src/llama-quant.cpp), besides the exact
names position_embd.weight and token_types.weight."""
CONVERTER_F32 = (
    "ffn_gate_inp.", "position_embd.", "token_types.", "ssm_conv1d.", "shortconv.conv.", "time_mix_first.",
    "time_mix_w1.", "time_mix_w2.", "time_mix_decay_w1.", "time_mix_decay_w2.", "time_mix_lerp_fused.",
)  # fmt: skip
"""The tensors llama.cpp's converter always writes in F32 (convert_hf_to_gguf.py ModelBase.prepare_tensors:
FFN_GATE_INP, POS_EMBD, TOKEN_TYPES, SSM_CONV1D, SHORTCONV_CONV, TIME_MIX_FIRST, _W1, _W2, _DECAY_W1, _DECAY_W2,
_LERP_FUSED); llama-quantize leaves them so."""


def _quantizable(t: Planned) -> bool:
    """tensor_allows_quantization, for the tensors a language model's GGUF holds."""
    if t.rows <= 1 and t.experts <= 1:  # ggml_n_dims < 2
        return False
    name = t.name
    if name in ("position_embd.weight", "token_types.weight"):
        return False
    return name.endswith("weight") and not any(part in name for part in NOT_QUANTISED)


@dataclass(frozen=True)
class Quantized:
    tensor: Planned
    type: str
    bytes: int


def predict(model: Any, arch: str, ftype: str, source: str = "BF16", imatrix: bool = False) -> list[Quantized]:
    """Every GGUF tensor of ``model`` (GGUF architecture ``arch``) with the type llama-quantize gives it for ``ftype``
    from a ``source`` file (F16 or BF16, the converter's output), and its exact bytes; ``imatrix``: quantized with an
    importance matrix (``--imatrix``), which changes ffn_down of the first eighth of the layers for Q4_0, Q5_0,
    IQ4_NL and IQ4_XS."""
    from .formulas.symbols import N, h, h_kv
    from .gguf_file import gguf_package

    gguf = gguf_package(f"--quant {ftype} (llama.cpp's types)")

    ftype = file_type(ftype)
    sizes = {t.name: gguf.GGML_QUANT_SIZES[t] for t in gguf.GGMLQuantizationType}
    tensors = plan(model, arch)
    values = model.values
    n_layer = values[N]
    n_expert = next((t.experts for t in tensors if t.experts > 1), 0)
    n_gqa = values[h] // values[h_kv] if h in values and h_kv in values and values[h_kv] else 1
    rule = SEVENTY_B.get(arch)
    is_70b = n_layer == 80 and (rule == "any" or (rule == "distinct_kv" and values.get(h) != values.get(h_kv)))
    tied = not any(t.name == "output.weight" for t in tensors)
    default = FILE_TYPES[ftype][1]
    state = {"n_attention_wv": sum(_category(t.name) in ("attn_v", "attn_qkv", "attn_kv_b") for t in tensors)}
    state.update(i_attention_wv=0, i_ffn_down=0, i_ffn_gate=0, i_ffn_up=0)
    out = []
    for t in tensors:
        if not _quantizable(t):
            kind = "F32" if t.rows <= 1 or any(part in t.name for part in CONVERTER_F32) else source
        elif default in FLOATS:
            kind = default
        else:
            state["imatrix"] = imatrix
            kind = _mixture(t, default, ftype, state, n_layer, n_expert, n_gqa, is_70b, tied, arch, sizes)
            kind = _fallback(t, kind, sizes)
        block, size = sizes[kind]
        out.append(Quantized(t, kind, t.elements // block * size))
    return out


def _fallback(t: Planned, kind: str, sizes: dict[str, tuple[int, int]]) -> str:
    """tensor_type_fallback: a type whose block does not divide the row width."""
    if t.cols % sizes[kind][0] == 0:
        return kind
    if kind in FALLBACK:
        kind = FALLBACK[kind]
    elif sizes[kind][0] > 32:
        raise LlmcountError(f"--quant: no fallback type for {kind} on {t.name}")
    return kind if t.cols % sizes[kind][0] == 0 else "F16"


def _mixture(t, new, ftype, qs, n_layer, n_expert, n_gqa, is_70b, tied, arch, sizes) -> str:
    """llama_tensor_get_type_impl, for the file types of FILE_TYPES."""
    category = _category(t.name)
    layer = t.layer if t.layer is not None else 0
    if category == "output" or (tied and category == "token_embd"):
        if ftype == "mxfp4_moe" or arch == "falcon" or t.cols % sizes[new][0] != 0:
            return "Q8_0"
        return "Q6_K" if new != "Q8_0" else new
    if ftype == "mxfp4_moe":  # every tensor with ne[2] > 1: the experts, and MLA's attn_k_b and attn_v_b
        return "MXFP4" if t.experts > 1 or t.heads > 1 else "Q8_0"
    if category == "token_embd":
        return "Q4_K" if ftype in ("tq1_0", "tq2_0") else new
    if category in ("attn_v", "attn_qkv", "attn_kv_b"):
        i = qs["i_attention_wv"]
        if ftype == "q2_k":
            new = "Q4_K" if n_gqa >= 4 else "Q3_K"
        elif ftype == "q2_k_s" and n_gqa >= 4:
            new = "Q4_K"
        elif ftype == "q3_k_m":
            new = "Q5_K" if i < 2 else "Q4_K"
        elif ftype == "q3_k_l" or (ftype in ("iq4_nl", "iq4_xs") and n_gqa >= 4):
            new = "Q5_K"
        elif ftype in ("q4_k_m", "q5_k_m") and _use_more_bits(i, qs["n_attention_wv"]):
            new = "Q6_K"
        elif ftype == "q4_k_s" and i < 4:
            new = "Q5_K"
        if is_70b and new in ("Q3_K", "Q4_K"):
            new = "Q5_K"
        if n_expert == 8:
            new = "Q8_0"
        qs["i_attention_wv"] += 1
        return new
    if category == "attn_k":
        return "Q8_0" if n_expert == 8 else new
    if category == "attn_q":
        return new
    if category == "ffn_down":
        i, n = (layer, n_layer) if n_expert > 1 else (qs["i_ffn_down"], n_layer)
        if ftype == "q2_k":
            new = "Q3_K"
        elif ftype == "q2_k_s":
            if i < n // 8:
                new = "Q4_K"
        elif ftype == "q3_k_m":
            new = "Q5_K" if i < n // 16 else ("Q4_K" if arch != "falcon" or _use_more_bits(i, n) else "Q3_K")
        elif ftype == "q3_k_l":
            new = "Q4_K" if arch == "falcon" else "Q5_K"
        elif ftype == "q4_k_m":
            if arch == "falcon":
                new = "Q6_K" if i < n // 16 else ("Q5_K" if _use_more_bits(i, n) else "Q4_K")
            elif _use_more_bits(i, n):
                new = "Q6_K"
        elif i < n // 8 and ftype in ("iq4_nl", "iq4_xs") and not qs["imatrix"]:
            new = "Q5_K"
        elif ftype == "q5_k_m" and _use_more_bits(i, n):
            new = "Q6_K"
        elif ftype == "q4_k_s" and arch != "falcon" and i < n // 8:
            new = "Q5_K"
        elif ftype in ("q4_0", "q5_0") and qs["imatrix"] and i < n // 8:
            new = "Q4_1" if ftype == "q4_0" else "Q5_1"
        qs["i_ffn_down"] += 1
        return new
    if category == "attn_output":
        if arch != "falcon":
            if n_expert == 8:
                if ftype in ("q2_k", "q3_k_s", "q3_k_m", "iq4_nl", "q4_k_s", "q4_k_m", "iq4_xs"):
                    new = "Q5_K"
            elif ftype == "q2_k":
                new = "Q3_K"
            elif ftype == "q3_k_m":
                new = "Q4_K"
            elif ftype == "q3_k_l":
                new = "Q5_K"
        elif ftype == "q3_k_l":
            new = "Q4_K"
        return new
    if category == "attn_qkv":  # pragma: no cover - taken by the attn_v branch above, as in llama.cpp
        return new
    if category in ("ffn_gate", "ffn_up"):
        qs[f"i_{category}"] += 1
    return new


def gguf_arch(model: Any) -> str:
    """The GGUF architecture llama.cpp converts a record's model_type to (gguf_archs.toml, variants included)."""
    from .gguf_model import archs

    model_type = model.architecture.name
    for arch, table in archs().items():
        if not isinstance(table, dict) or "model_type" not in table:
            continue
        if table["model_type"] == model_type or model_type in table.get("variants", {}):
            return arch
    raise LlmcountError(
        f"--quant: {model.name}: llama.cpp's converter is not mapped here for model_type {model_type}; "
        "see gguf_archs.toml"
    )
