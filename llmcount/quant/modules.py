"""The module names transformers' model gives a record's weights (``transformer.h.3.attn.c_attn``,
``transformer.blocks.0.ffn.down_proj``), for matching a config's skip lists against the modules that exist.

They are read from the record's ``[printed]`` table, the tree ``print(model)`` prints for the model class
transformers 5.24.0 builds (written by ``python -m llmcount.discover.printed``, checked by tests/test_printed.py):
each ``(name): Class(...)`` line is a module, ``{layers}`` the list of decoder layers, one template per kind of
layer keyed by the record's terms in it. A module is placed on a term of the record as ``verify`` places a
checkpoint tensor (:func:`llmcount.checkpoint.component_path`), else by the term's own name as the module's last
part. A record without the table, a layer kind it does not describe or a term no module names keeps the generic
names (``model.layers.3.self_attn.q_proj``, or the record's ``[tree]`` names).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..formulas.config import Model

_LINE = re.compile(r"^( *)\(([\w.-]+)\): (.*)$")
_RANGE = re.compile(r"^(\d+)-(\d+)$")
MAX_MODULES = 200_000
"""Module names held for one model (layers times modules per layer): beyond it the generic names are kept."""


LINEAR_CLASSES = ("Linear", "FalconLinear", "Conv1D")
"""The printed classes the quantisers look at: ``nn.Linear``; ``FalconLinear``, a subclass of it
(models/falcon/modeling_falcon.py, transformers 5.24.0); transformers' ``Conv1D`` (pytorch_utils.py: weight stored
(in, out), no nn.Linear). Any other class (MoshiLinear, a module holding a Linear; KimiLinearAttention) is a
container, its Linear children listed on their own lines."""


@dataclass(frozen=True)
class Module:
    name: str  # dotted, inside its template
    cls: str  # its class when one of LINEAR_CLASSES, else ""

    @property
    def linear(self) -> bool:
        return bool(self.cls)


Placed = tuple[tuple[str, str], ...]
"""The modules holding a term's weights: (dotted name, its class among LINEAR_CLASSES or "")."""


@dataclass(frozen=True)
class ModuleNames:
    """The model's module names: per layer kind (the sorted term paths in such a layer) and outside the layers,
    the dotted names within a layer (or the model) that each term's weights have."""

    layers_at: str = ""  # the decoder layers' list: ``transformer.h``
    top: Mapping[str, Placed] = field(default_factory=dict)  # term path -> its modules outside the layers
    kinds: Mapping[tuple[str, ...], Mapping[str, Placed]] = field(default_factory=dict)
    layer_kind: tuple[tuple[str, ...] | None, ...] = ()  # per layer index
    every: frozenset[str] = frozenset()  # every module name of the model (empty: not known)

    @classmethod
    def of(cls, model: Model) -> ModuleNames:
        """The names of ``model`` from its record's ``[printed]`` table (empty when it has none)."""
        table = model.architecture.printed
        if not table:
            return cls()
        top_modules = _modules(table["text"])
        layers_at = next((m.name for m in top_modules if m.name.endswith("\0")), "").removesuffix("\0")
        kinds_text = {tuple(layer["terms"]): _modules(layer["text"]) for layer in table.get("layers", [])}
        layer_kind = _layer_kinds(model)
        if not layers_at or len(layer_kind) * max((len(m) for m in kinds_text.values()), default=0) > MAX_MODULES:
            return cls()
        known = frozenset(t.path for t in model.terms)
        layered = frozenset(t.path for t in model.terms if t.layers != 1)
        own = {ending: path for path, ending in model.architecture.checkpoint.names.items()}  # the record's names
        top = _placed([m for m in top_modules if not m.name.endswith("\0")], known - layered, known, layered, "", own)
        kinds = {
            key: _placed(mods, frozenset(key), known, layered, "model.layers.0.") for key, mods in kinds_text.items()
        }
        every = {m.name for m in top_modules if not m.name.endswith("\0")} | {layers_at}
        for i, key in enumerate(layer_kind):
            for m in kinds_text.get(key, ()) if key is not None else ():
                every.add(f"{layers_at}.{i}.{m.name}")
            every.add(f"{layers_at}.{i}")
        return cls(layers_at, top, kinds, tuple(layer_kind), frozenset(every))

    def name(self, path: str, module: str, layer: int | None) -> tuple[str, str] | None:
        """The full module name of the weight ``module`` (the term's leaf, or leaf.part for one of several
        matrices of a term) of the term ``path`` on ``layer``, and its class (one of :data:`LINEAR_CLASSES`, or ""
        when not known); None when the table does not tell it."""
        if layer is None:
            found = self.top.get(path, ())
            prefix = ""
        else:
            if layer >= len(self.layer_kind) or self.layer_kind[layer] not in self.kinds:
                return None
            found = self.kinds[self.layer_kind[layer]].get(path, ())
            prefix = f"{self.layers_at}.{layer}."
        if not found:
            return None
        leaf = path.partition("/")[2]
        tail = module[len(leaf) + 1 :] if module.startswith(leaf + ".") else ""
        if len(found) == 1:
            name, cls = found[0]
            return prefix + name + (f".{tail}" if tail and not cls else ""), cls
        last = module.rpartition(".")[2]
        chosen = [(n, cls) for n, cls in found if n.rpartition(".")[2] == last]
        return (prefix + chosen[0][0], chosen[0][1]) if len(chosen) == 1 else None


def _modules(text: str) -> list[Module]:
    """The modules of a ``[printed]`` template by dotted name (``attn.c_attn``; a ``ModuleList``'s ``(0-3): 4 x``
    entries one by one); the ``{layers}`` line's name ends with NUL."""
    out: list[Module] = []
    stack: list[tuple[int, list[str]]] = []
    for line in text.split("\n"):
        match = _LINE.match(line)
        if match is None:
            continue
        indent, name, rest = len(match.group(1)), match.group(2), match.group(3)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        rest = re.sub(r"^\d+ x ", "", rest)
        ranged = _RANGE.match(name)
        names = [str(i) for i in range(int(ranged.group(1)), int(ranged.group(2)) + 1)] if ranged else [name]
        parents = stack[-1][1] if stack else [""]
        fulls = [f"{parent}.{one}" if parent else one for parent in parents for one in names]
        if len(fulls) > MAX_MODULES:
            return []
        cls = rest.partition("(")[0] if rest.partition("(")[0] in LINEAR_CLASSES else ""
        for full in fulls:
            out.append(Module(full + "\0", "") if rest.startswith("{layers}") else Module(full, cls))
        stack.append((indent, fulls))
    return out


def _placed(
    modules: Iterable[Module],
    terms: frozenset[str],
    known: frozenset[str],
    layered: frozenset[str],
    prefix: str,
    names: Mapping[str, str] | None = None,
) -> dict[str, Placed]:
    """term path -> the modules that hold its weights: placed as ``verify`` places a tensor
    ``<prefix><module>.weight``, else by the term's leaf as the module's last part (of two terms with that leaf,
    the one whose group the module's containers name); the Linear modules among them, else the outermost."""
    from ..checkpoint import Paths, component_path

    paths = Paths(known, layered, dict(names or {}))
    out: dict[str, list[Module]] = {}
    leaves: dict[str, list[str]] = {}
    for path in terms:
        leaves.setdefault(path.partition("/")[2], []).append(path)
    for module in modules:
        path = component_path(f"{prefix}{module.name}.weight", 1 << 30, paths)
        if path not in terms:
            by_leaf = [p for leaf, ps in leaves.items() for p in ps if _ends(module.name, leaf)]
            if len(by_leaf) > 1:  # the same leaf in two groups (GPT-2's c_proj): the one its container names
                by_leaf = [p for p in by_leaf if p.partition("/")[0] in _groups(module.name)] or by_leaf
            if len(by_leaf) > 1:  # ... else the one no other module holds (BERT's two output.dense)
                by_leaf = [p for p in by_leaf if p not in out] or by_leaf
            path = by_leaf[0] if len(by_leaf) == 1 else None
        if path is not None:
            out.setdefault(path, []).append(module)
    placed = {}
    for path, found in out.items():
        linear = [m for m in found if m.linear]
        if linear:  # the Linear modules (a router's gate.wg, not the gate around it)
            placed[path] = tuple((m.name, m.cls) for m in linear)
        else:  # the outermost module (fused experts' container), not what is inside it
            names = [m.name for m in found]
            placed[path] = tuple((n, "") for n in names if not any(n.startswith(o + ".") for o in names))
    return placed


_CONTAINERS = {
    "attention": ("attn", "self_attn", "self_attention", "attention"),
    "mlp": ("mlp", "ffn", "feed_forward"),
    "moe": ("mlp", "moe", "block_sparse_moe", "feed_forward"),
}


def _ends(name: str, ending: str) -> bool:
    return name == ending or name.endswith("." + ending)


def _groups(name: str) -> set[str]:
    """The record groups whose usual container modules appear in a module's dotted name."""
    parts = set(name.split("."))
    return {group for group, names in _CONTAINERS.items() if parts & set(names)}


def _layer_kinds(model: Model) -> list[tuple[str, ...] | None]:
    """Per layer index, the sorted paths of the record's terms on it (biases aside), as the ``[printed]`` table
    keys its layer templates."""
    from ..formulas.symbols import N
    from .stored import _layers

    total = model.values.get(N)
    if not isinstance(total, int) or total > MAX_MODULES:
        return []
    on: list[set[str]] = [set() for _ in range(total)]
    for term in model.derivation.terms:
        if term.layers == 1 or term.path.endswith(".bias"):
            continue
        for i in _layers(model, term):
            if i is not None and i < total:
                on[i].add(term.path)
    return [tuple(sorted(paths)) for paths in on]
