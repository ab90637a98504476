"""The write-up's tree, flops and memory sections: every number is the library's (Flops, memory, the weights
table, the derivation), some are checked against a hand derivation written out here, and the module tree is
compared with a real ``print(model)`` of small llama and qwen3 configs (torch and transformers, tests only)."""

from __future__ import annotations

import json
import re
from fractions import Fraction

import pytest
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.formulas import memory
from llmcount.formulas.capacity import weights_table
from llmcount.formulas.config import read_config
from llmcount.formulas.flops import Flops
from llmcount.presets import presets
from llmcount.renderers.tree import factors, module_tree
from llmcount.renderers.writeup import build, flops_part, memory_part
from llmcount.sources import load

runner = CliRunner()


def section(text: str, head: str) -> str:
    """The Markdown section whose heading starts with ``head``."""
    part = next(p for p in text.split("\n## ") if re.sub(r"^\d+\. ", "", p).startswith(head))  # numbered headings
    return part


# --- hand derivations -------------------------------------------------------------------------------------------


def test_qwen3_32b_flops_per_token_by_hand():
    # Qwen3-32B config: N=64, d=5120, h=64, h_kv=8, h_d=128, d_ff=25600, V=151936; S = 4096, eager full S×S
    c = presets()["qwen3-32b"].config()
    N, d, h, kv, hd = c["num_hidden_layers"], c["hidden_size"], c["num_attention_heads"], 8, c["head_dim"]
    d_ff, V, S = c["intermediate_size"], c["vocab_size"], 4096
    assert c["num_key_value_heads"] == kv
    projections = 2 * d * h * hd + 2 * 2 * d * kv * hd + 2 * h * hd * d  # q, k and v, o: 2 FLOPs per weight
    scores_values = 2 * S * h * hd * 2  # QK^T and AV over the full S×S matrix, per token
    mlp = 3 * 2 * d * d_ff
    per_token = N * (projections + scores_values + mlp) + 2 * d * V
    assert per_token == 72_557_002_752
    part = flops_part(load("qwen3-32b"), 4096)
    assert part.per_token == per_token
    assert part.attention == N * scores_values and part.head == 2 * d * V
    text = build("qwen3-32b", sections="flops").text
    assert "**72,557,002,752** FLOPs" in text and "72{,}557{,}002{,}752" in text


def test_llama_3_8b_weights_by_hand():
    text = build("llama-3-8b", sections="memory").text
    bf16 = 2 * 8_030_261_248  # bytes: 2 per parameter
    assert "| bf16 | 16 | 16,060,522,496 | 14.96 |" in text
    assert "8{,}030{,}261{,}248 \\cdot 2 = 16{,}060{,}522{,}496" in text
    assert bf16 == 16_060_522_496 and round(bf16 / 2**30, 2) == 14.96
    assert "| int4 | 4 | 4,015,130,624 |" in text  # two parameters per byte


def test_qwen3_32b_kv_cache_by_hand():
    per_token = 2 * 64 * 8 * 128 * 2  # keys and values, N layers, h_kv heads of h_d, 2 bytes (bf16)
    text = build("qwen3-32b", sections="memory").text
    assert f"**{per_token:,}** bytes per token" in text and "2 \\cdot 64 \\cdot 128 \\cdot 8" in text
    assert f"keeps {per_token * 4096:,} bytes" in text


# --- the library's numbers, in both languages ---------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["qwen3-32b", "qwen3-235b-a22b", "deepseek-v3", "gpt2", "mistral-7b"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_number_is_the_librarys(spec, lang):
    model = load(spec)
    text = build(spec, "markdown", lang, sections="flops,memory").text
    counts = Flops(model.derivation).evaluate(model.values, 4096, 1)
    part = flops_part(model)
    assert part.per_token == counts.per_token == part.linear + part.attention + part.head
    for n in (part.per_token, part.linear, part.attention, part.head):
        assert f"{n:,}" in text
    mem = memory_part(model)
    for row in weights_table(model.counts.total):
        if row.name != "fp16":  # the bf16 row says it
            assert f"| {row.bytes:,} | {row.bytes / 2**30:,.2f} |" in text
    inference = memory.inference(model.derivation, model.values, "bf16", "bf16", 4096, 1)
    assert mem.kv_seq_bytes == inference.bytes_of("kv_cache") and f"{mem.kv_seq_bytes:,}" in text
    spec_ = model.architecture.attention
    assert mem.kv_bytes == memory.per_token_bytes(model.architecture, model.values, "bf16")
    assert f"**{mem.kv_bytes:,}**" in text
    if inference.kv_per_token_bytes is not None:  # no window: the cache is S times the per-token bytes
        assert mem.kv_seq_bytes == 4096 * inference.kv_per_token_bytes
    assert spec_ is not None


def test_sliding_window_layers_keep_w_minus_one_tokens():
    mem = memory_part(load("mistral-7b"))  # sliding_window 4096: every layer keeps min(S, W - 1) = 4095 tokens
    assert [(k.kind, k.layers, k.tokens) for k in mem.kinds] == [("sliding_attention", 32, 4095)]
    assert mem.kv_seq_bytes == 4095 * mem.kv_bytes
    text = build("mistral-7b", sections="memory").text
    assert "the 32 sliding-attention layers keep 4,095 tokens each: 536,739,840 bytes (0.50 GiB)" in text
    assert 32 * 4095 * 2 * 8 * 128 * 2 == 536_739_840  # layers, tokens, k and v, h_kv, h_d, bytes


def test_mla_caches_the_latent_and_says_what_expanding_would_cost():
    mem = memory_part(load("deepseek-v3"))
    assert mem.kv_elements == 61 * (512 + 64) and mem.expanded_elements == 61 * 128 * (128 + 64 + 128)
    assert "71.1 times larger" in build("deepseek-v3", sections="memory").text


# a BigBird config: its record describes its full attention up to S = (5 + 2 · 3) · 64 = 704 tokens and block-sparse
# attention beyond; the write-ups' S = 4,096 is beyond
BIG_BIRD = {
    "model_type": "big_bird",
    "num_hidden_layers": 4,
    "vocab_size": 1024,
    "hidden_size": 256,
    "num_attention_heads": 4,
    "intermediate_size": 512,
}
# at S = 4,096 = 64 blocks of 64 (no padding), per token: the layers' weights 4 · 2 · (4 · 256² + 2 · 256 · 512),
# block-sparse scores and values 4 · 4 · 256 · 64² · ((7 + 3) · 64 - 12 - 2 · 3) / 4,096 (tests/test_big_bird_costs.py
# checks the formula against FlopCounterMode), the transform 2 · 256², the head 2 · 256 · 1,024, the pooler 2 · 256²
# once over the 4,096 tokens
BIG_BIRD_LAYERS = 4 * 2 * (4 * 256**2 + 2 * 256 * 512)
BIG_BIRD_ATTENTION = 4 * 4 * 256 * 64**2 * (10 * 64 - 18) // 4096
BIG_BIRD_PER_TOKEN = BIG_BIRD_LAYERS + BIG_BIRD_ATTENTION + 2 * 256**2 + 2 * 256 * 1024 + 2 * 256**2 // 4096


@pytest.fixture
def big_bird(tmp_path):
    path = tmp_path / "big_bird.json"
    path.write_text(json.dumps(BIG_BIRD))
    return str(path)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_sequence_beyond_full_attention_counts_the_block_sparse_attention(lang, big_bird):
    text = build(big_bird, "markdown", lang, sections="flops,memory").text
    assert "F_{\\mathrm{token}}" in text and "E_{\\mathrm{KV}}" not in text
    sparse = "block-sparse attention without a mask" if lang == "en" else "不带掩码的块稀疏注意力"
    assert f"{BIG_BIRD_PER_TOKEN:,}" in text and sparse in text
    assert "$S = 704$" in text
    assert ("the KV cache is 0 bytes" if lang == "en" else "KV 缓存为 0 字节") in text
    assert f"{2 * load(big_bird).counts.total:,}" in text  # the weights table stays
    short = build(big_bird, "markdown", lang, sections="flops,memory", seq=704).text
    assert "F_{\\mathrm{token}}" in short and "E_{\\mathrm{KV}}" in short and "block-sparse attention" not in short


def test_chinese_sections_read_as_chinese():
    zh = build("qwen3-32b", "markdown", "zh", sections="tree,flops,memory").text
    for phrase in ("每个 token 的前向计算量", "浮点运算", "KV 缓存", "显存占用", "数据类型", "模块结构", "参数量"):
        assert phrase in zh, phrase
    assert "bytes per token" not in zh and "One token costs" not in zh


def test_seq_option_sets_s(tmp_path):
    result = runner.invoke(app, ["writeup", "qwen3-32b", "--sections", "flops,memory", "--seq", "8k"])
    assert result.exit_code == 0, result.output
    model = load("qwen3-32b")
    assert f"{Flops(model.derivation).evaluate(model.values, 8192, 1).per_token:,}" in result.stdout
    assert "S = 8192" in result.stdout
    bad = runner.invoke(app, ["writeup", "qwen3-32b", "--seq", "zero"])
    assert bad.exit_code != 0 and isinstance(bad.exception, SystemExit) and bad.stdout == ""


# --- the module tree ----------------------------------------------------------------------------------------------


def test_factors_split_a_product_as_written():
    assert factors("d*h*(d_nope + d_rope)") == ["d", "h", "(d_nope + d_rope)"]
    assert factors("h*h_d*d") == ["h", "h_d", "d"]
    assert factors("d*d_ff/2 + d_ff/2") == ["d*d_ff/2 + d_ff/2"]
    assert factors("d**2") == ["d**2"]


def test_tree_shows_counts_where_a_shape_would_be_a_guess():
    tree = module_tree(load("deepseek-v3"))
    assert "(experts): 11,274,289,152 parameters (3*n*d*d_moe)" in tree
    assert "(kv_b_proj): Linear(in_features=512, out_features=32768, bias=False)" in tree  # r_kv to h·(nope+v)
    assert "(0-2): 3 x DecoderLayer(" in tree and "(3-60): 58 x DecoderLayer(" in tree
    gpt2 = module_tree(load("gpt2"))
    assert "(c_attn): Conv1D(nf=2304, nx=768)" in gpt2  # the record's [tree]: GPT-2's Conv1D, output first
    assert "(ln_1): LayerNorm((768,))" in gpt2
    assert "个参数" in module_tree(load("deepseek-v3"), "zh")


def test_tree_lines_fit_a_printed_page():
    for spec in ("qwen3-next-80b-a3b", "deepseek-v3", "qwen3-235b-a22b", "llama-4-scout"):
        assert max(map(len, module_tree(load(spec)).splitlines())) <= 100, spec


SMALL = {
    "qwen3": {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "vocab_size": 1000,
        "hidden_size": 64,
        "intermediate_size": 160,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 24,
        "tie_word_embeddings": False,
    },
    "llama": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": 1000,
        "hidden_size": 64,
        "intermediate_size": 176,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "tie_word_embeddings": True,
    },
}
LEAF = re.compile(
    r"\(([\w-]+)\): (Linear\(in_features=\d+, out_features=\d+, bias=\w+\)|Embedding\(\d+, \d+\)"
    r"|\w*RMSNorm\(\(\d+,\)|\d+ x \w+\()"
)


def leaves(text: str) -> list[tuple[str, str]]:
    """Name and shape of each module line with a shape; class prefixes dropped (Qwen3RMSNorm -> RMSNorm)."""
    out = []
    for name, shape in LEAF.findall(text):
        shape = re.sub(r"^\w*RMSNorm\(\((\d+),\)", r"RMSNorm((\1,)", shape)
        shape = re.sub(r"^(\d+) x \w+\($", r"\1 x Layer", shape)
        out.append((name, shape))
    return out


@pytest.mark.parametrize("kind", sorted(SMALL))
def test_tree_matches_transformers_print_model(kind):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = SMALL[kind]
    torch.manual_seed(0)
    real = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))
    ours = module_tree(read_config(config, "test"))
    assert leaves(ours) == leaves(str(real)), (ours, str(real))
    assert len(leaves(ours)) >= 12


def test_json_carries_the_sections_numbers(big_bird):
    data = build("qwen3-32b", sections="flops,memory", seq=4096).data
    assert data["flops"]["per_token"] == 72_557_002_752 and data["seq"] == 4096
    assert data["memory"]["weights_bytes"]["bf16"] == 2 * 32_762_123_264
    assert data["memory"]["kv_bytes_per_token"] == 262_144
    assert build(big_bird, sections="flops").data["flops"]["per_token"] == BIG_BIRD_PER_TOKEN


@pytest.mark.parametrize("chosen", ["tree,flops", "params", "flops,memory", "memory"])
def test_left_out_sections_leave_no_run_of_blank_lines(chosen):
    for fmt in ("markdown", "latex"):
        assert "\n\n\n" not in build("qwen3-0.6b", fmt, sections=chosen).text


# Qwen3-Next-80B-A3B at S = 4,096: 36 Gated DeltaNet layers, each (tests/test_state_flops.py derives the terms)
# conv 268,632,064 + β·k·kᵀ, q·kᵀ and the masked block times the values 3 · 2,147,483,648 + the state read
# 8,589,934,592 + the state update 4,294,967,296 = 19,595,984,896 FLOPs, so 36 · 19,595,984,896 / 4,096 per token.
QWEN3_NEXT_STATE_PER_TOKEN = 36 * (268_632_064 + 3 * 2_147_483_648 + 8_589_934_592 + 4_294_967_296) // 4096


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_state_layers_are_in_the_flops_section(lang):
    assert QWEN3_NEXT_STATE_PER_TOKEN == 172_230_336
    part = flops_part(load("qwen3-next-80b-a3b"), 4096)
    assert part.refused is None and part.state_kinds == ("linear_attention",)
    assert part.state == QWEN3_NEXT_STATE_PER_TOKEN
    assert part.per_token == part.linear + part.attention + part.state + part.head
    text = section(
        build("qwen3-next-80b-a3b", "markdown", lang, sections="flops").text, "Forward" if lang == "en" else "前向"
    )
    assert "F_{\\mathrm{token}}" in text and "172,230,336" in text
    assert ("elementwise recurrences" if lang == "en" else "逐元素的递推") in text  # what is not counted


MAMBA2_2_7B = {
    "model_type": "mamba2",
    **{"vocab_size": 50288, "hidden_size": 2560, "num_hidden_layers": 64, "num_heads": 80, "head_dim": 64},
    **{"n_groups": 1, "state_size": 128, "conv_kernel": 4, "chunk_size": 256, "tie_word_embeddings": True},
}


def test_a_mean_per_token_is_shown_as_the_exact_fraction(tmp_path):
    # S = 333: the convolution computes 336 outputs per channel and the scan pads to 2 chunks of 256, so forward / S
    # is not whole; the derivation ends on the exact fraction, the prose on two decimals. Mamba-2 has no attention.
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MAMBA2_2_7B))
    model = load(str(path))
    part = flops_part(model, 333)
    forward = Flops(model.derivation).evaluate(model.values, 333, 1).forward
    assert forward % 333 != 0 and part.per_token == Fraction(forward, 333)
    text = build(str(path), "markdown", "en", sections="flops", seq=333).text
    assert f"\\tfrac{{{part.per_token.numerator:,}}}{{{part.per_token.denominator}}}".replace(",", "{,}") in text
    assert f"**{float(part.per_token):,.2f}** FLOPs" in text
    assert "QK^{\\top}" not in section(text, "Forward")  # no attention layer: no attention clause


ZAMBA2 = {"model_type": "zamba2", "vocab_size": 64, "hidden_size": 32, "num_attention_heads": 4}


def test_zamba2_flops_run_the_shared_block_in_every_hybrid_layer(tmp_path):
    """Zamba2's shared block is parameters once but runs in each hybrid layer: its FLOPs are over N_attn layers, and
    the Mamba-2 layers add their chunked scan."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**ZAMBA2, "num_hidden_layers": 2, "layers_block_type": ["mamba", "hybrid"]}))
    text = build(str(path), "markdown", "en", sections="flops").text
    assert "not derived" not in text and "(mamba)" in text
    assert r"F_{\mathrm{token}} &= N_{\mathrm{attn}}(2\,d_{\mathrm{att}}\,h\,h_{d}" in text
    assert r"\left\lceil{\frac{S}{Q}}\right\rceil" in text


def test_laguna_flops_sum_the_query_heads_per_layer(tmp_path):
    # heads 4 and 8 on two full layers of h_d = 8: the scores and values cost 4 · S · 8 · 12 per token, no state part
    config = {"model_type": "laguna", "num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 4}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "head_dim": 8, "num_attention_heads_per_layer": [4, 8]}))
    text = build(str(path), "markdown", "en", sections="flops").text
    assert "not derived" not in text and "recurrent state" not in text
    assert f"{4 * 4096 * 8 * 12:,} (" in text  # the attention part at S = 4,096


def test_no_state_clause_when_the_config_has_no_state_layer(tmp_path):
    # full_attention_interval 1: every Qwen3-Next layer is full attention, none keeps a state
    config = {"model_type": "qwen3_next", "vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2}
    config |= {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "full_attention_interval": 1}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "num_experts": 4, "num_experts_per_tok": 2}))
    part = flops_part(load(str(path)), 4096)
    assert part.state_kinds == () and part.state == 0 and part.attention > 0
    assert "keep a state" not in build(str(path), "markdown", "en", sections="flops").text
