"""Attention FLOPs of sliding-window and chunked layers under ``--causal``: the query-key pairs inside the window
(or the chunk), counted here by enumerating the pairs a mask keeps and by hand for Mistral-7B."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcount.formulas.derivation import evaluate_int
from llmcount.formulas.flops import Flops, chunk_pairs, window_pairs
from llmcount.formulas.symbols import S, W
from llmcount.sources import load

MISTRAL_LAYERS, MISTRAL_HEADS, MISTRAL_HEAD_DIM, MISTRAL_WINDOW = 32, 32, 128, 4096  # Mistral-7B v0.1 config.json


def pairs_kept(seq: int, keep) -> int:
    return sum(1 for q in range(seq) for key in range(seq) if keep(q, key))


@settings(deadline=None)  # the first call builds sympy's caches
@given(seq=st.integers(1, 40), window=st.integers(1, 40))
def test_window_pairs_are_the_pairs_a_sliding_mask_keeps(seq, window):
    # a query at q sees the keys in (q - W, q]: itself and the W - 1 before it
    expected = pairs_kept(seq, lambda q, key: q - window < key <= q)
    assert evaluate_int(window_pairs(W), {S: seq, W: window}, "pairs") == expected


@settings(deadline=None)
@given(seq=st.integers(1, 40), chunk=st.integers(1, 40))
def test_chunk_pairs_are_the_pairs_a_chunked_mask_keeps(seq, chunk):
    # a query sees the keys of its own chunk up to itself
    expected = pairs_kept(seq, lambda q, key: key <= q and key // chunk == q // chunk)
    assert evaluate_int(chunk_pairs(W), {S: seq, W: chunk}, "pairs") == expected


def attention_flops(model, seq: int, causal: bool) -> int:
    counts = Flops(model.derivation, causal=causal).evaluate(model.values, seq, 1)
    return sum(c.flops for c in counts.components if c.path.startswith(("attention/scores", "attention/values")))


def per_pair(layers: int = MISTRAL_LAYERS) -> int:
    """Q·K^T and A·V of one query-key pair in every layer: 2 matmuls × 2 FLOPs × h·h_d."""
    return layers * 2 * 2 * MISTRAL_HEADS * MISTRAL_HEAD_DIM


def test_mistral_7b_causal_attention_counts_the_window():
    # S = 8192 over W = 4096: the first 4096 queries see 1..4096 keys, the other 4096 queries 4096 keys each
    pairs = 4096 * 4097 // 2 + 4096 * 4096
    assert pairs == 25_167_872
    assert attention_flops(load("mistral-7b"), 8192, causal=True) == pairs * per_pair() == 13_195_213_275_136


def test_a_sequence_within_the_window_is_plain_causal():
    seq = 1000  # < W: every query sees all keys before it
    assert attention_flops(load("mistral-7b"), seq, causal=True) == seq * (seq + 1) // 2 * per_pair()


def test_eager_attention_computes_the_full_matrix_on_sliding_layers_too():
    seq = 8192
    assert attention_flops(load("mistral-7b"), seq, causal=False) == seq * seq * per_pair()


@pytest.mark.parametrize("window", [None, 8192])
def test_no_window_or_a_window_past_the_sequence_is_plain_causal(tmp_path, window):
    import json

    from llmcount.presets import find

    config = {**find("mistral-7b").config(), "sliding_window": window}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    seq = 6000
    assert attention_flops(load(str(path)), seq, causal=True) == seq * (seq + 1) // 2 * per_pair()


def test_gpt_oss_120b_causal_attention_by_layer_kind():
    # gpt-oss-120b: 36 layers alternating sliding (W = 128) and full, 64 heads of 64 (config.json)
    seq, window, per_pair_layer = 8192, 128, 2 * 2 * 64 * 64  # Q·K^T and A·V, 2 FLOPs a multiply-add
    full_pairs = seq * (seq + 1) // 2
    sliding_pairs = window * (window + 1) // 2 + (seq - window) * window  # 8,256 + 1,032,192
    assert sliding_pairs == 1_040_448
    expected = 18 * (full_pairs + sliding_pairs) * per_pair_layer
    assert attention_flops(load("gpt-oss-120b"), seq, causal=True) == expected


def test_no_rows_for_a_kind_of_layer_the_model_does_not_have(tmp_path):
    import json

    from refusal import run

    from llmcount.presets import find

    # mistral-7b: every layer slides, so --causal has no full-layer rows (they would be 0: N - N_sliding = 0 layers)
    result = run("flops", "mistral-7b", "--causal", "--seq", "8192", "--json")
    paths = [c["path"] for c in json.loads(result.stdout)["components"]]
    assert "attention/scores/sliding" in paths and "attention/scores" not in paths and "attention/values" not in paths
    assert "attention/scores " not in run("flops", "mistral-7b", "--causal", "--seq", "8192").stdout
    # no window in the config: no layer slides, so no sliding rows
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**find("mistral-7b").config(), "sliding_window": None}))
    paths = [c["path"] for c in json.loads(run("flops", str(path), "--causal", "--json").stdout)["components"]]
    assert "attention/scores" in paths and not any(p.endswith("/sliding") for p in paths)
    # gpt-oss-120b has both kinds: both rows stay, each non-zero
    data = json.loads(run("flops", "gpt-oss-120b", "--causal", "--seq", "8192", "--json").stdout)
    rows = {c["path"]: c["flops"] for c in data["components"]}
    assert rows["attention/scores"] > 0 and rows["attention/scores/sliding"] > 0


def test_sliding_layers_of_their_own_widths_get_their_own_rows():
    """A record whose sliding layers have other query/value widths (``sliding_qk``, ``sliding_v``): the eager count
    splits scores and values per kind, 2·S·width per token on each, and --causal counts the window at their widths."""
    from llmcount.formulas.flops import score_flops
    from llmcount.formulas.records import _attention
    from llmcount.formulas.symbols import N, N_sliding, h, h_d

    spec = _attention(
        {"layers": "N", "qk": "h*h_d", "v": "h*h_d", "kv": "2*h_d", "window": "W", "sliding": "N_sliding"}
        | {"sliding_qk": "2*h*h_d", "sliding_v": "3*h*h_d"},
        "test",
    )
    eager = {t.path: (t.layers, t.per_token) for t in score_flops(spec, causal=False)}
    assert eager == {
        "attention/scores": (N - N_sliding, 2 * S * h * h_d),
        "attention/values": (N - N_sliding, 2 * S * h * h_d),
        "attention/scores/sliding": (N_sliding, 4 * S * h * h_d),
        "attention/values/sliding": (N_sliding, 6 * S * h * h_d),
    }
    causal = {t.path: t.per_token for t in score_flops(spec, causal=True)}
    assert causal["attention/values/sliding"] == 2 * window_pairs(W) / S * 3 * h * h_d
