"""The quantisation schemes of safetensors checkpoints, one record each, as data.

For a weight matrix of shape (``out_f``, ``in_f``) a scheme stores the tensors of :attr:`Scheme.tensors`: a name
suffix that replaces the weight's ``weight`` leaf, a shape whose dimensions are integer formulas (``+ - * //`` and
``cdiv(a, b)``, the ceiling of a / b) over ``out_f``, ``in_f`` and the scheme's sizes, and a safetensors dtype code
(``$dtype``: the checkpoint's own dtype, ``$scale``: the scheme's scale dtype). The sizes a config sets:

* ``bits``: bits per weight; ``p``: weights per element of the packing container (32 // bits for int32, 2 for a
  byte of FP4); ``g``: the group size (weights along ``in_f`` sharing a scale); ``b0``, ``b1``: an FP8 block
  (rows, columns); ``bs``: bitsandbytes' block size (weights sharing an absmax, counted over the flattened weight).

Which modules a scheme converts is written as ``converts``: ``linear`` (every ``nn.Linear`` of the decoder and the LM
head, as transformers' ``replace_with_*_linear`` walk the model), ``experts`` (MXFP4: only the routed experts' fused
tensors), ``quantizable`` (MLX: every Linear and Embedding whose ``in_f`` is a multiple of the group size). Each
method's default skips (the LM head, the routers) are in ``keeps``. Each record cites the file and version it is
transcribed from.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import LlmcountError


@dataclass(frozen=True)
class Stored:
    """One tensor a scheme writes for a weight: ``<module>.<suffix>``, its shape formulas and dtype code."""

    suffix: str
    shape: tuple[str, ...]
    dtype: str
    weight: bool = False  # the tensor that holds the weights themselves (packed or not); the others are storage
    when: str = ""  # a condition on the scheme's flags: "asym" (zero points stored), "static" (activation scales)


@dataclass(frozen=True)
class Scheme:
    """A quantisation scheme as a checkpoint stores it."""

    name: str  # the name users type: fp8-block, mxfp4, gptq, awq, bnb-nf4, ...
    title: str  # in words, for output: "FP8 e4m3 weights, fp32 scale per 128×128 block"
    method: str  # the config's quant_method
    tensors: tuple[Stored, ...]
    converts: str  # linear | experts | quantizable
    keeps: tuple[str, ...]  # record paths (or groups "embedding/") the method's code leaves in the checkpoint dtype
    source: str  # file and version transcribed from
    sizes: Mapping[str, int] | None = None  # default sizes (bits, g, b0, b1, bs, p)
    divides: tuple[str, ...] = ()  # dims the packer needs whole: "in_f % g" as ("in_f", "g")


def _expr(text: str) -> ast.expr:
    tree = ast.parse(text, mode="eval").body
    for node in ast.walk(tree):
        allowed = (ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Name, ast.Load, ast.Call, ast.Constant)
        if not isinstance(node, allowed):
            raise ValueError(f"{text!r}: {type(node).__name__} is not allowed in a shape formula")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id == "cdiv"):
            raise ValueError(f"{text!r}: only cdiv(a, b) may be called")
        if isinstance(node, ast.Constant) and (type(node.value) is not int):
            raise ValueError(f"{text!r}: constants must be integers")
    return tree


def dim(text: str, env: Mapping[str, int]) -> int:
    """The value of one shape formula (parsed with :mod:`ast` and walked, never ``eval``'d)."""

    def walk(node: ast.expr) -> int:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise LlmcountError(f"shape formula {text!r} needs {node.id}, which the scheme does not set")
            return env[node.id]
        if isinstance(node, ast.Call):
            a, b = (walk(x) for x in node.args)
            return -(-a // b)
        assert isinstance(node, ast.BinOp)
        a, b = walk(node.left), walk(node.right)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        return a // b

    return walk(_PARSED[text] if text in _PARSED else _expr(text))


CLASSES = {
    "fp8": ("Linear",),  # integrations/finegrained_fp8.py replace_with_fp8_linear: type(module) is nn.Linear
    "fbgemm_fp8": ("Linear", "FalconLinear"),  # integrations/fbgemm_fp8.py: isinstance(module, nn.Linear)
    "awq": ("Linear", "FalconLinear"),  # integrations/awq.py replace_with_awq_linear: isinstance(module, nn.Linear)
    "bitsandbytes": (
        "Linear",
        "Conv1D",
    ),  # integrations/bitsandbytes.py: isinstance(module, Conv1D) or type is nn.Linear
    # compressed-tensors 0.20.0 utils/match.py _match_class: the target "Linear" among the class's MRO names
    "compressed-tensors": ("Linear", "FalconLinear"),
}
"""The module classes (as ``print(model)`` names them, :data:`llmcount.quant.modules.LINEAR_CLASSES`) each method's
code converts, transformers 5.24.0; a method not listed converts every one (GPTQ through optimum's
``gptq/utils.py get_layers``, isinstance of Conv1D, nn.Conv2d or nn.Linear; MLX, whose mlx_lm models are built of its
own nn.Linear)."""


def converts_class(method: str, cls: str) -> bool:
    """Whether ``method`` converts a module of class ``cls`` ("": not known, taken as nn.Linear)."""
    return not cls or method not in CLASSES or cls in CLASSES[method]


LINEAR_KEEPS = ("embedding/", "moe/router")
"""What transformers' ``replace_with_*_linear`` never convert: embeddings are not ``nn.Linear``, nor is a router in
transformers 5 (its own ``*TopkRouter`` class). The LM head is left alone only when the config gives no
``modules_to_not_convert`` (``get_keys_to_not_convert`` in quantizers/base.py, transformers 5.24, then adds it):
:attr:`llmcount.quant.config.Quant.default_skips`."""

TF = "transformers 5.24.0"

SCHEMES: tuple[Scheme, ...] = (
    Scheme(
        name="fp8-block",
        title="FP8 e4m3 weights, one fp32 scale per b0×b1 block (weight_scale_inv)",
        method="fp8",
        tensors=(
            Stored("weight", ("out_f", "in_f"), "F8_E4M3", weight=True),
            Stored("weight_scale_inv", ("cdiv(out_f, b0)", "cdiv(in_f, b1)"), "F32"),
            Stored("activation_scale", (), "F32", when="static"),
        ),
        converts="linear",
        keeps=LINEAR_KEEPS,
        source=f"{TF} integrations/finegrained_fp8.py FP8Linear (weight (out, in) float8_e4m3fn, weight_scale_inv "
        "(ceil(out/b0), ceil(in/b1)) float32); DeepSeek-V3's and Qwen3-FP8's released headers",
        sizes={"b0": 128, "b1": 128},
    ),
    Scheme(
        name="fp8",
        title="FP8 e4m3 weights, one fp32 scale per tensor (weight_scale_inv)",
        method="fp8",
        tensors=(
            Stored("weight", ("out_f", "in_f"), "F8_E4M3", weight=True),
            Stored("weight_scale_inv", (), "F32"),
            Stored("activation_scale", (), "F32", when="static"),
        ),
        converts="linear",
        keeps=LINEAR_KEEPS,
        source=f"{TF} integrations/finegrained_fp8.py FP8Linear without weight_block_size (a scalar scale)",
    ),
    Scheme(
        name="fbgemm-fp8",
        title="FP8 e4m3 weights, one fp32 scale per output row",
        method="fbgemm_fp8",
        tensors=(
            Stored("weight", ("out_f", "in_f"), "F8_E4M3", weight=True),
            Stored("weight_scale", ("out_f", "1"), "F32"),
        ),
        converts="linear",
        keeps=LINEAR_KEEPS,
        source=f"{TF} integrations/fbgemm_fp8.py FbgemmFp8Linear (weight (out, in) float8_e4m3fn, weight_scale "
        "(out, 1) float32; input_scale_ub is a non-persistent buffer, not saved)",
    ),
    Scheme(
        name="mxfp4",
        title="MXFP4 experts: 32 FP4 weights per 16-byte block, one E8M0 scale per block",
        method="mxfp4",
        tensors=(
            Stored("_blocks", ("out_f", "in_f // 32", "16"), "U8", weight=True),
            Stored("_scales", ("out_f", "in_f // 32"), "U8"),
        ),
        converts="experts",
        keeps=(),
        source=f"{TF} integrations/mxfp4.py Mxfp4GptOssExperts (gate_up_proj/down_proj as <name>_blocks uint8 "
        "(n, out, in/32, 16) and <name>_scales uint8 (n, out, in/32)); gpt-oss-20b's released headers",
        divides=(("in_f", "32"),),
    ),
    Scheme(
        name="gptq",
        title="GPTQ int{bits}: int32-packed weights along in, fp16 scales and packed zeros per group, g_idx",
        method="gptq",
        tensors=(
            Stored("qweight", ("cdiv(in_f * bits, 32)", "out_f"), "I32", weight=True),
            Stored("qzeros", ("groups", "cdiv(out_f * bits, 32)"), "I32"),
            Stored("scales", ("groups", "out_f"), "F16"),
            Stored("g_idx", ("in_f",), "I32"),
        ),
        converts="linear",
        keeps=LINEAR_KEEPS,
        source="gptqmodel 7.7.0 nn_modules/qlinear/__init__.py GPTQQuantLinear._register_gptq_buffers (qweight "
        "(ceil(in·bits/32), out), qzeros (ceil(in/g), ceil(out·bits/32)) int32, scales (ceil(in/g), out) float16, "
        "g_idx (in,) int32; g = in when group_size is -1)",
        sizes={"bits": 4, "g": 128},
    ),
    Scheme(
        name="awq",
        title="AWQ int{bits} (GEMM): int32-packed weights along out, fp16 scales and packed zeros per group",
        method="awq",
        tensors=(
            Stored("qweight", ("in_f", "cdiv(out_f * bits, 32)"), "I32", weight=True),
            Stored("qzeros", ("in_f // g", "cdiv(out_f * bits, 32)"), "I32"),
            Stored("scales", ("in_f // g", "out_f"), "F16"),
        ),
        converts="linear",
        keeps=LINEAR_KEEPS,
        source="gptqmodel 7.7.0 nn_modules/qlinear/__init__.py AWQuantLinear (qweight (in, ceil(out·bits/32)), "
        "qzeros (in/g, ceil(out·bits/32)) int32, scales (in/g, out) float16), the layout of AutoAWQ 0.2's "
        "WQLinear_GEMM, which asserts in % g == 0",
        sizes={"bits": 4, "g": 128},
        divides=(("in_f", "g"),),
    ),
    Scheme(
        name="bnb-nf4",
        title="bitsandbytes 4-bit ({quant_type}): two weights per byte, fp32 absmax per {bs} weights",
        method="bitsandbytes",
        tensors=(
            Stored("weight", ("cdiv(out_f * in_f, 2)", "1"), "U8", weight=True),
            Stored("weight.absmax", ("cdiv(out_f * in_f, bs)",), "F32"),
            Stored("weight.quant_map", ("16",), "F32"),
            Stored("weight.quant_state.bitsandbytes__{type}", ("state_json",), "U8"),
        ),
        converts="linear",
        keeps=LINEAR_KEEPS,
        source="bitsandbytes 0.50.2 functional.py quantize_4bit (packed (ceil(n/2), 1) uint8, absmax (ceil(n/bs),) "
        "float32, code of 16 entries) and QuantState.as_dict(packed=True), which adds the tensor "
        "weight.quant_state.bitsandbytes__<type>: json.dumps of {quant_type, blocksize, dtype, shape} as uint8; "
        "files written by transformers 5.24.0 save_pretrained",
        sizes={"bs": 64},
    ),
    Scheme(
        name="bnb-nf4-double",
        title="bitsandbytes 4-bit ({quant_type}) with double quantisation: uint8 absmax per {bs} weights, fp32 "
        "nested absmax per 256 of those",
        method="bitsandbytes",
        tensors=(
            Stored("weight", ("cdiv(out_f * in_f, 2)", "1"), "U8", weight=True),
            Stored("weight.absmax", ("cdiv(out_f * in_f, bs)",), "U8"),
            Stored("weight.quant_map", ("16",), "F32"),
            Stored("weight.nested_absmax", ("cdiv(cdiv(out_f * in_f, bs), 256)",), "F32"),
            Stored("weight.nested_quant_map", ("256",), "F32"),
            Stored("weight.quant_state.bitsandbytes__{type}", ("state_json",), "U8"),
        ),
        converts="linear",
        keeps=LINEAR_KEEPS,
        source="bitsandbytes 0.50.2 functional.py quantize_4bit(compress_statistics=True): absmax quantised by "
        "quantize_blockwise in blocks of 256 (uint8 absmax, float32 nested absmax, 256-entry code); the state's "
        "JSON adds nested_blocksize, nested_dtype and nested_offset (a float whose printed digits are not counted)",
        sizes={"bs": 64},
    ),
    Scheme(
        name="bnb-int8",
        title="bitsandbytes LLM.int8: int8 weights, one fp32 scale per output row (SCB)",
        method="bitsandbytes",
        tensors=(
            Stored("weight", ("out_f", "in_f"), "I8", weight=True),
            Stored("SCB", ("out_f",), "F32"),
            Stored("weight_format", (), "U8"),
        ),
        converts="linear",
        keeps=LINEAR_KEEPS,
        source=f"bitsandbytes 0.50.2 nn/modules.py Linear8bitLt._save_to_state_dict (weight int8, SCB (out,) float32, "
        f"weight_format uint8 scalar); {TF} integrations/bitsandbytes.py",
    ),
    Scheme(
        name="ct-pack",
        title="compressed-tensors pack-quantized int{bits}: int32-packed weights along in, scales per group",
        method="compressed-tensors",
        tensors=(
            Stored("weight_packed", ("out_f", "cdiv(in_f, p)"), "I32", weight=True),
            Stored("weight_scale", ("out_f", "groups"), "$scale"),
            Stored("weight_zero_point", ("cdiv(out_f, p)", "groups"), "I32", when="asym"),
            Stored("weight_shape", ("2",), "I64"),
        ),
        converts="linear",
        keeps=(),
        source="compressed-tensors 0.20.0 compressors/pack_quantized/base.py (weight_packed (out, ceil(in/pack)) "
        "int32, weight_shape (2,) int64, weight_zero_point packed along out when asymmetric) and "
        "quantization/lifecycle/initialize.py (weight_scale (out, in/g) for group, (out, 1) for channel; "
        "forward_helpers.py refuses a width the group size does not divide)",
        sizes={"bits": 4, "g": 128},
        divides=(("in_f", "g"),),
    ),
    Scheme(
        name="ct-fp8",
        title="compressed-tensors float-quantized FP8 e4m3: scales per {strategy}",
        method="compressed-tensors",
        tensors=(
            Stored("weight", ("out_f", "in_f"), "F8_E4M3", weight=True),
            Stored("weight_scale", ("scale_rows", "scale_cols"), "$scale"),
            Stored("input_scale", ("1",), "$scale", when="static"),
        ),
        converts="linear",
        keeps=(),
        source="compressed-tensors 0.20.0 compressors/naive_quantized (float-quantized keeps weight as "
        "float8_e4m3fn) and quantization/lifecycle/initialize.py (weight_scale (1,) tensor, (out, 1) channel, "
        "(ceil(out/b0), ceil(in/b1)) block)",
    ),
    Scheme(
        name="nvfp4",
        title="compressed-tensors nvfp4-pack-quantized: two FP4 weights per byte, an FP8 scale per 16, fp32 global",
        method="compressed-tensors",
        tensors=(
            Stored("weight_packed", ("out_f", "cdiv(in_f, 2)"), "U8", weight=True),
            Stored("weight_scale", ("out_f", "cdiv(in_f, 16)"), "F8_E4M3"),
            Stored("weight_global_scale", ("1",), "F32"),
            Stored("input_global_scale", ("1",), "F32", when="static"),
        ),
        converts="linear",
        keeps=(),
        source="compressed-tensors 0.20.0 compressors/nvfp4/base.py (weight_packed uint8 two per byte, weight_scale "
        "float8_e4m3fn per group of 16, weight_global_scale and input_global_scale (1,) float32)",
        sizes={"g": 16},
    ),
    Scheme(
        name="ct-mxfp4",
        title="compressed-tensors mxfp4-pack-quantized: two FP4 weights per byte, an E8M0 scale (uint8) per 32",
        method="compressed-tensors",
        tensors=(
            Stored("weight_packed", ("out_f", "in_f // 2"), "U8", weight=True),
            Stored("weight_scale", ("out_f", "in_f // 32"), "U8"),
        ),
        converts="linear",
        keeps=(),
        source="compressed-tensors 0.20.0 compressors/mxfp4/base.py MXFP4PackedCompressor (the NVFP4 packing, "
        "weight_packed uint8 two per byte; weight_scale as compress_mx_scale's uint8 exponents, one per group of 32; "
        "no global scale) and quantization/utils/helpers.py strategy_cdiv, which refuses a width 32 does not divide",
        sizes={"g": 32},
        divides=(("in_f", "32"),),
    ),
    Scheme(
        name="mlx",
        title="MLX affine {bits}-bit: uint32-packed weights, a scale and a bias per {g} weights",
        method="mlx",
        tensors=(
            Stored("weight", ("out_f", "in_f * bits // 32"), "U32", weight=True),
            Stored("scales", ("out_f", "in_f // g"), "$dtype"),
            Stored("biases", ("out_f", "in_f // g"), "$dtype"),
        ),
        converts="quantizable",
        keeps=(),
        source="mlx 0.29 python/mlx/nn/layers/quantized.py QuantizedLinear/QuantizedEmbedding (weight (out, "
        "in·bits/32) uint32, scales and biases (out, in/g) in the model dtype); mlx_lm utils.py quantize_model "
        "(only layers whose last dim is a multiple of the group size; per-layer overrides in config quantization)",
        sizes={"bits": 4, "g": 64},
    ),
)

BY_NAME: dict[str, Scheme] = {s.name: s for s in SCHEMES}

_PARSED: dict[str, ast.expr] = {}
for _scheme in SCHEMES:
    for _t in _scheme.tensors:
        for _d in _t.shape:
            _PARSED[_d] = _expr(_d)
