"""Discovery's failure class of widths: a share of one key by another rounded down or up (XMOD's adapter width
``hidden_size // adapter_reduction_factor``), which no polynomial and no exact quotient gives."""

from __future__ import annotations

import math
import random

from llmcount.discover import fit
from llmcount.formulas.expressions import formula
from llmcount.formulas.symbols import BY_NAME

d, r, h = (BY_NAME[name].symbol for name in ("d", "h_kv", "h"))  # three glossary symbols, so the text reads back


def _points(rule, seed: int = 0):
    rng = random.Random(seed)
    out = []
    for _ in range(18):
        v = {d: 6 * rng.randint(2, 9), r: rng.randint(2, 9), h: rng.randint(1, 4)}
        out.append((v, rule(v)))
    return out


def test_a_rounded_down_share_is_fitted() -> None:
    points = _points(lambda v: v[d] // v[r])  # by hand: XmodAdapter's bottleneck, hidden_size // reduction_factor
    assert fit.polynomial(points, [d, r]) is None
    assert fit.quotient(points, [d, r]) is None
    found = fit.rounded(points, [d, r])
    assert found is not None
    fresh = _points(lambda v: v[d] // v[r], seed=1)
    assert all(found.subs(v) == y for v, y in fresh)


def test_a_rounded_up_share_times_another_key_is_fitted_and_read_back() -> None:
    def rule(v):
        return v[h] * -(-v[d] // v[r])  # by hand: h heads of ceil(d / r)

    found = fit.rounded(_points(rule), [d, r, h])
    assert found is not None
    text = str(found).replace(" ", "").replace("ceiling(", "ceil(")  # as the draft writes it
    assert "ceil(" in text
    parsed = formula(text, "test")
    assert all(parsed.subs(v) == y for v, y in _points(rule, seed=2))


def test_a_rounded_share_of_a_product_is_fitted() -> None:
    def rule(v):
        return v[h] * v[d] // v[r]  # by hand: DeepSeek-V4's o_a_proj input, num_heads * head_dim // o_groups

    points = _points(rule)
    assert fit.quotient(points, [d, r, h]) is None  # not exact: h * d is not always a multiple of r
    found = fit.rounded(points, [d, r, h])
    assert found is not None
    assert all(found.subs(v) == y for v, y in _points(rule, seed=3))


def test_a_product_is_fitted_when_a_key_takes_only_two_values() -> None:
    # LongCat-Flash's q_b_proj: num_attention_heads * qk_head_dim, with the heads drawn 2 or 3 only (h² and h cannot be
    # told apart by such samples: the fit keeps the lower monomials and is still exact)
    rng = random.Random(4)
    points = []
    for _ in range(18):
        v = {h: rng.choice([2, 3]), d: 4 * rng.randint(2, 40)}
        points.append((v, v[h] * v[d]))  # by hand: h heads of d
    assert fit.polynomial(points, [d, h]) == h * d


def test_a_default_that_is_the_sum_of_two_keys() -> None:
    # LongcatFlashConfig: qk_head_dim, when None, is qk_nope_head_dim + qk_rope_head_dim (by hand, its __post_init__)
    rng = random.Random(5)
    points = []
    for _ in range(4):
        v = {d: 8 * rng.randint(2, 20), r: 8 * rng.randint(2, 20), h: rng.randint(1, 4)}
        points.append((v, v[d] + v[r]))
    text = fit.derived(points, [h, d, r])
    assert text == "d + h_kv"
    assert all(formula(text, "test").subs(v) == y for v, y in points)


def _pair(rule, seed: int, step: int = 8):
    """18 samples of a width in two keys: ``m`` a multiple of ``step``, ``x`` another size."""
    rng = random.Random(seed)
    out = []
    for _ in range(18):
        v = {r: step * rng.randint(2, 9), d: step * rng.randint(2, 9)}
        out.append((v, rule(v)))
    return out


def test_a_fraction_rounded_down_then_up_to_a_multiple_of_a_key_is_fitted_and_read_back() -> None:
    def rule(v):  # by hand, Lfm2MLP (transformers 5.24): int(2 * ff / 3) rounded up to a multiple of block_multiple_of
        inner = int(2 * v[d] / 3)
        return v[r] * ((inner + v[r] - 1) // v[r])

    points = _pair(rule, 6)
    assert fit.polynomial(points, [d, r]) is None
    assert fit.rounded(points, [d, r]) is None
    found = fit.multiple(points, [d, r])
    assert found is not None
    text = str(found).replace(" ", "").replace("ceiling(", "ceil(")  # as the draft writes it
    parsed = formula(text, "test")
    assert all(parsed.subs(v) == y for v, y in _pair(rule, 7))


def test_a_size_times_a_float_default_rounded_as_python_rounds_a_float_is_fitted() -> None:
    def rule(v):  # by hand, xLSTM's round_up_to_next_multiple_of(hidden_size * 2.667, 64): int(((x + m - 1) // m) * m)
        return int(((v[d] * 2.667 + v[r] - 1) // v[r]) * v[r])

    points = _pair(rule, 8, step=6)
    found = fit.multiple(points, [d, r], fit.fractions([2.667]))  # the config's float first: not 8/3, alike here
    assert found is not None
    assert "2667" in str(found)
    # d=24, m=8 (by hand: 24 * 2.667 = 64.008; (64.008 + 7) // 8 * 8 = 64, where a ceiling would give 72)
    assert found.subs({d: 24, r: 8}) == 64 == rule({d: 24, r: 8})
    assert all(found.subs(v) == y for v, y in _pair(rule, 9, step=6))


def test_a_width_in_the_integer_root_of_a_key_is_fitted() -> None:
    # by hand, DogeCDMoE (transformers 5.24): num_keys = int(math.sqrt(num_experts)); router_gate has 2 * num_keys rows
    rng = random.Random(10)
    points = []
    for _ in range(18):
        v = {r: rng.randint(2, 200), d: 4 * rng.randint(2, 9)}
        points.append((v, 2 * math.isqrt(v[r]) * v[d]))
    assert fit.polynomial(points, [d, r]) is None
    found = fit.root(points, [d, r])
    assert found is not None
    expr, key = found
    assert key == r
    root = expr.free_symbols - {d}
    assert len(root) == 1
    assert expr.subs({root.pop(): 7, d: 5}) == 2 * 7 * 5
