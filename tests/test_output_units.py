"""What people read in the byte outputs: GB (10^9) and GiB (2^30) both wherever bytes are shown, from one helper;
the training estimate assumes transformers' default attention (SDPA) and says so."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import llmcount
from llmcount.cli import app
from llmcount.sizes import gb_gib

runner = CliRunner()


def run(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_one_format() -> None:
    # 80 GiB = 85,899,345,920 bytes = 85.90 GB; 24 GB = 24·10^9 bytes = 22.35 GiB
    assert gb_gib(80 * 2**30) == "85.90 GB = 80.00 GiB"
    assert gb_gib(24 * 10**9) == "24.00 GB = 22.35 GiB"
    assert gb_gib(-(2**30)) == "-1.07 GB = -1.00 GiB"


def test_memory_shows_gb_and_gib_columns() -> None:
    # llama-2-7b: 2 (K, V) x 32 layers x 4096 x 2 bytes = 524,288 bytes per token; 4096 tokens: 2,147,483,648 bytes
    out = run("memory", "llama-2-7b", "--seq", "4k")
    header = next(line for line in out.splitlines() if "formula (bytes)" in line)
    assert header.split()[-2:] == ["GB", "GiB"]
    row = next(line for line in out.splitlines() if line.startswith("kv cache"))
    assert row.split()[-3:] == ["2,147,483,648", "2.15", "2.00"]
    assert "GB = 10^9 bytes, GiB = 2^30 bytes" in " ".join(out.split())


def test_training_gpu_memory_and_verify_show_both() -> None:
    training = run("memory", "llama-2-7b", "--training", "--seq", "1k")
    assert next(line for line in training.splitlines() if "formula (bytes)" in line).split()[-2:] == ["GB", "GiB"]
    fits = " ".join(run("memory", "llama-2-7b", "--gpu-memory", "80GiB").split())
    assert "85,899,345,920 bytes (85.90 GB = 80.00 GiB)" in fits


def test_verify_shows_both(tmp_path) -> None:
    # gpt2 (124,439,808 parameters, transformers' count) in fp32: 497,759,232 bytes
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 497_759_232}, "weight_map": {}}))
    out = " ".join(run("verify", "gpt2", "--index", str(index), "--dtype", "fp32").split())
    assert "497,759,232 bytes (0.50 GB = 0.46 GiB) at 32 bits" in out


def test_training_assumes_sdpa_and_names_it() -> None:
    out = " ".join(run("memory", "llama-2-7b", "--training", "--seq", "1k").split())
    assert "sdpa attention" in out
    default = llmcount.training("llama-2-7b", seq="1k")
    assert default.activations.options.attention == "sdpa"
    flash = llmcount.training("llama-2-7b", seq="1k", attention="flash")
    eager = llmcount.training("llama-2-7b", seq="1k", attention="eager")
    assert default.activations.bytes == flash.activations.bytes < eager.activations.bytes
    # per layer (32 layers, h = 32, S = 1024, B = 1): eager keeps the fp32 softmax output and its bf16 copy,
    # h·S·S·(4 + 2) bytes; SDPA's fused kernel keeps instead one fp32 log-sum-exp per query and head, h·S·4 bytes
    assert eager.activations.bytes - default.activations.bytes == 32 * (32 * 1024 * 1024 * 6 - 32 * 1024 * 4)


def test_the_api_results_repr_their_bytes_in_gb_and_gib() -> None:
    # llama-2-7b in bf16: 2 x 6,738,415,616 = 13,476,831,232 bytes of weights + 2,147,483,648 of KV cache at S = 4096
    memory = repr(llmcount.memory("llama-2-7b", seq="4k"))
    assert memory.startswith("<llmcount inference memory") and "15,624,314,880 B (15.62 GB = 14.55 GiB)>" in memory
    assert "24,000,000,000 B (24.00 GB = 22.35 GiB)>" in repr(llmcount.fit("llama-2-7b", "24GB"))
    training = repr(llmcount.training("llama-2-7b", seq="1k"))
    assert training.startswith("<llmcount training memory per GPU") and " GB = " in training and "GiB)>" in training
    shard = repr(llmcount.memory("llama-2-7b", seq="4k", tp=2))
    assert shard.startswith("<llmcount per GPU: tp 2") and " GB = " in shard


def test_the_weights_table_orders_gb_then_gib_as_every_other_table() -> None:
    # qwen3-8b: 8,190,735,360 parameters (transformers' count); fp32: 4 bytes each = 32,762,941,440: 32.76 GB, 30.51 GiB
    out = run("memory", "qwen3-8b", "--table")
    assert next(line for line in out.splitlines() if line.startswith("dtype")).split()[-2:] == ["GB", "GiB"]
    assert next(line for line in out.splitlines() if line.startswith("fp32")).split()[-2:] == ["32.76", "30.51"]


def test_a_family_without_sdpa_is_counted_eager_and_says_so() -> None:
    # XLM has no SDPA path in transformers: its record's activations table has eager entries only
    import oracle

    from llmcount.formulas import training as tr
    from llmcount.formulas.config import read_config

    model = read_config({**oracle.runnable_defaults("xlm"), "model_type": "xlm"}, "xlm defaults")
    default = tr.estimate(model, seq=64)
    eager = tr.estimate(model, seq=64, attention="eager")
    assert default.activations.options.attention == "eager"
    assert default.activations.bytes == eager.activations.bytes
    assert "sdpa's fused-kernel tensors are not derived for this family" in default.activations.assumptions
