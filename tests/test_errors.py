"""Bad input: one clear line on stderr naming the problem and the file or key, exit 1, no number."""

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from llmcount.cli import app

LLAMA = {
    "model_type": "llama",
    "vocab_size": 1000,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}
MIXTRAL = {**LLAMA, "model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2}


def run(*args):
    return CliRunner().invoke(app, list(args))


def assert_refused(result, *needles):
    assert result.exit_code in (1, 2), result.output
    assert isinstance(result.exception, SystemExit), "a traceback escaped"
    assert result.stdout == "", "nothing may be printed on stdout for bad input"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def write(tmp_path, config, name="config.json"):
    path = tmp_path / name
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    return str(path)


def test_valid_base_config_is_accepted(tmp_path):
    # The configs below break this one in a single place, so it must itself be fine.
    assert run("count", write(tmp_path, LLAMA)).exit_code == 0
    assert run("count", write(tmp_path, MIXTRAL, "m.json")).exit_code == 0


def test_missing_file(tmp_path):
    assert_refused(run("count", str(tmp_path / "nope.json")), "nope.json", "no such file")


def test_folder_without_config(tmp_path):
    assert_refused(run("count", str(tmp_path)), str(tmp_path), "no config.json")


def test_invalid_json_says_where(tmp_path):
    path = write(tmp_path, '{\n  "model_type": "llama",\n  "vocab_size": ,\n}')
    assert_refused(run("count", path), path, "invalid JSON", "line 3")


def test_not_an_object(tmp_path):
    assert_refused(run("count", write(tmp_path, "[1, 2]")), "JSON object")


@pytest.mark.parametrize("key", ["hidden_size", "num_hidden_layers", "vocab_size", "intermediate_size"])
def test_required_key_missing(tmp_path, key):
    config = {k: v for k, v in LLAMA.items() if k != key}
    assert_refused(run("count", write(tmp_path, config)), f"'{key}'", "missing")


@pytest.mark.parametrize(
    ("value", "shown"),
    [("4096", "string"), (64.5, "float"), (True, "boolean"), (None, "null"), ([64], "list")],
)
def test_wrong_type(tmp_path, value, shown):
    path = write(tmp_path, {**LLAMA, "hidden_size": value})
    assert_refused(run("count", path), "'hidden_size'", "integer", shown)


def test_integral_float_is_accepted(tmp_path):
    result = run("count", write(tmp_path, {**LLAMA, "hidden_size": 64.0}), "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["values"]["d"] == 64


@pytest.mark.parametrize("value", [0, -64])
def test_zero_or_negative_size(tmp_path, value):
    assert_refused(
        run("count", write(tmp_path, {**LLAMA, "num_hidden_layers": value})), "'num_hidden_layers'", "positive"
    )


def test_bool_switch_of_wrong_type(tmp_path):
    path = write(tmp_path, {**LLAMA, "tie_word_embeddings": "yes"})
    assert_refused(run("count", path), "'tie_word_embeddings'", "true or false")


def test_heads_not_divisible_by_kv_heads(tmp_path):
    path = write(tmp_path, {**LLAMA, "num_key_value_heads": 3})
    assert_refused(run("count", path), "num_attention_heads (4)", "num_key_value_heads (3)")


def test_more_experts_per_token_than_experts(tmp_path):
    path = write(tmp_path, {**MIXTRAL, "num_experts_per_tok": 5})
    assert_refused(run("count", path), "num_experts_per_tok (5)", "num_local_experts (4)")


def test_unknown_model_type_is_refused_by_name(tmp_path):
    path = write(tmp_path, {**LLAMA, "model_type": "qwen3_mo"})
    assert_refused(run("count", path), "unsupported model_type 'qwen3_mo'", "closest", "qwen3_moe")
    path = write(tmp_path, {**LLAMA, "model_type": "no-such-architecture"})
    assert_refused(run("count", path), "unsupported model_type 'no-such-architecture'", "llmcount list")


def test_missing_model_type(tmp_path):
    config = {k: v for k, v in LLAMA.items() if k != "model_type"}
    assert_refused(run("count", write(tmp_path, config)), "'model_type'")


def test_unknown_preset_suggests_close_names():
    assert_refused(run("count", "qwen3-32"), "unknown preset", "qwen3-32b")


def run_offline(hf_home, *args):
    """The CLI in a fresh process: huggingface_hub reads HF_HOME once, when it is imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HUB_OFFLINE="1", HF_HOME=str(hf_home))
    return subprocess.run([sys.executable, "-m", "llmcount", *args], capture_output=True, text=True, env=env)


def test_hub_id_offline_without_cache(tmp_path):
    result = run_offline(tmp_path / "hf", "count", "some-org/some-model-that-is-not-cached")
    assert result.returncode == 1 and result.stdout == ""
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "some-org/some-model" in result.stderr and "cache" in result.stderr


def test_formula_of_unknown_family():
    assert_refused(run("formula", "gemma9"), "gemma9", "or a family:", "qwen3_moe")


def test_unknown_format_lists_choices():
    result = run("formula", "qwen3", "--format", "html")
    assert result.exit_code == 2
    assert "text" in result.output and "latex" in result.output


@pytest.mark.parametrize(
    ("model_type", "key"),
    [
        ("qwen2", "head_dim"),
        ("qwen3", "head_dim"),
        ("mistral", "num_key_value_heads"),
        ("mixtral", "num_key_value_heads"),
    ],
)
def test_null_where_transformers_has_no_meaning_for_it(tmp_path, model_type, key):
    # transformers either refuses these (strict int fields) or crashes on them (None * heads).
    path = write(tmp_path, {**MIXTRAL, "model_type": model_type, key: None})
    assert_refused(run("count", path), f"'{key}'", "null")


def test_null_kv_heads_means_all_heads_for_llama(tmp_path):
    # LlamaConfig.__post_init__: num_key_value_heads None -> num_attention_heads (MHA).
    mha = json.loads(run("count", write(tmp_path, {**LLAMA, "num_key_value_heads": None}), "--json").stdout)
    assert mha["values"]["h_kv"] == LLAMA["num_attention_heads"]


def test_hub_id_found_in_the_local_cache_when_offline(tmp_path):
    # The layout huggingface_hub keeps: hub/models--ORG--NAME/{refs/main, snapshots/REV/config.json}.
    repo = tmp_path / "hf" / "hub" / "models--some-org--tiny-llama"
    revision = "0" * 40
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(revision)
    (repo / "snapshots" / revision).mkdir(parents=True)
    (repo / "snapshots" / revision / "config.json").write_text(json.dumps(LLAMA))
    result = run_offline(tmp_path / "hf", "count", "some-org/tiny-llama", "--json")
    assert result.returncode == 0, result.stderr
    # by hand: V·d·2 + N·(2·d·h·h_d + 2·d·h_kv·h_d + 3·d·d_ff + 2·d) + d with V=1000, d=64, h=4,
    # h_kv=2, h_d=16, d_ff=128, N=2: 128000 + 2·(8192 + 4096 + 24576 + 128) + 64
    assert json.loads(result.stdout)["total"] == 128000 + 2 * (8192 + 4096 + 24576 + 128) + 64


def test_default_kv_heads_is_named_as_a_default(tmp_path):
    # Qwen2Config: num_key_value_heads defaults to 32 when the key is absent, whatever the head count.
    config = {k: v for k, v in LLAMA.items() if k != "num_key_value_heads"}
    path = write(tmp_path, {**config, "model_type": "qwen2"})
    assert_refused(run("count", path), "num_key_value_heads (32, qwen2's default when the key is absent)")


def test_a_missing_local_folder_is_not_taken_for_a_hub_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    assert_refused(run("count", "models/mine"), "models/mine", "no such file or folder")


def test_huge_layer_counts_are_counted_fast_or_refused_with_the_bound(tmp_path):
    # Qwen3-MoE's layers are walked one by one to tell dense from MoE: 10,000 of them stay fast,
    # 10**30 of them are refused by name instead of walked.
    import time

    from llmcount.presets import presets

    config = {**presets()["qwen3-30b-a3b"].config(), "num_hidden_layers": 48, "decoder_sparse_step": 2}
    start = time.perf_counter()
    run("count", write(tmp_path, config), "--json")
    few = time.perf_counter() - start
    config["num_hidden_layers"] = 10_000
    start = time.perf_counter()
    data = json.loads(run("count", write(tmp_path, config), "--json").stdout)
    assert time.perf_counter() - start < few + 1  # the walk over 10,000 layers adds less than a second
    assert data["values"]["N_dense"] == 5_000  # layers 0, 2, 4, ...: (i + 1) % 2 != 0
    config["num_hidden_layers"] = 10**30
    assert_refused(run("count", write(tmp_path, config)), "num_hidden_layers", "larger than any model")
