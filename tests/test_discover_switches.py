"""Discovery's class of switches that replace tensors or reshape one: Falcon's ``multi_query`` (the width of
``query_key_value``) and ``new_decoder_architecture`` (``ln_attn`` and ``ln_mlp`` in place of ``input_layernorm``,
with ``parallel_attn`` only). Each kind gets the condition on the switches under which transformers builds it."""

from __future__ import annotations

from itertools import product

import pytest

pytest.importorskip("torch", reason="discover needs torch and transformers")
pytest.importorskip("transformers", reason="discover needs torch and transformers")

from llmcount.discover import probe
from llmcount.discover.core import Discoverer, _conjunction
from llmcount.formulas.expressions import condition

KEYS = ["new_decoder_architecture", "parallel_attn"]
SETTINGS = [dict(zip(KEYS, values, strict=True)) for values in product((False, True), repeat=2)]


def _holds(found: list[str], setting: dict[str, bool]) -> bool:
    return all(condition(text, "test")(setting) for text in found)


@pytest.mark.parametrize(
    ("name", "exists"),
    [  # FalconDecoderLayer.__init__ (modeling_falcon.py, transformers 5.24), by hand: num_ln_in_parallel_attn
        # becomes 2 with new_decoder_architecture; with parallel_attn, 2 norms build ln_attn and ln_mlp
        ("ln_attn", lambda s: s["parallel_attn"] and s["new_decoder_architecture"]),
        ("input_layernorm", lambda s: not (s["parallel_attn"] and s["new_decoder_architecture"])),
        ("post_attention_layernorm", lambda s: not s["parallel_attn"]),
    ],
)
def test_the_condition_on_switches_under_which_a_tensor_exists(name, exists) -> None:
    member = [exists(s) for s in SETTINGS]
    found = _conjunction(KEYS, SETTINGS, member)
    assert found is not None, name
    assert [_holds(found, s) for s in SETTINGS] == member, (name, found)


def test_a_tensor_a_switch_reshapes_takes_a_name_of_its_own() -> None:
    discoverer = Discoverer.__new__(Discoverer)
    discoverer.splits = {}
    discoverer.reference = {"multi_query": True, "bias": False}
    discoverer.reshaped = {"multi_query": {"transformer.h.*.self_attention.query_key_value.weight"}}
    built = probe.build(
        "falcon",
        {"num_hidden_layers": 1, "hidden_size": 16, "num_attention_heads": 2, "vocab_size": 8, "multi_query": False},
    )
    names = {t.key for t in discoverer.split(built, {"multi_query": False}).tensors}
    assert "transformer.h.*.self_attention.query_key_value_no_multi_query.weight" in names
    assert "transformer.h.*.self_attention.dense.weight" in names  # not reshaped: its own name
    same = {t.key for t in discoverer.split(built, {"multi_query": True}).tensors}
    assert "transformer.h.*.self_attention.query_key_value.weight" in same


def test_a_size_the_class_derives_from_another_is_left_for_the_class() -> None:
    # RoFormer: embedding_size is hidden_size unless given; when they differ, embeddings_project maps one to the
    # other. Given at its default beside another hidden_size, the projection appears: embedding_size is left out
    discoverer = Discoverer.__new__(Discoverer)
    discoverer.notes = []
    discoverer.on = {}
    discoverer.layer_key, discoverer.tokens, discoverer.parts, discoverer.dependent = "num_hidden_layers", set(), [], {}
    discoverer.defaults = {"hidden_size": 768, "embedding_size": 768, "num_hidden_layers": 12}
    discoverer.fixed = {"hidden_size": 768, "embedding_size": 768, "num_hidden_layers": 3}
    discoverer.derived = set()

    def build(overrides, drop=(), repair=None):
        values = {**discoverer.fixed, **overrides}
        d = values["hidden_size"]
        e = d if "embedding_size" in drop or "embedding_size" not in values else values["embedding_size"]
        tensors = {"embeddings.word_embeddings.weight": (1, 10, e), "encoder.layer.*.dense.weight": (3, d, d)}
        if e != d:
            tensors["embeddings_project.weight"] = (1, d, e)
        return tensors

    discoverer.build = build
    import llmcount.discover.core as core

    base = build({})
    original, core._per_kind = core._per_kind, lambda b: b
    try:
        found = discoverer.effect("hidden_size", 768, base)
    finally:
        core._per_kind = original
    assert found is not None and found[1] is not None  # a size that shapes tensors, not a key of which exist
    assert "embedding_size" not in discoverer.fixed and discoverer.derived == {"embedding_size"}
