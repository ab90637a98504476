"""The write-up's training-memory section (``writeup --training``): its numbers against the ZeRO paper's
multipliers and hand derivations, its refusals, its options on the command line, and its math through KaTeX and
pdflatex (skipped without them on a developer's machine, as in test_writeup_render.py)."""

from __future__ import annotations

import json
import math

import pytest
from test_writeup_render import compile_all, katex_failures, math_spans
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.formulas.training import Lora, Parallel
from llmcount.renderers.filters import grouped, latex_int
from llmcount.renderers.writeup import build
from llmcount.renderers.writeup_training import Settings

P = 8_030_261_248  # Llama-3-8B's parameters, as Meta publishes them (and transformers counts them)
D, H, H_KV, H_D, D_FF, VOCAB, LAYERS = 4096, 32, 8, 128, 14336, 128256, 32


def post(spec: str = "llama-3-8b", lang: str = "en", fmt: str = "markdown", **settings):
    return build(spec, fmt, lang, sections="training", training=Settings(**{"attention": "eager", **settings}))


@pytest.mark.parametrize(
    ("zero", "shown", "per_gpu"),
    [  # Rajbhandari et al. 2020, mixed-precision Adam (K = 12): 4Ψ + KΨ/N_d, 2Ψ + (2 + K)Ψ/N_d, (4 + K)Ψ/N_d
        (0, r"16\,P", 16 * P),
        (1, r"4\,P + \frac{12\,P}{N_{\mathrm{dp}}}", 4 * P + 12 * P // 8),
        (2, r"2\,P + \frac{14\,P}{N_{\mathrm{dp}}}", 2 * P + 14 * P // 8),
        (3, r"\frac{16\,P}{N_{\mathrm{dp}}}", 16 * P // 8),
    ],
)
def test_model_states_are_the_zero_papers(zero: int, shown: str, per_gpu: int) -> None:
    result = post(parallel=Parallel(dp=8, zero=zero))
    assert f"M_{{\\mathrm{{states}}}} &= {shown} \\\\" in result.text
    assert f"**{grouped(per_gpu)}** bytes" in result.text
    assert result.data["training"]["model_states_bytes_per_gpu"] == per_gpu


def test_a_shard_that_does_not_divide_evenly_is_rounded_up_and_said_so() -> None:
    """P is not a multiple of 3: the exact quotient 16P/3, then each state's shard rounded up on its rank."""
    result = post(parallel=Parallel(dp=3, zero=3))
    per_gpu = 2 * math.ceil(2 * P / 3) + 3 * math.ceil(4 * P / 3)
    assert rf"&= \frac{{{16 * P}}}{{3}} \\" in result.text
    assert f"&\\to {latex_int(per_gpu)}\\ \\text{{bytes}}" in result.text
    assert "rounds its shard of each state up to whole bytes" in result.text
    assert result.data["training"]["model_states_bytes_per_gpu"] == per_gpu


def _layer_bf16(seq: int) -> int:
    """One Llama layer per token, bf16, eager (docs/training.md's table): two RMSNorms (fp32 input and 1/RMS,
    bf16 normalized), the q/k/v input, q and k, v repeated to h heads, fp32 softmax and its bf16 cast, o_proj's
    input, the MLP input and gate, SiLU, up and product (4 d_ff)."""
    fp32 = 2 * (D + 1) + H * seq
    bf16 = 2 * D + D + 3 * H * H_D + H * seq + H * H_D + D + 4 * D_FF
    return 4 * fp32 + 2 * bf16


def _model_bf16(batch: int, seq: int) -> int:
    """Once per model: int64 ids and labels, RoPE cos and sin per position, the final norm, the head's input,
    fp32 log-probabilities, the fp32 loss weight."""
    return batch * seq * (8 + 4 * D + 4 + 2 * D + 2 * D + 4 * VOCAB + 8) + seq * 2 * H_D * 2 + 4


def test_activations_are_derived_term_by_term_with_the_values_substituted() -> None:
    batch, seq = 4, 4096
    result = post(batch=batch)
    layer, model = batch * seq * _layer_bf16(seq), _model_bf16(batch, seq)
    text = result.text
    assert r"A_{\mathrm{layer}} &= B\,S(16\,d + 8 + 8\,h\,h_{d} + 6\,S\,h + 8\,d_{\mathrm{ff}})" in text
    assert r"&= 4 \cdot 4096(16 \cdot 4096 + 8" in text  # B, S and d substituted
    assert f"&= {latex_int(layer)}\\ \\text{{bytes}}" in text
    assert f"&= {latex_int(model)}\\ \\text{{bytes}}" in text
    assert r"A &= N \cdot A_{\mathrm{layer}} + A_{\mathrm{model}} \\" in text
    assert f"&= 32 \\cdot {latex_int(layer)} + {latex_int(model)} \\\\" in text
    total = 16 * P + LAYERS * layer + model
    assert f"**{grouped(total)}** bytes per GPU" in text
    assert result.data["training"]["activations_bytes"] == LAYERS * layer + model
    assert result.data["training"]["total_bytes_per_gpu"] == total


def test_layer_kinds_get_one_derivation_each_and_a_bracketed_count() -> None:
    text = post("deepseek-v3").text
    assert "A_{1} &=" in text and "A_{2} &=" in text
    assert r"A &= N_{\mathrm{dense}} \cdot A_{1} + \left(N - N_{\mathrm{dense}}\right) \cdot A_{2}" in text


def test_a_family_without_an_activation_table_gets_its_model_states_and_one_sentence(tmp_path) -> None:
    oracle = pytest.importorskip("oracle")
    from test_training import NO_TABLE

    path = tmp_path / "config.json"
    path.write_text(json.dumps(NO_TABLE))
    result = post(str(path), batch=2)
    assert "Activations are not derived for GIT: its llmcount record has no table" in result.text
    assert result.data["training"]["activations_bytes_per_gpu"] is None
    states = result.data["training"]["model_states_bytes_per_gpu"]
    assert states == 16 * oracle.meta_total(NO_TABLE)  # 2 + 2 + 12 bytes each
    assert f"**{grouped(states)}** bytes per GPU" in result.text


XLSTM = {  # transformers' xLSTM in its default inference mode: a chunk of 4 tokens, one whole chunk at S = 8
    "model_type": "xlstm",
    **{"num_blocks": 1, "hidden_size": 32, "num_heads": 2, "vocab_size": 50, "chunk_size": 4},
}


def test_a_config_the_table_refuses_gets_the_reason(tmp_path) -> None:
    """xLSTM's chunkwise kernel fails in bf16 (its fp32 zero states meet bf16 keys and values), so its table refuses
    that setting with the reason, which the section gives instead of saying the record has no table."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(XLSTM))
    for lang, said in (
        ("en", "Activations are not derived for xLSTM in this setting: mode inference"),
        ("zh", "xLSTM 的激活值在这个设定下不做推导"),
    ):
        result = build(str(path), "markdown", lang, sections="training", seq=8, training=Settings(batch=2))
        assert said in result.text and "chunkwise kernel fails" in result.text
        assert "no table" not in result.text and "没有经 autograd 核对过" not in result.text
    fp32 = build(str(path), sections="training", seq=8, training=Settings(batch=2, dtype="fp32"))
    assert fp32.data["training"]["activations_bytes_per_gpu"] > 0


@pytest.mark.parametrize("options", [{}, {"recompute": "selective"}, {"attention": "flash"}])
def test_a_family_without_attention_says_no_score_matrix_is_kept(tmp_path, options: dict) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "mamba", "num_hidden_layers": 2, "hidden_size": 16, "vocab_size": 50}))
    text = build(str(path), sections="training", seq=8, training=Settings(batch=2, **options)).text
    assert "Mamba's layers have no softmax attention" in text
    assert "eager attention" not in text and "core attention" not in text and "fused attention kernel" not in text


def test_the_section_is_in_the_full_post_only_when_asked() -> None:
    plain = build("qwen3-0.6b")
    assert "Training memory" not in plain.text and "training" not in plain.data
    full = build("qwen3-0.6b", sections="all", training=Settings())
    assert ". Training memory per GPU\n" in full.text and full.data["shown"][-1] == "training"
    assert full.text.index(". Memory: weights") < full.text.index(". Training memory")


runner = CliRunner()


def test_cli_writeup_training_prints_the_section() -> None:
    done = runner.invoke(app, ["writeup", "llama-3-8b", "--training", "--batch", "4", "--zero", "3", "--dp", "8"])
    assert done.exit_code == 0, done.output
    assert ". Training memory per GPU\n" in done.stdout
    assert f"**{grouped(16 * P // 8)}** bytes" in done.stdout
    done = runner.invoke(app, ["writeup", "llama-3-8b", "--sections", "params,training", "--json"])
    assert done.exit_code == 0
    data = json.loads(done.stdout)
    assert data["shown"] == ["params", "training"] and data["training"]["batch"] == 1


def test_cli_writeup_training_takes_memorys_dtype_and_lora() -> None:
    """--dtype fp32 --lora 16 as memory --training takes them: the frozen base in fp32 (4P), the adapters with their
    gradients and AdamW moments, no master copy (16 bytes each); P_t = 41,943,040 for r = 16 on q, k, v, o, gate,
    up, down (32·16·(2·(4096 + 4096) + 2·(4096 + 1024) + 3·(4096 + 14336)), as peft reports)."""
    lora_parameters = 32 * 16 * (2 * (4096 + 4096) + 2 * (4096 + 1024) + 3 * (4096 + 14336))
    assert lora_parameters == 41_943_040
    args = ["llama-3-8b", "--training", "--dtype", "fp32", "--lora", "16", "--json"]
    done = runner.invoke(app, ["writeup", *args])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    assert data["training"]["model_states_bytes_per_gpu"] == 4 * P + 16 * lora_parameters
    assert "P_{\\mathrm{t}} = 41{,}943{,}040" in data["text"] and "plain fp32 training" in data["text"]
    memory = json.loads(runner.invoke(app, ["memory", *args]).stdout)
    assert memory["model_states_bytes_per_gpu"] == data["training"]["model_states_bytes_per_gpu"]
    assert memory["total_bytes_per_gpu"] == data["training"]["total_bytes_per_gpu"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--batch", "4"], 2, "--batch needs --training"),
        (["--zero", "3"], 2, "--zero needs --training"),
        (["--lora", "8"], 2, "--lora needs --training"),
        (["--training", "--lora-targets", "q_proj"], 2, "--lora-targets needs --lora"),
        (["--training", "--lora", "0"], 2, "--lora must be a positive integer"),
        (["--training", "--tp", "3"], 1, "--tp 3 does not divide num_attention_heads = 32"),
        (["--training", "--pp", "33"], 1, "--pp 33 is more than the number of layers N = 32"),
        (["--training", "--ep", "2"], 1, "--ep 2: llama-3-8b has no routed experts to divide"),
        (["--training", "--optimizer", "adam"], 2, "'adam' is not one of 'adamw', 'adamw8bit', 'sgd'"),
        (["--training", "--recompute", "some"], 2, "'some' is not one of 'none', 'selective', 'full'"),
        (
            ["--sections", "params,trainin"],
            2,
            "choose from tree, params, weights, formula, embedding, leading, shares, flops, memory, attention",
        ),
    ],
)
def test_cli_writeup_refuses_bad_training_options(args: list[str], code: int, message: str) -> None:
    done = runner.invoke(app, ["writeup", "llama-3-8b", *args])
    assert done.exit_code == code
    assert done.stdout == ""
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


CASES = [  # (spec, lang, settings): one kind and two, parallel, recomputation, flash, refused
    ("llama-3-8b", "en", {"batch": 4, "parallel": Parallel(dp=8, zero=3)}),
    ("llama-3-8b", "zh", {"batch": 2, "parallel": Parallel(dp=3, zero=1)}),
    ("deepseek-v3", "en", {"parallel": Parallel(tp=8, pp=16, ep=8, dp=2, zero=1)}),
    ("deepseek-v3", "zh", {"recompute": "full"}),
    ("qwen3-30b-a3b", "zh", {"recompute": "selective", "optimizer": "muon"}),
    ("qwen3-32b", "en", {"attention": "flash", "optimizer": "adamw8bit", "parallel": Parallel(tp=8, dp=4, zero=2)}),
    ("gpt2", "zh", {"optimizer": "adafactor"}),
    ("llama-3-8b", "en", {"dtype": "fp32", "lora": Lora(8, ("q_proj", "v_proj"))}),
]


def test_every_math_span_of_the_training_section_parses_in_katex() -> None:
    spans = [span for spec, lang, s in CASES for span in math_spans(post(spec, lang, **s).text)]
    assert len(spans) > 300
    failures = katex_failures(spans)
    assert not failures, json.dumps(failures[:5], indent=2, ensure_ascii=False)


def test_training_sections_compile_with_pdflatex(tmp_path) -> None:
    documents = {f"{spec}-{lang}-{i}": post(spec, lang, "latex", **s).text for i, (spec, lang, s) in enumerate(CASES)}
    compile_all(tmp_path, documents)


@pytest.mark.parametrize(("spec", "lang", "settings"), [CASES[0], CASES[4]])
def test_training_section_in_a_browser(tmp_path, spec: str, lang: str, settings: dict) -> None:
    """Every formula is MathML, no TeX shows as text, and no derivation widens the page beyond a phone's."""
    import re

    from test_writeup_html import PHONE, Visible, chromium, probe

    text = post(spec, lang, "html", **settings).text
    target = tmp_path / "page.html"
    target.write_text(text, "utf-8")
    dom = chromium("--dump-dom", url=target.as_uri(), profile=tmp_path / "profile")
    shown = Visible()
    shown.HIDDEN = ("style", "script", "title", "annotation")  # the MathML is what a reader sees
    shown.feed(dom)
    seen = re.sub(r"\s+", " ", "".join(shown.parts))
    assert not re.search(r"\\[a-zA-Z]+|\$|\\,|&[a-z]+;", seen), re.findall(r".{30}(?:\\|\$).{30}", seen)[:3]
    data = probe(text, tmp_path, "training", tmp_path / "profile")
    assert data["math"] > 40 and data["merror"] == 0, data
    assert data["scroll-width"] <= PHONE, data
