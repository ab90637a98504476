"""The KV cache one decode step reads, as a serving engine stores it (``speed --engine``, docs/speed.md).

A decode step after a prompt of S tokens reads, in every attention layer, the keys and values of the S tokens before
it. An engine stores them in its own dtype (with its scales: LMDeploy's int8/int4 blocks, TensorRT-LLM's NVFP4) and
in whole blocks, and its attention kernel addresses whole blocks: the step reads cdiv(S, block) blocks of each layer
per sequence, of the bytes :func:`llmcount.engines.kv_cache` gives one token of that layer on one tensor-parallel rank
(key-value heads copied on the ranks that share one are read on each). Blocks: vLLM's ``block_size`` (16, or the
block its hybrid or page-unifying rule sets), SGLang's ``page_size`` (1 unless an attention backend sets one),
TensorRT-LLM's ``tokens_per_block`` (32), LMDeploy's ``block_size`` (64).

Not counted: the block tables and SGLang's token-to-slot table the kernel reads beside the cache, the key and value
written for the new token. Refused by name: layers the engine runs with a window or chunk (which of the held blocks a
step reads depends on where the window falls), Mamba and linear-attention states, llama.cpp (the cells its kernel
reads, ``n_kv``, are not transcribed) and transformers (no engine: ``speed`` without ``--engine``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import LlmcountError

BLOCK_SETTING = {"paged": "block_size", "pool": "page_size", "blocks": "tokens_per_block", "packed": "block_size"}
"""The engine setting that is its block (page) of tokens, per kind of allocation."""


@dataclass(frozen=True)
class DecodeRead:
    """The KV cache bytes one decode step of B sequences at S tokens reads on one tensor-parallel rank."""

    engine: str  # the engine's title and version
    kv_dtype: str  # the engine's name of the cache dtype
    bytes: int | Fraction
    blocks: tuple[tuple[str, int, int], ...]  # per kind of layer: (kind, layers, block tokens)
    seq: int
    batch: int

    @property
    def said(self) -> str:
        kinds = ", ".join(
            f"{layers} {kind.replace('_', ' ')} layers in blocks of {block}" for kind, layers, block in self.blocks
        )
        return (
            f"KV cache read as {self.engine} stores it: {self.kv_dtype}, {kinds}: each sequence reads "
            "cdiv(S, block) whole blocks a layer (block tables and the new token's K/V not counted)"
        )


def decode_read(
    engine_name: str, model: Any, seq: int, batch: int, kv_dtype: str | None, dtype: str = "bf16", tp: int = 1
) -> DecodeRead:
    """The bytes one rank's decode step reads of the KV cache of ``batch`` sequences at ``seq`` tokens (see the
    module docstring); LlmcountError naming the engine and the layers it does not transcribe."""
    from . import TRANSFORMERS, engine, kv_cache

    eng = engine(engine_name)
    if eng.name == TRANSFORMERS:
        raise LlmcountError("speed --engine transformers: not a serving engine (speed without --engine is its cache)")
    if eng.allocation not in BLOCK_SETTING:
        raise LlmcountError(
            f"speed --engine {eng.name}: the cells {eng.title}'s attention kernel reads a step (n_kv) are not "
            "transcribed"
        )
    figure = kv_cache(eng.name, model, seq, batch, kv_dtype, dtype=dtype, tp=tp)
    settings = dict(figure.settings)
    default = settings[BLOCK_SETTING[eng.allocation]]
    total: int | Fraction = 0
    blocks = []
    for kind in figure.kinds:
        if not kind.layers:  # a table beside the layers (SGLang's req_to_token): not counted
            continue
        if kind.engine_kind != "full_attention":
            raise LlmcountError(
                f"speed --engine {eng.name}: the {kind.layers} {kind.kind.replace('_', ' ')} layers of "
                f"{model.architecture.title}: which of {eng.title}'s held blocks a decode step reads is not "
                "transcribed (full attention and MLA layers are)"
            )
        block = settings.get("block_sizes", {}).get(kind.token_bytes, default)
        per_token = kind.token_bytes or Fraction(kind.bytes, batch * kind.layers * kind.tokens)
        total += batch * kind.layers * -(-seq // block) * block * per_token
        blocks.append((kind.kind, kind.layers, block))
    if isinstance(total, Fraction) and total.denominator == 1:
        total = int(total)
    return DecodeRead(f"{eng.title} {eng.version}", figure.kv_dtype, total, tuple(blocks), seq, batch)
