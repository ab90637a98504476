"""A config's quantisation: ``quantization_config`` (transformers) or ``quantization`` (MLX) read into a
:class:`Quant`: the scheme record, its sizes and flags, and the modules it leaves alone. Every key is checked; a
config that contradicts itself is refused naming the key, an unknown ``quant_method`` by name.

The keys read, per method (as each method's config class in transformers 5.24 ``utils/quantization_config.py``
names them):

* ``fp8``: ``weight_block_size`` ([rows, cols] or null for one scale per tensor), ``activation_scheme``
  (dynamic | static), ``modules_to_not_convert``;
* ``fbgemm_fp8``, ``mxfp4``: ``modules_to_not_convert``;
* ``gptq``: ``bits`` (2, 3, 4, 8), ``group_size`` (-1: one group), ``desc_act``, ``sym``, ``modules_to_not_convert``;
  ``checkpoint_format`` gptq (v1 and gptq_v2 store the same tensors);
* ``awq``: ``bits`` (4), ``group_size``, ``version`` gemm (gemv and exllama layouts are refused by name),
  ``modules_to_not_convert``;
* ``bitsandbytes``: ``load_in_4bit`` / ``load_in_8bit``, ``bnb_4bit_quant_type`` (nf4, fp4),
  ``bnb_4bit_use_double_quant``, ``llm_int8_skip_modules``;
* ``compressed-tensors``: ``format`` (pack-quantized, float-quantized, naive-quantized, nvfp4-pack-quantized,
  mxfp4-pack-quantized),
  ``config_groups`` (one group: ``targets`` ["Linear"], ``weights`` {num_bits, type, strategy, group_size,
  block_structure, symmetric}, ``input_activations`` {dynamic}), ``ignore`` (names and ``re:`` patterns);
* MLX's ``quantization``: ``group_size``, ``bits``, ``mode`` (affine), and per-module overrides (a module path ->
  {group_size, bits}, or false: left unquantised).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from ..errors import LlmcountError
from ..files import short
from .schemes import BY_NAME, Scheme

METHODS = ("fp8", "fbgemm_fp8", "mxfp4", "gptq", "awq", "bitsandbytes", "compressed-tensors", "mlx")
"""The quant_method values read; any other is refused by name."""

SCALE_DTYPES = {"bfloat16": "BF16", "float16": "F16", "float32": "F32", "bf16": "BF16", "fp16": "F16", "fp32": "F32"}


@dataclass(frozen=True)
class Quant:
    """A scheme with the sizes and flags one config gives it."""

    scheme: Scheme
    sizes: Mapping[str, int]
    flags: frozenset[str] = frozenset()  # asym, static
    skip: tuple[str, ...] = ()  # module names or globs (modules_to_not_convert, llm_int8_skip_modules)
    ignore: tuple[str, ...] = ()  # compressed-tensors' ignore: names and re: patterns
    overrides: Mapping[str, Any] = field(default_factory=dict)  # MLX per-module {bits, group_size} or False
    scale_dtype: str | None = None  # a safetensors code; None: the checkpoint dtype
    strategy: str = ""  # compressed-tensors: group, channel, tensor, block, tensor_group
    default_skips: bool = True  # the method adds its own skips (lm_head) to the config's
    skips_always: bool = False  # ... even when the config lists its own (transformers' AWQ quantiser)
    listed: bool = False  # the config gives its skip list, even an empty one (then the method adds no skips)
    words: str = ""  # the scheme as the config sets it, for output
    words_zh: str = ""  # the same in Chinese, for the zh write-up (empty: ``words``)
    stated: bool = True  # the skip lists are a config's (False: --quant's own, not worth a warning)

    @property
    def name(self) -> str:
        return self.scheme.name

    @property
    def own_skips(self) -> bool:
        """Whether the method's own skips (get_keys_to_not_convert: the LM head, tied modules, the last parameter)
        apply to this config: when it gives no skip list (a missing or null key; an empty list is a list, which
        leaves the head to be converted: ``get_modules_to_not_convert`` tests ``skip_modules is None``,
        quantizers/base.py 5.24.0), or always for AWQ."""
        return self.default_skips and (self.skips_always or not self.listed)

    @property
    def label(self) -> str:
        return self.words or self.scheme.name

    @property
    def label_zh(self) -> str:
        return self.words_zh or self.label

    def skipped(self, module: str) -> bool:
        """Whether the config leaves the module ``module`` (``model.layers.0.self_attn.q_proj``) unquantised: a
        ``modules_to_not_convert`` entry matches as transformers 5.24's ``should_convert_module``
        (quantizers/quantizers_utils.py) matches it: a regex from the start up to a module boundary, or a suffix;
        compressed-tensors' ``ignore`` by name (a suffix at a module boundary) or ``re:`` pattern (compressed-tensors
        0.20.0 utils/match.py); MLX's per-module ``false``. Plain names are looked up in sets, patterns compiled
        once (:attr:`_matchers`)."""
        literal, patterns, names, regexes = self._matchers
        parts = module.split(".")
        if literal:  # names without a dot (a dot makes an entry a pattern): a suffix, or the first part of the name
            if len(literal) <= 32:
                if any(name and module.endswith(name) for name in literal):
                    return True
            elif literal & {module[i:] for i in range(len(module))}:
                return True
            if parts[0] in literal:
                return True
        if any(p.match(module) for p in patterns):
            return True
        if names and any(".".join(parts[i:]) in names for i in range(len(parts))):
            return True
        if any(r.match(module) for r in regexes):
            return True
        return self.overrides.get(module, True) is False

    def unmatched(self, modules: frozenset[str]) -> tuple[str, ...]:
        """The entries of ``modules_to_not_convert`` (or ``llm_int8_skip_modules``) and ``ignore`` that match none
        of ``modules`` (the model's full module names), as :meth:`skipped` matches them, in the config's order."""
        if not (self.skip or self.ignore):
            return ()
        heads: set[str] = set()
        tails: set[str] = set()
        for module in modules:
            parts = module.split(".")
            heads.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            tails.update(".".join(parts[i:]) for i in range(len(parts)))
        out = []
        ends: set[str] = set()  # every character suffix of every name, made when an entry needs it
        compiled = iter(self._matchers[1])  # one boundary pattern per entry with regex characters, in order
        for entry in self.skip:
            pattern = next(compiled) if _META.search(entry) else None
            if not ends and entry not in heads and entry not in tails:
                ends = {m[i:] for m in modules for i in range(len(m))}
            hit = entry in heads or entry in tails or entry in ends  # a prefix, a suffix
            if not hit and pattern is not None:  # a regex from the start up to a module boundary
                hit = any(pattern.match(m) for m in modules)
            if not hit:
                out.append(entry)
        for entry in self.ignore:
            if entry.startswith("re:"):
                pattern = re.compile(entry[3:])
                hit = any(pattern.match(m) for m in modules)
            else:
                hit = entry in tails
            if not hit:
                out.append(entry)
        return tuple(out)

    @cached_property
    def _matchers(self) -> tuple[frozenset[str], tuple, frozenset[str], tuple]:
        literal = frozenset(p for p in self.skip if not _META.search(p))
        patterns = tuple(re.compile(rf"(?:{p}){_BOUNDARY}") for p in self.skip if _META.search(p))
        patterns += tuple(re.compile(re.escape(p) + "$") for p in self.skip if _META.search(p))  # as a suffix
        names = frozenset(p for p in self.ignore if not p.startswith("re:"))
        regexes = tuple(re.compile(p[3:]) for p in self.ignore if p.startswith("re:"))
        return literal, patterns, names, regexes


_META = re.compile(r"[\\^$.|?*+()\[\]{}]")
MAX_NAMES = 100_000
MAX_PATTERN = 500
_NESTED = re.compile(r"\([^)]*[*+}][^)]*\)\s*[*+{]")
"""A quantified group holding a quantifier: the shape of patterns whose matching can take exponential time."""


_BOUNDARY = r"(?:(?<=\.)|(?=\.|$))"


def _fail(where: str, key: str, why: str) -> LlmcountError:
    return LlmcountError(f"{where}: quantization_config.{key}: {why}")


def _int(raw: Mapping[str, Any], key: str, where: str, default: Any = None, choices: tuple[int, ...] = ()) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(where, key, f"must be an integer, got {value!r}")
    if choices and value not in choices:
        raise _fail(where, key, f"{value} is not one of {', '.join(map(str, choices))}")
    return value


def _group(raw: Mapping[str, Any], key: str, where: str, default: int = 128) -> int:
    value = _int(raw, key, where, default)
    if value == 0 or value < -1:
        raise _fail(where, key, f"group size {value} is neither a positive integer nor -1 (one group per row)")
    return value


def _names(raw: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    """A list of module names or patterns, bounded and checked: each a pattern that compiles, of at most
    :data:`MAX_PATTERN` characters, without a quantified group that holds a quantifier."""
    value = raw.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise _fail(where, key, "must be a list of module names")
    if len(value) > MAX_NAMES:
        raise _fail(where, key, f"{len(value):,} entries, over the limit of {MAX_NAMES:,}")
    for entry in value:
        pattern = entry.removeprefix("re:")
        if len(pattern) > MAX_PATTERN:
            raise _fail(where, key, f"an entry of {len(pattern):,} characters, over the limit of {MAX_PATTERN}")
        if _META.search(pattern):
            if _NESTED.search(pattern):
                raise _fail(where, key, f"{short(entry)}: a repeated group that repeats inside is not read")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise _fail(where, key, f"{short(entry)} is not a regular expression: {exc}") from None
    return tuple(value)


def _listed(raw: Mapping[str, Any]) -> bool:
    """Whether the config gives ``modules_to_not_convert`` (an empty list too: transformers' quantisers then add no
    skips of their own)."""
    return raw.get("modules_to_not_convert") is not None


def _bool(raw: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise _fail(where, key, f"must be true or false, got {value!r}")
    return value


def read_quant(config: Any, where: str) -> Quant | None:
    """The quantisation a ``config.json`` declares, or None; LlmcountError naming the key for a bad one."""
    if not isinstance(config, dict):
        return None
    raw = config.get("quantization_config")
    mlx = config.get("quantization")
    if mlx is not None:  # mlx_lm writes the same table again as quantization_config, without a quant_method
        return _mlx(mlx, where)
    if raw is None and isinstance(config.get("text_config"), dict):
        raw = config["text_config"].get("quantization_config")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise LlmcountError(f"{where}: quantization_config must be an object")
    method = raw.get("quant_method")
    if method not in METHODS:
        raise _fail(
            where,
            "quant_method",
            f"{method!r} is not a scheme llmcount reads (it reads {', '.join(METHODS)}); its stored tensors are "
            "not counted as plain weights",
        )
    return _READERS[method](raw, where)


def _fp8(raw: Mapping[str, Any], where: str) -> Quant:
    block = raw.get("weight_block_size")
    flags = _activation(raw, "activation_scheme", where)
    skip = _names(raw, "modules_to_not_convert", where)
    listed = _listed(raw)
    if block is None:
        words, zh = "FP8 e4m3, one fp32 scale per tensor", "FP8 e4m3（每个张量一个 fp32 scale）"
        return Quant(BY_NAME["fp8"], {}, flags, skip, listed=listed, words=words, words_zh=zh)
    if (
        not isinstance(block, list)
        or len(block) != 2
        or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in block)
    ):
        raise _fail(where, "weight_block_size", f"must be two positive integers [rows, cols], got {block!r}")
    words = f"FP8 e4m3, fp32 scale per {block[0]}×{block[1]} block"
    zh = f"FP8 e4m3（每个 {block[0]}×{block[1]} 块一个 fp32 scale）"
    sizes = {"b0": block[0], "b1": block[1]}
    return Quant(BY_NAME["fp8-block"], sizes, flags, skip, listed=listed, words=words, words_zh=zh)


def _activation(raw: Mapping[str, Any], key: str, where: str) -> frozenset[str]:
    value = raw.get(key, "dynamic")
    if value not in ("dynamic", "static", None):
        raise _fail(where, key, f"{value!r} is neither dynamic nor static")
    return frozenset({"static"}) if value == "static" else frozenset()


def _fbgemm(raw: Mapping[str, Any], where: str) -> Quant:
    skip = _names(raw, "modules_to_not_convert", where)
    words, zh = "FP8 e4m3 (fbgemm), fp32 scale per row", "FP8 e4m3（fbgemm，每行一个 fp32 scale）"
    return Quant(BY_NAME["fbgemm-fp8"], {}, frozenset(), skip, listed=_listed(raw), words=words, words_zh=zh)


def _mxfp4(raw: Mapping[str, Any], where: str) -> Quant:
    skip = _names(raw, "modules_to_not_convert", where)
    words, zh = "MXFP4 experts (E2M1 + E8M0 scale per 32)", "MXFP4 专家（E2M1，每 32 个一个 E8M0 scale）"
    return Quant(BY_NAME["mxfp4"], {}, frozenset(), skip, listed=_listed(raw), words=words, words_zh=zh)


def _gptq(raw: Mapping[str, Any], where: str) -> Quant:
    bits = _int(raw, "bits", where, 4, (2, 3, 4, 8))
    group = _group(raw, "group_size", where)
    fmt = raw.get("checkpoint_format", "gptq")
    if fmt not in ("gptq", "gptq_v2"):
        raise _fail(where, "checkpoint_format", f"{fmt!r}: only the gptq layout is read")
    _bool(raw, "desc_act", where, False)
    _bool(raw, "sym", where, True)
    skip = _names(raw, "modules_to_not_convert", where)
    head = _bool(raw, "lm_head", where, False)
    words = f"GPTQ int{bits}, group {group if group > 0 else 'per row'}" + (", LM head quantised" if head else "")
    zh = (
        f"GPTQ int{bits}（"
        + (f"组大小 {group}" if group > 0 else "每行一组")
        + ("，LM head 也量化" if head else "")
        + "）"
    )
    # transformers 5.24's GPTQConfig has no modules_to_not_convert: optimum 2.3.0 gptq/quantizer.py convert_model
    # converts the layers inside the decoder blocks only (get_layers(model, prefix=get_block_name_with_pattern(model)),
    # gptq/utils.py), so the LM head and the embeddings stay as they are whatever the list says, an empty one included;
    # GPTQModel's own ``lm_head: true`` is the one way a GPTQ checkpoint stores its head quantised.
    return Quant(
        BY_NAME["gptq"],
        {"bits": bits, "g": group},
        frozenset(),
        skip,
        default_skips=not head,
        skips_always=True,
        listed=bool(skip),
        words=words,
        words_zh=zh,
    )


def _awq(raw: Mapping[str, Any], where: str) -> Quant:
    bits = _int(raw, "bits", where, 4, (4,))
    group = _group(raw, "group_size", where)
    if group == -1:
        raise _fail(where, "group_size", "-1: AWQ's GEMM layout needs a group size")
    version = str(raw.get("version", "gemm")).lower()
    if version != "gemm":
        raise _fail(where, "version", f"{version!r}: only AWQ's gemm layout is read (gemv and exllama are not)")
    skip = _names(raw, "modules_to_not_convert", where)
    words, zh = f"AWQ int{bits} (GEMM), group {group}", f"AWQ int{bits}（GEMM，组大小 {group}）"
    # quantizer_awq.py (transformers 5.24.0) calls get_modules_to_not_convert with add_default_skips=True: the head
    # (and tied blocks, the last parameter) stay unquantised even when modules_to_not_convert is given
    sizes = {"bits": bits, "g": group}
    return Quant(BY_NAME["awq"], sizes, frozenset(), skip, skips_always=True, words=words, words_zh=zh)


def _bnb(raw: Mapping[str, Any], where: str) -> Quant:
    four = _bool(raw, "load_in_4bit", where, False)
    eight = _bool(raw, "load_in_8bit", where, False)
    if four == eight:
        raise _fail(where, "load_in_4bit", "exactly one of load_in_4bit and load_in_8bit must be true")
    skip = _names(raw, "llm_int8_skip_modules", where)
    listed = raw.get("llm_int8_skip_modules") is not None
    if eight:
        return Quant(BY_NAME["bnb-int8"], {}, frozenset(), skip, listed=listed, words="bitsandbytes int8")
    kind = raw.get("bnb_4bit_quant_type", "fp4")
    if kind not in ("nf4", "fp4"):
        raise _fail(where, "bnb_4bit_quant_type", f"{kind!r} is neither nf4 nor fp4")
    double = _bool(raw, "bnb_4bit_use_double_quant", where, False)
    scheme = BY_NAME["bnb-nf4-double" if double else "bnb-nf4"]
    words = f"bitsandbytes {kind}" + (" with double quantisation" if double else "")
    zh = f"bitsandbytes {kind}" + ("（双重量化）" if double else "")
    return Quant(scheme, {"bs": 64}, frozenset({kind}), skip, listed=listed, words=words, words_zh=zh)


CT_FORMATS = {"pack-quantized": "ct-pack", "float-quantized": "ct-fp8", "naive-quantized": "ct-fp8"}
CT_FORMATS["nvfp4-pack-quantized"] = "nvfp4"
CT_FORMATS["mxfp4-pack-quantized"] = "ct-mxfp4"


def _ct(raw: Mapping[str, Any], where: str) -> Quant:
    fmt = raw.get("format")
    if not isinstance(fmt, str) or fmt not in CT_FORMATS:
        raise _fail(
            where, "format", f"{fmt!r} is not a compressed-tensors format llmcount reads ({', '.join(CT_FORMATS)})"
        )
    groups = raw.get("config_groups")
    if not isinstance(groups, dict) or len(groups) != 1:
        raise _fail(where, "config_groups", "must hold exactly one group (several schemes in one model are not read)")
    ((name, group),) = groups.items()
    key = f"config_groups.{name}"
    if not isinstance(group, dict) or not isinstance(group.get("weights"), dict):
        raise _fail(where, f"{key}.weights", "must be an object")
    targets = group.get("targets", ["Linear"])
    if targets != ["Linear"]:
        raise _fail(where, f"{key}.targets", f'{targets!r}: only ["Linear"] is read')
    weights = group["weights"]
    bits = _int(weights, "num_bits", where, 8, (4, 8))
    strategy = weights.get("strategy", "tensor")
    symmetric = _bool(weights, "symmetric", where, True)
    activations = group.get("input_activations")
    static = isinstance(activations, dict) and activations.get("dynamic") is False
    flags = frozenset({"static"} if static else ()) | frozenset({"asym"} if not symmetric else ())
    ignore = _names(raw, "ignore", where)
    scale = SCALE_DTYPES.get(str(weights.get("scale_dtype") or "").removeprefix("torch."))
    scheme = BY_NAME[CT_FORMATS[fmt]]
    sizes: dict[str, int] = {"bits": bits}
    if scheme.name == "ct-pack":
        if bits != 4 and bits != 8:
            raise _fail(where, f"{key}.weights.num_bits", f"{bits}: pack-quantized packs 4 or 8 bits")
        sizes["p"] = 32 // bits
        if strategy == "group":
            sizes["g"] = _group(weights, "group_size", where)
        elif strategy != "channel":
            raise _fail(where, f"{key}.weights.strategy", f"{strategy!r}: pack-quantized reads group or channel")
        words = f"compressed-tensors int{bits} pack-quantized, {strategy}" + (
            f" {sizes['g']}" if strategy == "group" else ""
        )
        zh = (
            f"compressed-tensors int{bits} pack-quantized（"
            + (f"组大小 {sizes['g']}" if strategy == "group" else "每个输出通道一个 scale")
            + "）"
        )
    elif scheme.name == "ct-mxfp4":
        if bits != 4 or weights.get("type") != "float" or weights.get("group_size") != 32 or strategy != "group":
            raise _fail(
                where, f"{key}.weights", "mxfp4-pack-quantized is 4-bit float weights in groups of 32 (strategy group)"
            )
        if flags:
            raise _fail(where, f"{key}", "mxfp4-pack-quantized with zero points or static input scales is not read")
        sizes["g"] = 32
        scale = "U8"
        words = "compressed-tensors MXFP4 (FP4 + E8M0 scale per 32)"
        zh = "compressed-tensors MXFP4（FP4，每 32 个一个 E8M0 scale）"
    elif scheme.name == "nvfp4":
        if bits != 4:
            raise _fail(where, f"{key}.weights.num_bits", f"{bits} with format {fmt}: NVFP4 is 4-bit")
        sizes["g"] = 16
        words = "NVFP4 (FP4 + FP8 scale per 16 + fp32 global scale)"
        zh = "NVFP4（FP4，每 16 个一个 FP8 scale，外加一个 fp32 全局 scale）"
    else:
        if bits != 8 or weights.get("type", "float") != "float":
            raise _fail(where, f"{key}.weights.num_bits", f"{bits}-bit {weights.get('type')!r} with format {fmt}")
        if strategy == "block":
            block = weights.get("block_structure")
            if not (isinstance(block, list) and len(block) == 2 and all(type(x) is int and x > 0 for x in block)):
                raise _fail(where, f"{key}.weights.block_structure", f"must be two positive integers, got {block!r}")
            sizes["b0"], sizes["b1"] = block
        elif strategy not in ("tensor", "channel"):
            raise _fail(where, f"{key}.weights.strategy", f"{strategy!r}: float-quantized reads tensor, channel, block")
        words = f"compressed-tensors FP8 e4m3, {strategy} scales"
        zh = (
            "compressed-tensors FP8 e4m3（"
            + {"tensor": "每个张量", "channel": "每个输出通道", "block": "每块"}[strategy]
            + "一个 scale）"
        )
    return Quant(
        scheme,
        sizes,
        flags,
        (),
        ignore,
        scale_dtype=scale,
        strategy=strategy,
        default_skips=False,
        words=words,
        words_zh=zh,
    )


def _mlx_sizes(raw: Mapping[str, Any], key: str, where: str) -> tuple[int, int]:
    """MLX's group size and bits (mlx.core.quantize's affine mode: groups of 32, 64 or 128 in its kernels; any
    positive size is read), refused naming ``key`` when they are no positive integer or no bit width MLX packs."""
    group = raw.get("group_size", 64)
    bits = raw.get("bits", 4)
    if isinstance(group, bool) or not isinstance(group, int) or group <= 0:
        raise LlmcountError(f"{where}: {key}.group_size: must be a positive integer, got {group!r}")
    if isinstance(bits, bool) or bits not in (2, 3, 4, 5, 6, 8):
        raise LlmcountError(f"{where}: {key}.bits: {bits!r} is not one of 2, 3, 4, 5, 6, 8")
    return group, bits


def _mlx(raw: Any, where: str) -> Quant:
    if not isinstance(raw, dict):
        raise LlmcountError(f"{where}: quantization must be an object")
    group, bits = _mlx_sizes(raw, "quantization", where)
    mode = raw.get("mode", "affine")
    if mode != "affine":
        raise LlmcountError(f"{where}: quantization.mode: {mode!r}: only MLX's affine mode is read")
    overrides = {}
    for key, value in raw.items():
        if key in ("group_size", "bits", "mode", "quant_method"):
            continue
        if value is False or (isinstance(value, dict) and set(value) <= {"group_size", "bits", "mode"}):
            if isinstance(value, dict) and value.get("mode", "affine") != "affine":
                raise LlmcountError(f"{where}: quantization.{key}.mode: {value['mode']!r}: only affine is read")
            if isinstance(value, dict):
                _mlx_sizes({"group_size": group, "bits": bits, **value}, f"quantization.{key}", where)
            overrides[key] = value
        else:
            raise LlmcountError(
                f"{where}: quantization.{key}: a per-module entry must be {{group_size, bits}} or false"
            )
    words, zh = f"MLX {bits}-bit, group {group}", f"MLX {bits} 位（组大小 {group}）"
    sizes = {"bits": bits, "g": group}
    return Quant(BY_NAME["mlx"], sizes, frozenset(), overrides=overrides, default_skips=False, words=words, words_zh=zh)


_READERS = {
    "fp8": _fp8,
    "fbgemm_fp8": _fbgemm,
    "mxfp4": _mxfp4,
    "gptq": _gptq,
    "awq": _awq,
    "bitsandbytes": _bnb,
    "compressed-tensors": _ct,
    "mlx": _mlx,
}


def from_options(name: str, bits: int | None, group_size: int | None, where: str = "--quant") -> Quant:
    """The scheme ``memory --quant NAME [--bits B] [--group-size G]`` names, with its default sizes."""
    raw: dict[str, Any]
    if name in ("fp8-block", "fp8"):
        raw = {"quant_method": "fp8", "weight_block_size": [128, 128] if name == "fp8-block" else None}
    elif name == "fbgemm-fp8":
        raw = {"quant_method": "fbgemm_fp8"}
    elif name == "mxfp4":
        raw = {"quant_method": "mxfp4"}
    elif name in ("gptq", "awq"):
        raw = {"quant_method": name, "bits": bits or 4, "group_size": group_size or 128}
    elif name in ("nf4", "fp4", "nf4-double", "bnb-nf4"):
        kind = "fp4" if name == "fp4" else "nf4"
        raw = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": kind}
        raw["bnb_4bit_use_double_quant"] = name == "nf4-double"
    elif name in ("int8", "bnb-int8"):
        raw = {"quant_method": "bitsandbytes", "load_in_8bit": True}
    elif name == "nvfp4":
        weights = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}
        raw = {
            "quant_method": "compressed-tensors",
            "format": "nvfp4-pack-quantized",
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}},
            "ignore": ["lm_head"],
        }
    elif name == "mlx":
        return _mlx({"bits": bits or 4, "group_size": group_size or 64}, where)
    else:
        raise LlmcountError(
            f"{where}: unknown scheme {name!r}; choose one of {', '.join(OPTION_NAMES)}, or a llama.cpp file type "
            "(q4_k_m, q8_0, ...)"
        )
    if bits is not None and name not in ("gptq", "awq", "mlx"):
        raise LlmcountError(f"--bits: the scheme {name} has no choice of bits")
    quant = read_quant({"quantization_config": raw}, where)
    assert quant is not None
    return replace(quant, stated=False)


OPTION_NAMES = (
    "fp8-block",
    "fp8",
    "fbgemm-fp8",
    "mxfp4",
    "gptq",
    "awq",
    "nf4",
    "nf4-double",
    "fp4",
    "int8",
    "nvfp4",
    "mlx",
)
