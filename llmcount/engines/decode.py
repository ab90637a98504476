"""The KV cache one decode step reads, as a serving engine stores it (``speed --engine``, docs/speed.md).

A decode step after a prompt of S tokens reads, in every attention layer, the keys and values of the S tokens before
it. An engine stores them in its own dtype (with its scales: LMDeploy's int8/int4 blocks, TensorRT-LLM's NVFP4) and
in whole blocks, and its attention kernel addresses whole blocks: the step reads cdiv(S, block) blocks of each layer
per sequence, of the bytes :func:`llmcount.engines.kv_cache` gives one token of that layer on one tensor-parallel rank
(key-value heads copied on the ranks that share one are read on each). Blocks: vLLM's ``block_size`` (16, or the
block its hybrid or page-unifying rule sets), SGLang's ``page_size`` (1 unless an attention backend sets one),
TensorRT-LLM's ``tokens_per_block`` (32), LMDeploy's ``block_size`` (64).

A vLLM sliding layer of window W reads the whole blocks that hold the W − 1 tokens before the new one (vLLM frees the
blocks before them, SlidingWindowManager), a chunked layer (Llama 4, chunk C) those of the tokens of the new token's
chunk before it; a Mamba or linear-attention layer reads each sequence's states once (conv and temporal, on one
rank, unpadded: the state itself, not the page it is padded to). llama.cpp's attention views ``n_kv`` cells of each
sequence's stream (src/llama-kv-cache.cpp ``get_n_kv``: the used cells S + 1, the new token's included, padded to
256, at least 256, at most the stream's size), all of them read; its recurrent layers read each sequence's row.

Not counted: the block tables and SGLang's token-to-slot table the kernel reads beside the cache, the key and value
written for the new token (vLLM, SGLang, TensorRT-LLM, LMDeploy). Refused by name: SGLang's sliding pools and
llama.cpp's SWA cache (which slots of the ring a step reads is not transcribed), and transformers (no engine:
``speed`` without ``--engine``).
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
        if self.engine.startswith("llama.cpp"):
            kinds = ", ".join(
                f"{layers} {kind.replace('_', ' ')} layers, "
                + (f"{block:,} cells (n_kv)" if block else "one state row")
                for kind, layers, block in self.blocks
            )
            return (
                f"KV cache read as {self.engine} stores it: {self.kv_dtype}, {kinds} per sequence: n_kv = S + 1 used "
                "cells padded to 256 (get_n_kv)"
            )
        kinds = ", ".join(
            f"{layers} {kind.replace('_', ' ')} layers " + (f"in blocks of {block}" if block else "(their states)")
            for kind, layers, block in self.blocks
        )
        return (
            f"KV cache read as {self.engine} stores it: {self.kv_dtype}, {kinds}: each sequence reads whole blocks a "
            "layer, of the S tokens (a sliding layer: the W − 1 before the new one; a chunked layer: its chunk's), and "
            "each state layer its states (block tables and the new token's K/V not counted)"
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
    figure = kv_cache(eng.name, model, seq, batch, kv_dtype, dtype=dtype, tp=tp)
    settings = dict(figure.settings)
    cells = eng.allocation == "cells"
    default = settings["n_ctx"] if cells else settings[BLOCK_SETTING[eng.allocation]]
    total: int | Fraction = 0
    blocks = []
    for kind in figure.kinds:
        if not kind.layers:  # a table beside the layers (SGLang's req_to_token): not counted
            continue
        if kind.state:  # a Mamba or linear-attention layer: each sequence's states, read once a step
            total += batch * kind.layers * kind.state
            blocks.append((kind.kind, kind.layers, 0))
            continue
        per_token = kind.token_bytes or Fraction(kind.bytes, batch * kind.layers * kind.tokens)
        if cells and kind.engine_kind == "full_attention":
            read = _n_kv(eng, seq, kind.tokens)
            total += batch * kind.layers * read * per_token
            blocks.append((kind.kind, kind.layers, read))
            continue
        block = settings.get("block_sizes", {}).get(kind.token_bytes, default)
        if kind.engine_kind == "full_attention":
            first = 0
        elif eng.allocation == "paged" and kind.engine_kind == "sliding_attention" and kind.window:
            first = max(0, seq - kind.window + 1)  # the W − 1 tokens before the new one
        elif eng.allocation == "paged" and kind.engine_kind == "chunked_attention" and kind.window:
            first = seq // kind.window * kind.window  # the tokens of the new token's chunk before it
        else:
            raise LlmcountError(
                f"speed --engine {eng.name}: the {kind.layers} {kind.kind.replace('_', ' ')} layers of "
                f"{model.architecture.title}: which of {eng.title}'s held {'cells' if cells else 'blocks'} a decode "
                "step reads is not transcribed (full attention, MLA, vLLM's sliding and chunked layers and the state "
                "layers are)"
            )
        count = (seq - 1) // block - first // block + 1 if seq > first else 0
        total += batch * kind.layers * count * block * per_token
        blocks.append((kind.kind, kind.layers, block))
    if isinstance(total, Fraction) and total.denominator == 1:
        total = int(total)
    return DecodeRead(f"{eng.title} {eng.version}", figure.kv_dtype, total, tuple(blocks), seq, batch)


def _n_kv(eng: Any, seq: int, size: int) -> int:
    """llama.cpp's n_kv (src/llama-kv-cache.cpp get_n_kv): the cells of a stream the attention of a step views,
    min(size, max(256, GGML_PAD(used_max_p1, 256))) with used_max_p1 = S + 1 once the new token's cell is written."""
    pad = eng.settings["n_kv_pad"]
    return min(size, max(pad, -(-(seq + 1) // pad) * pad))
