"""The KV cache as serving engines allocate it, beside transformers' exact cache (docs/engines.md).

Each engine is one record, ``<name>.toml`` beside this file: its version and commit, the source files its rules are
transcribed from, its block or padding size, its KV dtypes and which layers it runs as sliding. The rule of each
kind of allocation is a function below (``paged``: vLLM's blocks per request; ``pool``: SGLang's token pool;
``cells``: llama.cpp's padded context; ``blocks``: TensorRT-LLM's KVCacheManager; ``packed``: LMDeploy's
packed block pool). :func:`kv_cache` gives the bytes
of B sequences of S tokens per GPU under tensor parallelism ``tp``, per kind of layer, beside transformers' figure
for the same layers, and says what differs, term by term; :func:`kv_cache_bytes` is its total.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import LlmcountError, UnknownName

TRANSFORMERS = "transformers"
HERE = Path(__file__).parent
LIMIT = 2**32 - 1  # tokens: a context, a batch or a scheduled-token count beyond llama.cpp's uint32 n_ctx is absurd


@dataclass(frozen=True)
class Engine:
    """One engine's record (``<name>.toml``)."""

    name: str
    title: str
    version: str
    commit: str
    sources: tuple[str, ...]
    allocation: str  # "exact" (transformers), "paged", "pool", "cells", "blocks" or "packed"
    dtypes: Mapping[str, Any]
    default_dtype: str
    needs_layer_types: tuple[str, ...] = ()
    follows: tuple[str, ...] = ()  # model types whose sliding layers the engine runs as transformers' config marks
    pooled: tuple[str, ...] = ()  # model types whose sliding layers get a pool of their own (refused: not per request)
    full_note: str = ""  # why the engine gives sliding layers every token ({model_type}), when it says so
    ignored: tuple[str, ...] = ()
    refused: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)  # block_size, pad, n_ubatch ...
    hybrid: Mapping[str, Any] = field(default_factory=dict)  # how state layers' pages meet attention pages
    states: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # model type -> its state calculator
    no_longer: Mapping[str, Any] = field(default_factory=dict)  # model type -> [architecture, last version]
    context: Mapping[str, Any] = field(default_factory=dict)  # how the engine derives the longest context
    swa: Mapping[str, Any] = field(default_factory=dict)  # a pool of the sliding layers' own: its ratio, per model type
    page_sizes: Mapping[str, int] = field(default_factory=dict)  # attention backend -> the page size it resolves to
    page_sizes_not_mla: Mapping[str, int] = field(default_factory=dict)  # ... where an MLA model keeps another
    backends_for: Mapping[str, str] = field(default_factory=dict)  # attention backend -> "mla" or "not_mla" only
    refused_keys: Mapping[str, Any] = field(default_factory=dict)  # model type -> config keys not transcribed when set
    quant_policies: Mapping[str, Any] = field(default_factory=dict)  # LMDeploy: quant_policy -> its K/V block layout
    builders: tuple[str, ...] = ()  # model types whose cache shape the engine's config builder gives is transcribed
    memory_share: Mapping[str, Any] = field(default_factory=dict)  # the engine's share of a GPU: option, of, rounding
    weights: Mapping[str, Any] = field(default_factory=dict)  # vocabulary rows per tp rank (engines/weights.py)
    pipeline: Mapping[str, Any] = field(default_factory=dict)  # how the layers split over pipeline stages

    @property
    def cited(self) -> str:
        return f"{self.title} {self.version} (commit {self.commit})"


TRANSFORMERS_ENGINE = Engine(
    TRANSFORMERS,
    "transformers",
    "5.24.0",
    "the installed release",
    ("the model's own cache classes (DynamicLayer, DynamicSlidingWindowLayer): llmcount's exact KV cache",),
    "exact",
    {},
    "",
)


OWN_TABLES = {
    "sliding",
    "refused",
    "hybrid",
    "states",
    "no_longer",
    "context",
    "swa",
    "attention_backends",
    "attention_backends_not_mla",
    "refused_keys",
    "quant_policies",
    "attention_backends_for",
    "memory_share",
    "weights",
    "pipeline",
}


def _load(name: str) -> Engine:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    with open(HERE / f"{name}.toml", "rb") as f:
        data = tomllib.load(f)
    known = {"name", "title", "version", "commit", "sources", "allocation", "dtypes", "default_dtype"}
    return Engine(
        name=data["name"],
        title=data["title"],
        version=data["version"],
        commit=data["commit"],
        sources=tuple(data["sources"]),
        allocation=data["allocation"],
        dtypes=data["dtypes"],
        default_dtype=data["default_dtype"],
        needs_layer_types=tuple(data.get("sliding", {}).get("needs_layer_types", ())),
        follows=tuple(data.get("sliding", {}).get("follows", ())),
        pooled=tuple(data.get("sliding", {}).get("pooled", ())),
        full_note=data.get("sliding", {}).get("full_note", ""),
        ignored=tuple(data.get("sliding", {}).get("ignored", ())),
        refused=data.get("refused", {}),
        settings={k: v for k, v in data.items() if k not in known | OWN_TABLES},
        hybrid=data.get("hybrid", {}),
        states=data.get("states", {}),
        no_longer=data.get("no_longer", {}),
        context=data.get("context", {}),
        swa=data.get("swa", {}),
        page_sizes=data.get("attention_backends", {}),
        page_sizes_not_mla=data.get("attention_backends_not_mla", {}),
        backends_for=data.get("attention_backends_for", {}),
        refused_keys=data.get("refused_keys", {}),
        quant_policies=data.get("quant_policies", {}),
        builders=tuple(data.get("sliding", {}).get("builders", ())),
        memory_share=data.get("memory_share", {}),
        weights=data.get("weights", {}),
        pipeline=data.get("pipeline", {}),
    )


NAMES = (TRANSFORMERS, "vllm", "sglang", "llama.cpp", "tensorrt-llm", "lmdeploy")
ALIASES = {
    "hf": TRANSFORMERS,
    "llamacpp": "llama.cpp",
    "llama-cpp": "llama.cpp",
    "llama_cpp": "llama.cpp",
    "trtllm": "tensorrt-llm",
    "trt-llm": "tensorrt-llm",
    "tensorrt_llm": "tensorrt-llm",
    "tensorrtllm": "tensorrt-llm",
    "lmdeploy-pytorch": "lmdeploy",
    "lmdeploy_pytorch": "lmdeploy",
}


NOT_TRANSCRIBED = {
    "turbomind": (
        "LMDeploy's TurboMind engine keeps its cache in C++ (src/turbomind/models/llama: SequenceManager, "
        "BlockManager), not transcribed: its Python side (lmdeploy/turbomind/models/gpt_oss.py) gives each sliding "
        "layer window_size = sliding_window, but which blocks the C++ manager frees outside the window, and whether "
        "it holds a window per layer or the whole context, is not read here; --engine lmdeploy is its PyTorch engine"
    ),
}
"""Engines users name whose cache is refused by name, with the reason."""
NOT_TRANSCRIBED["lmdeploy-turbomind"] = NOT_TRANSCRIBED["lmdeploy_turbomind"] = NOT_TRANSCRIBED["turbomind"]


@cache
def engine(name: str) -> Engine:
    """The engine called ``name`` (case-insensitive); LlmcountError with the closest names otherwise."""
    key = str(name).strip().lower()
    key = ALIASES.get(key, key)
    if key in NOT_TRANSCRIBED:
        raise LlmcountError(f"--engine {key}: {NOT_TRANSCRIBED[key]}")
    if key == TRANSFORMERS:
        return TRANSFORMERS_ENGINE
    if key not in NAMES:
        close = difflib.get_close_matches(key, NAMES, n=2, cutoff=0.4)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise UnknownName(f"--engine: unknown engine {str(name)[:60]!r}{hint} (choices: {', '.join(NAMES)})")
    return _load(key)


def check(engine_name: str, kv_dtype: str | None = None) -> Engine:
    """The engine called ``engine_name``, with ``kv_dtype`` one of its cache dtypes; refused by name before any
    model is read."""
    eng = engine(engine_name)
    if kv_dtype is not None and eng.name != TRANSFORMERS and str(kv_dtype).strip().lower() not in eng.dtypes:
        choices = ", ".join(eng.dtypes)
        raise LlmcountError(
            f"--kv-dtype: {eng.title} has no KV cache dtype {str(kv_dtype)[:40]!r} (choices: {choices})"
        )
    return eng


@dataclass(frozen=True)
class KindBytes:
    """One kind of layer as the engine keeps it: tokens (cells, block slots) per sequence per layer and bytes for
    B sequences over the layers, beside transformers' tokens and bytes for the same layers."""

    kind: str  # transformers' kind of the layers (full_attention, sliding_attention ...)
    engine_kind: str  # how the engine runs them (a sliding layer the engine runs full: full_attention)
    layers: int
    tokens: int  # token slots per sequence per layer the engine keeps
    bytes: int
    rule: str
    transformers_tokens: int
    transformers_bytes: int
    token_bytes: int = 0  # the engine's bytes of one token (cell) in one layer
    page: int = 0  # vLLM: bytes of one block of one layer (its page, padded to the attention page for a state layer)
    blocks: int = 0  # vLLM: blocks (pages) per sequence per layer
    window: int = 0  # a sliding (chunked) layer the engine runs with its window (chunk): W (C) as the engine takes it
    state: int = 0  # a state layer: the bytes of one sequence's states in one layer on one rank, unpadded


@dataclass(frozen=True)
class EngineKV:
    """The KV cache of B sequences of S tokens as one engine keeps it, per GPU at tensor parallelism ``tp``."""

    engine: Engine
    seq: int
    batch: int
    kv_dtype: str
    tp: int
    kinds: tuple[KindBytes, ...]
    settings: Mapping[str, int]  # the engine settings the figure used (block_size, max_num_batched_tokens, ctx ...)
    transformers_kv_dtype: str

    @property
    def bytes(self) -> int:
        return sum(k.bytes for k in self.kinds)

    @property
    def transformers_bytes(self) -> int:
        return sum(k.transformers_bytes for k in self.kinds)

    def differences(self) -> list[str]:
        """What makes the engine's figure differ from transformers', one line per kind that differs."""
        out = []
        for k in self.kinds:
            if not k.layers and not k.transformers_bytes and k.bytes:  # a table beside the layers' caches
                out.append(
                    f"{k.kind} (a table, not a layer): {self.engine.title} {k.bytes:,} bytes, transformers none: "
                    f"{k.rule}"
                )
                continue
            if k.bytes != k.transformers_bytes:
                ratio = f" ({k.bytes / k.transformers_bytes:.6g}×)" if k.transformers_bytes else ""
                terms = []
                if k.tokens != k.transformers_tokens:
                    terms.append(f"tokens kept per sequence {k.tokens:,} against {k.transformers_tokens:,}")
                spent = self.batch * k.layers * k.transformers_tokens
                theirs = k.transformers_bytes / spent if spent else 0
                if k.token_bytes and k.token_bytes != theirs:
                    terms.append(f"bytes per token per layer {k.token_bytes:,} against {theirs:,.6g}")
                said = f" ({'; '.join(terms)})" if terms else ""
                out.append(
                    f"{k.kind} ({k.layers} layers): {self.engine.title} {k.bytes:,} bytes, transformers "
                    f"{k.transformers_bytes:,}{ratio}{said}: {k.rule}"
                )
        return out


def check_count(option: str, value: int) -> int:
    """A token or batch count a user gave: positive and not absurd; LlmcountError naming the option otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LlmcountError(f"{option}: must be a positive integer, got {value!r}")
    if value > LIMIT:
        raise LlmcountError(f"{option}: {value:,} is beyond any engine's limit ({LIMIT:,}, llama.cpp's uint32 n_ctx)")
    return value


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _pad(a: int, b: int) -> int:
    return _cdiv(a, b) * b


def element_bytes(eng: Engine, kv_dtype: str, model_dtype: str) -> tuple[str, Any]:
    """The engine's name of the KV dtype and its size: bytes per element (vLLM, SGLang; ``auto``: the model's
    dtype) or a ggml type (llama.cpp); LlmcountError naming the engine's choices otherwise."""
    name = str(kv_dtype).strip().lower()
    if name not in eng.dtypes:
        raise LlmcountError(
            f"--kv-dtype: {eng.title} has no KV cache dtype {str(kv_dtype)[:40]!r} (choices: {', '.join(eng.dtypes)})"
        )
    size = eng.dtypes[name]
    if eng.allocation == "cells":
        from ..gguf_file import gguf_package

        gguf = gguf_package(f"--engine {eng.name} --kv-dtype {name}")
        block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[size]]
        return name, (block, type_size)
    if eng.allocation == "packed":  # a quant_policy: its K/V layout
        label = f"{name} (quant_policy {size})" if name != str(size) else f"quant_policy {size}"
        return label, eng.quant_policies[str(size)]
    if size == 0:  # auto: the model's dtype
        from ..dtypes import BITS

        return f"auto ({model_dtype})", BITS[model_dtype] // 8
    if size == "nvfp4":  # 4 bits an element and one FP8 scale per 16 elements: 9/16 of a byte
        from fractions import Fraction

        return name, Fraction(9, 16)
    return name, size


TRANSFORMERS_DTYPES = {"f32": "fp32", "f16": "fp16", "bf16": "bf16", "bfloat16": "bf16", "float16": "fp16"}


def transformers_dtype(kv_dtype: str | None, model_dtype: str) -> str | None:
    """The dtype transformers' cache is compared in: the engine's dtype where llmcount has it (fp8, bf16, f16 ...),
    else the model's (a ggml block type has no transformers counterpart); None: memory's own default."""
    from ..dtypes import canonical

    if kv_dtype is None:
        return None
    name = str(kv_dtype).strip().lower()
    if name in TRANSFORMERS_DTYPES:
        return TRANSFORMERS_DTYPES[name]
    if name.startswith("fp8"):
        return canonical("fp8_e5m2" if name == "fp8_e5m2" else "fp8")
    if name == "auto" or name in ("q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"):
        return model_dtype
    try:
        return canonical(name)
    except LlmcountError:
        return model_dtype


def _heads_symbol(values: Mapping[Any, int], per_token: Any, name: str) -> Any:
    return next((s for s in per_token.free_symbols if str(s) == name and s in values), None)


def _per_rank(eng: Engine, kind: Any, values: Mapping[Any, int], latent: bool, per_layer: int, tp: int) -> int:
    """Elements per token per layer on one of ``tp`` ranks: key/value heads split, replicated when fewer than tp
    (max(1, h_kv // tp) heads per rank, as vLLM's and SGLang's attention layers take them); an MLA latent whole on
    every rank."""
    if tp == 1 or latent:
        return per_layer
    heads = _heads_symbol(values, kind.per_token, "h_kv") or _heads_symbol(values, kind.per_token, "h")
    if heads is None:
        raise LlmcountError(f"--tp: the {kind.kind} cache of this family does not name its key/value heads")
    count = values[heads]
    if count % tp and tp % count:
        raise LlmcountError(f"--tp {tp} does not divide the {count} key/value heads ({heads}), nor they it")
    return per_layer // count * max(1, count // tp)


def kv_cache(
    engine_name: str,
    model: Any,
    seq: int,
    batch: int = 1,
    kv_dtype: str | None = None,
    dtype: str = "bf16",
    tp: int = 1,
    max_num_batched_tokens: int | None = None,
    ctx: int | None = None,
    attention_backend: str | None = None,
    pp: int = 1,
) -> EngineKV:
    """The KV cache of ``batch`` sequences of ``seq`` tokens as ``engine_name`` keeps it, per GPU at ``tp``, for a
    model read by :func:`llmcount.sources.load` whose weights are in ``dtype``. ``kv_dtype``: the engine's name
    of the cache dtype (default: the engine's own default). ``max_num_batched_tokens`` (vLLM) and ``ctx``
    (llama.cpp: the context, default B·S) override the engine's settings; ``attention_backend`` (SGLang) sets the
    page size the engine resolves for that backend. ``pp``: the pipeline stages, which set how many scheduled steps vLLM
    keeps in flight (the figure stays the whole model's: :func:`stage_bytes` gives one stage's)."""
    from ..dtypes import BITS, canonical
    from ..formulas import memory as mem
    from ..formulas.derivation import evaluate_int
    from ..formulas.symbols import B, S

    eng = engine(engine_name)
    seq, batch, tp = check_count("--seq", seq), check_count("--batch", batch), check_count("--tp", tp)
    if max_num_batched_tokens is not None:
        check_count("--max-num-batched-tokens", max_num_batched_tokens)
        if "max_num_batched_tokens" not in eng.settings:
            raise LlmcountError(f"--max-num-batched-tokens is a vLLM setting, not {eng.title}'s")
    if ctx is not None:
        check_count("--ctx", ctx)
        if eng.allocation != "cells":
            raise LlmcountError(f"--ctx is llama.cpp's context size, not {eng.title}'s (use --seq and --batch)")
    backend = check_backend(eng, attention_backend)
    pp = check_count("--pp", pp)
    if pp > 1 and "pp" in eng.refused:
        raise LlmcountError(f"--pp with --engine {eng.name}: {eng.refused['pp']}")
    if tp > 1 and "tp" in eng.refused:
        raise LlmcountError(f"{eng.title}: {eng.refused['tp']}")
    model_dtype = canonical(dtype)
    model_dtype = model_dtype if BITS[model_dtype] >= 16 else "bf16"
    compared = kv_dtype if eng.name == TRANSFORMERS else transformers_dtype(kv_dtype, model_dtype)
    reference = mem.inference(model.derivation, model.values, model_dtype, compared, seq, batch)
    family = mem.beyond_family(mem.cache_family(model.derivation), seq, model.values)
    env = {**model.values, S: seq, B: 1}
    kinds = [k for k in mem.layer_kinds(family, model.values) if evaluate_int(k.layers, env, k.kind)]
    by_kind = {a.kind: a for a in reference.per_layer_kind}
    if eng.name == TRANSFORMERS:
        if tp > 1:
            raise LlmcountError("--tp: transformers' cache is one model's, on one device; name a serving engine")
        rows = tuple(
            KindBytes(a.kind, a.kind, a.layers, _tokens(k, env), a.bytes, "", _tokens(k, env), a.bytes)
            for k, a in zip(kinds, reference.per_layer_kind, strict=True)
        )
        return EngineKV(eng, seq, batch, reference.kv_dtype, tp, rows, {}, reference.kv_dtype)
    name, size = element_bytes(eng, kv_dtype or eng.default_dtype, model_dtype)
    spec = family.attention
    if spec is not None and (spec.not_run or spec.longest is not None):
        what = "the cross-attention of its decoder layers" if spec.not_run else "its attention beyond a length"
        raise LlmcountError(f"{eng.title}: {what} ({model.architecture.title}) is not transcribed")
    latent = spec is not None and spec.kv_expanded is not None
    if latent and "latent" in eng.refused:
        raise LlmcountError(f"{eng.title}: {eng.refused['latent']}")
    _check_backend_for(eng, backend, latent, model.architecture.title)
    keys = getattr(model, "keys", {}) or {}
    model_type = model.architecture.name
    settings: dict[str, Any] = {}
    if pp > 1:
        settings["pp"] = pp
    if eng.allocation == "pool":
        settings["page_size"] = _page_size(eng, backend, latent)
        if backend is not None:
            settings["attention_backend"] = backend
    if model_type in eng.no_longer:
        architecture, version = eng.no_longer[model_type]
        refusal = eng.refused["no_longer"]
        raise LlmcountError(
            f"{eng.title}: " + refusal.format(model_type=model_type, architecture=architecture, version=version)
        )
    if model_type in eng.refused_keys:
        config = getattr(model, "config", None) or {}
        config = {**config, **(config.get("text_config") or {})}
        for key in eng.refused_keys[model_type]:
            if config.get(key):
                raise LlmcountError(
                    f"{eng.title}: {model_type} with {key} = {config[key]}: how its model file caches those layers "
                    "is not transcribed"
                )
    if eng.allocation == "packed":
        _check_builder(eng, model, model_type, tp)
    states = [k for k in kinds if k.is_state]
    pages = {}
    if states and eng.allocation == "pool" and settings["page_size"] > 1:
        raise LlmcountError(
            f"{eng.title}: the Mamba state tracking of {model.architecture.title} under page_size "
            f"{settings['page_size']} (--attention-backend {backend}) is not transcribed; transcribed: page_size 1"
        )
    if states and eng.allocation == "pool":
        pages = _pool_state_pages(eng, model, model_type, kinds, states, tp, model_dtype, settings)
    elif states and eng.allocation != "cells":
        pages = _state_pages(eng, model, model_type, kinds, states, env, latent, tp, model_dtype, size, settings)
    archs = (getattr(model, "config", None) or {}).get("architectures") or []
    table = eng.swa.get(model_type)
    only = table.get("architectures") if isinstance(table, Mapping) else None
    pooled = model_type in eng.pooled and (not only or bool(set(archs) & set(only)))
    slides = [k for k in kinds if k.kind in ("sliding_attention", "chunked_attention")]
    split = None  # SGLang's hybrid-SWA split: (full pool tokens, sliding pool tokens, why the full pool is larger)
    if pooled and slides:
        if not isinstance(table, Mapping):
            raise LlmcountError(f"{eng.title}: " + eng.refused["sliding"].format(model_type=model_type))
        _check_swa_split(eng, model_type, model.values, kinds, env, evaluate_int(slides[0].layers, env, "layers"))
        _check_swa_refused(eng, model, model_type, table)
        window = evaluate_int(family.attention.window, env, "window")
        window = _swa_shapes(eng, model, model_type, table, kinds, env, window)
        split = _swa_split(eng, model_type, window, seq, batch, settings["page_size"])
    if eng.allocation in ("blocks", "packed"):
        _one_width(eng, model, kinds, env, latent, tp)
    own_window = None  # the window the engine's model file reads from the checkpoint's own keys
    shaped: dict[str, int] = {}  # kind -> elements a token a layer on one rank, from those keys
    table = eng.swa.get(model_type)
    if eng.allocation == "paged" and isinstance(table, Mapping) and "shapes" in table:
        own_window = _swa_shapes(eng, model, model_type, table, kinds, env, None)
        shaped = _shaped_widths(eng, model, table, tp)
    if any(k.kind == mem.INDEXER for k in kinds):  # named before any page arithmetic refuses it less clearly
        raise LlmcountError(f"{eng.title}: {eng.refused['indexer']}")
    unified = {}  # vLLM: a token's bytes -> the block size unify_kv_cache_spec_page_size gives its layers
    if eng.allocation == "paged" and not states:
        unified = _unified_blocks(eng, model, kinds, env, latent, tp, size, shaped)
    rows = []
    for k in kinds:
        amount = by_kind[k.kind]
        if k.is_state and eng.allocation == "cells":
            rows.append(_recurrent_row(eng, model, model_type, k, amount, batch, env))
            continue
        if k.is_state and eng.allocation == "pool":
            rows.append(_pool_state_row(k, amount, pages[k.kind], batch, env, settings))
            continue
        if k.is_state:
            rows.append(_state_row(eng, k, amount, pages[k.kind], batch, env, settings))
            continue
        if k.kind == mem.INDEXER:
            raise LlmcountError(f"{eng.title}: {eng.refused['indexer']}")
        if k.grown != 0:
            raise LlmcountError(
                f"{eng.title}: the {k.kind} layers of {model.architecture.title}: {eng.refused['cache']}"
            )
        if k.per_token_fp32 != 0:
            raise LlmcountError(f"{eng.title}: fp32 keys of the {k.kind} layers are not transcribed")
        per_layer = shaped.get(k.kind) or _per_rank(
            eng, k, model.values, latent, evaluate_int(k.per_token, env, k.kind), tp
        )
        sliding = k.kind in ("sliding_attention", "chunked_attention")
        window = evaluate_int(family.attention.window, env, "window") if sliding else None
        if sliding and own_window is not None:
            window = own_window
        why_full = ""
        if split is not None:
            layers = evaluate_int(k.layers, env, k.kind)
            tokens, nbytes, rule, token_bytes = _swa_pool(eng, split, sliding, batch, layers, per_layer, size, settings)
            if tp > 1:
                rule += f"; per GPU at tp = {tp}"
            rows.append(
                KindBytes(k.kind, k.kind, layers, tokens, nbytes, rule, _tokens(k, env), amount.bytes, token_bytes)
            )
            continue
        if sliding and (model_type in eng.ignored or "*" in eng.ignored):
            why_full = (eng.full_note or "{title} runs {model_type}'s layers without a window").format(
                title=eng.title, model_type=model_type
            )
        elif sliding and model_type in eng.needs_layer_types and keys.get("layer_types") is None:
            why_full = f"the config has no layer_types, and {eng.title} reads the window of {model_type} only from it"
        if sliding and not why_full and model_type not in eng.follows + eng.needs_layer_types:
            raise LlmcountError(
                f"{eng.title}: which layers its model file for {model_type} runs with a window (and which window) is "
                f"not transcribed; transcribed: {', '.join(eng.follows + eng.needs_layer_types + eng.ignored)}"
            )
        layers = evaluate_int(k.layers, env, k.kind)
        tf_tokens = _tokens(k, env)
        run = "full_attention" if (why_full or not sliding) else k.kind
        rule_args = (eng, run, window, seq, batch, layers, per_layer, size, settings)
        page = blocks = 0
        if eng.allocation == "paged":
            scaled = unified.get(per_layer * size)
            tokens, nbytes, rule, token_bytes, page, blocks = _paged(*rule_args, max_num_batched_tokens, scaled)
        elif eng.allocation == "blocks":
            tokens, nbytes, rule, token_bytes = _blocks(*rule_args, latent)
        elif eng.allocation == "pool":
            tokens, nbytes, rule, token_bytes = _pool(*rule_args)
        elif eng.allocation == "packed":
            heads = 1 if latent else _rank_heads(k, model.values, tp)
            tokens, nbytes, rule, token_bytes = _packed(*rule_args, latent, heads)
        else:
            tokens, nbytes, rule, token_bytes = _cells(*rule_args, ctx, k.kind, latent)
        if why_full:
            rule = f"{why_full}: {rule}"
        if tp > 1:
            rule += f"; per GPU at tp = {tp}"
        rows.append(
            KindBytes(
                k.kind,
                run,
                layers,
                tokens,
                nbytes,
                rule,
                tf_tokens,
                amount.bytes,
                token_bytes,
                page,
                blocks,
                window if run != "full_attention" else 0,
            )
        )
    if eng.allocation == "pool":
        rows.append(_req_to_token_row(eng, seq, batch))
    if eng.allocation == "paged":
        rows = _grouped(rows, settings)
    return EngineKV(eng, seq, batch, name, tp, tuple(rows), settings, reference.kv_dtype)


def _grouped(rows: list[KindBytes], settings: dict[str, Any]) -> list[KindBytes]:
    """vLLM's KV cache groups (vllm/v1/core/kv_cache_planning.py _get_kv_cache_groups_uniform_page_size): the layers
    of each kind of spec are split into groups of G layers, G the fewest layers of a kind (the most, when that is
    under 1.5 times the fewest), the last group of a kind padded to G; a block of the shared pool holds G layers' pages
    (_get_kv_cache_bytes_per_block), so a kind of N layers takes cdiv(N, G)·G layers' memory
    (_max_memory_usage_bytes_from_groups)."""
    buckets: dict[tuple[str, int, int], int] = {}
    for k in rows:
        key = (k.engine_kind, k.token_bytes, k.tokens)
        buckets[key] = buckets.get(key, 0) + k.layers
    if len(buckets) < 2:
        return rows
    fewest, most = min(buckets.values()), max(buckets.values())
    group = most if most < fewest * 1.5 else fewest
    settings["kv_cache_group_size"] = group
    out = []
    for k in rows:
        total = buckets[(k.engine_kind, k.token_bytes, k.tokens)]
        padded = _cdiv(total, group) * group
        if padded == total:
            out.append(k)
            continue
        rule = (
            f"{k.rule}; vLLM's KV cache groups of {group} layers pad the {total} layers of this kind to {padded} "
            f"(_get_kv_cache_groups_uniform_page_size: a block of the pool holds {group} layers' pages)"
        )
        out.append(replace(k, bytes=k.bytes * padded // total, rule=rule))
    return out


def check_backend(eng: Engine, attention_backend: str | None) -> str | None:
    """The attention backend named (an engine setting of SGLang's); LlmcountError naming the choices otherwise."""
    if attention_backend is None:
        return None
    if not eng.page_sizes:
        raise LlmcountError(f"--attention-backend is an SGLang setting, not {eng.title}'s")
    name = str(attention_backend).strip().lower()
    if name not in eng.page_sizes:
        close = difflib.get_close_matches(name, list(eng.page_sizes), n=2, cutoff=0.5)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise LlmcountError(
            f"--attention-backend: the page size SGLang resolves for {str(attention_backend)[:40]!r} is not "
            f"transcribed{hint} (transcribed: {', '.join(eng.page_sizes)})"
        )
    return name


def _check_backend_for(eng: Engine, backend: str | None, latent: bool, title: str) -> None:
    """An attention backend that runs MLA only, or everything but MLA, refused by name for a model of the other kind,
    as the engine stops at startup (SGLang: layers/attention/attention_registry.py)."""
    need = eng.backends_for.get(backend or "")
    if need == "mla" and not latent:
        raise LlmcountError(
            f"--attention-backend {backend}: {eng.title} runs it for MLA models only and stops at startup otherwise "
            f"(layers/attention/attention_registry.py, flashmla_backend.py); {title} has no MLA latent cache"
        )
    if need == "not_mla" and latent:
        raise LlmcountError(
            f"--attention-backend {backend}: {eng.title} runs it for non-MLA models only and stops at startup "
            f"otherwise (layers/attention/attention_registry.py); {title} keeps an MLA latent cache"
        )


def _page_size(eng: Engine, backend: str | None, latent: bool) -> int:
    """The page size SGLang resolves: the attention backend's (arg_groups/overrides.py), else page_size's default."""
    if backend is None:
        return eng.settings["page_size"]
    if latent and backend in eng.page_sizes_not_mla:
        return eng.page_sizes_not_mla[backend]
    return eng.page_sizes[backend]


def _req_to_token_row(eng: Engine, seq: int, batch: int) -> KindBytes:
    """SGLang's ReqToTokenPool: an int32 table of (max_running_requests + 1) rows of context_len + 4 token
    locations, with --max-running-requests B and --context-length S."""
    width = seq + eng.settings["context_extra"]
    rows = batch + 1
    nbytes = rows * width * eng.settings["req_to_token_bytes"]
    rule = (
        f"ReqToTokenPool: an int32 table of max_running_requests + 1 = {rows:,} rows (row 0 padded) of context_len "
        f"+ {eng.settings['context_extra']} = {width:,} token locations, on every rank; not a KV cache, but in the "
        "memory SGLang's pools take (with --max-running-requests B and --context-length S)"
    )
    return KindBytes("req_to_token", "req_to_token", 0, width, nbytes, rule, 0, 0, eng.settings["req_to_token_bytes"])


def _state_pages(eng, model, model_type, kinds, states, env, latent, tp, model_dtype, size, settings):
    """vLLM's hybrid allocation: each state layer's page (its states on one rank) and the attention block size
    that makes an attention page hold it (:mod:`llmcount.engines.states`); per state kind (state page, the padded
    page, pages per sequence)."""
    from ..dtypes import BITS
    from ..formulas.derivation import evaluate_int
    from .states import state_page, unified_block

    what = f"{eng.title}: the {states[0].kind} layers of {model.architecture.title}"
    if eng.allocation != "paged" or not eng.hybrid:
        raise LlmcountError(f"{what}: {eng.refused['state']}")
    table = eng.states.get(model_type)
    if table is None:
        raise LlmcountError(f"{what}: {eng.refused['state']}")
    attention = [k for k in kinds if not k.is_state]
    if not attention:
        raise LlmcountError(f"{what}: {eng.refused['attention_free']}")
    if latent:
        raise LlmcountError(
            f"{what}: the alignment of MLA pages to 128-token blocks beside state layers is not transcribed"
        )
    token_bytes = {
        _per_rank(eng, k, model.values, latent, evaluate_int(k.per_token, env, k.kind), tp) * size for k in attention
    }
    if len(token_bytes) != 1:
        raise LlmcountError(f"{what}: attention layers of different widths beside state layers are not transcribed")
    (token,) = token_bytes
    config = getattr(model, "config", None) or {}
    config = {**config, **(config.get("text_config") or {}), **(getattr(model, "keys", None) or {})}
    page = state_page(table, model.values, config, tp, BITS[model_dtype] // 8)
    block = unified_block(eng.settings["block_size"], eng.hybrid["kernel_block"], token, page.bytes)
    settings["block_size"] = block
    align = eng.hybrid["mamba_cache_mode"] == "align"
    count = 2 + table["checkpoint_pages"] if align else 1
    return {k.kind: (page, block * token, count) for k in states}


def _pool_state_pages(eng, model, model_type, kinds, states, tp, model_dtype, settings):
    """SGLang's MambaPool: each state layer's conv and temporal state on one rank (Mamba2StateShape.create, in the
    dtypes of mamba2_state_dtype) and the slots B running requests need; per state kind (state page, slots)."""
    from .states import state_page

    what = f"{eng.title}: the {states[0].kind} layers of {model.architecture.title}"
    table = eng.states.get(model_type)
    if table is None:
        raise LlmcountError(f"{what}: {eng.refused['state']}")
    if not [k for k in kinds if not k.is_state]:
        raise LlmcountError(f"{what}: {eng.refused['attention_free']}")
    hybrid = eng.hybrid
    config = getattr(model, "config", None) or {}
    config = {**config, **(config.get("text_config") or {}), **(getattr(model, "keys", None) or {})}
    page = state_page({**hybrid, **table}, model.values, config, tp, 2, engine_title=eng.title)
    ratio = hybrid["radix_ratio"] + (hybrid["extra_buffer_slots"] if table.get("extra_buffer") else 0)
    settings["mamba_slots_per_request"] = ratio
    return {k.kind: (page, ratio) for k in states}


def _pool_state_row(kind, amount, page_info, batch, env, settings) -> KindBytes:
    """A state kind under SGLang: a MambaPool of max_mamba_cache_size = ratio · B slots plus one padded slot."""
    from ..formulas.derivation import evaluate_int

    page, ratio = page_info
    layers = evaluate_int(kind.layers, env, kind.kind)
    slots = ratio * batch + 1
    why = "3 for the radix cache (_calculate_mamba_ratio)"
    if ratio > 3:
        why += f" and {ratio - 3} ping-pong tracking slots (the extra_buffer strategy under the overlap schedule)"
    rule = (
        f"MambaPool: a state of {page.conv:,} conv elements in bfloat16 and {page.temporal:,} temporal elements in "
        f"{page.temporal_dtype} per rank ({page.bytes:,} bytes) in each of max_mamba_cache_size + 1 = {ratio} · B + 1 "
        f"= {slots:,} slots per layer: {ratio} slots per running request, {why}, and the padded slot 0, whatever S"
    )
    return KindBytes(
        kind.kind, kind.kind, layers, 0, layers * slots * page.bytes, rule, 0, amount.bytes, state=page.bytes
    )


def _check_swa_split(eng, model_type, values, kinds, env, sliding_layers) -> None:
    """SGLang splits some architectures' layers by a rule of its own (get_hybrid_layer_ids); refused where the
    config's layers of a window are not those."""
    from ..formulas.derivation import evaluate_int

    every = eng.swa[model_type].get("full_every")
    if not every:
        return
    total = sum(evaluate_int(k.layers, env, k.kind) for k in kinds if not k.is_state)
    if sliding_layers != total - total // every:
        raise LlmcountError(
            f"{eng.title}: {model_type}: SGLang gives the layers with (i + 1) % {every} != 0 the sliding pool "
            f"({total - total // every} of {total}); this config gives {sliding_layers} layers a window"
        )


def _check_swa_refused(eng, model, model_type, table) -> None:
    """A config key under which the engine's hybrid-SWA pools are not transcribed (``refused_if``), refused by name
    when the config gives it a value other than 0."""
    key = table.get("refused_if")
    if not key:
        return
    config = getattr(model, "config", None) or {}
    config = {**config, **(config.get("text_config") or {}), **(getattr(model, "keys", None) or {})}
    if config.get(key):
        raise LlmcountError(
            f"{eng.title}: {model_type} with {key} = {config[key]}: the pools of those layers are not transcribed"
        )


def _swa_shapes(eng, model, model_type, table, kinds, env, window) -> int:
    """Where the engine's model file reads the split, the shapes and the window from the checkpoint's own keys
    (``[swa.<model_type>] pattern``, ``shapes``, ``window_key``): each refused by name when absent or when it does not
    give the layers llmcount counts; the window the engine uses (before ``window_minus``)."""
    from ..formulas.derivation import evaluate_int

    if "shapes" not in table:
        return window
    config = getattr(model, "config", None) or {}
    config = {**config, **(config.get("text_config") or {})}
    title = f"{eng.title}: {model_type}"
    missing = [key for key in (table["pattern"], table["window_key"]) if config.get(key) is None]
    if missing:
        raise LlmcountError(f"{title}: its model file reads {missing[0]} from the checkpoint's config, which has none")
    pattern = config[table["pattern"]]
    by_kind = {k.kind: k for k in kinds if not k.is_state}
    counts = {
        "sliding_attention": sum(1 for x in pattern if x == 1),
        "full_attention": sum(1 for x in pattern if x == 0),
    }
    for kind, count in counts.items():
        have = evaluate_int(by_kind[kind].layers, env, kind) if kind in by_kind else 0
        if have != count:
            raise LlmcountError(f"{title}: {table['pattern']} gives {count} {kind} layers, the config's layers {have}")
    for kind, (heads, k_dim, v_dim) in table["shapes"].items():
        if kind not in by_kind:
            continue
        if config.get(heads) is None or config.get(k_dim) is None:
            key = heads if config.get(heads) is None else k_dim
            raise LlmcountError(f"{title}: its model file reads {key} from the checkpoint's config, which has none")
        elements = config[heads] * (config[k_dim] + (config.get(v_dim) or config[k_dim]))
        have = evaluate_int(by_kind[kind].per_token, env, kind)
        if elements != have:
            raise LlmcountError(
                f"{title}: {heads} · ({k_dim} + {v_dim}) = {elements:,} elements a token in its {kind} pool, "
                f"against {have:,} in llmcount's {kind} layers: not transcribed"
            )
    return config[table["window_key"]] + table.get("window_minus", 0)


def _swa_split(eng, model_type, window, seq, batch, page) -> tuple[int, int, str]:
    """SGLang's hybrid-SWA pools for B sequences of S tokens: the full pool holds full = B·S tokens
    (page-aligned), the sliding pool int(full · swa_full_tokens_ratio) (page-aligned), SGLang's own float product as
    pool_configurator.py computes it. validate_swa_pool_size refuses to start when the model's window + page_size
    reaches the sliding pool: below that the full pool is the smallest one SGLang starts with."""
    ratio = eng.swa["ratio"]
    own = window - eng.swa[model_type].get("window_minus", 0)

    def sliding(full: int) -> int:
        return int(full * ratio) // page * page

    full = batch * _pad(seq, page)
    why = ""
    if own + page >= sliding(full):
        least = -(-int((own + page + 1) / ratio) // page) * page  # near the least full pool; then step to it
        while own + page >= sliding(least):
            least += page
        while least > page and own + page < sliding(least - page):
            least -= page
        why = (
            f"B·S = {full:,} tokens give a sliding pool SGLang refuses to start with (validate_swa_pool_size: the "
            f"window {own:,} + page_size {page} must stay below it), so the full pool is the smallest it starts "
            f"with, {least:,} tokens; "
        )
        full = least
    return full, sliding(full), why


def _swa_pool(eng, split, sliding, batch, layers, per_layer, size, settings):
    """SGLang's hybrid-SWA pools (:func:`_swa_split`), each plus page_size padded slots: the full layers keep the
    full pool, the sliding layers the sliding pool, shared by the B sequences."""
    page, ratio = settings["page_size"], eng.swa["ratio"]
    full, swa, why = split
    if not sliding:
        rule = f"{why}the full layers' pool of {full:,} token slots plus {page} padded slot (SWAKVPool)"
        return full // batch, layers * (full + page) * per_layer * size, rule, per_layer * size
    rule = (
        f"{why}the sliding layers' own pool of int({full:,} · {ratio}) = {swa:,} token slots shared by the B "
        f"sequences, plus {page} padded slot (SWAKVPool; swa_full_tokens_ratio {ratio}; not a window per sequence)"
    )
    return swa // batch, layers * (swa + page) * per_layer * size, rule, per_layer * size


def _state_row(eng, kind, amount, page_info, batch, env, settings) -> KindBytes:
    """A state kind under vLLM: ``count`` padded pages per sequence in each layer."""
    from ..formulas.derivation import evaluate_int

    page, padded, count = page_info
    layers = evaluate_int(kind.layers, env, kind.kind)
    why = "the running state and the state at the last full block, for prefix caching (mamba_cache_mode align)"
    if count == 3:
        why += ", and one prefill checkpoint (MambaMixer2)"
    rule = (
        f"{page.calculator} state of {page.conv:,} conv and {page.temporal:,} temporal elements per rank (conv in "
        f"the model's dtype, temporal in {page.temporal_dtype}): {page.bytes:,} bytes, padded to the attention page of "
        f"{settings['block_size']:,} tokens, {padded:,} bytes; {count} pages per sequence: {why}"
    )
    nbytes = batch * layers * count * padded
    return KindBytes(kind.kind, kind.kind, layers, 0, nbytes, rule, 0, amount.bytes, 0, padded, count, 0, page.bytes)


def _recurrent_row(eng, model, model_type, kind, amount, batch, env) -> KindBytes:
    """llama.cpp's llama_memory_recurrent: mem_size = max(1, n_seq_max) = B rows per layer of an r tensor of
    n_embd_r and an s tensor of n_embd_s elements, both F32 (llama_model::create_memory); n_embd_r and n_embd_s
    from the GGUF's ssm keys as the record's ``[states.<model_type>]`` writes them (llama-hparams.cpp)."""
    from ..formulas.derivation import evaluate_int
    from ..formulas.expressions import formula

    table = eng.states.get(model_type)
    if table is None:
        raise LlmcountError(
            f"{eng.title}: the {kind.kind} layers of {model.architecture.title}: {eng.refused['state']}"
        )
    r, s = (evaluate_int(formula(table[part], f"[states.{model_type}] {part}"), model.values, part) for part in "rs")
    layers = evaluate_int(kind.layers, env, kind.kind)
    cell = (r + s) * eng.hybrid["state_bytes"]
    rule = (
        f"llama_memory_recurrent: B = {batch:,} rows (one per sequence) of n_embd_r = {r:,} and n_embd_s = {s:,} "
        f"elements in F32 ({cell:,} bytes a row) per layer, whatever S; the conv state keeps d_conv − 1 columns"
    )
    return KindBytes(kind.kind, kind.kind, layers, 0, batch * layers * cell, rule, 0, amount.bytes, state=cell)


def _tokens(kind: Any, env: Mapping[Any, int]) -> int:
    from ..formulas.derivation import evaluate_int

    return evaluate_int(kind.tokens, env, kind.kind)


def _shaped_widths(eng: Engine, model: Any, table: Mapping[str, Any], tp: int) -> dict[str, int]:
    """Elements a token a layer on one of ``tp`` ranks for each kind whose shape the model file reads from the
    checkpoint's own keys (``[swa.<model_type>.shapes]``: heads, K head_dim, V head_dim): max(1, heads // tp) heads,
    as the model file's attention takes them; a tp that does not divide the heads (nor they it) is refused."""
    config = getattr(model, "config", None) or {}
    config = {**config, **(config.get("text_config") or {})}
    out = {}
    for kind, (heads, k_dim, v_dim) in table["shapes"].items():
        count = config[heads]
        if count % tp and tp % count:
            raise LlmcountError(f"--tp {tp} does not divide the {count} key/value heads ({heads}), nor they it")
        out[kind] = max(1, count // tp) * (config[k_dim] + (config.get(v_dim) or config[k_dim]))
    return out


def _unified_blocks(eng, model, kinds, env, latent, tp, size, shaped=None) -> dict[int, int]:
    """vLLM's unify_kv_cache_spec_page_size (vllm/v1/core/kv_cache_planning.py): attention layers whose pages differ
    get block sizes scaled up by max page / their page, so every page is the largest; a token's bytes -> its block
    size (empty when all pages are equal). A page that does not divide the largest is refused by name."""
    from ..formulas.derivation import evaluate_int

    shaped = shaped or {}
    widths = {
        (shaped.get(k.kind) or _per_rank(eng, k, model.values, latent, evaluate_int(k.per_token, env, k.kind), tp))
        * size
        for k in kinds
        if not k.is_state
    }
    if len(widths) < 2:
        return {}
    block = eng.settings["block_size"]
    largest = max(widths) * block
    out = {}
    for token in widths:
        if largest % (token * block):
            raise LlmcountError(
                f"{eng.title}: attention pages of {token * block:,} and {largest:,} bytes: vLLM pads the smaller "
                "page (unify_kv_cache_spec_page_size), which is not transcribed"
            )
        out[token] = block * (largest // (token * block))
    return out


def _paged(eng, run, window, seq, batch, layers, per_layer, size, settings, batched, scaled=None):
    """vLLM: pages of ``block_size`` tokens, page_size_bytes = block_size × elements per token × dtype bytes; a
    full (or MLA) layer holds cdiv(S, block_size) pages per request, a sliding one cdiv(min(W − 1 + in-flight
    tokens, S), block_size) + 1, a chunked one cdiv(min(C + in-flight tokens, S), block_size)."""
    block = settings.setdefault("block_size", eng.settings["block_size"])
    if scaled is not None and scaled != block:
        block = scaled
        settings.setdefault("block_sizes", {})[per_layer * size] = block
    page = block * per_layer * size
    if run == "full_attention":
        blocks = _cdiv(seq, block)
        rule = f"cdiv(S, {block}) = {blocks:,} blocks of {block} tokens ({page:,} bytes a page) per sequence"
    else:
        batched = batched or eng.settings["max_num_batched_tokens"]
        steps = in_flight_batches(eng, settings.get("pp", 1))
        in_flight = steps * batched
        settings["max_num_batched_tokens"] = batched
        if run == "sliding_attention":
            blocks = _cdiv(min(window - 1 + in_flight, seq), block) + 1
            rule = (
                f"cdiv(min(W − 1 + {in_flight:,}, S), {block}) + 1 = {blocks:,} blocks per sequence: the window "
                f"W = {window:,} plus the tokens of {steps} scheduled steps in flight "
                f"(max_num_batched_tokens {batched:,}), and one block for a window not aligned to a block"
            )
        else:
            blocks = _cdiv(min(window + in_flight, seq), block)
            rule = f"cdiv(min(C + {in_flight:,}, S), {block}) = {blocks:,} blocks per sequence (chunk C = {window:,})"
    return blocks * block, batch * layers * blocks * page, rule, per_layer * size, page, blocks


def in_flight_batches(eng: Engine, pp: int) -> int:
    """vLLM's max_concurrent_batches: pp + 1 under async scheduling on the V2 model runner (vllm/config/vllm.py:
    the defaults, ``in_flight_batches`` = 2 at pp = 1), the scheduled steps whose tokens a sliding layer still
    holds."""
    return eng.settings["in_flight_batches"] + pp - 1


def _one_width(eng, model, kinds, env, latent, tp) -> None:
    """TensorRT-LLM's KVCacheManager takes one head_dim for all its layers: refused by name where the attention
    layers' tokens differ in width."""
    from ..formulas.derivation import evaluate_int

    widths = {
        _per_rank(eng, k, model.values, latent, evaluate_int(k.per_token, env, k.kind), tp)
        for k in kinds
        if not k.is_state
    }
    if len(widths) > 1:
        raise LlmcountError(f"{eng.title}: {model.architecture.title}: {eng.refused['widths']}")


def _blocks(eng, run, window, seq, batch, layers, per_layer, size, settings, latent=False):
    """TensorRT-LLM: blocks of tokens_per_block tokens, cdiv(S, tokens_per_block) a sequence in every layer (one
    window, max_seq_len, for all layers); a token of a layer is kv_factor · heads per rank · head_dim elements of the
    cache dtype (an MLA latent: one head, K only)."""
    block = settings.setdefault("tokens_per_block", eng.settings["tokens_per_block"])
    token = per_layer * size
    if token != int(token):
        raise LlmcountError(
            f"--kv-dtype: a token of {per_layer} elements is not a whole number of 16-element NVFP4 scale groups"
        )
    token = int(token)
    blocks = _cdiv(seq, block)
    rule = (
        f"cdiv(S, {block}) = {blocks:,} blocks of {block} tokens ({block * token:,} bytes a block per layer) per "
        "sequence (KVCacheManager, tokens_per_block)"
    )
    if latent:
        rule += "; MLA as one head of kv_lora_rank + qk_rope_head_dim, K only (CacheType.SELFKONLY), on every rank"
    return blocks * block, batch * layers * blocks * block * token, rule, token


def _check_builder(eng: Engine, model: Any, model_type: str, tp: int) -> None:
    """LMDeploy: the model types whose config builder is transcribed, the query heads tp must divide
    (ModelConfig.from_hf_config asserts num_attention_heads % tp == 0), and the window the builder gives every layer
    (``sliding_window`` unless ``use_sliding_window`` is false, or -1 where the builder says so), refused by name."""
    if model_type not in eng.builders:
        raise LlmcountError(
            f"{eng.title}: " + eng.refused["builder"].format(model_type=model_type, builders=", ".join(eng.builders))
        )
    config = getattr(model, "config", None) or {}
    config = {**config, **(config.get("text_config") or {}), **(getattr(model, "keys", None) or {})}
    window = config.get("sliding_window") if config.get("use_sliding_window", True) is not False else None
    if model_type in eng.ignored:
        window = None
    heads = config.get("num_attention_heads")
    if tp > 1 and isinstance(heads, int) and heads % tp:
        raise LlmcountError(
            f"--tp {tp} does not divide the {heads} query heads (num_attention_heads): {eng.title}'s "
            "ModelConfig.from_hf_config asserts it does"
        )
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        raise LlmcountError(f"{eng.title}: " + eng.refused["window"].format(model_type=model_type, window=window))


def _rank_heads(kind: Any, values: Mapping[Any, int], tp: int) -> int:
    """Key/value heads on one of ``tp`` ranks: max(1, h_kv // tp) (heads replicated when fewer than the ranks)."""
    heads = _heads_symbol(values, kind.per_token, "h_kv") or _heads_symbol(values, kind.per_token, "h")
    if heads is None:
        raise LlmcountError(f"the {kind.kind} cache of this family does not name its key/value heads")
    return max(1, values[heads] // tp)


def _packed(eng, run, window, seq, batch, layers, per_layer, policy, settings, latent, heads):
    """LMDeploy's PyTorch engine: a pool of blocks of block_size tokens, each block of a layer the K and V parts (and
    the scale/zero parts of a quantised cache), each padded to ``alignment`` bytes; a sequence whose last decoding
    schedule starts at S − 1 tokens holds cdiv(S − 1 + prefill_interval, block_size) blocks, the pool at least the
    blocks of one session of S tokens (cdiv(S, block_size) + 1), and one block is reserved for dummy inputs."""
    block, align = eng.settings["block_size"], eng.settings["alignment"]
    reserved, ahead = eng.settings["reserved_blocks"], eng.settings["prefill_interval"]
    settings.setdefault("block_size", block)
    if latent:
        k_head, v_head = per_layer, 0
    else:
        if per_layer % (2 * heads):
            raise LlmcountError(f"{eng.title}: the {run} cache is not keys and values of one head_dim")
        k_head = v_head = per_layer // (2 * heads)
    parts = []
    for head, pack, scales in (
        (k_head, policy["k_pack"], policy["k_scales"]),
        (v_head, policy["v_pack"], policy["v_scales"]),
    ):
        if head % pack:
            raise LlmcountError(f"--kv-dtype: a head of {head} elements is not a whole number of {pack}-element bytes")
        parts.append(block * heads * head // pack * policy["bytes"])
        if scales:
            parts.append(block * heads * scales * 2)
    page = sum(_pad(part, align) for part in parts)
    per_sequence = _cdiv(seq - 1 + ahead, block)
    blocks = max(batch * per_sequence, _cdiv(seq, block) + 1) + reserved
    rule = (
        f"{blocks:,} blocks of {block} tokens ({page:,} bytes a block per layer: K, V"
        + (" and their scales and zeros" if policy["k_scales"] else "")
        + f", each padded to {align} bytes): B · cdiv(S − 1 + {ahead}, {block}) = {batch * per_sequence:,} (the last "
        f"decoding schedule of each sequence preallocates prefill_interval = {ahead} tokens)"
    )
    if batch * per_sequence < _cdiv(seq, block) + 1:
        rule += f", raised to cdiv(S, {block}) + 1 = {_cdiv(seq, block) + 1:,} (the session length LMDeploy admits)"
    rule += f", plus {reserved} block reserved for dummy inputs"
    if latent:
        rule += "; MLA as one key head of kv_lora_rank + qk_rope_head_dim and no V, on every rank"
    return per_sequence * block, layers * blocks * page, rule, page // block if page % block == 0 else 0


def _pool(eng, run, window, seq, batch, layers, per_layer, size, settings):
    """SGLang: one pool of B sequences of S tokens in whole pages, plus page_size padded slots, per layer."""
    page = settings["page_size"]
    tokens = _pad(seq, page)
    slots = batch * tokens + page
    if page == 1:
        rule = "a pool of B·S + 1 token slots per layer (slot 0 takes padded tokens' dummy writes)"
    else:
        rule = (
            f"a pool of B · {page}·cdiv(S, {page}) + {page} token slots per layer: each sequence in whole pages of "
            f"{page} tokens (page_size {page}), and one padded page"
        )
    return tokens, layers * slots * per_layer * size, rule, per_layer * size


def _row(block_type: tuple[int, int], elements: int) -> int:
    block, type_size = block_type
    if elements % block:
        raise LlmcountError(
            f"--kv-dtype: a K or V row of {elements} elements is not a whole number of {block}-element blocks"
        )
    return elements // block * type_size


def _cells(eng, run, window, seq, batch, layers, per_layer, size, settings, ctx, kind, latent=False):
    """llama.cpp: n_ctx = pad(ctx, 256); per stream (one per sequence, --kv-unified off) n_ctx_seq =
    pad(n_ctx / B, 256) cells; an SWA layer keeps pad(min(n_ctx_seq, W + n_ubatch), 256) cells per stream; a cell
    of a layer is a K row and a V row of the cache type."""
    pad, ubatch = eng.settings["pad"], eng.settings["n_ubatch"]
    n_ctx = _pad(check_count("--ctx (B·S)", ctx if ctx is not None else batch * seq), pad)
    n_ctx_seq = _pad(n_ctx // batch, pad)
    if n_ctx // batch == 0:
        raise LlmcountError(f"--ctx: a context of {n_ctx:,} cells gives each of the {batch} sequences none")
    settings.update({"ctx": ctx if ctx is not None else batch * seq, "n_ctx": n_ctx_seq * batch, "n_ubatch": ubatch})
    if latent:  # MLA: one K row of the latent per cell, V a view of it (llama-kv-cache.cpp: has_v = !is_mla)
        cell = _row(size, per_layer)
    elif per_layer % 2:
        raise LlmcountError(f"{eng.title}: the {kind} cache is not keys and values of equal width")
    else:
        cell = _row(size, per_layer // 2) * 2
    if run == "full_attention":
        cells = n_ctx_seq
        rule = f"n_ctx padded to {pad}: {cells:,} cells per sequence ({cell:,} bytes a cell)"
        if latent:
            rule += (
                "; MLA as one K head of kv_lora_rank + qk_rope_head_dim per cell and no V tensor (V is a view of K), "
                "as a GGUF converted with the MLA keys (attention.key_length_mla) runs"
            )
    else:
        cells = _pad(min(n_ctx_seq, window + ubatch), pad)
        rule = (
            f"pad(min(n_ctx_seq, W + n_ubatch), {pad}) = {cells:,} cells per sequence: the window W = {window:,} "
            f"plus one micro-batch of {ubatch} tokens"
        )
    return cells, layers * batch * cells * cell, rule, cell


def kv_cache_bytes(engine_name: str, model: Any, seq: int, batch: int = 1, kv_dtype: str | None = None, **kw) -> int:
    """The total of :func:`kv_cache`: bytes per GPU."""
    return kv_cache(engine_name, model, seq, batch, kv_dtype, **kw).bytes


def pipeline_stages(engine_name: str | None, layers: int, pp: int) -> list[range]:
    """The layers of each of ``pp`` pipeline stages as ``engine_name`` splits them (its record's ``[pipeline] split``:
    ``before_last``, vLLM's get_pp_indices, the N mod pp stages before the last one layer longer; ``last``, SGLang's,
    the last N mod pp stages; ``first``, TensorRT-LLM's torch.tensor_split, the first N mod pp stages); vLLM's for no
    engine or transformers. LlmcountError naming the engine when it has no pipeline parallelism."""
    from ..formulas.layer_kinds import stages

    eng = engine(engine_name or "vllm")
    eng = engine("vllm") if eng.name == TRANSFORMERS else eng
    if "pp" in eng.refused:
        raise LlmcountError(f"--pp with --engine {eng.name}: {eng.refused['pp']}")
    split = eng.pipeline.get("split", "before_last")
    if split == "last":
        sizes = [len(run) for run in reversed(stages(layers, pp))]
        starts = [sum(sizes[:i]) for i in range(pp + 1)]
        return [range(starts[i], starts[i + 1]) for i in range(pp)]
    return stages(layers, pp, before_last=split == "before_last")


def stage_bytes(
    figure: EngineKV,
    held: Mapping[str, int],
    sequence: tuple[tuple[str, ...], ...] | None = None,
    layers: range | None = None,
) -> int:
    """The engine's KV cache on the GPU of one pipeline stage: ``held[kind]`` layers of each kind of ``figure`` (the
    whole model's, at the stage's tp and pp), the stage's ``layers`` of the model's ``sequence`` (the cache kinds of
    each layer, None when the order of the layers cannot be told).

    SGLang, TensorRT-LLM, llama.cpp: each stage's pools, block managers or devices hold their own layers, the same
    bytes a layer as the whole model's; a table beside the layers (SGLang's ReqToTokenPool) is on every stage.
    vLLM: the KV cache groups are those of the whole model's layers (v1/core/kv_cache_planning.py
    get_kv_cache_configs: a group of kind with N layers is layers[i::cdiv(N, G)]), projected onto the stage's layers
    (_project_kv_cache_groups_to_worker); a block of the stage's pool holds the largest projected group's pages
    (_get_kv_cache_bytes_per_block) and a sequence takes its blocks in every group, the groups with none of the
    stage's layers included (_max_memory_usage_bytes_from_groups)."""
    eng = figure.engine
    if eng.allocation != "paged":
        total = 0
        for k in figure.kinds:
            if not k.layers:  # a table beside the layers' caches, on every stage's GPU
                total += k.bytes
                continue
            count = held.get(k.kind, 0)
            if (k.bytes * count) % k.layers:
                raise LlmcountError(f"{eng.title}: the {k.kind} cache of a pipeline stage is not whole bytes")
            total += k.bytes * count // k.layers
        return total
    buckets: dict[tuple[Any, ...], list[KindBytes]] = {}
    for k in figure.kinds:
        buckets.setdefault((k.engine_kind, k.token_bytes, k.tokens, k.page, k.blocks), []).append(k)
    if len(buckets) == 1:
        (rows,) = buckets.values()
        return figure.batch * sum(held.get(k.kind, 0) for k in rows) * rows[0].page * rows[0].blocks
    if sequence is None or layers is None:
        raise LlmcountError(
            f"{eng.title} with --pp: its KV cache groups per stage follow the order of the layers of each kind, "
            "which this model's record cannot tell"
        )
    pages = {k.page for k in figure.kinds}
    if len(pages) != 1:
        raise LlmcountError(f"{eng.title} with --pp: KV cache groups of pages of different sizes are not transcribed")
    indices: dict[tuple[Any, ...], list[int]] = {key: [] for key in buckets}
    where = {k.kind: key for key, rows in buckets.items() for k in rows}
    for i, kinds in enumerate(sequence):
        for kind in kinds:
            if kind in where:
                indices[where[kind]].append(i)
    for key, rows in buckets.items():
        if len(indices[key]) != sum(k.layers for k in rows):
            raise LlmcountError(
                f"{eng.title} with --pp: the order of the layers does not give the {rows[0].kind} layers counted"
            )
    sizes = [len(found) for found in indices.values()]
    fewest, most = min(sizes), max(sizes)
    group = most if most < fewest * 1.5 else fewest
    largest, blocks = 0, 0
    for key, found in indices.items():
        count = _cdiv(len(found), group)
        blocks += count * buckets[key][0].blocks
        for i in range(count):
            largest = max(largest, sum(1 for j in found[i::count] if j in layers))
    return figure.batch * largest * pages.pop() * blocks


def default_share_rule(
    engine_name: str, gpu_name: str, memory_bytes: int, tp: int, pp: int, latent: bool, model_path: str
) -> tuple[Any, str] | None:
    """The engine's default share of a GPU where it is a rule of the device (SGLang's mem_fraction_static, the record's
    ``[memory_share.rule]``): (the fraction, how it was derived), with gpu_mem the GPU table's memory in MiB; None
    for a GPU the rule is not transcribed for."""
    from fractions import Fraction

    table = engine(engine_name).memory_share.get("rule")
    if not table or gpu_name not in table["devices"]:
        return None
    gpu_mem = memory_bytes / (1 << 20)
    chunked, max_bs = next(
        (c, small if tp < 4 else large) for limit, c, small, large in table["tiers"] if not limit or gpu_mem < limit
    )
    graph = max_bs * 2
    if pp == 1:  # the breakable prefill graph, on by default on CUDA at pp = 1
        if latent:
            graph += table["mla_prefill_reserve"]
        else:
            top = min(chunked, 4096) if "llama-2" in model_path.lower() else chunked
            sizes = [s for a, b, step in table["prefill_sizes"] for s in range(a, b or top + 1, step) if s <= top]
            graph += len(sizes) * 8
    reserved = 512
    reserved += max(chunked, 2048) * 1.5
    reserved += tp * pp / 8 * 1024
    reserved += graph
    if gpu_mem > table["floor_above"]:
        reserved = max(reserved, table["floor"])
    fraction = round((gpu_mem - reserved) / gpu_mem, 3)
    said = (
        f"round((gpu_mem − reserved_mem) / gpu_mem, 3) = {fraction:g} with gpu_mem {gpu_mem:,.0f} MiB (the GPU table's "
        f"memory; nvidia-smi's memory.total, which SGLang reads, is a little different, so its pick can differ in the "
        f"third decimal), chunked_prefill_size {chunked:,}, decode CUDA-graph max_bs {max_bs}, reserved_mem "
        f"{reserved:,.0f} MiB ({table['source']})"
    )
    return Fraction(repr(fraction)), said
