"""Hugging Face ``config.json`` -> the values of the glossary's symbols.

This is the only module that knows the config keys and the defaults transformers gives them.
Sizes that define a model (hidden size, layers, heads, vocabulary, MLP width) are required;
every other key, when absent, takes the default of the family's transformers config class.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from sympy import Symbol

from ..errors import LlmcountError
from .architectures import REGISTRY, Architecture, Options
from .derivation import Counts, Derivation
from .symbols import (
    GLOSSARY,
    N,
    N_dense,
    V,
    d,
    d_ff,
    d_moe,
    d_nope,
    d_rope,
    d_v,
    h,
    h_d,
    h_kv,
    k,
    n,
    n_pos,
    n_s,
    r_kv,
    r_q,
)

_MISSING = object()
REQUIRED = _MISSING  # a key without a default: its absence is an error


@dataclass(frozen=True)
class Model:
    """A config read into an architecture, its switches and the values of its symbols."""

    name: str
    source: str
    architecture: Architecture
    options: Options
    values: dict[Symbol, int]
    dtype: str | None = None  # the dtype the config names for the weights (dtype, or torch_dtype before v5)

    @cached_property
    def derivation(self) -> Derivation:
        return Derivation(self.architecture, self.options)

    @cached_property
    def counts(self) -> Counts:
        return self.derivation.evaluate(self.values)


class _Reader:
    """Typed, checked access to the keys of one config; errors name the file and the key."""

    def __init__(self, config: dict[str, Any], source: str, family: str):
        self.config, self.source, self.family = config, source, family

    def fail(self, message: str) -> LlmcountError:
        return LlmcountError(f"{self.source}: {message}")

    def raw(self, key: str, default: Any = REQUIRED) -> Any:
        present = [k for k in (key, *_ALIASES.get(self.family, {}).get(key, ())) if k in self.config]
        if len({json.dumps(self.config[k]) for k in present}) > 1:
            raise self.fail(f"keys {' and '.join(repr(k) for k in present)} name the same size with different values")
        if present:
            return self.config[present[0]]
        if default is REQUIRED:
            raise self.fail(f"required key '{key}' is missing (model_type {self.family})")
        return default

    def int(self, key: str, default: Any = REQUIRED, minimum: int = 1, null: Any = _MISSING) -> int:
        value = self.raw(key, default)
        if value is None and null is not _MISSING:
            return null
        return self.check_int(key, value, minimum)

    def check_int(self, key: str, value: Any, minimum: int = 1) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"key '{key}' must be an integer, got {_describe(value)}")
        if value < minimum:
            bound = "positive" if minimum == 1 else f"at least {minimum}"
            raise self.fail(f"key '{key}' must be {bound}, got {value}")
        return value

    def bool(self, key: str, default: bool) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.fail(f"key '{key}' must be true or false, got {_describe(value)}")
        return value

    def int_list(self, key: str, default: list[int]) -> list[int]:
        value = self.raw(key, default)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(f"key '{key}' must be a list of integers, got {_describe(value)}")
        return [self.check_int(key, item, minimum=0) for item in value]


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    return f"{type(value).__name__} {value!r}"


# Other names transformers accepts for a key (its configs' attribute_map), per family.
_ALIASES: dict[str, dict[str, tuple[str, ...]]] = {
    "gpt2": {
        "n_embd": ("hidden_size",),
        "n_layer": ("num_hidden_layers",),
        "n_head": ("num_attention_heads",),
        "n_positions": ("max_position_embeddings",),
    },
    "mixtral": {"num_local_experts": ("num_experts",)},
    "qwen3_moe": {"num_experts": ("num_local_experts",)},
    "deepseek_v2": {"n_routed_experts": ("num_experts",)},
    "deepseek_v3": {"n_routed_experts": ("num_local_experts",)},
}

# Per family, as transformers reads them: (default of num_key_value_heads when absent (None: h),
# whether null means h), and (default of head_dim when absent (None: d // h), whether null means d // h).
_KV_HEADS = {
    "llama": (None, True),
    "qwen2": (32, True),
    "qwen3": (32, True),
    "mistral": (8, False),
    "mixtral": (8, False),
    "qwen3_moe": (4, False),
}
_HEAD_DIM = {
    "llama": (None, True),
    "mistral": (None, True),
    "mixtral": (None, True),
    "qwen2": (None, False),
    "qwen3": (128, False),
    "qwen3_moe": (None, False),
}


def _gpt2(r: _Reader, o: dict[str, bool]) -> dict[Symbol, int]:
    if r.bool("add_cross_attention", False):
        raise r.fail("add_cross_attention=true (an encoder-decoder GPT-2) is not supported")
    values = {
        N: r.int("n_layer"),
        V: r.int("vocab_size"),
        d: r.int("n_embd"),
        h: r.int("n_head"),
        n_pos: r.int("n_positions", 1024),
    }
    values[d_ff] = r.int("n_inner", None, null=4 * values[d])
    o["tied"] = r.bool("tie_word_embeddings", True)
    return values


def _decoder(r: _Reader, o: dict[str, bool], arch: Architecture) -> dict[Symbol, int]:
    """The keys shared by the Llama-like families (and the sizes DeepSeek shares with them)."""
    values = {
        N: r.int("num_hidden_layers"),
        V: r.int("vocab_size"),
        d: r.int("hidden_size"),
        h: r.int("num_attention_heads"),
    }
    o["tied"] = r.bool("tie_word_embeddings", False)
    if "attention_bias" in arch.switches:
        o["attention_bias"] = r.bool("attention_bias", False)
    if "mlp_bias" in arch.switches:
        o["mlp_bias"] = r.bool("mlp_bias", False)
    return values


def _gqa(r: _Reader, values: dict[Symbol, int], family: str) -> None:
    heads = values[h]
    default, null_ok = _HEAD_DIM[family]
    fallback = values[d] // heads
    values[h_d] = r.int("head_dim", default or fallback, null=fallback if null_ok else _MISSING)
    default, null_ok = _KV_HEADS[family]
    values[h_kv] = r.int("num_key_value_heads", default or heads, null=heads if null_ok else _MISSING)
    if heads % values[h_kv]:
        why = "" if "num_key_value_heads" in r.config else f", {family}'s default when the key is absent"
        raise r.fail(f"num_attention_heads ({heads}) is not divisible by num_key_value_heads ({values[h_kv]}{why})")


def _experts(r: _Reader, values: dict[Symbol, int], n_key: str, n_default: Any, k_default: Any) -> None:
    values[n] = r.int(n_key, n_default)
    values[k] = r.int("num_experts_per_tok", k_default)
    if values[k] > values[n]:
        raise r.fail(f"num_experts_per_tok ({values[k]}) is larger than {n_key} ({values[n]})")


def _read(r: _Reader, arch: Architecture) -> tuple[dict[Symbol, int], dict[str, bool]]:
    o: dict[str, bool] = {}
    family = arch.name
    if family == "gpt2":
        values = _gpt2(r, o)
        if values[d] % values[h]:
            raise r.fail(f"n_embd ({values[d]}) is not divisible by n_head ({values[h]})")
        return values, o

    values = _decoder(r, o, arch)
    if family in ("llama", "deepseek_v2") and values[d] % values[h]:
        raise r.fail(f"hidden_size ({values[d]}) is not divisible by num_attention_heads ({values[h]})")

    if family in ("deepseek_v2", "deepseek_v3"):
        v3 = family == "deepseek_v3"
        values[r_q] = r.int("q_lora_rank", 1536, null=None)
        o["q_lora"] = values[r_q] is not None
        if values[r_q] is None:
            del values[r_q]
        values[r_kv] = r.int("kv_lora_rank", 512)
        values[d_rope] = r.int("qk_rope_head_dim", 64)
        values[d_nope] = r.int("qk_nope_head_dim", 128)
        values[d_v] = r.int("v_head_dim", 128)
        _experts(r, values, "n_routed_experts", 256 if v3 else 64, 8 if v3 else REQUIRED)
        values[d_moe] = r.int("moe_intermediate_size", 2048 if v3 else 1407)
        values[n_s] = r.int("n_shared_experts", 1 if v3 else 2, minimum=0)
        first_dense = r.int("first_k_dense_replace", 3 if v3 else 0, minimum=0)
        values[N_dense] = min(first_dense, values[N])
    else:
        _gqa(r, values, family)
        if family == "mixtral":
            _experts(r, values, "num_local_experts", 8, 2)
        elif family == "qwen3_moe":
            _experts(r, values, "num_experts", 128, 8)
            values[d_moe] = r.int("moe_intermediate_size", 768)
            step = r.int("decoder_sparse_step", 1)
            dense_only = set(r.int_list("mlp_only_layers", []))
            # layer i is MoE when i is not in mlp_only_layers and (i + 1) % step == 0 (Qwen3MoeDecoderLayer)
            layers = values[N]
            moe = layers // step - sum(1 for i in dense_only if i < layers and (i + 1) % step == 0)
            values[N_dense] = layers - moe

    if N_dense in values:
        o["dense_layers"] = values[N_dense] > 0
        if not o["dense_layers"]:
            del values[N_dense]
    if not arch.is_moe or o.get("dense_layers") or arch.expert_width == d_ff:  # Mixtral: experts of width d_ff
        values[d_ff] = r.int("intermediate_size")
    return values, o


def read_config(config: Any, source: str, name: str | None = None) -> Model:
    """Read a parsed ``config.json`` into a :class:`Model`; raise LlmcountError on bad input."""
    if not isinstance(config, dict):
        raise LlmcountError(f"{source}: a config must be a JSON object, got {_describe(config)}")
    model_type = config.get("model_type")
    if model_type is None:
        raise LlmcountError(f"{source}: required key 'model_type' is missing")
    arch = REGISTRY.get(model_type) if isinstance(model_type, str) else None
    if arch is None:
        supported = ", ".join(sorted(REGISTRY))
        raise LlmcountError(f"{source}: unsupported model_type {model_type!r}; supported: {supported}")
    reader = _Reader(config, source, model_type)
    values, switches = _read(reader, arch)
    options = Options(**{**arch.defaults.__dict__, **switches})
    ordered = {e.symbol: values[e.symbol] for e in GLOSSARY if e.symbol in values}
    dtype = config.get("dtype", config.get("torch_dtype"))
    return Model(name or source, source, arch, options, ordered, dtype if isinstance(dtype, str) else None)


_GPT2_KEYS = {"N": "n_layer", "d": "n_embd", "h": "n_head", "d_ff": "n_inner", "n_pos": "n_positions"}
_EXPERTS_KEY = {"mixtral": "num_local_experts", "qwen3_moe": "num_experts"}
_DENSE_KEY = {"qwen3_moe": "mlp_only_layers, decoder_sparse_step"}


def config_key(family: str, symbol: Symbol) -> str:
    """The key (or keys) a family's config.json gives ``symbol`` under, verbatim: ``n`` is
    ``num_local_experts`` for Mixtral and ``n_routed_experts`` for DeepSeek."""
    name = symbol.name
    if family == "gpt2" and name in _GPT2_KEYS:
        return _GPT2_KEYS[name]
    if name == "n":
        return _EXPERTS_KEY.get(family, "n_routed_experts")
    if name == "N_dense":
        return _DENSE_KEY.get(family, "first_k_dense_replace")
    return GLOSSARY_KEYS[symbol]


# The glossary's key column lists every family's name for a symbol; its first name is the common one.
GLOSSARY_KEYS: dict[Symbol, str] = {e.symbol: e.key if e.key.startswith("(") else e.key.split(" ")[0] for e in GLOSSARY}
