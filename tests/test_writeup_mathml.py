"""The MathML of HTML write-ups (renderers/mathml.py) and the SVG chart written without matplotlib (charts.svg_chart).

Expected MathML is written by hand from the MathML Core elements each TeX construct means; the pages as a browser
shows them are checked in test_writeup_html.py."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from llmcount.errors import LlmcountError
from llmcount.renderers.html import cut_math
from llmcount.renderers.mathml import mathml
from llmcount.renderers.writeup import build

SPECS = ("qwen3-32b", "qwen3-235b-a22b", "deepseek-v3", "gemma-2-2b")


def inner(tex: str, display: bool = False) -> str:
    """The MathML of ``tex`` without the <math>/<semantics> wrapper and the TeX annotation."""
    out = mathml(tex, display)
    return re.fullmatch(
        r'<math display="\w+"><semantics>(.*)<annotation [^>]*>.*</annotation></semantics></math>', out, re.S
    ).group(1)


@pytest.mark.parametrize(
    ("tex", "expected"),
    [
        (r"d_{\mathrm{ff}}", '<msub><mi>d</mi><mi mathvariant="normal">ff</mi></msub>'),
        (r"r_q", "<msub><mi>r</mi><mi>q</mi></msub>"),
        (r"P_{\mathrm{layer,act}}", '<msub><mi>P</mi><mi mathvariant="normal">layer,act</mi></msub>'),
        ("2{,}498{,}560", "<mn>2,498,560</mn>"),
        (r"\frac{a}{2}", "<mfrac><mi>a</mi><mn>2</mn></mfrac>"),
        (r"3\,d", '<mrow><mn>3</mn><mspace width="0.1667em"></mspace><mi>d</mi></mrow>'),
        (r"N - 1", "<mrow><mi>N</mi><mo>\u2212</mo><mn>1</mn></mrow>"),
        (r"a \times b \cdot c", "<mrow><mi>a</mi><mo>×</mo><mi>b</mi><mo>⋅</mo><mi>c</mi></mrow>"),
        (r"x \approx 1.19", "<mrow><mi>x</mi><mo>≈</mo><mn>1.19</mn></mrow>"),
        (r"W^\top", "<msup><mi>W</mi><mo>⊤</mo></msup>"),
        (r"x_{i}^{2}", "<msubsup><mi>x</mi><mi>i</mi><mn>2</mn></msubsup>"),
        (
            r"\left\lfloor d/h \right\rfloor",
            '<mrow><mo fence="true" stretchy="true" symmetric="false">⌊</mo><mi>d</mi>'
            '<mo>/</mo><mi>h</mi><mo fence="true" stretchy="true" symmetric="false">⌋</mo></mrow>',
        ),
        (r"8 \lceil P/256 \rceil", "<mrow><mn>8</mn><mo>⌈</mo><mi>P</mi><mo>/</mo><mn>256</mn><mo>⌉</mo></mrow>"),
        (r"\hat{y}", '<mover accent="true"><mi>y</mi><mo>^</mo></mover>'),
        (r"\mathit{in}", "<mi>\U0001d456\U0001d45b</mi>"),  # mathematical italic i, n
        (r"\text{ per token}", "<mtext>\u00a0per\u00a0token</mtext>"),
        (r"\text{<b>&}", "<mtext>&lt;b&gt;&amp;</mtext>"),
        (r"\left(a\right.", '<mrow><mo fence="true" stretchy="true" symmetric="false">(</mo><mi>a</mi></mrow>'),
    ],
)
def test_tex_to_mathml(tex, expected):
    assert inner(tex) == expected


def test_aligned_block_is_a_table_of_rows_and_cells():
    tex = "\n\\begin{aligned}\nP &= a \\\\\n &= 2\n\\end{aligned}\n"
    assert inner(tex, True) == (
        '<mtable class="aligned"><mtr><mtd><mi>P</mi></mtd><mtd><mrow><mo>=</mo><mi>a</mi></mrow></mtd></mtr>'
        "<mtr><mtd><mrow></mrow></mtd><mtd><mrow><mo>=</mo><mn>2</mn></mrow></mtd></mtr></mtable>"
    )
    out = mathml(tex, True)
    assert out.startswith('<math display="block">')
    assert '<annotation encoding="application/x-tex">\\begin{aligned}' in out  # the TeX, for copying


@pytest.mark.parametrize(
    ("tex", "needle"),
    [(r"\oint x", r"\oint"), (r"\begin{matrix}a\end{matrix}", "matrix"), ("a & b", "&"), ("{a", "missing }")],
)
def test_tex_it_does_not_know_is_refused_by_name(tex, needle):
    with pytest.raises(LlmcountError, match=re.escape(needle)):
        mathml(tex)


def test_nesting_is_bounded():
    with pytest.raises(LlmcountError, match="nested too deep"):
        mathml("{" * 500 + "}" * 500)


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_formula_of_a_post_is_mathml_with_no_tex_left(spec, lang):
    _, spans = cut_math(build(spec, "markdown", lang, sections="all").text)
    assert len(spans) > 50
    for span in spans:
        body = inner(span.tex, span.display)
        ET.fromstring(f"<math>{body}</math>")  # well-formed
        assert "\\" not in body and "{" not in body and "$" not in body, (span.tex, body)


def test_every_preset_and_the_training_section_render_as_mathml():
    """Each preset's post and the training section (flash attention, LoRA, 8-bit and Muon states) in MathML:
    a command the templates or sympy's printer bring that the converter does not know fails here."""
    from llmcount.presets import presets
    from llmcount.renderers.writeup_training import Lora, Settings

    posts = [build(name, "markdown", "en", sections="params,flops,memory,attention").text for name in presets()]
    for optimizer, lora in (("adamw8bit", None), ("muon", None), ("adamw", Lora(8, ("q_proj", "v_proj")))):
        settings = Settings(optimizer=optimizer, attention="flash", lora=lora)
        posts.append(build("llama-3-8b", "markdown", "en", sections="training", training=settings).text)
    for text in posts:
        for span in cut_math(text)[1]:
            assert "\\" not in inner(span.tex, span.display), span.tex  # no TeX left, and no refusal


# --- the chart of the page --------------------------------------------------------------------------------------------


def chart_texts(svg: bytes) -> tuple[ET.Element, list[str]]:
    root = ET.fromstring(svg)
    return root, [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]


def test_svg_chart_of_an_moe_model_has_both_bars_and_a_wrapped_title():
    from llmcount.renderers.charts import SVG_PAD, SVG_WIDTH, svg_chart, text_width
    from llmcount.sources import load

    root, texts = chart_texts(svg_chart([load("deepseek-v3")], activated=True))
    # DeepSeek-V3: 671,026,404,352 parameters (its safetensors index), 37.55B activated per token
    assert "DeepSeek-V3 · 671.03B" in texts and "DeepSeek-V3 · activated per token · 37.55B" in texts
    # the norms: 2·N·d + d = 881,664 of 671,026,404,352 = 0.00013%, named whole under the bar
    assert any("Norms 0.00013%" in t for t in texts)
    title = " ".join(t for t in texts[:3] if t.startswith("Where") or not t[0].isupper())
    assert root.get("aria-label") == "Where the parameters sit: total, and activated per token"
    assert title.startswith("Where the parameters sit")
    for text, element in zip(texts, root.iter("{http://www.w3.org/2000/svg}text"), strict=True):
        size = float(element.get("font-size"))
        start = float(element.get("x"))
        anchor = element.get("text-anchor", "start")
        left = {"start": start, "middle": start - text_width(text, size) / 2, "end": start - text_width(text, size)}
        assert left[anchor] >= 0 and left[anchor] + text_width(text, size) <= SVG_WIDTH + SVG_PAD, text


def test_svg_chart_is_chinese_and_escapes_names(tmp_path):
    import json

    from llmcount.presets import presets
    from llmcount.renderers.charts import svg_chart
    from llmcount.sources import load

    folder = tmp_path / "<b>&x"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(presets()["qwen3-0.6b"].config()))
    svg = svg_chart([load(str(folder))], lang="zh")
    _, texts = chart_texts(svg)  # well-formed XML: the name went in escaped
    assert b"<b>" not in svg and any("<b>&x" in t for t in texts)
    assert any("参数量分布" in t for t in texts) and any("注意力" in t for t in texts)


@pytest.mark.parametrize("width", [60, 100, 140, 200])
def test_chart_words_wrap_within_the_width_and_never_start_a_line_with_closing_punctuation(width):
    from llmcount.renderers.charts import text_width, wrap

    for text in (
        "参数量分布：总参数量与每 token 激活参数量",
        "混合专家（路由专家、共享专家、路由器）",
        "Where the parameters sit",
    ):
        lines = wrap(text, width, 13)
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")  # nothing lost
        assert all(text_width(line, 13) <= width or len(line) == 1 for line in lines), lines
        assert not any(line[0] in "，。：；）、" for line in lines), lines
