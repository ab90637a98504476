"""One jinja2 Environment for every output format; templates format only through filters.

``render(name, **context)`` fills ``templates/<name>``; ``formula_data`` and ``count_data``
give the JSON forms of a Derivation and of a model's counts.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

import jinja2

from ..formulas.config import Model
from ..formulas.derivation import ACTIVATED_DEFINITION, EMBEDDING_DEFINITION, Derivation
from ..formulas.symbols import GLOSSARY
from . import fit  # noqa: F401 -- registers the wrap and fit_table filters before the environment is made
from .filters import FILTERS, escape

FORMATS = ("text", "markdown", "latex")
_SUFFIX = {"text": "txt", "markdown": "md", "latex": "tex"}


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("llmcount.renderers", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        extensions=["jinja2.ext.do"],
    )
    env.filters.update(FILTERS)
    env.globals.update(ACTIVATED_DEFINITION=ACTIVATED_DEFINITION, EMBEDDING_DEFINITION=EMBEDDING_DEFINITION)
    env.globals.update(GLOSSARY_ZH=glossary_zh(), NOTES_ZH=notes_zh(), TEXTS_ZH=texts_zh())
    return env


@cache
def glossary_zh() -> dict[str, dict[str, str]]:
    """The Chinese terms of the write-ups (glossary_zh.toml), table by table: {"head": {"total": "总参数量"}, ...}."""
    from pathlib import Path

    import tomllib

    data = tomllib.loads(Path(__file__).with_name("glossary_zh.toml").read_text("utf-8"))
    return {table: {key: row["zh"] for key, row in rows.items()} for table, rows in data.items()}


@cache
def _records_zh() -> dict[str, dict[str, str]]:
    from pathlib import Path

    import tomllib

    return tomllib.loads(Path(__file__).with_name("notes_zh.toml").read_text("utf-8"))


def notes_zh() -> dict[str, str]:
    """The Chinese of the records' notes on each weight (notes_zh.toml), keyed by the English note."""
    return _records_zh()["notes"]


def texts_zh() -> dict[str, str]:
    """The Chinese of the records' other prose (counted, not_counted, attention notes), keyed by the English."""
    return _records_zh()["texts"]


def render(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)


def render_formula(derivation: Derivation, fmt: str, activated: bool = False, title: str = "") -> str:
    """The family's formula (total, or activated) in one of FORMATS."""
    family = derivation.architecture
    glossary = [  # each symbol with the key this family reads it from (BART's N: decoder_layers, not num_hidden_layers)
        replace(e, key=family.key_of(e.symbol) or e.key) for e in GLOSSARY if e.symbol in derivation.symbols
    ]
    return render(
        f"formula.{_SUFFIX[fmt]}.j2",
        d=derivation,
        activated=activated,
        title=_markdown_title(title or derivation.architecture.title, fmt),
        glossary=glossary,
    )


def _markdown_title(title: str, fmt: str) -> str:
    """A title for a Markdown heading made literal (a model's name comes from a folder's name: ``<img ...>``, a
    fence, ``$``); the LaTeX templates escape theirs, text shows it as it is."""
    return escape(title, "markdown") if fmt == "markdown" else title


def render_count(model: Model, width: int | None = None, mtp: bool = False) -> str:
    """The table of a model's components, formulas and exact counts, for a terminal: lines of at most
    ``width`` characters (the formula column and the formulas below wrap), or unbounded (``None``). A composite
    model counted whole shows each part (language model, vision tower, projector) and the whole model's total. A
    checkpoint's MTP module is a line under the table, or (``mtp``) rows of the table and part of its totals."""
    from ..formulas import mtp as mtp_module

    module = mtp_module.require(model) if mtp else mtp_module.module(model)
    if model.parts or model.whole_total is not None:  # a composite whose optional towers are not given: whole too
        return render("count_parts.txt.j2", model=model, summary=summary_data(model), width=width)
    return render(
        "count.txt.j2", model=model, counts=model.counts, d=model.derivation, width=width, mtp=module, with_mtp=mtp
    )


def formula_data(derivation: Derivation) -> dict[str, Any]:
    """The JSON form of ``formula``: sympy strings in the glossary's symbols and their LaTeX."""
    latex = FILTERS["latex"]
    data: dict[str, Any] = {"family": derivation.architecture.name}
    family = derivation.architecture
    if family.not_counted:  # the record counts part of a larger model (an encoder-decoder's decoder)
        data["scope"] = {"counted": family.counted, "not_counted": family.not_counted}
    parts = {"total": derivation.total, "activated": derivation.activated}
    if derivation.per_layer is not None:
        parts["per_layer"] = derivation.per_layer
    if derivation.per_dense_layer is not None:
        parts["per_dense_layer"] = derivation.per_dense_layer
    for key, expr in parts.items():
        data[key] = str(expr)
    data["latex"] = {key: latex(expr) for key, expr in parts.items()}
    data["symbols"] = {s.name: family.key_of(s) or e.key for e in GLOSSARY if (s := e.symbol) in derivation.symbols}
    data["activated_definition"] = ACTIVATED_DEFINITION
    return data


def summary_data(model: Model, language_model: bool = False) -> dict[str, Any]:
    """The model and its four counts, exact integers: how the JSON of ``count`` and ``writeup`` begins. A composite
    model's counts are the whole model's when every part is counted; when a part is left out, they are the language
    model's and their keys say so (``language_model_total``, ...): no partial count under ``total``. With
    ``language_model``, a composite model's counts are its language model's (what a write-up derives), so named."""
    counts = model.counts
    data = {
        "model": model.name,
        "family": model.architecture.name,
        "source": model.source,
        "total": counts.total,
        "activated": counts.activated,
        "embedding": counts.embedding,
        "non_embedding": counts.non_embedding,
    }
    if model.composite is not None and model.whole_total is not None and not language_model:  # the whole model
        whole = model.whole_total
        data["model"] = model.whole_name or model.name
        others = [part.model.counts for part in model.parts]
        embedding = counts.embedding + sum(c.embedding for c in others)
        data.update(
            total=whole,
            activated=counts.activated + sum(c.activated for c in others),
            embedding=embedding,
            non_embedding=whole - embedding,
        )
        data["composite"] = {
            "model_type": model.composite.name,
            "title": model.composite.title,
            "counted": f"the whole model, as {model.composite.model} builds it",
        }
    elif model.composite is not None:  # a multimodal config with a part left out: the counts are its language model's
        for key in ("total", "activated", "embedding", "non_embedding"):
            data[f"language_model_{key}"] = data.pop(key)
        data["composite"] = {
            "model_type": model.composite.name,
            "counted": f"the language model only (text_config, read as {model.architecture.name})",
            "not_counted": model.composite.left_out or ", ".join(part.role for part in model.parts),
        }
        if model.parts and not language_model:  # the parts it counts, beside the one left out: a partial total
            data["partial_total"] = counts.total + sum(part.model.counts.total for part in model.parts)
            data["composite"]["counted"] = (
                f"the language model (text_config, read as {model.architecture.name}) and "
                f"{', '.join(part.role for part in model.parts)}, as {model.composite.model} builds them"
            )
    if model.architecture.not_counted:  # the record counts part of a larger model (an encoder-decoder's decoder)
        data["scope"] = {"counted": model.architecture.counted, "not_counted": model.architecture.not_counted}
    return data


def _part_data(model: Model, part: str, record: str, config: str) -> dict[str, Any]:
    counts = model.counts
    return {
        "part": part,
        "record": record,
        "config": config,
        "total": counts.total,
        "components": [
            {"path": c.path, "formula": str(c.formula), "count": c.count, "activated": c.activated}
            for c in counts.components
        ],
        "values": counts.values,
        "formula": str(model.derivation.total),
    }


def count_data(model: Model, mtp: bool = False) -> dict[str, Any]:
    """The JSON form of ``count``: exact integers, components in reader's order. A composite model counted whole
    adds ``parts``: the language model, the vision tower and the projector, each with its record, components,
    values and formula (the components, values and formula at the top level are the language model's). A
    checkpoint's MTP module is under ``mtp``; with ``mtp`` its components follow the model's and the totals include
    it (``total_without_mtp``)."""
    from ..counting import with_mtp
    from ..formulas import mtp as mtp_module

    counts = model.counts
    module = mtp_module.require(model) if mtp else mtp_module.module(model)
    data = {
        **summary_data(model),
        "components": [
            {"path": c.path, "formula": str(c.formula), "count": c.count, "activated": c.activated}
            for c in counts.components
        ],
        "values": counts.values,
        "formula": {"total": str(model.derivation.total), "activated": str(model.derivation.activated)},
        "definitions": {"activated": ACTIVATED_DEFINITION, "embedding": EMBEDDING_DEFINITION},
    }
    if model.parts:
        data["parts"] = [
            _part_data(model, "language model", model.architecture.name, "text_config"),
            *(_part_data(p.model, p.role, p.model.architecture.name, p.read_from) for p in model.parts),
        ]
    with_mtp(data, counts, module, mtp)
    return data


# --- costs: flops, memory, verify ----------------------------------------------------------------------------------
# (imported here, in this section, to keep the shared top of the module untouched)
from ..checkpoint import Verification  # noqa: E402
from ..formulas.flops import RULE_DEFINITION, TRAINING_DEFINITION, FlopCounts, Flops  # noqa: E402
from ..formulas.memory import Memory  # noqa: E402
from ..plain_verify import verify_data as verify_data  # noqa: E402  (the JSON of verify, shared with the CLI)


def render_flops(
    model: Model, flops: Flops, counts: FlopCounts, training: bool = False, width: int | None = None
) -> str:
    """The FLOPs table of ``flops`` evaluated as ``counts``, for a terminal of ``width`` columns (``None``:
    unbounded); ``training`` adds the training figure and the 6·N·tokens rule of thumb."""
    return render(
        "costs_flops.txt.j2",
        width=width,
        model=model,
        f=flops,
        c=counts,
        training=training,
        training_definition=TRAINING_DEFINITION,
        rule_definition=RULE_DEFINITION,
    )


def render_flops_formula(flops: Flops, fmt: str, title: str = "") -> str:
    """The forward FLOPs formula of a family in one of FORMATS."""
    glossary = [e for e in GLOSSARY if e.symbol in flops.symbols]
    title = _markdown_title(title or flops.derivation.architecture.title, fmt)
    return render(f"costs_formula.{_SUFFIX[fmt]}.j2", f=flops, title=title, glossary=glossary)


def render_memory(model: Model, memory: Memory, width: int | None = None) -> str:
    """The memory table, for a terminal of ``width`` columns (``None``: unbounded)."""
    return render("costs_memory.txt.j2", model=model, m=memory, width=width)


def render_verify(verification: Verification) -> str:
    return render("costs_verify.txt.j2", v=verification)


def flops_formula_data(flops: Any) -> dict[str, Any]:
    """The JSON form of ``formula --flops``: sympy strings in the glossary's symbols (with S, B) and LaTeX."""
    parts = {"forward": flops.forward, "per_token": flops.per_token, "training": flops.training}
    return {
        "family": flops.derivation.architecture.name,
        **{key: str(expr) for key, expr in parts.items()},
        "latex": {key: FILTERS["latex"](expr) for key, expr in parts.items()},
        "components": [{"path": t.path, "formula": str(t.forward)} for t in flops.terms],
        "symbols": {e.symbol.name: e.key for e in GLOSSARY if e.symbol in flops.symbols},
        "convention": flops.convention,
    }


def flops_data(model: Model, flops: Flops, counts: FlopCounts) -> dict[str, Any]:
    """The JSON form of ``flops``: exact integers, components in reader's order."""
    return {
        "model": model.name,
        "family": model.architecture.name,
        "seq": counts.seq,
        "batch": counts.batch,
        "causal": flops.causal,
        "forward_flops": counts.forward,
        "per_token": counts.per_token if isinstance(counts.per_token, int) else float(counts.per_token),
        "training_flops": counts.training,
        "rule_of_thumb_flops": counts.rule_of_thumb,
        "rule_of_thumb_relative_error": float(counts.rule_error),
        "convention": counts.convention,
        "components": [{"path": c.path, "formula": str(c.formula), "flops": c.flops} for c in counts.components],
        "formula": {"forward": str(flops.forward), "per_token": str(flops.per_token)},
        "definitions": {"training": TRAINING_DEFINITION, "rule_of_thumb": RULE_DEFINITION},
    }


def memory_data(model: Model, memory: Memory) -> dict[str, Any]:
    """The JSON form of ``memory``: exact bytes; formulas in the glossary's symbols, P = total parameters."""
    from ..plain_memory import memory_data as common

    data = common(model, memory)
    if memory.mode == "training":
        data["gradients_bytes"] = memory.bytes_of("gradients")
        data["optimizer_bytes"] = sum(memory.bytes_of(name) for name in ("master_weights", "adam_m", "adam_v"))
    return data
