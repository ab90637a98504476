"""approx, check, compare, solve, sweep: known results reproduced, each expected value derived by hand here
or taken from a published count (the presets' index.json: Hub safetensors metadata / transformers 5.23.0)."""

import csv
import io
import json
import math

import pytest
import sympy
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.formulas.symbols import BY_NAME
from llmcount.renderers.filters import decimal

runner = CliRunner()
S = {name: sympy.Symbol(name) for name in BY_NAME}  # plain symbols: N is not sympy's N()
N, V, d, h_d, d_moe, n, k = (S[name] for name in ("N", "V", "d", "h_d", "d_moe", "n", "k"))

# Published totals (presets/index.json: the checkpoint's own count, equal to transformers 5.23.0 on meta).
QWEN3_8B = 8_190_735_360
GPT2 = 124_439_808


def run(*args):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def run_json(*args):
    return json.loads(run(*args, "--json"))


def expr(text):
    return sympy.parse_expr(text, local_dict=S)


def same(text, expected):
    return sympy.simplify(expr(text) - expected) == 0


# --- approx ----------------------------------------------------------------------------------------------------------


def test_approx_classic_block_is_12d2_plus_13d():
    # GPT-2 block by hand, d_ff = 4d: c_attn d·3d + 3d, c_proj d² + d (4d² + 4d); c_fc d·4d + 4d, c_proj 4d·d + d
    # (8d² + 5d); ln_1, ln_2 2d each (4d). Sum 12d² + 13d; attention and MLP are 1/3 and 2/3 of the limit.
    data = run_json("approx", "gpt2")
    assert same(data["exact_per_layer"], 12 * d**2 + 13 * d)
    assert same(data["leading_per_layer"], 12 * d**2)
    assert same(data["remainder_per_layer"], 13 * d)
    assert data["shares"]["attention"]["asymptotic"] == "1/3"
    assert data["shares"]["mlp"]["asymptotic"] == "2/3"
    assert data["shares"]["embedding"]["asymptotic"] == "0"
    # total ≈ 12·N·d² + V·d + n_pos·d (tied head); on GPT-2 (N=12, d=768, V=50257, n_pos=1024):
    approx = 12 * 12 * 768**2 + 50257 * 768 + 1024 * 768
    assert data["approx"] == approx
    assert data["exact"] == GPT2
    assert data["relative_error"] == pytest.approx((approx - GPT2) / GPT2)


def test_approx_qwen3_family_with_assumed_ratios():
    # Qwen3, d_ff = 3d, h·h_d = d, h_kv = h/4: q and o d² each, k and v d²/4 each, gated MLP 3·d·3d = 9d²,
    # q/k norms 2h_d, two RMSNorms 2d: 11.5d² + 2d + 2h_d.
    data = run_json("approx", "qwen3", "--assume", "d_ff=3*d", "--assume", "h=d/h_d", "--assume", "h_kv=h/4")
    assert same(data["exact_per_layer"], sympy.Rational(23, 2) * d**2 + 2 * d + 2 * h_d)
    assert same(data["leading_per_layer"], sympy.Rational(23, 2) * d**2)
    assert same(data["leading_total"], sympy.Rational(23, 2) * N * d**2 + 2 * V * d)
    assert data["assumed"] == ["d_ff", "h", "h_kv"]
    assert "relative_error" not in data  # no config: nothing to measure on


def test_approx_qwen3_8b_uses_its_config_ratios():
    # Qwen3-8B: d=4096, d_ff=12288=3d, h·h_d=32·128=d, h_kv=8=h/4: the same 11.5d² + 2d + 2h_d.
    data = run_json("approx", "qwen3-8b")
    assert same(data["exact_per_layer"], sympy.Rational(23, 2) * d**2 + 2 * d + 2 * h_d)
    # The blog figure 2·V·d + 11.5·d²·N = 8,190,427,136 against the published 8,190,735,360.
    approx = 2 * 151936 * 4096 + 23 * 4096**2 * 36 // 2
    assert data["approx"] == approx == 8_190_427_136
    assert data["relative_error"] == pytest.approx((approx - QWEN3_8B) / QWEN3_8B)
    shares = data["shares"]
    assert shares["attention"]["asymptotic"] == "5/23" and shares["mlp"]["asymptotic"] == "18/23"


def test_approx_qwen3_0_6b_block_is_15d2():
    # Qwen3-0.6B: d=1024, h·h_d=16·128=2d, h_kv=8=h/2, d_ff=3072=3d. q, o: 2d² each; k, v: d·(8·128)=d² each;
    # MLP 9d². Leading 15d²; the tied head makes the total 15·N·d² + V·d.
    data = run_json("approx", "qwen3-0.6b")
    assert same(data["leading_per_layer"], 15 * d**2)
    assert same(data["leading_total"], 15 * N * d**2 + V * d)


def test_approx_moe_total_and_activated():
    # Qwen3-235B-A22B: d=4096, h·h_d=64·128=2d, h_kv=4=h/16, d_moe=1536=3d/8, n=128, k=8.
    # Attention 4d² + 2·d·(2d/16) = 4.25d²; experts 3·n·d·d_moe = 144d² (activated: 3·k·d·d_moe = 9d²).
    total = run_json("approx", "qwen3-235b-a22b")
    activated = run_json("approx", "qwen3-235b-a22b", "--activated")
    assert same(total["leading_per_layer"], sympy.Rational(593, 4) * d**2)
    assert same(activated["leading_per_layer"], sympy.Rational(53, 4) * d**2)
    assert total["exact"] == 235_093_634_560  # published
    assert activated["count"] == "activated" and activated["exact"] < total["exact"]


def test_approx_over_several_models_and_without_embedding():
    data = run_json("approx", "gpt2", "--over", "gpt2-xl", "--no-embedding")
    assert same(data["leading_total"], 12 * N * d**2)
    (xl,) = data["over"]
    # GPT-2 XL: N=48, d=1600; oracle total 1,557,611,200, embedding (50257 + 1024)·1600 (tied head).
    non_embedding = 1_557_611_200 - (50257 + 1024) * 1600
    assert xl["exact"] == non_embedding
    assert xl["approx"] == 12 * 48 * 1600**2
    assert xl["relative_error"] == pytest.approx((12 * 48 * 1600**2 - non_embedding) / non_embedding)


def test_approx_text_names_the_ratios_and_the_limit():
    out = run("approx", "qwen3-8b")
    assert "h_kv = h/4" in out and "11.5·d²" in out and "11.5·N·d² + 2·V·d" in out
    assert "5/23" in out


# --- check -----------------------------------------------------------------------------------------------------------


def test_check_blog_formula_reports_what_it_leaves_out():
    data = run_json("check", "qwen3-8b", "2*V*d + 11.5*d**2*N")
    assert data["exact"] == QWEN3_8B
    assert data["claimed"] == 2 * 151936 * 4096 + 23 * 4096**2 * 36 // 2
    assert data["difference"] == data["claimed"] - QWEN3_8B
    missing = {m["term"]: m["components"] for m in data["missing"]}
    # Left out (N=36, d=4096, h_d=128): q/k norms 2·N·h_d, the two RMSNorms 2·N·d, the final norm d.
    assert set(missing) == {"2*N*h_d", "2*N*d", "d"}
    assert missing["2*N*h_d"] == ["attention/q_norm", "attention/k_norm"]
    assert missing["2*N*d"] == ["norms/input_layernorm", "norms/post_attention_layernorm"]
    assert missing["d"] == ["norms/norm"]
    assert sum(m["count"] for m in data["missing"]) == 2 * 36 * 128 + 2 * 36 * 4096 + 4096 == -data["difference"]
    assert data["extra"] == []


def test_check_unicode_forms_are_the_same_formula():
    plain = run_json("check", "qwen3-8b", "2*V*d + 11.5*d**2*N")
    fancy = run_json("check", "qwen3-8b", "2·|V|·d + 11.5·d²·N")
    assert fancy["claimed"] == plain["claimed"]


def test_check_exact_activated_formula_has_no_error():
    formula = "N*(2*d + n*d + 3*k*d*d_moe + 2*h*h_d*d + 2*h_kv*h_d*d + 2*h_d) + d*(2*V + 1)"
    data = run_json("check", "qwen3-235b-a22b", "--activated", formula)
    # By hand, Qwen3-235B-A22B (N=94, d=4096, h=64, h_d=128, h_kv=4, n=128, k=8, d_moe=1536, V=151936):
    layer = 2 * 4096 + 128 * 4096 + 3 * 8 * 4096 * 1536 + 2 * 64 * 128 * 4096 + 2 * 4 * 128 * 4096 + 2 * 128
    assert data["exact"] == data["claimed"] == 94 * layer + 4096 * (2 * 151936 + 1)
    assert data["relative_error"] == 0 and data["missing"] == [] and data["extra"] == []


def test_check_finds_the_router_and_a_dropped_projection():
    no_router = "N*(2*d + 3*k*d*d_moe + 2*h*h_d*d + 2*h_kv*h_d*d + 2*h_d) + d*(2*V+1)"
    data = run_json("check", "qwen3-235b-a22b", "--activated", no_router)
    assert [(m["term"], m["component"]) for m in data["missing"]] == [("N*d*n", "moe/router")]
    assert data["missing"][0]["count"] == 94 * 4096 * 128
    one_projection = "N*(2*d + n*d + 3*k*d*d_moe + h*h_d*d + 2*h_kv*h_d*d + 2*h_d) + d*(2*V+1)"
    data = run_json("check", "qwen3-235b-a22b", "--activated", one_projection)
    assert [(m["term"], m["components"]) for m in data["missing"]] == [
        ("N*d*h*h_d", ["attention/q_proj", "attention/o_proj"])
    ]


def test_check_reports_extra_terms():
    # Qwen3 has no q bias: N·h·h_d is extra.
    formula = "3*N*d*d_ff + 2*N*d*h*h_d + 2*N*d*h_d*h_kv + 2*N*d + 2*N*h_d + 2*V*d + d + N*h*h_d"
    data = run_json("check", "qwen3-8b", formula)
    assert data["missing"] == []
    assert [e["term"] for e in data["extra"]] == ["N*h*h_d"]
    assert data["difference"] == 36 * 32 * 128


def test_check_text_output():
    out = run("check", "qwen3-8b", "2*V*d + 11.5*d**2*N")
    assert "missing:" in out and "attention/q_norm" in out and "8,190,735,360" in out and "extra: nothing" in out


# --- compare ---------------------------------------------------------------------------------------------------------


def test_compare_side_by_side():
    data = run_json("compare", "qwen3-8b", "llama-3-8b", "mistral-7b")
    models = {m["model"]: m for m in data["models"]}
    assert models["qwen3-8b"]["total"] == QWEN3_8B
    assert models["llama-3-8b"]["total"] == 8_030_261_248
    assert models["mistral-7b"]["total"] == 7_241_732_096
    for m in data["models"]:
        assert sum(g["count"] for g in m["groups"].values()) == m["total"]
        assert m["embedding_share"] == pytest.approx(m["embedding"] / m["total"])
    # Mistral-7B: V=32000, d=4096, untied: embedding 2·32000·4096.
    assert models["mistral-7b"]["embedding"] == 2 * 32000 * 4096
    out = run("compare", "qwen3-8b", "llama-3-8b", "mistral-7b")
    assert "8,030,261,248" in out and "embedding share" in out
    assert "attention/q_norm" in run("compare", "qwen3-8b", "qwen3-30b-a3b", "--components")


# --- solve -----------------------------------------------------------------------------------------------------------


def test_solve_width_for_7b_at_32_layers():
    args = ["solve", "llama", "--target", "7B", "--for", "d", "--set", "N=32", "--set", "V=32000"]
    data = run_json(*args, "--set", "d_ff=8/3*d", "--set", "h_kv=h", "--multiple-of", "128")
    # By hand, with h_d = d/h: per layer 4d² (attention) + 8d² (MLP) + 2d, so 32·(12d² + 2d) + 2·32000·d + d
    # = 384d² + 64065d; the root of 384d² + 64065d = 7e9:
    root = (-64065 + math.sqrt(64065**2 + 4 * 384 * 7e9)) / (2 * 384)
    assert data["symbol"] == "d"
    assert float(expr(data["exact"])) == pytest.approx(root)
    # Candidates: multiples of 128 where d_ff = 8d/3 is whole: 3840 below (3968, 4096 are not), 4224 above.
    assert data["candidates"] == [
        {"value": 3840, "total": 384 * 3840**2 + 64065 * 3840, "difference": 384 * 3840**2 + 64065 * 3840 - 7 * 10**9},
        {"value": 4224, "total": 384 * 4224**2 + 64065 * 4224, "difference": 384 * 4224**2 + 64065 * 4224 - 7 * 10**9},
    ]
    assert {s["value"] for s in data["skipped"]} == {3968, 4096}
    assert "3840" in run(*args, "--set", "d_ff=8/3*d", "--set", "h_kv=h", "--multiple-of", "128")


def test_solve_layers_from_a_base_config_hits_the_published_count():
    data = run_json("solve", "qwen3", "--from", "qwen3-8b", "--target", str(QWEN3_8B), "--for", "N")
    assert data["exact"] == "36"
    assert data["candidates"] == [{"value": 36, "total": QWEN3_8B, "difference": 0}]


# --- sweep -----------------------------------------------------------------------------------------------------------


def test_sweep_csv_rows_hit_published_counts():
    out = run("sweep", "qwen3", "--set", "N=28,36", "--set", "d=2048:4096:2048", "--from", "qwen3-8b", "--csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["N", "d", "total", "activated"]
    assert [r[:2] for r in rows[1:]] == [["28", "2048"], ["28", "4096"], ["36", "2048"], ["36", "4096"]]
    assert rows[4] == ["36", "4096", str(QWEN3_8B), str(QWEN3_8B)]  # Qwen3-8B itself
    # N=36, d=2048 by hand (h=32, h_kv=8, h_d=128, d_ff=12288, V=151936 fixed; untied):
    layer = 2 * 2048 * 32 * 128 + 2 * 2048 * 8 * 128 + 3 * 2048 * 12288 + 2 * 128 + 2 * 2048
    assert int(rows[3][2]) == 36 * layer + 2 * 151936 * 2048 + 2048


def test_sweep_relations_and_json():
    data = run_json("sweep", "gpt2", "--set", "d=768,1600", "--set", "d_ff=4*d")
    by_d = {row["d"]: row["total"] for row in data["rows"]}
    assert by_d[768] == GPT2  # GPT-2 itself (its d_ff is 4d)
    assert data["relations"] == {"d_ff": "4*d"}


@pytest.mark.parametrize("backend", ["numpy", "python"])
def test_sweep_is_exact_beyond_int64(backend):
    from llmcount.analysis import subject_and_base
    from llmcount.analysis.parse import parse_setting
    from llmcount.analysis.sweep import sweep

    if backend == "numpy":
        pytest.importorskip("numpy")
    derivation, base, _ = subject_and_base("qwen3", "qwen3-8b")
    settings = [parse_setting(s, "--set", grid=True) for s in ("d=1024,10000000000", "N=1,2", "d_ff=3*d")]
    result = sweep(derivation, settings, base, backend=backend)
    rows = list(result.rows())
    assert result.backend == backend
    assert all(type(v) is int for row in rows for v in row)
    for d_value, n_value, total, _ in rows:
        # 2·d·h·h_d + 2·d·h_kv·h_d + 9d² + 2h_d + 2d per layer (h=32, h_kv=8, h_d=128), 2Vd + d outside
        layer = 2 * d_value * 4096 + 2 * d_value * 1024 + 9 * d_value**2 + 256 + 2 * d_value
        assert total == n_value * layer + 2 * 151936 * d_value + d_value
    assert rows[-1][2] > 2**63  # past int64: evaluated in Python ints, not wrapped


def test_sweep_text_table():
    out = run("sweep", "qwen3", "--set", "N=36", "--set", "d=4096", "--from", "qwen3-8b")
    assert "8,190,735,360" in out


# --- filters ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (sympy.Rational(23, 2) * N * d**2 + 2 * V * d, "11.5·N·d² + 2·V·d"),
        (12 * d**2 + 13 * d, "12·d² + 13·d"),
        (sympy.Rational(593, 4) * d**2, "148.25·d²"),
        (sympy.Rational(1, 3), "1/3"),
        (sympy.Rational(10, 7) * d**2, "10·d²/7"),
        (-sympy.Rational(3, 2) * N * d**2 + 2 * d, "-1.5·N·d² + 2·d"),
    ],
)
def test_decimal_filter(value, expected):
    assert decimal(value) == expected


def test_check_reads_d_ff_as_the_expert_width_of_an_all_moe_model():
    # The (and a seed post's) activated formula writes an expert's width as d_ff; Qwen3-235B-A22B
    # has no dense MLP, so d_ff can only mean d_moe = 1536. What it leaves out is the router:
    # N·d·n = 94·4096·128 = 49,283,072 (by hand).
    formula = "N*(2*d + 3*k*d*d_ff + 2*h*h_d*d + 2*h_kv*h_d*d + 2*h_d) + d*(2*V+1)"
    result = runner.invoke(app, ["check", "qwen3-235b-a22b", "--activated", formula, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["difference"] == -94 * 4096 * 128
    assert [m["component"] for m in data["missing"]] == ["moe/router"]
    assert data["extra"] == []
    assert "d_moe = 1536" in data["notes"][0]


def test_sweep_caps_dense_layers_at_the_layer_count():
    # count reads first_k_dense_replace > num_hidden_layers as "every layer dense": the sweep must agree row by row.
    from llmcount.formulas.config import read_config
    from llmcount.presets import find

    config = find("deepseek-v3").config()
    result = runner.invoke(
        app, ["sweep", "deepseek_v3", "--set", "N=1:4", "--set", "N_dense=5", "--from", "deepseek-v3", "--csv"]
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [int(r["N"]) for r in rows] == [1, 2, 3, 4]
    for row in rows:
        counts = read_config({**config, "num_hidden_layers": int(row["N"]), "first_k_dense_replace": 5}, "x").counts
        assert (int(row["total"]), int(row["activated"])) == (counts.total, counts.activated)


def test_solve_lists_at_most_a_few_skipped_values():
    args = ["solve", "llama", "--target", "7B", "--for", "d", "--set", "N=32", "--set", "V=32000"]
    result = runner.invoke(app, [*args, "--set", "h_kv=h", "--set", "d_ff=1/d"])
    skipped = result.stdout.split("skipped:", 1)[-1]
    assert len(skipped.strip().splitlines()) <= 6, result.stdout
    assert "more" in skipped


def test_solve_heads_not_divisible_by_kv_heads():
    # qwen3-8b: each kv head adds k_proj + v_proj = 2·d·h_d = 2·4096·128 per layer, ×36 layers = 37,748,736; the
    # rest is 8,190,735,360 - 8·37,748,736. So 8.6B needs h_kv ≈ 18.84; 17..21 do not divide h = 32: 16 and 32 do.
    result = runner.invoke(app, ["solve", "qwen3", "--target", "8.6B", "--for", "h_kv", "--from", "qwen3-8b", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [c["value"] for c in data["candidates"]] == [16, 32]


def test_approx_of_a_family_without_a_query_head_count(tmp_path):
    """JetMoE's record reads no h (its attention is a mixture of experts): h_kv stands as its number, and the exact
    column is transformers' count of the class defaults."""
    oracle = pytest.importorskip("oracle")
    config = {**oracle.runnable_defaults("jetmoe"), "model_type": "jetmoe"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config, default=str))
    result = CliRunner().invoke(app, ["approx", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert f"{oracle.meta_total(config):,}" in CliRunner().invoke(app, ["approx", str(path)]).stdout
