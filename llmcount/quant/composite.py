"""A multimodal config's skip lists read onto its language model's modules.

llmcount sizes a composite model's language model with the text record's module names (``model.layers.3.mlp``,
``lm_head``) and its vision tower and projector apart, kept in the checkpoint dtype. A composite checkpoint's
``modules_to_not_convert`` (or ``llm_int8_skip_modules``, compressed-tensors' ``ignore``, MLX's per-module entries)
names the composite's modules instead, in either of the layouts released checkpoints use:

* transformers 5's, where the language model sits at ``model.language_model`` and the parts at ``model.visual``,
  ``model.vision_tower``, ``model.multi_modal_projector`` (the composite classes' module trees in 5.24);
* the one of transformers 4 and the quantisers that wrote most released files (AutoAWQ, GPTQModel, llm-compressor),
  where Llava-style models put the language model at ``language_model.model`` and its head at
  ``language_model.lm_head``, and Qwen-VL models keep ``model.layers`` and a top-level ``visual``.

transformers 5.24 maps such an entry from the released layout to its own module tree by the model's checkpoint
conversion mapping (``_normalize_modules_to_not_convert`` in quantizers/quantizer_finegrained_fp8.py, using
conversion_mapping.py's renamings ``^language_model.model`` -> ``model.language_model``, ``^visual`` ->
``model.visual`` ...) and then matches it as any other entry (quantizers_utils.py ``should_convert_module``). Here
the same entry is mapped the other way, onto the text record's names: a language-model prefix is replaced by the
text model's own (``model``), ``language_model.lm_head`` becomes ``lm_head``; an entry that names a vision or audio
tower or a projector (its first module, after ``model.``, one of :data:`TOWERS` or the composite record's
``parts_modules``) says the part is left unquantised, which is how llmcount sizes the part already: it is listed in
a note, not matched against the language model.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from .config import Quant

TOWERS = ("visual", "vision_tower", "vision_model", "multi_modal_projector", "audio_tower", "mm_projector")
"""The top-level modules of the parts beside the language model, in the composite classes transformers 5.24 builds
(``Qwen2_5_VLModel.visual``, ``LlavaModel.vision_tower`` and ``multi_modal_projector``, ``MllamaModel.vision_model``,
``Qwen2AudioForConditionalGeneration.audio_tower``) and in LLaVA's original checkpoints (``mm_projector``)."""

_LANGUAGE = (("model.language_model.", ""), ("language_model.model.", ""), ("language_model.", ""))
"""Prefixes of a composite's language model (transformers 5's, then Llava's of transformers 4), in the order tried."""


def _tower(entry: str, parts: tuple[str, ...]) -> bool:
    """Whether ``entry`` (a name, a pattern, or compressed-tensors' ``re:`` pattern) names a part beside the language
    model: its first module after an optional ``model.`` (or a leading ``.*``) is a tower's."""
    text = entry[3:] if entry.startswith("re:") else entry
    text = re.sub(r"^\^?(\.\*|\.\+)?\\?\.?", "", text)
    text = re.sub(r"^model\\?\.", "", text)
    head = re.split(r"\\?\.|\*|\$|\(|\[", text, maxsplit=1)[0]
    return head in TOWERS or head in parts


def _language(entry: str, prefix: str) -> list[str]:
    """The text model's names for an entry on the composite's language model (the entry itself when it has no
    language-model prefix)."""
    regex = entry.startswith("re:")
    text = entry[3:] if regex else entry
    lead = "^" if text.startswith("^") else ""
    text = text.removeprefix("^")
    head = "re:" + lead if regex else lead
    if text in ("language_model.lm_head", r"language_model\.lm_head"):
        return [head + "lm_head"]
    if text in ("language_model", "model.language_model", r"model\.language_model"):
        return [head + prefix] + ([head + "lm_head"] if text == "language_model" else [])
    for old, _ in _LANGUAGE:
        for form in (old, re.escape(old)):
            if text.startswith(form):
                dot = r"\." if form != old else "."
                return [head + prefix + dot + text[len(form) :]]
    return [entry]


def for_language_model(quant: Quant, model: Any) -> tuple[Quant, dict[str, str], tuple[str, ...]]:
    """``quant`` with its skip lists on ``model``'s (a composite's language model) own module names; the translated
    entries -> the config's, to name an unmatched one as the config writes it; the entries that name the tower or
    projector. A model that is no composite is returned as it is."""
    composite = getattr(model, "composite", None)
    if composite is None or not (quant.skip or quant.ignore or quant.overrides):
        return quant, {}, ()
    from .modules import ModuleNames

    layers_at = ModuleNames.of(model).layers_at
    prefix = layers_at.rpartition(".")[0] if "." in layers_at else "model"
    parts = tuple(composite.parts_modules)
    back: dict[str, str] = {}
    towers: list[str] = []

    def mapped(entries: tuple[str, ...]) -> tuple[str, ...]:
        out: list[str] = []
        for entry in entries:
            if _tower(entry, parts):
                towers.append(entry)
                continue
            for name in _language(entry, prefix):
                back.setdefault(name, entry)
                out.append(name)
        return tuple(dict.fromkeys(out))

    overrides: dict[str, Any] = {}
    for key, value in quant.overrides.items():
        if _tower(key, parts):
            towers.append(key)
            continue
        for name in _language(key, prefix):
            overrides[name] = value
    changed = replace(quant, skip=mapped(quant.skip), ignore=mapped(quant.ignore), overrides=overrides)
    return changed, back, tuple(dict.fromkeys(towers))
