"""The training snapshot of a family record: what ``memory --training`` needs from it, as plain data that reads
without sympy (:mod:`llmcount.plain_training`).

Made here from the parsed and checked record (sympy), one JSON file per record that has a count snapshot, in
``formulas/compiled_training/``, and ``_common.json`` for what no record changes (the model-state lines' formulas per
dtype and optimizer, the notes). Regenerate them after changing a record, the glossary, the training or activation
code, or this module::

    python -m llmcount.formulas.training_snapshot

and ``tests/test_plain_training.py`` fails while one is stale. A record's file holds:

* for each selection of terms the bundled presets and the record's defaults make (the count snapshot's key), each
  term's path, group and flags, its layers, per-layer count and total compiled, the part of its count tensor
  parallelism divides and the part it keeps (``training.tp_split``), whether tp > 1 is refused for it, the sizes
  tp must divide, whether it is a weight matrix and its two sides (Adafactor's rows + columns), whether it is a
  matmul weight (``flops.is_matmul_weight``) and whether its expression is V·d (Megatron's and DeepSpeed's estimates
  of ``--conventions`` read these); whether the record has state layers; the LoRA formula of
  the usual target lists (:data:`LORA_TARGETS`), by the terms they adapt;
* the record's ``[activations]`` table: each entry's size compiled, and split by monomial as tensor parallelism
  splits it (token-expert pairs, sizes tp splits, the rest: ``Saved.split``), its dtype, layers, condition;
* the activation formulas (sympy's string, text, LaTeX) of the configs the presets and the defaults give under
  each dtype width, attention and recomputation the generator runs, keyed as :mod:`llmcount.plain_training`
  finds them; an option set it did not run is computed through the sympy path.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from pathlib import Path
from typing import Any

from sympy import Add, Integer

from .. import counting, evaluate, plain_training
from ..errors import LlmcountError
from . import activations as act
from . import records
from . import training as tr
from .flops import is_matmul_weight
from .records import Family
from .snapshot import _default_config, _preset_configs, bundled, record_hash, write_folder
from .symbols import V, d, k

RUNS = tuple(itertools.product(("bf16", "fp32"), ("sdpa", "eager"), ("none", "selective", "full")))
"""The compute dtypes, attention implementations and recomputations whose activation formulas are kept (fp16 has
bf16's; flash keeps what sdpa keeps)."""
SEQ, BATCH = 4096, 1


def _names(expr: Any) -> list[str]:
    return sorted(s.name for s in expr.free_symbols)


def common() -> dict[str, Any]:
    """The part no record changes: each dtype's and optimizer's model-state lines (name, bytes compiled over P, P_t,
    P_m, P_o, F, the ZeRO stage from which it is sharded, note, formula whole and sharded), the notes."""
    from ..renderers.filters import text
    from ..renderers.training import STATES_NOTE, ZERO_NOTE

    states = {}
    for compute, optimizer in itertools.product(("fp32", "bf16", "fp16"), tr.OPTIMIZERS):
        lines = []
        for name, formula, stage, note in tr.states(tr.Held(), compute, optimizer):
            sharded = formula / tr.N_dp
            pairs = [[text(formula), str(formula)], [text(sharded), str(sharded)]]
            lines.append([name, evaluate.source(formula), stage, note, *pairs])
        states[f"{compute}|{optimizer}"] = lines
    return {
        "format": plain_training.FORMAT,
        "optimizers": dict(tr.OPTIMIZERS),
        "padded": [s.name for s in tr.TP_PADDED],
        "states": states,
        "activations": {
            "assumptions": act.ASSUMPTIONS,
            "eager_for_sdpa": act.EAGER_FOR_SDPA,
            "no_table": "its record has no [activations] table checked against autograd",
        },
        "notes": {"states": STATES_NOTE, "zero": ZERO_NOTE, "parallel": tr.PARALLEL_ASSUMPTIONS},
    }


def _term(term: Any) -> dict[str, Any]:
    split, kept = tr.tp_split(term, 1)
    try:
        tr.tp_split(term, 2)
        refuse = False
    except LlmcountError:
        refuse = True
    sides = None
    matrix = tr.is_matrix(term)
    if matrix and not term.routed:
        try:
            f_in, f_out = tr.matrix_sides(term)
            sides = evaluate.source(f_in + f_out)
        except LlmcountError:
            sides = None
    return {
        "path": term.path,
        "group": term.group,
        "embedding": term.embedding,
        "routed": term.routed,
        "grad": term.grad,
        "layers": evaluate.source(term.layers),
        "expr": evaluate.source(term.expr),
        "total": evaluate.source(term.total),
        "split": evaluate.source(split),
        "kept": evaluate.source(kept),
        "refuse_tp": refuse,
        "split_symbols": sorted(s.name for s in split.free_symbols & (set(tr.TP_SPLIT) - set(tr.TP_PADDED))),
        "matrix": matrix,
        "sides": sides,
        "matmul": is_matmul_weight(term),
        "vocab_by_d": term.expr == V * d,
    }


LORA_TARGETS = (
    tr.LORA_DEFAULT_TARGETS,
    ("attention",),
    ("mlp",),
    ("q_proj", "v_proj"),
    ("q_proj", "k_proj", "v_proj", "o_proj"),
    ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
)
"""The ``--lora-targets`` whose adapters' formula is kept: the default, each group, PEFT's usual module lists."""


def _lora(terms: Any) -> dict[str, list[str]]:
    """The LoRA formula (text, sympy's string) of each set of adapted terms :data:`LORA_TARGETS` give, by their paths
    joined with commas (:func:`llmcount.plain_training.lora_key`)."""
    from ..renderers.filters import text

    out = {}
    for targets in LORA_TARGETS:
        lora = tr.Lora(1, targets)
        try:
            formula = tr.lora_formula(terms, lora)
        except LlmcountError:
            continue
        if formula != 0:
            out[",".join(t.path for t in terms if lora.adapted(t))] = [text(formula), str(formula)]
    return dict(sorted(out.items()))


def _selection(model: Any) -> dict[str, Any]:
    terms = model.derivation.terms
    used = set().union(*(term.expr.free_symbols for term in terms))
    summed = any(spec.summed and spec.symbol in used for spec in model.architecture.symbols)
    return {"summed": summed, "terms": [_term(term) for term in terms], "lora": _lora(terms)}


def _entry(entry: act.Saved, raw: dict[str, Any], family: Family) -> dict[str, Any]:
    pairs, split, rest = Integer(0), Integer(0), Integer(0)
    for monomial in Add.make_args(entry.expr.expand()):
        if k in monomial.free_symbols:
            pairs += monomial
        elif monomial.free_symbols & set(tr.TP_SPLIT):
            split += monomial
        else:
            rest += monomial
    return {
        "path": entry.path,
        "expr": evaluate.source(entry.expr),
        "pairs": evaluate.source(pairs),
        "split": evaluate.source(split),
        "rest": evaluate.source(rest),
        "dtype": entry.dtype,
        "layers": evaluate.source(entry.layers),
        "layer_symbols": _names(entry.layers),
        "per": entry.per,
        "core": entry.core,
        "cast": entry.cast,
        "fp32_only": entry.fp32_only,
        "summed": bool(entry.summed or entry.expr.free_symbols & family.summed),
        "when": str(raw["when"]) if "when" in raw else None,
        "tp": entry.tp,
    }


def _table(family: Family) -> dict[str, Any] | None:
    parsed = act.table(family)
    if parsed is None:
        return None
    raw = [e for e in family.activations.get("saved", []) if isinstance(e, dict)]
    return {
        "saved": [_entry(e, r, family) for e, r in zip(parsed.saved, raw, strict=True)],
        "refuse": [list(pair) for pair in family.activations.get("refuse", [])],
        "layer_input": evaluate.source(parsed.layer_input),
        "cores": sorted({e.core for e in parsed.saved}),
        "formulas": {},
    }


class _Asked(dict):
    """The formulas of a table as the plain path looks them up: remembers the key it asked for."""

    asked: str | None = None

    def get(self, key, default=None):
        self.asked = key
        return None


def _formulas(table: dict[str, Any], model: Any, counted: Any, shared: dict[str, Any]) -> dict[str, Any]:
    """The activation formulas of one config under each of :data:`RUNS`, by the plain path's key."""
    from ..renderers.filters import latex, text

    found = {}
    keys = plain_training._keys(counted)
    for compute, attention, recompute in RUNS:
        options = act.Options(attention=attention, recompute=recompute)
        try:
            result = act.activations(model.architecture, model.values, compute, BATCH, SEQ, options, model.keys)
        except LlmcountError:
            continue
        asked = _Asked()
        with contextlib.suppress(counting.Fallback, plain_training._Refused):
            plain_training._activations(
                counted,
                {**table, "formulas": asked},
                keys,
                compute,
                BATCH,
                SEQ,
                plain_training.Options(attention, recompute),
                shared,
            )
        if asked.asked is None:
            continue
        levels = result.model_level[:-1] if recompute == "full" else result.model_level
        entry = {
            "kinds": [
                {
                    "name": kind.name,
                    "formula": str(kind.formula),
                    "text": text(kind.formula),
                    "components": [str(c[1]) for c in kind.components],
                }
                for kind in result.per_layer_kind
            ],
            "model_level": [[str(f), text(f)] for _, f, _ in levels],
            "total": [str(result.formula), text(result.formula), latex(result.formula)],
        }
        if recompute == "full":
            checkpoint = result.per_layer_kind[0].formula if result.per_layer_kind else None
            entry["checkpoint"] = None if checkpoint is None else [str(checkpoint), text(checkpoint)]
            entry["heaviest"] = [str(result.model_level[-1][1]), text(result.model_level[-1][1])]
        found[asked.asked] = entry
    return found


def snapshot(family: Family, configs: list[tuple[str, dict[str, Any]]], shared: dict[str, Any]) -> dict[str, Any]:
    """The training snapshot of a record (the module's docstring)."""
    from .config import read_config

    data: dict[str, Any] = {
        "format": plain_training.FORMAT,
        "hash": record_hash(family),
        "name": family.name,
        "states": bool(family.states),
        "selections": {},
        "activations": None,
    }
    table = _table(family)
    formulas: dict[str, Any] = {}
    for source, config in configs:
        try:
            counted = counting.read(config, source)
            model = read_config(config, source)
        except (counting.Fallback, LlmcountError):
            continue
        try:
            data["selections"].setdefault(counted.selection, _selection(model))
        except evaluate.NotCompiled:
            continue
        if table is not None:
            formulas.update(_formulas(table, model, counted, shared))
    data["selections"] = dict(sorted(data["selections"].items()))
    if table is not None:
        table["formulas"] = dict(sorted(formulas.items()))
        data["activations"] = table
    return data


def folder() -> Path:
    return Path(__file__).parent / plain_training.FOLDER


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def wanted() -> tuple[str, ...]:
    """The records that get a training snapshot: those with a current count snapshot."""
    return tuple(name for name in bundled() if counting.compiled(name) is not None)


def expected(names: tuple[str, ...] | None = None) -> dict[str, str]:
    """Each file's name and the text it should hold now (a record without a current count snapshot has none);
    ``names``: only these records' (and the common file)."""
    configs = _preset_configs()
    shared = common()
    out = {plain_training.COMMON: render(shared)}
    for name in wanted() if names is None else names:
        family = records.family(name)
        try:
            data = snapshot(family, [*configs.get(name, []), (f"{name} defaults", _default_config(family))], shared)
        except evaluate.NotCompiled:
            continue
        out[f"{name}.json"] = render(data)
    return out


def main() -> None:
    write_folder(folder(), expected(), "training snapshots")


if __name__ == "__main__":
    main()
