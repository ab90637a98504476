"""Forward and training FLOPs of an architecture, built from the same terms as its parameter count.

The convention is the one ``torch.utils.flop_counter.FlopCounterMode`` counts (``CONVENTION``): matrix
multiplications only, 2 FLOPs per multiply-add, so an :math:`m{\\times}k` by :math:`k{\\times}n` product costs
:math:`2mnk`. For B sequences of S tokens (:math:`T = B S` tokens):

* a linear map's weight of :math:`f_{in} f_{out}` parameters costs :math:`2 T f_{in} f_{out}`: twice its parameters
  per token. MoE: the router and the shared experts see every token, the routed experts k of n, so they cost
  :math:`2T\\,\\tfrac{k}{n} P_{\\mathrm{experts}}`;
* attention scores :math:`QK^\\top` and weighted values :math:`AV` cost :math:`2 B S^2 h\\,d_{qk}` and
  :math:`2 B S^2 h\\,d_{v}` per layer over the full :math:`S{\\times}S` matrix, as eager attention computes them;
  ``causal`` counts only the :math:`S(S+1)/2` query-key pairs on or below the diagonal, as causal kernels do,
  and on sliding-window layers only the pairs within the window (:func:`window_pairs`; chunked layers: within
  the chunk, :func:`chunk_pairs`); eager attention computes (and masks) the full matrix on every layer;
* layers that keep a state (a record's ``[[state]]``: Mamba, linear attention, ...) add the matmul-type operations
  that mix their sequence in transformers' torch path (the depthwise convolution, a scan's einsums), each a formula
  in B, S and the record's sizes (``[[state.flops]]``); their elementwise recurrences are not counted;
* the LM head projects every position: :math:`2 T d V`, tied to the embedding or not;
* weights a record marks ``matmul = false`` are parameters no matmul uses for the input (gpt-oss's sinks, the
  cross-attention of an encoder-decoder's decoder run on token ids alone): not counted; the record's
  ``[attention].not_run`` says so in the convention;
* not counted: embedding lookups, biases, norms, activations, softmax, RoPE, residual additions (elementwise).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cached_property

from sympy import Add, Expr, Min, Mod, Symbol, expand, floor

from ..errors import LlmcountError
from ..plain import is_norm as is_norm  # a name's test, shared with verify's path (no sympy)
from .blocks import ONE, Term
from .derivation import Derivation, evaluate_int, gather
from .flop_counts import RULE_DEFINITION as RULE_DEFINITION
from .flop_counts import TRAINING_DEFINITION as TRAINING_DEFINITION
from .flop_counts import FlopComponent, FlopCounts
from .records import Attention
from .symbols import B, S, V, d, entries, k, n

CONVENTION = (
    "matrix multiplications only, 2 FLOPs per multiply-add (as torch.utils.flop_counter counts them): "
    "each linear weight costs 2 FLOPs per parameter per token (routed experts: k of n per token); "
    "attention scores QK^T and values AV over the full S×S matrix, as eager attention computes them "
    "(on sliding-window layers too: eager attention masks the window); "
    "LM head at every position; biases, norms, activations, softmax, RoPE and embedding lookups not counted"
)
FULL_SCORES = (
    "attention scores QK^T and values AV over the full S×S matrix, as eager attention computes them "
    "(on sliding-window layers too: eager attention masks the window)"
)
CAUSAL_CONVENTION = CONVENTION.replace(
    "over the full S×S matrix, as eager attention computes them "
    "(on sliding-window layers too: eager attention masks the window)",
    "over the S(S+1)/2 query-key pairs on or below the diagonal, as causal kernels compute them "
    "(sliding-window and chunked layers: only the pairs within the window or the chunk)",
)
STATE_CONVENTION = (
    "layers that keep a state: the depthwise convolution and the matmuls and einsums of transformers' torch scan, "
    "as it computes them (the convolution over S + d_conv - 1 positions, Mamba-2's, Gated DeltaNet's and KDA's "
    "chunks padded to whole chunks, MiniMax's last block as long as it is); their elementwise recurrences, gates and "
    "decays, Gated DeltaNet's triangular solve and KDA's intra-chunk matrices (elementwise products and sums) not "
    "counted"
)


@dataclass(frozen=True)
class FlopTerm:
    """One matmul: ``per_token`` FLOPs per token in each of ``layers`` layers."""

    path: str
    per_token: Expr
    note: str
    layers: Expr = ONE
    kind: Expr | None = None  # the layers of its kind, when ``per_token`` is summed over them (``layers`` is then 1)

    @property
    def present(self) -> Expr:
        """How many layers of its kind a config has: none, and the term is left out."""
        return self.layers if self.kind is None else self.kind

    @property
    def forward(self) -> Expr:
        """FLOPs of this term in one forward pass of B sequences of S tokens."""
        return B * S * self.layers * self.per_token


def is_matmul_weight(term: Term) -> bool:
    """A linear map's weight matrix: not a vocabulary/position table or the head (counted apart), a bias, a norm or
    a term its record marks ``matmul = false``."""
    return term.matmul and not (term.embedding or term.path.endswith(".bias") or is_norm(term.path))


def linear_flops(term: Term) -> FlopTerm:
    """A weight of :math:`P` parameters per layer: :math:`2P` FLOPs per token, :math:`2\\tfrac{k}{n}P` if routed, in
    each of its layers, or in each layer that runs it (``runs``: a weight several layers share, or layers run again)."""
    per_token = 2 * term.expr * k / n if term.routed else 2 * term.expr
    return FlopTerm(term.path, per_token, term.note, term.run_layers)


def attention_spec(derivation: Derivation) -> Attention:
    """The record's ``[attention]``: which layers attend and how wide; refused by name when a record has none."""
    family = derivation.architecture
    spec = family.attention
    if spec is None:
        raise LlmcountError(
            f"FLOPs and the KV cache are not derived for {family.title} ({family.name}) yet: "
            "its record has no [attention] section"
        )
    return spec


def state_flops(derivation: Derivation, causal: bool = False, beyond: bool = False) -> list[tuple[FlopTerm, str]]:
    """The sequence-mixing operations of the layers that keep a state (``[[state.flops]]``), per token: each
    record formula (FLOPs of one layer for B sequences of S tokens) over B·S, with the path of the term it precedes
    in reader's order ("": after the last term of its group); then the record's own ``[[flops]]``, each in its
    layers (``causal``: over the causal pairs, where the record gives that formula; those marked ``beyond`` only
    when ``beyond``: S past [attention]'s longest). Refused by name when a layer
    kind of the record has no such formula, when its attention layers' widths cannot be stated (``no_flops``), or
    when the record says neither how its layers attend nor what they keep."""
    family = derivation.architecture
    if family.attention is None and not family.states:
        attention_spec(derivation)  # raises, naming the family
    if family.attention is not None and family.attention.no_flops:
        raise LlmcountError(f"FLOPs are not derived for {family.title} ({family.name}): {family.attention.no_flops}")
    missing = [state.name for state in family.states if state.flops is None]
    if missing:
        kinds = ", ".join(dict.fromkeys(missing))
        beside = "beside its [attention] layers, " if family.attention is not None else ""
        raise LlmcountError(
            f"FLOPs are not derived for {family.title} ({family.name}) yet: {beside}its {kinds} layers ([[state]]) "
            "have no FLOPs formula (`llmcount memory` gives their state)"
        )
    scans = [
        (FlopTerm(op.path, op.expr / (B * S), op.note, state.layers), op.before)
        for state in family.states
        for op in state.flops or ()
        if state.layers != 0
    ]
    ops = [op for op in family.flops if beyond or not op.beyond]
    own = [(op, op.causal if causal and op.causal is not None else op.expr) for op in ops]
    return scans + [(FlopTerm(op.path, expr / (B * S), op.note, op.layers), op.before) for op, expr in own]


def window_pairs(window: Expr) -> Expr:
    """Query-key pairs of a causal sliding window of W keys (a query sees itself and the W - 1 before it): query q
    (from 1) sees min(q, W) keys, so with :math:`m = \\min(S, W)` the S queries see :math:`m(m+1)/2 + (S - m)W`
    pairs; :math:`S(S+1)/2` when the window covers the sequence."""
    m = Min(S, window)
    return m * (m + 1) / 2 + (S - m) * window


def chunk_pairs(chunk: Expr) -> Expr:
    """Query-key pairs of causal attention within chunks of C tokens: each whole chunk :math:`C(C+1)/2`, the last
    :math:`r(r+1)/2` for its :math:`r = S \\bmod C` tokens."""
    rest = Mod(S, chunk)
    return floor(S / chunk) * chunk * (chunk + 1) / 2 + rest * (rest + 1) / 2


def score_flops(spec: Attention, causal: bool) -> list[FlopTerm]:
    """Per token per layer: :math:`2 S\\,h d_{qk}` for :math:`QK^\\top` and :math:`2 S\\,h d_v` for :math:`AV`
    (full matrix); causal: :math:`(S+1)` instead of :math:`2S`, the mean of the S(S+1)/2 pairs over S tokens,
    and on sliding or chunked layers twice their pairs (:func:`window_pairs`, :func:`chunk_pairs`) over S.
    The widths come from the record: :math:`h h_d` (GQA), :math:`d` (GPT-2), :math:`h(d_{nope}+d_{rope})` and
    :math:`h d_v` (MLA)."""
    kind = "chunked" if spec.chunked else "sliding"
    own = spec.summed or spec.widths(sliding=False)[:2] != spec.widths(sliding=True)[:2]  # sliding: other widths
    if not causal and not own:
        masked = spec.window is not None and spec.windowed != 0  # a window that masks some layers' scores
        span = "the full S×S matrix" + (", sliding layers too (eager masks the window)" if masked else "")
        return _scores(spec, spec.layers, 2 * S, span)
    if not causal:
        full = _scores(spec, spec.layers - spec.windowed, 2 * S, "the full S×S matrix", "full layers: ")
        span = "the full S×S matrix (eager masks the window)"
        return full + _scores(spec, spec.windowed, 2 * S, span, f"{kind} layers: ", f"/{kind}")
    if spec.window is None:
        return _scores(spec, spec.layers, S + 1, "the S(S+1)/2 causal pairs")
    if spec.chunked:
        pairs, span = chunk_pairs(spec.window), "the causal pairs within each chunk of W tokens"
    else:
        pairs, span = window_pairs(spec.window), "the causal pairs within the window of W keys"
    full = _scores(spec, spec.layers - spec.windowed, S + 1, "the S(S+1)/2 causal pairs", "full layers: ")
    return full + _scores(spec, spec.windowed, 2 * pairs / S, span, f"{kind} layers: ", f"/{kind}")


def _scores(spec: Attention, layers: Expr, pairs: Expr, span: str, prefix: str = "", suffix: str = "") -> list:
    """The two attention matmuls of ``layers`` layers at ``pairs`` (twice the query-key pairs per token), at the
    widths of the sliding layers when ``suffix`` names them; widths the record sums over those layers (``summed``)
    make one term whose width is the sum."""
    if layers == 0:
        return []
    qk, v, _ = spec.widths(sliding=bool(suffix))
    scores, values = f"{prefix}attention scores Q·K^T over {span}", f"{prefix}attention-weighted values A·V over {span}"
    if spec.summed:
        summed = ", at the query heads summed over those layers"
        return [
            FlopTerm(f"attention/scores{suffix}", pairs * qk, scores + summed, ONE, layers),
            FlopTerm(f"attention/values{suffix}", pairs * v, values + summed, ONE, layers),
        ]
    return [
        FlopTerm(f"attention/scores{suffix}", pairs * qk, scores, layers),
        FlopTerm(f"attention/values{suffix}", pairs * v, values, layers),
    ]


def head_flops(head: Expr | None) -> FlopTerm:
    """The LM head at every position, tied or not: :math:`2dV` per token (twice the record's ``head``, whose
    vocabulary is V or, where the logits have another width, the one symbol of ``head`` named V_...)."""
    head = d * V if head is None else head
    rows = next((s for s in sorted(head.free_symbols, key=str) if s.name.startswith("V")), V)
    width = "d" if head == d * rows else str(head / rows)
    return FlopTerm("head/lm_head", 2 * head, f"LM head, {width} to {rows} at every position (tied or not)")


def _whole(value: Fraction) -> int | Fraction:
    """An int when the fraction is whole."""
    return value.numerator if value.denominator == 1 else value


@dataclass(frozen=True)
class Flops:
    """The forward FLOPs formula of one architecture: ordered matmul terms, in the derivation's order."""

    derivation: Derivation
    causal: bool = False
    beyond: bool = False  # S past [attention]'s longest: its [[flops]] marked beyond instead of the scores

    @property
    def convention(self) -> str:
        family = self.derivation.architecture
        convention = CAUSAL_CONVENTION if self.causal else CONVENTION
        if self.beyond:  # the record's words for the attention run beyond the longest S of its [attention]
            convention = convention.replace(
                FULL_SCORES, f"attention beyond the longest S of full attention {family.attention.beyond}"
            )
        convention = f"{convention}; {STATE_CONVENTION}" if family.states else convention
        not_run = family.attention.not_run if family.attention is not None else ""
        return f"{convention}; {not_run}" if not_run else convention

    @cached_property
    def terms(self) -> tuple[FlopTerm, ...]:
        """Linear weights in reader's order, attention scores and values after the attention projections, a state
        layer's sequence mixing before the term its record names (``before``) or after the last of its group, the LM
        head last."""
        # refuses a kind without a formula, or a record without either table
        scans = state_flops(self.derivation, self.causal, self.beyond)
        terms = [linear_flops(t) for t in self.derivation.terms if is_matmul_weight(t)]
        spec = self.derivation.architecture.attention
        if spec is not None and not self.beyond:
            after_attention = max((i + 1 for i, t in enumerate(terms) if t.path.startswith("attention/")), default=0)
            terms[after_attention:after_attention] = score_flops(spec, self.causal)
        for scan, before in scans:
            group = scan.path.partition("/")[0] + "/"
            at = next((i for i, t in enumerate(terms) if before and t.path == before), None)
            if at is None:
                at = max((i + 1 for i, t in enumerate(terms) if t.path.startswith(group)), default=len(terms))
            terms.insert(at, scan)
        return (*terms, head_flops(self.derivation.architecture.head))

    def at(self, values: dict[Symbol, int], seq: int) -> Flops:
        """The formula that holds at S for a config: this one, or past [attention]'s longest S the one of the
        record's [[flops]] marked beyond (refused by name when there is none)."""
        spec = self.derivation.architecture.attention
        if spec is None or self.beyond or not spec.is_beyond(seq, values):
            return self
        return self._beyond(spec, seq, values)

    def _beyond(self, spec: Attention, seq: int, values: dict[Symbol, int]) -> Flops:
        """The formula for S past [attention]'s longest: the record's [[flops]] marked beyond instead of the scores;
        refused by name when the record has none, or when ``causal`` and one of them has no causal formula."""
        family = self.derivation.architecture
        name = f"{family.title} ({family.name})"
        ops = [op for op in family.flops if op.beyond]
        if not ops:
            spec.check_seq(name, seq, values)
        if self.causal and any(op.causal is None for op in ops):
            spec.check_seq(name, seq, values, "FLOPs over the causal pairs (--causal) are")
        return replace(self, beyond=True)

    @cached_property
    def per_token(self) -> Expr:
        """Forward FLOPs per token: forward / (B·S)."""
        return expand(Add(*(t.layers * t.per_token for t in self.terms)))

    @cached_property
    def forward(self) -> Expr:
        """Forward FLOPs of B sequences of S tokens."""
        return expand(B * S * self.per_token)

    @cached_property
    def training(self) -> Expr:
        return 3 * self.forward

    @cached_property
    def rule_of_thumb(self) -> Expr:
        return expand(6 * B * S * self.derivation.activated)

    def grouped(self) -> list[tuple[Expr, list[Expr]]]:
        """Per-token FLOPs as ``[(layers, [per-layer exprs...]), ...]`` in reader's order, for display."""
        return gather((t.layers, t.per_token) for t in self.terms)

    @cached_property
    def symbols(self) -> tuple[Symbol, ...]:
        """The glossary symbols this formula uses, in glossary order."""
        used = self.forward.free_symbols | self.rule_of_thumb.free_symbols
        return tuple(e.symbol for e in entries() if e.symbol in used)

    def evaluate(self, values: dict[Symbol, int], seq: int, batch: int) -> FlopCounts:
        """Substitute a config's values and S, B; every count stays a Python int. A term of a kind of layer the
        config has none of (full layers when every layer slides, sliding layers when none does) is left out."""
        values = {**values, S: seq, B: batch}
        terms = self.terms  # refuses a record without [attention] before its window is read
        family = self.derivation.architecture
        spec = family.attention
        held = self.at(values, seq)  # past [attention]'s longest S, the formula of what runs there
        if held is not self:
            return held.evaluate(values, seq, batch)
        if spec is not None and spec.window is not None and not spec.window.free_symbols <= set(values):
            # no window in the config: no layer slides, every layer attends to the whole sequence
            missing = (spec.sliding.free_symbols if spec.sliding is not None else set()) - set(values)
            values.update({symbol: 0 for symbol in missing})
            values.update({symbol: seq for symbol in spec.window.free_symbols - set(values)})
        components = tuple(
            FlopComponent(t.path, t.forward, evaluate_int(t.forward, values, f"{t.path} FLOPs"))
            for t in terms
            if evaluate_int(t.present, values, f"{t.path} layers") != 0  # no layer of that kind in this config
        )
        forward = sum(c.flops for c in components)
        return FlopCounts(
            seq=seq,
            batch=batch,
            forward=forward,
            per_token=_whole(Fraction(forward, seq * batch)),
            training=3 * forward,
            rule_of_thumb=evaluate_int(self.rule_of_thumb, values, "rule of thumb"),
            components=components,
            convention=self.convention,
        )
