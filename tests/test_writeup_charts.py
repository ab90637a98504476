"""`llmcount chart` and `writeup --chart`: real image files (matplotlib), exact shares, the install hint."""

from __future__ import annotations

import json
import sys

import pytest
from refusal import assert_refused
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.renderers.charts import bars
from llmcount.sources import load

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


def test_bars_hold_exact_shares():
    dense, moe = load("qwen3-32b"), load("qwen3-235b-a22b")
    total, moe_total, moe_activated = bars([dense, moe], activated=True)  # a dense model gets no activated bar
    assert moe_total.label == "Qwen3-235B-A22B" and moe_total.total == 235_093_634_560  # the model's name, not the id
    assert moe_activated.label == "Qwen3-235B-A22B, activated per token" and moe_activated.activated
    assert sum(share for _, _, share in total.segments) == 1
    assert sum(n for _, n, _ in moe_activated.segments) == moe.counts.activated
    # Qwen3-32B's MLP: 3·N·d·d_ff = 3 · 64 · 5120 · 25600 of 32,762,123,264
    assert dict((key, n) for key, n, _ in total.segments)["mlp"] == 3 * 64 * 5120 * 25600
    assert "head" not in dict((key, n) for key, n, _ in bars([load("qwen3-0.6b")])[0].segments)  # tied: no slice


@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF")])
def test_chart_writes_an_image(tmp_path, suffix, magic):
    pytest.importorskip("matplotlib")
    target = tmp_path / f"dense{suffix}"
    result = run("chart", "qwen3-0.6b", "qwen3-8b", "qwen3-32b", "-o", str(target))
    assert result.exit_code == 0, result.output
    assert target.read_bytes().startswith(magic) and target.stat().st_size > 5_000
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_chart_json_and_activated_bars(tmp_path):
    pytest.importorskip("matplotlib")
    result = run("chart", "qwen3-30b-a3b", "qwen3-235b-a22b", "--activated", "-o", str(tmp_path / "moe.png"), "--json")
    data = json.loads(result.stdout)
    assert [b["label"] for b in data["bars"]] == [
        "Qwen3-30B-A3B",
        "Qwen3-30B-A3B, activated per token",
        "Qwen3-235B-A22B",
        "Qwen3-235B-A22B, activated per token",
    ]
    assert data["bars"][2]["total"] == 235_093_634_560


def test_writeup_links_its_chart(tmp_path):
    pytest.importorskip("matplotlib")
    (tmp_path / "img").mkdir()
    post = tmp_path / "post.md"
    result = run("writeup", "deepseek-v3", "-o", str(post), "--chart", str(tmp_path / "img" / "shares.svg"))
    assert result.exit_code == 0, result.output
    text = post.read_text("utf-8")
    assert "![Parameter shares of DeepSeek-V3](img/shares.svg)" in text
    assert "```mermaid" not in text  # the image replaces the pie: one chart, not two
    assert (tmp_path / "img" / "shares.svg").read_bytes().startswith(b"<?xml")


def test_chart_without_matplotlib_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    result = run("chart", "qwen3-32b", "-o", str(tmp_path / "c.png"))
    assert result.exit_code == 1 and result.stdout == ""
    assert "pip install 'llmcount[plot]'" in result.stderr
    result = run("writeup", "qwen3-32b", "--chart", str(tmp_path / "c.png"), "-o", str(tmp_path / "p.md"))
    assert "pip install 'llmcount[plot]'" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("target", "needle"),
    [("nope/c.png", "does not exist"), ("c.gif", "choose one of .png, .svg, .pdf"), ("c", "choose one of")],
)
def test_chart_bad_output(tmp_path, target, needle):
    result = run("chart", "qwen3-32b", "-o", str(tmp_path / target))
    assert result.exit_code == 1 and result.stdout == "" and needle in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_chart_unknown_model(tmp_path):
    result = run("chart", "qwen3-32b", "qwen9", "-o", str(tmp_path / "c.png"))
    assert result.exit_code == 1 and "unknown preset 'qwen9'" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_chart_through_a_symlink_writes_its_target(tmp_path):
    pytest.importorskip("matplotlib")
    real, link = tmp_path / "real.bin", tmp_path / "chart.svg"  # the type is the name asked for
    link.symlink_to(real.name)
    assert run("chart", "qwen3-8b", "-o", str(link)).exit_code == 0
    assert link.is_symlink() and real.read_bytes().startswith(b"<?xml")


def test_writeup_chart_through_a_symlink_and_post_into_a_fifo(tmp_path, monkeypatch):
    import os
    import stat
    import threading

    pytest.importorskip("matplotlib")
    real, link, fifo = tmp_path / "real.svg", tmp_path / "shares.svg", tmp_path / "pipe"
    real.write_bytes(b"old")
    link.symlink_to(real.name)
    os.mkfifo(fifo)
    monkeypatch.chdir(tmp_path)  # a post written into a FIFO links its chart from the current folder
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text("utf-8")), daemon=True)
    reader.start()
    result = run("writeup", "qwen3-8b", "-o", str(fifo), "--chart", str(link))
    reader.join(timeout=60)
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and real.read_bytes().startswith(b"<?xml") and stat.S_ISFIFO(fifo.lstat().st_mode)
    assert "\n![Parameter shares of Qwen3-8B](real.svg)\n" in got[0]


def svg_texts(svg: bytes) -> list[str]:
    import html
    import re

    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg.decode("utf-8"))]


def test_chinese_chart_speaks_chinese(tmp_path):
    pytest.importorskip("matplotlib")
    from llmcount.renderers.charts import cjk_font

    try:
        cjk_font()
    except Exception:
        pytest.skip("no CJK font (apt-get install fonts-noto-cjk)")
    target = tmp_path / "moe.svg"
    result = run("chart", "qwen3-30b-a3b", "deepseek-v3", "--activated", "--lang", "zh", "-o", str(target))
    assert result.exit_code == 0, result.output
    svg = target.read_bytes()
    texts = svg_texts(svg)  # svg.fonttype none: the words are text, not paths
    assert "参数量分布：总参数量与每 token 激活参数量" in texts
    assert "占参数量的比例（%）" in texts
    for legend in ("词嵌入", "注意力", "混合专家（路由专家、共享专家、路由器）", "归一化", "输出层（LM head）"):
        assert legend in texts, legend
    assert "每 token 激活" in texts and "Qwen3-30B-A3B" in texts and "DeepSeek-V3" in texts
    assert not any(t in texts for t in ("Token embedding", "Attention", "Norms", "qwen3-30b-a3b"))
    assert "Noto Sans CJK" in svg.decode("utf-8")


def test_english_chart_text_is_searchable(tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "dense.svg"
    assert run("chart", "qwen3-0.6b", "qwen3-32b", "-o", str(target)).exit_code == 0
    texts = svg_texts(target.read_bytes())
    assert "Where the parameters sit, by component" in texts
    assert {"Qwen3-0.6B", "Qwen3-32B", "Token embedding", "LM head", "MLP"} <= set(texts)
    # Qwen3-32B's MLP: 3·64·5120·25600 / 32,762,123,264 = 76.81%
    assert "76.81%" in texts


def test_chinese_chart_without_a_cjk_font_says_what_to_install(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib import font_manager

    monkeypatch.setattr(
        font_manager.fontManager, "ttflist", [f for f in font_manager.fontManager.ttflist if "CJK" not in f.name]
    )
    monkeypatch.setattr(font_manager, "findSystemFonts", lambda *a, **k: [])
    result = run("chart", "qwen3-32b", "--lang", "zh", "-o", str(tmp_path / "c.svg"))
    assert_refused(result, "CJK", "fonts-noto-cjk")
    result = run(
        "writeup", "qwen3-32b", "--lang", "zh", "-o", str(tmp_path / "p.md"), "--chart", str(tmp_path / "c.svg")
    )
    assert_refused(result, "fonts-noto-cjk")
    assert list(tmp_path.iterdir()) == []


def test_a_dollar_in_a_name_is_a_dollar_sign(tmp_path):
    pytest.importorskip("matplotlib")
    from llmcount.presets import presets

    folder = tmp_path / "cost $5 model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(presets()["qwen3-0.6b"].config()))
    target = tmp_path / "c.svg"
    assert run("chart", str(folder), "-o", str(target)).exit_code == 0
    assert any("cost $5 model" in t for t in svg_texts(target.read_bytes()))


def test_chart_of_a_hybrid_family_names_its_new_component(tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "next.svg"
    assert run("chart", "qwen3-next-80b-a3b", "-o", str(target)).exit_code == 0
    assert "Linear attention" in svg_texts(target.read_bytes())


@pytest.mark.parametrize("failing", ["post.md", "shares.svg"])
def test_a_failed_write_of_either_file_leaves_neither(tmp_path, monkeypatch, failing):
    import os

    pytest.importorskip("matplotlib")
    real_replace = os.replace

    def replace(src, dst):
        if str(dst).endswith(failing):
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    post, image = tmp_path / "post.md", tmp_path / "shares.svg"
    result = run("writeup", "qwen3-32b", "-o", str(post), "--chart", str(image))
    assert_refused(result, failing, "No space left")
    # whichever was renamed into place first is gone again, or was never placed: no post without its chart
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_long_title_is_wrapped_inside_a_narrow_chart():
    pytest.importorskip("matplotlib")
    from llmcount.renderers.charts import render_chart
    from llmcount.sources import load

    svg = render_chart([load("deepseek-v3")], "svg", activated=True, width=6).decode()
    # 6 inches cannot hold the title on one line beside the bar labels: it is broken, not cut at the edge
    assert "Where the parameters sit: total, and" in svg
    assert "Where the parameters sit: total, and activated per token" not in svg
