"""Hostile input, by class, on the serving, quantisation, verify and training options: each bad value is refused in
one line naming the option or key, never read as if it were left out or as a kind the count does not know."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from refusal import assert_refused, run

# --- an empty dtype is refused, not read as the default of an option left out --------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("memory", "qwen3-8b", "--kv-dtype", ""),
        ("memory", "qwen3-8b", "--engine", "transformers", "--kv-dtype", ""),
        ("memory", "qwen3-8b", "--dtype", " "),
        ("memory", "qwen3-8b", "--quant", "gptq", "--bits", "4", "--scale-dtype", ""),
        ("fit", "qwen3-8b", "--gpu", "h100-sxm", "--dtype", ""),
        ("fit", "qwen3-8b", "--gpu", "h100-sxm", "--kv-dtype", ""),
        ("speed", "qwen3-8b", "--gpu", "h100-sxm", "--kv-dtype", ""),
        ("count", "qwen3-8b", "--quant", "gptq", "--dtype", ""),
    ],
    ids=lambda a: "-".join(x or "EMPTY" for x in a[::2] if x is not None)[:60],
)
def test_an_empty_dtype_is_a_usage_error(args: tuple[str, ...]) -> None:
    result = run(*args)
    assert result.exit_code in (1, 2), result.output  # 2 from the option's check; 1 where a fast path reads it
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    option = next(a for a in args if a.endswith("dtype"))
    assert option in lines[0] or "unknown dtype ''" in lines[0].replace("' '", "''"), lines[0]


# --- a checkpoint that holds no tensor is refused, not compared as "every component missing" -----------------------


def _empty_checkpoint(tmp_path: Path, layout: str) -> Path:
    import json
    import struct

    from llmcount.presets import find

    (tmp_path / "config.json").write_text(json.dumps(find("qwen3-0.6b").config()))
    if layout == "index":  # an index whose weight_map lists nothing (its total_size is never read here)
        target = tmp_path / "model.safetensors.index.json"
        target.write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": {}}))
    else:  # a file the safetensors library writes for an empty dict: a header of {} and no data
        target = tmp_path / "model.safetensors"
        target.write_bytes(struct.pack("<Q", 8) + b"{}      ")
    return target


@pytest.mark.parametrize(
    ("layout", "how"), [("index", "folder"), ("index", "--checkpoint"), ("file", "folder"), ("file", "--checkpoint")]
)
def test_a_checkpoint_without_tensors_is_refused(tmp_path: Path, layout: str, how: str) -> None:
    target = _empty_checkpoint(tmp_path, layout)
    args = ("verify", str(tmp_path)) if how == "folder" else ("verify", "qwen3-0.6b", "--checkpoint", str(target))
    assert_refused(run(*args), tmp_path.name, "holds no tensors")


# --- a refusal is the only line: no note on a key new to the record printed before it ------------------------------


def _config_with(tmp_path: Path, **keys: object) -> Path:
    import json

    from llmcount.presets import find

    (tmp_path / "config.json").write_text(json.dumps({**find("qwen3-0.6b").config(), "key_new_to_qwen3": 1, **keys}))
    return tmp_path


@pytest.mark.parametrize(
    ("keys", "options", "needle"),
    [
        ({}, ("--quant", "gptq", "--bits", "99"), "bits"),
        ({"quantization_config": {"quant_method": "gptq", "bits": -4, "group_size": 128}}, (), "bits"),
        ({"quantization_config": [4]}, (), "quantization_config"),
        ({"quantization": {"bits": "x", "group_size": 64}}, (), "quantization.bits"),
    ],
    ids=["option", "config_bits", "config_type", "mlx_key"],
)
def test_count_refuses_a_scheme_in_one_line(tmp_path: Path, keys: dict, options: tuple[str, ...], needle: str) -> None:
    assert_refused(run("count", str(_config_with(tmp_path, **keys)), *options), needle)


def test_mlx_quantization_key_is_no_new_key(tmp_path: Path) -> None:
    """mlx-lm writes its scheme as ``quantization`` (beside ``quantization_config``) in any model's config."""
    import json

    from llmcount.presets import find

    config = {**find("qwen3-0.6b").config(), "quantization": {"bits": 4, "group_size": 64}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = run("count", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "new to the" not in result.stderr, result.stderr


# --- a dtype name is checked where it is given, also when nothing else reads it ------------------------------------


@pytest.mark.parametrize("extra", [(), ("--training",), ("--engine", "vllm")], ids=["plain", "training", "engine"])
def test_an_unknown_scale_dtype_is_refused_without_group_size(extra: tuple[str, ...]) -> None:
    assert_refused(run("memory", "qwen3-0.6b", "--scale-dtype", "zzz", *extra), "--scale-dtype", "'zzz'")


@pytest.mark.parametrize(
    "options",
    [("--training", "--lora", "8", "--lora-targets", "zzz"), ("--training", "--ep", "3")],
    ids=["lora_targets", "ep_without_experts"],
)
def test_training_refuses_in_one_line_after_a_new_key(tmp_path: Path, options: tuple[str, ...]) -> None:
    assert_refused(run("memory", str(_config_with(tmp_path)), *options), options[-2])


def test_training_still_notes_a_new_key(tmp_path: Path) -> None:
    result = run("memory", str(_config_with(tmp_path)), "--training")
    assert result.exit_code == 0, result.output
    assert "key_new_to_qwen3" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "args",
    [
        ("solve", "{m}", "--for", "zzz", "--target", "8B"),
        ("approx", "{m}", "--assume", "zzz"),
        ("check", "{m}", "--", "d^^"),
        ("compare", "{m}", "zzz-no-such-preset"),
        ("sweep", "qwen3", "--from", "{m}", "--set", "zzz=1,2"),
    ],
    ids=lambda a: a[0],
)
def test_any_command_refuses_in_one_line_after_a_new_key(tmp_path: Path, args: tuple[str, ...]) -> None:
    model = str(_config_with(tmp_path))
    assert_refused(run(*(a.format(m=model) for a in args)))


# --- training memory reads the config's quantisation scheme: a bad one refused as count refuses it, a good one noted --

QWEN3 = {
    "model_type": "qwen3", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
}  # fmt: skip


@pytest.mark.parametrize(
    ("scheme", "needle"),
    [([1, 2], "quantization_config must be an object"), ({"quant_method": "hqq"}, "'hqq' is not a scheme")],
)
def test_training_refuses_a_scheme_count_refuses(tmp_path: Path, scheme, needle: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN3, "quantization_config": scheme}))
    assert_refused(run("memory", str(path), "--training"), needle)


def test_training_says_the_scheme_is_not_applied(tmp_path: Path) -> None:
    awq = {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm", "zero_point": True}
    for name, config in (("awq", {**QWEN3, "quantization_config": awq}), ("bf16", QWEN3)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    result = run("memory", str(tmp_path / "awq"), "--training", "--json")
    unquantised = run("memory", str(tmp_path / "bf16"), "--training", "--json")
    assert result.exit_code == 0 and "AWQ int4" in result.stderr and "not applied to training" in result.stderr
    named = {"model", "source", "name", "path"}  # the same numbers as the unquantised config's
    got, want = json.loads(result.stdout), json.loads(unquantised.stdout)
    assert {k: v for k, v in got.items() if k not in named} == {k: v for k, v in want.items() if k not in named}


# --- a character that ends a line for str.splitlines (U+2028, NEL) or reorders a terminal's text stays escaped -----


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85", "\x9b", "\u202e", "\u2066", "\n"])
def test_a_name_with_a_line_or_direction_control_is_refused_in_one_line(tmp_path: Path, char: str) -> None:
    import llmcount

    missing = tmp_path / f"no{char}such.json"
    assert_refused(run("count", str(missing)), "no such file")
    with pytest.raises(llmcount.LlmcountError) as caught:  # the API's message is one line as well
        llmcount.load(str(missing))
    assert len(str(caught.value).splitlines()) == 1 and char not in str(caught.value)


# --- rows and JSON of a model whose file name is not UTF-8 are UTF-8 (its bytes as \udcXX escapes) ------------------


@pytest.mark.parametrize(
    "options",
    [("count", "--jsonl"), ("count", "--csv"), ("memory", "--json"), ("flops", "--json"), ("approx", "--json")],
    ids=lambda o: "-".join(o),
)
def test_output_of_a_name_that_is_not_utf8_is_utf8(tmp_path: Path, options: tuple[str, ...]) -> None:
    import os

    path = os.fsdecode(os.fsencode(str(tmp_path)) + b"/bad\xff.json")
    Path(path).write_text(json.dumps(QWEN3))
    result = run(options[0], path, *options[1:])
    assert result.exit_code == 0, result.output
    text = result.stdout_bytes.decode("utf-8")  # strict: no raw byte 0xff
    assert "bad\\udcff" in text
    if options[1] != "--csv":
        data = json.loads(text.splitlines()[0] if options[1] == "--jsonl" else text)
        assert data["model"] == "bad\udcff"


# --- the API refuses an argument of the wrong type in its own error, and takes one model where it takes a list ------


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda api: api.mfu("qwen3-0.6b", 1000, peak_tflops=100, convention=5), "convention"),
        (lambda api: api.approx("qwen3-0.6b", assume=5), "assume"),
        (lambda api: api.approx("qwen3-0.6b", assume=[b"d_ff=4*d"]), "assume"),
        (lambda api: api.approx("qwen3-0.6b", over=5), "over"),
        (lambda api: api.writeup("qwen3-0.6b", sections=["params"]), "sections"),
    ],
    ids=["mfu_convention", "approx_assume", "approx_assume_bytes", "approx_over", "writeup_sections"],
)
def test_the_api_refuses_a_wrong_type_in_its_own_error(call, needle: str) -> None:
    import llmcount

    with pytest.raises(llmcount.LlmcountError, match=needle):
        call(llmcount)


def test_the_api_reads_one_model_given_as_over_whole() -> None:
    import llmcount

    models = [e.model for e in llmcount.approx("qwen3-0.6b", over="qwen3-8b").evaluations]
    assert models == ["qwen3-0.6b", "qwen3-8b"]  # one preset, not a sequence of its characters


# --- an option's value is checked where it is given, also when nothing else reads it -------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("writeup", "qwen3-0.6b", "--dtype", "zz"), "--dtype"),  # read only with --index or --training
        (("writeup", "qwen3-0.6b", "--dtype", "1e999", "--format", "html"), "--dtype"),
        (("approx", "qwen3-0.6b", "--over", ""), "--over"),  # names no model: not read as left out
        (("approx", "qwen3-0.6b", "--over", " , "), "--over"),
    ],
    ids=["writeup_dtype", "writeup_dtype_html", "approx_over_empty", "approx_over_commas"],
)
def test_an_unread_option_value_is_still_checked(args: tuple[str, ...], needle: str) -> None:
    assert_refused(run(*args), needle)


# --- quantised weights are sized layer by layer: the layer count is bounded before the walk -------------------------

AWQ = {"quant_method": "awq", "bits": 4, "group_size": 64, "version": "gemm", "zero_point": True}


@pytest.mark.parametrize(
    ("keys", "options", "needle"),
    [
        ({"quantization_config": AWQ, "torch_dtype": "float16"}, ("count",), "for up to 1,000 layers"),
        ({}, ("memory", "--quant", "gptq", "--bits", "4", "--dtype", "bf16"), "for up to 1,000 layers"),
        ({}, ("memory", "--quant", "q4_k_m"), "for up to 10,000 layers"),
    ],
    ids=["config_awq", "quant_gptq", "quant_q4_k_m"],
)
def test_quantised_weights_of_too_many_layers_are_refused_before_the_walk(
    tmp_path: Path, keys: dict, options: tuple[str, ...], needle: str
) -> None:
    path = tmp_path / "config.json"  # llama: one kind of layer, so the count itself walks none
    path.write_text(json.dumps({**QWEN3, "model_type": "llama", "num_hidden_layers": 10**12, **keys}))
    assert_refused(run(options[0], str(path), *options[1:]), "num_hidden_layers", needle)


def test_the_weights_table_of_too_many_layers_names_each_scheme_it_cannot_size(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN3, "model_type": "llama", "num_hidden_layers": 10**12}))
    result = run("memory", str(path), "--table", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["schemes"] == [] and data["schemes_refused"]  # the dtype rows stay: their formula needs no walk
    assert all("layers" in line for line in data["schemes_refused"])


def test_standard_input_given_twice_is_refused_by_name() -> None:
    """`compare - -`: standard input holds one config; the second '-' is named, not called empty."""
    from typer.testing import CliRunner

    from llmcount.cli import app

    config = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128}
    config |= {"num_attention_heads": 4, "vocab_size": 100}
    result = CliRunner().invoke(app, ["compare", "-", "-"], input=json.dumps(config))
    assert_refused(result, "standard input given twice")
