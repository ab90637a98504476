"""The oracle: transformers' own parameter counts, built on the meta device (no weights, no memory).

``hf_count(config)`` is the number of parameters of ``AutoModelForCausalLM.from_config`` (a tied head
counts once: ``named_parameters`` removes shared tensors). ``hf_components(config)`` maps every HF
parameter name to llmcount's component path and sums over layers, so the two can be compared term
by term. Buffers (rotary ``inv_freq``, GPT-2's masks, DeepSeek's ``e_score_correction_bias``) are not
parameters and are not counted.

A config that transformers itself refuses (its config class or model constructor raises) raises
``TransformersRejected``; a parameter name the mapping does not know raises ``UnmappedParameter``,
so that a new transformers release that adds a parameter shows up as a failure, not as a silent gap.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pytest
from hypothesis import assume
from hypothesis import strategies as st

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import RuleRefusal

transformers.logging.set_verbosity_error()
transformers.logging.disable_progress_bar()
logging.getLogger("transformers").setLevel(logging.ERROR)

VERSIONS = f"transformers {transformers.__version__}, torch {torch.__version__}"
"""Which versions produced the expected numbers: put it in every failure message."""

NEWER = records.newer_transformers(transformers.__version__)
"""One line when the installed transformers is newer than the records' version (empty otherwise): said once."""
if NEWER:
    warnings.warn(NEWER, stacklevel=1)

# Keys of a real config.json that could change what from_config builds without changing the
# model's logical parameters: a quantizer applying DeepSeek-V3's FP8 quantization_config would add
# scale tensors. transformers 5.24's from_config ignores it (checked: same count with and without);
# it is dropped so that a version that applies it still counts the architecture, as llmcount does.
_IGNORED_KEYS = ("quantization_config",)


class TransformersRejected(Exception):
    """transformers' config class or model constructor refused the config."""


class UnmappedParameter(AssertionError):
    """An HF parameter name that the mapping to llmcount's paths does not know."""


@dataclass(frozen=True)
class OracleResult:
    total: int
    components: dict[str, int]  # llmcount path -> parameters, summed over layers (zeros dropped)
    num_experts: int | None  # routed experts per MoE layer, as the built HF config has it
    top_k: int | None  # routed experts per token, as the built HF config has it


def _freeze(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True)


def _is_norm(module: torch.nn.Module) -> bool:
    name = type(module).__name__
    return isinstance(module, torch.nn.LayerNorm) or name.endswith(("RMSNorm", "LayerNorm", "Norm"))


def llmcount_path(name: str, is_norm: bool, prefix: str = "model") -> str:
    """Map an HF parameter name (``model.layers.3.self_attn.q_proj.bias``) to llmcount's path
    (``attention/q_proj.bias``). A norm's weight and bias share one path (LayerNorm is one term).
    ``prefix`` is the model's ``base_model_prefix`` (``gpt_neox.layers.0...``)."""
    parts = name.split(".")
    if parts[0] in ("model", "transformer", prefix):
        parts = parts[1:]
    if len(parts) > 3 and parts[0] == "decoder" and parts[1] == "layers":  # OPT: model.decoder.layers.3...
        parts = parts[1:]
    in_layer = len(parts) > 2 and parts[0] in ("layers", "h") and parts[1].isdigit()
    if in_layer:
        parts = parts[2:]
    *modules, leaf = parts
    bias = "" if is_norm or leaf != "bias" else ".bias"

    if not in_layer and len(modules) == 2 and modules[0] == "decoder":  # OPT: model.decoder.embed_tokens
        module = modules[1]
        if module in ("embed_tokens", "embed_positions", "project_in"):
            return f"embedding/{module}{bias}"
        if module == "project_out":
            return f"head/{module}{bias}"
        if is_norm:
            return f"norms/decoder.{module}"
    if not in_layer and len(modules) == 1:
        module = modules[0]
        if module in ("embed_tokens", "wte", "wpe", "embed_in"):
            return f"embedding/{module}"
        if module == "lm_head":
            return f"head/lm_head{bias}"
        if is_norm:
            return f"norms/{module}"
    elif in_layer and modules:
        group = modules[0]
        if group in ("self_attn", "attn", "attention") and len(modules) == 2:
            return f"attention/{modules[1]}{bias}"
        if group == "mlp" and len(modules) >= 2:
            if modules[1] == "experts":
                return "moe/experts"
            if modules[1] == "gate" and len(modules) == 2:
                return f"moe/router{bias}"
            if modules[1] == "shared_experts":
                return f"moe/shared_experts{bias}"
            if len(modules) == 2:
                return f"mlp/{modules[1]}{bias}"
        if len(modules) == 1 and is_norm:
            return f"norms/{group}"
        if len(modules) == 1 and group in ("fc1", "fc2"):  # OPT's MLP sits in the layer itself
            return f"mlp/{group}{bias}"
    raise UnmappedParameter(f"no llmcount path for HF parameter {name!r} ({VERSIONS})")


# Text config types whose causal LM AutoModelForCausalLM maps neither itself nor through a composite type: the class
# that builds it (the text model with its LM head, as the composite holds it), module and name
TEXT_CAUSAL_LM = {
    "kosmos_2_text_model": ("transformers.models.kosmos2.modeling_kosmos2", "Kosmos2TextForCausalLM"),
    "blip_text_model": ("transformers.models.blip.modeling_blip_text", "BlipTextLMHeadModel"),
    "kosmos_2_5_text_model": ("transformers.models.kosmos2_5.modeling_kosmos2_5", "Kosmos2_5TextForCausalLM"),
    "mistral4": ("transformers.models.mistral4.modeling_mistral4", "Mistral4ForCausalLM"),  # image-text-to-text only
    "pix2struct_text_model": ("transformers.models.pix2struct.modeling_pix2struct", "Pix2StructTextModel"),
    # image-text-to-text only, its config flat: the whole model, less the modules TEXT_WITHOUT names
    "chameleon": ("transformers.models.chameleon.modeling_chameleon", "ChameleonForConditionalGeneration"),
}

# Modules of a TEXT_CAUSAL_LM class that are not its language model (a tokenizer of images its composite entry counts
# as a tower), removed after the build: the model's attribute path to each.
TEXT_WITHOUT = {"chameleon": ("model.vqmodel",)}


def causal_lm(cfg, model_type: str, **kwargs):
    """The causal LM of the config object ``cfg`` (of a config whose model_type is ``model_type``), as
    AutoModelForCausalLM builds it, or the class :data:`TEXT_CAUSAL_LM` names."""
    if model_type in TEXT_CAUSAL_LM:
        module, name = TEXT_CAUSAL_LM[model_type]
        model = getattr(importlib.import_module(module), name)._from_config(cfg, **kwargs)
        for path in TEXT_WITHOUT.get(model_type, ()):
            owner, _, leaf = path.rpartition(".")
            delattr(model.get_submodule(owner), leaf)
        return model
    return AutoModelForCausalLM.from_config(cfg, **kwargs)


# Keys a composite config class leaves None by default that its model cannot build with, and that change no
# parameter: given when the config has none. Emu3Model maps image codes to tokens through vocabulary_map (the
# tokenizer's vocabulary), on which Emu3ImageVocabularyMapping calls .get; so does ChameleonModel.
BUILD_KEYS: dict[str, dict[str, Any]] = {"emu3": {"vocabulary_map": {}}, "chameleon": {"vocabulary_map": {}}}


def _build_keys(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with the keys of :data:`BUILD_KEYS` its model_type needs, where it gives none."""
    needed = BUILD_KEYS.get(config.get("model_type"), {})
    return {**config, **{key: value for key, value in needed.items() if config.get(key) is None}}


def _hf_config(config: dict[str, Any]):
    config = _build_keys(config)
    rest = {key: value for key, value in config.items() if key != "model_type" and key not in _IGNORED_KEYS}
    outer = _built_through(config["model_type"])
    if outer is not None:  # AutoModelForCausalLM maps only the composite type; it builds the text model from it
        return AutoConfig.for_model(outer, text_config=rest)
    return AutoConfig.for_model(config["model_type"], **rest)


def _built_through(model_type: Any) -> str | None:
    """The composite type whose config AutoModelForCausalLM builds a text model_type's model from, when it maps no
    class to the text type itself (emu3_text_model: Emu3ForCausalLM from an Emu3Config's text_config)."""
    if model_type in transformers.models.auto.modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return None
    if model_type in TEXT_CAUSAL_LM:
        return None
    return next((c.name for c in records.composites() if c.text == model_type), None)


def _meta_model(frozen: str):
    """transformers' model of a frozen config, built on the meta device, and its config object."""
    config = json.loads(frozen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cfg = _hf_config(config)
            with torch.device("meta"):
                return causal_lm(cfg, config["model_type"]), cfg
        except Exception as error:  # whatever transformers raises, it refused the config
            raise TransformersRejected(f"{type(error).__name__}: {error}") from error


@lru_cache(maxsize=512)
def _build(frozen: str) -> OracleResult:
    model, cfg = _meta_model(frozen)

    components: dict[str, int] = {}
    total = 0
    seen: set[int] = set()
    for module_name, module in model.named_modules():
        norm = _is_norm(module)
        for leaf, parameter in module.named_parameters(recurse=False):
            if id(parameter) in seen:  # a tied head: the embedding's tensor, counted once
                continue
            seen.add(id(parameter))
            count = parameter.numel()
            total += count
            path = llmcount_path(f"{module_name}.{leaf}" if module_name else leaf, norm, model.base_model_prefix)
            components[path] = components.get(path, 0) + count
    assert total == sum(p.numel() for p in model.parameters()), VERSIONS

    num_experts = next(
        (getattr(cfg, key) for key in ("n_routed_experts", "num_local_experts", "num_experts") if hasattr(cfg, key)),
        None,
    )
    return OracleResult(
        total=total,
        components={path: count for path, count in components.items() if count},
        num_experts=num_experts,
        top_k=getattr(cfg, "num_experts_per_tok", None),
    )


def hf_result(config: dict[str, Any]) -> OracleResult:
    """Build (or fetch from the cache) the transformers model of ``config`` and count it."""
    result = _build(_freeze(config))
    return OracleResult(result.total, dict(result.components), result.num_experts, result.top_k)


def hf_count(config: dict[str, Any]) -> int:
    """The number of parameters of transformers' model for ``config`` (a tied head counts once)."""
    return _build(_freeze(config)).total


def hf_components(config: dict[str, Any]) -> dict[str, int]:
    """transformers' parameters grouped by llmcount path, summed over layers, zero-size ones dropped."""
    return dict(_build(_freeze(config)).components)


@lru_cache(maxsize=1024)
def _meta_total(frozen: str) -> int:
    model, _ = _meta_model(frozen)
    return sum(p.numel() for p in model.parameters())


def meta_total(config: dict[str, Any]) -> int:
    """``sum(numel())`` over ``model.parameters()`` of any causal LM built on meta (tied weights once), with no
    mapping of names: the check every family record must pass."""
    return _meta_total(_freeze(config))


def class_defaults(model_type: str) -> dict[str, Any]:
    """The config class's defaults as a config.json would give them (every key, computed ones included)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {**AutoConfig.for_model(model_type).to_dict(), "model_type": model_type}


# Config classes whose defaults describe no model that can run: the key a family record refuses them by, the
# value that makes them one, and (optionally) other keys that need a value too.
REFUSED_DEFAULTS = {
    "deepseek_v2": ("num_experts_per_tok", 6),  # DeepseekV2Config defaults it to None: no top-k routing
    "nemotron": ("num_key_value_heads", 8),  # NemotronConfig defaults it to None, which its attention cannot use
    "ministral": ("head_dim", 128),  # MinistralConfig defaults head_dim to None
    "hunyuan_v1_dense": ("head_dim", 128),  # HunYuanDenseV1Config defaults head_dim to None
    "hunyuan_v1_moe": ("head_dim", 128),  # HunYuanMoEV1Config defaults head_dim to None
    # Dots1Config defaults the expert counts to None; dots.llm1's own: 128 experts, 2 shared, 6 per token
    "dots1": ("n_routed_experts", 128, {"n_shared_experts": 2, "num_experts_per_tok": 6}),
    # Lfm2MoeConfig defaults layer_types to None, which its decoder layers index: LFM2-8B-A1B's pattern, 32 layers
    "lfm2_moe": ("layer_types", ["conv", "conv", "full_attention", "conv"] * 8),
    # CohereCompassTextConfig defaults rope_parameters to {}, which has no entry for its full-attention layers (their
    # rotary embedding raises a KeyError): the record refuses it; with an entry per layer type it builds
    "cohere_compass_text": (
        "rope_parameters",
        {
            "full_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        },
    ),
}


# Config classes whose defaults transformers 5.23 cannot build for a reason that leaves the parameters alone: the
# (dotted) key and a value that builds. llmcount counts the defaults as they are; the oracle needs the value.
UNBUILDABLE_DEFAULTS = {
    # DoryConfig.to_dict writes every layer twice (layer counts doubled, "mlp" entries in layer_types) and reads that
    # back by halving the counts when layer_types lists "mlp": the layer counts alone need the list written with them
    "dory": (
        "layer_types",
        [kind for i in range(36) for kind in ("full_attention" if i % 4 == 3 else "sliding_attention", "mlp")],
    ),
    # DbrxAttention reads attn_config.rope_theta, which the class does not default, and its forward clamps by
    # clip_qkv, which fails on the default None (torch.clamp needs a bound)
    "dbrx": ("attn_config", {"rope_theta": 10000, "clip_qkv": 8}),
}


def runnable_defaults(model_type: str) -> dict[str, Any]:
    """The class defaults, with the keys of :data:`REFUSED_DEFAULTS` and :data:`UNBUILDABLE_DEFAULTS` set to a
    value a model can run with."""
    return runnable(class_defaults(model_type), model_type)


def runnable(config: dict[str, Any], model_type: str) -> dict[str, Any]:
    """``config`` with the keys :data:`REFUSED_DEFAULTS` and :data:`UNBUILDABLE_DEFAULTS` give ``model_type`` (the
    key, its value and any other keys the class needs with it)."""
    for table in (REFUSED_DEFAULTS, UNBUILDABLE_DEFAULTS):
        if model_type in table:
            key, value, *others = table[model_type]
            config = with_key(config, key, value)
            for extra in others:
                config = {**config, **extra}
    return config


def with_key(config: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``config`` with ``key`` set; a dotted key (``ffn_config.moe_num_experts``) is set inside its sub-object."""
    head, _, leaf = key.partition(".")
    if not leaf:
        return {**config, key: value}
    sub = config.get(head)
    return {**config, head: {**(sub if isinstance(sub, dict) else {}), leaf: value}}


def without_key(config: dict[str, Any], key: str) -> dict[str, Any]:
    """``config`` without ``key`` (a dotted key: left out of its sub-object)."""
    head, _, leaf = key.partition(".")
    if not leaf:
        return {k: v for k, v in config.items() if k != key}
    sub = config.get(head)
    if not isinstance(sub, dict):
        return dict(config)
    return {**config, head: {k: v for k, v in sub.items() if k != leaf}}


SIZES = st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16])
# keys a config class requires to sum to the number of layers: (first, middle, last) layers of the stack
LAYER_SPLITS = {"dory": ("n_input_layers", "n_recurrent_layers", "n_output_layers")}
# keys transformers derives from others when absent: a copied default would contradict the drawn keys
# (rope_parameters repeats partial_rotary_factor and rope_theta; MLA configs derive head_dim and qk_head_dim; the
# widths of attention and Mamba heads some hybrids derive from hidden_size: attention_hidden_size, mamba_headdim;
# Gemma 4's per_layer_config, which its config class derives from layer_types and global_head_dim)
DERIVED = {"rope_parameters", "head_dim", "qk_head_dim", "attention_hidden_size", "attention_head_dim", "mamba_headdim"}
DERIVED |= {"per_layer_config"}


@lru_cache(maxsize=256)
def _accepts(model_type: str, key: str, value: Any) -> bool:
    """Whether the config class accepts ``value`` for ``key``, the other keys at their defaults: ModernBERT's
    pad_token_id must be an integer; a class whose per-layer lists have a fixed default length (Zamba2: 54 layers) or
    a pattern that needs more layers than a drawn config has (Zamba: 3) refuses other layer counts."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            AutoConfig.for_model(model_type, **{key: value})
        except Exception:  # whatever transformers raises, it refused the value
            return False
    return True


def layer_lists(family: records.Family) -> dict[str, list[str]]:
    """The per-layer lists of the class defaults that the record reads (a list of strings with one entry per layer
    of the default config: layer_types, layers_block_type, ...), by key."""
    defaults = class_defaults(family.name)
    layers = next((defaults.get(spec.key) for spec in family.symbols if spec.symbol.name == "N"), None)
    return {
        key: value
        for key, value in defaults.items()
        if key in family.keys
        and isinstance(value, list)
        and len(value) == layers
        and value
        and all(isinstance(x, str) for x in value)
    }


MAX_PARAMETERS = 50_000_000
"""The largest drawn model a forward pass is run on (it builds real weights: a drawn config that leaves the sizes at
a class's defaults builds a model of billions of parameters, minutes and tens of GB on a CPU)."""


@st.composite
def drawn_config(draw, family: records.Family, sizes: st.SearchStrategy[int] = SIZES) -> dict:
    """The class defaults with small layer counts and sizes drawn for the record's symbols, and its switches flipped;
    some defaulted keys left out so that the record's defaults are exercised."""
    config = {"model_type": family.name}
    defaults = runnable_defaults(family.name)
    positive = {spec.key for spec in family.symbols if spec.minimum}  # a key another symbol reads as a size stays >= 1
    for spec in family.symbols:
        if spec.default is not records.REQUIRED and draw(st.booleans()):
            continue  # absent: the record's default must be transformers' default
        if spec.symbol.name == "N":
            config[spec.key] = draw(st.integers(1, 4))
        elif spec.symbol.name in ("V", "n_pos"):
            config[spec.key] = draw(st.sampled_from([16, 24, 32, 40]))
        elif spec.strings and "." not in spec.key and not _accepts(family.name, spec.key, 2):
            config[spec.key] = draw(st.sampled_from(sorted(spec.strings)))  # a mode the class takes by name only
        else:
            value = draw(sizes)
            config[spec.key] = value if spec.key in positive or value > 1 else 0
    for key, default in family.keys.items():
        if isinstance(default, bool):
            config[key] = draw(st.booleans())
    # keys the record does not read, which transformers may check against what it does (lists per layer)
    aliases = {name for key, names in family.aliases.items() for name in (key, *names)}
    unread = {k: v for k, v in defaults.items() if k not in config and k not in aliases | DERIVED}
    config.update({k: v for k, v in unread.items() if not isinstance(v, list)})
    if "num_key_value_heads" in unread and "num_attention_heads" in config:  # MLA: every head reads the latent
        config["num_key_value_heads"] = config["num_attention_heads"]
    refused = REFUSED_DEFAULTS.get(family.name)
    if refused is not None and refused[0] in family.keys and not isinstance(refused[1], list):  # a switch: given
        config[refused[0]] = refused[1]
    if refused is not None and isinstance(refused[1], list) and refused[0] not in config:  # a layer pattern: drawn
        layers = next(config.get(s.key, defaults.get(s.key)) for s in family.symbols if s.symbol.name == "N")
        if isinstance(layers, int):
            config[refused[0]] = draw(
                st.lists(st.sampled_from(sorted(set(refused[1]))), min_size=layers, max_size=layers)
            )
    # a width narrower than its heads where the record reads no head_dim: heads of width 0, which no class builds (BLT's
    # four sub-configs each draw one such pair); the drawn width becomes that many channels per head
    for prefix in {key.rpartition(".")[0] for key in config}:
        width, heads = (f"{prefix}.{k}" if prefix else k for k in ("hidden_size", "num_attention_heads"))
        sub = defaults.get(prefix, {}) if prefix else defaults
        count = config.get(heads, sub.get("num_attention_heads") if isinstance(sub, dict) else None)
        drawn = config.get(width)
        reads_head_dim = any(spec.key == (f"{prefix}.head_dim" if prefix else "head_dim") for spec in family.symbols)
        if not reads_head_dim and isinstance(drawn, int) and isinstance(count, int):
            config[width] = drawn * count if 0 < drawn < count else drawn
    for key in [key for key in config if "." in key]:  # a nested key goes into its sub-object
        config = with_key({k: v for k, v in config.items() if k != key}, key, config[key])
    vocab = next((config.get(spec.key) for spec in family.symbols if spec.symbol.name == "V"), None)
    pad = config.get("pad_token_id")  # the embedding's padding_idx must lie inside a drawn vocabulary
    if isinstance(pad, int) and isinstance(vocab, int) and pad >= vocab:
        config["pad_token_id"] = None if _accepts(family.name, "pad_token_id", None) else 0
    # a config class that ties a split of its layers to their number gets a split of the drawn layers (Dory's input,
    # looped and output layers, which DoryConfig requires to sum to num_hidden_layers)
    layers = next((config.get(spec.key) for spec in family.symbols if spec.symbol.name == "N"), None)
    if family.name in LAYER_SPLITS and isinstance(layers, int):
        first, middle, last = LAYER_SPLITS[family.name]
        config[first] = draw(st.integers(0, layers))
        config[last] = draw(st.integers(0, layers - config[first]))
        config[middle] = layers - config[first] - config[last]
    # a config class that cannot derive its per-layer lists for the drawn number of layers gets them drawn, from the
    # kinds its default lists name (the records read them, so the drawn layouts are counted too)
    key = next((spec.key for spec in family.symbols if spec.symbol.name == "N"), None)
    layers = config.get(key)
    if isinstance(layers, int) and not _accepts(family.name, key, layers):
        for name, default in layer_lists(family).items():
            kinds = st.sampled_from(sorted(set(default)))
            config[name] = draw(st.lists(kinds, min_size=layers, max_size=layers))
    return config


# What a transformers cache holds, by attribute name: every tensor found under one of these names (in a dict, list
# or tuple too) is counted; tensors under BOOKKEEPING names are counters, not state; any other tensor fails the
# test, so that a release that stores something new shows up instead of being silently left out.
CACHE_STATE = (
    "keys",
    "values",  # DynamicLayer, DynamicSlidingWindowLayer
    "conv_states",
    "recurrent_states",  # LinearAttentionLayer (Mamba, Mamba-2, Gated DeltaNet), per state index
    "linear_cache",  # MiniMaxCache: the lightning-attention K^T·V of each linear layer (a list, [] elsewhere)
    "rnn_state",  # xLSTMCache: per layer the mLSTM matrix memory, normalizer and stabilizer (a dict of tuples)
    "indexer_keys",
    "indexer_position_ids",  # DynamicIndexedLayer (DeepSeek-V3.2's indexer)
    "idx_keys",  # MiniMaxM3VLSparseCacheLayer: the indexer keys of a sparse layer
    "compressed_kv",  # DeepseekV4HCACache, DeepseekV4CSACache: per compressor (and indexer) its compressed entries,
    "buffer_kv",  # the keys and gates of the tokens since its last full window,
    "buffer_gate",
    "overlap_kv",  # and (CSA) the overlapping half of its last full window
    "overlap_gate",
)
CACHE_BOOKKEEPING = ("_sliding_window_tensor", "cumulative_length", "indexer_cumulative_length", "seqlen_offset")
# Model outputs that carry the cache: past_key_values (most), cache_params (Mamba, Mamba-2, Falcon-Mamba) and
# state (RWKV: a list of five tensors of B × d × N).
CACHE_OUTPUTS = ("past_key_values", "cache_params", "state")


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    return []


def _held(holder: Any) -> list[torch.Tensor]:
    """The state tensors an object of the cache holds (the cache itself or one of its layers)."""
    held = []
    for name, value in vars(holder).items():
        tensors = _tensors(value)
        if name in CACHE_STATE:
            held += tensors
        elif tensors and name not in CACHE_BOOKKEEPING:
            raise AssertionError(f"{type(holder).__name__}.{name} holds tensors the oracle does not know ({VERSIONS})")
    return held


def _cache_tensors(cache: Any) -> list[torch.Tensor]:
    if isinstance(cache, (list, tuple, torch.Tensor)):  # RWKV's state
        return _tensors(cache)
    return _held(cache) + [t for layer in getattr(cache, "layers", []) for t in _held(layer)]


def _module_tensors(model: torch.nn.Module) -> dict[tuple[str, str], torch.Tensor]:
    """Plain tensor attributes of the modules (neither parameters nor buffers): where RecurrentGemma keeps its
    conv and RG-LRU states (the RG-LRU keeps its state after a forward with ``use_cache=False`` too)."""
    return {
        (name, attr): value
        for name, module in model.named_modules()
        for attr, value in vars(module).items()
        if isinstance(value, torch.Tensor)
    }


def cache_bytes(config: dict[str, Any], batch: int, seq: int, dtype: torch.dtype = torch.float32) -> int:
    """Bytes of every tensor transformers' cache holds after one forward pass of ``batch`` sequences of ``seq``
    tokens on CPU (eager attention, a small random model): keys and values, the conv and recurrent states of
    linear-attention and Mamba layers, wherever the model keeps them (the cache it returns, the one it fills when
    it returns none, and tensors its modules hold after a forward with ``use_cache=True`` but not after one without);
    :class:`TransformersRejected` when the model cannot be built or run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.manual_seed(0)
            model = causal_lm(
                _hf_config(config),
                config["model_type"],
                attn_implementation="eager",
                experts_implementation="batched_mm",
                dtype=dtype,
            )
            ids = torch.randint(0, model.config.vocab_size, (batch, seq))
            inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
            before = {key: id(t) for key, t in _module_tensors(model).items()}
            with torch.no_grad():
                out = model(**inputs, use_cache=True)
                caches = [out[name] for name in CACHE_OUTPUTS if out.get(name) is not None]
                if not caches:  # RecurrentGemma fills a DynamicCache it does not return: pass one in
                    caches = [transformers.DynamicCache(config=model.config)]
                    model(**inputs, use_cache=True, past_key_values=caches[0])
        except Exception as error:  # whatever transformers raises, it refused the config
            raise TransformersRejected(f"{type(error).__name__}: {error}") from error
    tensors = [t for cache in caches for t in _cache_tensors(cache)]
    tensors += [t for key, t in _module_tensors(model).items() if before.get(key) != id(t)]
    return sum(t.numel() * t.element_size() for t in {id(t): t for t in tensors}.values())


CAUSAL_LM_CLASSES = transformers.models.auto.modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES


# Composite classes that need a package the tests do not install: their language model (the text model and the LM
# head) is built as the text config's own causal LM from the composite config's text_config, tied by the composite
# config's top-level tie_word_embeddings as the composite class ties it.
TEXT_ONLY = {
    "Gemma3nForConditionalGeneration": "its vision tower is a timm model (TimmWrapperModel); its language model is "
    "Gemma3nTextModel and an LM head, which Gemma3nForCausalLM is",
    "FastVlmForConditionalGeneration": "its vision tower is a timm model (TimmWrapperModel, FastViTHD); its language "
    "model is the text config's model and an LM head, which its ...ForCausalLM is",
}


@lru_cache(maxsize=256)
def _language_model_total(frozen: str, model_class: str) -> tuple[int, int]:
    config = json.loads(frozen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cfg = _hf_config(config)
            with torch.device("meta"):
                if model_class in TEXT_ONLY:
                    text = cfg.get_text_config()
                    text.tie_word_embeddings = cfg.tie_word_embeddings
                    counted = sum(p.numel() for p in AutoModelForCausalLM.from_config(text).parameters())
                    return counted, -1  # the whole composite model is not built
                if CAUSAL_LM_CLASSES.get(config["model_type"]) == model_class:  # as AutoModelForCausalLM builds it
                    model = AutoModelForCausalLM.from_config(cfg)
                else:
                    model = getattr(transformers, model_class)._from_config(cfg)
        except Exception as error:  # whatever transformers raises, it refused the config
            raise TransformersRejected(f"{type(error).__name__}: {error}") from error
    inner = getattr(model, "model", model)
    text = getattr(inner, "language_model", None) or getattr(inner, "text_model", None)
    text = text or getattr(inner, "text_decoder", None) or getattr(inner, "decoder", None)  # BLIP's, Pix2Struct's
    if text is not None:  # a ...ForConditionalGeneration: its language (text) model and LM head
        head = model.get_output_embeddings()  # None where the language model is a whole ...ForCausalLM with its head
        parts = [*text.parameters(), *(head.parameters() if head is not None else ())]
    elif hasattr(model, "language_model"):  # the language model is a whole ...ForCausalLM (Llama 4)
        parts = list(model.language_model.parameters())
    else:  # the class is the text model itself (less the modules TEXT_WITHOUT names: Chameleon's VQ-VAE)
        other = {
            id(p) for path in TEXT_WITHOUT.get(config["model_type"], ()) for p in model.get_submodule(path).parameters()
        }
        parts = [p for p in model.parameters() if id(p) not in other]
    counted = sum(p.numel() for p in {id(p): p for p in parts}.values())
    return counted, sum(p.numel() for p in model.parameters())


def language_model_total(config: dict[str, Any], model_class: str) -> int:
    """The parameters of the language model of transformers' ``model_class`` built from a composite ``config`` on
    the meta device: ``model.language_model`` and the LM head of a ...ForConditionalGeneration (a tied head once),
    or every parameter when the class is the text model itself."""
    return _language_model_total(_freeze(config), model_class)[0]


def meta_model(config: dict[str, Any], model_class: str):
    """transformers' ``model_class`` built from ``config`` (its ``model_type``'s config class) on the meta device;
    whatever transformers raises is :class:`TransformersRejected`."""
    rest = {k: v for k, v in _build_keys(config).items() if k != "model_type"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cfg = AutoConfig.for_model(config["model_type"], **rest)
            with torch.device("meta"):
                return getattr(transformers, model_class)._from_config(cfg)
        except Exception as error:  # whatever transformers raises, it refused the config
            raise TransformersRejected(f"{type(error).__name__}: {error}") from error


def tower_split(model, towers) -> dict[str, int]:
    """A composite ``model``'s parameters: the whole, its vision ``towers`` (modules) and the projector, the rest
    besides the language model and its LM head (a tied head once)."""
    inner = getattr(model, "model", model)
    text = getattr(inner, "language_model", None) or getattr(inner, "text_model", None)
    text = text or getattr(inner, "text_decoder", None) or inner.decoder  # BLIP's, Pix2Struct's
    head = model.get_output_embeddings()  # None where the text model holds its head (BLIP's text_decoder)
    language = {id(p): p for p in [*text.parameters(), *(head.parameters() if head is not None else ())]}
    whole = sum(p.numel() for p in model.parameters())
    vision = sum(p.numel() for tower in towers for p in tower.parameters())
    projector = whole - vision - sum(p.numel() for p in language.values())
    return {"whole": whole, "vision tower": vision, "projector": projector}


def composite_total(config: dict[str, Any], model_class: str) -> int:
    """Every parameter of ``model_class`` built from ``config`` (the vision tower and projector included)."""
    if model_class in TEXT_ONLY:
        raise TransformersRejected(f"{model_class} is not built here: {TEXT_ONLY[model_class]}")
    return _language_model_total(_freeze(config), model_class)[1]


def assert_counted_as_built(config: dict, built, counted) -> dict:
    """``counted(config)`` (llmcount's counts) equals ``built(config)`` (transformers'), which is returned; a drawn
    config transformers rejects, or llmcount refuses for a stated reason, is rejected as a hypothesis example, and a
    refusal without one fails the test."""
    try:
        want = built(config)
    except TransformersRejected:
        assume(False)
    try:
        got = counted(config)
    except RuleRefusal:
        assume(False)
    except LlmcountError as error:
        pytest.fail(f"refused a config transformers builds: {error}\n{config}")
    assert got == want, f"{config} ({VERSIONS})"
    return want


SMALL_TEXT = {
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 16,
    "vocab_size": 300,
}
"""A language model of one small layer, for the tests that count a tower's FLOPs beside it."""


def drawn_vit(draw, layers: int = 3, widths: tuple[int, ...] = (4, 8), ffs: tuple[int, ...] = (8, 20)) -> dict:
    """A small ViT-shaped tower config (layers, width a multiple of the heads, MLP width) from a hypothesis draw."""
    heads = draw(st.sampled_from([1, 2, 4]))
    return {
        "num_hidden_layers": draw(st.integers(1, layers)),
        "hidden_size": heads * draw(st.sampled_from(list(widths))),
        "num_attention_heads": heads,
        "intermediate_size": draw(st.sampled_from(list(ffs))),
    }
