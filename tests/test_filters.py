"""The renderer filters are plain functions; each is checked on hand-made inputs."""

import pytest
from sympy import Rational

from llmcount.formulas.symbols import N, N_dense, V, d, d_ff, h, h_d, h_kv
from llmcount.renderers import filters


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (32_762_123_264, "32.76B"),
        (124_439_808, "124.44M"),
        (671_026_404_352, "671.03B"),
        (1_234_567_890_123, "1.23T"),
        (4_096_000_000_000_000_000_000, "4.10e+21"),
        (-(10**12), "-1.00T"),
        (5_120, "5.12K"),
        (999, "999"),
        (0, "0"),
    ],
)
def test_count_human_form(value, expected):
    assert filters.count(value) == expected


def test_digit_grouping_plain_and_latex():
    assert filters.grouped(32_762_123_264) == "32,762,123,264"
    assert filters.latex_int(32_762_123_264) == "32{,}762{,}123{,}264"


def test_latex_uses_upright_multi_letter_subscripts_and_thin_spaces():
    out = filters.latex(3 * d * d_ff + 2 * d * h_kv * h_d)
    assert r"d_{\mathrm{ff}}" in out
    assert r"h_{\mathrm{kv}}" in out
    assert r"3\,d\,d_{\mathrm{ff}}" in out
    assert "dd" not in out.replace("\\", "")  # letters never run together


def test_text_form():
    assert filters.text(3 * d * d_ff + Rational(23, 2) * d**2) == "23·d²/2 + 3·d·d_ff"


def test_ceilings_and_floors_read_as_written_in_every_format():
    from sympy import ceiling, floor

    from llmcount.formulas.symbols import S, W

    chunks = 2 * h * ceiling(S / 64) * 64**2 + floor(S / W) * W
    assert filters.text(chunks) == "W·⌊S/W⌋ + 8192·h·⌈S/64⌉"
    assert "ceiling" not in filters.decimal(chunks / 2) and "⌈" in filters.decimal(chunks / 2)
    assert r"\left\lceil" in filters.latex(chunks) and r"\left\lfloor" in filters.latex(chunks)


def test_ordered_sum_keeps_the_given_order():
    groups = [(1, [2 * V * d, d]), (N, [2 * d * h * h_d, 3 * d * d_ff, 2 * d])]
    assert filters.ordered_text(groups) == "2·V·d + d + N(2·d·h·h_d + 3·d·d_ff + 2·d)"
    assert filters.ordered_latex(groups) == (
        r"2\,V\,d + d + N\left(2\,d\,h\,h_{d} + 3\,d\,d_{\mathrm{ff}} + 2\,d\right)"
    )


def test_ordered_sum_brackets_a_sum_of_layers():
    assert filters.ordered_text([(N - N_dense, [d, 2 * d * h])]) == "(N - N_dense)(d + 2·d·h)"
    assert filters.ordered_text([(N_dense, [3 * d * d_ff])]) == "3·N_dense·d·d_ff"


def test_latex_escape_of_user_text():
    assert filters.latex_escape("my_model 100% #1 & $x {y} \\") == (
        r"my\_model 100\% \#1 \& \$x \{y\} \textbackslash{}"
    )


def test_percent_and_table():
    assert filters.percent(1, 3) == "33.33%"
    assert filters.percent(1, 0) == "-"
    assert filters.table([["a", "1"], ["bbb", "22"]], "lr") == "a     1\nbbb  22"


def test_tiny_shares_keep_two_significant_digits():
    from llmcount.renderers.filters import percent

    # DeepSeek-V3's q_a_layernorm: 61 · 1,536 = 93,696 of 671,026,404,352 parameters = 1.396e-5 %
    assert percent(93_696, 671_026_404_352) == "0.000014%"
    assert percent(1, 300) == "0.33%" and percent(0, 5) == "0.00%" and percent(5, 0) == "-"
