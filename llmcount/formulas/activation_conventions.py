"""Activation memory per layer as Korthikanti et al. 2022 count it, beside llmcount's exact figure.

Korthikanti et al. 2022, *Reducing Activation Recomputation in Large Transformer Models* (arXiv:2205.05198), §4 and
Table 2: the bytes one transformer layer keeps for the backward pass, with s the sequence length, b the micro-batch,
h the hidden size, a the attention heads and t the tensor-parallel size. Their layer is GPT-3's: an MLP of 4h with
GELU, 16-bit activations, 1-byte dropout masks, LayerNorm inputs kept, eager attention (the a·s² scores and their
softmax, dropout mask and dropout output kept). Per layer: attention 11sbh + 5as²b, MLP 19sbh, two LayerNorms 4sbh,
sbh(34 + 5as/h) in all. Every figure is exact (a Fraction where the paper's 24/t does not divide)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

SOURCE = (
    "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, §4 and Table 2 "
    "(arXiv:2205.05198)"
)

DIFFERENCES = (
    "Korthikanti's 34·sbh + 5·as²b is a GPT-3 layer in 16 bits with 1-byte dropout masks: attention 11sbh + 5as²b "
    "(the QKV input 2sbh, Q and K 4sbh, V 2sbh, the softmax output 2as²b, its dropout mask as²b and dropout output "
    "2as²b, the output projection's input 2sbh, its dropout mask sbh), MLP 19sbh (its input 2sbh, GELU's input and "
    "output 8sbh each at d_ff = 4h, the dropout mask sbh), the two LayerNorms' inputs 4sbh. llmcount's figure is "
    "what transformers' autograd saves for this config, term by term (memory --training --json, per_layer_kind), "
    "with dropout off: no dropout masks and no dropout outputs (Korthikanti's as²b + 2as²b + 2sbh); the activation's "
    "own implementation (tanh GELU keeps its "
    "input and intermediate terms, SwiGLU its gate, up and product) at the config's d_ff, not 4h; the norms' "
    "statistics (mean and rstd per token, fp32); fp32 upcasts (eager softmax); the config's own head and KV widths"
)


@dataclass(frozen=True)
class ActivationConvention:
    """One published count of a layer's activations: bytes per layer on one GPU, its formula, its source."""

    name: str
    bytes_per_layer: Fraction
    formula: str
    source: str
    matches: bool  # the row of the options given (tensor and sequence parallelism, recomputation)


def korthikanti(
    s: int, b: int, h: int, a: int, t: int = 1, sequence_parallel: bool = False, recompute: str = "none"
) -> list[ActivationConvention]:
    """Table 2's six rows for these sizes; ``matches`` marks the one of the given parallelism and recomputation."""
    sbh = Fraction(s * b * h)
    attention = Fraction(5 * a * s, h)  # 5as/h
    if recompute == "full":
        chosen = "korthikanti-full"
    elif recompute == "selective":
        chosen = "korthikanti-tp-sp-selective" if sequence_parallel else "korthikanti-tp-selective"
    elif t == 1 and not sequence_parallel:
        chosen = "korthikanti"
    else:
        chosen = "korthikanti-tp-sp" if sequence_parallel else "korthikanti-tp"
    rows = [
        ("korthikanti", sbh * (34 + attention), "sbh·(34 + 5as/h): no parallelism"),
        ("korthikanti-tp", sbh * (10 + Fraction(24, t) + attention / t), "sbh·(10 + 24/t + 5as/(ht)): tensor parallel"),
        ("korthikanti-tp-sp", sbh / t * (34 + attention), "sbh/t·(34 + 5as/h): tensor + sequence parallel"),
        (
            "korthikanti-tp-selective",
            sbh * (10 + Fraction(24, t)),
            "sbh·(10 + 24/t): tensor parallel + selective recomputation",
        ),
        (
            "korthikanti-tp-sp-selective",
            sbh * Fraction(34, t),
            "sbh·34/t: tensor + sequence parallel + selective recomputation",
        ),
        ("korthikanti-full", 2 * sbh, "2·sbh: full recomputation (the layer's input only)"),
    ]
    return [ActivationConvention(name, value, formula, SOURCE, name == chosen) for name, value, formula in rows]
