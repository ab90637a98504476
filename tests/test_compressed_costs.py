"""DeepSeek-V4's FLOPs and cache against transformers: sliding-window attention on every layer, compressed sparse
attention (every m_csa tokens folded into one entry over two overlapping windows, a Lightning Indexer picking the top
entries) and heavily compressed attention (every m_hca tokens), at sequence lengths below, at and above the window and
the compression rates, not multiples of them, and past the indexer's top-k.

- FLOPs: FlopCounterMode on a CPU forward (the indexer's top-k reads values), eager attention, batched_mm experts;
  ``--causal`` by hand: a query t (from 0) sees the floor((t + 1)/m) entries of the windows it has seen whole.
- The cache: the bytes of every tensor transformers' cache layers hold after one forward pass with
  ``use_cache=True``, per kind of layer (``per_layer_kind``), in fp32 and bf16: a sliding layer's keys and values
  (DynamicSlidingWindowLayer), a compressed layer's keys (its values are the same tensor), compressed entries, the
  keys and gates of the tokens since the last full window and (CSA) the overlapping half of the last window.
"""

from __future__ import annotations

import json

import pytest
from refusal import assert_refused, run

from llmcount.formulas import memory
from llmcount.formulas.config import read_config
from llmcount.formulas.flops import Flops

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

import torch  # noqa: E402
from test_state_flops import counter_flops  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

CSA, HCA, SLIDING = "compressed_sparse_attention", "heavily_compressed_attention", "sliding_attention"
SMALL = {
    "model_type": "deepseek_v4",
    "vocab_size": 40,
    "hidden_size": 16,
    "num_hidden_layers": 5,
    "num_attention_heads": 2,
    "head_dim": 8,
    "q_lora_rank": 6,
    "o_groups": 2,
    "o_lora_rank": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 6,
    "hc_mult": 2,
    "index_n_heads": 2,
    "index_head_dim": 4,
}
CONFIGS = {
    # every kind, rates 3 and 4, a window of 5; the indexer keeps one entry, so from S = 6 it picks among several
    "mixed": {
        **SMALL,
        "layer_types": [SLIDING, CSA, HCA, CSA, HCA],
        "compress_rates": {CSA: 3, HCA: 4},
        "sliding_window": 5,
        "index_topk": 1,
    },
    # the config class's layout (HCA, HCA, HCA, CSA, HCA), rates 2 and 5, a window of 3, hash routing on 3 layers
    "default-layout": {**SMALL, "compress_rates": {CSA: 2, HCA: 5}, "sliding_window": 3, "index_topk": 2},
    # every layer sliding, the narrowest window transformers' sliding cache keeps a token of
    "sliding": {**SMALL, "layer_types": [SLIDING] * 5, "sliding_window": 2},
}
SEQS = [1, 2, 3, 4, 5, 6, 7, 9, 13]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def transformers_cache_by_kind(config: dict, batch: int, seq: int, dtype: torch.dtype) -> dict[str, int]:
    """Bytes of the tensors each kind of layer's cache holds after one forward pass on CPU (a tensor held twice,
    the keys that are the values, once)."""
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(
        oracle._hf_config(config), attn_implementation="eager", experts_implementation="batched_mm", dtype=dtype
    )
    ids = torch.randint(0, model.config.vocab_size, (batch, seq))
    with torch.no_grad():
        cache = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True).past_key_values
    assert not oracle._held(cache), f"the cache itself holds tensors ({oracle.VERSIONS})"
    kinds: dict[str, int] = {}
    for kind, layer in zip(model.config.layer_types, cache.layers, strict=True):
        held = {id(t): t for t in oracle._held(layer)}.values()
        kinds[kind] = kinds.get(kind, 0) + sum(t.numel() * t.element_size() for t in held)
    return {kind: size for kind, size in kinds.items() if size or kind == SLIDING}


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("seq", SEQS)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_cache_per_kind_equals_transformers(name: str, seq: int, dtype: str) -> None:
    config, batch = CONFIGS[name], 1 + seq % 2
    model = read_config(config, "test")
    result = memory.inference(model.derivation, model.values, dtype, seq=seq, batch=batch)
    got = {amount.kind: amount.bytes for amount in result.per_layer_kind}
    expected = transformers_cache_by_kind(config, batch, seq, DTYPES[dtype])
    assert got == expected, f"{name} B={batch} S={seq} {dtype} ({oracle.VERSIONS})"
    total = oracle.cache_bytes(config, batch, seq, DTYPES[dtype])
    assert result.bytes_of("kv_cache") == sum(expected.values()) == total


@pytest.mark.parametrize("seq", SEQS)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_flops_equal_flop_counter(name: str, seq: int) -> None:
    config, batch = CONFIGS[name], 1 + seq % 2
    model = read_config(config, "test")
    got = Flops(model.derivation).evaluate(model.values, seq, batch).forward
    expected = counter_flops(config, batch, seq)
    message = f"{name} B={batch} S={seq}: llmcount {got:,} != FlopCounterMode {expected:,} ({oracle.VERSIONS})"
    assert got == expected, message


def test_the_cache_of_one_layer_of_each_kind_by_hand() -> None:
    """At S = 13 with h_d = 8, d_idx = 4, W = 5, m_csa = 3, m_hca = 4, fp32, one sequence. A sliding layer: keys and
    values of W - 1 = 4 tokens, 2 · 4 · 8. A CSA layer: keys of 4 tokens, 4 · 8; 13 // 3 = 4 compressed entries and
    indexer keys, 4 · (8 + 4); the 13 % 3 = 1 token since the last window, keys and gates of 2 · 8 and 2 · 4, 1 · 2 ·
    (16 + 8); the last window's overlapping half, keys and gates of 3 tokens, 2 · 3 · (8 + 4). An HCA layer: keys of 4
    tokens, 4 · 8; 13 // 4 = 3 entries, 3 · 8; 1 token's keys and gates, 2 · 8."""
    model = read_config(CONFIGS["mixed"], "test")
    result = memory.inference(model.derivation, model.values, "fp32", seq=13, batch=1)
    elements = {amount.kind: amount.bytes // (4 * amount.layers) for amount in result.per_layer_kind}
    csa = 4 * 8 + 4 * (8 + 4) + 1 * 2 * (16 + 8) + 2 * 3 * (8 + 4)
    assert elements == {SLIDING: 2 * 4 * 8, CSA: csa, HCA: 4 * 8 + 3 * 8 + 2 * 8}


def causal_entries(seq: int, rate: int) -> int:
    """Query-entry pairs a causal kernel computes: query t (from 0) sees the entries of the windows it has seen
    whole, floor((t + 1) / rate) of them."""
    return sum((t + 1) // rate for t in range(seq))


@pytest.mark.parametrize("seq", [1, 2, 3, 4, 5, 11, 12, 13, 40])
def test_causal_counts_the_entries_a_query_has_seen(seq: int) -> None:
    """With --causal the compressed entries' scores and values and the indexer's scores count only the entries of
    the windows a query has seen whole (h = 2 heads of h_d = 8, h_idx = 2 of d_idx = 4; two CSA layers, two HCA)."""
    model = read_config(CONFIGS["mixed"], "test")
    eager = {c.path: c.flops for c in Flops(model.derivation).evaluate(model.values, seq, 2).components}
    causal = {c.path: c.flops for c in Flops(model.derivation, causal=True).evaluate(model.values, seq, 2).components}
    csa, hca = causal_entries(seq, 3), causal_entries(seq, 4)
    assert causal["attention/csa_compressor.scores"] == 2 * 4 * 2 * 2 * 8 * csa
    assert causal["attention/indexer.scores"] == 2 * 2 * 2 * 2 * 4 * csa
    assert causal["attention/hca_compressor.scores"] == 2 * 4 * 2 * 2 * 8 * hca
    assert eager["attention/csa_compressor.scores"] == 2 * 4 * 2 * 2 * 8 * seq * (seq // 3)
    assert eager["attention/hca_compressor.scores"] == 2 * 4 * 2 * 2 * 8 * seq * (seq // 4)
    unchanged = {path for path in eager if "scores" not in path and "values" not in path}
    assert {path: causal[path] for path in unchanged} == {path: eager[path] for path in unchanged}


def test_flops_and_memory_on_the_command_line(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["mixed"]))
    flops = json.loads(run("flops", str(path), "--seq", "13", "--batch", "2", "--json").stdout)
    assert flops["forward_flops"] == counter_flops(CONFIGS["mixed"], 2, 13), oracle.VERSIONS
    paths = {c["path"] for c in flops["components"]}
    assert {"attention/csa_compressor.scores", "attention/indexer.scores", "hyper_connections/mix"} <= paths
    result = json.loads(run("memory", str(path), "--seq", "13", "--dtype", "fp32", "--json").stdout)
    kinds = {k["kind"]: k["layers"] for k in result["per_layer_kind"]}
    assert kinds == {SLIDING: 1, CSA: 2, HCA: 2}
    for command in ("flops", "memory"):
        shown = run(command, str(path), "--seq", "13")
        assert shown.exit_code == 0, shown.output


@pytest.mark.parametrize(
    ("keys", "command", "needle"),
    [
        ({"sliding_window": 1}, "memory", "a window of 1 on its sliding layers is not modelled"),
        ({"sliding_window": 1, "layer_types": [CSA, HCA] * 2 + [CSA]}, "memory", "a window of 1 is not modelled"),
        ({"sliding_window": None}, "flops", "sliding_window"),
        ({"compress_rates": {CSA: 0, HCA: 4}}, "flops", f"compress_rates.{CSA}"),
        ({"compress_rates": {CSA: 3}}, "memory", f"compress_rates has no {HCA} rate"),
    ],
)
def test_bad_configs_are_refused_in_one_line(tmp_path, keys: dict, command: str, needle: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**CONFIGS["mixed"], **keys}))
    assert_refused(run(command, str(path)), needle)


def test_class_defaults_by_hand() -> None:
    """DeepseekV4Config() (43 layers: 20 CSA, 23 HCA; one key/value head of h_d = 512, indexer keys of d_idx = 128;
    W = 128, m_csa = 4, m_hca = 128) at S = 65,536 = 16,384 · 4 = 512 · 128, bf16, one sequence: a CSA layer keeps
    127 sliding keys, 16,384 entries of 512 + 128 and the overlapping half of its last window, 2 · 4 · (512 + 128)
    (no token waits for a window), its gates, 4 · (512 + 128) of those, in fp32 (transformers 5.24 keeps them so); an
    HCA layer 127 sliding keys and 512 entries of 512."""
    config = {"model_type": "deepseek_v4", "num_hidden_layers": 43, "hidden_size": 4096, "num_attention_heads": 64}
    model = read_config({**config, "vocab_size": 129280}, "defaults")
    result = memory.inference(model.derivation, model.values, "bf16", seq=65536, batch=1)
    csa = 127 * 512 + 16384 * (512 + 128) + 2 * 4 * (512 + 128)
    hca = 127 * 512 + 512 * 512
    kinds = {k.kind: (k.layers, k.bytes) for k in result.per_layer_kind}
    gates = 4 * (512 + 128)
    assert kinds == {CSA: (20, 20 * (2 * (csa - gates) + 4 * gates)), HCA: (23, 2 * 23 * hca)}


RECORD = {
    "model_type": "x",
    "title": "x",
    "symbols": {"N": "num_hidden_layers", "d": "hidden_size"},
    "terms": [{"path": "attention/q_proj", "expr": "d*d", "layers": "N"}],
}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"cache": [{"name": "k", "layers": "N", "expr": "B*S*d"}]}, "elements of one sequence, without B"),
        ({"cache": [{"name": "k", "layers": "N", "expr": "S*d", "per": "token"}]}, r"unknown fields \['per'\]"),
        ({"cache": [{"name": "k", "layers": "N", "expr": "max(S, d)"}]}, "is not allowed in a formula"),
        ({"cache": [{"name": "k", "layers": "N", "expr": "min(S, d, 2)"}]}, "is not allowed in a formula"),
        ({"flops": [{"path": "attention/x", "expr": "2*B*S*d", "causal": "2*B*S*q"}]}, "'q' is not a glossary symbol"),
    ],
)
def test_cache_and_causal_fields_are_checked(table: dict, message: str) -> None:
    from llmcount.formulas.records import RecordError, parse_record

    with pytest.raises(RecordError, match=message):
        parse_record({**RECORD, **table}, "x.toml")


def test_gpu_memory_is_refused_where_the_cache_shrinks(tmp_path) -> None:
    """The compressed layers release the tokens of a window when it fills (at S = 11 an HCA layer of m_hca = 4 holds
    2 entries and 3 tokens' keys and gates, at S = 12 3 entries): the search for the longest S that fits is refused
    by name; a config whose layers all slide is searched."""
    model = read_config(CONFIGS["mixed"], "test")
    at = {s: memory.inference(model.derivation, model.values, "fp32", seq=s).bytes_of("kv_cache") for s in (11, 12)}
    assert at[12] < at[11]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["mixed"]))
    assert_refused(run("memory", str(path), "--gpu-memory", "80GiB"), "--gpu-memory is not derived for DeepSeek-V4")
    path.write_text(json.dumps(CONFIGS["sliding"]))
    assert run("memory", str(path), "--gpu-memory", "80GiB").exit_code == 0


def test_the_write_up_counts_the_compressed_scores_as_attention(tmp_path) -> None:
    """The scores over compressed entries and the indexer's grow with S: the write-up counts them with the attention
    scores and values, and gives the cache of one sequence at S as memory does."""
    from llmcount.renderers.writeup import flops_part, memory_part

    model = read_config(CONFIGS["mixed"], "test")
    part = flops_part(model, seq=13)
    components = Flops(model.derivation).evaluate(model.values, 13, 1).components
    scores = sum(c.flops for c in components if "scores" in c.path or "values" in c.path)
    assert part.attention == scores // 13 and part.head == 2 * 16 * 40
    kv = memory_part(model, seq=13)
    assert kv.grown and kv.kv_seq_bytes == memory.inference(model.derivation, model.values, seq=13).bytes_of("kv_cache")
