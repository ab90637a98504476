"""Training FLOPs per token as the papers and the training frameworks count them, side by side.

Each convention is transcribed from its source (cited in ``source``) and applied to one model's config at one
sequence length S. Every figure is an exact integer: training FLOPs per token (forward + backward; each source's
own rule for the backward). Why they differ is said in each ``includes`` sentence; in short, they disagree on
(a) which parameters count (embeddings, the LM head, norms), (b) the attention term (full S×S, causal half, one
matmul or two), (c) extras (softmax, embedding lookup as a matmul, recomputation, a padded vocabulary).

The ingredients, from the family record (the same terms as ``count`` and ``flops``):

* ``N``: activated non-embedding parameters (:data:`~llmcount.formulas.derivation.EMBEDDING_DEFINITION`:
  without the token embedding, a learned position table and an untied LM head; routed experts k of n);
* ``P``: every activated parameter, embeddings and an untied head included (PaLM's N);
* ``W``: the weights of the linear maps (no biases, norms, tables or head), routed experts k of n;
* ``L``: attention layers; ``h·d_qk`` and ``h·d_v``: the widths of Q·Kᵀ and A·V (the record's ``[attention]``);
  the attention terms use their sums over the L layers (``L·h·d_qk`` when every layer has the same widths; the
  per-layer sums where the layers' query heads or sliding layers' widths differ);
* ``V``, ``d``: vocabulary and hidden size; ``h``: attention heads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ..errors import LlmcountError
from ..shown import Shown
from .megatron_memory import MEGATRON_COMMIT, MEGATRON_VOCAB_MULTIPLE

if TYPE_CHECKING:  # the conventions themselves need no sympy: only reading a Model's ingredients does
    from .config import Model

TORCHTITAN_COMMIT = "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a"
MAXTEXT_COMMIT = "e591f30cbbf217ed67ef71263ec0538239f9c3b8"


@dataclass(frozen=True)
class Ingredients:
    """What the conventions are made of, for one model at one S: exact integers (see the module docstring)."""

    seq: int
    non_embedding: int  # N
    activated: int  # every activated parameter, embeddings included
    input_tables: int  # token embedding + learned position table (the nn.Embedding modules)
    tied: bool
    weights: int  # W: linear-map weights per token, routed experts k of n, no head
    router: int  # the part of W that is MoE routers
    layers: int  # L: attention layers
    qk: int | None  # h·d_qk of one layer (None: the layers' widths differ)
    v: int | None  # h·d_v of one layer
    qk_sum: int  # h·d_qk summed over the L attention layers
    v_sum: int  # h·d_v summed over the L attention layers
    heads: int | None  # h (None: the family has no head count)
    hidden: int  # d
    vocab: int  # V
    eager_forward: int | Fraction  # llmcount's forward FLOPs per token, full S×S (a mean: a Fraction with state layers)
    causal_forward: int | Fraction  # the same over the S(S+1)/2 causal pairs
    state_kinds: tuple[str, ...] = ()  # the kinds of layer that keep a state instead of keys and values (mamba, ...)
    # state layers as Megatron-LM counts them (a record's [[state]] megatron): the part of W in their own terms, which
    # Megatron's layer formula replaces, that formula summed over the layers, and (kind, function, note) of each kind
    state_weights: int = 0
    megatron_states: int = 0
    megatron_kinds: tuple[tuple[str, str, str], ...] = ()
    megatron_missing: tuple[str, ...] = ()  # kinds of state layer Megatron-LM has no count for
    megatron_norms: int = 0  # norm scales Megatron counts like GEMM weights (a record's megatron_weight terms)
    uneven: str = ""  # why the layers' score widths differ one from another ("": they do not)
    own_ops: tuple[str, ...] = ()  # the record's own [[flops]] operations (indexer scores, compressed entries...)

    @property
    def padded_vocab(self) -> int:
        return -(-self.vocab // MEGATRON_VOCAB_MULTIPLE) * MEGATRON_VOCAB_MULTIPLE


def ingredients(model: Model, seq: int) -> Ingredients:
    from .derivation import evaluate_int
    from .flops import Flops, is_matmul_weight, linear_flops, state_flops
    from .symbols import V, d, h

    derivation, values = model.derivation, model.values
    counts = model.counts
    family = derivation.architecture
    state_flops(derivation)  # refuses a state kind without a formula, widths that cannot be stated, no table at all
    spec = family.attention
    if spec is not None:  # past the attention the record describes, the conventions' full S×S is not what runs
        what = "the FLOPs conventions (full attention over S×S, their causal half) are"
        spec.check_seq(f"{family.title} ({family.name})", seq, values, what)
    uneven = "" if spec is None else _uneven(family)
    layers = 0 if spec is None else evaluate_int(spec.layers, values, "attention layers")
    present = [s for s in family.states if evaluate_int(s.layers, values, s.name)]
    kinds = tuple(dict.fromkeys(s.name for s in present))
    megatron = [s for s in present if s.megatron is not None]
    groups = frozenset().union(*(s.groups for s in megatron))
    weights = router = tables = state_weights = megatron_norms = 0
    for term in derivation.terms:
        if term.megatron_weight:
            megatron_norms += evaluate_int(term.layers * term.expr, values, term.path)
        if term.embedding and term.path != "head/lm_head":
            tables += evaluate_int(term.layers * term.expr, values, term.path)
        if is_matmul_weight(term):
            flop = linear_flops(term)
            per_token = evaluate_int(flop.layers * flop.per_token, values, term.path) // 2
            weights += per_token
            if term.path.startswith("moe/router"):
                router += per_token
            if term.group in groups:
                state_weights += per_token
    if V not in values or d not in values:
        raise LlmcountError(f"{model.name}: the FLOPs conventions need the vocabulary V and the hidden size d")
    return Ingredients(
        seq=seq,
        non_embedding=counts.activated - counts.embedding,
        activated=counts.activated,
        input_tables=tables,
        tied=model.tied,
        weights=weights,
        router=router,
        layers=layers,
        qk=None if uneven else evaluate_int(spec.qk, values, "h·d_qk") if layers else 0,
        v=None if uneven else evaluate_int(spec.v, values, "h·d_v") if layers else 0,
        qk_sum=evaluate_int(spec.total("qk"), values, "Σ h·d_qk") if layers else 0,
        v_sum=evaluate_int(spec.total("v"), values, "Σ h·d_v") if layers else 0,
        heads=values.get(h),
        hidden=values[d],
        vocab=values[V],
        eager_forward=Flops(derivation).evaluate(values, seq, 1).per_token,
        causal_forward=Flops(derivation, causal=True).evaluate(values, seq, 1).per_token,
        state_kinds=kinds,
        state_weights=state_weights,
        megatron_states=sum(
            evaluate_int(s.layers * s.megatron.expr, values, f"{s.name} layers (Megatron)") for s in megatron
        ),
        megatron_kinds=tuple((s.name, s.megatron.function, s.megatron.note) for s in megatron),
        megatron_missing=tuple(dict.fromkeys(s.name for s in present if s.megatron is None)),
        megatron_norms=megatron_norms,
        uneven=uneven,
        own_ops=tuple(op.path for op in family.flops if evaluate_int(op.layers, values, op.path)),
    )


def _uneven(family) -> str:
    """Why the attention layers' score widths differ one from another, naming the keys; "" when they do not."""
    spec = family.attention
    if spec.summed:
        widths = spec.total("qk").free_symbols | spec.total("v").free_symbols
        keys = ", ".join(dict.fromkeys(s.key for s in family.symbols if s.summed and s.symbol in widths))
        return f"their query heads differ: {keys}"
    if spec.widths(sliding=True)[:2] != spec.widths(sliding=False)[:2]:
        return "the sliding layers have widths of their own"
    return ""


@dataclass(frozen=True)
class Convention:
    """One way of counting: its training FLOPs per token at S, the formula, where it comes from, what it counts."""

    name: str
    training_flops_per_token: int | Fraction  # a Fraction: llmcount's mean per token, with state layers
    formula: str
    source: str
    includes: str


def ratio_to_6nd(x: Ingredients, made: Convention) -> Fraction:
    """A convention's training FLOPs over 6ND, N every activated parameter of the model (P): per token, over 6·P.
    Chinchilla's Table A4 prints this ratio."""
    return Fraction(made.training_flops_per_token) / (6 * x.activated)


def kaplan(x: Ingredients) -> Convention:
    """Kaplan et al. 2020, §2.1 (Table 1): :math:`C_{fwd} = 2N + 2 n_{layer} n_{ctx} d_{attn}`, training 3×."""
    return Convention(
        "kaplan",
        3 * (2 * x.non_embedding + 2 * x.seq * x.qk_sum),
        "3·C_fwd, C_fwd = 2·N + 2·n_layer·n_ctx·d_attn (N non-embedding, d_attn = h·d_qk)",
        "Kaplan et al. 2020, Scaling Laws for Neural Language Models, §2.1 and Table 1 (arXiv:2001.08361)",
        "2 FLOPs per non-embedding parameter (norms included, embeddings and the LM head not); one attention "
        "term of 2·n_ctx·d_attn per layer, half of eager's Q·Kᵀ + A·V; backward = 2 × forward",
    )


def chinchilla(x: Ingredients) -> Convention:
    """Hoffmann et al. 2022, Appendix F: embeddings, projections, logits, softmax, values, dense, final logits."""
    if x.heads is None and x.layers:
        raise LlmcountError("the Chinchilla convention counts the softmax per head: this family has no head count h")
    S = x.seq
    attention = 2 * S * x.qk_sum + x.layers * 3 * (x.heads or 0) * S + 2 * S * x.v_sum
    forward = 2 * x.vocab * x.hidden + 2 * x.weights + attention + 2 * x.hidden * x.vocab
    return Convention(
        "chinchilla",
        3 * forward,
        "3·(2·V·d + 2·W + L·(2·S·h·d_qk + 3·h·S + 2·S·h·d_v) + 2·d·V)",
        "Hoffmann et al. 2022, Training Compute-Optimal Large Language Models, Appendix F (arXiv:2203.15556)",
        "the embedding lookup as a 2·V·d matmul, every projection and MLP weight, logits and values over the full "
        "S×S, the softmax at 3 FLOPs per score, the final logits; backward = 2 × forward; norms not counted",
    )


def chinchilla_table(x: Ingredients) -> Convention:
    """Hoffmann et al. 2022, Table A4: Appendix F without the embedding matmul and the final logits."""
    if x.heads is None and x.layers:
        raise LlmcountError("the Chinchilla convention counts the softmax per head: this family has no head count h")
    S = x.seq
    attention = 2 * S * x.qk_sum + x.layers * 3 * (x.heads or 0) * S + 2 * S * x.v_sum
    return Convention(
        "chinchilla-table",
        3 * (2 * x.weights + attention),
        "3·(2·W + L·(2·S·h·d_qk + 3·h·S + 2·S·h·d_v))",
        "Hoffmann et al. 2022, Training Compute-Optimal Large Language Models, Appendix F, Table A4 "
        "(arXiv:2203.15556); the reading of karpathy/nanoGPT scaling_laws.ipynb (commit 0082c48181)",
        "as chinchilla without the embedding matmul and the final logits (2·V·d each): the variant whose ratios to "
        "6ND reproduce Table A4's, N the models' parameter counts (nanoGPT's reconstruction of Table A9's); every "
        "projection "
        "and MLP weight, logits and values over the full S×S, the softmax at 3 FLOPs per score; backward = 2 × "
        "forward; norms not counted",
    )


def palm(x: Ingredients) -> Convention:
    """Chowdhery et al. 2022, Appendix B: :math:`6N + 12 L H Q T`, N every parameter the model activates."""
    return Convention(
        "palm",
        6 * x.activated + 6 * (x.qk_sum + x.v_sum) * x.seq,
        "6·N + 12·L·H·Q·T (N all activated parameters; 12·H·Q = 6·(h·d_qk + h·d_v), T = S)",
        "Chowdhery et al. 2022, PaLM: Scaling Language Modeling with Pathways, Appendix B (arXiv:2204.02311)",
        "6 FLOPs per parameter, N read as Appendix B defines it, the model's parameters: embeddings, an untied LM "
        "head and norms included, a tied embedding once (it is also the head), for MoE the activated ones (routed "
        "experts k of n); Q·Kᵀ and A·V over the full S×S; no recomputation; the MFU definition",
    )


def _megatron_layers(x: Ingredients) -> int:
    """Forward FLOPs per token of Megatron's layers: 2 per GEMM weight (no router GEMM) + the causal core; state
    layers by Megatron's own formula for them (``hybrid_flops``) instead of their weights."""
    weights = x.weights - x.router - x.state_weights + x.megatron_norms
    return 2 * weights + x.megatron_states + x.seq * (x.qk_sum + x.v_sum)


def _megatron_formula(x: Ingredients, passes: int) -> str:
    weights = "2·(W - W_router - W_state) + M_state" if x.megatron_kinds else "2·(W - W_router)"
    if x.megatron_norms:
        weights = weights.replace("W_router", "W_router + P_norm", 1)
    return f"{passes}·({weights}) + 3·2·d·V_pad + {passes}·2·L·S·(h·d_qk + h·d_v)/2"


def _megatron_source(x: Ingredients) -> str:
    functions = ", ".join(dict.fromkeys(function for _, function, _ in x.megatron_kinds))
    hybrid = f" and, for the state layers, hybrid_flops's {functions}" if functions else ""
    where = "Megatron-LM megatron/training/training.py, num_floating_point_operations"
    return f"{where}{hybrid} (commit {MEGATRON_COMMIT[:10]})"


def megatron(x: Ingredients) -> Convention:
    """Megatron-LM ``num_floating_point_operations`` (megatron/training/training.py), BSHD batch, no MTP."""
    training = 3 * _megatron_layers(x) + 3 * 2 * x.hidden * x.padded_vocab
    return Convention(
        "megatron",
        training,
        _megatron_formula(x, 3),
        _megatron_source(x),
        "3 passes of every GEMM at 2 FLOPs per multiply-add: attention projections, MLP/shared and k routed "
        "experts (the router is not counted), logits over the vocabulary padded to a multiple of 128; core "
        "attention over S²/2 pairs (causal mask); norms and embeddings not counted; no recomputation"
        + (MEGATRON_NORMS.format(norms=x.megatron_norms) if x.megatron_norms else ""),
    )


def megatron_recompute(x: Ingredients) -> Convention:
    """Narayanan et al. 2021, Appendix: full activation recomputation runs each layer's forward twice."""
    training = 4 * _megatron_layers(x) + 3 * 2 * x.hidden * x.padded_vocab
    return Convention(
        "megatron-recompute",
        training,
        _megatron_formula(x, 4),
        "Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using "
        f"Megatron-LM, Appendix (arXiv:2104.04473), on {_megatron_source(x)}",
        "as megatron, with full activation recomputation: the layers' forward runs again in the backward, "
        "4 passes instead of 3 (hardware FLOPs, not model FLOPs); the logit layer is not recomputed",
    )


def torchtitan(x: Ingredients) -> Convention:
    """torchtitan ``get_dense_model_nparams_and_flops`` / ``get_moe_model_nparams_and_flops``."""
    matmul = x.activated if x.tied else x.activated - x.input_tables
    return Convention(
        "torchtitan",
        6 * matmul + 6 * (x.qk_sum + x.v_sum) * x.seq,
        "6·(P_activated - nn.Embedding params, if untied) + 6·L·h·(d_qk + d_v)·S",
        f"torchtitan torchtitan/models/utils.py, get_dense_model_nparams_and_flops (commit {TORCHTITAN_COMMIT[:10]})",
        "6 FLOPs per parameter except the input embedding table (with tied embeddings it is kept: it is the LM "
        "head), so norms and the LM head count; Q·Kᵀ and A·V over the full S×S (no causal halving); flash "
        "attention's backward recomputation not counted",
    )


def maxtext(x: Ingredients) -> Convention:
    """MaxText ``calculate_tflops_training_per_device`` (src/maxtext/utils/maxtext_utils.py), its default path for
    dense decoder blocks: 3 × (FFN, QKV and output projections, the unembedding) + 3 × causal attention."""
    return Convention(
        "maxtext",
        3 * (2 * x.weights + 2 * x.hidden * x.vocab) + 3 * x.seq * (x.qk_sum + x.v_sum),
        "3·(2·W + 2·d·V) + 3·L·S·(h·d_qk + h·d_v)",
        "MaxText src/maxtext/utils/maxtext_utils.py, calculate_tflops_training_per_device "
        f"(commit {MAXTEXT_COMMIT[:10]})",
        "3 passes of the FFN (2·d·d_ff per activation input and the output), the Q, K, V and output projections "
        "and the unembedding (2·d·V, the embedding lookup not counted: a gather), at 2 FLOPs per multiply-add; "
        "attention 4·S²·h·d_h per sequence halved for the causal mask; norms and biases not counted; the "
        "vocabulary not padded",
    )


MAXTEXT_NOT_GIVEN = (
    "not given for this model ({what}): MaxText's calculate_tflops_training_per_device (commit {commit}) counts "
    "those on paths of its own per decoder block, not transcribed here (only its default dense path is)"
)


def llmcount_eager(x: Ingredients) -> Convention:
    return Convention(
        "llmcount",
        3 * x.eager_forward,
        "3·(2·W + 2·d·V + L·2·S·(h·d_qk + h·d_v))",
        "llmcount flops: every matmul as torch's FlopCounterMode counts eager attention, checked against it",
        "2 FLOPs per linear weight (routers and k of n routed experts included), the LM head at every position, "
        "Q·Kᵀ and A·V over the full S×S as eager attention computes them; norms, softmax and embedding lookups "
        "not counted; backward = 2 × forward",
    )


def llmcount_causal(x: Ingredients) -> Convention:
    return Convention(
        "llmcount-causal",
        3 * x.causal_forward,
        "3·(2·W + 2·d·V + L·(S + 1)·(h·d_qk + h·d_v))",
        "llmcount flops --causal",
        "as llmcount, with Q·Kᵀ and A·V over the S(S+1)/2 query-key pairs on or below the diagonal, as causal "
        "kernels compute them (sliding-window and chunked layers: only the pairs within the window or chunk)",
    )


MEGATRON_NORMS = (
    "; except MLA's latent norms, P_norm = {norms:,} parameters, which its q and kv terms count like GEMM weights "
    "(q_lora_rank · (d + h·(d_nope + d_rope) + 1), kv_lora_rank · (d + h·(d_nope + d_v) + 1))"
)

CONVENTIONS = {
    "kaplan": kaplan,
    "chinchilla": chinchilla,
    "palm": palm,
    "chinchilla-table": chinchilla_table,
    "megatron": megatron,
    "megatron-recompute": megatron_recompute,
    "torchtitan": torchtitan,
    "maxtext": maxtext,
    "llmcount": llmcount_eager,
    "llmcount-causal": llmcount_causal,
}
"""Every convention by name, in the order they are shown."""


MEGATRON_HYBRID = (
    "not given for a model with {kinds} layers (llmcount's [[state]] kinds without a Megatron formula): "
    "Megatron-LM's num_floating_point_operations "
    "(megatron/training/training.py, commit {commit}) counts state layers of three kinds only, Mamba-2 "
    "(mamba_layer_flops), Gated Delta Product (gated_delta_product_layer_flops) and Gated DeltaNet "
    "(gdn_layer_flops), in hybrid_flops"
)
NOT_GIVEN_WITH_STATES = {"megatron": MEGATRON_HYBRID, "megatron-recompute": MEGATRON_HYBRID}
"""The conventions not given for models with state layers Megatron-LM has no count for, and why."""

PAPER_WITH_STATES = (
    "; with {kinds} layers (llmcount's reading, the source has no such layers): their weights count as parameters "
    "like any other, their sequence mixing (convolution, scan, delta rule) has no term and is not counted, and the "
    "attention term runs over the L = {layers} attention layers only"
)
LLMCOUNT_WITH_STATES = (
    "; the {kinds} layers' sequence mixing as llmcount flops counts it (the matmuls and convolutions of "
    "transformers' torch path, FlopCounterMode's count)"
)
MEGATRON_WITH_STATES = (
    "; the {kind} layers as Megatron's {function} counts them (M_state, in place of their own weights W_state): {note}"
)


CHINCHILLA_UNEVEN = (
    "not given: it counts the softmax at 3 FLOPs per score of each head (3·h·S per layer), and the layers' widths "
    "differ ({uneven}); the record states them as h·d_qk and h·d_v, not as each layer's head count"
)


def not_given(x: Ingredients) -> dict[str, str]:
    """The conventions not given for these ingredients, with the reason: Megatron's for state layers it has no
    count for, Chinchilla's per-head softmax where the layers' widths differ."""
    skipped = {}
    if x.megatron_missing:
        kinds = ", ".join(kind.replace("_", " ") for kind in x.megatron_missing)
        skipped |= {
            name: why.format(kinds=kinds, commit=MEGATRON_COMMIT[:10]) for name, why in NOT_GIVEN_WITH_STATES.items()
        }
    if x.uneven:
        skipped["chinchilla"] = skipped["chinchilla-table"] = CHINCHILLA_UNEVEN.format(uneven=x.uneven)
    maxtext_paths = [
        what
        for what, has in (
            ("MoE layers", x.router > 0),
            ("state (linear-attention, Mamba) layers", bool(x.state_kinds)),
            ("layers of unequal widths", bool(x.uneven)),
            ("score and value widths that differ (MLA)", x.qk_sum != x.v_sum),
            ("operations of the record's own", bool(x.own_ops)),
        )
        if has
    ]
    if maxtext_paths:
        skipped["maxtext"] = MAXTEXT_NOT_GIVEN.format(commit=MAXTEXT_COMMIT[:10], what=", ".join(maxtext_paths))
    return skipped


OWN_OPS = "; F_ops: {paths} (the record's own operations), per token as llmcount flops counts them"
OWN_OPS_LEFT = "; {paths} (the record's own operations, as llmcount flops counts them) are not in this convention"


def _with_own_ops(x: Ingredients, made: Convention) -> Convention:
    """A convention with what it does with the record's own operations: llmcount's count them (F_ops)."""
    if not x.own_ops:
        return made
    paths = ", ".join(x.own_ops)
    if not made.name.startswith("llmcount"):
        return replace(made, includes=made.includes + OWN_OPS_LEFT.format(paths=paths))
    return replace(made, formula=made.formula[:-1] + " + F_ops)", includes=made.includes + OWN_OPS.format(paths=paths))


def _with_states(x: Ingredients, made: Convention) -> Convention:
    """A convention's ``includes`` with what it does with state layers, when the model has some, and with the
    record's own operations."""
    made = _with_own_ops(x, made)
    if not x.state_kinds:
        return made
    kinds = ", ".join(kind.replace("_", " ") for kind in x.state_kinds)
    if made.name.startswith("megatron"):
        notes = "".join(
            MEGATRON_WITH_STATES.format(kind=kind.replace("_", " "), function=function, note=note)
            for kind, function, note in x.megatron_kinds
        )
        return replace(made, includes=made.includes + notes)
    note = LLMCOUNT_WITH_STATES if made.name.startswith("llmcount") else PAPER_WITH_STATES
    return replace(made, includes=made.includes + note.format(kinds=kinds, layers=x.layers))


MEGATRON_MTP = (
    "; with {k} multi-token-prediction layer(s) as Megatron's mtp_num_layers counts them: each one more decoder "
    "layer of the last layer's kind ({layer:,} forward FLOPs per token, the record's MTP layer), its norms and "
    "projection as GEMM weights ({own:,} parameters: Megatron's 3·d + 2·d²) and one more logit layer (2·d·V_pad)"
)
NO_MTP = "; the {k} MTP layer(s) of --mtp not counted: the convention has no term for them"


def _with_mtp(model: Model, x: Ingredients, rows: list[Convention], layers: int) -> list[Convention]:
    """The Megatron rows with ``layers`` MTP layers (megatron/training/training.py: mtp_num_layers adds layers of the
    last layer's kind, 3·d + 2·d² of norms and projection, and a logit layer each); the others say they leave them
    out. LlmcountError when the record has no MTP layer to add."""
    from . import mtp

    found = mtp.require(model)
    decoder = ingredients(found.decoder, x.seq)
    layer = _megatron_layers(decoder)
    own_paths = {choice.term.path for choice in found.spec.terms}
    own = sum(c.count for c in found.components if c.path in own_paths and not c.embedding) // found.layers
    made = []
    for row in rows:
        if not row.name.startswith("megatron"):
            made.append(replace(row, includes=row.includes + NO_MTP.format(k=layers)))
            continue
        passes = 4 if row.name == "megatron-recompute" else 3
        extra = passes * layers * (layer + 2 * own) + 3 * 2 * x.hidden * x.padded_vocab * layers
        made.append(
            replace(
                row,
                training_flops_per_token=row.training_flops_per_token + extra,
                formula=row.formula + f" + {passes}·k·(F_mtp + 2·P_mtp) + 3·k·2·d·V_pad (k = {layers})",
                includes=row.includes + MEGATRON_MTP.format(k=layers, layer=layer, own=own),
            )
        )
    return made


def conventions(model: Model, seq: int, mtp_layers: int = 0) -> list[Convention]:
    """Every convention's training FLOPs per token for ``model`` at S = ``seq`` (those :func:`not_given` names left
    out); ``mtp_layers``: Megatron's rows with that many multi-token-prediction layers."""
    x = ingredients(model, seq)
    made = rows(x)
    return _with_mtp(model, x, made, mtp_layers) if mtp_layers else made


def rows(x: Ingredients) -> list[Convention]:
    """Every convention's row for the ingredients ``x``, those :func:`not_given` names left out."""
    skipped = not_given(x)
    return [_with_states(x, make(x)) for name, make in CONVENTIONS.items() if name not in skipped]


def convention(model: Model, seq: int, name: str) -> Convention:
    """One convention by name; LlmcountError listing the names, or saying why it is not given for the model."""
    known(name)
    return named(ingredients(model, seq), name)


def known(name: str) -> str:
    """A convention's name as the table keys it; LlmcountError listing the names when it is none of them."""
    key = name.strip().lower()
    if key not in CONVENTIONS:
        raise LlmcountError(f"--convention: unknown convention {name!r}; choices: {', '.join(CONVENTIONS)}")
    return key


def named(x: Ingredients, name: str) -> Convention:
    """The row of the convention ``name`` for the ingredients ``x``; LlmcountError saying why it is not given."""
    key = known(name)
    if key in not_given(x):
        raise LlmcountError(f"the {key} convention is {not_given(x)[key]}; choose another with --convention")
    return _with_states(x, CONVENTIONS[key](x))


@dataclass(frozen=True)
class Utilisation(Shown):
    """Model FLOPs utilisation: the FLOP/s a throughput implies under a convention, over the GPUs' dense peak.

    .. math:: \\mathrm{MFU} = \\frac{\\text{tokens/s} \\cdot \\text{training FLOPs per token}}{K \\cdot \\text{peak}}

    with tokens/s the throughput of all K GPUs together. Exact fractions; a float only at output."""

    convention: Convention
    seq: int
    tokens_per_second: Fraction  # all GPUs together
    gpus: int
    peak_tflops: Fraction  # dense, per GPU
    gpu: str  # the GPU's name, or "" when --peak-tflops gave the peak
    dtype: str

    @property
    def achieved(self) -> Fraction:
        """FLOP/s of all GPUs together."""
        return self.tokens_per_second * self.convention.training_flops_per_token

    @property
    def peak(self) -> Fraction:
        """FLOP/s of all GPUs together at their dense peak."""
        return self.gpus * self.peak_tflops * 10**12

    @property
    def mfu(self) -> Fraction:
        return self.achieved / self.peak


def utilisation(
    model: Model,
    seq: int,
    tokens_per_second: Fraction,
    gpus: int,
    peak_tflops: Fraction,
    gpu: str = "",
    dtype: str = "bf16",
    name: str = "palm",
    read: Callable[[Any, int], Ingredients] | None = None,
) -> Utilisation:
    """MFU of ``model`` trained at S = ``seq`` at ``tokens_per_second`` over ``gpus`` GPUs of ``peak_tflops`` each;
    ``read``: how the model's ingredients are read (:func:`ingredients` of a Model by default)."""
    check_rates(tokens_per_second, peak_tflops)
    known(name)
    made = named((read or ingredients)(model, seq), name)
    return Utilisation(made, seq, tokens_per_second, gpus, peak_tflops, gpu, dtype)


def check_rates(tokens_per_second: Fraction, peak_tflops: Fraction) -> None:
    """LlmcountError naming the option whose rate is not positive."""
    if tokens_per_second <= 0:
        raise LlmcountError(f"--tokens-per-second must be positive, got {tokens_per_second}")
    if peak_tflops <= 0:
        raise LlmcountError(f"--peak-tflops must be positive, got {peak_tflops}")
