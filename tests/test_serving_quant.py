"""Quantised weights per GPU under pipeline and tensor parallelism (serving.stored_on_plan), and in ``fit``.

The whole checkpoint's bytes come from llmcount.quant's stored-bytes plan (each tensor group as the scheme stores it,
tested against the formats' own libraries in tests/test_quant*.py); here the split: every GPU of a pipeline stage
holds its stage's layers' share of each group (k of N layers: k/N of the bytes), the first stage the embedding, the
last the final norm and the head, so the stages sum to the whole; under tensor parallelism a rank holds 1/tp of each
column- or row-parallel group with its scales."""

from __future__ import annotations

import json

import pytest
from refusal import run

from llmcount import serving
from llmcount.formulas.config import read_config
from llmcount.quant import report
from llmcount.serving import Layout
from llmcount.sources import resolve


def _model(spec: str):
    name, source, config = resolve(spec)
    return config, read_config(config, source, name), source


def _stored(spec: str):
    config, model, source = _model(spec)
    scheme = report.scheme_for(config, source, None, None, None)
    plan = report.model_plan(model, scheme, None, source)
    groups = [(g.path, g.parameters, g.bytes) for g in plan.groups]
    return model, groups, scheme.label


@pytest.mark.parametrize(
    ("spec", "scheme", "pp"),
    [
        ("gpt-oss-20b", "MXFP4", 2),  # MXFP4 experts (E2M1 + an E8M0 scale per 32), untied head
        ("gpt-oss-20b", "MXFP4", 3),
        ("deepseek-v3", "FP8", 2),  # FP8 e4m3 with an fp32 scale per 128×128 block, untied head
        ("deepseek-v3", "FP8", 4),
    ],
)
def test_stages_sum_to_the_whole_checkpoint(spec, scheme, pp):
    model, groups, label = _stored(spec)
    assert scheme in label
    whole = sum(size for _, _, size in groups)
    plans = serving.stage_plans(model, Layout(1, pp, 1, 1))
    per_stage = [serving.stored_on_plan(p, groups, label) for p in plans]
    assert sum(per_stage) == whole
    assert len(per_stage) == pp and all(0 < b < whole for b in per_stage)


def test_gpt_oss_stage_shares_by_hand():
    """GPT-OSS-20B over 2 stages of 12 of its 24 layers: each stage holds half of every layer group's bytes (the
    MXFP4 experts among them); the embedding is all on stage 1, the final norm and the head all on stage 2."""
    model, groups, label = _stored("gpt-oss-20b")
    first, second = serving.stage_plans(model, Layout(1, 2, 1, 1))
    for path, parameters, size in groups:
        a = serving.stored_on_plan(first, [(path, parameters, size)], label)
        b = serving.stored_on_plan(second, [(path, parameters, size)], label)
        if path.startswith("embedding"):
            assert (a, b) == (size, 0), path
        elif path.startswith(("head", "norms/norm")):
            assert (a, b) == (0, size), path
        else:
            assert a == b == size // 2, path


def test_deepseek_v3_routed_experts_per_tp_rank_by_hand():
    """DeepSeek-V3 at tp 8, without expert parallelism: each rank holds 1/8 of every routed expert's gate, up and
    down projections, fp8 values and their 128×128-block scales together (moe_intermediate_size 2,048 / 8 = 256
    rows of a 7,168-column matrix: two 128-row blocks); at tp 8 × pp 2 the stages' ranks split the 58 MoE layers."""
    model, groups, label = _stored("deepseek-v3")
    experts = [g for g in groups if "expert" in g[0] and "shared" not in g[0]]
    assert experts
    (laid,) = serving.stage_plans(model, Layout(8, 1, 1, 1))
    for path, parameters, size in experts:
        assert serving.stored_on_plan(laid, [(path, parameters, size)], label) * 8 == size, path
    stages = serving.stage_plans(model, Layout(8, 2, 1, 1))
    for path, parameters, size in experts:
        assert sum(serving.stored_on_plan(p, [(path, parameters, size)], label) for p in stages) * 8 == size, path


def test_memory_pp_and_fit_take_the_checkpoints_scheme():
    """memory --pp 2 --json: the weights per GPU are the larger stage's stored bytes; fit on one H100 takes the
    same MXFP4 bytes for the whole model (tp 1, pp 1: every group whole), and --quant none the bf16 weights."""
    model, groups, label = _stored("gpt-oss-20b")
    stages = serving.stage_plans(model, Layout(1, 2, 1, 1))
    largest = max(serving.stored_on_plan(p, groups, label) for p in stages)
    out = run("memory", "gpt-oss-20b", "--pp", "2", "--json")
    assert out.exit_code == 0, out.stderr
    assert json.loads(out.stdout)["weights_bytes_per_gpu"] == largest
    fitted = run("fit", "gpt-oss-20b", "--gpu", "h100", "--json")
    assert fitted.exit_code == 0, fitted.stderr
    data = json.loads(fitted.stdout)
    assert data["weights_bytes_per_gpu"] == sum(size for _, _, size in groups)
    assert "MXFP4" in data["dtype"]
    plain = json.loads(run("fit", "gpt-oss-20b", "--gpu", "h100", "--quant", "none", "--json").stdout)
    assert plain["weights_bytes_per_gpu"] > data["weights_bytes_per_gpu"]
    assert plain["max_batch"] < data["max_batch"]


def test_fit_of_an_fp8_checkpoint():
    """DeepSeek-V3 on 8 H200: in bf16 (--dtype) nothing fits (tests/test_serving.py); as its FP8 checkpoint stores
    it, the weights per GPU are the rank's share of the stored bytes and sequences fit."""
    data = json.loads(run("fit", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--json").stdout)
    model, groups, label = _stored("deepseek-v3")
    (laid,) = serving.stage_plans(model, Layout(8, 1, 1, 1))
    assert data["weights_bytes_per_gpu"] == serving.stored_on_plan(laid, groups, label)
    assert data["max_batch"] > 0 and not data["reason"] and "FP8" in data["dtype"]
