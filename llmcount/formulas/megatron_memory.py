"""Training memory per GPU as Megatron-LM estimates it: ``report_theoretical_memory``.

Transcribed from Megatron-LM megatron/training/theoretical_memory_usage.py (commit in :data:`SOURCE`), the dense
path (no MoE, no multi-latent attention, no MTP, no virtual pipeline stages, ``num_microbatches`` not given):

* ``compute_weight_and_optimizer_memory``: Megatron's own parameter count of the most loaded pipeline stage,
  per layer the attention projections :math:`2 d (h d_h) (1 + g/h)`, the MLP :math:`2 d d_{ff}` (× 3/2 with
  SwiGLU), two norms of ``norm_size`` · d (1 for RMSNorm, 2 for LayerNorm); the final norm, the embedding over
  the padded vocabulary (twice when untied and pp = 1); the first stage holds L/pp layers and the embedding; the
  tensor-parallel parts divided by tp. Bytes per parameter: 18 (bf16 weights, fp32 main gradients, fp32 main
  weights and two Adam moments), with the distributed optimizer :math:`6 + 12/d_p` (d_p data-parallel ranks).
* Activations: with sequence parallelism and selective recomputation ``compute_activation_memory`` (Korthikanti
  et al.'s Table 2, :math:`sbh(18 + 4 d_{ff}/h)` per layer, 34·sbh at d_ff = 4h, the embedding's input and dropout
  mask for pp micro-batches in flight, at pp = 1 the output layer's inputs and the loss
  :math:`4 sbh (1 + V_{pad}/h)`, all over tp); otherwise ``compute_activation_memory_without_sp``
  (:math:`sbh(10 + 24/t)` per layer, the same embedding terms, at pp = 1 the logits over tp and the final norm's
  output in 2 bytes, times 1.05 for temporaries).

Megatron's args are read off the model's record: d, h, the key-value heads g, the head size d_h, d_ff, L and V
from the config; SwiGLU where the MLP's weights are 3·d·d_ff a layer (2·d·d_ff: a plain MLP); ``norm_size`` from
the two norms' parameters per layer. A model whose layers these do not describe is refused by name; the parameters
Megatron's count leaves out (linear biases, a learned position table, q/k norms) are named with their counts.
Exact: Fractions of bytes (Megatron's float arithmetic, without the rounding)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ..errors import LlmcountError

if TYPE_CHECKING:
    from .config import Model

MEGATRON_COMMIT = "d98e8a64ddf34856e74b24714e3bedb2f5a39553"
MEGATRON_VOCAB_MULTIPLE = 128
"""Megatron pads the vocabulary to a multiple of ``--make-vocab-size-divisible-by`` (default 128) times the
tensor-parallel size (``vocab_size_with_padding`` in megatron/core/tokenizers/utils/build_tokenizer.py); TP = 1."""

SOURCE = (
    "Megatron-LM megatron/training/theoretical_memory_usage.py, report_theoretical_memory: "
    f"compute_weight_and_optimizer_memory and compute_activation_memory[_without_sp] (commit {MEGATRON_COMMIT[:10]})"
)

DIFFERENCES = (
    "Megatron's estimate counts the parameters of its own formula (no linear biases, no learned position table, "
    "no q/k norms; the vocabulary padded to a multiple of 128·tp) at 18 bytes each (bf16 weights, fp32 main "
    "gradients, fp32 main weights, two fp32 Adam moments; llmcount's mixed-precision AdamW keeps bf16 gradients: "
    "16 bytes), or 6 + 12/dp with the distributed optimizer (ZeRO-1: llmcount shards the optimizer states and "
    "master weights alone). Its activations are Korthikanti et al.'s Table 2 (34·sbh/t per layer with sequence "
    "parallelism and selective recomputation; sbh(10 + 24/t) otherwise, whatever the recomputation) plus the "
    "embedding and output-layer terms and, without sequence parallelism, 5% for temporaries; llmcount's are what "
    "transformers' autograd saves (no dropout masks with dropout off, the GELU or SwiGLU implementation, norm "
    "statistics, fp32 upcasts, eager attention's scores unless recomputed)"
)


@dataclass(frozen=True)
class MegatronArgs:
    """The arguments of Megatron's estimate, by Megatron's names."""

    num_layers: int
    hidden_size: int
    ffn_hidden_size: int
    num_attention_heads: int
    num_query_groups: int
    kv_channels: int
    swiglu: bool
    norm_size: int  # 1: RMSNorm, 2: LayerNorm
    untie_embeddings_and_output_weights: bool
    padded_vocab_size: int
    seq_length: int
    micro_batch_size: int
    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    data_parallel_size: int = 1
    sequence_parallel: bool = False
    recompute_granularity: str | None = None
    use_distributed_optimizer: bool = False


@dataclass(frozen=True)
class MegatronMemory:
    """Megatron's estimate for one GPU of the first pipeline stage: bytes, exact."""

    args: MegatronArgs
    weights_and_optimizer: Fraction
    activations: Fraction
    activation_function: str  # which of Megatron's two activation functions applies
    parameters: int  # Megatron's count of the whole model
    left_out: tuple[tuple[str, int], ...]  # (path, parameters) the model has and Megatron's count does not

    @property
    def total(self) -> Fraction:
        return self.weights_and_optimizer + self.activations


def _attention(a: MegatronArgs) -> Fraction:
    """``self_attn_term``: 2·d·d·((1 + g/h)·(h·d_h/d)), Q, K, V and the output projection."""
    ratio = Fraction(a.kv_channels * a.num_attention_heads, a.hidden_size)
    return 2 * a.hidden_size * a.hidden_size * (1 + Fraction(a.num_query_groups, a.num_attention_heads)) * ratio


def _mlp(a: MegatronArgs) -> Fraction:
    return 2 * a.hidden_size * a.ffn_hidden_size * (Fraction(3, 2) if a.swiglu else 1)


def parameters(a: MegatronArgs) -> Fraction:
    """``num_total_parameters`` (dense): L layers, the final norm, one or two embeddings."""
    layer = _attention(a) + _mlp(a) + 2 * a.hidden_size * a.norm_size
    embeddings = (2 if a.untie_embeddings_and_output_weights else 1) * a.hidden_size * a.padded_vocab_size
    return a.num_layers * layer + a.norm_size * a.hidden_size + embeddings


def weight_and_optimizer_bytes(a: MegatronArgs) -> Fraction:
    """``compute_weight_and_optimizer_memory``, dense: the most loaded shard's parameters × bytes per parameter."""
    tp, pp = a.tensor_model_parallel_size, a.pipeline_model_parallel_size
    embedding = a.hidden_size * a.padded_vocab_size
    tp_sharded = (_attention(a) + _mlp(a)) * a.num_layers
    replicated = 2 * a.hidden_size * a.norm_size * a.num_layers + a.norm_size * a.hidden_size
    on_shard = (tp_sharded / pp + embedding) / tp + Fraction(replicated, pp)
    if a.untie_embeddings_and_output_weights and pp == 1:
        on_shard += Fraction(embedding, tp)
    per_parameter = 6 + Fraction(12, a.data_parallel_size) if a.use_distributed_optimizer else Fraction(18)
    return on_shard * per_parameter


def activation_bytes(a: MegatronArgs) -> tuple[Fraction, str]:
    """The activation function ``report_theoretical_memory`` picks, and its bytes."""
    s, b, hid, pp, tp = (
        a.seq_length,
        a.micro_batch_size,
        a.hidden_size,
        a.pipeline_model_parallel_size,
        a.tensor_model_parallel_size,
    )
    embedding = 8 * s * b * pp + s * b * hid * pp  # the embedding's input and its dropout, pp micro-batches
    if a.sequence_parallel and a.recompute_granularity == "selective":
        memory = Fraction(s * b * hid) * (18 + Fraction(4 * a.ffn_hidden_size, hid)) * a.num_layers + embedding
        if pp == 1:  # the output layer's inputs and the cross-entropy loss
            memory += Fraction(s * b * hid * 4) * (1 + Fraction(a.padded_vocab_size, hid))
        return memory / tp, "compute_activation_memory"
    memory = Fraction(s * b * hid) * (10 + Fraction(24, tp)) * a.num_layers + embedding
    if pp == 1:  # the logits (split over tp) and the final norm's output, 2 bytes each
        memory += (Fraction(s * b * a.padded_vocab_size, tp) + s * b * hid) * 2
    return memory * Fraction(105, 100), "compute_activation_memory_without_sp"


@dataclass(frozen=True)
class Term:
    """What Megatron's formula reads of one of the model's terms: its path and group, whether it is a weight matrix
    (``flops.is_matmul_weight``), its layers and per-layer count evaluated, whether it is an embedding and whether
    its expression is V·d."""

    path: str
    group: str
    matmul: bool
    layers: int
    count: int
    embedding: bool
    vocab_by_d: bool


@dataclass(frozen=True)
class Described:
    """What :func:`args_of` reads of a model, by either path: its name, whether its record has state layers, its
    values by symbol name, its terms, whether its head is tied, its total parameters."""

    name: str
    states: bool
    values: dict[str, Any]
    terms: tuple[Term, ...]
    tied: bool
    total: int


def described(model: Model) -> Described:
    """The :class:`Described` of a Model of the sympy path."""
    from .derivation import evaluate_int
    from .flops import is_matmul_weight
    from .symbols import V, d

    values = model.values
    states = bool(model.derivation.architecture.states)
    terms = tuple(
        Term(
            t.path,
            t.group,
            is_matmul_weight(t),
            evaluate_int(t.layers, values, t.path),
            evaluate_int(t.expr, values, t.path),
            t.embedding,
            t.expr == V * d,
        )
        for t in model.derivation.terms
    )
    named = {getattr(s, "name", s): v for s, v in values.items()}
    return Described(model.name, states, named, terms, model.tied, model.counts.total)


def _per_layer(terms: Iterable[Term], group: str, layers: int, matmul: bool) -> int:
    return sum(t.count for t in terms if t.group == group and t.matmul == matmul and t.layers == layers)


def megatron_args(
    model: Model | Described,
    seq: int,
    micro_batch: int,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
    distributed_optimizer: bool = False,
) -> tuple[MegatronArgs, tuple[tuple[str, int], ...]]:
    """Megatron's args for ``model`` (a Model or its :class:`Described`) and the parameters its count leaves out;
    LlmcountError naming what its dense formula cannot describe."""
    m = model if isinstance(model, Described) else described(model)
    values, terms = m.values, m.terms
    why = f"{m.name}: Megatron-LM's theoretical memory (dense path, as transcribed) is not given"
    if m.states:
        raise LlmcountError(f"{why}: it has state layers (Megatron says: not yet supported for hybrid models)")
    missing = [name for name in ("N", "V", "d", "d_ff", "h") if name not in values]
    if missing:
        raise LlmcountError(f"{why}: the config gives no {', '.join(missing)}")
    L, hidden, ffn = values["N"], values["d"], values["d_ff"]
    groups = {t.group for t in terms}
    if groups - {"embedding", "attention", "mlp", "norms", "head"}:
        extra = ", ".join(sorted(groups - {"embedding", "attention", "mlp", "norms", "head"}))
        raise LlmcountError(f"{why}: its layers have parts ({extra}) the dense formula has no term for")
    for t in terms:
        if t.layers not in (1, L):
            raise LlmcountError(f"{why}: {t.path} is in some of the layers only; the formula has one kind of layer")
    heads = values["h"]
    groups_kv = values.get("h_kv", heads)
    head_size = values.get("h_d", hidden // heads)
    mlp = _per_layer(terms, "mlp", L, True)
    if mlp not in (2 * hidden * ffn, 3 * hidden * ffn):
        raise LlmcountError(f"{why}: its MLP's weights ({mlp:,} a layer) are neither 2·d·d_ff nor 3·d·d_ff (SwiGLU)")
    norms = _per_layer(terms, "norms", L, False)
    if norms not in (2 * hidden, 4 * hidden):
        raise LlmcountError(f"{why}: its norms ({norms:,} parameters a layer) are not two RMSNorms or LayerNorms")
    args = MegatronArgs(
        num_layers=L,
        hidden_size=hidden,
        ffn_hidden_size=ffn,
        num_attention_heads=heads,
        num_query_groups=groups_kv,
        kv_channels=head_size,
        swiglu=mlp == 3 * hidden * ffn,
        norm_size=norms // (2 * hidden),
        untie_embeddings_and_output_weights=not m.tied,
        padded_vocab_size=-(-values["V"] // (MEGATRON_VOCAB_MULTIPLE * tp)) * MEGATRON_VOCAB_MULTIPLE * tp,
        seq_length=seq,
        micro_batch_size=micro_batch,
        tensor_model_parallel_size=tp,
        pipeline_model_parallel_size=pp,
        data_parallel_size=dp,
        sequence_parallel=sequence_parallel,
        recompute_granularity=None if recompute == "none" else recompute,
        use_distributed_optimizer=distributed_optimizer,
    )
    attention = _per_layer(terms, "attention", L, True)
    if attention != _attention(args):
        raise LlmcountError(
            f"{why}: its attention's weights ({attention:,} a layer) are not 2·d·h·d_h + 2·d·g·d_h "
            f"({int(_attention(args)):,}), the formula's Q, K, V and output projections"
        )
    final = _per_layer(terms, "norms", 1, False)
    if final != args.norm_size * hidden:
        raise LlmcountError(f"{why}: its final norm ({final:,} parameters) is not one {args.norm_size}·d norm")
    left_out = tuple(
        (t.path, t.layers * t.count)
        for t in terms
        if (t.group in ("attention", "mlp") and not t.matmul)
        or (t.embedding and t.path != "head/lm_head" and not t.vocab_by_d)
    )
    unpadded = parameters(replace(args, padded_vocab_size=values["V"]))
    if unpadded + sum(n for _, n in left_out) != m.total:
        raise LlmcountError(
            f"{why}: its formula counts {int(unpadded):,} of the model's {m.total:,} parameters, and "
            f"{sum(n for _, n in left_out):,} are biases, position tables and norms it has no term for"
        )
    return args, left_out


def megatron_memory(model: Model | Described, seq: int, micro_batch: int, **options) -> MegatronMemory:
    """Megatron-LM's theoretical memory for ``model`` (options: tp, pp, dp, sequence_parallel, recompute,
    distributed_optimizer)."""
    args, left_out = megatron_args(model, seq, micro_batch, **options)
    activations, function = activation_bytes(args)
    count = parameters(args)
    return MegatronMemory(args, weight_and_optimizer_bytes(args), activations, function, int(count), left_out)
