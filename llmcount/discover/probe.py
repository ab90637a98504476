"""The transformers side of discovery: config class defaults, and models built on the meta device.

Imported only by ``python -m llmcount.discover`` (a maintainer tool): it needs torch and transformers.
"""

from __future__ import annotations

import logging
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

transformers.logging.set_verbosity_error()
transformers.logging.disable_progress_bar()
logging.getLogger("transformers").setLevel(logging.ERROR)

VERSIONS = f"transformers {transformers.__version__}, torch {torch.__version__}"
_INDEX = re.compile(r"\.(\d+)(?=\.)")


class Refused(Exception):
    """transformers' config class or model constructor refused a config."""


@dataclass(frozen=True)
class Tensor:
    """One kind of parameter tensor of a build: its name with layer (and expert) indices replaced by ``*``."""

    key: str  # model.layers.*.self_attn.q_proj.weight
    layer: int | None  # the layer index, None outside the layers
    shape: tuple[int, ...]
    module: str  # the class name of the module holding it
    norm: bool
    embedding: bool


@dataclass(frozen=True)
class Build:
    """What one config builds: every parameter tensor (tied ones once) and the config's attributes."""

    tensors: tuple[Tensor, ...]
    attributes: dict[str, Any]
    total: int
    layers: int  # how many layer indices the parameter names carry
    model_class: str  # LlamaForCausalLM
    prefix: str  # the attribute holding the base model (model, transformer, gpt_neox)
    config_class: str  # LlamaConfig
    shared: dict[str, str]  # a tied tensor's kind -> the kind whose Parameter object it is (lm_head -> embed_tokens)
    lists: dict[str, int] = field(default_factory=dict)  # ModuleLists of single modules -> their length: see build
    # a kind whose Parameters are shared by several layers (Zamba's shared_transf: one block every hybrid layer runs)
    # -> the layers that use a Parameter first built on another layer; the tensors are listed once, on that layer
    uses: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def table(self) -> dict[tuple[str, int | None], list[tuple[int, ...]]]:
        """(key, layer) -> the shapes of the tensors under that key in that layer (several for expert lists)."""
        out: dict[tuple[str, int | None], list[tuple[int, ...]]] = {}
        for t in self.tensors:
            out.setdefault((t.key, t.layer), []).append(t.shape)
        return out


def class_defaults(model_type: str) -> dict[str, Any]:
    """The config class's defaults, as its ``to_dict`` writes them; where ``to_dict`` writes another layout than the
    config holds (DORY's layer_types as attention and mlp blocks, every layer count doubled, which the class halves
    again when it reads them), the values it holds, when the class reads those back unchanged."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = AutoConfig.for_model(model_type)
        out = config.to_dict()
        held = {}
        for key, value in out.items():
            mine = _attribute(config, key)
            same_kind = isinstance(value, (int, list)) and not isinstance(value, bool) and type(mine) is type(value)
            if same_kind and mine != value:
                held[key] = mine
        if not held:
            return out
        try:
            again = AutoConfig.for_model(model_type, **{k: v for k, v in {**out, **held}.items() if k != "model_type"})
        except Exception:  # the held values refused: the written layout stays
            return out
        return {**out, **held} if all(_attribute(again, k) == v for k, v in held.items()) else out


def config_class(model_type: str) -> type:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return type(AutoConfig.for_model(model_type))


def subconfig_classes(model_type: str) -> dict[str, str]:
    """Key -> the class name of the sub-config the class defaults hold under it (DBRX's ``attn_config``:
    ``DbrxAttentionConfig``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = AutoConfig.for_model(model_type)
    out = {}
    for key in config.to_dict():
        value = _attribute(config, key)
        if isinstance(value, transformers.PretrainedConfig):
            out[key] = type(value).__name__
    return out


def subconfig_sizes(model_type: str) -> dict[str, int]:
    """The integer keys of the sub-configs the class defaults hold, as dotted keys with their defaults (DBRX's
    ``ffn_config.moe_num_experts``: 4): the keys each sub-config class declares, not those every config has
    (``chunk_size_feed_forward``, token ids). One level deep, as a record reads nested keys."""
    common = set(transformers.PretrainedConfig().to_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = AutoConfig.for_model(model_type)
    out = {}
    for head in subconfig_classes(model_type):
        for leaf, value in _attribute(config, head).to_dict().items():
            if leaf not in common and isinstance(value, int) and not isinstance(value, bool):
                out[f"{head}.{leaf}"] = value
    return out


def attribute_map(model_type: str) -> dict[str, str]:
    """The config class's other names for its keys: alias -> key."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dict(getattr(type(AutoConfig.for_model(model_type)), "attribute_map", {}) or {})


def docstring_meaning(model_type: str, key: str) -> str:
    """The first sentence the config class's docstring (or a base class's) gives ``key`` (a dotted key: its
    sub-config class's docstring): a glossary entry's draft; "" when none describes it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = AutoConfig.for_model(model_type)
    head, _, leaf = key.rpartition(".")
    config_class = type(_attribute(config, head) if head else config)
    key = leaf
    for klass in config_class.__mro__:
        doc = klass.__dict__.get("__doc__") or ""
        found = re.search(rf"^\s*{re.escape(key)} \([^\n]*\):\s*\n((?:[ \t]+\S[^\n]*\n?)+)", doc, re.M)
        if found:
            text = " ".join(found.group(1).split())
            return re.split(r"(?<=\.)\s", text, maxsplit=1)[0][:300]
    return ""


def modeling_source(model_type: str) -> str:
    """The source of the model's modeling module (where its layers read the config): "" when it cannot be read."""
    import importlib
    import inspect

    from transformers.models.auto.configuration_auto import model_type_to_module_name

    name = model_type_to_module_name(model_type)
    try:
        return inspect.getsource(importlib.import_module(f"transformers.models.{name}.modeling_{name}"))
    except (ImportError, OSError, TypeError):
        return ""


def layer_kind_names() -> tuple[str, ...]:
    """The per-layer kinds transformers' configs allow in ``layer_types`` and ``mlp_layer_types``."""
    from transformers import configuration_utils

    return tuple(getattr(configuration_utils, "ALLOWED_LAYER_TYPES", ()))


def _is_norm(module: torch.nn.Module) -> bool:
    name = type(module).__name__
    return isinstance(module, torch.nn.LayerNorm) or name.endswith(("RMSNorm", "LayerNorm", "Norm"))


def _split(name: str, kept: frozenset[str] = frozenset()) -> tuple[str, int | None]:
    """``model.layers.3.mlp.experts.5.w1.weight`` -> (``model.layers.*.mlp.experts.*.w1.weight``, 3). An index into
    one of the ``kept`` containers (an ``nn.Sequential`` after the layer index: CTRL's ``ffn.0`` and ``ffn.2``, two
    Linears of other shapes, not copies of one module) stays in the name."""
    indices = _INDEX.findall(name)
    if not kept:
        return _INDEX.sub(".*", name), (int(indices[0]) if indices else None)
    original = name.split(".")
    parts = list(original)
    numeric = [i for i, part in enumerate(parts[:-1]) if part.isdigit() and i > 0]
    for i in numeric[1:]:  # the first index is the layer's
        if ".".join(original[:i]) not in kept:
            parts[i] = "*"
    if numeric:
        parts[numeric[0]] = "*"
    return ".".join(parts), (int(indices[0]) if indices else None)


def _module_lists(model: torch.nn.Module) -> frozenset[str]:
    """The names of the ModuleLists outside any indexed container whose entries are single modules holding their own
    parameters (Linears, Embeddings, norms: Gemma 3n's ``altup_projections``), not blocks of them: a list of such is
    no stack of layers, and its index is no layer index."""
    out = []
    for name, module in model.named_modules():
        if not name or not isinstance(module, torch.nn.ModuleList) or _INDEX.search(name + "."):
            continue
        entries = list(module.children())
        single = all(next(e.children(), None) is None for e in entries)
        if entries and single and next(module.parameters(), None) is not None:
            out.append(name)
    return frozenset(out)


def _outside_layers(name: str, lists: frozenset[str]) -> str | None:
    """``name`` with every index as ``*`` when its first index is into one of ``lists`` (see :func:`_module_lists`):
    a tensor outside the layers, one of a list of like modules; None otherwise."""
    parts = name.split(".")
    first = next((i for i, part in enumerate(parts[:-1]) if part.isdigit() and i > 0), None)
    if first is None or ".".join(parts[:first]) not in lists:
        return None
    return ".".join("*" if part.isdigit() and i > 0 else part for i, part in enumerate(parts))


def _key_and_layer(name: str, kept: frozenset[str], lists: frozenset[str]) -> tuple[str, int | None]:
    """:func:`_split`, but a tensor of one of the ``lists`` of like modules outside the layers has no layer."""
    outside = _outside_layers(name, lists)
    return (outside, None) if outside is not None else _split(name, kept)


def _sequentials(model: torch.nn.Module) -> frozenset[str]:
    """The names of the ``nn.Sequential`` containers (not ModuleLists of copies) that hold parameters."""
    return frozenset(
        name
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Sequential) and name and any(True for _ in module.parameters())
    )


def _attribute(config: Any, key: str) -> Any:
    """The config's (global) value of ``key``, a dotted key read inside its sub-config. A heterogeneous config (Gemma 4,
    Dots3: per-layer overrides of some keys) refuses a plain read of a per-layer key; its global value, the one the
    config was given, is read the way transformers' own code reads it."""
    head, _, leaf = key.partition(".")
    if leaf:
        return _attribute(_attribute(config, head), leaf)
    try:
        return getattr(config, key, None)
    except Exception:  # AmbiguousGlobalPerLayerAttributeError, or a property that cannot be computed
        read = getattr(config, "_getattr_without_heterogeneous_validation", None)
        try:
            return read(key, None) if read is not None else None
        except Exception:
            return None


def nested(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with each dotted key (``ffn_config.moe_num_experts``) put inside its sub-config's mapping, beside
    the keys that mapping holds already; a sub-config given as None or not at all then holds only those keys (the
    sub-config class defaults the others)."""
    out = {k: v for k, v in values.items() if "." not in k}
    for key, value in values.items():
        head, dot, leaf = key.partition(".")
        if dot:
            sub = out.get(head)
            out[head] = {**(sub if isinstance(sub, dict) else {}), leaf: value}
    return out


def build(
    model_type: str, overrides: dict[str, Any], drop: tuple[str, ...] = (), outside: frozenset[str] | None = None
) -> Build:
    """Build ``AutoModelForCausalLM`` for the class defaults with ``overrides`` (keys in ``drop`` left out so
    that the class computes them) on the meta device. ``outside``: the ModuleLists of single modules (see
    :func:`_module_lists`, listed with their lengths in ``Build.lists``) that lie outside the layers, whose index is no
    layer index (Gemma 3n's ``altup_projections``; not XLM's ``layer_norm1``, one per layer); None: every first
    index is a layer's."""
    kwargs = nested({k: v for k, v in overrides.items() if k not in drop})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            config = AutoConfig.for_model(model_type, **kwargs)
            with torch.device("meta"):
                model = AutoModelForCausalLM.from_config(config)
        except Exception as error:  # whatever transformers raises, it refused the config
            raise Refused(f"{type(error).__name__}: {error}") from error
    modules = dict(model.named_modules())
    kept = _sequentials(model)
    lists = _module_lists(model) & (outside or frozenset())

    tensors = []
    seen: dict[int, tuple[str, int | None]] = {}
    shared: dict[str, str] = {}
    uses: dict[str, set[int]] = {}
    layers: set[int] = set()
    for name, parameter in model.named_parameters(remove_duplicate=False):
        key, layer = _key_and_layer(name, kept, lists)
        if id(parameter) in seen:  # a tied weight: the tensor of a parameter seen before, counted once
            first, at = seen[id(parameter)]
            if first == key and layer is not None and at is not None and layer != at:  # one module, several layers
                uses.setdefault(key, set()).add(layer)
                layers.add(layer)
            else:
                shared[key] = first
            continue
        seen[id(parameter)] = (key, layer)
        owner = modules[name.rsplit(".", 1)[0]] if "." in name else model
        if layer is not None:
            layers.add(layer)
        tensors.append(
            Tensor(
                key=key,
                layer=layer,
                shape=tuple(parameter.shape),
                module=type(owner).__name__,
                norm=_is_norm(owner),
                embedding=isinstance(owner, torch.nn.Embedding),
            )
        )
    attributes = {k: _attribute(config, k) for k in overrides}
    for key in drop:
        attributes[key] = _attribute(config, key)
    total = sum(p.numel() for p in model.parameters())
    return Build(
        tuple(tensors),
        attributes,
        total,
        len(layers),
        type(model).__name__,
        model.base_model_prefix,
        type(config).__name__,
        shared,
        {name: len(modules[name]) for name in _module_lists(model)},
        {k: tuple(sorted(v)) for k, v in uses.items()},
    )
