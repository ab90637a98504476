"""The write-ups through the real tools: every math span of the Markdown parses in KaTeX, and the LaTeX
articles (English, and Chinese with CJKutf8) compile with pdflatex.

The tools come from .ci/run (npm ci for KaTeX, Debian's texlive for pdflatex). Without them the tests skip
on a developer's machine, but fail in CI (CI is set there), so they can never be skipped silently."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from llmcount.formulas import records
from llmcount.formulas.derivation import Derivation
from llmcount.renderers import render_formula
from llmcount.renderers.writeup import build

ROOT = Path(__file__).resolve().parent.parent
PRESETS = ("qwen3-32b", "qwen3-235b-a22b", "deepseek-v3")  # dense, MoE, MLA
MORE = ("gpt2", "qwen2.5-7b", "qwen3-0.6b", "mixtral-8x7b", "deepseek-v2-lite", "llama-2-7b")
MORE += ("gpt-neox-20b", "opt-125m", "qwen3-next-80b-a3b", "gemma-2-2b")  # sections told from the records' notes
BOTH = ("qwen3-next-80b-a3b", "mistral-7b", "gemma-2-2b")  # hybrid layers, a sliding window, no [attention]: flops
# and memory sections with their refusals and window sentences, in both languages


def mamba2(folder: Path) -> str:
    """A Mamba-2 config (no attention layer) in ``folder``: its FLOPs section has only state layers."""
    path = folder / "mamba2" / "config.json"
    path.parent.mkdir(exist_ok=True)
    config = {"model_type": "mamba2", "vocab_size": 50288, "hidden_size": 2560, "num_hidden_layers": 64}
    path.write_text(json.dumps({**config, "num_heads": 80, "head_dim": 64, "n_groups": 1, "chunk_size": 256}))
    return str(path)


def require(available: bool, what: str) -> None:
    if available:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing in CI: .ci/run must install it")
    pytest.skip(f"{what} is not installed (see .ci/run)")


def math_spans(markdown: str) -> list[tuple[str, bool]]:
    """Every $$display$$ and $inline$ math span outside code; fails on a stray '$'."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    text = text.replace(r"\$", "")  # an escaped dollar in user text is not math
    spans = [(m.group(1), True) for m in re.finditer(r"\$\$(.+?)\$\$", text, re.S)]
    text = re.sub(r"\$\$(.+?)\$\$", "", text, flags=re.S)
    spans += [(m.group(1), False) for m in re.finditer(r"\$([^$\n]+?)\$", text)]
    stray = re.sub(r"\$([^$\n]+?)\$", "", text)
    assert "$" not in stray, f"unbalanced $ near: {stray[max(0, stray.find('$') - 60) : stray.find('$') + 60]!r}"
    return spans


def katex_failures(spans: list[tuple[str, bool]]) -> list[dict]:
    require(shutil.which("node") is not None and (ROOT / "node_modules" / "katex").is_dir(), "KaTeX (npm ci)")
    payload = json.dumps([{"tex": tex, "display": display} for tex, display in spans])
    done = subprocess.run(
        ["node", str(ROOT / "tests" / "katex_check.js")], input=payload, capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["failures"]


def test_math_span_extraction_finds_both_kinds():
    spans = math_spans("a $x$ b\n$$\ny^2\n$$\n`$not$` and ```\n$no$\n```")
    assert spans == [("\ny^2\n", True), ("x", False)]
    with pytest.raises(AssertionError, match="unbalanced"):
        math_spans("costs $5 only")


def test_katex_rejects_bad_math():
    # the checker must be able to fail: an unknown command and a '%' comment eating a brace
    failures = katex_failures([(r"\notacommand{x}", False), (r"\frac{1}{2", True), ("x", False)])
    assert [f["index"] for f in failures] == [0, 1]


def test_every_math_span_of_the_markdown_parses_in_katex(tmp_path):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 1_503_264_768}, "weight_map": {"lm_head.weight": "a"}}))
    posts = [build(spec, "markdown", lang).text for spec in PRESETS for lang in ("en", "zh")]
    posts += [build(spec, "markdown", "en").text for spec in MORE]
    posts += [build(spec, "markdown", lang).text for spec in BOTH for lang in ("en", "zh")]
    posts += [build("qwen3-0.6b", "markdown", lang, index=str(index)).text for lang in ("en", "zh")]
    posts += [build(mamba2(tmp_path), "markdown", lang, seq=333).text for lang in ("en", "zh")]  # a mean per token
    # `llmcount formula FAMILY --format markdown` goes through the same filters
    posts += [render_formula(Derivation(arch), "markdown", activated=arch.is_moe) for arch in records.families()]
    spans = [span for text in posts for span in math_spans(text)]
    assert len(spans) > 1000
    failures = katex_failures(spans)
    assert not failures, json.dumps(failures[:5], indent=2, ensure_ascii=False)


def pdflatex(folder: Path, name: str, text: str) -> tuple[int, str]:
    (folder / f"{name}.tex").write_text(text, "utf-8")
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"],
        cwd=folder,
        capture_output=True,
        timeout=120,
    )
    log = (folder / f"{name}.log").read_text("latin-1") if (folder / f"{name}.log").exists() else ""
    return done.returncode, log


def compile_all(folder: Path, documents: dict[str, str]) -> None:
    require(shutil.which("pdflatex") is not None, "pdflatex (texlive-latex-base)")
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(documents, pool.map(lambda item: pdflatex(folder, *item), documents.items()), strict=True))
    for name, (code, log) in results.items():
        errors = [line for line in log.splitlines() if line.startswith("!")]
        assert code == 0, f"{name}.tex does not compile: {errors[:3]}"
        assert "Missing character" not in log, f"{name}: a glyph is missing from the font"
        assert "LaTeX Warning" not in log, f"{name}: {[w for w in log.splitlines() if 'LaTeX Warning' in w][:3]}"
        assert (folder / f"{name}.pdf").stat().st_size > 10_000


def test_latex_write_ups_compile_with_pdflatex(tmp_path):
    documents = {f"{spec}-{lang}": build(spec, "latex", lang).text for spec in PRESETS for lang in ("en", "zh")}
    documents["gpt2-en"] = build("gpt2", "latex", "en").text
    documents["qwen3-next-zh"] = build("qwen3-next-80b-a3b", "latex", "zh").text  # hybrid layers, notes
    documents["mistral-zh"] = build("mistral-7b", "latex", "zh").text  # sliding-window KV cache
    documents["qwen3-next-en"] = build("qwen3-next-80b-a3b", "latex", "en").text  # FLOPs of linear attention
    documents["mamba2-en"] = build(mamba2(tmp_path), "latex", "en", seq=333).text  # state layers only, a fraction
    compile_all(tmp_path, documents)


def test_latex_escapes_user_text_so_that_it_compiles(tmp_path):
    from llmcount.presets import presets

    folder = tmp_path / "my_model 100% #1 & $x$ {y} ~^"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(presets()["deepseek-v2-lite"].config()))
    out = tmp_path / "out"
    out.mkdir()
    compile_all(
        out, {"odd-en": build(str(folder), "latex", "en").text, "odd-zh": build(str(folder), "latex", "zh").text}
    )


def test_latex_with_chart_and_verification_compiles(tmp_path):
    pytest.importorskip("matplotlib")
    from llmcount.renderers.writeup import save

    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 1_503_264_768}, "weight_map": {"lm_head.weight": "a"}}))
    post = build(
        "qwen3-0.6b",
        "latex",
        "zh",
        output=str(tmp_path / "post.tex"),
        chart=str(tmp_path / "shares.png"),
        index=str(index),
    )
    save(post.files)
    assert r"\includegraphics[width=\linewidth]{shares.png}" in post.text
    compile_all(tmp_path, {"post": post.text})
