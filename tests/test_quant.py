"""Quantisation schemes read from a config: published checkpoint sizes, the layouts of the quantisers' own modules,
and the refusal of configs that contradict themselves or name an unknown method."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmcount.errors import LlmcountError
from llmcount.formulas.config import read_config
from llmcount.quant.config import read_quant
from llmcount.quant.stored import plan, rest_dtype

# openai/gpt-oss-20b config.json as released (Hub revision of 2025-08; mirrored with its index in public GitHub
# repositories): its model.safetensors.index.json says metadata.total_size = 13761264768.
GPT_OSS_20B = {
    "architectures": ["GptOssForCausalLM"],
    "attention_bias": True,
    "experts_per_token": 4,
    "head_dim": 64,
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "max_position_embeddings": 131072,
    "model_type": "gpt_oss",
    "num_attention_heads": 64,
    "num_experts_per_tok": 4,
    "num_hidden_layers": 24,
    "num_key_value_heads": 8,
    "num_local_experts": 32,
    "quantization_config": {
        "modules_to_not_convert": [
            "model.layers.*.self_attn",
            "model.layers.*.mlp.router",
            "model.embed_tokens",
            "lm_head",
        ],
        "quant_method": "mxfp4",
    },
    "rope_theta": 150000,
    "sliding_window": 128,
    "tie_word_embeddings": False,
    "vocab_size": 201088,
}
GPT_OSS_20B_TOTAL_SIZE = 13_761_264_768  # openai/gpt-oss-20b model.safetensors.index.json, metadata.total_size


def stored(config: dict, dtype: str | None = None) -> int:
    model = read_config(config, "test")
    quant = read_quant(config, "test")
    code, note = rest_dtype(quant, model.dtype, dtype, "test")
    return plan(model, quant, code, note).bytes


def test_gpt_oss_20b_as_released():
    """MXFP4 experts (blocks + E8M0 scales) and BF16 for the rest: the released index's total_size to the byte,
    though the config names no dtype."""
    assert stored(GPT_OSS_20B) == GPT_OSS_20B_TOTAL_SIZE


def test_gpt_oss_20b_by_hand():
    """The same figure derived by hand: 24 layers of 32 experts, gate_up (5760 × 2880) and down (2880 × 2880) at
    17 bytes per 32 weights (16 of blocks, 1 scale); the 1,804,459,584 other parameters in BF16."""
    experts = 24 * 32 * (5760 * 2880 + 2880 * 2880)
    assert experts * 17 // 32 + (20_914_757_184 - experts) * 2 == GPT_OSS_20B_TOTAL_SIZE


QWEN3 = {
    "model_type": "qwen3",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "vocab_size": 1000,
    "torch_dtype": "bfloat16",
}


@pytest.mark.parametrize(
    ("quantization", "key"),
    [
        ({"quant_method": "gptq", "bits": 5, "group_size": 128}, "quantization_config.bits"),
        ({"quant_method": "awq", "bits": 3, "group_size": 128}, "quantization_config.bits"),
        ({"quant_method": "gptq", "bits": 4, "group_size": 0}, "quantization_config.group_size"),
        ({"quant_method": "awq", "bits": 4, "group_size": -1}, "quantization_config.group_size"),
        ({"quant_method": "awq", "bits": 8, "group_size": 128}, "quantization_config.bits"),
        ({"quant_method": "fp8", "weight_block_size": [128]}, "quantization_config.weight_block_size"),
        ({"quant_method": "fp8", "weight_block_size": [128, "a"]}, "quantization_config.weight_block_size"),
        ({"quant_method": "fp8", "activation_scheme": "sometimes"}, "quantization_config.activation_scheme"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": True}, "load_in_4bit"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf3"}, "bnb_4bit_quant_type"),
        ({"quant_method": "hqq"}, "quantization_config.quant_method"),
        ({"bits": 4}, "quantization_config.quant_method"),
        ({"quant_method": "compressed-tensors", "format": "sparse-24"}, "quantization_config.format"),
    ],
)
def test_contradictions_are_refused_naming_the_key(quantization, key):
    with pytest.raises(LlmcountError, match=key.replace(".", r"\.")):
        read_quant({**QWEN3, "quantization_config": quantization}, "cfg")


def test_mlx_group_size_zero_is_refused():
    with pytest.raises(LlmcountError, match=r"quantization\.group_size"):
        read_quant({**QWEN3, "quantization": {"group_size": 0, "bits": 4}}, "cfg")


def test_a_config_without_a_scheme_has_none():
    assert read_quant(QWEN3, "cfg") is None


def test_an_mlx_override_that_names_no_module_is_refused():
    config = {**QWEN3, "quantization": {"group_size": 64, "bits": 4, "model.layers.0.mlp.nowhere": {"bits": 8}}}
    with pytest.raises(LlmcountError, match=r"quantization\.model\.layers\.0\.mlp\.nowhere"):
        stored(config)


def test_gptq_group_per_row_and_desc_act():
    """GPTQ int4 with group_size -1 (one group per row of in): by hand, for the 2-layer Qwen3 above: per weight
    (out, in) qweight in/8 × out int32, qzeros 1 × out/8 int32, scales 1 × out fp16, g_idx in int32."""
    config = {**QWEN3, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": -1, "desc_act": True}}

    def one(out, in_):
        return in_ // 8 * out * 4 + out // 8 * 4 + out * 2 + in_ * 4

    layer = one(256, 256) + 2 * one(128, 256) + one(256, 256) + 2 * one(512, 256) + one(256, 512)
    rest = (1000 * 256 * 2) * 2 + 2 * (2 * 64 + 2 * 256) * 2 + 256 * 2  # embed, lm_head, norms in bf16
    assert stored(config) == 2 * layer + rest


def test_awq_needs_whole_groups():
    config = {**QWEN3, "intermediate_size": 504}
    config["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128}
    with pytest.raises(LlmcountError, match=r"mlp/down_proj: .* in = 504, not a multiple of 128"):
        stored(config)


def test_no_dtype_refused_unless_the_scheme_knows_it():
    config = {k: v for k, v in QWEN3.items() if k != "torch_dtype"}
    config["quantization_config"] = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    with pytest.raises(LlmcountError, match="names no dtype"):
        stored(config)
    assert stored(config, "bf16") > 0


def test_the_cli_refuses_a_bad_config_in_one_line(tmp_path: Path):
    from refusal import assert_refused, run

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN3, "quantization_config": {"quant_method": "awq", "bits": 3}}))
    assert_refused(run("memory", str(path)), "quantization_config.bits")


def write_index(folder: Path, config: dict, names: list[str], total: int) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": dict.fromkeys(names, "a")}))
    return index


def test_index_mode_predicts_the_schemes_bytes(tmp_path: Path):
    from llmcount.checkpoint import verify

    index = write_index(tmp_path / "m", GPT_OSS_20B, ["lm_head.weight"], GPT_OSS_20B_TOTAL_SIZE)
    result = verify(str(tmp_path / "m"), index=str(index))
    assert result.match and result.unit == "bytes" and "MXFP4" in result.note


DSV3_SMALL = {
    "model_type": "deepseek_v3",
    "hidden_size": 256,
    "intermediate_size": 512,
    "moe_intermediate_size": 128,
    "n_routed_experts": 4,
    "n_shared_experts": 1,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "q_lora_rank": 128,
    "kv_lora_rank": 128,
    "qk_nope_head_dim": 64,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "vocab_size": 1024,
    "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "dynamic"},
}


def test_index_mode_names_every_difference(tmp_path: Path):
    """A DeepSeek-V3-shaped index with the routing-bias buffers and an MTP layer: the difference is attributed to
    them (the buffers' bytes by name and count, the MTP layer the remainder), never left unnamed."""
    from llmcount.checkpoint import verify

    predicted = stored(DSV3_SMALL)
    names = ["lm_head.weight", "model.layers.1.mlp.gate.e_score_correction_bias"]
    names += ["model.layers.2.eh_proj.weight", "model.layers.2.embed_tokens.weight"]
    mtp = 12345
    index = write_index(tmp_path / "m", DSV3_SMALL, names, predicted + 4 * 4 + mtp)
    result = verify(str(tmp_path / "m"), index=str(index))
    assert not result.match
    found = {c.path: c.checkpoint for c in result.differences}
    assert found == {"buffer/e_score_correction_bias": 16, "extra/layers.2": mtp}


def test_plain_index_differences_are_never_empty(tmp_path: Path):
    from llmcount.checkpoint import verify

    config = {k: v for k, v in QWEN3.items()}
    model = read_config(config, "t")
    index = write_index(tmp_path / "p", config, ["lm_head.weight"], (model.counts.total + 10) * 2)
    result = verify(str(tmp_path / "p"), index=str(index))
    assert not result.match and [(c.path, c.checkpoint) for c in result.differences] == [("unexplained", 10)]


def test_memory_table_sets_the_schemes_side_by_side():
    from refusal import run

    result = run("memory", "gpt-oss-20b", "--table", "--json")
    assert result.exit_code == 0, result.output
    schemes = {row["scheme"]: row for row in json.loads(result.output)["schemes"]}
    assert schemes["mxfp4"]["bytes"] == GPT_OSS_20B_TOTAL_SIZE  # the released MXFP4 checkpoint
    assert "awq-int4-g128" not in schemes  # 2880 is no multiple of 128: named among the refused instead
    assert any(line.startswith("awq-int4-g128: ") for line in json.loads(result.output)["schemes_refused"])


def test_memory_defaults_to_the_configs_scheme_and_quant_none_ignores_it(tmp_path: Path):
    from refusal import run

    path = tmp_path / "config.json"
    path.write_text(json.dumps(GPT_OSS_20B))
    stored_ = json.loads(run("memory", str(path), "--json").output)
    assert (
        stored_["scheme"].startswith("MXFP4")
        and stored_["weights_bytes"]
        + next(line["bytes"] for line in stored_["lines"] if line["name"] == "quantisation_scales")
        == GPT_OSS_20B_TOTAL_SIZE
    )
    plain = json.loads(run("memory", str(path), "--quant", "none", "--json").output)
    assert plain["weights_bytes"] == 2 * 20_914_757_184 and "scheme" not in plain


def test_every_record_is_sized_or_refused_by_name():
    """Every family record's class-default config (as tests/oracle.py gives them, transformers 5.24.0) under MLX
    4-bit, which converts every Linear and embedding (the widest walk over the records' shapes): stored bytes at
    least half a byte per parameter, or one LlmcountError naming the term whose shape the record does not tell, or
    the record quant/shapes.toml refuses, with its reason."""
    from oracle import class_defaults

    from llmcount.formulas import records
    from llmcount.quant.config import from_options

    schemes = [from_options("mlx", 4, 64)]
    sized = refused = 0
    for family in records.families():
        try:
            model = read_config({"model_type": family.name, **class_defaults(family.name)}, family.name)
        except Exception:  # a config the oracle cannot give: counted elsewhere
            continue
        for quant in schemes:
            try:
                result = plan(model, quant, "BF16")
            except LlmcountError as error:
                message = str(error)
                named = ("term " in message and "shape" in message) or f"is not sized for the {family.name}" in message
                assert named, (family.name, message)
                refused += 1
                continue
            assert result.parameters == model.counts.total, family.name
            assert result.bytes >= model.counts.total // 2, family.name
            sized += 1
    assert sized > 4 * refused, (sized, refused)


@pytest.mark.parametrize(
    ("entries", "needle"),
    [
        (["(a+)+$"], "repeated group"),
        (["re:(.*)*x"], "repeated group"),
        (["model.layers.[0-"], "not a regular expression"),
        (["x" * 600], "over the limit of 500"),
        ([7], "must be a list of module names"),
    ],
)
def test_hostile_skip_lists_are_refused_in_one_line(entries, needle, tmp_path: Path):
    import time

    from refusal import assert_refused, run

    key = "ignore" if any(isinstance(e, str) and e.startswith("re:") for e in entries) else "modules_to_not_convert"
    quantization = {"quant_method": "fp8", "weight_block_size": [128, 128], "modules_to_not_convert": entries}
    if key == "ignore":
        weights = {"num_bits": 8, "type": "float", "strategy": "channel"}
        quantization = {
            "quant_method": "compressed-tensors",
            "format": "float-quantized",
            "config_groups": {"g": {"targets": ["Linear"], "weights": weights}},
            "ignore": entries,
        }
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN3, "quantization_config": quantization}))
    start = time.monotonic()
    assert_refused(run("memory", str(path)), f"quantization_config.{key}", needle)
    assert time.monotonic() - start < 2


def test_many_skip_entries_stay_fast():
    """A compressed-tensors ignore list naming every module of a 94-layer MoE (as released configs do) is read in
    well under the input contract's 2 s."""
    import time

    config = read_config({**QWEN3, "num_hidden_layers": 94}, "t")
    ignore = [f"model.layers.{i}.mlp.{m}" for i in range(94) for m in ("gate_proj", "up_proj")] + ["lm_head"]
    ignore += [f"re:.*layers\\.{i}\\.self_attn\\.q_proj$" for i in range(94)]
    quantization = {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float"}}},
        "ignore": ignore,
    }
    quant = read_quant({**QWEN3, "quantization_config": quantization}, "t")
    start = time.monotonic()
    result = plan(config, quant, "BF16")
    assert time.monotonic() - start < 2
    kept = {g.path: g.stored_as for g in result.groups}
    assert kept["mlp/gate_proj"] == kept["attention/q_proj"] == kept["head/lm_head"] == "BF16"
    assert kept["mlp/down_proj"] == "ct-fp8"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--quant", "fp8-block", "--group-size", "64"], "--group-size"),
        (["--bits", "4"], "--bits needs --quant"),
        (["--quant", "int3"], "unknown scheme 'int3'"),
        (["--quant", "q9"], "--quant q9: not a llama.cpp file type"),  # shaped like one: llama.cpp's list
        (["--quant", "gptq", "--bits", "5"], "quantization_config.bits"),
        (["--quant", "awq", "--training"], "--quant"),
        (["--quant", "awq", "--table"], "--quant"),
    ],
)
def test_memory_quant_options_refused_in_one_line(args, needle):
    from refusal import assert_refused, run

    assert_refused(run("memory", "qwen3-8b", *args), needle)


def test_memory_quant_gptq_sizes_by_hand():
    """qwen3-8b (36 layers, d = 4096, 32 query and 8 KV heads of 128, d_ff = 12288, V = 151936, untied) as GPTQ
    int8 with groups of 32 (gptqmodel 7.7.0's buffers, by hand): each linear (out, in) stores qweight in/4 × out
    int32, qzeros in/32 × out/4 int32, scales in/32 × out fp16, g_idx in int32; the rest in bf16."""
    from refusal import run

    def one(out, in_):
        return in_ // 4 * out * 4 + in_ // 32 * out // 4 * 4 + in_ // 32 * out * 2 + in_ * 4

    layer = one(4096, 4096) * 2 + one(1024, 4096) * 2 + one(12288, 4096) * 2 + one(4096, 12288)
    rest = 2 * 151936 * 4096 * 2 + 36 * (2 * 4096 + 2 * 128) * 2 + 4096 * 2
    args = ("--quant", "gptq", "--bits", "8", "--group-size", "32", "--json")
    data = json.loads(run("memory", "qwen3-8b", *args).output)
    assert sum(line["bytes"] for line in data["lines"] if line["name"] in ("weights", "quantisation_scales")) == (
        36 * layer + rest
    )


def test_qwen3_32b_awq_as_released():
    """Qwen/Qwen3-32B-AWQ: its safetensors headers hold 896 int32 tensors (qweight, qzeros) and 707 16-bit ones
    (scales, embeddings, head, norms) of 19,325,298,688 bytes, as a public header audit of the release records
    (its index's total_size says 19,338,405,888, which the audit finds inconsistent with the files themselves)."""
    from llmcount.sources import resolve

    _, _, config = resolve("qwen3-32b")
    quantization = {"bits": 4, "group_size": 128, "quant_method": "awq", "version": "gemm", "zero_point": True}
    config = {**config, "torch_dtype": "float16", "quantization_config": quantization}
    model = read_config(config, "t")
    result = plan(model, read_quant(config, "t"), "F16")
    assert result.bytes == 19_325_298_688
    packed = sum(t.count for g in result.groups for t in g.tensors if t.dtype == "I32")
    scales = sum(t.count for g in result.groups for t in g.tensors if t.suffix == "scales")
    kept = [g.path for g in result.groups if g.stored_as == "F16"]  # one tensor per layer, or one in all
    per_layer = [p for p in kept if p.startswith(("attention/", "norms/input", "norms/post"))]
    count = {"I32": packed, "16-bit": scales + 64 * len(per_layer) + len(kept) - len(per_layer)}
    assert count == {"I32": 896, "16-bit": 707}


def test_gpt_oss_120b_as_released():
    """openai/gpt-oss-120b: 15 safetensors files whose tensors take 65,248,815,744 bytes (65,248,893,184 with their
    headers), as public inventories of the release record; the config is the bundled preset's with the release's
    quantization_config."""
    from llmcount.sources import resolve

    _, _, config = resolve("gpt-oss-120b")
    quantization = {"modules_to_not_convert": GPT_OSS_20B["quantization_config"]["modules_to_not_convert"]}
    config = {**config, "quantization_config": {**quantization, "quant_method": "mxfp4"}}
    config.pop("torch_dtype", None)
    config.pop("dtype", None)
    assert stored(config) == 65_248_815_744


def test_index_mode_names_saved_rotary_buffers(tmp_path: Path):
    """An old Llama-style index that saves rotary_emb.inv_freq: the difference is put on those buffers, by name."""
    from llmcount.checkpoint import verify

    model = read_config(QWEN3, "t")
    names = [
        "lm_head.weight",
        "model.layers.0.self_attn.rotary_emb.inv_freq",
        "model.layers.1.self_attn.rotary_emb.inv_freq",
    ]
    index = write_index(tmp_path / "r", QWEN3, names, model.counts.total * 2 + 2 * 32 * 4)
    result = verify(str(tmp_path / "r"), index=str(index))
    assert [(c.path, c.checkpoint) for c in result.differences] == [("buffer/saved", 128)]


def test_mlx_quantization_key_is_known_to_every_record(tmp_path: Path) -> None:
    """mlx-lm writes its scheme as ``quantization`` (and again as quantization_config): a key of the format, not
    of the family, so ``count`` reads it without a note that the record does not know it."""
    import quant_models
    from refusal import run

    config = {**quant_models.QWEN3, "quantization": {"group_size": 32, "bits": 4}, "torch_dtype": "bfloat16"}
    config["quantization_config"] = dict(config["quantization"])
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("count", str(path))
    assert result.exit_code == 0 and "MLX 4-bit" in result.stdout, result.output
    assert "new to the qwen3 record" not in result.output


QWEN3_14B_MLX_4BIT = {  # config.json of Qwen3-14B-MLX-4bit, from a public copy (root-hypercube/qwen3-mlx, 821745a)
    "architectures": ["Qwen3ForCausalLM"],
    "head_dim": 128,
    "hidden_size": 5120,
    "intermediate_size": 17408,
    "max_position_embeddings": 40960,
    "model_type": "qwen3",
    "num_attention_heads": 40,
    "num_hidden_layers": 40,
    "num_key_value_heads": 8,
    "quantization": {"group_size": 64, "bits": 4},
    "quantization_config": {"group_size": 64, "bits": 4},
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 151936,
}
QWEN3_14B_MLX_4BIT_TOTAL_SIZE = 8_307_783_680  # its model.safetensors.index.json, metadata.total_size


def test_qwen3_14b_mlx_4bit_as_released(tmp_path: Path) -> None:
    """The checkpoint's total_size to the byte: every linear, the embedding and the head packed 8 weights per uint32
    with a bf16 scale and bias per 64; norms in bf16. ``count`` keeps the model's own 14,768,307,200 parameters."""
    from refusal import run

    model = read_config(QWEN3_14B_MLX_4BIT, "qwen3-14b-mlx")
    quant = read_quant(QWEN3_14B_MLX_4BIT, "qwen3-14b-mlx")
    assert model.counts.total == 14_768_307_200
    assert plan(model, quant, "BF16").bytes == QWEN3_14B_MLX_4BIT_TOTAL_SIZE
    linears = ("mlp.down_proj", "mlp.gate_proj", "mlp.up_proj")
    linears += ("self_attn.k_proj", "self_attn.o_proj", "self_attn.q_proj", "self_attn.v_proj")
    names = ["lm_head", "model.embed_tokens", *(f"model.layers.{i}.{m}" for i in range(40) for m in linears)]
    weight_map = {f"{n}.{leaf}": "a" for n in names for leaf in ("weight", "scales", "biases")}
    norms = ("input_layernorm", "post_attention_layernorm", "self_attn.k_norm", "self_attn.q_norm")
    weight_map |= {f"model.layers.{i}.{n}.weight": "a" for i in range(40) for n in norms}
    weight_map["model.norm.weight"] = "a"
    (tmp_path / "config.json").write_text(json.dumps(QWEN3_14B_MLX_4BIT))
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": QWEN3_14B_MLX_4BIT_TOTAL_SIZE}, "weight_map": weight_map}))
    result = run("verify", str(tmp_path), "--index", str(index), "--strict")
    assert result.exit_code == 0 and "match: the checkpoint holds exactly the formula's bytes" in result.stdout
