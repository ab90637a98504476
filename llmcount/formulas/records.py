"""Family records: one TOML file per ``model_type`` in ``families/``, loaded lazily and checked as it loads.

The format is described in ``families/README.md``. A :class:`Family` holds a record's parts parsed once:
symbols and how the config gives them, the other keys with their defaults, layer-count conditions, checks,
refusals, the ordered terms and, optionally, what the cost formulas need to know about attention.
"""

from __future__ import annotations

import keyword
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache, cached_property, lru_cache
from importlib import resources
from typing import Any, NamedTuple

from sympy import Expr, Integer, Symbol

from .. import evaluate
from ..errors import LlmcountError
from .blocks import ONE, Term
from .expressions import Condition, RecordError, Unknown, condition, condition_names, formula
from .reading import NONE, REQUIRED
from .symbols import BY_NAME, B, H_img, L_aud, N, S, W_img

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CHECKED_AGAINST = "5.24.0"
"""The transformers version the bundled records were checked against (the oracle the tests pin in
``.ci/constraints.txt``); a record's ``[checked] transformers`` names its own where it differs. A message of a record
that names the version writes ``{transformers}``, read as ``transformers <that version>``."""

# Keys any config.json may carry whatever its model_type, which no record lists in [checked]: the fields of
# transformers' PreTrainedConfig and the keys its __post_init__ takes and drops (configuration_utils.py, 5.24.0: dtype
# and torch_dtype, the legacy RoPE keys of modeling_rope_utils.py's convert_rope_params_to_dict, the generation
# parameters of GenerationConfig._get_default_generation_params, name_or_path, _commit_hash, the attention and experts
# implementations), the keys the Hub and from_pretrained add (auto_map, quantization_config; mlx-lm's save_config
# writes its scheme as quantization beside quantization_config, which llmcount.quant reads), and the attributes
# PretrainedConfig.__init__ of transformers 4.x saved into every config.json (token ids, label maps, tokenizer_class)
COMMON_KEYS = frozenset(
    {
        *("model_type", "transformers_version", "architectures", "_name_or_path", "name_or_path", "_commit_hash"),
        *("dtype", "torch_dtype", "auto_map", "quantization_config", "quantization"),
        *("output_hidden_states", "output_attentions"),
        *("return_dict", "use_return_dict", "chunk_size_feed_forward", "is_encoder_decoder", "id2label", "label2id"),
        *("num_labels", "problem_type", "attn_implementation", "experts_implementation"),
        *("_attn_implementation_internal", "_experts_implementation_internal", "_attn_implementation_autoset"),
        *("rope_theta", "rope_scaling", "partial_rotary_factor"),
        *("bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id"),
        *("tokenizer_class", "prefix", "task_specific_params", "finetuning_task", "pruned_heads", "torchscript"),
        *("tf_legacy_loss", "use_bfloat16", "tie_encoder_decoder", "cross_attention_hidden_size"),
        # generation parameters
        *("assistant_confidence_threshold", "assistant_lookbehind", "bad_words_ids", "begin_suppress_tokens"),
        *("diversity_penalty", "do_sample", "early_stopping", "encoder_no_repeat_ngram_size"),
        *("encoder_repetition_penalty", "epsilon_cutoff", "eta_cutoff", "exponential_decay_length_penalty"),
        *("forced_bos_token_id", "forced_eos_token_id", "length_penalty", "max_length", "min_length"),
        *("no_repeat_ngram_size", "num_assistant_tokens", "num_assistant_tokens_schedule", "num_beam_groups"),
        *("num_beams", "num_return_sequences", "output_scores", "remove_invalid_values", "repetition_penalty"),
        *("return_dict_in_generate", "suppress_tokens", "target_lookbehind", "temperature", "top_k", "top_p"),
        *("typical_p", "use_cache"),
    }
)

# REQUIRED: a symbol's key without a default; NONE: null = "none", the symbol then has no value (defined with the
# reader, which needs no sympy)
NULL = "null"  # a [keys] default written "null": the config class's default is None (TOML has no null)


@dataclass(frozen=True)
class SymbolSpec:
    """How a config gives one symbol: its key, the default when the key is absent, what null means."""

    symbol: Symbol
    key: str
    default: Any = REQUIRED  # REQUIRED, NONE (absent: no value), or a Condition computing it from the symbols before it
    default_text: str = ""
    null: Any = None  # None: null is refused; NONE: no value; else a Condition
    strings: Mapping[str, Any] = field(default_factory=dict)  # a string value ("auto") -> a Condition
    zero_is_none: bool = False  # zero = "none": a value of 0 means what null means (no value)
    adjust: Any = None  # a Condition: the size the model builds from the key's value (named by the symbol)
    adjust_text: str = ""
    distinct: bool = False  # entries = "distinct": the key is a list of names, the symbol how many distinct ones
    summed: bool = False  # entries = "sum": the key is a list of one integer per layer, the symbol their sum
    same: bool = False  # entries = "same": an integer, or a list of one per layer that must all be equal: that value
    # on = "N_full": the key's value on the layers a [layers] symbol counts, as the record's per-layer object
    # (per_layer) overrides it there; absent: the value on those layers when the config has no per-layer object.
    # With entries = "sum": the sum of the list's entries on those layers (default and null: computed once the
    # layers are counted, so they may name the [layers] symbols)
    on: Symbol | None = None
    absent: Any = None
    absent_text: str = ""
    length: bool = False  # entries = "length": a list, the symbol how many entries it holds (a single integer: 1)
    ratio: bool = False  # ratio = true: the key may be a fraction (0.5), which ``adjust`` turns into a size
    # the record's table for the symbol as written (its conditions' texts): what a compiled snapshot compiles again
    written: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    largest: bool = False  # entries = "largest": a mapping of integers (or a list), the symbol its largest value
    indices: bool = False  # entries = "indices": a list of layer indices from 0, the symbol how many distinct ones

    @property
    def minimum(self) -> int:
        return 1 if self.symbol.is_positive else 0

    @property
    def summed_on(self) -> bool:
        """A sum of one entry per layer over the layers of one kind (``entries = "sum"`` with ``on``)."""
        return self.summed and self.on is not None

    @property
    def overridden(self) -> bool:
        """A value the record's per-layer object may override on the layers of one kind (``on`` without a sum)."""
        return self.on is not None and not self.summed


@dataclass(frozen=True)
class Rule:
    """A condition with the message a config gets when it fails (``checks``) or holds (``refuse``)."""

    test: Condition
    text: str
    message: str


@dataclass(frozen=True)
class Choice:
    """A term of the record and the condition under which a config has it."""

    term: Term
    when: Condition | None = None
    when_text: str = ""


@dataclass(frozen=True)
class Attention:
    """What FLOPs and the KV cache need: which layers attend, the score and value widths, the cache per token."""

    layers: Expr
    qk: Expr | None  # None: with ``no_flops``, the FLOPs are refused for the reason it gives
    v: Expr | None
    kv: Expr
    note: str
    kv_expanded: Expr | None = None
    expanded_note: str = ""
    window: Expr | None = None  # the sliding window of the sliding layers; no value in a config: no window
    sliding: Expr | None = None  # how many of the attention layers slide (default: all of them)
    chunked: bool = False  # the window is a chunk: a query sees the keys of its own chunk (Llama 4)
    sliding_qk: Expr | None = None  # the widths of the sliding (chunked) layers where they differ from the full
    sliding_v: Expr | None = None  # layers' (MiMo-V2-Flash: twice the key/value heads on its sliding layers);
    sliding_kv: Expr | None = None  # None: the same as qk, v, kv
    sliding_note: str = ""  # what the sliding layers cache, when sliding_kv is given
    no_flops: str = ""  # why the score widths cannot be stated (the cache still can): FLOPs are refused with it
    # qk and v (sliding_qk, sliding_v) are summed over the full (sliding) layers, not one layer's: layers whose query
    # heads differ one from another (Laguna's num_attention_heads_per_layer); kv stays one layer's
    summed: bool = False
    # the attention layers that keep keys and values of their own in the cache, and how many of those slide (default:
    # layers and sliding); the others reuse an earlier layer's (Gemma 3n's KV sharing) and keep nothing
    cached: Expr | None = None
    cached_sliding: Expr | None = None
    # the attention layers that also cache the keys of a lightning indexer (MiniMax-M3's sparse layers), and the
    # indexer's elements per token in one such layer: all S tokens, whatever the window
    indexed: Expr | None = None
    indexed_kv: Expr | None = None
    indexed_note: str = ""
    indexed_dtype: str | None = None  # "fp32": the indexer keys are kept in fp32 whatever the cache dtype
    # attention the layers have but do not run on token ids alone (an encoder-decoder's cross-attention, without
    # encoder states), and what it would add: said under FLOPs and the KV cache
    not_run: str = ""
    # the longest S this section describes (no value in a config: any S), and what the model runs beyond it: there
    # FLOPs are the record's [[flops]] marked beyond instead of the scores, the cache beyond_kv; without them, both
    # are refused with it (BigBird's block-sparse attention beyond (5 + 2·r)·b tokens)
    longest: Expr | None = None
    beyond: str = ""
    # the cache beyond that S: elements per token per layer, and what they are (None: the cache is refused there)
    beyond_kv: Expr | None = None
    beyond_note: str = ""

    def limit(self, values: Mapping[Symbol, int]) -> int | None:
        """The longest S this section describes for a config (None: any S)."""
        if self.longest is None or not self.longest.free_symbols <= set(values):
            return None
        return int(value_at(self.longest, values))

    def is_beyond(self, seq: int, values: Mapping[Symbol, int]) -> bool:
        """Whether S is longer than the section describes (the model runs what ``beyond`` says)."""
        limit = self.limit(values)
        return limit is not None and seq > limit

    def check_seq(self, family: str, seq: int, values: Mapping[Symbol, int], what: str = "") -> None:
        """Refuse, by name, a sequence longer than the section describes (``what``: which count is refused)."""
        if self.is_beyond(seq, values):
            what = what or "FLOPs and the KV cache are"
            raise LlmcountError(
                f"{what} not derived for {family} at S = {seq:,}: beyond S = {self.limit(values):,} {self.beyond}"
            )

    @property
    def windowed(self) -> Expr:
        """How many of the attention layers slide (or are chunked) when the config gives a window."""
        return self.layers if self.sliding is None else self.sliding

    @property
    def cache_layers(self) -> Expr:
        """The layers that keep keys and values in the cache."""
        return self.layers if self.cached is None else self.cached

    @property
    def cache_sliding(self) -> Expr | None:
        """How many of the caching layers slide (None: all of them, when there is a window)."""
        return self.sliding if self.cached_sliding is None else self.cached_sliding

    @property
    def cache_windowed(self) -> Expr:
        """How many of the caching layers slide (or are chunked) when the config gives a window."""
        return self.cache_layers if self.cache_sliding is None else self.cache_sliding

    @property
    def per_kind(self) -> bool:
        """Whether the sliding layers have widths of their own."""
        return any(w is not None for w in (self.sliding_qk, self.sliding_v, self.sliding_kv))

    def widths(self, sliding: bool) -> tuple[Expr, Expr, Expr]:
        """(qk, v, kv) of one full layer, or of one sliding (chunked) layer."""
        if not sliding:
            return self.qk, self.v, self.kv
        own = (self.sliding_qk, self.sliding_v, self.sliding_kv)
        full = (self.qk, self.v, self.kv)
        return tuple(mine if mine is not None else other for mine, other in zip(own, full, strict=True))

    def total(self, width: str) -> Expr:
        """A width summed over the attention layers (``qk``, ``v``; ``kv`` over the layers that cache): the full
        layers' and the sliding layers' own where they have them."""
        layers, windowed = (self.cache_layers, self.cache_windowed) if width == "kv" else (self.layers, self.windowed)
        full = getattr(self, width)
        own = getattr(self, f"sliding_{width}")
        if self.summed and width != "kv":
            return full + own
        return layers * full if own is None else (layers - windowed) * full + windowed * own


@dataclass(frozen=True)
class StateFlops:
    """One matmul-type operation of a state layer's sequence mixing (a convolution, a scan's einsum): ``expr`` FLOPs
    in one such layer for one forward pass of B sequences of S tokens, as transformers' torch path computes it."""

    path: str
    expr: Expr
    note: str
    before: str = ""  # the path of the term it precedes in reader's order (default: after the last of its group)
    layers: Expr = ONE  # in how many layers (a record's [[flops]]; a state's operations are in each of its layers)
    causal: Expr | None = None  # a record's [[flops]]: the FLOPs over the causal pairs only (None: expr, whatever)
    beyond: bool = False  # a record's [[flops]]: counted only beyond [attention]'s longest S, instead of its scores


@dataclass(frozen=True)
class MegatronLayer:
    """A state layer as Megatron-LM's ``num_floating_point_operations`` counts it: ``expr``, forward FLOPs per token
    of one such layer (its projections included), transcribed from ``function`` in megatron/training/training.py;
    ``note`` says what it counts and leaves out."""

    expr: Expr
    function: str
    note: str


@dataclass(frozen=True)
class State:
    """A fixed per-sequence state that layers of one kind keep instead of a KV cache (Mamba, linear attention):
    ``conv`` and ``recurrent`` elements per sequence in each of ``layers`` layers; ``flops``: the operations that
    mix the sequence in one such layer, besides its linear weights (None: the FLOPs of the kind are not derived; empty:
    the layer mixes the sequence by elementwise operations only, which the FLOPs convention does not count)."""

    name: str
    layers: Expr
    conv: Expr
    recurrent: Expr
    note: str
    recurrent_dtype: str | None = None  # "fp32": the recurrent part is kept in fp32 whatever the cache dtype
    conv_dtype: str | None = None  # "fp32": so is the conv part (Inkling's convolutions run in fp32)
    flops: tuple[StateFlops, ...] | None = None  # () : no matmul-type work (an elementwise recurrence)
    megatron: MegatronLayer | None = None  # how Megatron-LM's FLOPs count counts such a layer (None: it has none)

    @property
    def groups(self) -> frozenset[str]:
        """The groups of the paths of its sequence mixing (``mamba``, ``linear_attention``): the layer's own terms."""
        return frozenset(op.path.partition("/")[0] for op in self.flops or ())

    @property
    def elements(self) -> Expr:
        return self.conv + self.recurrent


NONE_KEPT = Integer(0)


@dataclass(frozen=True)
class Cache:
    """What each of ``layers`` layers of one kind keeps per sequence besides the keys and values of ``[attention]``
    (a record's ``[[cache]]``): ``expr`` elements in the cache dtype after a forward pass of S tokens, a formula in S
    (DeepSeek-V4's compressed entries, and the tokens its compressors hold until a window is full)."""

    name: str
    layers: Expr
    expr: Expr
    note: str
    fp32: Expr = NONE_KEPT  # the part of expr kept in fp32 whatever the cache dtype (DeepSeek-V4's overlap gates)


@dataclass(frozen=True)
class Family:
    """One family record, parsed and checked."""

    name: str  # the config's model_type
    title: str
    kind: str
    example: str
    aliases: Mapping[str, tuple[str, ...]]
    symbols: tuple[SymbolSpec, ...]
    keys: Mapping[str, Any]
    layers: tuple[tuple[Symbol, Condition, str], ...]
    checks: tuple[Rule, ...]
    refuse: tuple[Rule, ...]
    choices: tuple[Choice, ...]
    attention: Attention | None = None
    activations: Mapping[str, Any] | None = None  # the optional [activations] table, read by activations.py
    states: tuple[State, ...] = ()
    tree: Mapping[str, Any] | None = None  # the optional [tree] table: print(model)'s names, read by renderers/tree.py
    printed: Mapping[str, Any] | None = None  # the optional [printed] table: print(model) as a template (tree.py)
    checkpoint: CheckpointNames = field(default_factory=lambda: CheckpointNames())  # [checkpoint], read by verify
    # the part of a larger model the count covers, and what it leaves out, in words (both empty: the whole model)
    counted: str = ""
    not_counted: str = ""
    # the optional [[flops]]: matmul-type operations besides the weights and the attention of [attention] (a matmul of
    # the hidden state with coefficients computed from it, a weight used twice), each in ``layers`` layers
    flops: tuple[StateFlops, ...] = ()
    # a tower's or projector's tokens per image entering the language model (tower_flops.py reads it), over its symbols
    image_tokens: Expr | None = None
    # conditions on the image size (H_img, W_img: flops --image-size) a tower without one in its config needs
    image_checks: tuple[Rule, ...] = ()
    # sizes of one image computed from H_img, W_img and the record's symbols ([image]: symbol = integer expression),
    # in order, for its [[flops]] and image_tokens
    image_values: tuple[tuple[Symbol, Condition, str], ...] = ()
    # a tower's or projector's reason its forward FLOPs per input cannot be stated from the config and the option
    # (tower_flops.py refuses them with it); "": they can, by its [[flops]]
    no_flops: str = ""
    caches: tuple[Cache, ...] = ()  # the optional [[cache]]: what layers keep besides [attention]'s keys and values
    head: Expr | None = None  # the LM head's weight as a matmul, tied or not, when it is not d · V (d_emb · V)
    per_layer: str = ""  # the key of the config's per-layer overrides ({layer index: {key: value}}), read by `on`
    mtp: Any = None  # the optional [mtp] table (an mtp.Mtp): the checkpoint's multi-token-prediction module
    shares: str = ""  # an alias record: the model_type of the record whose modeling class it shares (else empty)
    # [checked]: the transformers version the record was checked against, and every key of its config class then with
    # the keys of published configs it ignores (None: the record lists none, so a key it has not seen cannot be told)
    checked_version: str = CHECKED_AGAINST
    checked_keys: frozenset[str] | None = None
    # [layer_kinds]: each per-layer list of layer kinds (layer_types, mlp_layer_types ...) with the kinds its modeling
    # class builds, the length transformers requires (LAYER_LENGTHS) and whether transformers' legacy names
    # (mamba, attention ...) are read as their new ones; reading.py refuses any other entry or length by name
    layer_kinds: Mapping[str, LayerKinds] = field(default_factory=dict)

    def read_keys(self) -> frozenset[str]:
        """The top-level config keys the record reads: its symbols' keys, their aliases, [keys] and the per-layer
        object (a dotted key by its object's name)."""
        names = {spec.key for spec in self.symbols} | set(self.keys)
        names |= {alias for key, aliases in self.aliases.items() for alias in (key, *aliases)}
        names |= {self.per_layer} if self.per_layer else set()
        return frozenset(name.split(".", 1)[0] for name in names)

    def unseen(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        """The keys of ``config`` (a config.json's top level) that the record was not checked against: neither in its
        [checked] keys nor read by it nor common to every config; empty when the record lists no keys."""
        if self.checked_keys is None:
            return ()
        seen = self.checked_keys | self.read_keys() | COMMON_KEYS
        return tuple(sorted(key for key in config if isinstance(key, str) and key not in seen))

    # the optional [weights] table's fp32: the term paths whose parameters the modeling class keeps in fp32 whatever
    # the model's 16-bit dtype (its _keep_in_fp32_modules_strict, or an nn.Parameter built with dtype=torch.float32)
    fp32_weights: tuple[str, ...] = ()

    @property
    def summed(self) -> frozenset[Symbol]:
        """The symbols the record sums over the layers (one value per layer in the config, their sum here)."""
        return frozenset(spec.symbol for spec in self.symbols if spec.summed)

    @property
    def cost_exprs(self) -> tuple[Expr, ...]:
        """The expressions of ``[attention]`` and ``[[state]]``: what the cost formulas read besides the terms."""
        exprs: list[Expr | None] = []
        if self.attention is not None:
            a = self.attention
            exprs += [a.layers, a.qk, a.v, a.kv, a.kv_expanded, a.window, a.sliding, a.sliding_qk, a.sliding_v]
            exprs += [a.sliding_kv, a.cached, a.cached_sliding, a.indexed, a.indexed_kv, a.longest, a.beyond_kv]
        for state in self.states:
            exprs += [state.layers, state.conv, state.recurrent, *(f.expr for f in state.flops or ())]
            exprs += [state.megatron.expr] if state.megatron is not None else []
        exprs += [e for op in self.flops for e in (op.expr, op.layers, op.causal)]
        exprs += [e for kept in self.caches for e in (kept.layers, kept.expr)]
        exprs.append(self.head)
        return tuple(e for e in exprs if e is not None)

    @cached_property
    def nested(self) -> frozenset[str]:
        """The dotted keys the record reads (``ffn_config.moe_num_experts``: a key of the ``ffn_config`` object)."""
        names = [spec.key for spec in self.symbols] + list(self.keys)
        names += [name for key, others in self.aliases.items() for name in (key, *others)]
        return frozenset(name for name in names if "." in name)

    @cached_property
    def cost_symbols(self) -> frozenset[Symbol]:
        """The symbols of :attr:`cost_exprs`."""
        return frozenset().union(*(e.free_symbols for e in self.cost_exprs))

    @cached_property
    def saved_sizes(self) -> tuple[tuple[Condition | None, Expr, Expr], ...]:
        """(when, size, layers) of each entry of the optional ``[activations]`` table."""
        sizes = []
        for i, entry in enumerate((self.activations or {}).get("saved", [])):
            if isinstance(entry, dict):
                where = f"families/{self.name}.toml [activations] saved[{i}]"
                when = condition(str(entry["when"]), f"{where}.when") if "when" in entry else None
                expr, layers = (formula(str(entry.get(f, "1")), f"{where}.{f}") for f in ("expr", "layers"))
                sizes.append((when, expr, layers))
        return tuple(sizes)

    def saved_symbols(self, namespace: Mapping[str, Any], values: Mapping[Symbol, int]) -> frozenset[Symbol]:
        """The symbols of the ``[activations]`` entries a config keeps (its ``when`` holds, or cannot be told; its
        layers are not none): the config keeps their values, as it keeps those of the terms it has (the [layers]
        counts, which the config's keys carry, excepted)."""
        used: set[Symbol] = set()
        by_name = evaluate.named(values)
        for (when, _expr, layers), (symbols, layer_symbols) in zip(self.saved_sizes, self._saved_free, strict=True):
            try:
                if when is not None and not when(namespace):
                    continue
            except (Unknown, ValueError, TypeError, ZeroDivisionError, IndexError):
                pass
            if layer_symbols <= values.keys() and value_at(layers, values, by_name) == 0:
                continue
            used |= symbols
        return frozenset(used - {S, B} - {symbol for symbol, _, _ in self.layers})

    @cached_property
    def _saved_free(self) -> tuple[tuple[frozenset[Symbol], frozenset[Symbol]], ...]:
        """The symbols of each ``[activations]`` entry (its size's and its layers'), and those of its layers."""
        return tuple(
            (frozenset(expr.free_symbols | layers.free_symbols), frozenset(layers.free_symbols))
            for _, expr, layers in self.saved_sizes
        )

    @property
    def is_moe(self) -> bool:
        return any(c.term.routed for c in self.choices)

    def key_of(self, symbol: Symbol) -> str | None:
        """The config key this family reads ``symbol`` from, or the condition counting its layers."""
        for spec in self.symbols:
            if spec.symbol == symbol:
                return spec.key
        for counted, _, text in self.layers:
            if counted == symbol:
                return ", ".join(n for n in condition_names(text) if n != "i" and n not in BY_NAME) or text
        return None

    @cached_property
    def default_terms(self) -> tuple[Term, ...]:
        """The terms of the family's own defaults: every term whose condition holds on the ``[keys]`` defaults
        (a condition that needs a size the record does not default counts as holding)."""
        namespace = dict(self.keys)
        for spec in self.symbols:  # symbols whose default is a plain number (q_lora_rank = 1536) or no value
            if spec.default_text.isdigit():
                namespace[spec.key] = namespace[spec.symbol.name] = int(spec.default_text)
            elif spec.default == NONE:  # absent, the key has no value: q_lora_rank is None
                namespace[spec.key] = namespace[spec.symbol.name] = None
        chosen = []
        for choice in self.choices:
            try:
                keep = choice.when is None or bool(choice.when(namespace))
            except (Unknown, TypeError, ValueError, IndexError, ZeroDivisionError):
                keep = True
            if keep and all(term.path != choice.term.path for term in chosen):  # one variant of a module: the first
                chosen.append(choice.term)
        return tuple(chosen)

    def terms_for(self, namespace: Mapping[str, Any], values: Mapping[Symbol, int]) -> tuple[Term, ...]:
        """The terms of one config: those whose condition holds, with layer counts that are 0 or N replaced by
        their value and terms on no layer left out. Configs that select the same terms get the same tuple (one
        object), built once: a batch of thousands of configs of a family reuses a handful."""
        replacements = {}
        for symbol, _, _ in self.layers:
            if values.get(symbol) == 0:
                replacements[symbol] = Integer(0)
            elif values.get(symbol) == values.get(N):
                replacements[symbol] = N
        held = tuple(choice.when is None or bool(choice.when(namespace)) for choice in self.choices)
        key = (held, tuple(replacements.items()))
        terms = self._selections.get(key)
        if terms is None:
            terms = self._select(held, replacements)
            if len(self._selections) < 4096:
                self._selections[key] = terms
        return terms

    @cached_property
    def _selections(self) -> dict[tuple, tuple[Term, ...]]:
        return {}

    def _select(self, held: tuple[bool, ...], replacements: dict[Symbol, Expr]) -> tuple[Term, ...]:
        chosen: list[Term] = []
        for choice, holds in zip(self.choices, held, strict=True):
            if not holds:
                continue
            if any(term.path == choice.term.path for term in chosen):
                raise RecordError(f"families/{self.name}.toml: two terms {choice.term.path} hold for one config")
            layers = (
                _substituted(choice.term.layers, tuple(replacements.items())) if replacements else choice.term.layers
            )
            runs = choice.term.runs
            if replacements and runs is not None:
                runs = _substituted(runs, tuple(replacements.items()))
            if layers != 0:
                chosen.append(replace(choice.term, layers=layers, runs=runs))
        return tuple(chosen)

    @cached_property
    def choice_symbols(self) -> frozenset[Symbol]:
        """The symbols the total counts of the record's terms and the layers that run them use, any of them."""
        totals = (c.term.total.free_symbols | c.term.run_layers.free_symbols for c in self.choices)
        return frozenset().union(*totals)


def value_at(expr: Expr, values: Mapping[Symbol, int], by_name: Mapping[str, int] | None = None) -> Any:
    """``expr`` at ``values`` by its compiled form when the values are plain ints, else by sympy's ``subs``
    (``by_name``: the values by name, when the caller has them already)."""
    by_name = evaluate.named(values) if by_name is None else by_name
    found = evaluate.value(expr, by_name) if by_name is not None else None
    return expr.subs(values) if found is None else found


@lru_cache(maxsize=4096)
def _substituted(layers: Expr, replacements: tuple[tuple[Symbol, Expr], ...]) -> Expr:
    """A term's layer count with the layer counts a config makes 0 or N replaced, once per pair (a batch of
    configs of one family asks for the same few again and again)."""
    return layers.subs(dict(replacements))


def _table(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise RecordError(f"{where}: expected a table")
    return data


def _list(data: Any, where: str, what: str = "[[state]]") -> list[Any]:
    if not isinstance(data, list):
        raise RecordError(f"{where}: expected an array of tables ({what})")
    return data


def _text(data: Mapping[str, Any], field: str, where: str, default: str | None = None) -> str:
    value = data.get(field, default)
    if not isinstance(value, str):
        raise RecordError(f"{where}: '{field}' must be a string")
    return value


# a config key with an underscore (a size) or one lowercase word of 3 or more letters (ProphetNet's ngram, CTRL's
# dff), or N_ and a word (a count of layers): never a glossary name, a function of the formulas, a Python keyword or
# a word they reserve
_OWN_NAME = re.compile(r"^(?:[a-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+|[a-z][a-z0-9]{2,40}|N_[a-z0-9_]{1,40})$")
_RESERVED = {"ceil", "floor", "sqrt", "isqrt", "none", "null", "true", "false", "auto", "len", "str", "min", "max"}
_RESERVED |= {"int", "abs", "sum", "all", "any"} | set(keyword.kwlist)


def _glossary(data: Any, where: str) -> None:
    """A record's own symbols (``[glossary]``, written by discovery for a config key the glossary has no symbol for):
    each named after its key, a positive integer size, with its meaning; added to the glossary as the record loads."""
    from .symbols import declare

    for name, spec in _table(data, where).items():
        if not _OWN_NAME.match(name) or len(name) > 64 or name in _RESERVED:
            raise RecordError(
                f"{where} {name[:64]!r}: a record's own symbol is named after its config key (snake_case)"
            )
        spec = _table(spec, f"{where} {name}")
        unknown = set(spec) - {"key", "meaning"}
        if unknown:
            raise RecordError(f"{where} {name}: unknown fields {sorted(unknown)}")
        meaning = _text(spec, "meaning", f"{where} {name}")
        if spec.get("key", name) != name or (name.startswith("N_") and "key" in spec):
            raise RecordError(f"{where} {name}: a record's own symbol is named after its key")
        try:
            declare(name, meaning[:300])
        except ValueError as error:
            raise RecordError(f"{where} {name}: {error}") from None


def _symbol(name: str, where: str) -> Symbol:
    if name not in BY_NAME:
        raise RecordError(f"{where}: {name!r} is not a glossary symbol (formulas/symbols.py)")
    return BY_NAME[name].symbol


def _value_condition(value: Any, where: str) -> Condition:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise RecordError(f"{where}: expected an integer or an expression")
    return condition(str(value), where)


def _symbol_spec(name: str, spec: Any, where: str) -> SymbolSpec:
    symbol = _symbol(name, where)
    if isinstance(spec, str):
        return SymbolSpec(symbol, spec, written={"key": spec})
    spec = _table(spec, where)
    unknown = set(spec) - {"key", "default", "null", "strings", "zero", "adjust", "entries", "on", "absent", "ratio"}
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    key = _text(spec, "key", where)
    default = REQUIRED
    if spec.get("default") == NONE:
        default = NONE
    elif "default" in spec:
        default = _value_condition(spec["default"], f"{where}.default")
    null = spec.get("null")
    if null is not None and null != NONE:
        null = _value_condition(null, f"{where}.null")
    strings = {
        text: _value_condition(rule, f"{where}.strings.{text}")
        for text, rule in _table(spec.get("strings", {}), f"{where}.strings").items()
    }
    if spec.get("zero", NONE) != NONE:
        raise RecordError(f'{where}.zero: the only value is "none" (0 means no value)')
    if spec.get("entries", "distinct") not in ("distinct", "sum", "same", "length", "largest", "indices"):
        raise RecordError(
            f'{where}.entries: "distinct" (how many distinct names the list holds), "sum" (the sum of its integers), '
            '"same" (one integer for every layer, or a list of equal ones), "length" (how many entries a list holds; '
            'a single integer is one), "largest" (the largest integer value of a mapping or list) or "indices" (how '
            "many distinct layer indices a list holds)"
        )
    adjust = spec.get("adjust")
    if adjust is not None:
        adjust = condition(_text(spec, "adjust", where), f"{where}.adjust")
    on = _symbol(_text(spec, "on", where), f"{where}.on") if "on" in spec else None
    if "absent" in spec and (on is None or spec.get("entries") == "sum"):
        raise RecordError(f"{where}.absent: only with 'on' (the value on those layers without a per-layer object)")
    absent = _value_condition(spec["absent"], f"{where}.absent") if "absent" in spec else None
    ratio = spec.get("ratio", False)
    if not isinstance(ratio, bool) or (ratio and adjust is None):
        raise RecordError(f"{where}.ratio: true or false, and true only with an 'adjust' that makes the ratio a size")
    return SymbolSpec(
        symbol,
        key,
        default,
        shown(str(spec.get("default", ""))),
        null,
        strings,
        "zero" in spec,
        adjust,
        shown(spec.get("adjust", "")),
        spec.get("entries") == "distinct",
        spec.get("entries") == "sum",
        spec.get("entries") == "same",
        on,
        absent,
        shown(str(spec.get("absent", ""))),
        spec.get("entries") == "length",
        ratio,
        dict(spec),
        largest=spec.get("entries") == "largest",
        indices=spec.get("entries") == "indices",
    )


def _rules(data: Any, where: str) -> tuple[Rule, ...]:
    if not isinstance(data, list) or not all(
        isinstance(r, list) and len(r) == 2 and all(isinstance(x, str) for x in r) for r in data
    ):
        raise RecordError(f"{where}: expected a list of [condition, message] pairs")
    return tuple(Rule(condition(text, f"{where} {text!r}"), shown(text), shown(message)) for text, message in data)


def shown(text: str) -> str:
    """A record's text as a message quotes it: on one line (a TOML multi-line string, as LFM2's adjust, would
    otherwise break the one-line message a bad config gets)."""
    return " ".join(text.split())


_TERM_FIELDS = {"path", "expr", "layers", "runs", "note", "when", "routed", "embedding", "matmul", "grad", "tp"}
_TERM_FIELDS |= {"megatron_weight"}
TP_CHOICES = ("split", "replicated")
_FLAGS = ("routed", "embedding", "matmul", "grad", "megatron_weight")
_TRUE_BY_DEFAULT = ("matmul", "grad")


def _choice(data: Any, where: str) -> Choice:
    data = _table(data, where)
    unknown = set(data) - _TERM_FIELDS
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    path = _text(data, "path", where)
    where = f"{where} ({path})"
    flags = {f: data.get(f, f in _TRUE_BY_DEFAULT) for f in _FLAGS}
    if not all(isinstance(v, bool) for v in flags.values()):
        raise RecordError(
            f"{where}: 'routed', 'embedding', 'matmul', 'grad' and 'megatron_weight' must be true or false"
        )
    if data.get("tp", "split") not in TP_CHOICES:
        raise RecordError(f"{where}: 'tp' must be one of {', '.join(TP_CHOICES)}")
    term = Term(
        path=path,
        expr=formula(_text(data, "expr", where), f"{where}.expr"),
        note=_text(data, "note", where, ""),
        layers=formula(_text(data, "layers", where, "1"), f"{where}.layers"),
        runs=formula(_text(data, "runs", where), f"{where}.runs") if "runs" in data else None,
        **flags,
        text=_text(data, "expr", where),
        tp=data.get("tp", ""),
    )
    when = data.get("when")
    if when is None:
        return Choice(term)
    return Choice(term, condition(_text(data, "when", where), f"{where}.when"), when)


def _attention(data: Any, where: str) -> Attention:
    data = _table(data, where)
    no_flops = _text(data, "no_flops", where, "")
    widths = ("layers", "kv") if no_flops else ("layers", "qk", "v", "kv")
    parts = {f: formula(_text(data, f, where), f"{where}.{f}") for f in widths}
    expanded = data.get("kv_expanded")
    own = ("sliding_qk", "sliding_v", "sliding_kv")
    texts = {"note", "kv_expanded", "expanded_note", "window", "sliding", "chunked", "summed", "sliding_note"}
    texts |= {"no_flops", "beyond", "beyond_note"}
    texts |= {"indexed_note", "indexed_dtype", "not_run"}
    layer_counts = ("window", "sliding", "cached", "cached_sliding", "indexed", "indexed_kv", "longest", "beyond_kv")
    unknown = set(data) - {*parts, *own, *texts, *layer_counts}
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    optional = {f: formula(_text(data, f, where), f"{where}.{f}") for f in (*layer_counts, *own) if f in data}
    if any(f in data for f in own) and not {"window", "sliding"} <= set(data):
        raise RecordError(f"{where}: widths of the sliding layers ({', '.join(own)}) need 'window' and 'sliding'")
    if any(f in data for f in own) and "kv_expanded" in data:
        raise RecordError(f"{where}: widths of the sliding layers and 'kv_expanded' together are not supported")
    if ("longest" in data) != ("beyond" in data):
        raise RecordError(f"{where}: 'longest' (the longest S described) and 'beyond' (what runs past it) go together")
    if "beyond_kv" in data and "longest" not in data:
        raise RecordError(f"{where}: 'beyond_kv' (the cache beyond the longest S described) needs 'longest'")
    if ("indexed" in data) != ("indexed_kv" in data):
        raise RecordError(f"{where}: 'indexed' (the layers with indexer keys) and 'indexed_kv' go together")
    if data.get("indexed_dtype") not in (None, "fp32"):
        raise RecordError(f"{where}: 'indexed_dtype' is \"fp32\" or absent (the cache dtype)")
    chunked, summed = data.get("chunked", False), data.get("summed", False)
    if not isinstance(chunked, bool) or not isinstance(summed, bool):
        raise RecordError(f"{where}: 'chunked' and 'summed' must be true or false")
    if summed and not {"sliding_qk", "sliding_v"} <= set(data):
        raise RecordError(f"{where}: 'summed' widths need the sliding layers' own sums, 'sliding_qk' and 'sliding_v'")
    if no_flops and {"qk", "v"} & set(data):
        raise RecordError(f"{where}: 'no_flops' says the score widths cannot be stated; give no 'qk' or 'v'")
    return Attention(
        **{"qk": None, "v": None, **parts},
        no_flops=no_flops,
        **optional,
        chunked=chunked,
        summed=summed,
        note=_text(data, "note", where, ""),
        kv_expanded=None if expanded is None else formula(_text(data, "kv_expanded", where), f"{where}.kv_expanded"),
        expanded_note=_text(data, "expanded_note", where, ""),
        sliding_note=_text(data, "sliding_note", where, ""),
        indexed_note=_text(data, "indexed_note", where, ""),
        indexed_dtype=data.get("indexed_dtype"),
        not_run=_text(data, "not_run", where, ""),
        beyond=_text(data, "beyond", where, ""),
        beyond_note=_text(data, "beyond_note", where, ""),
    )


def _state(data: Any, where: str) -> State:
    data = _table(data, where)
    fields = {"name", "layers", "conv", "recurrent", "note", "flops", "recurrent_dtype", "conv_dtype", "megatron"}
    unknown = set(data) - fields
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    name = _text(data, "name", where)
    parts = {f: formula(_text(data, f, where, "0"), f"{where} ({name}).{f}") for f in ("layers", "conv", "recurrent")}
    flops = (
        None
        if "flops" not in data
        else tuple(
            _state_flops(f, f"{where} ({name}).flops[{i}]")
            for i, f in enumerate(_list(data.get("flops", []), where, "[[state.flops]]"))
        )
    )
    kept = {key: data.get(key) for key in ("recurrent_dtype", "conv_dtype")}
    for key, value in kept.items():
        if value not in (None, "fp32"):
            raise RecordError(f"{where} ({name}): '{key}' is \"fp32\" or absent (the cache dtype), not {value!r}")
    megatron = _megatron(data["megatron"], f"{where} ({name}).megatron") if "megatron" in data else None
    if megatron is not None and flops == ():
        raise RecordError(f"{where} ({name}): 'megatron' replaces the layer's own terms, named by its [[state.flops]]")
    return State(name=name, note=_text(data, "note", where, ""), flops=flops, megatron=megatron, **kept, **parts)


def _megatron(data: Any, where: str) -> MegatronLayer:
    data = _table(data, where)
    unknown = set(data) - {"expr", "function", "note"}
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    expr = formula(_text(data, "expr", where), f"{where}.expr")
    if {B, S} & expr.free_symbols:
        raise RecordError(f"{where}.expr: FLOPs per token of one layer, without B or S")
    return MegatronLayer(expr, _text(data, "function", where), _text(data, "note", where))


def _state_flops(data: Any, where: str, fields: frozenset[str] = frozenset()) -> StateFlops:
    """One ``[[state.flops]]`` entry, or (with ``fields = {"layers"}``) one of a record's ``[[flops]]``."""
    data = _table(data, where)
    unknown = set(data) - {"path", "expr", "note", "before", *fields}
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    path = _text(data, "path", where)
    expr = formula(_text(data, "expr", f"{where} ({path})"), f"{where} ({path}).expr")
    layers = formula(_text(data, "layers", where, "1"), f"{where} ({path}).layers")
    causal = formula(_text(data, "causal", where), f"{where} ({path}).causal") if "causal" in data else None
    beyond = data.get("beyond", False)
    if not isinstance(beyond, bool):
        raise RecordError(f"{where} ({path}).beyond: true or false")
    note, before = _text(data, "note", where, ""), _text(data, "before", where, "")
    return StateFlops(path, expr, note, before, layers, causal, beyond)


def _cache(data: Any, where: str) -> Cache:
    """One ``[[cache]]`` entry: a kind of layer, how many, and the elements one such layer keeps per sequence."""
    data = _table(data, where)
    unknown = set(data) - {"name", "layers", "expr", "note", "fp32"}
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    name = _text(data, "name", where)
    layers, expr, fp32 = (
        formula(_text(data, f, where, "0"), f"{where} ({name}).{f}") for f in ("layers", "expr", "fp32")
    )
    if B in expr.free_symbols or B in fp32.free_symbols:
        raise RecordError(f"{where} ({name}).expr: elements of one sequence, without B")
    return Cache(name, layers, expr, _text(data, "note", where, ""), fp32)


@dataclass(frozen=True)
class CheckpointNames:
    """The ``[checkpoint]`` table: how a checkpoint names what the record's paths do not say (read by verify)."""

    names: Mapping[str, str] = field(default_factory=dict)  # a path -> the tensor name that holds it (a dotted ending)
    shared: Mapping[str, str] = field(default_factory=dict)  # a path -> the path whose tensors also hold it
    buffers: tuple[str, ...] = ()  # tensors saved with the weights that are buffers, not parameters (dotted endings)
    # paths the published checkpoint stores in float32 whatever its dtype (MiniMax-M1's routers): verify --index
    # names the bytes they take beyond the dtype's
    float32: tuple[str, ...] = ()


def _checkpoint(data: Any, where: str, paths: set[str]) -> CheckpointNames:
    """The ``[checkpoint]`` table, checked: ``names`` and ``shared`` name paths of the record's terms."""
    table = _table(data, where)
    unknown = set(table) - {"names", "shared", "buffers", "float32"}
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    names = _table(table.get("names", {}), f"{where} names")
    shared = _table(table.get("shared", {}), f"{where} shared")
    for field_name, entries in (("names", names), ("shared", shared)):
        if not all(isinstance(v, str) and v for v in entries.values()):
            raise RecordError(f"{where} {field_name}: each path takes a name, a string")
        strange = sorted(set(entries) - paths)
        if strange:
            raise RecordError(f"{where} {field_name}: {strange[0]!r} is not a path of the record's terms")
    strange = sorted(set(shared.values()) - paths)
    if strange:
        raise RecordError(f"{where} shared: {strange[0]!r} is not a path of the record's terms")
    buffers = _list(table.get("buffers", []), f"{where} buffers")
    if not all(isinstance(x, str) and x for x in buffers):
        raise RecordError(f"{where} buffers: a list of tensor names")
    float32 = _list(table.get("float32", []), f"{where} float32")
    strange = sorted(p for p in float32 if not isinstance(p, str) or p not in paths)
    if strange:
        raise RecordError(f"{where} float32: {strange[0]!r} is not a path of the record's terms")
    return CheckpointNames(names, shared, tuple(buffers), tuple(float32))


TREE_NAMES = ("class", "model", "model_class", "layers", "layer_class", "linear")


def _tree(data: Any, where: str) -> dict[str, Any]:
    """The ``[tree]`` table: the names transformers' ``print(model)`` gives a family's modules where they are not
    the generic ones (see renderers/tree.py). Strings, plus ``containers`` (group -> [attribute, class]) and
    ``order`` (the modules of one layer in the order the model code defines them: leaf names and groups) and
    ``names`` (a record name -> the model code's, ``router = "gate"``)."""
    table = _table(data, where)
    unknown = set(table) - {*TREE_NAMES, "containers", "order", "names"}
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    for name in TREE_NAMES:
        if name in table and not isinstance(table[name], str):
            raise RecordError(f"{where}: {name} takes a string")
    containers = _table(table.get("containers", {}), f"{where} containers")
    for group, pair in containers.items():
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise RecordError(f"{where} containers: {group} takes [attribute, class]")
    renamed = _table(table.get("names", {}), f"{where} names")
    if not all(isinstance(v, str) for v in renamed.values()):
        raise RecordError(f"{where} names: each record name takes the model code's name, a string")
    order = _list(table.get("order", []), f"{where} order")
    if not all(isinstance(x, str) for x in order):
        raise RecordError(f"{where} order: a list of module names and groups")
    if "linear" in table and not {"{in}", "{out}"} <= set(re.findall(r"\{\w+\}", table["linear"])):
        raise RecordError(f"{where}: linear is a format with {{in}} and {{out}}, e.g. 'Conv1D(nf={{out}}, nx={{in}})'")
    return {**table, "containers": containers, "order": order, "names": renamed}


def _printed(data: Any, where: str) -> dict[str, Any]:
    """The ``[printed]`` table (written by ``python -m llmcount.discover.printed``): ``text``, the tree with
    ``{layers}`` for the decoder layers, and ``layers``, each kind's ``terms`` and ``text`` (see renderers/tree.py);
    ``by``, written by hand, names layer-count symbols whose layers print otherwise with the same terms (Llama 4's
    RoPE layers carry a weightless qk norm): a kind's ``terms`` then hold ``@symbol`` for the layers in that set;
    ``when`` maps the name of a module without weights to the config key that builds it (``qk_norm =
    "use_qk_norm=true"``): its line is left out of the tree where that key is false; ``index``, written by hand,
    maps a term's ``layers`` count the config does not give layer by layer to a condition of the layer index i
    (``"N - 1" = "i > 0"``: every layer but the first); ``shared`` maps a count of blocks shared between layers to the
    layers that print them (Zamba2's ``n_mem`` transformer blocks print inside each of its ``N_attn`` hybrid layers);
    ``stacks`` (written by discover) holds lists of layers apart from the decoder's, ``{stack:i}`` in ``text``."""
    table = _table(data, where)
    unknown = set(table) - {"text", "layers", "transformers", "by", "when", "index", "stacks", "shared"}
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    by = _list(table.get("by", []), where, "by")
    if not all(isinstance(x, str) and x.isidentifier() for x in by):
        raise RecordError(f"{where}: by takes the names of layer-count symbols")
    when = table.get("when", {})
    if not isinstance(when, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and "=" in v and v.split("=", 1)[0].isidentifier()
        for k, v in when.items()
    ):
        raise RecordError(f"{where}: when maps a module name to the config key that builds it, as 'key=default'")
    index = table.get("index", {})
    if not isinstance(index, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in index.items()):
        raise RecordError(
            f"{where}: index maps a layer count to a condition of the layer index i, as 'N - 1' = 'i > 0'"
        )
    for count, rule in index.items():
        formula(count, f"{where} index")
        condition(rule, f"{where} index[{count!r}]")
    shared = table.get("shared", {})
    if not isinstance(shared, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in shared.items()):
        raise RecordError(
            f"{where}: shared maps a count of shared blocks to the layers that print them ('n_mem' = 'N_a')"
        )
    for count, layers in shared.items():
        formula(count, f"{where} shared")
        formula(layers, f"{where} shared[{count!r}]")
    if "text" not in table and "layers" not in table:  # only hand-written fields: the tree is still to be written
        return {"by": list(by), "when": dict(when), "index": dict(index), "shared": dict(shared)}
    if not isinstance(table.get("text"), str) or table["text"].count("{layers}") < 1:
        raise RecordError(f"{where}: text takes the tree as a string, with {{layers}} once (or once per stack)")
    layers = _list(table.get("layers", []), where, "[[printed.layers]]")
    for i, layer in enumerate(layers):
        if not (
            isinstance(layer, dict)
            and set(layer) == {"terms", "text"}
            and isinstance(layer["text"], str)
            and isinstance(layer["terms"], list)
            and all(isinstance(x, str) for x in layer["terms"])
        ):
            raise RecordError(f"{where} layers[{i}]: takes terms (a list of term paths) and text (a string)")
    kinds = [{"terms": list(x["terms"]), "text": x["text"]} for x in layers]
    stacks = _list(table.get("stacks", []), where, "[[printed.stacks]]")
    for i, stack in enumerate(stacks):
        if not (
            isinstance(stack, dict)
            and set(stack) == {"count", "text"}
            and all(isinstance(stack[f], str) for f in ("count", "text"))
        ):
            raise RecordError(f"{where} stacks[{i}]: takes count (a layer count) and text (one layer's template)")
        formula(stack["count"], f"{where} stacks[{i}].count")
        if not any(f"{{stack:{i}}}" in x for x in [table["text"], *(layer["text"] for layer in kinds)]):
            raise RecordError(f"{where}: text takes {{stack:{i}}} once, for stacks[{i}]")
    return {
        "text": table["text"],
        "layers": kinds,
        "by": list(by),
        "when": dict(when),
        "index": dict(index),
        "shared": dict(shared),
        "stacks": [dict(x) for x in stacks],
    }


def parse_record(data: Mapping[str, Any], where: str) -> Family:
    """A :class:`Family` from a record's parsed TOML; :class:`RecordError` naming the field otherwise."""
    if "alias" in data:  # a config type of a modeling class another record describes: that record, its own defaults
        return replace(parse_record(_aliased(data, where), where), shares=data["alias"])
    fields = {"model_type", "title", "kind", "example", "aliases", "symbols", "keys", "layers", "checks", "refuse"}
    fields |= {"counted", "not_counted", "per_layer", "head", "image_tokens", "image_checks", "image"}
    fields |= {"no_flops"}
    tables = {"terms", "attention", "state", "flops", "cache", "activations", "tree", "checkpoint", "mtp"}
    tables |= {"checked", "weights", "printed", "glossary", "layer_kinds"}
    unknown = set(data) - fields - tables
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    _glossary(data.get("glossary", {}), f"{where} [glossary]")
    version, checked = _checked(data.get("checked", {}), f"{where} [checked]")
    data = _versioned(data, f"transformers {version}")
    aliases = _table(data.get("aliases", {}), f"{where} [aliases]")
    if not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in aliases.values()):
        raise RecordError(f"{where} [aliases]: each key takes a list of other names")
    symbols = tuple(
        _symbol_spec(name, spec, f"{where} [symbols] {name}")
        for name, spec in _table(data.get("symbols", {}), f"{where} [symbols]").items()
    )
    layers = tuple(
        (_symbol(name, f"{where} [layers]"), condition(text, f"{where} [layers] {name}"), text)
        for name, text in _table(data.get("layers", {}), f"{where} [layers]").items()
    )
    terms = data.get("terms")
    if not isinstance(terms, list) or not terms:
        raise RecordError(f"{where}: a record needs [[terms]]")
    family = Family(
        name=_text(data, "model_type", where),
        title=_text(data, "title", where),
        kind=_text(data, "kind", where, "dense"),
        example=_text(data, "example", where, ""),
        aliases={k: tuple(v) for k, v in aliases.items()},
        symbols=symbols,
        # "null" or "none": the config class defaults the key to None (TOML has no null)
        keys={k: None if v in (NULL, NONE) else v for k, v in _table(data.get("keys", {}), f"{where} [keys]").items()},
        layers=layers,
        checks=_rules(data.get("checks", []), f"{where} checks"),
        refuse=_rules(data.get("refuse", []), f"{where} refuse"),
        choices=tuple(_choice(t, f"{where} terms[{i}]") for i, t in enumerate(terms)),
        attention=_attention(data["attention"], f"{where} [attention]") if "attention" in data else None,
        states=tuple(_state(t, f"{where} state[{i}]") for i, t in enumerate(_list(data.get("state", []), where))),
        activations=_table(data["activations"], f"{where} [activations]") if "activations" in data else None,
        tree=_tree(data["tree"], f"{where} [tree]") if "tree" in data else None,
        printed=_printed(data["printed"], f"{where} [printed]") if "printed" in data else None,
        head=formula(_text(data, "head", where), f"{where}.head") if "head" in data else None,
        image_tokens=(
            formula(_text(data, "image_tokens", where), f"{where}.image_tokens") if "image_tokens" in data else None
        ),
        image_checks=_rules(data.get("image_checks", []), f"{where} image_checks"),
        image_values=tuple(
            (_symbol(name, f"{where} [image]"), condition(text, f"{where} [image] {name}"), text)
            for name, text in _table(data.get("image", {}), f"{where} [image]").items()
        ),
        counted=_text(data, "counted", where, ""),
        not_counted=_text(data, "not_counted", where, ""),
        no_flops=_text(data, "no_flops", where, ""),
        flops=tuple(
            _state_flops(f, f"{where} flops[{i}]", frozenset({"layers", "causal", "beyond"}))
            for i, f in enumerate(_list(data.get("flops", []), where, "[[flops]]"))
        ),
        caches=tuple(
            _cache(c, f"{where} cache[{i}]") for i, c in enumerate(_list(data.get("cache", []), where, "[[cache]]"))
        ),
        per_layer=_text(data, "per_layer", where, ""),
        checked_version=version,
        checked_keys=checked,
        layer_kinds=_layer_kinds(data.get("layer_kinds", {}), f"{where} [layer_kinds]"),
    )
    if bool(family.counted) != bool(family.not_counted):
        raise RecordError(f"{where}: 'counted' and 'not_counted' go together (what is counted, what is left out)")
    if family.no_flops and family.flops:
        raise RecordError(f"{where}: 'no_flops' says its FLOPs cannot be stated; give no [[flops]]")
    if any(op.beyond for op in family.flops) and (family.attention is None or family.attention.longest is None):
        raise RecordError(f"{where}: [[flops]] marked 'beyond' need [attention] 'longest' (the S they are beyond)")
    if "checkpoint" in data:
        paths = {choice.term.path for choice in family.choices}
        family = replace(family, checkpoint=_checkpoint(data["checkpoint"], f"{where} [checkpoint]", paths))
    if "weights" in data:
        family = replace(family, fp32_weights=_fp32_weights(data["weights"], f"{where} [weights]", family))
    _check_names(family, where)
    _check_per_layer(family, where)
    unread = sorted(set(family.layer_kinds) - family.read_keys())
    if unread:
        raise RecordError(f"{where} [layer_kinds]: key {unread[0]!r} is not a key the record reads ([keys], [symbols])")
    if "mtp" in data:
        from .mtp import parse

        read = {spec.symbol for spec in family.symbols} | {symbol for symbol, _, _ in family.layers}
        family = replace(family, mtp=parse(data["mtp"], f"{where} [mtp]", read))
    for key in family.nested:  # one level: "object.key", both plain names
        if key.count(".") != 1 or not all(part.isidentifier() for part in key.split(".")):
            raise RecordError(f"{where}: key {key!r}: a nested key is 'object.key', one level deep")
    return family


class LayerKinds(NamedTuple):
    """One per-layer list of kinds of a record's ``[layer_kinds]``: the kinds its modeling class builds, the length
    transformers requires of it (one of :data:`LAYER_LENGTHS`) and whether a legacy kind name (``mamba``) is read as
    the name transformers remaps it to (``linear_attention``)."""

    kinds: frozenset[str | int]  # names, or the integer codes a remote-code config uses (MiniMax-M1's attn_type_list)
    length: str = "N"
    legacy: bool = True


LAYER_LENGTHS = {
    "N": "one entry per layer (the config class's validator requires num_hidden_layers entries)",
    "at least N": "at least one entry per layer (the modeling class reads the first num_hidden_layers; no validator)",
    "cycle": "one or more entries, repeated over the layers (layer i takes entry i % len)",
}


def _layer_kinds(data: Any, where: str) -> dict[str, LayerKinds]:
    """The ``[layer_kinds]`` table: ``key = [kinds]`` or ``key = { kinds = [...], length = ..., legacy = ... }``."""
    found = {}
    for key, entry in _table(data, where).items():
        spec = entry if isinstance(entry, dict) else {"kinds": entry}
        unknown = set(spec) - {"kinds", "length", "legacy"}
        if unknown:
            raise RecordError(f"{where} {key}: unknown fields {sorted(unknown)}")
        kinds, length, legacy = spec.get("kinds"), spec.get("length", "N"), spec.get("legacy", True)
        if not isinstance(kinds, list) or not kinds or not all(type(k) is int or (type(k) is str and k) for k in kinds):
            raise RecordError(f"{where} {key}: 'kinds' must be a list of the kinds' names (or integer codes)")
        if length not in LAYER_LENGTHS:
            raise RecordError(f"{where} {key}: 'length' must be one of {sorted(LAYER_LENGTHS)}")
        if not isinstance(legacy, bool):
            raise RecordError(f"{where} {key}: 'legacy' must be true or false")
        found[key] = LayerKinds(frozenset(kinds), length, legacy)
    return found


_VERSION = re.compile(r"^\d{1,4}(\.\d{1,6}){1,3}([.+-]?[0-9A-Za-z]{1,20})?$")  # 5.24.0, 5.25.0.dev0


def _checked(data: Any, where: str) -> tuple[str, frozenset[str] | None]:
    """The ``[checked]`` table: the transformers version (default :data:`CHECKED_AGAINST`) and the config class's keys
    the record was checked against (None when it lists none)."""
    data = _table(data, where)
    unknown = set(data) - {"transformers", "keys", "ignored"}
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    version = data.get("transformers", CHECKED_AGAINST)
    if not isinstance(version, str) or not _VERSION.match(version):
        raise RecordError(f"{where}.transformers: a transformers version such as {CHECKED_AGAINST!r}")
    lists = {name: data.get(name) for name in ("keys", "ignored")}
    for name, keys in lists.items():
        if keys is not None and not (isinstance(keys, list) and all(isinstance(k, str) and k for k in keys)):
            raise RecordError(f"{where}.{name}: a list of config key names")
    if lists["keys"] is None:
        return version, None
    return version, frozenset(lists["keys"]) | frozenset(lists["ignored"] or ())


def _versioned(data: Any, version: str) -> Any:
    """``data`` with ``{transformers}`` in its strings read as ``version`` ("transformers 5.24.0")."""
    if isinstance(data, str):
        return data.replace("{transformers}", version)
    if isinstance(data, dict):
        return {key: _versioned(value, version) for key, value in data.items()}
    if isinstance(data, list):
        return [_versioned(value, version) for value in data]
    return data


def version_tuple(version: str) -> tuple[int, ...]:
    """The leading numbers of a version ("5.25.0.dev0" -> (5, 25, 0)), to compare releases."""
    numbers = []
    for part in version.split(".")[:4]:
        digits = re.match(r"\d{1,6}", part)
        if digits is None:
            break
        numbers.append(int(digits.group()))
        if digits.end() < len(part):
            break
    return tuple(numbers)


def newer_transformers(installed: str, version: str = CHECKED_AGAINST) -> str:
    """One line when the installed transformers is newer than the version the records were checked against (a
    release may change what a class builds); empty otherwise."""
    if version_tuple(installed) <= version_tuple(version):
        return ""
    return (
        f"note: transformers {installed} is installed; the bundled records were checked against transformers"
        f" {version} (a model_type whose classes changed since may be counted as {version} builds it)"
    )


def _fp32_weights(table: Any, where: str, family: Family) -> tuple[str, ...]:
    """The ``[weights]`` table: ``fp32``, the term paths kept in fp32 in a 16-bit model, and ``source``, the modeling
    code that keeps them so (file, class and transformers version)."""
    table = _table(table, where)
    unknown = set(table) - {"fp32", "source"}
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    paths = table.get("fp32")
    distinct = isinstance(paths, list) and all(isinstance(p, str) for p in paths) and len(set(paths)) == len(paths)
    if not paths or not distinct:
        raise RecordError(f"{where} fp32: a list of distinct term paths")
    if not isinstance(table.get("source"), str) or not table["source"]:
        raise RecordError(f"{where}: 'source' names the modeling code that keeps these weights in fp32")
    known = {choice.term.path for choice in family.choices}
    missing = sorted(set(paths) - known)
    if missing:
        raise RecordError(f"{where} fp32: {', '.join(missing)} is not a term path of the record")
    return tuple(paths)


def _check_per_layer(family: Family, where: str) -> None:
    """A symbol read `on` some layers names a [layers] symbol; one the per-layer object may override (not a sum of
    one entry per layer) needs the record's per-layer object, and the other way round."""
    counted = {symbol for symbol, _, _ in family.layers}
    for spec in family.symbols:
        if spec.on is not None and spec.on not in counted:
            raise RecordError(f"{where} [symbols] {spec.symbol.name}.on: {spec.on.name} is not a [layers] symbol")
    if bool(family.per_layer) != any(spec.overridden for spec in family.symbols):
        raise RecordError(f"{where}: 'per_layer' (the per-layer object) goes with symbols read 'on' some layers")


def _check_names(family: Family, where: str) -> None:
    """Every symbol a term uses is read by the record or counted in [layers]."""
    known = {s.symbol for s in family.symbols} | {s for s, _, _ in family.layers}
    for choice in family.choices:
        missing = (choice.term.expr.free_symbols | choice.term.layers.free_symbols) - known
        if missing:
            names = ", ".join(sorted(s.name for s in missing))
            raise RecordError(f"{where}: term {choice.term.path} uses {names}, which the record does not read")
    known |= {symbol for symbol, _, _ in family.image_values}
    missing = family.cost_symbols - known - {S, B, H_img, W_img, L_aud}  # an input's size: --image-size, --audio-frames
    if missing:
        names = ", ".join(sorted(s.name for s in missing))
        raise RecordError(f"{where}: [attention] or [[state]] uses {names}, which the record does not read")
    # a path may repeat only as variants of one module, each with a condition (one layout's shape each)
    paths = [c.term.path for c in family.choices]
    duplicates = {c.term.path for c in family.choices if paths.count(c.term.path) > 1 and c.when is None}
    if duplicates:
        raise RecordError(f"{where}: duplicate term paths {sorted(duplicates)} (a repeated path needs a 'when')")


_FOLDER = "families"

# What an alias record may not restate: the modeling class's structure, which it shares ([defaults] gives its config
# class's own defaults of the keys the shared record reads)
_SHARED = {"symbols", "keys", "layers", "terms", "attention", "state", "flops", "cache", "activations", "tree"}
_SHARED |= {"checkpoint", "per_layer", "head", "weights", "layer_kinds"}


def _aliased(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The data of an alias record: the shared record's, with the alias's model_type, title and example, its
    ``[aliases]`` (its config class's attribute_map) in place of the shared record's, its ``[defaults]`` in place of
    the shared record's defaults of those keys, and any other field of its own in place of the shared record's."""
    import copy

    shared = _text(data, "alias", where)
    restated = sorted(set(data) & _SHARED)
    if restated:
        raise RecordError(
            f"{where}: an alias shares {shared}'s {', '.join(restated)}; give its config class's defaults in [defaults]"
        )
    if shared == data.get("model_type") or shared not in names():
        raise RecordError(f"{where}: alias {shared!r} is not another bundled record")
    base = copy.deepcopy(_bundled_data(shared))
    if "alias" in base:
        raise RecordError(f"{where}: alias {shared!r} is itself an alias (name the record it shares)")
    defaults = _table(data.get("defaults", {}), f"{where} [defaults]")
    base.pop("example", None)  # a preset of the shared family, not of this one
    merged = {**base, **{k: v for k, v in data.items() if k not in ("alias", "defaults")}}
    symbols, keys = merged.get("symbols", {}), merged.get("keys", {})
    for key, value in defaults.items():
        specs = [spec for spec in symbols.values() if (spec if isinstance(spec, str) else spec.get("key")) == key]
        if not specs and key not in keys:
            raise RecordError(f"{where} [defaults] {key}: {shared}'s record does not read it")
        if specs and (isinstance(value, bool) or not isinstance(value, (int, str))):
            raise RecordError(
                f'{where} [defaults] {key}: an integer, an expression or "none" (the default of a symbol)'
            )
        for spec in specs:
            if isinstance(spec, str) or "default" not in spec:
                raise RecordError(f"{where} [defaults] {key}: required by {shared}'s record (a config gives it)")
            spec["default"] = value
        if key in keys:
            keys[key] = value
    return merged


def _bundled_data(model_type: str, folder: str = _FOLDER) -> dict[str, Any]:
    """A bundled record's parsed TOML (``folder``: families/, or remote/ for remote-code families)."""
    text = resources.files(__package__).joinpath(folder).joinpath(f"{model_type}.toml").read_text("utf-8")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RecordError(f"{folder}/{model_type}.toml: {exc}") from None


@cache
def names() -> tuple[str, ...]:
    """Every model_type that has a record, sorted."""
    folder = resources.files(__package__).joinpath(_FOLDER)
    return tuple(sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml")))


_REMOTE = "remote"
"""Records of families published with remote code (their modeling file beside the checkpoint, not in transformers):
found by model_type as the others, not in :func:`names` (whose records are checked against transformers)."""


@cache
def remote_names() -> tuple[str, ...]:
    """Every model_type with a record of remote code, sorted."""
    folder = resources.files(__package__).joinpath(_REMOTE)
    return tuple(sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml")))


@cache
def family(model_type: str) -> Family | None:
    """The record of ``model_type``, loaded once; None when there is none."""
    folder = _FOLDER if model_type in names() else _REMOTE if model_type in remote_names() else None
    if folder is None:
        return None
    where = f"{folder}/{model_type}.toml"
    record = parse_record(_bundled_data(model_type, folder), where)
    if record.name != model_type:
        raise RecordError(f"{where}: model_type {record.name!r} does not match the file name")
    return record


_TOWERS = "towers"


@cache
def tower_names() -> tuple[str, ...]:
    """Every tower and projector record (``towers/``: the parts of a composite besides its language model), sorted."""
    folder = resources.files(__package__).joinpath(_TOWERS)
    return tuple(sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml")))


@cache
def tower(name: str) -> Family | None:
    """The tower or projector record ``name`` (a vision config's model_type, or a projector's name), loaded once;
    None when there is none. Same format as a family record."""
    if name not in tower_names():
        return None
    return _bundled(_TOWERS, name)


def _bundled(folder: str, model_type: str) -> Family:
    text = resources.files(__package__).joinpath(folder).joinpath(f"{model_type}.toml").read_text("utf-8")
    where = f"{folder}/{model_type}.toml"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RecordError(f"{where}: {exc}") from None
    record = parse_record(data, where)
    if record.name != model_type:
        raise RecordError(f"{where}: model_type {record.name!r} does not match the file name")
    return record


def load(path: str | os.PathLike[str]) -> Family:
    """The record in a TOML file anywhere (a draft, say), parsed and checked like the bundled ones."""
    from ..errors import LlmcountError
    from ..files import read_bytes

    where = os.fspath(path)
    try:  # a regular file of a record's size (a FIFO, a device or a 200 MB file in the cache is not read)
        raw = read_bytes(path, "record", MAX_RECORD_BYTES)
    except LlmcountError as exc:
        raise RecordError(str(exc)) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RecordError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise RecordError(f"{where}: nested too deeply to be a record") from None
    except ValueError as exc:  # TOMLDecodeError, or an integer of thousands of digits
        raise RecordError(f"{where}: {' '.join(str(exc).split())[:160]}") from None
    return parse_record(data, where)


MAX_RECORD_BYTES = 1_000_000  # a record (the largest bundled one is ~30 kB)


def families() -> tuple[Family, ...]:
    """Every record (loads them all: for listing)."""
    return tuple(f for f in map(family, names()) if f is not None)


@dataclass(frozen=True)
class Composite:
    """A model type whose config nests its language model's config under ``text_config`` (``composites.toml``):
    its language model is counted with the record of the text config's model_type, its towers and projectors with
    records of towers/ (the first named by ``vision`` and ``projector``, others by ``towers``); ``left_out`` names
    what is not counted."""

    name: str  # the composite config's model_type
    title: str
    model: str  # the transformers class whose language model is counted
    text: str  # the model_type transformers reads text_config as (when text_config names none, with any_text)
    any_text: bool  # text_config's own model_type picks the record (an AutoConfig sub-config)
    left_out: str  # what is not counted, in words
    top: Mapping[str, Any]  # keys read from the top level of the config, with the composite class's defaults
    either: tuple[str, ...]  # boolean keys of ``top`` that also hold when text_config sets them (LLaVA's tie)
    absent: Mapping[str, Any] | None  # the text config when text_config is absent or null (None: {})
    # without text_config, the text config is the top-level keys: all of them (True) or these (a flat config.json)
    text_at_top: bool | tuple[str, ...] = False
    # rules the composite class checks against the text config (the widths of parts not counted), over the text
    # record's symbols and ``keys``: keys of the composite config (one level of dotted keys) with the class's defaults
    keys: Mapping[str, Any] = field(default_factory=dict)
    checks: tuple[Rule, ...] = ()
    # the parts besides the language model, each a record of towers/: the vision tower read from vision_config (the
    # record named by ``vision``, or by vision_config's own model_type with ``any_vision``), and the projector read
    # from the whole config with vision_config and text_config holding the tower's and the language model's values
    vision: str = ""
    any_vision: bool = False
    vision_absent: Mapping[str, Any] | None = None  # vision_config when it is absent or null (None: {})
    projector: str = ""
    # the sub-config the tower is read from: "vision_config", or "audio_config" for an audio encoder (its part is then
    # the audio tower, and the projector reads the tower's values under that key)
    tower_config: str = "vision_config"
    # the text config class's defaults for this composite's text_config, where they differ from the shared table's
    text_defaults: Mapping[str, Any] = field(default_factory=dict)
    # keys the text record reads that the composite's text config class does not have (its model ignores them)
    text_ignores: tuple[str, ...] = ()
    # the class ties no weights (no _tied_weights_keys): its LM head is never the embedding, whatever
    # tie_word_embeddings says
    untied: bool = False
    # top-level keys the vision tower's module reads (with the composite class's defaults), given to its record with
    # vision_config's keys (MiniCPM-V's drop_vision_last_layer)
    vision_top: Mapping[str, Any] = field(default_factory=dict)
    # published with remote code: ``model`` names its modeling file's class, not one of transformers (the figures of
    # tests/remote_oracle are its oracle)
    remote: bool = False
    text_key: str = "text_config"  # the key of the language model's config (DeepSeek-VL2's language_config)
    # the top-level modules of its checkpoint that hold the parts besides the language model, where they are not
    # the usual ones (vision_tower, multi_modal_projector, ...): verify lists their tensors apart (other/<module>)
    parts_modules: tuple[str, ...] = ()
    # the top-level modules of its checkpoint that hold each part, by the part's --part name (vision, projector,
    # audio, audio_projector): verify maps their tensors to the part (parts/<name>) and sets them against its count
    modules: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # the towers besides the one ``vision`` names, each read from a sub-config of its own with its own projector
    # (``[[composite.X.towers]]``: Gemma 4's audio encoder and its embedder beside the vision encoder, Janus's VQ-VAE
    # and its generation head read from vq_config)
    towers: tuple[Tower, ...] = ()
    # the sub-configs whose tower and projector the class builds only when the sub-config is given (absent or null:
    # not built, not counted), as Gemma4Model builds its vision and audio towers
    optional: tuple[str, ...] = ()
    # keys of the text config the composite class sets from another sub-config (BlipConfig sets text_config's
    # encoder_hidden_size to vision_config.hidden_size): text key -> (dotted key, that sub-config class's default)
    text_from: Mapping[str, tuple[str, Any]] = field(default_factory=dict)
    # keys of the text config whose value the composite's text model does not read, with the value it behaves as
    # (GLM-OCR's attention has no q/k/v biases, whatever attention_bias says)
    text_fixed: Mapping[str, Any] = field(default_factory=dict)
    # keys of the text config its model computes from others when the config gives none (or null): key -> (the
    # expression over the text config's keys, compiled); GLM-OCR's heads are hidden_size // num_attention_heads wide
    text_computed: Mapping[str, tuple[str, Condition]] = field(default_factory=dict)

    @property
    def whole(self) -> bool:
        """Whether every part of the model is counted (nothing is left out)."""
        return not self.left_out


@dataclass(frozen=True)
class Tower:
    """A composite's tower besides the first (``[[composite.X.towers]]``): the record of towers/ read from the
    sub-config ``config`` (none: only its projector is counted), and its projector read from the whole config with
    that sub-config holding the tower's values. Its parts are the ``<kind> tower`` and the ``<kind> projector``, kind
    its ``name``, or the sub-config's name without ``_config`` (``audio``)."""

    config: str  # "audio_config", "vision_config", or another sub-config holding a tower (vq_config)
    tower: str = ""
    projector: str = ""
    absent: Mapping[str, Any] | None = None  # the sub-config when it is absent or null (None: {})
    name: str = ""  # the part's --part name (``vq``, ``high_res``); "": the sub-config's name without ``_config``
    # why the tower and its projector do not run on an input image ("": they do, and flops --images counts them)
    not_run: str = ""

    @property
    def kind(self) -> str:
        return self.name or self.config.removesuffix("_config")


TOWER_CONFIGS = ("vision_config", "audio_config")
"""The sub-configs a composite reads a tower from."""

_COMPOSITE_FIELDS = {"title", "model", "text", "text_types", "left_out", "top", "either", "absent", "text_at_top"}
_COMPOSITE_FIELDS |= {"keys", "checks", "vision", "vision_types", "vision_absent", "projector", "text_defaults"}
_COMPOSITE_FIELDS |= {"text_ignores", "untied", "vision_top", "remote", "text_key", "parts_modules", "tower_config"}
_COMPOSITE_FIELDS |= {"towers", "optional", "modules", "text_from", "text_fixed", "text_computed"}


def _composite(name: str, data: Any, where: str) -> Composite:
    data = _table(data, where)
    unknown = set(data) - _COMPOSITE_FIELDS
    if unknown:
        raise RecordError(f"{where}: unknown fields {sorted(unknown)}")
    text_types = data.get("text_types", "fixed")
    if text_types not in ("any", "fixed"):
        raise RecordError(f'{where}.text_types: "any" or "fixed"')
    top = _table(data.get("top", {}), f"{where}.top")
    if not all(isinstance(v, (bool, int, str)) for v in top.values()):
        raise RecordError(f"{where}.top: each key takes the composite class's default (a boolean, integer or string)")
    either = data.get("either", [])
    if not isinstance(either, list) or not all(isinstance(top.get(k), bool) for k in either):
        raise RecordError(f"{where}.either: a list of boolean keys of 'top'")
    absent = data.get("absent")
    if absent is not None:
        absent = {k: None if v == NULL else v for k, v in _table(absent, f"{where}.absent").items()}
    text_at_top = data.get("text_at_top", False)
    if isinstance(text_at_top, list) and all(isinstance(k, str) for k in text_at_top):
        text_at_top = tuple(text_at_top)
    elif not isinstance(text_at_top, bool):
        raise RecordError(f"{where}.text_at_top: true, or a list of the top-level keys read as the text config")
    vision_types = data.get("vision_types", "fixed")
    if vision_types not in ("any", "fixed"):
        raise RecordError(f'{where}.vision_types: "any" or "fixed"')
    vision_absent = data.get("vision_absent")
    if vision_absent is not None:
        vision_absent = {
            k: None if v == NULL else v for k, v in _table(vision_absent, f"{where}.vision_absent").items()
        }
    own_defaults = _table(data.get("text_defaults", {}), f"{where}.text_defaults")
    if not all(type(v) in (int, bool) for v in own_defaults.values()):
        raise RecordError(f"{where}.text_defaults: each key takes an integer or a boolean")
    ignores = data.get("text_ignores", [])
    if not isinstance(ignores, list) or not all(isinstance(k, str) for k in ignores):
        raise RecordError(f"{where}.text_ignores: a list of keys")
    untied = data.get("untied", False)
    if not isinstance(untied, bool) or (untied and "tie_word_embeddings" in top):
        raise RecordError(f"{where}.untied: true or false, and not with a top-level tie_word_embeddings")
    vision_top = _table(data.get("vision_top", {}), f"{where}.vision_top")
    if not all(isinstance(v, (bool, int, str)) for v in vision_top.values()):
        raise RecordError(
            f"{where}.vision_top: each key takes the composite class's default (a boolean, integer or string)"
        )
    remote = data.get("remote", False)
    if not isinstance(remote, bool):
        raise RecordError(f"{where}.remote: true or false")
    vision = _text(data, "vision", where, "")
    tower_config = data.get("tower_config", "vision_config")
    if tower_config not in TOWER_CONFIGS:
        raise RecordError(f'{where}.tower_config: "vision_config" or "audio_config"')
    towers = _towers(data.get("towers", []), f"{where}.towers", tower_config)
    optional = data.get("optional", [])
    if not isinstance(optional, list) or not set(optional) <= {tower_config, *(t.config for t in towers)}:
        raise RecordError(f"{where}.optional: a list of the sub-configs its towers are read from")
    if not vision and "projector" not in data and not towers and "left_out" not in data:
        raise RecordError(
            f"{where}: without 'vision', 'projector' or 'towers' (records of towers/), 'left_out' says what is not "
            "counted"
        )
    for part in (vision, _text(data, "projector", where, "")):
        if part and part not in tower_names():
            raise RecordError(f"{where}: {part!r} is not a record of towers/")
    keys = {k: None if v == NULL else v for k, v in _table(data.get("keys", {}), f"{where}.keys").items()}
    if not all(key.count(".") <= 1 and all(part.isidentifier() for part in key.split(".")) for key in keys):
        raise RecordError(f"{where}.keys: a key is a name or 'object.key', one level deep")
    allowed = {"vision", "projector"} | {n for t in towers for n in (t.kind, f"{t.kind}_projector")}
    stray = set(_table(data.get("modules", {}), f"{where}.modules")) - allowed
    if stray:
        raise RecordError(f"{where}.modules: {sorted(stray)} name no part of the composite ({sorted(allowed)})")
    text_from = _table(data.get("text_from", {}), f"{where}.text_from")
    for key, value in text_from.items():
        if not (
            isinstance(value, list)
            and len(value) == 2
            and isinstance(value[0], str)
            and value[0].count(".") == 1
            and isinstance(value[1], int)
        ):
            raise RecordError(f'{where}.text_from.{key}: ["object.key", the sub-config class\'s default integer]')
    text_fixed = _table(data.get("text_fixed", {}), f"{where}.text_fixed")
    if not all(type(v) in (bool, int, str) for v in text_fixed.values()):
        raise RecordError(
            f"{where}.text_fixed: each key takes the value the text model behaves as (a boolean, integer or string)"
        )
    computed = _table(data.get("text_computed", {}), f"{where}.text_computed")
    if not all(isinstance(v, str) for v in computed.values()):
        raise RecordError(f"{where}.text_computed: each key takes an expression over the text config's keys")
    return Composite(
        text_fixed=text_fixed,
        text_computed={k: (v, condition(v, f"{where}.text_computed.{k}")) for k, v in computed.items()},
        text_from={key: (value[0], value[1]) for key, value in text_from.items()},
        keys=keys,
        checks=_rules(data.get("checks", []), f"{where}.checks"),
        name=name,
        title=_text(data, "title", where),
        model=_text(data, "model", where),
        text=_text(data, "text", where),
        any_text=text_types == "any",
        left_out=_text(data, "left_out", where, ""),
        top=top,
        either=tuple(either),
        absent=absent,
        text_at_top=text_at_top,
        vision=vision,
        any_vision=vision_types == "any",
        vision_absent=vision_absent,
        projector=_text(data, "projector", where, ""),
        text_defaults=own_defaults,
        text_ignores=tuple(ignores),
        untied=untied,
        vision_top=vision_top,
        remote=remote,
        text_key=_text(data, "text_key", where, "text_config"),
        parts_modules=_modules(data.get("parts_modules", []), f"{where}.parts_modules"),
        modules={
            part: _modules(names, f"{where}.modules.{part}")
            for part, names in _table(data.get("modules", {}), f"{where}.modules").items()
        },
        tower_config=tower_config,
        towers=towers,
        optional=tuple(optional),
    )


def _towers(data: Any, where: str, first: str) -> tuple[Tower, ...]:
    """The ``[[towers]]`` of a composite: each read from a sub-config of its own (not ``first``, the first tower's)."""
    if not isinstance(data, list):
        raise RecordError(f"{where}: a list of tables (config, tower, projector, absent)")
    out: list[Tower] = []
    for i, entry in enumerate(data):
        at = f"{where}[{i}]"
        entry = _table(entry, at)
        unknown = set(entry) - {"config", "tower", "projector", "absent", "name", "not_run"}
        if unknown:
            raise RecordError(f"{at}: unknown fields {sorted(unknown)}")
        config = entry.get("config")
        if (
            not isinstance(config, str)
            or not config.endswith("_config")
            or not config.isidentifier()
            or config in (first, "text_config", *(t.config for t in out))
        ):
            raise RecordError(
                f"{at}.config: a sub-config (<name>_config) no other tower of the composite reads, not text_config"
            )
        own = _text(entry, "name", at, "")
        kinds = {"vision", "projector", "language", *(t.kind for t in out)}
        if own and (not own.isidentifier() or own in kinds):
            raise RecordError(f"{at}.name: an identifier naming no other part of the composite")
        names = {part: _text(entry, part, at, "") for part in ("tower", "projector")}
        if not any(names.values()):
            raise RecordError(f"{at}: a 'tower' or a 'projector' (records of towers/)")
        for name in names.values():
            if name and name not in tower_names():
                raise RecordError(f"{at}: {name!r} is not a record of towers/")
        absent = entry.get("absent")
        if absent is not None:
            absent = {k: None if v == NULL else v for k, v in _table(absent, f"{at}.absent").items()}
        not_run = _text(entry, "not_run", at, "")
        out.append(Tower(config, names["tower"], names["projector"], absent, own, not_run))
    return tuple(out)


def _modules(data: Any, where: str) -> tuple[str, ...]:
    if not isinstance(data, list) or not all(isinstance(m, str) and m.isidentifier() for m in data):
        raise RecordError(f"{where}: a list of module names")
    return tuple(data)


@cache
def _composites() -> tuple[dict[str, Composite], dict[str, dict[str, int]], dict[str, str]]:
    where = "formulas/composites.toml"
    text = resources.files(__package__).joinpath("composites.toml").read_text("utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RecordError(f"{where}: {exc}") from None
    unknown = set(data) - {"composite", "text_defaults", "refused"}
    if unknown:
        raise RecordError(f"{where}: unknown tables {sorted(unknown)}")
    table = {
        name: _composite(name, entry, f"{where} [composite.{name}]")
        for name, entry in _table(data.get("composite", {}), where).items()
    }
    # a composite may share its model_type with a record only when that record is its language model (a flat config)
    clash = sorted(name for name in set(table) & set(names()) if table[name].text != name)
    if clash:
        raise RecordError(f"{where}: {', '.join(clash)} also have a record of their own")
    defaults = _table(data.get("text_defaults", {}), f"{where} [text_defaults]")
    for name, sizes in defaults.items():
        sizes = _table(sizes, f"{where} [text_defaults.{name}]")
        if not all(type(v) is int for v in sizes.values()):
            raise RecordError(f"{where} [text_defaults.{name}]: each key takes an integer")
    refused = {}
    for name, entry in _table(data.get("refused", {}), f"{where} [refused]").items():
        entry = _table(entry, f"{where} [refused.{name}]")
        if set(entry) != {"reason"} or not isinstance(entry["reason"], str) or not entry["reason"].strip():
            raise RecordError(f'{where} [refused.{name}]: takes one key, reason = "..." (why it is not counted)')
        refused[name] = entry["reason"].strip()
    clash = sorted(set(refused) & (set(table) | set(names())))
    if clash:
        raise RecordError(f"{where}: {', '.join(clash)} are refused and counted at once")
    return table, defaults, refused


def composite(model_type: str) -> Composite | None:
    """The composite config of ``model_type`` (its language model read from ``text_config``); None if it is not one."""
    return _composites()[0].get(model_type)


def refused(model_type: str) -> str | None:
    """Why llmcount does not count ``model_type`` (a type transformers has that no record can describe yet), or None
    (``[refused.<model_type>]`` of composites.toml)."""
    return _composites()[2].get(model_type)


def text_defaults(model_type: str, outer: Composite | None = None) -> Mapping[str, int]:
    """The config class's defaults of the keys the record of ``model_type`` requires, for a config nested in a
    composite's ``text_config`` (where transformers fills them in); empty when the table has none. ``outer``: the
    composite, whose own text config class may default them otherwise (Qwen2-VL's text config is Qwen2's)."""
    if outer is not None and outer.text_defaults:
        return outer.text_defaults
    return _composites()[1].get(model_type, {})


def composites() -> tuple[Composite, ...]:
    """Every composite config, by model_type."""
    table = _composites()[0]
    return tuple(table[name] for name in sorted(table))


__all__ = [
    "CHECKED_AGAINST",
    "COMMON_KEYS",
    "ONE",
    "Attention",
    "Composite",
    "Family",
    "RecordError",
    "Tower",
    "composite",
    "composites",
    "families",
    "family",
    "load",
    "names",
    "newer_transformers",
    "parse_record",
    "refused",
    "tower",
    "tower_names",
]


@cache
def _model_classes(table_name: str = "classes") -> Mapping[str, str]:
    """``classes.toml``: a modeling class name -> the model_type of the record that describes it (``[classes]``:
    transformers' classes; ``[remote]``: the classes of remote-code records)."""
    text = resources.files(__package__).joinpath("classes.toml").read_text("utf-8")
    try:
        table = tomllib.loads(text).get(table_name, {})
    except tomllib.TOMLDecodeError as exc:
        raise RecordError(f"classes.toml: {exc}") from None
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise RecordError("classes.toml: [classes] maps class names to model_type names")
    return table


AUTO_MAP_KEYS = ("AutoModelForCausalLM", "AutoModel")
"""The auto_map entries that name a config's modeling class, in the order they are read."""


def by_auto_map(config: Mapping[str, Any]) -> tuple[str, str, Family] | None:
    """``(the auto_map entry, its class, the record)`` when a config's ``auto_map`` names a modeling class that a record
    describes (remote code published under a model_type of its own: Kimi-K2's kimi_k2 with DeepseekV3ForCausalLM);
    None otherwise."""
    auto_map = config.get("auto_map")
    if not isinstance(auto_map, Mapping):
        return None
    for key in AUTO_MAP_KEYS:
        entry = auto_map.get(key)
        if isinstance(entry, list) and entry:  # [class, fast class] in some configs
            entry = entry[0]
        if not isinstance(entry, str) or len(entry) > 300:
            continue
        name = entry.rpartition(".")[2]
        model_type = _model_classes().get(name) or _model_classes(_REMOTE).get(name)
        if model_type is not None and family(model_type) is not None:
            return entry, name, family(model_type)  # type: ignore[return-value]
    return None
