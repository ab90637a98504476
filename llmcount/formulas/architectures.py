"""One declarative record per model family, and the function that lays out its terms.

A record says which blocks a family is made of; ``Options`` holds the switches a config can
flip (tied head, biases, a q LoRA, leading dense layers). ``REGISTRY`` maps the family name
(the ``model_type`` of its config) to its record.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from sympy import Expr

from . import blocks
from .blocks import Term
from .symbols import N, N_dense, d_ff, d_moe


@dataclass(frozen=True)
class Options:
    """The switches of one config; each family's defaults are those of transformers."""

    tied: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    q_lora: bool = True
    dense_layers: bool = False  # some layers of an MoE model have a dense MLP


@dataclass(frozen=True)
class Architecture:
    name: str  # the config's model_type
    title: str
    attention: Literal["fused", "gqa", "mla"]
    mlp: Literal["classic", "gated"] = "gated"
    norm: Literal["rms", "layer"] = "rms"
    moe: Literal[None, "routed", "shared"] = None
    expert_width: Expr = d_moe
    qkv_bias: bool = False  # biases on q, k, v always (Qwen2)
    qk_norm: bool = False
    learned_positions: bool = False
    switches: tuple[str, ...] = ()  # which Options fields a config of this family can set
    defaults: Options = Options()
    example: str = ""  # a bundled preset of this family

    def __post_init__(self) -> None:
        unknown = set(self.switches) - set(Options.__dataclass_fields__)
        assert not unknown, f"{self.name}: unknown switches {unknown}"

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    def terms(self, options: Options | None = None) -> list[Term]:
        """Every term of the model in reader's order: embedding, attention, MLP/MoE, norms, head."""
        o = options or self.defaults
        moe_layers = N - N_dense if o.dense_layers else N
        dense_layers = N_dense if self.is_moe else N

        embedding = blocks.token_embedding("wte" if self.learned_positions else "embed_tokens")
        if self.learned_positions:
            embedding += blocks.position_embedding()

        if self.attention == "fused":
            attention = blocks.fused_attention()
        elif self.attention == "mla":
            attention = blocks.mla(q_lora=o.q_lora, bias=o.attention_bias)
        else:
            attention = blocks.attention(
                qkv_bias=self.qkv_bias or o.attention_bias, o_bias=o.attention_bias, qk_norm=self.qk_norm
            )

        mlp: list[Term] = []
        if not self.is_moe or o.dense_layers:
            mlp = blocks.classic_mlp(d_ff) if self.mlp == "classic" else blocks.gated_mlp(d_ff, bias=o.mlp_bias)
        moe: list[Term] = []
        if self.is_moe:
            moe = blocks.router() + blocks.routed_experts(self.expert_width)
            if self.moe == "shared":
                moe += blocks.shared_experts(self.expert_width, bias=o.mlp_bias)

        if self.norm == "layer":
            norms = blocks.layer_norm("ln_1") + blocks.layer_norm("ln_2")
            final = blocks.layer_norm("ln_f")
        else:
            norms = blocks.rms_norm("input_layernorm") + blocks.rms_norm("post_attention_layernorm")
            final = blocks.rms_norm("norm")

        def per(terms: list[Term], layers: Expr) -> list[Term]:
            return [replace(t, layers=layers) for t in terms]

        return [
            *embedding,
            *per(attention, N),
            *per(moe, moe_layers),
            *per(mlp, dense_layers),
            *per(norms, N),
            *final,
            *blocks.lm_head(o.tied),
        ]


_LLAMA = Architecture(
    "llama",
    "Llama",
    attention="gqa",
    switches=("tied", "attention_bias", "mlp_bias"),
    example="llama-3-8b",
)
_DEEPSEEK_V3 = Architecture(
    "deepseek_v3",
    "DeepSeek-V3",
    attention="mla",
    moe="shared",
    switches=("tied", "attention_bias", "q_lora", "dense_layers"),
    defaults=Options(q_lora=True, dense_layers=True),
    example="deepseek-v3",
)

FAMILIES: tuple[Architecture, ...] = (
    Architecture(
        "gpt2",
        "GPT-2",
        attention="fused",
        mlp="classic",
        norm="layer",
        learned_positions=True,
        switches=("tied",),
        defaults=Options(tied=True),
        example="gpt2",
    ),
    _LLAMA,
    replace(_LLAMA, name="mistral", title="Mistral", switches=("tied",), example="mistral-7b"),
    Architecture("qwen2", "Qwen2", attention="gqa", qkv_bias=True, switches=("tied",), example="qwen2.5-7b"),
    Architecture(
        "qwen3", "Qwen3", attention="gqa", qk_norm=True, switches=("tied", "attention_bias"), example="qwen3-32b"
    ),
    Architecture(
        "qwen3_moe",
        "Qwen3-MoE",
        attention="gqa",
        qk_norm=True,
        moe="routed",
        switches=("tied", "attention_bias", "dense_layers"),
        example="qwen3-235b-a22b",
    ),
    Architecture(
        "mixtral",
        "Mixtral",
        attention="gqa",
        moe="routed",
        expert_width=d_ff,
        switches=("tied",),
        example="mixtral-8x7b",
    ),
    replace(
        _DEEPSEEK_V3,
        name="deepseek_v2",
        title="DeepSeek-V2",
        switches=(*_DEEPSEEK_V3.switches, "mlp_bias"),
        defaults=Options(q_lora=True, dense_layers=False),
        example="deepseek-v2-lite",
    ),
    _DEEPSEEK_V3,
)

REGISTRY: dict[str, Architecture] = {arch.name: arch for arch in FAMILIES}
