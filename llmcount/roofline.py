"""Speed as a roofline: the shortest time a GPU can take to prefill B prompts of S tokens, and the most tokens per
second it can decode, from the work each phase must do and the GPU's two peaks (dense matmul FLOP/s, memory
bandwidth). Every quantity of work below is a lower bound of what a real engine does, so every time is a lower bound
and every speed an upper bound: measured figures are lower.

* **Prefill** of B sequences of S tokens: time :math:`\\ge F_{pre} / (tp\\,\\Pi)` (and, at a stated model FLOPs
  utilisation, :math:`F_{pre} / (tp\\,\\Pi\\,\\mathrm{MFU})`), and :math:`\\ge M_{pre} / (tp\\,W)`, whichever is longer.
  :math:`F_{pre}` is the forward FLOPs of :mod:`llmcount.formulas.flops` over the S(S+1)/2 causal query-key pairs
  (sliding layers: within the window), as causal kernels compute them, with the LM head at the last position of each
  sequence only (engines compute no other logits in a prefill): the forward minus :math:`2\\,dV\\,B(S-1)`.
  :math:`M_{pre}` is the weights a pass reads once (below, with the experts touched by the B·S tokens).
* **Decode**, the step after a prompt of S tokens, for B sequences at once: time
  :math:`t = \\max(M_{dec} / (tp\\,W),\\ F_{dec} / (tp\\,\\Pi))`, tokens/s :math:`B / t` (and :math:`1/t` per sequence).
  :math:`M_{dec}` is the bytes read: the weights as stored (a quantisation scheme's or llama.cpp's bytes, from
  :mod:`llmcount.quant` and :mod:`llmcount.gguf_quant`) except the tables only looked up (an untied token embedding,
  position tables: B rows, not counted; a tied embedding is read whole by the LM head), the routed experts scaled by
  the expected fraction of them the B tokens touch (:func:`touched`), plus the KV cache and the fixed states that the B
  sequences hold at S tokens (:func:`llmcount.formulas.memory.inference`). Not counted: the KV written for the new
  token, activations, the state written back. :math:`F_{dec}` is B times the FLOPs of one token: twice the activated
  matmul weights and the head, and the attention matmuls over the keys each layer holds (S, or the window's W - 1 on
  sliding layers); the per-step update of Mamba and linear-attention layers is not counted.
* **MoE**: with n routed experts and k per token, routing uniform and independent per token (an assumption: trained
  routers are skewed, which touches fewer experts), B tokens leave a given expert untouched with probability
  :math:`(1 - k/n)^B`, so a layer reads :math:`n(1 - (1 - k/n)^B)` distinct experts on average. Shared experts and the
  router are read every step.
* **Tensor parallelism** over tp GPUs: bytes and FLOPs divided evenly over the ranks; the all-reduces between them
  are left out (communication is not modelled).

Exact integers and fractions throughout; floats only at output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .errors import LlmcountError

MAX_BATCH = 65_536  # sequences decoded together; more is a typo
MAX_SEQ = 2**24  # tokens per sequence (16M); more is a typo
MAX_TP = 1024
MAX_BATCHES = 16  # batch sizes in one --batch list

UNIFORM = (
    "routing uniform and independent per token: an expert is left untouched by B tokens with probability "
    "(1 - k/n)^B, so n·(1 - (1 - k/n)^B) distinct experts per layer are read on average (trained routers are "
    "skewed and touch fewer)"
)
UPPER_BOUND = (
    "a roofline is an upper bound on speed: the work counted is the least a step must do, at the datasheet's peaks; "
    "measured speed is lower (kernel efficiency, scheduling, launch overheads, communication)"
)
TP_NOTE = "tensor parallelism over {tp} GPUs: bytes and FLOPs divided evenly over the ranks; communication left out"
EVERY_EXPERT_NATS = 70  # (1 - k/n)^T < e^-70 < 10^-30: every expert counted as touched (the fraction not computed)


@dataclass(frozen=True)
class Weights:
    """The weights as stored, by how a forward pass reads them: ``dense`` every step, in full; ``routed`` the routed
    experts of all layers, of which a step reads the fraction its tokens touch; ``lookup`` tables read only at the
    rows looked up (not counted)."""

    stored_as: str
    dense: int
    routed: int
    lookup: int
    parameters: tuple[int, int, int]  # (dense, routed, lookup) parameters

    @property
    def total(self) -> int:
        return self.dense + self.routed + self.lookup


@dataclass(frozen=True)
class Phase:
    """One phase (a prefill, or one decode step) at one batch size: its work and its bounds, per GPU."""

    batch: int
    flops: int  # all GPUs together
    bytes: Fraction  # all GPUs together (expected bytes where experts are routed)
    weights_bytes: Fraction
    cache_bytes: int
    experts: Fraction | None  # expected distinct routed experts per MoE layer
    memory_seconds: Fraction
    compute_seconds: Fraction | None  # None: no peak for the GPU

    @property
    def seconds(self) -> Fraction:
        return max(self.memory_seconds, self.compute_seconds or 0)

    @property
    def bound(self) -> str:
        return (
            "compute" if self.compute_seconds is not None and self.compute_seconds > self.memory_seconds else "memory"
        )


@dataclass(frozen=True)
class Roofline:
    """Prefill and decode bounds of one model on one GPU type, per batch size."""

    model: str
    gpu: str  # the GPU's title
    gpu_source: str
    peak_tflops: Fraction | None  # dense, per GPU, at the compute dtype
    compute_dtype: str
    bandwidth_gbs: Fraction
    tp: int
    seq: int
    mfu: Fraction | None
    weights: Weights
    kv_dtype: str
    moe: tuple[int, int] | None  # (n, k)
    prefill: tuple[Phase, ...]
    decode: tuple[Phase, ...]
    notes: tuple[str, ...]

    def prefill_at_mfu(self, phase: Phase) -> Fraction | None:
        """The prefill's compute time at the stated MFU (None without one or without a peak)."""
        if self.mfu is None or phase.compute_seconds is None:
            return None
        return phase.compute_seconds / self.mfu


def touched(n: int, k: int, tokens: int) -> Fraction:
    """The expected fraction of n routed experts that ``tokens`` tokens touch, k each, routed uniformly and
    independently: :math:`1 - (1 - k/n)^T`. Exact; 1 when :math:`(1 - k/n)^T < e^{-70}` (below :math:`10^{-30}`)."""
    if not 0 < k <= n:
        raise LlmcountError(f"experts: {k} of {n} per token is not a routing (need 0 < k <= n)")
    if k == n:
        return Fraction(1)
    if tokens * -math.log1p(-k / n) > EVERY_EXPERT_NATS:
        return Fraction(1)
    return 1 - (1 - Fraction(k, n)) ** tokens


def expected_experts(n: int, k: int, tokens: int) -> Fraction:
    """:math:`n(1 - (1 - k/n)^T)`: the expected number of distinct experts T tokens touch (:func:`touched`)."""
    return n * touched(n, k, tokens)


def _roles(model: Any) -> dict[str, str]:
    """Each component path -> how a pass reads it: ``routed``, ``lookup`` (a table read only at the rows looked up)
    or ``dense``. A tied model's token table is read whole by the LM head."""
    from .formulas.symbols import V, d

    head = model.architecture.head if model.architecture.head is not None else d * V
    roles: dict[str, str] = {}
    for term in model.derivation.terms:
        if term.routed:
            role = "routed"
        elif term.embedding and not term.path.startswith("head/"):
            role = "dense" if model.tied and term.expr == head else "lookup"
        else:
            role = "dense"
        roles.setdefault(term.path, role)
    return roles


def split_weights(model: Any, stored: list[tuple[str, int, int]], label: str) -> Weights:
    """(path, parameters, bytes) rows summed by role."""
    roles = _roles(model)
    sums = {"dense": [0, 0], "routed": [0, 0], "lookup": [0, 0]}
    for path, parameters, size in stored:
        role = roles.get(path) or roles.get(path.partition(".")[0], "dense")
        sums[role][0] += parameters
        sums[role][1] += size
    return Weights(
        label,
        sums["dense"][1],
        sums["routed"][1],
        sums["lookup"][1],
        (sums["dense"][0], sums["routed"][0], sums["lookup"][0]),
    )


def plain_weights(model: Any, dtype: str) -> Weights:
    """Every parameter in ``dtype`` (those the record keeps in fp32 in 4 bytes when ``dtype`` is 16-bit), by role;
    a partly used last byte per role counted whole (int4)."""
    from .formulas.memory import FLOAT_16, nbytes

    kept = model.architecture.fp32_weights if dtype in FLOAT_16 else ()
    rows = []
    roles = _roles(model)
    by_role: dict[tuple[str, str], int] = {}
    for c in model.counts.components:
        key = (roles.get(c.path, "dense"), "fp32" if c.path in kept else dtype)
        by_role[key] = by_role.get(key, 0) + c.count
    for (role, dt), count in by_role.items():
        rows.append((role, count, nbytes(count, dt)))
    sums = {role: [0, 0] for role in ("dense", "routed", "lookup")}
    for role, count, size in rows:
        sums[role][0] += count
        sums[role][1] += size
    label = dtype + (f" ({', '.join(kept)} in fp32)" if kept else "")
    return Weights(
        label,
        sums["dense"][1],
        sums["routed"][1],
        sums["lookup"][1],
        (sums["dense"][0], sums["routed"][0], sums["lookup"][0]),
    )


def scheme_weights(model: Any, plan: Any) -> Weights:
    """The weights as a quantisation scheme's checkpoint stores them (:class:`llmcount.quant.stored.Plan`)."""
    rows = [(g.path, g.parameters, g.bytes) for g in plan.groups]
    return split_weights(model, rows, f"{plan.quant.label}, the rest {plan.dtype}")


def gguf_weights(model: Any, ftype: str) -> Weights:
    """The weights as llama.cpp's ``llama-quantize`` stores them for the file type ``ftype`` (Q4_K_M ...)."""
    from .gguf_quant import FILE_TYPES, file_type, gguf_arch, predict

    name = file_type(ftype)
    rows = [(q.tensor.path, q.tensor.elements, q.bytes) for q in predict(model, gguf_arch(model), name)]
    return split_weights(
        model, rows, f"{name.upper()} ({FILE_TYPES[name][0]}, as llama.cpp 0c1e57098's llama-quantize makes it)"
    )


def _moe(model: Any) -> tuple[int, int] | None:
    """(n, k) of a model with routed experts, else None."""
    from .formulas.symbols import k, n

    if not any(t.routed for t in model.derivation.terms):
        return None
    values = model.values
    if n not in values or k not in values:
        raise LlmcountError(f"{model.name}: routed experts without n and k in the config; the experts read are unknown")
    return int(values[n]), int(values[k])


def decode_flops_per_token(model: Any, seq: int) -> int:
    """FLOPs of one decoded token at context S: twice the activated matmul weights and the head, and the attention
    matmuls over the keys each layer holds (S; sliding and chunked layers: min(S, W - 1), as the cache keeps them)."""
    from sympy import Min

    from .formulas.derivation import evaluate_int
    from .formulas.flops import Flops, _scores, head_flops, is_matmul_weight, linear_flops
    from .formulas.symbols import S

    derivation = model.derivation
    terms = [linear_flops(t) for t in derivation.terms if is_matmul_weight(t)]
    terms.append(head_flops(derivation.architecture.head))
    spec = derivation.architecture.attention
    _ = Flops(derivation).terms  # refuses, by name, a record whose FLOPs are not derived
    values = {**model.values, S: seq}
    if spec is not None:
        if spec.window is not None and spec.window.free_symbols <= set(values) and spec.windowed != 0:
            terms += _scores(spec, spec.layers - spec.windowed, 2 * S, "the S cached keys")
            kind = "chunked" if spec.chunked else "sliding"
            keys = 2 * Min(S, spec.window - 1)
            terms += _scores(spec, spec.windowed, keys, "the keys of the window", f"{kind} layers: ", f"/{kind}")
        else:
            idle = spec.windowed.free_symbols - set(values) if spec.window is not None else set()
            values.update({symbol: 0 for symbol in idle})
            terms += _scores(spec, spec.layers, 2 * S, "the S cached keys")
    total = 0
    for t in terms:
        if evaluate_int(t.present, values, f"{t.path} layers") == 0:
            continue
        total += evaluate_int(t.layers * t.per_token, values, f"{t.path} FLOPs")
    return total


def prefill_flops(model: Any, seq: int, batch: int) -> int:
    """Forward FLOPs over the causal pairs, the LM head at the last position of each sequence only."""
    from .formulas.flops import Flops

    counts = Flops(model.derivation, causal=True).at(model.values, seq).evaluate(model.values, seq, batch)
    head = sum(c.flops for c in counts.components if c.path == "head/lm_head")
    return counts.forward - head + head // seq


def cache_bytes(model: Any, kv_dtype: str, seq: int, batch: int) -> int:
    """The KV cache and fixed states of ``batch`` sequences at ``seq`` tokens, as :mod:`llmcount.formulas.memory`
    counts them (transformers' cache)."""
    from .formulas import memory as mem

    result = mem.inference(model.derivation, model.values, "bf16", kv_dtype, seq, batch, max_positions=None)
    return sum(line.bytes for line in result.lines if line.name in ("kv_cache", "state"))


def roofline(
    model: Any,
    weights: Weights,
    gpu: Any,
    batches: list[int],
    seq: int,
    kv_dtype: str,
    compute_dtype: str,
    tp: int = 1,
    mfu: Fraction | None = None,
    peak_tflops: Fraction | None = None,
    cache: Any = None,
) -> Roofline:
    """The bounds for each batch size (see the module docstring). ``cache(seq, batch) -> (bytes, note)``: the KV
    cache a decode step reads on all tp GPUs together, as an engine stores it (:mod:`llmcount.engines.decode`), in
    place of transformers' cache."""
    if peak_tflops is None and gpu.bf16 is not None:
        peak_tflops = gpu.peak_tflops(compute_dtype)
    peak = None if peak_tflops is None else peak_tflops * 10**12 * tp  # FLOP/s of the tp GPUs together
    bandwidth = gpu.bandwidth_gbs * 10**9 * tp  # bytes/s
    moe = _moe(model)
    per_token = decode_flops_per_token(model, seq)
    prefill, decode = [], []
    for batch in batches:
        fraction = touched(moe[0], moe[1], batch * seq) if moe else Fraction(1)
        read = weights.dense + fraction * weights.routed
        flops = prefill_flops(model, seq, batch)
        prefill.append(
            Phase(
                batch,
                flops,
                read,
                read,
                0,
                moe[0] * fraction if moe else None,
                read / bandwidth,
                None if peak is None else Fraction(flops) / peak,
            )
        )
        fraction = touched(moe[0], moe[1], batch) if moe else Fraction(1)
        read = weights.dense + fraction * weights.routed
        if cache is None:
            read_cache = cache_bytes(model, kv_dtype, seq, batch)
        else:
            read_cache, cache_note = cache(seq, batch)
        flops = batch * per_token
        decode.append(
            Phase(
                batch,
                flops,
                read + read_cache,
                read,
                read_cache,
                moe[0] * fraction if moe else None,
                (read + read_cache) / bandwidth,
                None if peak is None else Fraction(flops) / peak,
            )
        )
    notes = [
        "prefill: forward FLOPs over the S(S+1)/2 causal query-key pairs, logits at the last position only; "
        "bounded also by reading the weights once",
        "decode: the step after a prompt of S tokens; bytes read = weights as stored (the untied embedding table "
        "only at its B looked-up rows: not counted) + the KV cache of the B sequences at S tokens; KV written, "
        "activations and state updates not counted",
    ]
    if cache is not None:
        notes[1] = notes[1].replace("the KV cache of the B sequences at S tokens", "the KV cache below")
        notes.insert(2, cache_note)
    held = [(d.batch, Fraction(weights.total + d.cache_bytes, tp)) for d in decode]
    over = [(b, size) for b, size in held if size > gpu.memory_bytes]
    if over:
        sizes = ", ".join(f"B = {b:,}: {float(size) / 10**9:,.1f} GB" for b, size in over)
        notes.append(
            f"does not fit: weights and KV cache per GPU ({sizes}) exceed the {gpu.title}'s "
            f"{float(gpu.memory_gb):,.0f} GB; a bound for a setup that cannot run (more GPUs: --tp)"
        )
    if moe:
        notes.append(f"MoE: {UNIFORM}; shared experts and the router read every step")
    if tp > 1:
        notes.append(TP_NOTE.format(tp=tp))
    if peak is None:
        notes.append(f"the maker of the {gpu.title} states no matmul peak: no compute bound (give --peak-tflops)")
    notes.append(UPPER_BOUND)
    return Roofline(
        model.name,
        gpu.title,
        gpu.source,
        peak_tflops,
        compute_dtype,
        gpu.bandwidth_gbs,
        tp,
        seq,
        mfu,
        weights,
        kv_dtype,
        moe,
        tuple(prefill),
        tuple(decode),
        tuple(notes),
    )


def formulas(model: Any, weights: Weights, kv_dtype: str) -> list[tuple[str, Any]]:
    """The roofline's formulas as sympy expressions, in the glossary's symbols and a few of their own (named in each
    line), for ``--formula``."""
    from sympy import Max, Symbol, UnevaluatedExpr

    from .dtypes import BITS
    from .formulas import memory as mem
    from .formulas.flops import Flops, head_flops
    from .formulas.symbols import B, S, k, n

    tp = Symbol("tp", positive=True, integer=True)
    peak = Symbol("Pi", positive=True)  # the dense peak, FLOP/s per GPU
    bandwidth = Symbol("BW", positive=True)  # bytes/s per GPU
    mfu = Symbol("MFU", positive=True)
    dense = Symbol("M_dense", positive=True)
    routed = Symbol("M_experts", positive=True)
    head = head_flops(model.architecture.head).per_token
    causal = Flops(model.derivation, causal=True)
    f_pre = _as_configured(model, causal.forward) - B * (S - 1) * head
    kinds = mem.layer_kinds(mem.cache_family(model.derivation), model.values)
    kv = sum(
        (kind.elements * BITS[kv_dtype] / 8 + kind.elements_fp32 * 4 for kind in kinds),
        start=0,
    )
    lines: list[tuple[str, Any]] = [
        ("prefill FLOPs  F_pre", f_pre),
        ("prefill time  t_pre", Max(Symbol("F_pre") / (tp * peak), Symbol("M_pre") / (tp * bandwidth))),
        ("prefill at a stated MFU", Symbol("F_pre") / (tp * peak * mfu)),
    ]
    fraction = 1 - (1 - UnevaluatedExpr(k / n)) ** B  # kept as written: 1 - (1 - k/n)^B
    m_dec = dense + (fraction * routed if weights.routed else 0) + Symbol("M_KV")
    lines += [
        ("KV cache read  M_KV", kv),
        ("bytes read per decode step  M_dec", m_dec),
        ("decode FLOPs per token  F_tok", _as_configured(model, _decode_formula(model))),
        ("decode step  t_dec", Max(Symbol("M_dec") / (tp * bandwidth), B * Symbol("F_tok") / (tp * peak))),
        ("decode tokens/s", B / Symbol("t_dec")),
    ]
    if weights.routed:
        lines.insert(3, ("expected distinct experts per layer (uniform routing)", n * fraction))
    return lines


def _decode_formula(model: Any) -> Any:
    """:func:`decode_flops_per_token` as a formula in the glossary's symbols and S."""
    from sympy import Add, Min

    from .formulas.flops import _scores, head_flops, is_matmul_weight, linear_flops
    from .formulas.symbols import S

    derivation = model.derivation
    terms = [linear_flops(t) for t in derivation.terms if is_matmul_weight(t)]
    terms.append(head_flops(derivation.architecture.head))
    spec = derivation.architecture.attention
    if spec is not None:
        if spec.window is not None and spec.window.free_symbols <= set(model.values) and spec.windowed != 0:
            terms += _scores(spec, spec.layers - spec.windowed, 2 * S, "")
            terms += _scores(spec, spec.windowed, 2 * Min(S, spec.window - 1), "", "", "/sliding")
        else:
            idle = {s: 0 for s in spec.windowed.free_symbols - set(model.values)} if spec.window is not None else {}
            terms += [t for t in _scores(spec, spec.layers.subs(idle), 2 * S, "")]
    return Add(*(t.layers * t.per_token for t in terms))


def _as_configured(model: Any, expr: Any) -> Any:
    """``expr`` for this config: a count of sliding layers the config leaves out is 0 and a window it does not set is S
    (no layer slides), as :meth:`llmcount.formulas.flops.Flops.evaluate` reads them."""
    from .formulas.symbols import S

    spec = model.derivation.architecture.attention
    if spec is None or spec.window is None or spec.window.free_symbols <= set(model.values):
        return expr
    idle = {symbol: 0 for symbol in spec.windowed.free_symbols - set(model.values)}
    idle |= {symbol: S for symbol in spec.window.free_symbols - set(model.values)}
    return expr.subs(idle)
