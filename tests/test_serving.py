"""Inference memory per GPU under tp/pp/dp/ep (vLLM's split), fits-or-not on a named GPU, fit, and the context-length
warning. Expected figures are hand derivations from the configs' numbers, written out here, or memory.inference's
KV cache (itself checked against transformers' cache in test_memory.py) times the replication the layout states."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from refusal import assert_refused, run
from typer.testing import CliRunner

from llmcount import serving
from llmcount.cli import app
from llmcount.formulas import memory as mem
from llmcount.formulas.layer_kinds import stages
from llmcount.serving import Layout
from llmcount.sources import load

runner = CliRunner()


def kv_total(model, seq: int = 4096, batch: int = 1) -> int:
    result = mem.inference(model.derivation, model.values, "bf16", None, seq, batch)
    return result.bytes_of("kv_cache") + result.bytes_of("state")


# --- hand derivations ----------------------------------------------------------------------------------------


def test_dense_gqa_per_gpu_by_hand():
    """Llama-3.1-70B (d 8192, 64 heads, 8 KV heads of 128, d_ff 28672, 80 layers, V 128256 untied) at tp 4."""
    d, h, h_kv, d_h, d_ff, n_layers, vocab, tp = 8192, 64, 8, 128, 28672, 80, 128256, 4
    layer = (d * h * d_h + 2 * d * h_kv * d_h + h * d_h * d + 3 * d * d_ff) // tp + 2 * d  # norms whole
    expected = n_layers * layer + 2 * vocab * d // tp + d  # embedding and head by rows (128256 = 64·2004), final norm
    shard = serving.shard(load("llama-3.1-70b"), Layout(tp=tp), seq=4096)
    assert shard.gpu_parameters == expected == 17_639_415_808
    assert shard.weights_bytes == 2 * expected
    # keys and values: 2 × 80 layers × 8/4 heads × 128 × 4096 tokens × 2 bytes
    assert shard.kv_bytes == 2 * n_layers * (h_kv // tp) * d_h * 4096 * 2 == 335_544_320


def test_moe_per_gpu_by_hand():
    """Qwen3-30B-A3B (d 2048, 32 heads, 4 KV heads of 128, 48 layers, 128 experts of 768, V 151936 untied) at tp 8:
    the 4 KV heads are copied (one per rank), the router and q/k norms kept whole, the experts over 8 ranks."""
    d, h, d_h, n_layers, n, d_moe, vocab, tp = 2048, 32, 128, 48, 128, 768, 151936, 8  # 4 KV heads < tp
    attention = (d * h * d_h + h * d_h * d) // tp + 2 * d * 1 * d_h  # one key-value head per rank
    layer = attention + 2 * d_h + 2 * d + n * d + n * 3 * d * d_moe // tp
    expected = n_layers * layer + 2 * vocab * d // tp + d
    shard = serving.shard(load("qwen3-30b-a3b"), Layout(tp=tp), seq=4096)
    assert shard.gpu_parameters == expected
    assert shard.kv_bytes == 2 * n_layers * 1 * d_h * 4096 * 2
    with_ep = serving.shard(load("qwen3-30b-a3b"), Layout(tp=tp, ep=tp), seq=4096)
    assert with_ep.gpu_parameters == expected  # n / 8 whole experts: the same parameters


def test_pipeline_heaviest_stage_by_hand():
    """Llama-3.1-70B over pp 3: vLLM's stages are 27/27/26 layers; the first (embedding + 27 layers) is heaviest."""
    d, h_kv, d_h, d_ff, vocab = 8192, 8, 128, 28672, 128256
    layer = 2 * d * d + 2 * d * h_kv * d_h + 3 * d * d_ff + 2 * d
    shard = serving.shard(load("llama-3.1-70b"), Layout(pp=3), seq=4096)
    assert shard.stage == 1
    assert shard.gpu_parameters == 27 * layer + vocab * d
    assert shard.kv_bytes == 2 * 27 * h_kv * d_h * 4096 * 2


def test_pipeline_sliding_layers_by_hand():
    """Gemma-2-2B (26 layers, even ones sliding with W = 4096, 4 KV heads of 256, tied V 256000 × d 2304) over pp 2:
    stages 0-12 (7 sliding, 6 full) and 13-25 (6 sliding, 7 full, the final norm and the tied head's copy of the
    embedding); at S = 32k the second is heavier. transformers' sliding layers keep W - 1 = 4095 tokens."""
    shard = serving.shard(load("gemma-2-2b"), Layout(pp=2), seq=32768)
    assert shard.stage == 2
    assert shard.kv_bytes == 2 * (2 * 4 * 256) * (7 * 32768 + 6 * 4095)
    model = load("gemma-2-2b")
    one_layer = (model.counts.total - 256000 * 2304 - 2304) // 26
    assert shard.gpu_parameters == 13 * one_layer + 256000 * 2304 + 2304


@pytest.mark.parametrize(("name", "pp"), [("gemma-2-2b", 3), ("llama-3.1-70b", 3), ("qwen3-next-80b-a3b", 4)])
def test_stages_sum_to_total(name, pp):
    """Over the pp stages: every layer once, the tied head's embedding twice (first and last stage); every layer's
    cache once."""
    model = load(name)
    plans = serving.stage_plans(model, Layout(pp=pp), seq=32768)
    tied = 0
    if model.tied:
        values = {str(k): v for k, v in model.values.items()}
        tied = values["V"] * values["d"]
    assert [p.stage for p in plans] == list(range(1, pp + 1))
    assert sum(p.parameters for p in plans) == model.counts.total + tied
    assert sum(p.kv_bytes(32768, 2) for p in plans) == kv_total(model, 32768, 2)


def test_vllm_stages():
    # vllm/distributed/utils.py get_pp_indices: the extra layers on the stages before the last
    assert [len(r) for r in stages(61, 4, before_last=True)] == [15, 15, 16, 15]
    assert [len(r) for r in stages(80, 3, before_last=True)] == [27, 27, 26]
    assert [len(r) for r in stages(81, 4, before_last=True)] == [20, 20, 21, 20]
    assert [len(r) for r in stages(81, 4)] == [21, 20, 20, 20]  # Megatron's (training): the first ones


def test_vocabulary_padded_to_64():
    """GPT-2's 50257 rows are padded to 50304 (= 64 · 786) before vLLM splits them; the padding is held."""
    model = load("gpt2")
    one = serving.shard(model, Layout(), seq=1)
    assert one.vocab_padded == 50304
    assert one.gpu_parameters - model.counts.total == (50304 - 50257) * 768  # tied: one table


# --- sums over the ranks -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "tp"), [("llama-3.1-70b", 2), ("llama-3.1-70b", 8), ("qwen3-8b", 4), ("qwen3-8b", 8), ("mistral-7b", 4)]
)
def test_ranks_sum_to_total_plus_replication(name, tp):
    """tp × per GPU = the total + the vectors each rank keeps whole (norm scales: (tp − 1) copies) + the copied
    key-value heads' k/v projections; KV: the total × tp / h_kv when h_kv < tp, else the total."""
    model = load(name)
    values = {str(k): v for k, v in model.values.items()}
    d, n_layers, h_kv = values["d"], values["N"], values["h_kv"]
    d_h = values.get("d_h", d // values["h"])
    shard = serving.shard(model, Layout(tp=tp), seq=4096)
    norms = 2 * n_layers * d + d + (2 * n_layers * d_h if name.startswith("qwen3") else 0)  # q/k norms (Qwen3)
    copies = max(tp // h_kv, 1)
    kv_weights = 2 * n_layers * d * h_kv * d_h
    expected = model.counts.total + (tp - 1) * norms + (copies - 1) * kv_weights
    assert tp * shard.gpu_parameters == expected
    assert tp * shard.kv_bytes == kv_total(model) * copies


def test_mla_latent_on_every_rank():
    model = load("deepseek-v2-lite")
    shard = serving.shard(model, Layout(tp=4), seq=4096)
    assert shard.kv_bytes == kv_total(model)  # r_kv + d_rope per token, whole on each of the 4 ranks
    assert any("latent" in note for note in shard.notes)


@pytest.mark.parametrize("name", ["gemma-2-2b", "qwen3-next-80b-a3b", "mistral-7b", "deepseek-v3", "gpt-oss-20b"])
def test_one_gpu_is_transformers_cache(name):
    model = load(name)
    assert serving.shard(model, Layout(), seq=8192, batch=3).kv_bytes == kv_total(model, 8192, 3)


# --- refusals --------------------------------------------------------------------------------------------------


def test_tp_not_dividing_heads_names_the_key():
    with pytest.raises(serving.LlmcountError, match="num_attention_heads"):
        serving.shard(load("llama-3.1-70b"), Layout(tp=3))


def test_ep_must_be_tp_dp():
    with pytest.raises(serving.LlmcountError, match="EP size = TP × DP"):
        serving.shard(load("qwen3-30b-a3b"), Layout(tp=8, ep=4))
    with pytest.raises(serving.LlmcountError, match="no routed experts"):
        serving.shard(load("llama-3-8b"), Layout(tp=2, ep=2))


# --- context ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "limit"),
    [
        ({"rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096}}, 163840),
        ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, 131072),
        ({"rope_scaling": {"type": "linear", "factor": 4.0}}, 4 * 131072),
        ({"model_type": "gemma3_text", "rope_scaling": {"rope_type": "linear", "factor": 8.0}}, 131072),
        ({"rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 2.0}}}, 2 * 131072),
        ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}, 131072),
        ({}, 131072),
    ],
)
def test_context_limit_as_vllm_derives_it(config, limit):
    assert serving.context_limit(config, 131072)[0] == limit


def test_warning_beyond_context():
    result = runner.invoke(app, ["memory", "qwen3-8b", "--tp", "2", "--seq", "64k"])
    assert result.exit_code == 0
    assert "warning: " in result.stderr and "max_position_embeddings 40,960" in result.stderr
    quiet = runner.invoke(app, ["memory", "qwen3-8b", "--tp", "2", "--seq", "32k"])
    assert "warning" not in quiet.stderr


# --- the CLI -----------------------------------------------------------------------------------------------------


def test_memory_gpu_fits_json():
    result = runner.invoke(app, ["memory", "llama-3.1-70b", "--seq", "128k", "--tp", "4", "--gpu", "h100", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["weights_bytes_per_gpu"] == 2 * 17_639_415_808
    assert data["kv_cache_bytes_per_gpu"] == 2 * 80 * 2 * 128 * 131072 * 2
    assert data["gpu_memory_bytes"] == 80 * 10**9
    assert data["left_bytes"] == 80 * 10**9 - data["total_bytes_per_gpu"]
    assert data["fits"] is True


def test_memory_text_shows_gb_and_gib():
    result = runner.invoke(app, ["memory", "llama-3.1-70b", "--tp", "4", "--gpu", "h100"])
    assert result.exit_code == 0
    assert "35.28 GB = 32.86 GiB" in result.stdout and "fits:" in result.stdout


def test_fit_nothing_fits_says_why_and_what_would():
    result = runner.invoke(app, ["fit", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--dtype", "bf16", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["max_batch"] == 0 and "weights per GPU" in data["reason"]
    assert any(w.startswith("--tp 16") for w in data["would_fit"])  # 128 heads: tp 16 halves the weights per GPU
    assert any(w.startswith("weights in fp8") for w in data["would_fit"])  # 671B in fp8 / 8: 84.8 GB < 141 GB
    assert data["dtype"] == "bf16"  # as --dtype says; without it, as the FP8 checkpoint stores them (fits)


def test_fit_capped_by_context():
    result = runner.invoke(app, ["fit", "llama-3.1-70b", "--gpu", "h100", "--gpus", "4", "--seq", "128k", "--json"])
    data = json.loads(result.stdout)
    assert data["max_seq"] == 131072 and data["capped_by_context"]
    # at S = 128k, per GPU 35.28 GB of weights + 10.74 GB per sequence in 80 GB: 4 sequences
    weights, per_sequence = 2 * 17_639_415_808, 2 * 80 * 2 * 128 * 131072 * 2
    assert data["max_batch"] == (80 * 10**9 - weights) // per_sequence == 4


def test_fit_without_a_context_length_says_it_is_not_capped():
    result = runner.invoke(app, ["fit", "gemma-3-27b-it", "--gpu", "h100", "--json"])  # text_config gives none
    data = json.loads(result.stdout)
    assert not data["capped_by_context"] and any("no max_position_embeddings" in n for n in data["notes"])
    given = runner.invoke(app, ["fit", "llama-3.1-70b", "--gpu", "h100", "--gpus", "4", "--json"])
    assert not any("no max_position_embeddings" in n for n in json.loads(given.stdout)["notes"])


def test_fit_takes_an_engine_kv_rule():
    model = load("llama-3-8b")
    plain = serving.fit(model, 80 * 10**9, Layout(), seq=4096)
    doubled = serving.fit(model, 80 * 10**9, Layout(), seq=4096, kv=lambda plan: lambda s, b: 2 * plan.kv_bytes(s, b))
    assert doubled.max_batch == plain.max_batch // 2
    free = serving.fit(model, 80 * 10**9, Layout(), seq=4096, kv=lambda plan: lambda s, b: 0)
    assert free.max_seq is None and free.max_batch is None


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["memory", "llama-3.1-70b", "--tp", "3"], "num_attention_heads"),
        (["memory", "llama-3.1-70b", "--tp", "0"], "--tp"),
        (["memory", "llama-3.1-70b", "--tp", "-2"], "--tp"),
        (["memory", "llama-3.1-70b", "--tp", "99999999"], "--tp"),
        (["memory", "llama-3.1-70b", "--gpu", "h900"], "unknown GPU"),
        (["memory", "llama-3.1-70b", "--gpu", "h100", "--gpus", "3", "--tp", "2"], "--gpus 3"),
        (["memory", "llama-3.1-70b", "--tp", "2", "--seq", "0"], "--seq"),
        (["fit", "llama-3.1-70b", "--gpu", "h100", "--seq", "1000000000000000"], "--seq"),
        (["fit", "llama-3.1-70b", "--gpu", "nope"], "unknown GPU"),
    ],
)
def test_bad_input_one_line(args, needle):
    result = runner.invoke(app, args)
    assert result.exit_code in (1, 2)
    assert result.stdout == ""
    assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_api_memory_per_gpu():
    import llmcount

    shard = llmcount.memory("llama-3.1-70b", tp=4)
    assert (shard.weights_bytes, shard.kv_bytes) == (2 * 17_639_415_808, 335_544_320)
    with pytest.raises(serving.LlmcountError, match="tp"):
        llmcount.memory("llama-3.1-70b", tp=0)


def test_one_gpu_fit_agrees_with_gpu_memory():
    """At tp = 1 with a vocabulary vLLM does not pad (128256 = 64 · 2004), the per-GPU search gives what
    ``memory --gpu-memory`` gives on one GPU (formulas.capacity.fit, over memory.inference)."""
    from llmcount.formulas.capacity import fit as one_gpu

    model = load("llama-3-8b")
    ours = serving.fit(model, 24 * 10**9, Layout(), seq=8192)
    theirs = one_gpu(model.derivation, model.values, 24 * 10**9, "bf16", None, 8192)
    assert (ours.max_seq, ours.max_batch) == (theirs.max_seq_by_memory, theirs.max_batch)


def test_gpu_memory_per_gpu():
    result = runner.invoke(app, ["memory", "llama-3.1-70b", "--gpu-memory", "80GB", "--tp", "4", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    weights, per_token = 2 * 17_639_415_808, 2 * 80 * 2 * 128 * 2
    assert data["max_seq_by_memory"] == (80 * 10**9 - weights) // per_token
    assert data["max_batch"] == (80 * 10**9 - weights) // (per_token * 4096)


def test_fit_refused_where_the_cache_shrinks():
    """DeepSeek-V4's compressed layers fold a window of tokens into one entry: its cache does not grow with S, so
    the longest S is not searched (as memory --gpu-memory refuses it); the bytes at one S are still given."""
    import random

    from draws.dsv4act import deepseek_v4

    from llmcount.formulas.config import read_config

    model = read_config(deepseek_v4(random.Random(1)), "test")
    with pytest.raises(serving.LlmcountError, match="fit is not derived for DeepSeek-V4"):
        serving.fit(model, 80 * 10**9, Layout())
    assert serving.shard(model, Layout(), seq=64).kv_bytes == kv_total(model, 64)


def test_results_show_in_a_notebook():
    import llmcount

    shard = llmcount.memory("llama-2-7b", tp=2)
    assert "| KV cache | 1,073,741,824 B (1.07 GB = 1.00 GiB) |" in shard._repr_markdown_()
    checked = serving.GpuFit("H100 SXM", 80 * 10**9, shard)
    assert "<td" in checked._repr_html_() and "fits" in checked._repr_markdown_()
    result = serving.fit(load("llama-2-7b"), 24 * 10**9, Layout(tp=2), gpu="RTX 4090")
    assert "longest context" in result._repr_markdown_()


@st.composite
def dense_layouts(draw):
    """A Llama config and a tp that divides its heads: h_kv a multiple of tp, or a divisor of it (copied heads)."""
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    h_kv = draw(st.sampled_from([1, 2, 4, 8, 16]))
    h = h_kv * draw(st.sampled_from([1, 2, 4]))
    assume(h % tp == 0)
    d_h = draw(st.sampled_from([16, 32, 64]))
    config = {
        "model_type": "llama",
        "hidden_size": h * d_h,
        "num_attention_heads": h,
        "num_key_value_heads": h_kv,
        "intermediate_size": tp * draw(st.integers(1, 64)),
        "num_hidden_layers": draw(st.integers(1, 6)),
        "vocab_size": draw(st.integers(64, 5000)),
        "tie_word_embeddings": draw(st.booleans()),
    }
    return config, tp


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(dense_layouts())
def test_ranks_sum_on_drawn_configs(drawn):
    """tp × per GPU = the total + (tp − 1) copies of the norms + the copied key-value heads' projections + the
    vocabulary's padding rows (64·⌈V/64⌉ − V, times two untied); KV: the total × copies. Refused by name, when vLLM
    would refuse it (tp not dividing the padded vocabulary)."""
    from llmcount.formulas.config import read_config

    config, tp = drawn
    model = read_config(config, "drawn")
    d, n_layers, h_kv, vocab = (
        config[k] for k in ("hidden_size", "num_hidden_layers", "num_key_value_heads", "vocab_size")
    )
    padded = -(-vocab // 64) * 64
    if padded % tp:
        with pytest.raises(serving.LlmcountError, match="padded to a multiple of 64"):
            serving.shard(model, Layout(tp=tp), seq=64)
        return
    shard = serving.shard(model, Layout(tp=tp), seq=64)
    copies = max(tp // h_kv, 1)
    d_h = d // config["num_attention_heads"]
    tables = 1 if config["tie_word_embeddings"] else 2
    expected = model.counts.total + (tp - 1) * (2 * n_layers * d + d)
    expected += (copies - 1) * 2 * n_layers * d * h_kv * d_h + tables * (padded - vocab) * d
    assert tp * shard.gpu_parameters == expected
    assert tp * shard.kv_bytes == kv_total(model, 64) * copies


def test_fit_with_vllm_allocates_every_mistral_layer_full_by_hand() -> None:
    """Mistral-7B-v0.1's config has no layer_types, so vLLM runs its 32 layers as full attention: at S = 32,768 a
    sequence takes cdiv(32,768, 16) = 2,048 blocks of 16 tokens of 32 · 2 · 8 · 128 elements in bf16, 4,294,967,296
    bytes. vLLM's default gpu_memory_utilization 0.92 of an L4's 24 GB, ceil(24e9 · 0.92) = 22,080,000,000 bytes,
    less the weights (7,241,732,096 parameters in bf16, 14,483,464,192 bytes) leaves 7,596,535,808: one such sequence
    (with the whole GPU, 9,516,535,808 bytes, two). transformers keeps a window of 4,096 instead."""
    result = CliRunner().invoke(app, ["fit", "mistral-7b", "--gpu", "l4", "--seq", "32k", "--engine", "vllm", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    per_block = 16 * 32 * 2 * 8 * 128 * 2
    left = 22_080_000_000 - 2 * 7_241_732_096
    assert data["engine"] == "vllm"
    assert data["gpu_memory_share"]["default"] and data["gpu_memory_share"]["fraction"] == 0.92
    assert data["max_batch"] == left // (2048 * per_block) == 1
    whole = run("fit", "mistral-7b", "--gpu", "l4", "--seq", "32k", "--engine", "vllm", "--gpu-memory-utilization", "1")
    assert "sequences at S = 32,768   2" in whole.stdout
    plain = CliRunner().invoke(app, ["fit", "mistral-7b", "--gpu", "l4", "--seq", "32k", "--json"])
    assert json.loads(plain.stdout)["max_batch"] > 2


def test_fit_refuses_engine_names_and_dtypes_it_lacks() -> None:
    for args, named in (
        (["--engine", "vllm", "--kv-dtype", "q8_0"], "q8_0"),
        (["--engine", "lmdeploy", "--pp", "2"], "no pipeline parallelism"),
    ):
        result = CliRunner().invoke(app, ["fit", "mistral-7b", "--gpu", "l4", *args])
        assert result.exit_code == 1 and named in result.output and not result.stdout.strip().startswith("{")


def test_quantised_weights_per_gpu_sum_to_the_stored_total_plus_the_replicated_norms():
    """memory --quant awq --tp 2: each rank holds half of every AWQ tensor group and of the embedding and head (by
    vocabulary rows), and the whole of the three norms (bf16): the two ranks sum to the stored total (the quant
    module's plan of the whole checkpoint) plus one more copy of the norms, 32·4,096·2 + 32·4,096·2 + 4,096·2
    bytes."""
    from llmcount.quant import report
    from llmcount.sources import load

    model = load("llama-3-8b")
    plan = report.model_plan(model, report.scheme_for(model.config, "x", "awq", None, None), None, "x")
    stored = sum(g.bytes for g in plan.groups)
    data = json.loads(run("memory", "llama-3-8b", "--quant", "awq", "--tp", "2", "--json").stdout)
    norms = 32 * 4096 * 2 * 2 + 4096 * 2
    assert 2 * data["weights_bytes_per_gpu"] == stored + norms
    assert "AWQ" in data["dtype"]


def test_a_quantised_checkpoint_is_split_as_stored(tmp_path):
    """A config with an AWQ quantization_config: per GPU the weights as AWQ stores them, not in bf16; --dtype
    keeps today's reading (every parameter in that dtype)."""
    import transformers

    config = transformers.LlamaConfig(num_hidden_layers=2, hidden_size=512, intermediate_size=1024).to_dict()
    config["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm"}
    config["dtype"] = "float16"
    (tmp_path / "config.json").write_text(json.dumps(config))
    given = json.loads(run("memory", str(tmp_path), "--tp", "2", "--json").stdout)
    plain = json.loads(run("memory", str(tmp_path), "--tp", "2", "--json", "--dtype", "bf16").stdout)
    assert given["weights_bytes_per_gpu"] < plain["weights_bytes_per_gpu"] == 2 * plain["gpu_parameters"]
    assert "AWQ" in given["dtype"] and plain["dtype"] == "bf16"


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--quant", "q4_k_m", "--tp", "2"), ("llama.cpp file type",)),
        (("--bits", "4", "--tp", "2"), ("--quant",)),
    ],
)
def test_quantised_weights_per_gpu_refusals(args, needles):
    assert_refused(run("memory", "llama-3-8b", *args), *needles)


def test_fit_under_an_engines_share_of_the_gpu_by_hand() -> None:
    """--gpu-memory-utilization, applied as each engine applies it. Llama-3-8B in bf16 on an L4 (24 GB): weights
    8,030,261,248 · 2 = 16,060,522,496 bytes; a token of 32 layers · 2 · 8 · 128 elements in bf16 is 131,072 bytes.
    vLLM 0.9: ceil(24e9 · 0.9) = 21,600,000,000 bytes for weights and KV (request_memory), leaving 5,539,477,504
    for blocks of 16 tokens: 2,641 blocks, S = 42,256; at S = 4,096 (256 blocks) 10 sequences.
    TensorRT-LLM 0.5: the KV cache within int((24e9 − weights) · 0.5) = 3,969,738,752 bytes, blocks of 32 tokens:
    946 blocks, S = 30,272."""
    weights = 8_030_261_248 * 2
    token = 32 * 2 * 8 * 128 * 2
    args = ["fit", "llama-3-8b", "--gpu", "l4", "--json", "--engine"]
    vllm = json.loads(run(*args, "vllm", "--gpu-memory-utilization", "0.9").stdout)
    room = 21_600_000_000 - weights
    assert vllm["gpu_memory_share"]["room_bytes"] == 21_600_000_000
    assert vllm["max_seq_by_memory"] == room // (16 * token) * 16 == 42_256
    assert vllm["max_batch"] == room // (256 * 16 * token) == 10
    trt = json.loads(run(*args, "tensorrt-llm", "--gpu-memory-utilization", "0.5").stdout)
    kv = (24 * 10**9 - weights) // 2
    assert trt["gpu_memory_share"]["room_bytes"] == weights + kv
    assert trt["max_seq_by_memory"] == kv // (32 * token) * 32 == 30_272


def test_fit_under_lmdeploys_share_and_runtime_reserve_by_hand() -> None:
    """LMDeploy 0.8 on an H100 (80 GB): the runtime reserve (8,192 + 2 · 1,024) · 128,256 · 2 = 2,626,682,880 bytes
    (get_max_batch_size: 1,024 for an H100), then int((80e9 − 16,060,522,496 − 2,626,682,880) · 0.8) =
    49,050,235,699 bytes of blocks. A block of Llama-3-8B's 32 layers: 32 · 2 · 64 · 8 · 128 · 2 = 8,388,608 bytes:
    5,847 blocks. One sequence needs cdiv(S, 64) + 1 blocks and the reserved one: S = 5,845 · 64 = 374,080."""
    data = json.loads(
        run(
            "fit", "llama-3-8b", "--gpu", "h100", "--engine", "lmdeploy", "--gpu-memory-utilization", "0.8", "--json"
        ).stdout
    )
    weights = 8_030_261_248 * 2
    reserve = (8192 + 2 * 1024) * 128_256 * 2
    kv = (80 * 10**9 - weights - reserve) * 4 // 5
    assert data["gpu_memory_share"]["reserve_bytes"] == reserve
    assert data["gpu_memory_share"]["room_bytes"] == weights + kv
    blocks = kv // (32 * 2 * 64 * 8 * 128 * 2)
    assert data["max_seq_by_memory"] == (blocks - 2) * 64 == 374_080


def test_memory_per_gpu_under_an_engines_share() -> None:
    """memory --gpu with --gpu-memory-utilization: what is left is the engine's share less the weights and KV."""
    result = run(
        "memory", "llama-3-8b", "--gpu", "h100", "--seq", "8k", "--engine", "sglang",
        "--gpu-memory-utilization", "0.8", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    room = int(80 * 10**9 * 0.8)  # SGLang's mem_fraction_static of an H100's 80 GB
    assert data["gpu_memory_share"]["room_bytes"] == room
    assert data["left_bytes"] == room - data["total_bytes_per_gpu"]


def test_engine_defaults_apply_without_the_option() -> None:
    """--engine with --gpu and no --gpu-memory-utilization: the engine's own default share, said so. Llama-3-8B on an
    H100 (80 GB), weights 16,060,522,496 bytes: vLLM 0.92 of the GPU, ceil(80e9 · 0.92) = 73,600,000,000 bytes;
    TensorRT-LLM the weights + int((80e9 − weights) · 0.9); LMDeploy the weights + int((80e9 − weights − its
    runtime reserve (8,192 + 2 · 1,024) · 128,256 · 2) · 0.8); SGLang's default is a rule of the device, not applied
    and said so; memory --gpu alike."""
    weights = 8_030_261_248 * 2
    reserve = (8192 + 2 * 1024) * 128_256 * 2
    expected = {
        "vllm": 73_600_000_000,
        "tensorrt-llm": weights + (80 * 10**9 - weights) * 9 // 10,
        "lmdeploy": weights + (80 * 10**9 - weights - reserve) * 4 // 5,
    }
    for engine, room in expected.items():
        for command in (["fit", "llama-3-8b"], ["memory", "llama-3-8b", "--seq", "8k"]):
            data = json.loads(run(*command, "--gpu", "h100", "--engine", engine, "--json").stdout)
            assert data["gpu_memory_share"]["default"] is True
            assert data["gpu_memory_share"]["room_bytes"] == room
            assert any("its default" in note for note in data["notes"])
    text = run("fit", "llama-3-8b", "--gpu", "mi300x", "--engine", "sglang").stdout
    assert "mem_fraction_static" in text and "not applied" in text  # the rule is transcribed for NVIDIA GPUs


def sglang_fraction(gpu_mem: float, chunked: int, max_bs: int, tp: int, pp: int, graph_sizes: int, mla: bool) -> float:
    """sglang 0.5.23 arg_groups/memory_hook.py handle_gpu_memory_settings, as its lines compute it in floats:
    reserved_mem = 512 + max(chunked, 2048) · 1.5 + tp · pp / 8 · 1024 + max_bs · 2 + (at pp = 1, the prefill graph)
    len(prefill sizes) · 8, or 1.5 · 1024 under MLA; at least 10 · 1024 above 60 · 1024 MiB."""
    reserved = 512 + max(chunked, 2048) * 1.5 + tp * pp / 8 * 1024 + max_bs * 2
    if pp == 1:
        reserved += 1.5 * 1024 if mla else graph_sizes * 8
    if gpu_mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mem - reserved) / gpu_mem, 3)


def test_sglang_default_share_is_its_rule_of_the_device() -> None:
    """H100 (80 GB: 76,293.9 MiB): chunked_prefill_size 8,192, decode max_bs 256 at tp < 4, 512 at tp ≥ 4; the prefill
    CUDA-graph sizes up to 8,192: 4-32 by 4 (8), 48-256 by 16 (14), 288-512 by 32 (8), 576-1,024 by 64 (8),
    1,280-4,096 by 256 (12), 4,608-8,192 by 512 (8): 58. tp 1: reserved 512 + 12,288 + 128 + 512 + 464 = 13,904 MiB,
    0.818; DeepSeek-V3 (MLA) at tp 8: 512 + 12,288 + 1,024 + 1,024 + 1,536 = 16,384, 0.785; Llama-3-8B at pp 2 (no
    prefill graph): 512 + 12,288 + 256 + 512 = 13,568, 0.822. L4 (24 GB: 22,888.2 MiB): chunked 4,096, max_bs 48, 50
    prefill sizes up to 4,096 (8 + 14 + 8 + 8 + 12): 512 + 6,144 + 128 + 96 + 400 = 7,280, 0.682."""
    h100, l4 = 80 * 10**9 / 2**20, 24 * 10**9 / 2**20
    cases = [
        (("fit", "llama-3-8b", "--gpu", "h100"), sglang_fraction(h100, 8192, 256, 1, 1, 58, False), 0.818),
        (("fit", "deepseek-v3", "--gpu", "h100", "--tp", "8"), sglang_fraction(h100, 8192, 512, 8, 1, 0, True), 0.785),
        (
            ("memory", "llama-3-8b", "--gpu", "h100", "--pp", "2"),
            sglang_fraction(h100, 8192, 256, 1, 2, 0, False),
            0.822,
        ),
        (("fit", "llama-3-8b", "--gpu", "l4"), sglang_fraction(l4, 4096, 48, 1, 1, 50, False), 0.682),
    ]
    for args, fraction, shown in cases:
        assert fraction == shown
        data = json.loads(run(*args, "--engine", "sglang", "--json").stdout)
        share = data["gpu_memory_share"]
        assert share["default"] is True and share["fraction"] == fraction
        capacity = data["gpu_memory_bytes"]
        assert share["room_bytes"] == int(capacity * Fraction(str(fraction)))
    given = json.loads(run("fit", "llama-3-8b", "--gpu", "h100", "--engine", "vllm", "--gpu-memory-utilization", "0.5",
                           "--json").stdout)  # fmt: skip
    assert given["gpu_memory_share"]["default"] is False and given["gpu_memory_share"]["room_bytes"] == 40 * 10**9


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--engine", "vllm", "--gpu-memory-utilization", "1.5"], "a fraction in (0, 1], got 1.5"),
        (["--engine", "vllm", "--gpu-memory-utilization", "0"], "a fraction in (0, 1], got 0"),
        (["--engine", "vllm", "--gpu-memory-utilization", "-0.2"], "a fraction in (0, 1] such as 0.9"),
        (["--engine", "vllm", "--gpu-memory-utilization", "1e-1"], "a fraction in (0, 1] such as 0.9"),
        (["--engine", "llama.cpp", "--gpu-memory-utilization", "0.5"], "llama.cpp has no share-of-memory setting"),
        (["--gpu-memory-utilization", "0.5"], "is an engine setting: give --engine"),
        (["--engine", "lmdeploy", "--gpu-memory-utilization", "1"], "cache_max_entry_count must be below 1"),
    ],
)
def test_gpu_memory_utilization_usage_errors(args, needle) -> None:
    """A share outside (0, 1], or for an engine without one: a usage error, exit 2, one line, nothing on stdout."""
    for command in (["fit", "llama-3-8b", "--gpu", "l4"], ["memory", "llama-3-8b", "--gpu", "l4"]):
        result = run(*command, *args)
        assert result.exit_code == 2, result.output
        assert result.stdout == ""
        assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
