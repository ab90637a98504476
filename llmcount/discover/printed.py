"""``python -m llmcount.discover.printed [MODEL_TYPE ...]``: write in each family record what transformers'
``print(model)`` prints for its model class (its ``[printed]`` table), with every size as a formula in the record's
symbols, so that a write-up prints the module tree of any config of the family as transformers does.

A maintainer tool (it needs torch and transformers): run it after adding records or after re-checking them against a
new transformers release (``tests/test_printed.py`` compares the tree with ``print(model)``). Without model types it
fills every bundled record. The model is built on the meta device from the config class's defaults (or, when they do
not build, from the record's example preset) and read module by module:

* every number of a module's ``extra_repr`` becomes a formula: the input and output width of the record's term for
  that weight (found by its name and checked by value: ``in_features``/``out_features`` of ``Linear``, ``nx``/``nf``
  of ``Conv1D``), else a symbol (or a product of two, a sum of two, a symbol plus or minus one) of that value, else
  the config key of that value (``eps``, ``p``), else the number as printed. Two more builds, each with every size
  the record reads multiplied by 2, 3 or 4 (drawn per key, the two draws unlike), check each choice: the formula
  must give each build's number at the same place too, so that of two formulas of equal value on the defaults (a
  position table's rows and the hidden size, both 1024) the one the model computes is kept, one draw's coincidence
  (h·h and h_kv·d/h both 4096) is caught by the other, and a constant (``stride=(1,)``) stays one; a weight whose
  record formula does not split into its two widths (``d*h_kv*d/h``) may print the formula over one of its symbols;
* the kinds of layer are those of the defaults, of the example preset, and of configs next to the defaults (each
  per-layer list turned by one or reversed, each integer key of the record moved) that have a kind the others do
  not (an attention layer among the dense first layers);
* ``bias=`` of a linear layer says whether the config has the record's ``.bias`` term for it;
* an activation module is the one the config's activation key names (``hidden_act``);
* the decoder layers' ``ModuleList`` is one entry per kind of layer, keyed by the record's terms in such a layer
  (``path*2`` for a term the layer carries twice: two modules, or one twice as wide); the tree collapses repeated
  layers as ``torch.nn.ModuleList.__repr__`` does. Further lists of the same layers (a model of two stacks) are
  ``{layers}`` too. Which layers a term is in comes from the record's layer counts, or, for a count the config does
  not give layer by layer (``N - 1``), from the hand-written ``index`` rule of the record's ``[printed]`` table.

A family whose layers print differently with the same terms, or whose model does not build, is said on stderr and
left without the table (the write-up then shows its generic tree).

Example: ``python -m llmcount.discover.printed qwen3 llama``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import warnings
from typing import Any

from ..files import write_atomic
from ..formulas import records

_HEADER = re.compile(r"^\[printed\]")
_TABLE = re.compile(r"^\[\[?[A-Za-z_]")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])")


class Unprintable(Exception):
    """The family's print(model) cannot be written as a template of its record."""


def _built_through(model_type: str) -> str | None:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return None
    return next((c.name for c in records.composites() if c.text == model_type), None)


def meta_model(config: dict[str, Any]):
    """transformers' causal LM of ``config`` on the meta device (the composite's, for a text type built through one)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    rest = {k: v for k, v in config.items() if k not in ("model_type", "quantization_config")}
    outer = _built_through(config["model_type"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if outer is not None:
            cfg = AutoConfig.for_model(outer, text_config=rest)
        else:
            cfg = AutoConfig.for_model(config["model_type"], **rest)
        with torch.device("meta"):
            return AutoModelForCausalLM.from_config(cfg)


def _with(config: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``config`` with ``key`` set; a dotted key (``attn_config.rope_theta``) inside its sub-object."""
    head, _, leaf = key.partition(".")
    if not leaf:
        return {**config, key: value}
    sub = config.get(head)
    return {**config, head: {**(sub if isinstance(sub, dict) else {}), leaf: value}}


def _configs(model_type: str, given: dict[str, Any]) -> list[dict[str, Any]]:
    """The configs to build from: the class defaults (with the keys ``given``), then the record's example preset."""
    from transformers import AutoConfig

    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.suppress(Exception):  # whatever transformers raises, the class defaults are refused
            config = {**AutoConfig.for_model(model_type).to_dict(), "model_type": model_type}
            for key, value in given.items():
                config = _with(config, key, value)
            found.append(config)
    family = records.family(model_type)
    if family is not None and family.example:
        from ..presets import presets

        preset = presets().get(family.example)
        if preset is not None:
            found.append(preset.config())
    return found


class _Resolver:
    """Numbers of one build -> formulas of the record's symbols, config keys or literals."""

    def __init__(self, model, config: dict[str, Any], varied: list[tuple[Any, Any, dict[str, Any]]] = ()) -> None:
        from sympy import Integer, Mul

        self.model = model
        self.config = config
        # the records read on the varied configs (see _varied) and those configs: a formula must hold on each
        self.varied = [(other, other_config) for other, _, other_config in varied]
        # they tell layers apart or count them, they size nothing
        apart = set((model.architecture.printed or {}).get("by", ())) | {s.name for s in model.layer_indices}
        self.symbols = [(symbol, value) for symbol, value in model.values.items() if symbol.name not in apart]
        self.products = [
            (Mul(a, b), va * vb) for i, (a, va) in enumerate(self.symbols) for b, vb in self.symbols[i:] if va * vb > 1
        ]
        # with a varied build to check them against, sums and neighbours too (d_conv - 1, n + n_zero)
        self.sums = []
        if self.varied:
            self.sums = [(s + Integer(c), v + c) for s, v in self.symbols for c in (-1, 1)]
            self.sums += [(a + b, va + vb) for i, (a, va) in enumerate(self.symbols) for b, vb in self.symbols[i + 1 :]]

    def integer(
        self, value: int, preferred: list[Any], name: str = "", probe: Any = None, seen: tuple | None = None
    ) -> str:
        """``value`` as a formula: one of ``preferred``, else a symbol, a product or a sum of two, that gives
        ``value`` on this build and, where a varied build's number at the same place is given (``seen``, one per
        varied build, None where it has none), that number on that build; else the config key of the value, else
        the number."""
        from sympy import expand

        pools = (((e, None) for e in preferred), self.symbols, self.products, self.sums if seen is not None else ())
        for pool in pools:
            for expr, v in pool:
                if (self._at(expr) if v is None else v) == value and self._fits(expr, seen):
                    return "{" + str(expand(expr)).replace(" ", "") + "}"
        key = self._key(value, name, probe, seen)
        return key if key is not None else str(value)

    def _fits(self, expr, seen: tuple | None) -> bool:
        """Whether ``expr`` gives each varied build's number ``seen`` on it (True when there is none to check), and
        in one of them all its symbols moved: a size a draw left alone tells nothing."""
        builds = [(other, s) for (other, _), s in zip(self.varied, seen or (), strict=False) if s is not None]
        if not builds:
            return True
        if any(self._at(expr, other.values) != s for other, s in builds):
            return False
        return any(
            all(self.model.values.get(s) != other.values.get(s) for s in expr.free_symbols) for other, _ in builds
        )

    def _at(self, expr, values=None) -> int | None:
        try:
            value = expr.subs(self.model.values if values is None else values)
        except (TypeError, ValueError, AttributeError):
            return None
        return int(value) if getattr(value, "is_Integer", False) else None

    def keys(self, value: Any) -> list[str]:
        """The config's keys of this value (and type)."""
        return [
            key
            for key, v in self.config.items()
            if type(v) is type(value) and v == value and re.fullmatch(r"[A-Za-z_]\w*", key)
        ]

    def _key(self, value: Any, name: str = "", probe: Any = None, seen: Any = None) -> str | None:
        """The config key of this value that changes the module when it changes (a rebuild with another value), and
        that has the varied build's value ``seen`` there (when given)."""
        keys = [
            key
            for key in self.keys(value)
            if all(
                s is None or other_config.get(key, value) == s
                for (_, other_config), s in zip(self.varied, seen or (), strict=False)
            )
        ]
        keys = [key for key in keys if probe is not None and probe(key, name)]
        return "{key:" + keys[0] + "=" + json.dumps(value) + "}" if keys else None

    def number(self, text: str, name: str = "", probe: Any = None) -> str:
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return text
        if isinstance(value, float):
            key = self._key(value, name, probe)
            return key if key is not None else text
        return self.integer(value, [], name, probe)


def _term_shapes(term) -> list[Any]:
    """The widths a module of the term prints, in order: (in, out) of a weight matrix, (rows, d) of a table, the size
    of a norm."""
    from sympy import expand

    from ..formulas.flops import is_norm
    from ..formulas.symbols import d
    from ..renderers.tree import linear_shape

    if is_norm(term.path):
        return [term.expr, expand(term.expr / 2)]
    if term.embedding and term.group == "embedding":
        return [expand(term.expr / d), d]
    shape = linear_shape(term)
    if shape is None:  # a Linear with its bias in one term: in·out + out
        parts = expand(term.expr).as_ordered_terms()
        if len(parts) == 2:
            weight, bias = sorted(parts, key=lambda p: len(p.free_symbols))[::-1]
            width = expand(weight / bias)
            if weight.free_symbols > bias.free_symbols and (width.is_Mul or width.is_Symbol):
                shape = (width, bias)
    return list(shape) if shape is not None else [term.expr]


class _Reader:
    """One build read into templates."""

    def __init__(self, model, config: dict[str, Any], hf, varied: list[tuple[Any, Any, dict[str, Any]]] = ()) -> None:
        from transformers.activations import ACT2CLS

        self.model = model
        self.config = config
        self.hf = hf
        self.resolve = _Resolver(model, config, varied)
        # the varied builds' modules by name: their numbers, at the same places, tell formulas of equal value apart
        self.varied_modules = [dict(built.named_modules()) for _, built, _ in varied]
        self.others = self.varied_modules[0] if self.varied_modules else {}
        self.paths = {t.path for t in model.derivation.terms}
        self.acts = {cls_name: name for name, cls_name in _activation_classes(ACT2CLS).items()}
        self.reprs = {name: repr(module) for name, module in hf.named_modules()}
        self.probed: dict[str, dict[str, str]] = {}
        tree = model.architecture.tree or {}
        self.renamed = {v: k for k, v in (tree.get("names") or {}).items()}
        self.layer_lists: list[Any] = []  # the decoder layers' lists (one, or one per stack)
        self.stacks: list[tuple[Any, Any]] = []  # other lists of layers and their counts ({stack:i})
        self.preferred: list[Any] = []  # symbols to size a number by first (a stack's own)
        self.inner: list[dict[str, str]] = []  # lists inside a layer, one module per layer of a count ({stack:i})
        self.times: dict[str, int] = {}  # how many times the layer being read carries each term (2 for k_proj*2)

    def padding(self, module, name: str) -> str | None:
        """``{pad:pad_token_id=default}`` when the embedding's ``padding_idx`` is the config's pad_token_id (torch
        prints ``, padding_idx=…`` only when it is not None): probed with pad_token_id 0, or None."""
        key = "pad_token_id"
        if key not in self.config:
            return None
        value = self.config[key]
        if value is None:
            self.probe(key, name, 0)
            printed_as = self.probed[key].get(name, "")
            found = "padding_idx=0" in printed_as and "padding_idx" not in self.reprs.get(name, "")
        else:
            found = f"padding_idx={value}" in self.reprs.get(name, "") and self.probe(key, name)
        return "{pad:" + key + "=" + json.dumps(value) + "}" if found else None

    def probe(self, key: str, name: str, other: Any = None) -> bool:
        """Whether module ``name`` prints differently when the config's ``key`` changes (a rebuild, once per key)."""
        if key not in self.probed:
            value = self.config[key]
            if other is None:
                other = (
                    ("relu" if value != "relu" else "silu")
                    if isinstance(value, str)
                    else (value + 0.0123 if isinstance(value, float) else value + 1)
                )
            try:
                built = meta_model({**self.config, key: other})
                self.probed[key] = {n: repr(m) for n, m in built.named_modules()}
            except Exception:  # the class refuses the other value: no answer from this key
                self.probed[key] = {}
        changed = self.probed[key]
        return name in changed and changed[name] != self.reprs.get(name)

    def candidates(self, name: str, terms: list[Any]) -> list[Any]:
        """The terms a module's dotted name (within the layer, or the model) may be: by its last name (or the
        record's name for it), a term whose container is the module's parent first."""
        parts = name.split(".")
        leaf = self.renamed.get(parts[-1], parts[-1])
        found = [t for t in terms if t.path.split("/", 1)[1] in (leaf, ".".join(parts[-2:]))]
        if not found and len(parts) > 1 and self.others:  # router.classifier: the record's router (checked by the
            found = [
                t for t in terms if t.path.split("/", 1)[1] == self.renamed.get(parts[-2], parts[-2])
            ]  # varied build)
        parent = parts[-2] if len(parts) > 1 else ""
        return sorted(found, key=lambda t: t.path.split("/", 1)[0] not in _groups(parent))

    def module(self, module, name: str, terms: list[Any], layer_list: Any = None) -> str:
        """The template of one module's repr, as ``torch.nn.Module.__repr__`` writes it; ``{layers}`` for
        ``layer_list``."""
        import torch

        if layer_list is not None and any(module is x for x in [layer_list, *self.layer_lists]):
            return "{layers}"
        for i, (stack, _) in enumerate(self.stacks):
            if module is stack:
                return f"{{stack:{i}}}"
        if isinstance(module, torch.nn.ModuleList):
            return self._module_list(module, name, terms)
        others = [found.get(name) for found in self.varied_modules]
        others = [other if type(other) is type(module) else None for other in others]
        if type(module).__repr__ is not torch.nn.Module.__repr__ and not module._modules:  # Conv1D's own repr
            return self._numbers(repr(module), name, terms, [None if o is None else repr(o) for o in others])
        extra = module.extra_repr()
        pad = self.padding(module, name) if isinstance(module, torch.nn.Embedding) else None
        if pad is not None:
            extra = re.sub(r", padding_idx=-?\d+", "", extra)
        seen = [None if other is None else other.extra_repr() for other in others]
        if pad is not None:
            seen = [s if s is None else re.sub(r", padding_idx=-?\d+", "", s) for s in seen]
        extra = self._numbers(extra, name, terms, seen) + (pad or "")
        children = [
            f"({key}): " + _indent(self.module(child, f"{name}.{key}" if name else key, terms, layer_list))
            for key, child in module._modules.items()
        ]
        act = self._activation(module, name)
        if act is not None and not children:
            return act
        head = _brace(module._get_name()) + "("
        extra_lines = extra.split("\n") if extra else []
        lines = extra_lines + children
        if not lines:
            return head + ")"
        if len(extra_lines) == 1 and not children:
            return head + extra_lines[0] + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"

    def _module_list(self, module, name: str, terms: list[Any]) -> str:
        from ..renderers.tree import module_list

        items = [self.module(item, f"{name}.{i}", terms) for i, item in enumerate(module)]
        count = self._list_count(module, name, terms)
        if count is not None and len(set(items)) == 1 and module._get_name() == "ModuleList":
            entry = {"count": str(count), "text": items[0]}
            if entry not in self.inner:
                self.inner.append(entry)
            return f"{{stack:{len(self.stacks) + self.inner.index(entry)}}}"
        return module_list(items, module._get_name())

    def _list_count(self, module, name: str, terms: list[Any]) -> Any:
        """The layer count of a list inside a layer with one module per layer of that count (Zamba2's adapters, one
        per hybrid layer): a term in scope whose name the list's attribute gives (gate_up_proj_adapter_list holds
        the gate_up_proj_adapters) and whose count is as large as the list; None otherwise."""
        heads = set(_heads(name.rsplit(".", 1)[-1]))
        for term in terms:
            leaf = term.path.split("/", 1)[1].rsplit(".", 1)[-1]
            named = leaf in heads or leaf.removesuffix("s") in heads
            if term.layers != 1 and named and self.resolve._at(term.layers) == len(module):
                return term.layers
        return None

    def _activation(self, module, name: str) -> str | None:
        cls = type(module).__name__
        if cls not in self.acts or list(module.parameters()):
            return None
        keys = [
            key
            for key, value in self.config.items()
            if isinstance(value, str) and value in _ACTIVATIONS and _ACTIVATIONS[value] == repr(module)
        ]
        if len(keys) > 1:
            keys = [key for key in keys if self.probe(key, name)] or keys
        if not keys:
            return None
        return "{act:" + keys[0] + "=" + json.dumps(self.config[keys[0]]) + self._rewrites(keys[0]) + "}"

    def _rewrites(self, key: str) -> str:
        """`` gelu=gelu_pytorch_tanh`` for each activation name the config class replaces by another (GemmaConfig
        reads the released configs' hidden_act "gelu" as "gelu_pytorch_tanh")."""
        from transformers import AutoConfig

        found = []
        for name in _ACTIVATIONS:
            with warnings.catch_warnings(), contextlib.suppress(Exception):
                warnings.simplefilter("ignore")
                read = getattr(AutoConfig.for_model(self.config["model_type"], **{key: name}), key, name)
                if read != name and isinstance(read, str) and read in _ACTIVATIONS:
                    found.append(f" {name}={read}")
        return "".join(found)

    def _numbers(self, extra: str, name: str, terms: list[Any], varied: list[str | None] = ()) -> str:
        """``extra`` (an ``extra_repr``, or a whole repr) with its numbers as formulas, config keys or literals;
        ``varied``: the same module's text in each varied build (None where it has none), whose numbers (at the
        same places) each formula must give there too."""
        if not extra:
            return ""
        count = len(_NUMBER.findall(_brace(extra)))
        seens = [[m.group(0) for m in _NUMBER.finditer(_brace(text))] if text is not None else [] for text in varied]
        seens = [seen if len(seen) == count else [] for seen in seens]
        numbers = [int(m) for m in re.findall(r"\d+", extra)]
        match = None
        named = self.candidates(name, terms) if numbers else []
        for term in named:
            shapes = _term_shapes(term)
            values = {self.resolve._at(e) for e in shapes}
            if set(numbers) & values:
                match = term
                break
        preferred = _term_shapes(match) if match is not None else []
        if match is None and (named or self.preferred):  # a formula that does not split: its own symbols first
            free = sorted(named[0].expr.free_symbols, key=str) if named else self.preferred
            preferred = [*free, *(a * b for i, a in enumerate(free) for b in free[i:])]
            if named and self.others:  # and the formula over each of its factors (a convolution's channels)
                from sympy import Mul, expand, factor

                factors = [f for f in Mul.make_args(factor(named[0].expr)) if f.free_symbols]
                preferred += [*factors, *(expand(named[0].expr / f) for f in factors)]
                # a weight matrix whose order does not split (d*h_kv*d/h): one width a symbol, the other the rest
                preferred += [expand(named[0].expr / s) for s in free]
                preferred += [s + c for s in free for c in (-1, 1)]  # a convolution's padding, d_conv - 1
        times = self.times.get(match.path, 1) if match is not None else 1
        if times > 1:  # a term the layer carries twice in one module (wider) or in two (each as wide as the term)
            preferred += [e * times for e in preferred]
        sides = {"in_features": 0, "nx": 0, "out_features": 1, "nf": 1}

        place = iter(range(len(_NUMBER.findall(_brace(extra)))))

        def number(m: re.Match) -> str:
            text = m.group(0)
            i = next(place)
            before = extra[: m.start()]
            keyword = re.search(r"(\w+)=$", before)
            if "." in text or "e" in text:
                return self.resolve.number(text, name, self.probe)
            value = int(text)
            other = tuple(int(s[i]) if s and re.fullmatch(r"-?\d+", s[i]) else None for s in seens)
            other = other if any(s is not None for s in other) else None
            order = list(preferred)
            if keyword and keyword.group(1) in sides and match is not None and len(preferred) >= 2:
                first = preferred[sides[keyword.group(1)]]
                order = [first, *[e for e in preferred if e is not first]]
            return self.resolve.integer(value, order, name, self.probe, other)

        out = _NUMBER.sub(number, _brace(extra))
        if match is not None and re.search(r"\bbias=(True|False)", out):
            bias = match.path + ".bias"
            if any(c.term.path == bias for c in self.model.architecture.choices):
                out = re.sub(r"\bbias=(True|False)", "bias={bias:" + match.path + "}", out)
        return out


def _groups(parent: str) -> set[str]:
    from ..renderers.tree import CONTAINERS

    return {group for group, (attribute, _) in CONTAINERS.items() if attribute == parent}


def _brace(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _indent(text: str) -> str:
    """``torch.nn.modules.module._addindent(text, 2)``."""
    first, *rest = text.split("\n")
    return "\n".join([first, *[("  " + line) if line.strip() else "" for line in rest]])


def _activation_classes(act2cls) -> dict[str, str]:
    out = {}
    for name, value in act2cls.items():
        cls = value[0] if isinstance(value, tuple) else value
        out[name] = cls.__name__
    return out


_ACTIVATIONS: dict[str, str] = {}


def printed(model_type: str, given: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``[printed]`` table of a record: ``text`` (the tree, ``{layers}`` for the decoder layers' list) and
    ``layers`` (one template per kind of layer and the record's terms in it)."""
    from transformers.activations import ACT2FN

    from ..formulas.config import read_config
    from ..renderers.tree import layer_kinds

    if not _ACTIVATIONS:
        for name in ACT2FN:
            try:
                _ACTIVATIONS[name] = repr(ACT2FN[name])
            except Exception:  # an activation that needs a package: not one a record's default names
                continue
    errors = []
    found: dict[str, Any] | None = None
    configs = _configs(model_type, given or {})
    seen: set[tuple[str, ...]] = set()
    for config in configs:
        try:
            model = read_config(dict(config), model_type)
            kinds = set(layer_kinds(model) or ())
            if found is not None and kinds <= seen:
                continue
            if not seen:  # the first config read: its neighbours with kinds of layer it has not
                configs += _neighbours(model_type, config, kinds)
            seen |= kinds
            hf = meta_model(config)
            table = _table(model, config, hf, _varied(model_type, config, model))
        except Exception as error:  # llmcount or transformers refuses this config: try the next
            errors.append(f"{type(error).__name__}: {str(error)[:200]}")
            continue
        if found is None:
            found = table
            continue
        # the example preset's kinds of layer the defaults do not have (DeepSeek-V2-Lite: q_proj without q LoRA)
        known = {tuple(layer["terms"]) for layer in found["layers"]}
        found["layers"] += [layer for layer in table["layers"] if tuple(layer["terms"]) not in known]
    if found is None:
        raise Unprintable("; ".join(errors) or "no config to build")
    # the kinds of layer the record's table has from builds not made here (a maintainer's --set): kept
    family = records.family(model_type)
    known = {tuple(layer["terms"]) for layer in found["layers"]}
    before = (family.printed or {}).get("layers", ()) if family is not None else ()
    found["layers"] += [dict(layer) for layer in before if tuple(layer["terms"]) not in known]
    return found


def _neighbours(model_type: str, config: dict[str, Any], kinds: set[tuple[str, ...]]) -> list[dict[str, Any]]:
    """Configs next to ``config`` whose layers combine what its layers hold otherwise (an attention layer with the
    dense MLP of the first layers): each per-layer list (a list of one entry per layer) turned by one and reversed,
    each integer key of the record (a pattern's period or offset, the dense layers' count) set to 0 to 2 and one
    above or below its value; those llmcount reads with a kind of layer not among ``kinds``, each kind once."""
    from ..formulas.config import read_config
    from ..renderers.tree import layer_kinds

    family = records.family(model_type)
    spec = next((s for s in family.symbols if s.symbol.name == "N"), None) if family is not None else None
    layers = config.get(spec.key) if spec is not None else None
    if family is None or type(layers) is not int:
        return []
    lists = {
        key: value
        for key, value in config.items()
        if isinstance(value, list) and len(value) == layers > 1 and all(type(x) in (str, bool, int) for x in value)
    }
    changes = [(key, turned) for key, value in lists.items() for turned in (value[1:] + value[:1], value[::-1])]
    for key, default in family.keys.items():
        value = config.get(key)
        if type(default) is int and type(value) is int:
            changes += [(key, other) for other in sorted({0, 1, 2, value - 1, value + 1} - {value}) if other >= 0]
    found, known = [], set(kinds)
    for key, value in changes:
        other = {**config, key: value}
        try:
            new = set(layer_kinds(read_config(dict(other), model_type)) or ()) - known
        except Exception:  # llmcount refuses this neighbour
            continue
        if new:
            found.append(other)
            known |= new
    return found


def _lookup(config: dict[str, Any], key: str) -> Any:
    head, _, leaf = key.partition(".")
    if not leaf:
        return config.get(key)
    sub = config.get(head)
    return sub.get(leaf) if isinstance(sub, dict) else None


VARIED_DRAWS = 300
"""Draws of multipliers that llmcount reads (cheap); of those, the builds tried (a meta build each)."""
VARIED_BUILDS = 6


VARIED = 2
"""Varied builds a number's formula must hold on: two draws tell apart formulas one draw gives alike by chance
(h·h and h_kv·d/h when the draw takes h to 64, h_kv to 16 and d to 16,384) or leaves alone (h_d = d/h with d and h
drawn alike)."""


def _varied(model_type: str, config: dict[str, Any], model) -> list[tuple[Any, Any, dict[str, Any]]]:
    """Up to :data:`VARIED` varied builds (the first draws that build, each unlike the others), each the record, the
    model and the config with each size the record reads multiplied by 2, 3 or 4 (drawn per key,
    keys of equal value told apart where a draw does; the keys that change which modules the model has, such as a
    count of shared blocks, left as they are): a number of the printed tree that two formulas give on ``config`` (a
    position table's rows and the hidden size, both 1024) is the one that also gives the varied build's number at
    the same place. Empty when no draw builds."""
    import random
    import zlib

    family = records.family(model_type)
    if family is None:
        return []
    apart = set((model.architecture.printed or {}).get("by", ())) | {s.name for s in model.layer_indices} | {"N"}
    keys = sorted(
        {
            spec.key
            for spec in family.symbols
            if spec.symbol.name not in apart
            and type(_lookup(config, spec.key)) is int
            and _lookup(config, spec.key) > 0
        }
    )
    if not keys:
        return []
    names = [name for name, _ in meta_model(config).named_modules()]
    rng = random.Random(zlib.crc32(model_type.encode()))
    found = _varied_draw(model_type, config, model, keys, names, rng)
    if found is None and len(keys) > 1:
        # some key changes the modules: keep the keys that each alone leave them as they are
        keys = [key for key in keys if _varied_draw(model_type, config, model, [key], names, rng, 1) is not None]
        found = _varied_draw(model_type, config, model, keys, names, rng) if keys else None
    if found is None:
        return []
    builds = [found]
    if len(keys) > 1:  # a second draw, unlike the first
        second = _varied_draw(model_type, config, model, keys, names, rng, unlike=[found[2]])
        builds += [second] if second is not None else []
    return builds


def _varied_draw(model_type, config, model, keys, names, rng, builds: int = VARIED_BUILDS, unlike=()):
    """The first draw that llmcount reads with the same kinds of layer and transformers builds with the same modules,
    the draws that leave fewest keys of equal value multiplied alike tried first; none of the configs ``unlike``."""
    from ..formulas.config import read_config
    from ..renderers.tree import layer_kinds

    kinds = layer_kinds(model)
    read: list[tuple[int, int, dict[str, Any], Any]] = []
    for i in range(VARIED_DRAWS if len(keys) > 1 else 1):
        times = {key: rng.choice((2, 3, 4)) if len(keys) > 1 else 2 for key in keys}
        other = dict(config)
        for key in keys:
            other = _with(other, key, _lookup(config, key) * times[key])
        if other in unlike:
            continue
        try:
            varied = read_config(dict(other), model_type)
        except Exception:  # llmcount refuses this draw: draw again
            continue
        if layer_kinds(varied) != kinds:
            continue
        alike = sum(
            1 for a in keys for b in keys if a < b and _lookup(config, a) == _lookup(config, b) and times[a] == times[b]
        )
        read.append((alike, i, other, varied))
        if not alike:
            break
    for _, _, other, varied in sorted(read, key=lambda r: r[:2])[:builds]:
        try:
            built = meta_model(other)
        except Exception:  # transformers refuses this draw: the next
            continue
        if [name for name, _ in built.named_modules()] == names:
            return varied, built, other
    return None


def _table(model, config: dict[str, Any], hf, varied: list[tuple[Any, Any, dict[str, Any]]] = ()) -> dict[str, Any]:
    import torch

    from ..formulas.symbols import N
    from ..renderers.tree import layer_kinds, layer_times

    reader = _Reader(model, config, hf, varied)
    total = model.values.get(N)
    lists = [
        (name, module)
        for name, module in hf.named_modules()
        if isinstance(module, torch.nn.ModuleList) and total is not None and len(module) == total
    ]
    if not lists:
        raise Unprintable(f"no ModuleList of {total} layers")
    layer_name, layer_list = lists[0]
    # more stacks of the same layers (a model that runs two stacks of N layers, each counted on 2*N)
    reader.layer_lists = [module for _, module in lists if [repr(x) for x in module] == [repr(x) for x in layer_list]]
    stacks = _stacks(model, hf, reader.layer_lists)
    reader.stacks = [(module, count) for module, count, _ in stacks]
    apart = frozenset(count for _, count, _ in stacks)
    layered = [t for t in model.derivation.terms if t.layers != 1 and t.layers not in apart]
    outside = [t for t in model.derivation.terms if t.layers == 1]
    times = {t.layers: layer_times(model, t.layers) for t in layered}
    keys = layer_kinds(model, apart)
    if keys is None or any(v is None for v in times.values()):
        raise Unprintable("the config does not say which layers each term is in")
    kinds: dict[tuple[str, ...], str] = {}
    printed_as: dict[tuple[str, ...], str] = {}
    for i, (layer, key) in enumerate(zip(layer_list, keys, strict=True)):
        terms = [t for t in layered if times[t.layers][i] > 0]
        if printed_as.setdefault(key, repr(layer)) != repr(layer):
            raise Unprintable(f"layer {i} and an earlier one print differently with the same terms")
        if key not in kinds:
            reader.times = {t.path: times[t.layers][i] for t in terms}
            kinds[key] = reader.module(layer, f"{layer_name}.{i}", terms)
            reader.times = {}
    top = reader.module(hf, "", outside, layer_list)
    texts = []
    for module, count, name in stacks:
        reader.preferred = sorted(
            {s for t in model.derivation.terms if t.layers == count for s in t.expr.free_symbols}, key=str
        )
        terms = [t for t in model.derivation.terms if t.layers == count]
        texts.append({"count": str(count), "text": reader.module(module[0], f"{name}.0", terms)})
        reader.preferred = []
    texts += reader.inner
    given = model.architecture.printed or {}
    layers = [{"terms": list(key), "text": text} for key, text in kinds.items()]
    return {
        "text": top,
        "layers": layers,
        "by": list(given.get("by", ())),
        "when": dict(given.get("when", {})),
        "index": dict(given.get("index", {})),
        "shared": dict(given.get("shared", {})),
        "stacks": texts,
    }


def _heads(attribute: str) -> list[str]:
    """The module names a list's attribute may be the list of: cross_attn_layers -> cross_attn, cross_attn_layers."""
    parts = attribute.split("_")
    return ["_".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _stacks(model, hf, decoder_lists: list[Any]) -> list[tuple[Any, Any, str]]:
    """The lists of layers apart from the decoder's that the record counts on a layer count of their own (a vision
    tower's ``N_vis`` encoder layers): ``(module list, count, name)`` for each ``ModuleList`` of identical layers
    that are as many as a count of the record the config does not give layer by layer, and that hold modules by the
    names of that count's terms (the count whose terms they name most, when several counts are as large)."""
    import torch

    from ..renderers.tree import layer_times

    counts = {t.layers for t in model.derivation.terms if t.layers != 1 and layer_times(model, t.layers) is None}
    sizes = {}
    for count in counts:
        value = count.subs(model.values)
        if getattr(value, "is_Integer", False) and int(value) > 0:
            sizes[count] = int(value)
    found = []
    for name, module in hf.named_modules():
        if not isinstance(module, torch.nn.ModuleList) or any(module is x for x in decoder_lists) or not len(module):
            continue
        if len({repr(x) for x in module}) != 1:
            continue
        inner = {n for n, _ in module[0].named_modules() if n}
        attribute = name.rsplit(".", 1)[-1]  # cross_attn_layers: a list of the term cross_attn.q_proj's modules
        inner |= {f"{head}.{n}" for n in inner for head in _heads(attribute)}
        best, score = None, 0
        for count, size in sizes.items():
            if size != len(module):
                continue
            leaves = [t.path.split("/", 1)[1] for t in model.derivation.terms if t.layers == count]
            hits = sum(1 for leaf in leaves if leaf.removesuffix(".bias") in inner)
            if hits > score:
                best, score = count, hits
        if best is not None and not any(name.startswith(other + ".") for _, _, other in found):
            found.append((module, best, name))
    return found


def _toml_string(text: str) -> str:
    if "'''" not in text and "\r" not in text:
        return "'''\n" + text + "'''"
    return json.dumps(text)


def table(data: dict[str, Any], version: str) -> str:
    """The ``[printed]`` table as TOML."""
    lines = ["[printed]  # print(model) in transformers, sizes as formulas (discover.printed)"]
    if version != records.CHECKED_AGAINST:
        lines.append(f'transformers = "{version}"')
    if data.get("by"):
        lines.append("by = " + json.dumps(data["by"]))
    if data.get("when"):
        lines.append("when = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in data["when"].items()) + " }")
    if data.get("shared"):
        lines.append("shared = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in data["shared"].items()) + " }")
    if data.get("index"):
        lines.append(
            "index = { " + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in data["index"].items()) + " }"
        )
    lines.append("text = " + _toml_string(data["text"]))
    for layer in data["layers"]:
        lines.append("[[printed.layers]]")
        lines.append("terms = " + json.dumps(layer["terms"]))
        lines.append("text = " + _toml_string(layer["text"]))
    for stack in data.get("stacks", ()):
        lines.append("[[printed.stacks]]")
        lines.append("count = " + json.dumps(stack["count"]))
        lines.append("text = " + _toml_string(stack["text"]))
    return "\n".join(lines) + "\n"


def with_table(text: str, printed_table: str) -> str:
    """A record's text with its ``[printed]`` table (and its layers) replaced by ``printed_table``, placed before
    ``[checked]`` (or at the end)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _HEADER.match(line)), None)
    if start is not None:
        end = start + 1
        while end < len(lines) and not (_TABLE.match(lines[end]) and not lines[end].startswith("[[printed.")):
            end += 1
        lines = lines[:start] + lines[end:]
        text = "".join(lines).replace("\n\n\n", "\n\n")
        lines = text.splitlines(keepends=True)
    checked = next((i for i, line in enumerate(lines) if line.startswith("[checked]")), None)
    if checked is None:
        return text.rstrip("\n") + "\n\n" + printed_table
    head = "".join(lines[:checked]).rstrip("\n") + "\n\n"
    return head + printed_table + "\n" + "".join(lines[checked:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmcount.discover.printed", description=__doc__.splitlines()[0])
    parser.add_argument("model_types", nargs="*", help="records to fill (default: every bundled record)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="a key the class defaults need to build (dots1: n_routed_experts=128); dotted keys reach sub-objects",
    )
    args = parser.parse_args(argv)
    given = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        try:
            given[key] = json.loads(value) if sep else None
        except json.JSONDecodeError:
            parser.error(f"--set {item}: the value is not JSON")
    from .checked_keys import records_to_fill

    chosen = records_to_fill("printed needs torch and transformers", args.model_types)
    if isinstance(chosen, int):
        return chosen
    transformers, folder, names = chosen
    failed = 0
    for name in names:
        path = folder / f"{name}.toml"
        if not path.exists():
            continue
        try:
            data = printed(name, given)
        except Unprintable as error:
            print(f"{name}: not written: {error}", file=sys.stderr)
            failed += 1
            continue
        write_atomic(path, with_table(path.read_text("utf-8"), table(data, transformers.__version__)))
        records.load(path)  # the record still parses
        print(f"{name}: {len(data['layers'])} kinds of layer")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
