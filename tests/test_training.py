"""Training memory per GPU: model states under each optimizer, ZeRO, tensor / pipeline / expert parallelism, LoRA.

Expected values are hand derivations written here from the published configs (llama-3-8b: d = 4096, h = 32,
h_kv = 8, h_d = 128, d_ff = 14336, V = 128256, N = 32, untied; 8,030,261,248 parameters, the count
transformers gives), the ZeRO paper's formulas (Rajbhandari et al. 2020, section 5: stage 1 4P + 12P/N,
stage 2 2P + 14P/N, stage 3 16P/N), and, for LoRA, nn.Linear's in/out features of a transformers model.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from llmcount.cli import app, main
from llmcount.formulas import training as tr
from llmcount.sources import load

LLAMA3_8B = 8_030_261_248
LLAMA31_70B = 70_553_706_496
D, H, H_KV, H_D, D_FF, V, N = 4096, 32, 8, 128, 14336, 128256, 32
EMBEDDING = V * D  # the token embedding; the untied head has as many
NORMS = 2 * N * D + D
LAYER_MATRICES = [(D, H * H_D), (D, H_KV * H_D), (D, H_KV * H_D), (H * H_D, D), (D, D_FF), (D, D_FF), (D_FF, D)]


def _states(**kwargs) -> tr.Training:
    return tr.training(load(kwargs.pop("model", "llama-3-8b")), **kwargs)


def test_the_hand_numbers_add_up_to_the_parameter_count() -> None:
    layer = sum(a * b for a, b in LAYER_MATRICES)
    assert N * layer + 2 * EMBEDDING + NORMS == LLAMA3_8B


@pytest.mark.parametrize(
    ("optimizer", "expected"),
    [
        ("adamw", 16 * LLAMA3_8B),  # 2 + 2 + 4 (master) + 4 + 4
        ("sgd", 8 * LLAMA3_8B),  # 2 + 2 + 4: no state with PyTorch's default momentum = 0
        ("sgd-momentum", 12 * LLAMA3_8B),
        ("adamw8bit", 10 * LLAMA3_8B + 2 * 4 * -(-LLAMA3_8B // 256)),  # 1 + 1 bytes + an fp32 absmax per 256
    ],
)
def test_optimizer_states_per_parameter(optimizer: str, expected: int) -> None:
    assert _states(optimizer=optimizer).model_states_bytes == expected


def test_fp32_adamw_is_also_16_bytes_without_a_master_copy() -> None:
    result = _states(dtype_name="fp32")
    assert [line.name for line in result.lines] == ["weights", "gradients", "adam_m", "adam_v"]
    assert result.model_states_bytes == 16 * LLAMA3_8B


def test_muon_keeps_one_momentum_for_hidden_matrices_and_adamw_for_the_rest() -> None:
    hidden = N * sum(a * b for a, b in LAYER_MATRICES)
    rest = 2 * EMBEDDING + NORMS  # embedding, untied head, norm scales: AdamW
    assert _states(optimizer="muon").model_states_bytes == 8 * LLAMA3_8B + 4 * hidden + 8 * rest


def test_adafactor_keeps_rows_plus_columns_per_matrix() -> None:
    factored = N * sum(a + b for a, b in LAYER_MATRICES) + 2 * (V + D) + NORMS  # vectors: full second moment
    assert _states(optimizer="adafactor").model_states_bytes == 8 * LLAMA3_8B + 4 * factored


@pytest.mark.parametrize(
    ("stage", "expected"),
    [
        (0, 16 * LLAMA31_70B),
        (1, 4 * LLAMA31_70B + 12 * LLAMA31_70B // 64),
        (2, 2 * LLAMA31_70B + 14 * LLAMA31_70B // 64),
        (3, 16 * LLAMA31_70B // 64),
    ],
)
def test_zero_stages_as_the_paper_gives_them(stage: int, expected: int) -> None:
    assert LLAMA31_70B % 64 == 0  # so the paper's P/N is exact here
    result = _states(model="llama-3.1-70b", parallel=tr.Parallel(dp=64, zero=stage))
    assert result.model_states_bytes == expected


def test_tensor_parallel_splits_projections_and_vocabulary_and_replicates_norms() -> None:
    layer = sum(a * b for a, b in LAYER_MATRICES) // 8 + 2 * D
    held = N * layer + 2 * EMBEDDING // 8 + D
    assert _states(parallel=tr.Parallel(tp=8)).held.parameters == held


def test_pipeline_counts_the_heavier_of_the_first_and_last_stage() -> None:
    layer = sum(a * b for a, b in LAYER_MATRICES) + 2 * D
    first, last = 8 * layer + EMBEDDING, 8 * layer + EMBEDDING + D  # the last stage has the final norm too
    result = _states(parallel=tr.Parallel(pp=4))
    assert result.held.parameters == max(first, last) == last


def test_deepseek_v3_with_tensor_pipeline_and_expert_parallelism_by_hand() -> None:
    """d = 7168, h = 128, r_q = 1536, r_kv = 512, d_rope = 64, d_nope = 128, d_v = 128, n = 256, n_s = 1,
    d_moe = 2048, V = 129280, N = 61 (3 dense): tp 8, pp 16, ep 64."""
    d, h, r_q, r_kv, rope, nope, dv, n, d_moe, vocab = 7168, 128, 1536, 512, 64, 128, 128, 256, 2048, 129280
    attention = d * r_q + r_q + r_q * h * (nope + rope) // 8 + d * (r_kv + rope) + r_kv
    attention += r_kv * h * (nope + dv) // 8 + h * dv * d // 8
    moe = d * n + n * 3 * d * d_moe // 64 + 3 * d * d_moe // 8
    layer = attention + moe + 2 * d
    dense = attention + 3 * d * 18432 // 8 + 2 * d  # the first 3 layers: a dense MLP of d_ff = 18432, split by tp
    # 61 layers in 16 stages: 13 of 4 layers, then 3 of 3; stage 1 holds the 3 dense layers, one MoE layer and the
    # embedding (split by vocabulary); stage 16 three MoE layers, the final norm and the head
    first, middle, last = 3 * dense + layer + vocab * d // 8, 4 * layer, 3 * layer + d + vocab * d // 8
    assert middle > max(first, last)
    result = _states(model="deepseek-v3", parallel=tr.Parallel(tp=8, pp=16, ep=64, dp=2, zero=1))
    assert result.held.parameters == middle
    assert result.model_states_bytes == 4 * middle + 12 * middle // 2


def test_lora_trains_r_times_in_plus_out_of_each_projection() -> None:
    adapters = N * 16 * sum(a + b for a, b in LAYER_MATRICES)
    assert adapters == 41_943_040
    result = _states(lora=tr.Lora(16))
    assert result.lora_parameters == adapters
    assert result.model_states_bytes == 2 * LLAMA3_8B + 16 * adapters  # frozen bf16 base; adapters as AdamW
    only_attention = _states(lora=tr.Lora(16, ("q_proj", "v_proj")))
    assert only_attention.lora_parameters == N * 16 * (D + H * H_D + D + H_KV * H_D)


def test_lora_against_the_linear_layers_of_transformers() -> None:
    """The adapters' count from nn.Linear in/out features of the projections of a random config, on meta."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from llmcount.formulas.config import read_config

    config = {
        "model_type": "qwen3",
        "num_hidden_layers": 3,
        "hidden_size": 40,
        "intermediate_size": 56,
        "num_attention_heads": 6,
        "num_key_value_heads": 2,
        "head_dim": 12,
        "vocab_size": 97,
    }
    settings = {k: v for k, v in config.items() if k != "model_type"}
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model("qwen3", **settings))
    names = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    expected = sum(
        5 * (m.in_features + m.out_features)
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.Linear) and name.rsplit(".", 1)[-1] in names
    )
    result = tr.training(read_config(config, "random"), lora=tr.Lora(5))
    assert result.lora_parameters == expected, transformers.__version__


# ---------------------------------------------------------------------------------------------
# the command line


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def assert_refused(result, *needles: str, code: int = 1) -> None:
    assert result.exit_code == code, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_training_json_keys_per_gpu() -> None:
    data = json.loads(run("memory", "llama-3.1-70b", "--training", "--zero", "3", "--dp", "64", "--json").stdout)
    assert data["model_states_bytes_per_gpu"] == 16 * LLAMA31_70B // 64
    assert data["total_bytes_per_gpu"] == data["model_states_bytes_per_gpu"] + data["activations_bytes_per_gpu"]
    assert data["parallel"] == {"tp": 1, "pp": 1, "dp": 64, "ep": 1, "zero": 3, "sequence_parallel": False, "gpus": 64}
    assert data["activations"]["per_layer_kind"][0]["layers"] == 80
    assert data["activations_bytes"] == data["activations"]["activations_bytes"]


def test_training_text_names_the_lines_and_the_lora_formula() -> None:
    out = " ".join(run("memory", "llama-3-8b", "--training", "--lora", "16").stdout.split())  # lines unwrapped
    assert "41,943,040 trainable parameters" in out and "r·(d + d_ff)" in out.replace("3·N·r", "r")


NO_TABLE = {  # a small GIT: its record has no [activations] table (transformers cannot train it on text alone)
    "model_type": "git",
    **{"num_hidden_layers": 1, "hidden_size": 16, "intermediate_size": 20, "num_attention_heads": 2},
    **{"vocab_size": 67, "vision_config": {"image_size": 4, "patch_size": 4}},
}


def test_a_family_without_an_activation_table_is_refused_by_name_not_guessed(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(NO_TABLE))
    data = json.loads(run("memory", str(path), "--training", "--json").stdout)
    assert data["activations_bytes_per_gpu"] is None and "(git)" in data["activations_refused"]
    assert data["total_bytes_per_gpu"] == data["model_states_bytes_per_gpu"]


def test_a_config_its_table_was_not_checked_for_gets_its_model_states_and_the_reason(tmp_path) -> None:
    """Jamba's table refuses its load-balancing loss (output_router_logits): the model states stay, as without a
    table; 2 + 2 + 12 bytes per parameter, the same as with the loss off."""
    jamba = {"model_type": "jamba", "num_hidden_layers": 2, "hidden_size": 32, "intermediate_size": 48}
    jamba |= {"num_attention_heads": 4, "num_key_value_heads": 2, "num_experts": 4, "vocab_size": 101}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**jamba, "output_router_logits": True}))
    data = json.loads(run("memory", str(path), "--training", "--json").stdout)
    assert data["activations_bytes_per_gpu"] is None and "output_router_logits" in data["activations_refused"]
    path.write_text(json.dumps(jamba))
    plain = json.loads(run("memory", str(path), "--training", "--json").stdout)
    assert plain["activations_bytes_per_gpu"] > 0
    assert data["model_states_bytes_per_gpu"] == plain["model_states_bytes_per_gpu"] == 16 * plain["parameters"]


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["llama-3-8b", "--tp", "3"], ["--tp 3", "num_attention_heads = 32"]),
        (["llama-3-8b", "--tp", "16"], ["--tp 16", "num_key_value_heads = 8"]),
        (["deepseek-v3", "--ep", "3"], ["--ep 3", "n = 256"]),
        (["llama-3-8b", "--pp", "33"], ["--pp 33", "N = 32"]),
        (["llama-3-8b", "--dp", "0"], ["--dp"]),
        (["llama-3-8b", "--zero", "4"], ["--zero", "0, 1, 2, 3"]),
    ],
)
def test_parallel_degrees_that_do_not_divide_the_model(args: list[str], needles: list[str]) -> None:
    code = 2 if args[-1] == "0" else 1  # a degree that is no positive integer is a usage error; one not dividing, 1
    assert_refused(run("memory", args[0], "--training", *args[1:]), *needles, code=code)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--training", "--optimizer", "adam"], ["--optimizer", "adamw8bit", "sgd-momentum", "adafactor", "muon"]),
        (["--training", "--recompute", "some"], ["--recompute", "none", "selective", "full"]),
        (["--training", "--attention", "xformers"], ["--attention", "sdpa", "eager", "flash"]),
        (["--training", "--lora-targets", "q_proj"], ["--lora-targets needs --lora"]),
        (["--zero", "3"], ["--zero needs --training"]),
    ],
)
def test_usage_errors_list_the_choices(capsys, args: list[str], needles: list[str]) -> None:
    """Through the real entry point, as test_usage_errors does: exit 2, one line."""
    with pytest.raises(SystemExit) as caught:
        main(["memory", "llama-3-8b", *args])
    out, err = capsys.readouterr()
    assert caught.value.code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("llmcount: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_pipeline_stages_are_contiguous_and_as_even_as_possible() -> None:
    from llmcount.formulas.layer_kinds import stages

    assert [len(run) for run in stages(61, 16)] == [4] * 13 + [3] * 3
    assert [run.start for run in stages(10, 3)] == [0, 4, 7]


def test_with_pipeline_stages_the_gpu_counted_is_one_stage_for_states_and_activations() -> None:
    """llama-3-8b, pp 4, S = 2048: stage 1 keeps 4 micro-batches of activations and the embedding, stage 4 one
    micro-batch, the final norm and the head; stage 1 is the larger, and both amounts are its own."""
    layer = sum(a * b for a, b in LAYER_MATRICES) + 2 * D
    data = json.loads(run("memory", "llama-3-8b", "--training", "--pp", "4", "--seq", "2048", "--json").stdout)
    assert data["model_states_bytes_per_gpu"] == 16 * (8 * layer + EMBEDDING)
    assert "stage 1 of 4" in data["activations"]["per_gpu_note"] and "stage 1 of 4" in data["notes"][0]
    assert data["total_bytes_per_gpu"] == data["model_states_bytes_per_gpu"] + data["activations_bytes_per_gpu"]


def test_a_norm_over_one_head_is_a_vector_not_a_matrix(tmp_path):
    """Persimmon's q/k LayerNorms are d/h wide (one head): their size has a size in a denominator. Model states are
    2 + 2 + 12 = 16 bytes per parameter under mixed-precision AdamW; the parameters are transformers' own."""
    oracle = pytest.importorskip("oracle")
    config = {"model_type": "persimmon", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}
    config |= {"intermediate_size": 128, "vocab_size": 100, "qk_layernorm": True}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = CliRunner().invoke(app, ["memory", str(path), "--training", "--seq", "128", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model_states_bytes_per_gpu"] == 16 * oracle.hf_count(config)
