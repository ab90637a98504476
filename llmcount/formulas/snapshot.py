"""The compiled snapshot of a family record: what ``count`` needs from it, as plain data that reads without sympy.

Made here, from the parsed and checked record (sympy), and read by :mod:`llmcount.counting` (no sympy). One JSON
file per bundled language-model record in ``formulas/compiled/``; regenerate them all after changing a record, the
glossary or this module::

    python -m llmcount.formulas.snapshot

and ``tests/test_counting.py`` fails while one is stale. A snapshot holds:

* the reading rules: [keys] defaults, each symbol's key and the texts of its default, null, strings, adjust and
  absent conditions, the [layers] conditions, checks and refusals (conditions are compiled again from their text
  by the same compiler, which needs no sympy);
* each term's ``when`` and, for each way the config can set the layer counts it lies on (a count that is 0, one
  that is all N layers, or neither), its total and activated counts as :func:`llmcount.evaluate.source` texts, the
  symbols they use, its formula as ``count`` prints it, or that it is left out (on no layer);
* what decides which values a count lists (the symbols of the cost formulas, of the activation tables, of the
  sliding window);
* the whole formula (``P = ...`` and the JSON's total and activated) of the selections of terms the bundled presets
  and the record's own defaults make, each counted by both paths and checked equal as it is made; a config that
  selects other terms is counted without sympy in a batch, and shown through the sympy path;
* for each of those selections, its forward FLOPs formula, eager and causal (each term's forward FLOPs as text and
  compiled, the layers of its kind, the rule of thumb, the conventions, the texts ``flops`` prints), which
  ``flops`` and ``llmcount.flops`` evaluate without sympy, and each one's weights formula when the record keeps
  parameters in fp32;
* the record's ``[checkpoint]`` names and each term's layers (1 for a term once per model), which ``verify``
  reads (:mod:`llmcount.plain_verify`);
* the memory plans of the configs the presets and the defaults give (``memory``'s cache, per kind of layer, compiled,
  with its formulas for each width of the cache's dtype), which ``memory`` and ``llmcount.memory`` evaluate without
  sympy (:mod:`llmcount.plain_memory`).

A bundled file beside the records, checked by a test, rather than a cache built at run time in the user's home: the
first run is as fast as the others, nothing is written outside the package, no cache can be stale or planted, and
the snapshot is reviewed with the record it comes from. Each file carries the hash of its record's text, so a
record edited in place without regenerating is read through the sympy path, never with an old snapshot.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

from sympy import Integer

from .. import evaluate
from ..counting import FORMAT, Compiled, Fallback, _record_bytes
from ..errors import LlmcountError
from ..files import write_atomic
from . import records
from .records import NONE, REQUIRED, Family
from .symbols import GLOSSARY, N

FOLDER = "compiled"
MAX_VARIANTS = 81  # ways one term's layer counts can be set (3 per layer count it lies on): 4 counts at most


def record_hash(family: Family) -> str | None:
    """The SHA-256 of a bundled record's text (and of the record it is an alias of), as :func:`counting.compiled`
    checks it; None without one."""
    texts = [_record_bytes(name) for name in (family.name, *([family.shares] if family.shares else []))]
    if any(t is None for t in texts):
        return None
    return hashlib.sha256(b"\0".join(texts)).hexdigest()


def _names(exprs: Any) -> list[str]:
    return sorted({s.name for e in exprs if e is not None for s in e.free_symbols})


def _condition(value: Any) -> str | None:
    """A default, null or strings entry as the text its condition compiles from: an integer or an expression."""
    return None if value is None else str(value)


def _symbol(spec: records.SymbolSpec) -> dict[str, Any]:
    written = spec.written
    entries = "distinct" if spec.distinct else "sum" if spec.summed else "same" if spec.same else ""
    entries = "length" if spec.length else entries
    entries = "largest" if spec.largest else entries
    entries = "indices" if spec.indices else entries
    default = "required" if spec.default is REQUIRED else "none" if spec.default == NONE else None
    null = written.get("null")
    return {
        "name": spec.symbol.name,
        "positive": bool(spec.symbol.is_positive),
        "key": spec.key,
        "default": default or _condition(written["default"]),
        "default_text": spec.default_text,
        "null": None if null is None else "none" if null == NONE else _condition(null),
        "strings": {text: _condition(rule) for text, rule in (written.get("strings") or {}).items()},
        "zero": spec.zero_is_none,
        "adjust": _condition(written.get("adjust")),
        "adjust_text": spec.adjust_text,
        "entries": entries,
        "on": spec.on.name if spec.on is not None else None,
        "absent": _condition(written.get("absent")),
        "absent_text": spec.absent_text,
        "ratio": spec.ratio,
    }


def _variants(family: Family, choice: records.Choice) -> dict[str, dict[str, Any]]:
    """The term of ``choice`` under each way the config sets the layer counts it lies on: the key names each count
    that is 0 or N (as ``Family.terms_for`` replaces it), the value what ``count`` needs of the term then."""
    term = choice.term
    counts = [s for s, _, _ in family.layers if s.name in _counts(family, choice)]
    if 3 ** len(counts) > MAX_VARIANTS:
        raise evaluate.NotCompiled(f"{term.path} lies on {len(counts)} layer counts")
    out = {}
    for states in itertools.product(("", "0", "N"), repeat=len(counts)):
        replacements = {s: Integer(0) if state == "0" else N for s, state in zip(counts, states, strict=True) if state}
        key = ",".join(f"{s.name}={state}" for s, state in zip(counts, states, strict=True) if state)
        layers = term.layers.subs(replacements) if replacements else term.layers
        if layers == 0:
            out[key] = {"drop": True}
            continue
        runs = term.runs.subs(replacements) if replacements and term.runs is not None else term.runs
        chosen = replace(term, layers=layers, runs=runs)
        from ..renderers.filters import text

        out[key] = {
            "total": evaluate.source(chosen.total),
            "activated": evaluate.source(chosen.activated),
            "used": _names([chosen.total, chosen.activated]),
            "text": text(chosen.total),
            "str": str(chosen.total),
            "layers": 1 if layers == 1 else str(layers),
            **({"mtp": _mtp_formula(family.mtp, chosen)} if family.mtp is not None else {}),
        }
    return out


def _mtp_formula(spec: Any, term: Any) -> list[str] | None:
    """The formula of a decoder term in the MTP module (``mtp.module``'s: N_mtp · share · the term per layer), as
    ``count --json`` and ``count``'s table show it; None for a term outside the layers or one the module lacks."""
    from ..renderers.filters import text
    from .symbols import N_mtp

    part = spec.share_of(term.path)
    if term.layers == 1 or part is None:
        return None
    per_layer = term.layers.subs(N, 1) if spec.share else 1
    shown = str(N_mtp * part * per_layer * term.expr)
    return [shown, text(shown)]


def _mtp(family: Family) -> dict[str, Any]:
    """The record's ``[mtp]`` table as ``counting.mtp_module`` reads it: the key of N_mtp (a symbol spec), the keys
    that make the decoder layer the MTP layer, each decoder path prefix's share, and the module's own weights (their
    condition's text, formulas as ``count`` shows them and compiled)."""
    from ..renderers.filters import text

    spec = family.mtp
    return {
        "count": _symbol(spec.count),
        "decoder": dict(spec.decoder),
        "share": {prefix: [int(part.p), int(part.q)] for prefix, part in spec.share.items()},
        "terms": [
            {
                "path": c.term.path,
                "when": c.when_text or None,
                "str": str(c.term.total),
                "text": text(str(c.term.total)),
                "total": evaluate.source(c.term.total),
                "activated": evaluate.source(c.term.activated),
                "embedding": c.term.embedding,
            }
            for c in spec.terms
        ],
        "note": spec.note,
        "source": spec.source,
    }


def _counts(family: Family, choice: records.Choice) -> list[str]:
    """The layer counts a term lies on (its layers, or the layers that run it), in the record's order."""
    free = choice.term.layers.free_symbols | choice.term.run_layers.free_symbols
    return [s.name for s, _, _ in family.layers if s in free]


def _checkpoint(family: Family) -> dict[str, Any]:
    """The record's ``[checkpoint]`` table, as ``verify`` reads it (:mod:`llmcount.plain_verify`)."""
    names = family.checkpoint
    return {
        "names": dict(names.names),
        "shared": dict(names.shared),
        "buffers": list(names.buffers),
        "float32": list(names.float32),
    }


def _window(family: Family) -> dict[str, Any] | None:
    spec = family.attention
    if spec is None or spec.window is None:
        return None
    sliding = spec.sliding
    return {
        "symbols": _names([spec.window, sliding]),
        "per_kind": spec.per_kind,
        "windowed": evaluate.source(spec.windowed),
        "windowed_symbols": _names([spec.windowed]),
        "sliding": evaluate.source(sliding) if sliding is not None else None,
        "cache_sliding": evaluate.source(spec.cache_sliding) if spec.cache_sliding is not None else None,
    }


def _saved(family: Family) -> list[dict[str, Any]]:
    out = []
    entries = [e for e in (family.activations or {}).get("saved", []) if isinstance(e, dict)]
    for entry, (_when, expr, layers) in zip(entries, family.saved_sizes, strict=True):
        out.append(
            {
                "when": str(entry["when"]) if "when" in entry else None,
                "layers": evaluate.source(layers),
                "symbols": _names([expr, layers]),
                "layer_symbols": _names([layers]),
            }
        )
    return out


def _shown(model: Any) -> dict[str, Any]:
    """The whole formula of a model read through the sympy path, as ``count`` shows it, and its FLOPs formula."""
    from ..renderers.filters import ordered_text

    d = model.derivation
    shown = {"total": str(d.total), "activated": str(d.activated), "P": ordered_text(d.grouped())}
    if model.architecture.is_moe:
        shown["P_act"] = ordered_text(d.grouped(True))
    flops = _flops(model)
    if flops is not None:
        shown["flops"] = flops
    weights = _fp32_weights(model)
    if weights is not None:
        shown["fp32_weights"] = weights
    return shown


MEMORY_BITS = (64, 32, 16, 8, 4)  # the widths of the dtypes a memory line's formula is written for (dtypes.BITS)


def _pair(expr: Any) -> list[str]:
    """A memory formula as the table prints it and as the JSON writes it."""
    from ..renderers.filters import text

    return [text(expr), str(expr)]


def _fp32_weights(model: Any) -> dict[str, Any] | None:
    """The weights line of a 16-bit model whose record keeps some parameters in fp32 (``memory._weights_line``):
    its formula per 16-bit width and the paths of the terms kept in fp32; None when the record keeps none."""
    from . import memory as mem

    kept = model.architecture.fp32_weights
    terms = [t for t in model.derivation.terms if t.path in kept]
    if not terms:
        return None
    fp32 = sum((t.total for t in terms), Integer(0))
    formula = (mem.P - fp32) * 16 / 8 + fp32 * 32 / 8
    return {"paths": list(dict.fromkeys(t.path for t in terms)), "formula": _pair(formula)}


def _memory_names(family: Family) -> list[str]:
    """The symbols whose presence in a config's values decides how its cache is described (``memory.layer_kinds``:
    the window, the caching layers that slide, the attention layers that slide)."""
    spec = family.attention
    if spec is None or spec.window is None:
        return []
    return _names([spec.window, spec.cache_windowed, spec.windowed])


def _memory_key(names: list[str], present: Any, equal: bool) -> str:
    """The key of a memory plan: which of ``names`` a config's values hold, and whether its sliding caching layers
    are all its caching layers."""
    return ",".join(name for name in names if name in present) + ("|all" if equal else "")


def _memory_plan(family: Family, values: dict[Any, int]) -> dict[str, Any]:
    """What ``memory`` computes of a config's cache (``memory.layer_kinds`` at its values, before the kinds on no
    layer are dropped): each kind's layers, elements (cache dtype and fp32) compiled, its note and formula per width;
    for each way kinds can be on no layer, the kv_cache and state lines' formulas per width; the elements per token;
    the expanded MLA cache."""
    from . import memory as mem

    kinds = mem.layer_kinds(family, values)
    out: dict[str, Any] = {"kinds": [], "lines": {}}
    for k in kinds:
        formulas = {str(bits): _pair(k.elements * bits / 8 + k.elements_fp32 * 32 / 8) for bits in MEMORY_BITS}
        out["kinds"].append(
            {
                "kind": k.kind,
                "layers": evaluate.source(k.layers),
                "elements": evaluate.source(k.elements),
                "fp32": evaluate.source(k.elements_fp32),
                "state": k.is_state,
                "note": k.note,
                "formula": formulas,
            }
        )
    if len(kinds) > 6:
        raise evaluate.NotCompiled(f"{len(kinds)} kinds of layer in the cache")
    for pattern in itertools.product((False, True), repeat=len(kinds)):
        chosen = [k for k, on in zip(kinds, pattern, strict=True) if on]
        lines = {}
        for bits in MEMORY_BITS:
            formula = {}
            for name, state in (("kv_cache", False), ("state", True)):
                parts = [k.elements * bits / 8 + k.elements_fp32 * 32 / 8 for k in chosen if k.is_state == state]
                formula[name] = _pair(sum(parts, Integer(0))) if parts else None
            lines[str(bits)] = formula
        out["lines"]["".join("1" if on else "0" for on in pattern)] = lines
    spec = family.attention
    out["per_token"] = None
    if spec is not None:
        with_sizes = {**values, mem.S: 1, mem.B: 1}
        indexer = spec.indexed * spec.indexed_kv if spec.indexed is not None and spec.indexed_dtype else None
        out["per_token"] = {
            "elements": evaluate.source(mem.kv_elements_per_token(spec, values=with_sizes)),
            "indexer": None if indexer is None else evaluate.source(indexer),
            "indexer_dtype": spec.indexed_dtype if indexer is not None else None,
        }
    out["expanded"] = None
    if spec is not None and spec.kv_expanded is not None:
        expanded = sum(
            (k.elements for k in mem.layer_kinds(family, values, expanded=True) if not k.is_state), Integer(0)
        )
        formulas = {str(bits): _pair(expanded * bits / 8) for bits in MEMORY_BITS}
        out["expanded"] = {"elements": evaluate.source(expanded), "note": spec.expanded_note, "formula": formulas}
    return out


def _memory(family: Family, models: list[Any]) -> dict[str, Any] | None:
    """The memory plans of a record (:func:`_memory_plan`) for the configs ``models`` were read from, by
    :func:`_memory_key`, with what ``counting.memory`` needs to choose one and to refuse what it does not take (the
    window, the longest S); None for a record that says nothing of its cache (``memory`` refuses it by name)."""
    from . import memory as mem
    from .derivation import evaluate_int

    if family.attention is None and not family.states and not family.caches:
        return None
    names = _memory_names(family)
    spec = family.attention
    out: dict[str, Any] = {
        "names": names,
        "sliding": None,
        "window": None,
        "longest": None,
        "weights": {str(bits): _pair(mem.P * bits / 8) for bits in MEMORY_BITS},
        "plans": {},
    }
    if spec is not None and spec.window is not None:
        out["sliding"] = [evaluate.source(spec.cache_windowed), evaluate.source(spec.cache_layers)]
        out["window"] = [evaluate.source(spec.window), _names([spec.window])]
    if spec is not None and spec.longest is not None:
        out["longest"] = [evaluate.source(spec.longest), _names([spec.longest])]
    for model in models:
        values = model.values
        present = {s.name for s in values}
        equal = False
        if spec is not None and spec.window is not None and spec.window.free_symbols <= set(values):
            equal = evaluate_int(spec.cache_windowed, values, "sliding") == evaluate_int(
                spec.cache_layers, values, "layers"
            )
        key = _memory_key(names, present, equal)
        if key not in out["plans"]:
            try:
                out["plans"][key] = _memory_plan(family, values)
            except LlmcountError:
                continue  # refused by name (a window below 2): the sympy path words it
    out["plans"] = dict(sorted(out["plans"].items()))
    return out


def _flops(model: Any) -> dict[str, Any] | None:
    """The forward FLOPs formula of a model's selection of terms (``Flops``, eager and causal): each term's path, its
    forward FLOPs as text and compiled, and the layers of its kind (a term on none is left out); the rule of thumb,
    the conventions, the whole formula as text (and, with each term's, as ``flops`` prints it); the longest S the
    record's [attention] describes (beyond it the sympy path reads the formula that runs there) and the symbols of
    the window (a config without one: no layer slides). None where the formula is refused or not compiled: the sympy
    path evaluates it, and words any error."""
    from .flops import Flops

    out: dict[str, Any] = {}
    try:
        for causal in (False, True):
            formula = Flops(model.derivation, causal=causal)
            out["causal" if causal else "eager"] = {
                "terms": [
                    [t.path, str(t.forward), evaluate.source(t.forward), evaluate.source(t.present)]
                    for t in formula.terms
                ],
                "forward": str(formula.forward),
                "per_token": str(formula.per_token),
                "convention": formula.convention,
                **_flops_text(formula),
            }
        out["rule_of_thumb"] = evaluate.source(formula.rule_of_thumb)
    except (LlmcountError, evaluate.NotCompiled):
        return None
    out["conventions"] = _conventions(model)
    spec = model.architecture.attention
    longest = spec.longest if spec is not None else None
    out["longest"] = None if longest is None else [evaluate.source(longest), _names([longest])]
    window = spec.window if spec is not None else None
    out["window"] = None if window is None else [_names([window]), _names([spec.sliding])]
    return out


def _conventions(model: Any) -> dict[str, Any] | None:
    """What ``conventions.ingredients`` reads of a model's selection of terms besides its counts, compiled: each
    linear weight's forward FLOPs (its group, whether it is a router), the norms Megatron counts as weights, the
    attention layers and widths, the state layers (with Megatron's formula) and the record's own operations. None
    where the record's FLOPs are refused or an expression is not compiled: the sympy path reads them, and words any
    error."""
    from .conventions import _uneven
    from .flops import is_matmul_weight, linear_flops, state_flops

    derivation = model.derivation
    family = derivation.architecture
    spec = family.attention
    try:
        state_flops(derivation)
        weights = [
            [
                t.group,
                t.path.startswith("moe/router"),
                evaluate.source(linear_flops(t).layers * linear_flops(t).per_token),
            ]
            for t in derivation.terms
            if is_matmul_weight(t)
        ]
        attention = None
        if spec is not None:
            widths = {"layers": spec.layers, "qk": spec.qk, "v": spec.v}
            widths |= {"qk_sum": spec.total("qk"), "v_sum": spec.total("v")}
            attention = {key: evaluate.source(expr) for key, expr in widths.items()} | {"uneven": _uneven(family)}
        states = [
            [
                state.name,
                evaluate.source(state.layers),
                None if state.megatron is None else evaluate.source(state.megatron.expr),
                None if state.megatron is None else [state.megatron.function, state.megatron.note],
                sorted(state.groups),
            ]
            for state in family.states
        ]
        return {
            "weights": weights,
            "megatron_norms": [evaluate.source(t.layers * t.expr) for t in derivation.terms if t.megatron_weight],
            "attention": attention,
            "states": states,
            "own_ops": [[op.path, evaluate.source(op.layers)] for op in family.flops],
        }
    except (LlmcountError, evaluate.NotCompiled):
        return None


def _flops_text(formula: Any) -> dict[str, Any]:
    """What ``flops`` prints of a FLOPs formula: each term's forward FLOPs and the per-token sum in reader's order,
    as the terminal writes them."""
    from ..renderers.filters import ordered_text, text

    return {"texts": [text(t.forward) for t in formula.terms], "grouped": ordered_text(formula.grouped())}


def snapshot(family: Family, configs: list[tuple[str, dict[str, Any]]] = ()) -> dict[str, Any]:
    """The snapshot of a bundled record: see the module's docstring. :class:`evaluate.NotCompiled` when an
    expression has a node the numeric path does not take."""
    order = [e.symbol.name for e in GLOSSARY]
    names = {spec.symbol.name for spec in family.symbols} | {s.name for s, _, _ in family.layers}
    data = {
        "format": FORMAT,
        "hash": record_hash(family),
        "shares": family.shares,
        "name": family.name,
        # a composite of the same model_type (a flat config) counts its towers too: the sympy path reads it
        **({"composite": True} if records.composite(family.name) is not None else {}),
        "title": family.title,
        "is_moe": family.is_moe,
        "counted": family.counted,
        "not_counted": family.not_counted,
        "mtp": _mtp(family) if family.mtp is not None else False,  # false: no module (a table is never empty)
        "checked_version": family.checked_version,
        "seen": (
            sorted(family.checked_keys | family.read_keys() | records.COMMON_KEYS)
            if family.checked_keys is not None
            else None
        ),
        "aliases": {key: list(names) for key, names in family.aliases.items()},
        "keys": dict(family.keys),
        "per_layer": family.per_layer,
        "layer_kinds": {key: [sorted(k.kinds), k.length, k.legacy] for key, k in family.layer_kinds.items()},
        "symbols": [_symbol(spec) for spec in family.symbols],
        "layers": [[symbol.name, text] for symbol, _, text in family.layers],
        "checks": [[rule.text, rule.message] for rule in family.checks],
        "refuse": [[rule.text, rule.message] for rule in family.refuse],
        "order": [name for name in order if name in names],
        "choices": [
            {
                "path": c.term.path,
                "when": c.when_text or None,
                "embedding": c.term.embedding,
                "counts": _counts(family, c),
                "variants": _variants(family, c),
            }
            for c in family.choices
        ],
        "cost_symbols": _names(family.cost_exprs),
        "choice_symbols": sorted(s.name for s in family.choice_symbols),
        "layer_symbols": [s.name for s, _, _ in family.layers],
        "saved": _saved(family),
        "window": _window(family),
        "checkpoint": _checkpoint(family),
        "selections": {},
    }
    data["selections"] = dict(sorted(_selections(data, list(configs)).items()))
    from .config import read_config

    models = []
    for source, config in configs:
        try:
            models.append(read_config(config, source))
        except LlmcountError:
            continue
    data["memory"] = _memory(family, models)
    return data


def _preset_configs() -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """The bundled presets' configs by model_type (those a language-model record reads directly)."""
    from ..presets import presets

    found: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for preset in presets().values():
        config = preset.config()
        if isinstance(config.get("model_type"), str):
            found.setdefault(config["model_type"], []).append((f"preset {preset.name}", config))
    return found


def _default_config(family: Family) -> dict[str, Any]:
    """A config of the record's own defaults: its [keys] as the record defaults them, each size it requires 64:
    the selection of terms a config that leaves the switches alone makes."""
    config: dict[str, Any] = {"model_type": family.name}
    # an empty list stands for the key left out (a list the class derives from other keys): a config gives none
    config.update({key: value for key, value in family.keys.items() if "." not in key and value != []})
    for spec in family.symbols:
        if spec.default is REQUIRED and "." not in spec.key:
            config.setdefault(spec.key, 64)
    return config


def _selections(data: dict[str, Any], configs: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The selections of terms ``configs`` make, read by the compiled path from ``data`` (a snapshot without them),
    each with its whole formula from the sympy path; each count checked equal on both paths."""
    from .config import read_config

    family = Compiled(data)
    found = {}
    for source, config in configs:
        try:
            counted = family.read(config, source)
            model = read_config(config, source)
        except (Fallback, LlmcountError):
            continue
        if model.counts.total != counted.total or model.counts.values != counted.values:
            raise AssertionError(f"{source}: the compiled count differs from the sympy path's")
        found[counted.selection] = _shown(model)
    return found


def bundled() -> tuple[str, ...]:
    """The records that get a snapshot: every bundled language-model record (families/ and remote/)."""
    return tuple(sorted({*records.names(), *records.remote_names()}))


def folder() -> Path:
    return Path(str(resources.files(records.__package__).joinpath(FOLDER)))


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=False, ensure_ascii=False) + "\n"


def expected() -> dict[str, str]:
    """Each snapshot file's name and the text it should hold now (a record the numeric path does not take has
    none)."""
    configs = _preset_configs()
    out = {}
    for name in bundled():
        family = records.family(name)
        try:
            data = snapshot(family, [*configs.get(name, []), (f"{name} defaults", _default_config(family))])
        except evaluate.NotCompiled:
            continue
        out[f"{name}.json"] = render(data)
    return out


def write_folder(target: Path, wanted: dict[str, str], what: str = "snapshots") -> None:
    """Make ``target`` hold exactly the JSON files ``wanted`` (name: text), writing only those that differ."""
    target.mkdir(exist_ok=True)
    for path in target.glob("*.json"):
        if path.name not in wanted:
            path.unlink()
    changed = 0
    for name, text in wanted.items():
        path = target / name
        if not path.exists() or path.read_text("utf-8") != text:
            write_atomic(path, text)
            changed += 1
    print(f"{len(wanted)} {what} in {target}, {changed} written", file=sys.stderr)


def main() -> None:
    write_folder(folder(), expected())


if __name__ == "__main__":
    main()
