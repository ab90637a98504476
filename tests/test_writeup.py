"""The write-up: its numbers are the Derivation's (and the published ones), its substitutions add up,
the prose explains what the family has, the checkpoint check reads an index, bad input is refused."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from fractions import Fraction
from functools import cache

import pytest
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.renderers.writeup import build, leading, save, sections
from llmcount.sources import load

PRESETS = ("qwen3-32b", "qwen3-235b-a22b", "deepseek-v3")  # dense, MoE, MLA (+ shared experts, dense layers)
# Published totals (safetensors metadata / the oracle, see llmcount/presets/index.json):
PUBLISHED = {"qwen3-32b": 32_762_123_264, "qwen3-235b-a22b": 235_093_634_560, "deepseek-v3": 671_026_404_352}


@cache
def post(spec: str, fmt: str = "markdown", lang: str = "en") -> str:
    return build(spec, fmt, lang, sections="all").text  # the long form: every part


def tex_int(n: int) -> str:
    return f"{n:,}".replace(",", "{,}")


def expected_numbers(spec: str) -> dict[str, int]:
    """Counts straight from the Derivation's terms, independently of the write-up code."""
    model = load(spec)
    d, values = model.derivation, model.values
    numbers: dict[str, int] = defaultdict(int)
    for term in d.terms:
        numbers[term.group] += int(term.total.subs(values))
    numbers["total"] = int(d.total.subs(values))
    numbers["activated"] = int(d.activated.subs(values))
    numbers["embedding"] = int(d.embedding.subs(values))
    numbers["non_embedding"] = numbers["total"] - numbers["embedding"]
    return dict(numbers)


@pytest.mark.parametrize("spec", PRESETS)
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fmt", ["markdown", "latex"])
def test_numbers_in_the_text_are_the_derivations(spec, lang, fmt):
    text = post(spec, fmt, lang)
    numbers = expected_numbers(spec)
    assert numbers["total"] == PUBLISHED[spec]
    for name, n in numbers.items():
        assert tex_int(n) in text, f"{name} = {n:,} is not in the {fmt}/{lang} write-up of {spec}"
    assert f"{numbers['total']:,}" in text  # in the prose too, not only in the math


def test_hand_derivation_of_qwen3_32b():
    # Qwen3-32B: d=5120, h=64, h_kv=8, h_d=128, d_ff=25600, N=64, V=151936.
    attention_layer = 2 * 5120 * 64 * 128 + 2 * 5120 * 8 * 128 + 2 * 128  # q,o + k,v + q_norm,k_norm
    layer = attention_layer + 3 * 5120 * 25600 + 2 * 5120
    text = post("qwen3-32b")
    assert tex_int(64 * attention_layer) in text
    assert tex_int(layer) in text  # one layer, exact: 487,598,336
    assert tex_int(layer - 2 * 128 - 2 * 5120) in text  # its leading-order part (the matrices)
    assert "314,572,800" in text and "\u221235.49%" in text  # 12·d² and its relative error (12·5120² vs 487,598,336)
    assert "18.6\\,d^{2}" in text


def test_leading_order_term_is_the_weight_matrices():
    layer = leading(load("gpt2"))
    # GPT-2 (d=768, d_ff=3072): one layer = 4d² + 2·d·d_ff + 9d + d_ff; matrices 4d² + 2·d·d_ff = 12d².
    assert layer.exact == 4 * 768**2 + 2 * 768 * 3072 + 9 * 768 + 3072
    assert layer.value == 12 * 768**2 and layer.coefficient == 12
    assert layer.error == Fraction(-(9 * 768 + 3072), layer.exact)
    moe = leading(load("qwen3-235b-a22b"), activated=True)
    # per token: attention matrices + k=8 experts of 3·d·d_moe (router and norms are linear in d)
    assert moe.value == 2 * 4096 * 64 * 128 + 2 * 4096 * 4 * 128 + 3 * 4096 * 1536 * 8


_BLOCK = re.compile(r"\\begin\{aligned\}(.*?)\\end\{aligned\}", re.S)


def _arithmetic(line: str) -> int | None:
    """The value of a line of substituted numbers (2 \\cdot 5120 + ...), or None for a symbolic one."""
    for old, new in ((r"\left(", "("), (r"\right)", ")"), (r"\left.", ""), (r"\right.", ""), ("{}", "")):
        line = line.replace(old, new)
    line = re.sub(r"\^\{(\d+)\}", r"**\1", line.replace(r"\cdot", "*").replace("{,}", ""))
    line = re.sub(r"\\approx.*", "", line)
    line = re.sub(r"([\d)])\s*\(", r"\1*(", line)  # 64(…) and (61 - 3)(…) multiply
    if not re.fullmatch(r"[\d\s+\-*()]+", line):
        return None
    return int(eval(line, {"__builtins__": {}}))  # digits and + - * ( ) only, checked above


def equations(block: str) -> list[list[str]]:
    """The rows of an aligned block, continuation rows (&\\quad) joined, grouped into equations: a new one
    starts at a named left side (P_{...} &=) or at an approximation (&\\approx)."""
    rows: list[str] = []
    for row in re.split(r"\\\\\n", block.strip()):
        row = row.strip()
        if row.startswith(r"&\quad"):
            rows[-1] += " " + row.removeprefix(r"&\quad")
        else:
            rows.append(row)
    result: list[list[str]] = []
    for row in rows:
        if not row.startswith("&=") or not result:
            result.append([])
        result[-1].append(re.sub(r"^.*?&(=|\\approx)", "", row))
    return result


@pytest.mark.parametrize("spec", [*PRESETS, "gpt2", "qwen2.5-7b", "qwen3-0.6b", "mixtral-8x7b", "deepseek-v2-lite"])
def test_every_substitution_adds_up_to_the_stated_count(spec):
    blocks = _BLOCK.findall(post(spec))
    assert len(blocks) >= 7
    checked = 0
    for block in blocks:
        for equation in equations(block):
            numbers = [n for n in map(_arithmetic, equation) if n is not None]
            assert numbers, equation
            assert len(set(numbers)) == 1, f"the sides of {equation} differ: {numbers}"
            checked += len(numbers) > 1
    assert checked >= 6


def test_substituted_lines_evaluate_to_the_total():
    """The multi-line substitution of the total, joined, is the exact total (hand-checked count)."""
    blocks = _BLOCK.findall(post("deepseek-v3"))  # the total as the sum of the components, then as one formula
    block = next(b for b in blocks if b.lstrip().startswith(r"P_{\mathrm{total}}") and "N_{" in b)
    rows = [re.sub(r"^.*?&(=|\\quad)", "", r.strip()) for r in re.split(r"\\\\\n", block.strip())]
    numeric_start = next(i for i, r in enumerate(rows) if re.match(r"\s*2 \\cdot", r))
    joined = " ".join(rows[numeric_start:-1])
    assert _arithmetic(joined) == 671_026_404_352 == _arithmetic(rows[-1])


def test_sections_are_in_readers_order_and_add_up():
    for spec in (*PRESETS, "gpt2"):
        model = load(spec)
        parts = sections(model)
        keys = [s.key for s in parts]
        order = ["embedding", "attention", "moe", "mlp", "norms", "head"]
        assert keys == sorted(keys, key=order.index)
        assert sum(s.count for s in parts) == model.counts.total
        assert sum(s.share for s in parts) == 1


def test_chinese_and_english_share_every_formula():
    for spec in PRESETS:
        en, zh = post(spec, "markdown", "en"), post(spec, "markdown", "zh")
        assert re.findall(r"\$\$.*?\$\$", en, re.S) == re.findall(r"\$\$.*?\$\$", zh, re.S)


def test_chinese_reads_as_chinese_technical_writing():
    zh = post("qwen3-235b-a22b", "markdown", "zh")
    for phrase in ("参数量", "词表大小", "激活参数量", "路由专家", "隐藏层维度", "输出层", "符号说明", "总参数量"):
        assert phrase in zh, phrase
    prose = re.sub(r"```.*?```", "", zh, flags=re.S)  # code blocks are code, in any language
    assert "parameters" not in prose and "layer of" not in prose  # no English sentences left over
    dense = post("qwen3-32b", "markdown", "zh")
    assert "激活参数量" not in dense  # a dense model has no activated section


@pytest.mark.parametrize(
    ("spec", "needles"),
    [
        ("qwen3-32b", ["`q_norm`", "no biases", "grouped-query attention", "not square"]),
        ("qwen2.5-7b", ["`q_proj`, `k_proj` and `v_proj` carry biases: one number per output feature."]),
        ("qwen3-0.6b", ["reuses the embedding matrix", "(shared with the tied LM head)"]),
        (
            "deepseek-v3",
            ["`q_a_proj`", "`kv_b_proj`", "low-rank", "shared expert", "The first $N_{\\mathrm{dense}} = 3$"],
        ),
        ("gpt2", ["`wpe`", "LayerNorm", "`c_attn`", "exactly the classic proportions"]),
        ("mixtral-8x7b", ["$d_{\\mathrm{ff}} = 14{,}336$, so $3\\,d\\,d_{\\mathrm{ff}}$ parameters per expert"]),
    ],
)
def test_prose_explains_what_the_family_has(spec, needles):
    text = post(spec)
    for needle in needles:
        assert needle in text, needle


@pytest.mark.parametrize(
    ("spec", "rows"),
    [
        ("qwen3-235b-a22b", ["| $n$ | `num_experts` |"]),
        ("deepseek-v3", ["| $n$ | `n_routed_experts` |", "| $N_{\\mathrm{dense}}$ | `first_k_dense_replace` |"]),
        ("mixtral-8x7b", ["| $n$ | `num_local_experts` |"]),
        ("gpt2", ["| $N$ | `n_layer` |", "| $d$ | `n_embd` |"]),
        ("qwen3-32b", ["| $N$ | `num_hidden_layers` |", "| $d$ | `hidden_size` |"]),
    ],
)
def test_notation_names_the_familys_own_config_key(spec, rows):
    """Each family's config.json names (transformers' config classes), not the glossary's list of all of them."""
    notation = next(part for part in post(spec).split("\n## ") if re.sub(r"^\d+\. ", "", part).startswith("Notation"))
    assert " / " not in notation and "GPT-2:" not in notation
    for row in rows:
        assert row in notation, (row, notation)


def test_the_config_source_is_one_line_in_the_posts_language():
    zh, en = post("qwen3-235b-a22b", "markdown", "zh"), post("qwen3-235b-a22b")
    assert "\n*来源：用 llmcount 根据 `Qwen/Qwen3-235B-A22B` 的 `config.json`（Hugging Face Hub）计算" in zh
    assert "\n*Source: counted with llmcount from the `config.json` of `Qwen/Qwen3-235B-A22B` on the Hugging" in en
    for lang in ("zh", "en"):  # the tool is named once, in that line, and nowhere else in the body
        text = build("qwen3-235b-a22b", "markdown", lang, sections="params,shares").text
        assert text.count("llmcount") == 1 and text.rstrip().endswith("*")
        assert "preset" not in text and "The formula is llmcount" not in text
    assert "Qwen/\\allowbreak{}Qwen3-\\allowbreak{}235B-\\allowbreak{}A22B" in post("qwen3-235b-a22b", "latex", "zh")


def test_moe_states_the_activated_convention():
    text = post("deepseek-v3")
    assert re.search(r"^## \d+\. Activated parameters$", text, re.M)
    assert "$k$ of the $n$ routed experts" in text and "shared experts" in text and "in full" in text
    assert "```mermaid\npie\n" in text


def test_user_text_is_escaped_in_latex(tmp_path):
    folder = tmp_path / "my_model 100% #1 & {x}"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(_qwen3_config()))
    tex = build(str(folder), "latex").text
    assert r"my\_model 100\% \#1 \& \{x\}" in tex
    assert "my_model 100% #1" not in tex


def _qwen3_config() -> dict:
    from llmcount.presets import presets

    return presets()["qwen3-32b"].config()


# --- verification against an index ------------------------------------------------------------------------------

_QWEN3_LAYER = [
    *(f"self_attn.{p}_proj.weight" for p in "qkvo"),
    "self_attn.q_norm.weight",
    "self_attn.k_norm.weight",
    *(f"mlp.{p}_proj.weight" for p in ("gate", "up", "down")),
    "input_layernorm.weight",
    "post_attention_layernorm.weight",
]


def write_index(tmp_path, total_size, layers, extra=(), head=True, name="model.safetensors.index.json"):
    names = ["model.embed_tokens.weight", "model.norm.weight", *(["lm_head.weight"] if head else []), *extra]
    names += [f"model.layers.{i}.{p}" for i in range(layers) for p in _QWEN3_LAYER]
    shard = {n: f"model-{i % 3:05d}-of-00003.safetensors" for i, n in enumerate(names)}
    path = tmp_path / name
    path.write_text(json.dumps({"metadata": {"total_size": total_size}, "weight_map": shard}))
    return str(path)


def test_verification_matches_the_qwen3_32b_index(tmp_path):
    # Qwen3-32B's index: total_size 65,524,246,528 bytes of bfloat16 = 2 x 32,762,123,264.
    index = write_index(tmp_path, 65_524_246_528, 64)
    result = build("qwen3-32b", index=index)
    assert r"\frac{65{,}524{,}246{,}528}{2} = 32{,}762{,}123{,}264" in result.text
    assert "exactly the formula's count" in result.text
    assert "707 tensors in 3 files" in result.text
    assert result.data["verification"]["difference"] == 0
    zh = build("qwen3-32b", lang="zh", index=index).text
    assert "与公式给出的参数量完全一致" in zh


def test_verification_explains_a_tied_head_stored_twice(tmp_path):
    # Qwen3-0.6B's safetensors metadata: 751,632,384 bf16 values, its head tied but stored:
    # 596,049,920 parameters + V·d = 151,936 x 1,024 = 155,582,464.
    index = write_index(tmp_path, 2 * 751_632_384, 28)
    result = build("qwen3-0.6b", index=index)
    assert "155,582,464 more than the formula's 596,049,920" in result.text
    assert "`lm_head.weight` is stored although the head is tied" in result.text
    assert "account for the whole difference" in result.text
    assert result.data["verification"]["explained"] is True


def test_verification_names_extra_layers_and_fp8_scales(tmp_path):
    extra = ["model.layers.61.eh_proj.weight", "model.layers.61.mlp.experts.0.up_proj.weight_scale_inv"]
    extra += [f"model.layers.{i}.self_attn.kv_b_proj.weight_scale_inv" for i in range(61)]
    index = write_index(tmp_path, 688_586_727_753, 61, extra=extra)
    result = build("deepseek-v3", index=index, dtype="fp8")
    text = result.text
    assert "float8_e4m3fn (given with `--dtype`), 1 byte per parameter" in text
    assert "layer 61, beyond the config's $N = 61$ layers" in text and "(MTP)" in text
    assert "quantization scales" in text
    assert "without sizing all of it" in text
    assert result.data["verification"]["difference"] == 688_586_727_753 - 671_026_404_352


def test_verification_with_a_missing_head_explains_it(tmp_path):
    config = _qwen3_config()
    index = write_index(tmp_path, 2 * (32_762_123_264 - 151_936 * 5120), 64, head=False)
    text = build("qwen3-32b", index=index).text
    assert "777,912,320 fewer" in text and "no `lm_head.weight`" in text
    assert config["tie_word_embeddings"] is False


# --- the command line: output files, choices, errors ----------------------------------------------------------

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


def assert_refused(result, *needles):
    assert result.exit_code in (1, 2), result.output
    assert isinstance(result.exception, SystemExit), "a traceback escaped"
    assert result.stdout == ""
    message = result.stderr.strip()
    for needle in needles:
        assert needle in message, (needle, message)
    return message


def test_writeup_to_stdout_and_to_a_file(tmp_path):
    out = run("writeup", "qwen3-32b")
    assert out.exit_code == 0 and out.stdout.startswith("# How many parameters does Qwen3-32B have?")
    target = tmp_path / "post.tex"
    result = run("writeup", "deepseek-v3", "--format", "latex", "--lang", "zh", "-o", str(target))
    assert result.exit_code == 0 and result.stdout == ""
    assert target.read_text("utf-8").startswith("% Generated by llmcount")
    assert [p.name for p in tmp_path.iterdir()] == ["post.tex"]


def test_writeup_json_has_the_numbers():
    data = json.loads(run("writeup", "qwen3-235b-a22b", "--json").stdout)
    assert data["total"] == 235_093_634_560
    assert {s["key"] for s in data["sections"]} == {"embedding", "attention", "moe", "norms", "head"}
    assert data["text"].startswith("# ")
    assert data["lang"] == "en" and data["format"] == "markdown"


@pytest.mark.parametrize(
    ("option", "value", "choices"), [("--format", "pdf", "'markdown', 'latex', 'html'"), ("--lang", "fr", "'en', 'zh'")]
)
def test_unknown_format_or_language_lists_the_choices(option, value, choices):
    result = run("writeup", "qwen3-32b", option, value)
    assert result.exit_code == 2 and result.stdout == ""
    assert value in result.stderr and choices in result.stderr


def test_output_to_a_missing_folder(tmp_path):
    target = tmp_path / "nope" / "post.md"
    assert_refused(run("writeup", "qwen3-32b", "-o", str(target)), str(target), "does not exist")
    assert not (tmp_path / "nope").exists()


def test_output_under_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    assert_refused(run("writeup", "qwen3-32b", "-o", str(tmp_path / "file" / "post.md")), "not a folder")
    assert_refused(run("writeup", "qwen3-32b", "-o", str(tmp_path)), "is a folder")


def test_a_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    import os

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    target = tmp_path / "post.md"
    assert_refused(run("writeup", "qwen3-32b", "-o", str(target)), "post.md", "No space left")
    assert list(tmp_path.iterdir()) == []


def test_save_replaces_a_file_whole(tmp_path):
    target = tmp_path / "post.md"
    target.write_text("old")
    save({target: b"new"})
    assert target.read_text() == "new" and len(list(tmp_path.iterdir())) == 1


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        ('{"weight_map": {"a": "b"}}', ["not a safetensors index", "metadata.total_size"]),
        ('{"metadata": {"total_size": 12}}', ["not a safetensors index", "weight_map"]),
        ('{"metadata": {"total_size": "12"}, "weight_map": {"a": "b"}}', ["metadata.total_size"]),
        ("[1, 2]", ["not a safetensors index"]),
        ("{not json", ["invalid JSON", "line 1"]),
    ],
)
def test_bad_index_is_refused_by_name(tmp_path, content, needles):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(content)
    assert_refused(run("writeup", "qwen3-32b", "--index", str(index)), str(index), *needles)


def test_a_safetensors_file_is_not_an_index(tmp_path):
    shard = tmp_path / "model.safetensors"
    shard.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    assert_refused(run("writeup", "qwen3-32b", "--index", str(shard)), str(shard), "not its index")


def test_index_whose_dtype_cannot_be_told(tmp_path):
    index = write_index(tmp_path, 2 * 124_439_808, 12)
    # GPT-2's config has no torch_dtype: say so, name the index, suggest --dtype
    assert_refused(run("writeup", "gpt2", "--index", index), index, "dtype", "--dtype")
    assert_refused(run("writeup", "gpt2", "--index", index, "--dtype", "int3"), "unknown dtype 'int3'", "bfloat16")
    assert run("writeup", "gpt2", "--index", index, "--dtype", "float32").exit_code == 0


def test_missing_index_file(tmp_path):
    assert_refused(run("writeup", "qwen3-32b", "--index", str(tmp_path / "x.json")), "x.json", "cannot read")


def test_bad_model_is_refused_before_writing(tmp_path):
    target = tmp_path / "post.md"
    assert_refused(run("writeup", "qwen3-32", "-o", str(target)), "unknown preset")
    assert not target.exists()


def test_chart_type_must_suit_the_format(tmp_path):
    assert_refused(
        run("writeup", "qwen3-32b", "-f", "latex", "--chart", str(tmp_path / "c.svg")), "c.svg", ".png, .pdf"
    )
    assert list(tmp_path.iterdir()) == []


# --- the filters the write-ups add ------------------------------------------------------------------------------


def test_substitute_prints_numbers_without_evaluating():
    from llmcount.formulas.symbols import N, d, h, h_d
    from llmcount.renderers.filters import substitute

    assert substitute(2 * d * h * h_d, {d: 5120, h: 64, h_d: 128}) == r"2 \cdot 5120 \cdot 64 \cdot 128"
    assert substitute(N * d**2, {N: 12, d: 768}) == r"12 \cdot 768^{2}"


def test_ordered_lines_break_long_sums_with_balanced_brackets():
    from llmcount.renderers.filters import ordered_latex, ordered_lines

    groups = load("deepseek-v3").derivation.grouped()
    lines = ordered_lines(groups, width=40)
    assert len(lines) > 3
    for line in lines:  # plain brackets, which may open on one line of an aligned block and close on another
        assert r"\left" not in line and r"\right" not in line, line
    joined = "".join(lines).replace("{}", "")
    assert joined.count("(") == joined.count(")")
    plain = ordered_latex(groups).replace(r"\left(", "(").replace(r"\right)", ")")
    assert joined.replace(" ", "") == plain.replace(" ", "")
    assert ordered_lines(groups, width=10_000) == [plain]


def test_a_bracket_keeps_its_size_only_around_something_tall():
    from llmcount.renderers.filters import plain_brackets

    assert plain_brackets(r"h\,\left(d + \left(a + b\right)\right)") == r"h\,(d + (a + b))"
    sized = r"\left(\frac{d}{h} + 1\right) + \left(x + \left\lfloor y \right\rfloor\right)"
    assert plain_brackets(sized) == sized


def test_code_escape_pct_significant():
    from llmcount.renderers.filters import code, escape, pct, significant

    assert code("q_proj", "markdown") == "`q_proj`"
    assert code("q_proj", "latex") == r"\texttt{q\_\allowbreak{}proj}"
    assert escape("a_b|c*", "markdown") == r"a\_b\|c\*"
    assert escape("100% #1", "latex") == r"100\% \#1"
    assert pct(Fraction(1843, 10_000)) == "18.43%"
    assert pct(Fraction(-213, 10_000_000), signed=True) == "-0.0021%"
    assert pct(Fraction(1, 2), signed=True) == "+50.00%"
    assert pct(0) == "0%"
    assert significant(Fraction(93, 5)) == "18.6" and significant(12) == "12"


def test_written_files_get_ordinary_permissions(tmp_path):
    import os

    umask = os.umask(0o022)
    try:
        save({tmp_path / "new.md": b"x"})
    finally:
        os.umask(umask)
    assert (tmp_path / "new.md").stat().st_mode & 0o777 == 0o644


# --- -o never replaces what is not a regular file: symlinks are written through, FIFOs and devices into --------


def read_fifo(path):
    """Open ``path`` (a FIFO) for reading in a thread, as a shell pipe would; the thread's result is what it read."""
    import threading

    got = []
    reader = threading.Thread(target=lambda: got.append(path.read_bytes()), daemon=True)
    reader.start()
    return reader, got


def test_output_to_a_fifo_is_written_into_not_replaced(tmp_path):
    import os
    import stat

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader, got = read_fifo(fifo)
    result = run("writeup", "qwen3-32b", "-o", str(fifo))
    reader.join(timeout=60)
    assert result.exit_code == 0 and result.stdout == "", result.output
    assert got[0].decode().startswith("# How many parameters does Qwen3-32B have?")
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and [p.name for p in tmp_path.iterdir()] == ["pipe"]


def test_save_writes_into_a_fifo_and_through_a_symlink_to_it(tmp_path):
    import os
    import stat

    fifo, link = tmp_path / "pipe", tmp_path / "out"
    os.mkfifo(fifo)
    link.symlink_to(fifo)  # like /dev/stdout -> /proc/self/fd/1
    reader, got = read_fifo(fifo)
    save({link: b"post"})
    reader.join(timeout=60)
    assert got == [b"post"] and stat.S_ISFIFO(fifo.lstat().st_mode) and link.is_symlink()


def test_output_through_a_symlink_writes_its_target(tmp_path):
    real, link = tmp_path / "real.md", tmp_path / "post.md"
    real.write_text("old")
    link.symlink_to(real.name)
    result = run("writeup", "qwen3-32b", "-o", str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and link.readlink().name == "real.md"
    assert real.read_text("utf-8").startswith("# How many parameters does Qwen3-32B have?")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["post.md", "real.md"]


def test_a_dangling_symlink_creates_its_target(tmp_path):
    (tmp_path / "posts").mkdir()
    link = tmp_path / "post.md"
    link.symlink_to(tmp_path / "posts" / "new.md")
    assert run("writeup", "qwen3-32b", "-o", str(link)).exit_code == 0
    assert link.is_symlink() and (tmp_path / "posts" / "new.md").read_text("utf-8").startswith("# How many")


def test_a_symlink_loop_is_refused(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    assert_refused(run("writeup", "qwen3-32b", "-o", str(tmp_path / "a")), "a:", "symbolic links")
    assert {p.name for p in tmp_path.iterdir()} == {"a", "b"} and (tmp_path / "a").is_symlink()


def test_a_symlink_to_a_folder_is_refused(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "link").symlink_to("folder")
    assert_refused(run("writeup", "qwen3-32b", "-o", str(tmp_path / "link")), "is a folder")
    assert list((tmp_path / "folder").iterdir()) == []


def test_an_empty_output_name_is_refused():
    message = assert_refused(run("writeup", "qwen3-8b", "-o", ""), "file name is empty")
    assert "\n" not in message
    assert_refused(run("writeup", "qwen3-8b", "--chart", ""), "chart", "file name is empty")
    assert_refused(run("chart", "qwen3-8b", "-o", ""), "chart", "file name is empty")


def test_dash_is_stdout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("writeup", "qwen3-32b", "-o", "-")
    assert result.exit_code == 0 and result.stdout == build("qwen3-32b").text
    assert list(tmp_path.iterdir()) == []
    assert_refused(run("chart", "qwen3-8b", "-o", "-"), "-: cannot write the chart to stdout")


def mermaid_pies(text: str) -> list[tuple[str, list[tuple[str, int]]]]:
    pies = []
    for block in re.findall(r"```mermaid\npie\n(.*?)```", text, re.S):
        title = re.search(r"^\s*title (.*)$", block, re.M).group(1)
        pies.append((title, [(label, int(n)) for label, n in re.findall(r'^\s*"(.*)" : (\d+)$', block, re.M)]))
    return pies


def test_pie_slices_are_labelled_readably_and_add_up():
    ((title, slices),) = mermaid_pies(post("qwen3-32b"))
    assert title == "Qwen3-32B: 32.76B parameters"
    assert sum(n for _, n in slices) == PUBLISHED["qwen3-32b"]
    # embedding and head are V·d = 151936·5120 = 777,912,320 each (2.37%): drawn apart their labels overprint
    # ("2%2%"), so the small sections are one slice; a label gives the share (the table beside it, the counts)
    assert slices[-1] == ("Token embedding, Normalization, LM head (4.75%)", 2 * 777_912_320 + 660_480)
    assert "showData" not in post("qwen3-32b")
    assert [label.split(" ")[0] for label, _ in slices] == ["Attention", "MLP", "Token"]


def test_moe_post_gives_the_activated_split_in_its_table():
    """One pie of the total; the table beside it gives each component's share of the activated count too."""
    numbers = expected_numbers("deepseek-v3")
    text = post("deepseek-v3", "markdown", "zh")
    pies = mermaid_pies(text)
    assert [title for title, _ in pies] == ["DeepSeek-V3 参数分布（共 671.03B）"]
    assert sum(n for _, n in pies[0][1]) == numbers["total"]
    attention = f"{numbers['attention']:,}"  # every token runs the attention: all of it is activated
    share = f"{100 * numbers['attention'] / numbers['activated']:.2f}%"
    assert f"| 注意力层 | {attention} | 1.70% | {attention} | {share} |" in text


def test_chinese_latex_captions_its_figure_in_chinese(tmp_path):
    pytest.importorskip("matplotlib")
    zh = build("qwen3-0.6b", "latex", "zh", output=str(tmp_path / "p.tex"), chart=str(tmp_path / "c.pdf")).text
    # "图 1  Qwen3-0.6B 各模块参数占比", not "Figure 1: ..."
    assert "\\renewcommand{\\figurename}{图}" in zh and "\\usepackage[labelsep=quad]{caption}" in zh
    en = build("qwen3-0.6b", "latex", "en", output=str(tmp_path / "p.tex"), chart=str(tmp_path / "c.pdf")).text
    assert "figurename" not in en


def test_numbers_are_digit_grouped_and_negatives_have_a_minus_sign():
    text = post("qwen3-32b")
    # Qwen3-32B: V = 151,936, d = 5,120; its embedding V·d = 777,912,320
    assert "151{,}936 \\cdot 5120" in text and "$V = 151{,}936$" in text
    assert "| `vocab_size` | vocabulary size | 151,936 |" in text
    # the module tree prints its shapes as print(model) does: 5120, not 5,120
    prose = re.sub(r"```(mermaid|text).*?```", "", text, flags=re.S)
    assert not re.search(r"(?<![\d,{}.])\d{5,}(?![\d,{}])", prose)  # four digits: 5120, as SI allows
    assert "\u221235.49%" in text and "-35.49%" not in text  # (12·5120² − 487,598,336) / 487,598,336
    tex = post("qwen3-32b", "latex", "en")
    assert "\\ensuremath{-}35.49\\%" in tex and "\u2212" not in tex


def test_moe_table_says_which_share_is_of_the_activated_count():
    assert "| Component | Parameters | Share | Activated | Share of activated |" in post("qwen3-235b-a22b")
    assert "激活参数量 | 占激活参数量 |" in post("qwen3-235b-a22b", "markdown", "zh")


def test_gpt2_post_says_what_the_config_leaves_to_defaults_and_names_modules_apart():
    text = post("gpt2")
    # GPT-2's config.json has no n_inner: transformers' GPT2MLP uses 4 * n_embd = 3072
    assert (
        "| $d_{\\mathrm{ff}}$ | `n_inner` | MLP hidden size (not in this config: the default $4\\,d$) | 3,072 |" in text
    )
    assert "`attn.c_proj`" in text and "`mlp.c_proj`" in text
    assert "$h" not in text  # h is not in the notation table: the heads are a number in the prose
    # one layer leaves out 2·2d (ln_1, ln_2) + 3d + d (attention biases) + d_ff + d (MLP biases) = 9d + d_ff
    assert "The terms left out, $9\\,d + d_{\\mathrm{ff}}$" in text
    assert text.count("\u22120.14%") == 1  # said once, not in two sentences in a row
    assert "router" not in text and "router" not in post("qwen3-32b")


def test_embedding_symbol_has_one_meaning():
    text = post("qwen3-32b")  # untied head: embedding parameters are P_emb + P_head = 2·V·d
    assert "P_{\\mathrm{emb}} &= V\\,d" in text
    assert "P_{\\mathrm{emb}} + P_{\\mathrm{head}} &= 2\\,V\\,d" in text
    assert "P_{\\mathrm{emb}} &= 2" not in text
    assert "P_{\\mathrm{total}} - P_{\\mathrm{emb}} - P_{\\mathrm{head}} &= 31{,}206{,}298{,}624" in text


def test_dense_layers_spread_among_moe_layers_are_named_by_index(tmp_path):
    from llmcount.presets import presets

    # transformers' Qwen3MoeDecoderLayer: layer i is dense when i is in mlp_only_layers or (i + 1) % step != 0;
    # Qwen3-30B-A3B has 48 layers, so step 2 makes layers 0, 2, ..., 46 dense: 24 of them
    config = dict(presets()["qwen3-30b-a3b"].config(), decoder_sparse_step=2)
    (tmp_path / "config.json").write_text(json.dumps(config))
    text = build(str(tmp_path), "markdown", "en").text
    assert "The first $N_{\\mathrm{dense}}" not in text and "of the first layers" not in text
    assert "$N_{\\mathrm{dense}} = 24$ layers, not a leading block but layers 0, 2, 4, …, 46" in text
    assert "each of the other $N - N_{\\mathrm{dense}} = 24$ layers" in text
    config["decoder_sparse_step"], config["mlp_only_layers"] = 1, [0, 5]
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert "第 0、5 层" in build(str(tmp_path), "markdown", "zh").text


def test_a_leading_dense_block_comes_before_the_experts_in_token_order():
    text = post("deepseek-v3")  # first_k_dense_replace = 3: layers 0-2 are dense, a token meets them first
    assert "## 5. Dense MLP of the first layers" in text and "## 6. Mixture of experts" in text
    assert "The first $N_{\\mathrm{dense}} = 3$ layers keep a dense MLP" in text


def test_every_preset_gets_a_post_in_every_format_and_language():
    from llmcount.presets import presets

    for name, preset in presets().items():
        total = expected_numbers(name)["total"]
        if load(name).composite is not None:  # a whole multimodal model: its published count, towers included
            total = preset.published_total
        for fmt in ("markdown", "latex"):
            for lang in ("en", "zh"):
                assert f"{total:,}" in build(name, fmt, lang).text, (name, fmt, lang)


def test_a_section_the_prose_does_not_cover_is_told_from_the_records_notes():
    neox = post("gpt-neox-20b")
    notes = {t.path.split("/", 1)[1]: t.note for t in load("gpt-neox-20b").derivation.terms}
    assert f"- `query_key_value`: {notes['query_key_value']}" in neox
    attention = neox.split(". Attention\n")[1].split("\n## ")[0]
    assert "`q_proj`" not in attention and "four projections" not in attention
    opt_mlp = post("opt-125m").split("MLP\n")[1].split("\n## ")[0]
    assert "SwiGLU" not in opt_mlp and "`fc1`" in opt_mlp  # OPT's MLP is fc1/fc2 with ReLU, not gated
    gemma_norms = post("gemma-2-2b").split("Normalization\n")[1].split("\n## ")[0]
    assert "`pre_feedforward_layernorm`" in gemma_norms and "twice" not in gemma_norms  # four norms per layer


def test_hybrid_layers_say_which_layers_carry_what():
    text = post("qwen3-next-80b-a3b")  # 48 layers: 12 full attention, 36 linear attention (Gated DeltaNet)
    assert "## 4. Linear attention" in text and "In each of the $N_{\\mathrm{full}} = 12$ layers" in text
    assert "One layer, to leading order" not in text  # no one layer to approximate


def test_sections_choose_the_parts_of_the_post():
    text = build("deepseek-v3", "markdown", "en", sections="shares,leading").text
    heads = re.findall(r"^## (.*)$", text, re.M)
    assert heads == ["1. One layer, to leading order", "2. Where the parameters sit"]  # in the post's order
    assert "671,026,404,352" in text  # the shares table still gives the exact total
    params = build("qwen3-32b", "markdown", "en", sections="params").text
    assert "## 7. Total" in params and "Where the parameters sit" not in params and "```mermaid" not in params


@pytest.mark.parametrize("value", ["params,trees", "", "params,,shares", "flop"])
def test_unknown_sections_value_lists_the_choices(value):
    result = run("writeup", "qwen3-32b", "--sections", value)
    assert result.exit_code == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "choose from tree, params, weights, formula, embedding, leading, shares" in lines[0]


def test_a_chart_needs_the_shares_section(tmp_path):
    result = run("writeup", "qwen3-32b", "--sections", "params", "--chart", str(tmp_path / "c.svg"))
    assert result.exit_code == 1 and result.stdout == "" and "shares" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_long_names_may_break_in_latex_and_chinese_is_not_letter_spaced():
    from llmcount.renderers.filters import code

    # deepseek-ai/DeepSeek-V3 ran 31pt into the margin of the Chinese post when it could not break
    assert code("deepseek-ai/DeepSeek-V3", "latex") == (
        "\\texttt{deepseek-\\allowbreak{}ai/\\allowbreak{}DeepSeek-\\allowbreak{}V3}"
    )
    zh = post("deepseek-v3", "latex", "zh")
    assert "\\CJKglue" not in zh  # CJK's own glue: Chinese stretches a little, not the spaces around Latin words


def test_a_whole_multimodal_model_gets_a_section_per_part_and_the_whole_total():
    """Gemma 3 27B: the language model's sections, then the SigLIP tower's and the projector's, each with its
    formula; the total is the checkpoint's (google/medgemma-27b-it's index: 54,864,813,280 bytes of bf16), the
    chart has a slice per part. The tower's and projector's counts by hand: tests/test_towers.py."""
    tower, projector = 416_866_032, 6_194_304
    for lang, heads in (("en", ("Vision tower", "Projector")), ("zh", ("视觉编码器", "多模态投影层"))):
        text = build("gemma-3-27b-it", "markdown", lang).text
        found = re.findall(r"^## \d+\. (.*)$", text, re.M)
        assert found.index(heads[0]) + 1 == found.index(heads[1]) < found.index("Total" if lang == "en" else "总参数量")
        assert f"{54_864_813_280 // 2:,}" in text and tex_int(tower) in text and tex_int(projector) in text
        assert "`vision_config.num_hidden_layers`" in text  # the tower's symbols, keyed where the config gives them
        assert "not in this config" not in text and "配置中没有此字段" not in text  # text_config gives the sizes
    latex = build("gemma-3-27b-it", "latex", "en").text
    assert r"P_{\mathrm{vision}}" in latex and r"P_{\mathrm{projector}}" in latex


@pytest.mark.parametrize("name", ["qwen3-32b", "qwen3-30b-a3b", "deepseek-v3", "gemma-3-27b-it"])
def test_the_posts_check_code_prints_the_count(name, monkeypatch, capsys):
    """The Python a post gives its readers to check the count, run as written (the preset's config.json stands in
    for the download): it prints the number the post states."""
    import transformers

    from llmcount.presets import presets

    config = presets()[name].config()
    text = build(name).text
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    stated = int(re.search(r"# ([\d,]+)$", code.strip()).group(1).replace(",", ""))
    built = transformers.AutoConfig.for_model(**config)
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", lambda *_a, **_k: built)
    exec(compile(code, name, "exec"), {})  # the post's own code, not a formula string
    assert int(capsys.readouterr().out.replace(",", "")) == stated
    assert f"{stated:,}" in text
