"""How each serving engine lays the vocabulary rows of the token embedding and the LM head over tensor-parallel
ranks (docs/serving.md, docs/engines.md): the one part of the weights per GPU in which the engines differ.

Everything else splits alike in vLLM, SGLang, TensorRT-LLM and LMDeploy's PyTorch engine: column-parallel q/k/v and
gate/up, row-parallel o and down, norms and routers whole on every rank, key-value heads fewer than tp copied to one
per rank (tp a multiple of their number), routed experts over the ranks. The record of each engine
(``<engine>.toml``, table ``[weights]``) names the rule of each part and, where the engine's model files differ, the
rule per model type; a model type an engine's rule does not list is refused by name under tp > 1.

Rules (rows one rank holds, for a vocabulary of V rows over tp ranks):

* ``pad64``: V padded to a multiple of 64, divided by tp, which must divide it (vLLM's ``pad_vocab_size`` and
  ``divide``);
* ``pad64_tp``: V padded to a multiple of 64, or of 64·tp when tp does not divide that (SGLang's
  ``VocabParallelEmbedding``: ``padding_size *= tp_size``), divided by tp;
* ``ceil_tp``: ⌈V / tp⌉ (TensorRT-LLM's ``LMHead`` and ``Embedding`` in ``TensorParallelMode.COLUMN``);
* ``whole``: V on every rank, unpadded (a plain ``nn.Embedding``, or a linear layer built without tp);
* ``pad64_if_tp``: V at tp = 1, else V padded to a multiple of 64 divided by tp, which must divide it (LMDeploy's
  ``ParallelEmbedding`` and ``ParallelLMHead`` with ``is_tp``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import LlmcountError

RULES = ("pad64", "pad64_tp", "ceil_tp", "whole", "pad64_if_tp")
PARTS = ("embedding", "head")
PAD = 64


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


@dataclass(frozen=True)
class VocabSplit:
    """One part's vocabulary rows on one rank under ``rule``; ``total``: the rows of all ranks' shares (the padded
    vocabulary; V · tp when every rank holds it whole)."""

    part: str
    rule: str
    vocab: int
    tp: int
    rows: int

    @property
    def padded(self) -> int:
        """The vocabulary as the engine allocates it (one rank's rows times tp, or V when held whole)."""
        return self.vocab if self.rule == "whole" else self.rows * self.tp

    def said(self, title: str) -> str:
        if self.rule == "whole":
            return f"{self.part}: all {self.vocab:,} rows on every rank ({title} builds it without tensor parallelism)"
        how = {
            "pad64": "a multiple of 64, then / tp",
            "pad64_tp": "a multiple of 64 (of 64·tp when tp does not divide that), then / tp",
            "ceil_tp": "⌈V / tp⌉ rows a rank",
            "pad64_if_tp": "a multiple of 64 under tp, then / tp" if self.tp > 1 else "unpadded at tp = 1",
        }[self.rule]
        padded = f"padded to {self.padded:,}" if self.padded != self.vocab else "no rows of padding"
        per = f"; {self.rows:,} rows per tp rank" if self.tp > 1 else ""
        return f"{self.part}: vocabulary of {self.vocab:,} rows, {padded} ({title}: {how}){per}"


def rows(rule: str, vocab: int, tp: int, part: str, title: str, key: str) -> VocabSplit:
    """The rows one rank holds of ``part`` under ``rule``; LlmcountError naming the key when the engine asserts tp
    divides the padded vocabulary and it does not."""
    if rule not in RULES:
        raise LlmcountError(f"{title}: unknown vocabulary rule {rule!r} in its record (known: {', '.join(RULES)})")
    if rule == "whole" or (rule == "pad64_if_tp" and tp == 1):
        return VocabSplit(part, rule, vocab, tp, vocab)
    if rule == "ceil_tp":
        return VocabSplit(part, rule, vocab, tp, -(-vocab // tp))
    padded = _round_up(vocab, PAD)
    if padded % tp:
        if rule == "pad64_tp":
            padded = _round_up(vocab, PAD * tp)
        else:
            raise LlmcountError(
                f"--tp {tp} does not divide the vocabulary padded to a multiple of {PAD}, {padded:,} rows ({key} = "
                f"{vocab:,}): {title} asserts it does ({part})"
            )
    return VocabSplit(part, rule, vocab, tp, padded // tp)


def rule_for(table: dict, part: str, model_type: str, title: str, tp: int) -> str:
    """The rule ``table`` (an engine record's ``[weights]``) gives ``part`` of ``model_type``: its per-type entry, else
    its default; LlmcountError naming the model type under tp > 1 when the record transcribes only some types."""
    by_type = table.get(f"{part}_by_type", {})
    if model_type in by_type:
        return by_type[model_type]
    if part in table:
        return table[part]
    if tp == 1:
        return "whole"
    listed = ", ".join(sorted(by_type)) or "none"
    raise LlmcountError(
        f"{title} with --tp {tp}: how its model file for {model_type} lays the {part}'s vocabulary rows over the ranks "
        f"is not transcribed (transcribed: {listed})"
    )


def vocab_splits(engine_name: str | None, model_type: str, vocab: int, tp: int, key: str, tied: bool):
    """(embedding, head) :class:`VocabSplit` of ``engine_name``'s record (vLLM's without one; a tied model's head is
    its embedding's rows); LlmcountError naming the engine when its record refuses tp or the tied parts differ."""
    from . import TRANSFORMERS, engine

    eng = engine(engine_name or "vllm")
    if eng.name == TRANSFORMERS:
        eng = engine("vllm")
    table = dict(eng.weights)
    if "refused" in table:
        if tp > 1:
            raise LlmcountError(f"{eng.title} with --tp {tp}: {table['refused']}")
        embedding = VocabSplit("embedding", "whole", vocab, 1, vocab)
        return embedding, replace(embedding, part="head")
    rules = {part: rule_for(table, part, model_type, eng.title, tp) for part in PARTS}
    embedding = rows(rules["embedding"], vocab, tp, "embedding", eng.title, key)
    head = rows(rules["head"], vocab, tp, "head", eng.title, key)
    if tied and embedding.rows != head.rows:
        raise LlmcountError(
            f"{eng.title} with --tp {tp}: {model_type}'s head is tied to its embedding, but its model file lays the "
            f"embedding out as {rules['embedding']} and the head as {rules['head']} (the engine asserts they agree)"
        )
    return embedding, head


def layer_split(layers: int, devices: int) -> list[range]:
    """llama.cpp's ``--split-mode layer`` with every layer offloaded (``-ngl`` at least layers + 1) over ``devices``
    equal shares (``--tensor-split`` of equal parts; its default splits by each device's free memory): repeating layer
    ``il`` and the output layer (``il = layers``) go to the first device whose cumulative share exceeds
    il / (layers + 1), that is to device ⌊il · devices / (layers + 1)⌋ (src/llama-model.cpp ``load_tensors``,
    ``get_layer_buft_list``: ``std::upper_bound(splits, float(il - i_gpu_start) / act_gpu_layers)``, ggml-org/llama.cpp
    commit 00342301d01a); the input layer (the token embedding) stays on the CPU. The ranges of repeating layers, device
    by device; the output layer is on the last device whenever layers ≥ devices − 1."""
    starts = [-(-g * (layers + 1) // devices) for g in range(devices + 1)]
    return [range(starts[g], min(layers, starts[g + 1])) for g in range(devices)]
