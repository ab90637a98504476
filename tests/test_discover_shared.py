"""Discovery of one module that several layers share (Zamba's ``shared_transf``: one attention-and-MLP block whose
Parameters every hybrid layer holds). transformers counts it once (``model.parameters()`` holds each Parameter once):
the draft counts it once too, as many times as it has distinct copies, with a term that says which layers run it.
One small model is built (the probe's own view of a tie across layers); the rest are stub builds with shapes written
by hand."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="discover needs torch and transformers")
pytest.importorskip("transformers", reason="discover needs torch and transformers")

from discover_stubs import bare as _bare
from discover_stubs import stub

from llmcount.discover import probe
from llmcount.discover.core import Discoverer, Factor, Kind, _membership, _per_kind, _turned
from llmcount.formulas import records
from llmcount.formulas.config import read_config

Q = "model.layers.*.shared_transf.self_attn.q_proj.weight"
LINEAR = "model.layers.*.linear.weight"


def _stub(tensors, layers: int, uses=None) -> probe.Build:
    return stub(tensors, layers, uses=uses or {})


def test_the_probe_lists_a_module_shared_across_layers_once_with_the_layers_that_use_it() -> None:
    # ZambaModel (transformers 5.24): each hybrid layer builds a ZambaAttentionDecoderLayer, and the model ties them
    # all to the first hybrid layer's (_tied_weights_keys `layers.(?!2\.)\d+.shared_transf` -> `layers.2...`); with
    # tied embeddings transformers keeps one Parameter for all, so model.parameters() counts the block once
    config = {
        "num_hidden_layers": 3,
        "layers_block_type": ["hybrid", "linear_attention", "hybrid"],
        "hidden_size": 16,
        "attention_hidden_size": 32,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "attention_head_dim": 16,
        "intermediate_size": 24,
        "vocab_size": 64,
        "n_mamba_heads": 1,
        "mamba_dt_rank": 4,
    }
    built = probe.build("zamba", config)
    assert built.uses[Q] == (2,)  # first built on layer 0; layer 2 holds the same Parameter
    assert [t.layer for t in built.tensors if t.key == Q] == [0]
    assert Q not in built.shared  # a tie across layers, not one kind tied to another (lm_head to embed_tokens)
    assert sum(_size(t.shape) for t in built.tensors) == built.total
    # by hand: q_proj is attention_hidden_size to heads * head_dim, once for both hybrid layers
    assert [t.shape for t in built.tensors if t.key == Q] == [(2 * 16, 32)]


def _size(shape: tuple[int, ...]) -> int:
    out = 1
    for x in shape:
        out *= x
    return out


def test_a_shared_module_leaves_the_layers_counted_once_per_distinct_copy() -> None:
    discoverer = _bare()
    shared = [probe.Tensor(Q, 0, (8, 16), "Linear", False, False)]
    own = [probe.Tensor(LINEAR, i, (16, 16), "Linear", False, False) for i in (0, 2)]
    built = discoverer.gather_shared(_stub([*shared, *own], 3, {Q: (2,)}))
    name = "model.layers.*.shared_transf.self_attn.q_proj_shared.weight"
    assert [(t.key, t.layer) for t in built.tensors if "q_proj" in t.key] == [(name, None)]
    assert _per_kind(built)[name] == (1, 8, 16)  # one copy, whatever the layers that run it
    assert _membership(built)[name] == [True, False, True]  # the layers that run it: for the condition on them
    assert _membership(built)[LINEAR] == [True, False, True]
    assert Discoverer.kinds(discoverer, built)[name].shared

    # num_mem_blocks 2 (Zamba2's blocks used in turn): two distinct copies, on layers 0 and 1, run by 0-3
    two = [probe.Tensor(Q, i, (8, 16), "Linear", False, False) for i in (0, 1)]
    built = discoverer.gather_shared(_stub(two, 4, {Q: (2, 3)}))
    assert _per_kind(built)[name] == (2, 8, 16)
    assert _membership(built)[name] == [True, True, True, True]

    # one layer alone with it (shared or its own: one copy either way), or a copy on each of two layers with no
    # Parameter in common (untied: every hybrid layer its own block): a per-layer kind as before
    alone = discoverer.gather_shared(_stub([probe.Tensor(Q, 1, (8, 16), "Linear", False, False)], 3))
    assert [(t.key, t.layer) for t in alone.tensors] == [(Q, 1)]
    untied = discoverer.gather_shared(_stub([probe.Tensor(Q, i, (8, 16), "Linear", False, False) for i in (0, 2)], 3))
    assert {(t.key, t.layer) for t in untied.tensors} == {(Q, 0), (Q, 2)}


def test_a_draft_counts_a_shared_module_once_and_runs_it_on_its_layers(tmp_path) -> None:
    # a Zamba-like stub, by hand: an embedding V x d, on hybrid layers a linear d x d of their own and one shared
    # projection d_att x d (d_att = 2 d) that all of them run; the draft's term for it has layers 1 (counted once),
    # runs N_attn and exists only when some layer is hybrid
    from sympy import Integer, Symbol

    d, vocab = Symbol("d", positive=True, integer=True), Symbol("V", positive=True, integer=True)
    shared = "model.layers.*.shared_transf.self_attn.q_proj_shared.weight"
    kinds = {
        "model.embed_tokens.weight": Kind("model.embed_tokens.weight", "Embedding", False, True, False, 0),
        LINEAR: Kind(LINEAR, "Linear", False, False, True, 1),
        shared: Kind(shared, "Linear", False, False, False, 2, shared=True),
    }
    kinds["model.embed_tokens.weight"].factors = [Factor(expr=Integer(1)), Factor(expr=vocab), Factor(expr=d)]
    kinds[LINEAR].factors = [Factor(expr=Integer(1)), Factor(expr=d), Factor(expr=d)]
    kinds[shared].factors = [Factor(expr=Integer(1)), Factor(expr=2 * d), Factor(expr=d)]
    pattern = ["hybrid", "linear_attention", "hybrid"]
    member = [True, False, True]
    condition = "layers_block_type[i] == 'hybrid'"
    discoverer = _bare(
        model_type="zamba_stub",
        prefix="model",
        classes=("ZambaStubForCausalLM", "ZambaStubConfig"),
        symbols={"vocab_size": vocab, "hidden_size": d},
        own={},
        tied={},
        aliases={},
        defaults={"num_hidden_layers": 3, "vocab_size": 64, "hidden_size": 16, "layers_block_type": pattern},
        layer_key="num_hidden_layers",
        layer_values={"layers_block_type": [pattern]},
        layer_keys=[],
        layer_conditions={LINEAR: condition, shared: condition},
        seen={k: [({"layers_block_type": pattern, "N": 3}, member)] for k in (LINEAR, shared)},
        log=lambda text: None,
    )
    text = discoverer.write(kinds, {"vocab_size": ("64", None), "hidden_size": ("16", None)}, {})
    term = text.split('path = "shared_transf/self_attn.q_proj_shared"', 1)[1].split("[[terms]]", 1)[0]
    runs = term.split('runs = "', 1)[1].split('"', 1)[0]  # N_attn, or N - N_attn with N_attn its complement
    assert "N_attn" in runs and f'when = "{runs} > 0"' in term and "layers =" not in term
    assert "counted once" in term
    path = tmp_path / "zamba_stub.toml"
    path.write_text(text, encoding="utf-8")
    family = records.load(path)
    for blocks, hybrid in ((pattern, 2), (["hybrid"] * 4, 4), (["linear_attention"] * 2, 0)):
        config = {"model_type": "zamba_stub", "num_hidden_layers": len(blocks), "layers_block_type": blocks}
        config |= {"hidden_size": 16, "vocab_size": 64}
        total = read_config(config, "stub", family=family).counts.total
        # by hand: 64 * 16 embedding, 16 * 16 per hybrid layer, and 32 * 16 once when any layer is hybrid
        assert total == 64 * 16 + hybrid * 16 * 16 + (32 * 16 if hybrid else 0), (blocks, total)


def test_per_layer_kinds_turned_put_a_later_kind_on_more_of_a_few_layers() -> None:
    # ZambaConfig's default layers_block_type (transformers 5.24) names linear_attention first: cycled over three
    # layers, one hybrid layer, which transformers refuses (the shared block's tie needs a second); turned by one,
    # two of three
    lists = {"layers_block_type": ["linear_attention", "hybrid"]}
    turned = _turned(lists)
    assert turned == [{"layers_block_type": ["hybrid", "linear_attention"]}]
    cycled = [turned[0]["layers_block_type"][i % 2] for i in range(3)]
    assert cycled.count("hybrid") == 2
