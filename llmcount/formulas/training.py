"""Training memory per GPU: model states (weights, gradients, optimizer states) under an optimizer, ZeRO and
tensor / pipeline / expert parallelism, LoRA; and the activations of :mod:`.activations`.

Every amount is an exact number of bytes (a Python int); GiB = 2^30 bytes is made at output.

Model states, per trainable parameter (``--dtype`` is the compute dtype; bf16/fp16 is mixed precision):

* weights and gradients in the compute dtype (2 + 2 bytes; fp32: 4 + 4); with bf16/fp16 an fp32 master copy of
  the weights (4), whatever the optimizer, as Megatron and DeepSpeed keep one;
* optimizer states (fp32 unless said): ``adamw`` first and second moments, 4 + 4 (so mixed precision is
  2 + 2 + 12 = 16 bytes, fp32 training 4 + 4 + 8 = 16); ``adamw8bit`` (bitsandbytes) the two moments in 8 bits,
  1 + 1, plus one fp32 absmax per block of 256 values of each moment; ``sgd`` none (PyTorch's default,
  momentum = 0); ``sgd-momentum`` one momentum buffer, 4; ``adafactor`` (Shazeer & Stern 2018, as transformers'
  ``Adafactor`` defaults: no first moment) the factored second moment, one row and one column accumulator per
  weight matrix (rows + cols values), the full second moment for vectors (norm scales, biases); ``muon`` one
  momentum buffer (4) for the hidden weight matrices, AdamW (4 + 4) for the embedding, the untied head, norm
  scales and biases (as Keller Jordan's and Moonlight's Muon do).
* LoRA (``lora``): the base model is frozen, its weights in the compute dtype only; the adapters A (r × f_in) and
  B (f_out × r) of each adapted weight matrix, :math:`r (f_{in} + f_{out})` parameters, are the trainable
  parameters with the states above.
* Parameters that get no gradient in a training step of the counted model (a record's ``grad = false`` terms: a
  cross-attention that token ids alone do not run, a fixed sinusoidal table) are held as weights only, as frozen
  ones: PyTorch leaves their ``.grad`` None and its optimizers create no state for them.

ZeRO over ``dp`` data-parallel ranks (Rajbhandari et al. 2020): stage 1 shards the optimizer states (with the
fp32 master weights), stage 2 also the gradients, stage 3 also the weights; a sharded amount takes
:math:`\\lceil x / N_{dp} \\rceil` bytes per rank. AdamW in mixed precision: stage 1 :math:`4P + 12P/N_{dp}`,
stage 2 :math:`2P + 14P/N_{dp}`, stage 3 :math:`16P/N_{dp}`.

Tensor, pipeline and expert parallelism (Megatron-LM's layout), ``PARALLEL_ASSUMPTIONS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from sympy import Expr, Integer, Symbol, cancel, ceiling, expand, factor

from ..errors import LlmcountError
from ..plain_training import Held, Parallel
from ..shown import Shown
from .blocks import Term
from .layer_kinds import Kind, is_model_level, kinds, layer_sequence, stages
from .memory import BITS, FLOAT_16, Line, dtype
from .symbols import (
    N,
    V,
    V_dec,
    d,
    d_ff,
    d_idx,
    d_lat,
    d_moe,
    d_rope,
    d_rope_sw,
    d_s,
    d_sh,
    d_ssm,
    g,
    h,
    h_idx,
    h_kv,
    h_kv_full,
    h_kv_sw,
    h_lk,
    h_lv,
    h_m,
    h_sw,
    n,
    n_pos,
    n_type,
    r_kv,
    r_kv_sw,
    r_q,
    r_q_sw,
)

if TYPE_CHECKING:
    from .activations import Activations
    from .config import Model

OPTIMIZERS: dict[str, str] = {
    "adamw": "AdamW: fp32 first and second moments (4 + 4 bytes per parameter)",
    "adamw8bit": "8-bit AdamW (bitsandbytes): moments in 8 bits (1 + 1) + one fp32 absmax per 256 values of each",
    "sgd": "SGD without momentum (PyTorch's default, momentum = 0): no state",
    "sgd-momentum": "SGD with momentum: one fp32 momentum buffer (4)",
    "adafactor": "Adafactor (no first moment): fp32 row + column second moments per matrix, full for vectors",
    "muon": "Muon: one fp32 momentum buffer (4) for hidden matrices; AdamW (4 + 4) for embedding, head, norms, biases",
}
ZERO_STAGES = (0, 1, 2, 3)
LORA_DEFAULT_TARGETS = ("attention", "mlp")
ADAM8BIT_BLOCK = 256

TP_SPLIT = (h, h_kv, h_sw, h_kv_sw, h_kv_full, d_ff, d_moe, d_sh, d_s, V, V_dec, h_lk, h_lv, d_ssm, h_m, g)
"""Sizes tensor parallelism splits wherever they appear: attention heads (of every kind of layer), MLP and
shared-expert widths, the vocabulary, linear-attention heads, and Mamba's inner width, heads and B/C groups."""
TP_REPLICATED = (r_q, r_kv, d_rope, r_q_sw, r_kv_sw, d_rope_sw, n, n_pos, n_type, d_lat, d_idx, h_idx)
"""Sizes of weights tensor parallelism keeps whole: MLA's down-projections (to r_q, r_kv; d_rope: the shared RoPE
key of its kv down-projection), the router (n), a learned position table, a token-type table, the latent MoE's
projections (d_lat) and the sparse-attention indexer (d_idx, h_idx), both ``parallel_mode="duplicated"`` in
Megatron-LM (moe/moe_layer.py, experimental_attention_variant/dsa.py)."""
TP_PADDED = (V, V_dec)
"""Split sizes padded to a multiple of tp rather than refused (Megatron-LM pads the vocabulary, by default to a
multiple of 128·tp; the count takes the fewest rows, ⌈V / tp⌉ per rank, and no padded rows elsewhere)."""

PARALLEL_ASSUMPTIONS = (
    "tp (Megatron-LM tensor parallel, Shoeybi et al. 2019) splits every weight whose size has a head count, an MLP "
    "or shared-expert width, the vocabulary, linear-attention heads or Mamba's inner width, heads or groups in it "
    "(column-parallel q/k/v and gate/up with their biases, row-parallel o and down; the embedding and head by "
    "vocabulary rows; a Mamba-2 layer's in_proj, conv1d, dt_bias, A_log, D and gated norm and a Gated DeltaNet "
    "layer's projections, conv and per-head vectors, as megatron/core/ssm/mamba_mixer.py and "
    "gated_delta_net/gdn.py split them; a Mamba-1 layer, which Megatron-LM has none of, the same way over "
    "d_inner, its x_proj row-parallel), or that its record marks tp = split (a size written in d: GPT-2's 3·d²), "
    "and replicates the rest: norm scales, row-parallel biases of size d, routers, MLA's down-projections, the latent "
    "MoE's and the sparse-attention indexer's projections (duplicated in Megatron-LM), learned position and "
    "token-type tables (torch.nn.Embedding in Megatron's LanguageModelEmbedding), weights its record "
    "marks tp = replicated (BERT's head transform, a plain Linear in Megatron's BertLMHead); every size it splits "
    "must be divisible by tp (the vocabulary is padded to a multiple of tp instead), and a weight neither its "
    "sizes nor its record place is refused by name; routed experts are not split by tp "
    "(expert-tensor-parallel size 1) but divided among ep ranks (n/ep experts each); pp splits the N layers into "
    "contiguous stages as even as possible (the first N mod pp stages one layer longer), the embedding on the first "
    "stage, the final norm and head on the last (a tied head is a second copy of the embedding there), and the GPU "
    "counted is on the heaviest stage (when the record cannot tell the order of its layer kinds, a stage's layers "
    "are taken of the heaviest kind: an upper bound); ZeRO shards over the dp ranks only; GPUs = tp · pp · ep · dp"
)


KV_HEADS = (h_kv, h_kv_sw, h_kv_full)
"""Key-value head counts: an inference engine keeps one head per rank when there are fewer than tp (replicated)."""


def kv_replicated(model: Model, tp: int) -> dict[Symbol, int]:
    """``model.values`` with each key-value head count below ``tp`` raised to tp: each rank then holds one head,
    a copy, as vLLM's attention layers do when ``total_num_kv_heads < tp_size`` (``num_kv_heads = max(1, total //
    tp)``, ``tp % total == 0`` asserted: vllm/model_executor/models/llama.py, LlamaAttention, commit 0035bdf2);
    LlmcountError naming the key when tp is not a multiple of such a count."""
    values = dict(model.values)
    for symbol in KV_HEADS:
        value = values.get(symbol)
        if value is not None and 0 < value < tp:
            if tp % value:
                raise LlmcountError(
                    f"--tp {tp} is neither a divisor nor a multiple of {_key(model, symbol, str(symbol))} = {value} "
                    "(key-value heads are split over tp ranks, or each copied to tp / heads ranks)"
                )
            values[symbol] = tp
    return values


def check_parallel(model: Model, parallel: Parallel, values: dict[Symbol, int] | None = None) -> None:
    """LlmcountError naming both numbers when a degree does not divide what it splits; ``values``: the sizes as
    the ranks see them (:func:`kv_replicated`), the model's own by default."""
    values = model.values if values is None else values
    if parallel.zero not in ZERO_STAGES:
        raise LlmcountError(f"--zero {parallel.zero}: choices: {', '.join(map(str, ZERO_STAGES))}")
    if parallel.sequence_parallel and parallel.tp == 1:
        raise LlmcountError("--sequence-parallel splits activations over tensor-parallel ranks: give --tp > 1")
    if parallel.tp > 1:
        for symbol, key in ((h, "num_attention_heads"), (h_kv, "num_key_value_heads")):
            if values.get(symbol) is not None and values[symbol] % parallel.tp:
                raise LlmcountError(f"--tp {parallel.tp} does not divide {_key(model, symbol, key)} = {values[symbol]}")
        _refuse_summed_sizes(model, parallel.tp)
        for term in model.derivation.terms:
            if not term.routed:
                check_split(model, term, parallel.tp, values)
    if parallel.ep > 1:
        if not model.architecture.is_moe or n not in values:
            raise LlmcountError(f"--ep {parallel.ep}: {model.name} has no routed experts to divide")
        if values[n] % parallel.ep:
            raise LlmcountError(f"--ep {parallel.ep} does not divide the number of routed experts n = {values[n]}")
    if parallel.pp > values[N]:
        raise LlmcountError(f"--pp {parallel.pp} is more than the number of layers N = {values[N]}")


def _refuse_summed_sizes(model: Model, tp: int) -> None:
    """Sizes a record sums over the layers (query heads that differ per layer) hide each layer's own, which tp must
    divide: refused by name."""
    family = model.architecture
    used = set().union(*(term.expr.free_symbols for term in model.derivation.terms))
    for spec in family.symbols:
        if spec.summed and spec.symbol in used:
            raise LlmcountError(
                f"--tp {tp}: {family.title} ({family.name}) reads {spec.key} per layer and its record keeps their sum "
                f"({spec.symbol}), so whether tp divides each layer's is not checked: not derived"
            )


def check_split(model: Model, term: Term, tp: int, values: dict[Symbol, int] | None = None) -> None:
    """LlmcountError naming the config key (or the term) and both numbers when ``tp`` does not divide a size of
    ``term`` that it splits."""
    values = model.values if values is None else values
    split, _ = tp_split(term, tp)
    for symbol in sorted(split.free_symbols & (set(TP_SPLIT) - set(TP_PADDED)), key=str):
        value = values.get(symbol)
        if value is not None and value % tp:
            raise LlmcountError(
                f"--tp {tp} does not divide {_key(model, symbol, str(symbol))} = {value} ({symbol} in {term.path})"
            )
    count = split.subs(padded(values, tp))
    if count.is_Integer and int(count) % tp:
        raise LlmcountError(f"--tp {tp} does not divide the {int(count):,} parameters of {term.path} it splits")


def _key(model: Model, symbol: Symbol, default: str) -> str:
    """The config key a record reads ``symbol`` from, with the record's adjustment when the value is not the key's
    own (GPT-BigCode's h_kv: 1 with multi_query)."""
    for spec in model.architecture.symbols:
        if spec.symbol == symbol:
            return f"{spec.key} ({symbol} = {spec.adjust_text})" if spec.adjust is not None else spec.key
    return model.architecture.key_of(symbol) or default


def padded(values: dict[Symbol, int], tp: int, pad_to: int | None = None) -> dict[Symbol, int]:
    """``values`` with the vocabulary sizes (``TP_PADDED``) rounded up to a multiple of ``tp`` (the fewest rows), or
    of ``pad_to`` when given (an engine's padding, which tp must then divide: checked by the caller)."""
    step = tp if pad_to is None else pad_to
    return {**values, **{s: -(-values[s] // step) * step for s in TP_PADDED if values.get(s) is not None}}


def _monomials(expr: Expr) -> list[Expr]:
    return list(expand(expr).as_ordered_terms())


def _degree(monomial: Expr) -> int:
    """The sum of the sizes' exponents: 2 for d·d_ff, 1 for d, 0 for d/h (one head's width)."""
    return sum(int(power) for base, power in monomial.as_powers_dict().items() if base.free_symbols)


def tp_split(term: Term, tp: int) -> tuple[Expr, Expr]:
    """A term's per-layer expression as (the part tp splits, the part it replicates): all of it as its record's
    ``tp`` says, else by monomial as its sizes tell (``TP_SPLIT``, ``TP_REPLICATED``; a vector is replicated);
    LlmcountError when tp > 1 and a weight matrix has none of those sizes."""
    if term.tp == "split":
        return term.expr, Integer(0)
    if term.tp == "replicated":
        return Integer(0), term.expr
    split, kept = Integer(0), Integer(0)
    for monomial in _monomials(term.expr):
        symbols = monomial.free_symbols
        if symbols & set(TP_SPLIT):
            split += monomial
        elif symbols & set(TP_REPLICATED) or _degree(monomial) <= 1 or tp == 1:
            kept += monomial
        else:
            raise LlmcountError(
                f"--tp {tp}: cannot tell how tensor parallelism splits {term.path} ({term.expr}): its size has no "
                "head count, MLP width, vocabulary or Mamba/linear-attention width and its record gives no tp "
                "(a weight Megatron-LM has no tensor-parallel layer for)"
            )
    return split, kept


def is_matrix(term: Term) -> bool:
    """A weight matrix (its size has degree 2 or more), as opposed to a norm scale or bias vector."""
    return any(_degree(m) >= 2 for m in _monomials(term.expr))


def matrix_sides(term: Term) -> tuple[Expr, Expr]:
    """The two sizes (f_in, f_out) of a weight matrix written as one product in the record: a side is the hidden
    size d (a projection from or to the residual stream) or else a low-rank latent r_q / r_kv (MLA);
    LlmcountError when the record's expression does not show them."""
    if not term.routed:
        for side in (d, r_q, r_kv):
            other = cancel(term.expr / side)
            if other.free_symbols and other.as_numer_denom()[1] == 1:
                return side, factor(other)
    raise LlmcountError(
        f"cannot tell the input and output sizes of {term.path} ({term.expr}) from its record: "
        "not one matrix from or to d or a latent rank"
    )


# --- the parameters one GPU holds -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lora:
    """LoRA of rank ``rank`` on the weight matrices whose group or module name is in ``targets``."""

    rank: int
    targets: tuple[str, ...] = LORA_DEFAULT_TARGETS

    def adapted(self, term: Term) -> bool:
        module = term.path.split("/", 1)[-1]
        if ".bias" in term.path or "norm" in module or not is_matrix(term) or term.embedding:
            return False
        return term.group in self.targets or module in self.targets


R = Symbol("r", positive=True, integer=True)
"""The LoRA rank."""


def lora_formula(terms: Iterable[Term], lora: Lora) -> Expr:
    """Trainable LoRA parameters: :math:`r \\sum (f_{in} + f_{out})` over the adapted matrices and their layers."""
    total = Integer(0)
    for term in terms:
        if lora.adapted(term):
            if term.routed:
                raise LlmcountError(
                    f"--lora on {term.path}: the record gives the routed experts as one block, not their matrices"
                )
            if not term.grad:
                raise LlmcountError(f"--lora on {term.path}: it gets no gradient in a training step of this model")
            f_in, f_out = matrix_sides(term)
            total += term.layers * R * (f_in + f_out)
    return total


def _held(term: Term, values: dict[Symbol, int], parallel: Parallel, optimizer: str, lora: Lora | None) -> Held:
    """What one GPU holds of one instance of ``term`` (one layer's worth, or the model's for model-level terms)."""
    env = dict(values)
    if term.routed:
        count = int(term.expr.subs(env))
        if count % parallel.ep:
            raise LlmcountError(f"--ep {parallel.ep} does not divide {term.path} ({count:,} parameters)")
        count //= parallel.ep
    else:
        split, kept = tp_split(term, parallel.tp)
        count = int(split.subs(padded(env, parallel.tp))) // parallel.tp + int(kept.subs(env))
    if not term.grad:
        return Held(frozen=count)
    if lora is not None:
        adapters = 0
        if lora.adapted(term):
            f_in, f_out = matrix_sides(term)
            adapters = lora.rank * int((f_in + f_out).subs(env))
        return Held(frozen=count, adapters=adapters)
    matrix = is_matrix(term)
    factored = 0
    if optimizer == "adafactor":
        if parallel.tp > 1:
            raise LlmcountError(
                "--optimizer adafactor with --tp > 1 is not modelled (factored states of split matrices)"
            )
        if matrix:
            if term.routed:
                raise LlmcountError(
                    f"--optimizer adafactor: the record gives {term.path} as one block, not its matrices' shapes"
                )
            f_in, f_out = matrix_sides(term)
            factored = int((f_in + f_out).subs(env))
        else:
            factored = count
    hidden = matrix and not term.embedding
    return Held(matrices=count if hidden else 0, others=0 if hidden else count, factored=factored)


def _layer_held(kind: Kind, terms: Sequence[Term], values, parallel, optimizer, lora) -> Held:
    held = Held()
    for term in terms:
        times = kind.times(term.layers)
        if times:
            held = held + _held(term, values, parallel, optimizer, lora).times(times)
    return held


P = Symbol("P", positive=True, integer=True)
"""Parameters held by one GPU (all of them without parallelism)."""
P_t = Symbol("P_t", positive=True, integer=True)
"""Trainable parameters held by one GPU (P without LoRA; the adapters with it)."""
P_m = Symbol("P_m", positive=True, integer=True)
"""Trainable hidden weight matrices held by one GPU (Muon's)."""
P_o = Symbol("P_o", positive=True, integer=True)
"""Other trainable parameters held by one GPU: embedding, head, norm scales, biases (AdamW's under Muon)."""
F = Symbol("F", positive=True, integer=True)
"""Adafactor's second-moment values on one GPU: rows + cols per matrix, all of each vector."""
N_dp = Symbol("N_dp", positive=True, integer=True)
"""Data-parallel ranks ZeRO shards over."""
LATEX_NAMES = {
    P: "P",
    P_t: r"P_{\mathrm{t}}",
    P_m: r"P_{\mathrm{m}}",
    P_o: r"P_{\mathrm{o}}",
    F: "F",
    N_dp: r"N_{\mathrm{dp}}",
}
"""How the model-state symbols print in LaTeX (multi-letter subscripts upright, as the glossary's)."""


def states(held: Held, compute: str, optimizer: str) -> list[tuple[str, Expr, int, str]]:
    """Model-state lines of ``held``: (name, bytes as a formula in P, P_t, P_m, P_o, F; the ZeRO stage from which
    it is sharded; note)."""
    width = BITS[compute] // 8
    frozen = f" ({held.frozen:,} of them without gradient)" if held.frozen else ""
    frozen = " (the base frozen)" if held.adapters else frozen
    lines = [("weights", width * P, 3, f"{compute} weights{frozen}")]
    lines.append(("gradients", width * P_t, 2, f"{compute} gradients of the trainable parameters"))
    if compute != "fp32":
        lines.append(("master_weights", 4 * P_t, 1, "fp32 master copy of the trainable weights"))
    if optimizer == "adamw":
        lines += [("adam_m", 4 * P_t, 1, "fp32 first moment"), ("adam_v", 4 * P_t, 1, "fp32 second moment")]
    elif optimizer == "adamw8bit":
        lines.append(("adam_m_v_8bit", 2 * P_t, 1, "first and second moments, 8 bits each"))
        note = f"one fp32 absmax per block of {ADAM8BIT_BLOCK} values of each moment"
        lines.append(("adam_absmax", 8 * ceiling(P_t / ADAM8BIT_BLOCK), 1, note))
    elif optimizer == "sgd-momentum":
        lines.append(("momentum", 4 * P_t, 1, "fp32 momentum buffer"))
    elif optimizer == "adafactor":
        lines.append(("adafactor_v", 4 * F, 1, "fp32 second moments: rows + cols per matrix, every value of a vector"))
    elif optimizer == "muon":
        lines.append(("muon_momentum", 4 * P_m, 1, "fp32 Muon momentum of the hidden weight matrices"))
        lines.append(("adam_m", 4 * P_o, 1, "fp32 AdamW first moment: embedding, head, norms, biases"))
        lines.append(("adam_v", 4 * P_o, 1, "fp32 AdamW second moment: embedding, head, norms, biases"))
    return lines


def held_values(held: Held) -> dict[Symbol, int]:
    return {
        P: held.parameters,
        P_t: held.trainable,
        P_m: held.matrices + held.adapters,
        P_o: held.others,
        F: held.factored,
    }


def state_bytes(held: Held, compute: str, optimizer: str) -> int:
    env = held_values(held)
    return sum(int(formula.subs(env)) for _, formula, _, _ in states(held, compute, optimizer))


@dataclass(frozen=True, repr=False)
class Training(Shown):
    """Training memory of one GPU: model-state lines (after ZeRO), activations, and how they were obtained."""

    dtype: str
    optimizer: str
    parallel: Parallel
    parameters: int  # of the whole model
    held: Held  # parameters on the counted GPU
    lines: tuple[Line, ...]
    lora: Lora | None = None
    lora_parameters: int | None = None  # trainable adapter parameters of the whole model
    lora_formula: Expr | None = None
    activations: Activations | None = None
    activations_refused: str = ""  # why activations are not derived
    notes: tuple[str, ...] = field(default_factory=tuple)
    stage: int = 0  # with pipeline parallelism, the stage (1 to pp) of the GPU counted; 0 without
    no_grad_paths: tuple[str, ...] = ()  # the terms that get no gradient (``grad = false``), ``group/*`` for a group
    no_grad_parameters: int = 0  # their parameters in the whole model

    @property
    def model_states_bytes(self) -> int:
        return sum(line.bytes for line in self.lines)

    @property
    def activations_bytes(self) -> int | None:
        return None if self.activations is None else self.activations.per_gpu_bytes

    @property
    def total_bytes(self) -> int:
        return self.model_states_bytes + (self.activations_bytes or 0)


def _state_lines(held: Held, compute: str, optimizer: str, parallel: Parallel) -> list[Line]:
    """The model-state lines of ``held`` on one GPU, ZeRO's shards applied."""
    lines = []
    env = held_values(held)
    for name, formula, stage, note in states(held, compute, optimizer):
        size = int(formula.subs(env))
        if parallel.zero > 0 and stage <= parallel.zero:
            size = -(-size // parallel.dp)
            formula = formula / N_dp
            note += f", sharded over N_dp = {parallel.dp} ranks (ZeRO-{parallel.zero})"
        lines.append(Line(name, formula, size, note))
    return lines


HEAVIEST_BOUND = " (its layers taken of the heaviest kind: an upper bound)"


def stage_kinds(
    model: Model, pp: int, weigh: Callable[[Kind], int], runs: list[range], also: Iterable[Expr] = ()
) -> tuple[list[list[Kind]], str]:
    """The kind of each layer of each pipeline stage (``runs``: the layers' indices, stage by stage), and
    :data:`HEAVIEST_BOUND` when the record cannot tell the layers' order: then every layer is taken of the kind
    ``weigh`` (called once on each kind, before any stage is built) finds heaviest; ``""`` otherwise. ``also``:
    layer counts beside the terms' that tell kinds apart (the cache's sliding layers, whose weights are the same).
    LlmcountError naming the model when its layers cannot be split."""
    values = model.values
    counted = model.derivation.layer_counts
    for term in model.derivation.terms:  # a sum over the layers' own sizes: no stage can be told its part
        if is_model_level(term.layers, counted) and term.expr.free_symbols & model.architecture.summed:
            raise LlmcountError(
                f"--pp {pp}: {term.path} of {model.name} is summed over the layers (their sizes differ "
                "per layer), so its stages cannot be told apart"
            )
    layer_terms = [t for t in model.derivation.terms if not is_model_level(t.layers, counted)]
    try:
        layer_kinds = kinds([*(t.layers for t in layer_terms), *also], values, model.architecture, model.keys)
        weights = {kind.name: weigh(kind) for kind in layer_kinds}
    except LlmcountError as exc:
        raise LlmcountError(f"--pp {pp}: the layers of {model.name} cannot be split in stages: {exc}") from None
    by_name = {kind.name: kind for kind in layer_kinds}
    sequence = layer_sequence(model.architecture, values, model.keys, layer_kinds)
    bound = ""
    if sequence is None:  # the layers' order cannot be told: every stage's layers of the heaviest kind
        sequence = [max(weights, key=weights.__getitem__)] * values[N]
        bound = HEAVIEST_BOUND
    return [[by_name[sequence[i]] for i in run] for run in runs], bound


def no_grad_paths(terms: Sequence[Term]) -> tuple[str, ...]:
    """The paths of the terms that get no gradient, a group of several such terms and no other as ``group/*``."""
    paths = []
    for term in terms:
        if term.grad:
            continue
        group = [t for t in terms if t.group == term.group]
        whole = len(group) > 1 and not any(t.grad for t in group)
        path = f"{term.group}/*" if whole else term.path
        if path not in paths:
            paths.append(path)
    return tuple(paths)


def compute_dtype(name: str) -> str:
    """The canonical compute dtype of training: fp32, bf16 or fp16; LlmcountError listing them otherwise."""
    compute = dtype(name)
    if compute not in ("fp32", *FLOAT_16):
        raise LlmcountError(f"training: dtype {compute} is not supported; choices: fp32, {', '.join(FLOAT_16)}")
    return compute


def training(
    model: Model,
    dtype_name: str = "bf16",
    optimizer: str = "adamw",
    parallel: Parallel | None = None,
    lora: Lora | None = None,
    activations: Activations | None = None,
    activations_refused: str = "",
) -> Training:
    """Model states per GPU (module docstring), with ``activations`` (already derived, per GPU) beside them."""
    parallel = parallel or Parallel()
    compute = compute_dtype(dtype_name)
    if optimizer not in OPTIMIZERS:
        raise LlmcountError(f"unknown optimizer {optimizer!r}; choices: {', '.join(OPTIMIZERS)}")
    if lora is not None and parallel.tp > 1:
        raise LlmcountError("--lora with --tp > 1 is not modelled (how the adapters are split)")
    check_parallel(model, parallel)
    values = dict(model.values)
    terms = model.derivation.terms
    counted = model.derivation.layer_counts
    layer_terms = [t for t in terms if not is_model_level(t.layers, counted)]
    model_terms = [t for t in terms if is_model_level(t.layers, counted)]

    lora_total = lora_expr = None
    if lora is not None:
        lora_expr = lora_formula(terms, lora)
        if lora_expr == 0:
            raise LlmcountError(f"--lora-targets {','.join(lora.targets)}: no weight matrix of {model.name} matches")
        lora_total = int(lora_expr.subs({**values, R: lora.rank}))

    def weigh(held: Held) -> int:
        return state_bytes(held, compute, optimizer)

    def model_level(predicate) -> Held:
        held = Held()
        for term in model_terms:
            if predicate(term):
                held = held + _held(term, values, parallel, optimizer, lora).times(int(term.layers))
        return held

    notes = []
    stage = 0
    if parallel.pp == 1:
        held = model_level(lambda t: True)
        for term in layer_terms:
            held = held + _held(term, values, parallel, optimizer, lora).times(int(term.layers.subs(values)))
    else:
        by_name: dict[str, Held] = {}

        def layer_weight(kind: Kind) -> int:
            by_name[kind.name] = _layer_held(kind, layer_terms, values, parallel, optimizer, lora)
            return weigh(by_name[kind.name])

        runs, bound = stage_kinds(model, parallel.pp, layer_weight, stages(values[N], parallel.pp))
        first = model_level(lambda t: t.group == "embedding")
        last = model_level(lambda t: t.group != "embedding")
        if model.tied:  # Megatron keeps the tied head as a copy of the word embedding on the last stage
            last = last + model_level(lambda t: t.group == "embedding" and V in t.expr.free_symbols)
        candidates = []
        for number, run in enumerate(runs):
            stage = first if number == 0 else Held()
            for kind in run:
                stage = stage + by_name[kind.name]
            candidates.append(stage + last if number == parallel.pp - 1 else stage)
        # the stage whose model states and activations together are the largest (activations are per stage too)
        kept = activations.per_stage_bytes if activations is not None and activations.per_stage_bytes else ()
        totals = [
            sum(line.bytes for line in _state_lines(held, compute, optimizer, parallel)) + (kept[j] if kept else 0)
            for j, held in enumerate(candidates)
        ]
        best = max(range(len(candidates)), key=totals.__getitem__)
        held = candidates[best]
        stage = best + 1
        if kept:
            note = (
                f"{activations.per_gpu_note.split('; counted:')[0]}; counted: stage {best + 1} of {parallel.pp}{bound}"
            )
            activations = replace(activations, per_gpu_bytes=kept[best], per_gpu_note=note)
        sizes = sorted({len(run) for run in runs}, reverse=True)
        notes.append(
            f"pipeline: stages of {' or '.join(map(str, sizes))} layers; the GPU counted is stage "
            f"{best + 1} of {parallel.pp}, the largest in model states"
            + (" and activations together" if kept else "")
            + bound
        )

    no_grad = [t for t in terms if not t.grad]
    no_grad_total = sum(int(t.total.subs(values)) for t in no_grad)
    if no_grad:
        notes.append(
            f"no gradient: {', '.join(no_grad_paths(terms))} ({no_grad_total:,} parameters of the model) get none in "
            "a training step of this model (its record marks them grad = false): held as weights only, without "
            "gradients, master copy or optimizer states"
        )
    lines = _state_lines(held, compute, optimizer, parallel)
    return Training(
        dtype=compute,
        optimizer=optimizer,
        parallel=parallel,
        parameters=model.counts.total,
        held=held,
        lines=tuple(lines),
        lora=lora,
        lora_parameters=lora_total,
        lora_formula=lora_expr,
        activations=activations,
        activations_refused=activations_refused,
        notes=tuple(notes),
        stage=stage,
        no_grad_paths=no_grad_paths(terms),
        no_grad_parameters=no_grad_total,
    )


def estimate(
    model: Model,
    dtype_name: str = "bf16",
    seq: int = 4096,
    batch: int = 1,
    optimizer: str = "adamw",
    parallel: Parallel | None = None,
    lora: Lora | None = None,
    attention: str = "sdpa",
    recompute: str = "none",
) -> Training:
    """Model states and activations of B × S tokens per GPU, as ``llmcount memory --training`` gives them; the
    activations are left out, and said so, for a record without an ``[activations]`` table or a config its
    table was not checked for."""
    from . import activations as act

    parallel = parallel or Parallel()
    compute = compute_dtype(dtype_name)
    check_parallel(model, parallel)
    family = model.architecture
    settings = act.Options(
        attention=attention,
        recompute=recompute,
        tp=parallel.tp,
        pp=parallel.pp,
        sequence_parallel=parallel.sequence_parallel,
    )
    try:
        activations = act.activations(family, model.values, compute, batch, seq, settings, model.keys)
    except act.NotDerived as refused:
        return training(model, compute, optimizer, parallel, lora, None, refused.why)
    return training(model, compute, optimizer, parallel, lora, activations)
