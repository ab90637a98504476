"""A composite's vision tower and projector per GPU under --tp/--pp and in ``fit``, as vLLM 0.33.0 places them
(``llmcount/engines/vllm_parts.toml``, ``llmcount/tower_parallel.py``).

The expected figures are derived by hand from the cited vLLM code and the tower's own modules:
- vllm/model_executor/models/siglip.py: SiglipAttention builds ``QKVParallelLinear`` (q, k and v weights and biases
  divided by heads over the tp ranks, ``divide(num_heads, tp)``) and a ``RowParallelLinear`` out_proj (its weight
  divided, its bias whole on every rank); SiglipMLP a ``ColumnParallelLinear`` fc1 (weight and bias divided) and a
  ``RowParallelLinear`` fc2 (weight divided, bias whole); the patch convolution, the position table and the
  LayerNorms are plain modules, whole on every rank.
- vllm/model_executor/models/gemma3_mm.py: Gemma3ForConditionalGeneration builds ``SiglipVisionModel`` with
  ``use_head=False`` and ``Gemma3MultiModalProjector`` (an ``nn.Parameter`` and a ``GemmaRMSNorm``: whole on every
  rank), both inside ``_mark_tower_model``, which (interfaces.py) skips them on every pipeline stage but the first
  under Model Runner V2, vLLM 0.33.0's default.
The tower's parameters are transformers' (the meta-device ``SiglipVisionModel`` below, and
tests/test_towers.py::test_gemma3_27b_is_the_checkpoint against the published checkpoint's total_size).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from llmcount import serving
from llmcount.cli import app
from llmcount.formulas.config import read_config
from llmcount.serving import Layout
from llmcount.sources import resolve

TOWER, PROJECTOR = 416_866_032, 6_194_304  # gemma-3-27b-it's SigLIP tower and projector (tests/test_towers.py)
# siglip.py: q/k/v (QKVParallelLinear) and fc1 (ColumnParallelLinear): weight and bias divided over the tp ranks;
# out_proj and fc2 (RowParallelLinear): weight divided, bias whole on every rank
COLUMN = (".q_proj.", ".k_proj.", ".v_proj.", ".fc1.")
ROW = (".out_proj.", ".fc2.")
# qwen2_vl.py / qwen2_5_vl.py: qkv (Column/QKVParallelLinear), fc1 or gate_proj and up_proj (Column/
# MergedColumnParallelLinear), the merger's mlp.0 (ColumnParallelLinear) divided with their biases; attn.proj,
# fc2 or down_proj and the merger's mlp.2 (RowParallelLinear) their weights only
# (qwen3_vl.py: Qwen3_VisionMLP's and every Qwen3_VisionPatchMerger's linear_fc1 column-, linear_fc2 row-parallel)
QWEN_COLUMN = (".attn.qkv.", ".mlp.fc1.", ".mlp.gate_proj.", ".mlp.up_proj.", "merger.mlp.0.", ".linear_fc1.")
QWEN_ROW = (".attn.proj.", ".mlp.fc2.", ".mlp.down_proj.", "merger.mlp.2.", ".linear_fc2.")


def gemma3() -> dict:
    return resolve("gemma-3-27b-it")[2]


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def siglip_modules(vision_config: dict) -> dict[str, tuple[int, ...]]:
    """The shapes of transformers' SiglipVisionModel's parameters for ``vision_config``, built on the meta device."""
    torch = pytest.importorskip("torch")
    from transformers import SiglipVisionConfig, SiglipVisionModel

    config = SiglipVisionConfig(**{k: v for k, v in vision_config.items() if k != "model_type"})
    with torch.device("meta"):
        model = SiglipVisionModel(config)
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


def vllm_rank_share(shapes: dict[str, tuple[int, ...]], tp: int, column=COLUMN, row=ROW) -> int:
    """Parameters one tp rank holds of the tower, by vLLM's layers (``column``: weight and bias divided, ``row``:
    the weight divided; the rest whole)."""
    total = 0
    for name, shape in shapes.items():
        size = 1
        for extent in shape:
            size *= extent
        named = f".{name}"
        if any(c in named for c in column) or (any(r in named for r in row) and name.endswith(".weight")):
            assert size % tp == 0, name
            total += size // tp
        else:
            total += size
    return total


@pytest.fixture(scope="module")
def shapes() -> dict[str, tuple[int, ...]]:
    return siglip_modules(gemma3()["vision_config"])


def test_the_towers_parameters_are_transformers(shapes) -> None:
    model = read_config(gemma3(), "gemma-3-27b-it")
    tower = {part.role: part.model.counts.total for part in model.parts}
    assert sum(1 for _ in shapes) > 0
    assert vllm_rank_share(shapes, 1) == tower["vision tower"] == TOWER


@pytest.mark.parametrize("tp", [2, 4, 8, 16])
def test_each_tp_rank_holds_its_share_of_the_tower(shapes, tp: int) -> None:
    """Per GPU: the language model's shard plus the tower's rank share (by hand from siglip.py over transformers'
    modules) plus the whole projector, in bf16."""
    model = read_config(gemma3(), "gemma-3-27b-it")
    language = replace(model, parts=())
    expected = vllm_rank_share(shapes, tp) + PROJECTOR
    (plan,) = serving.stage_plans(model, Layout(tp=tp))
    (alone,) = serving.stage_plans(language, Layout(tp=tp))
    assert plan.parts_parameters == expected
    assert plan.parameters == alone.parameters + expected
    assert plan.weights_bytes == alone.weights_bytes + 2 * expected
    shard = serving.shard(model, Layout(tp=tp))
    assert shard.weights_bytes == plan.weights_bytes and shard.parameters == model.whole_total


def test_the_ranks_together_hold_the_tower_once_plus_what_each_copies() -> None:
    """By hand for gemma-3-27b-it's tower (d = 1152, d_ff = 4304, 27 layers, 4,096 positions, 14-pixel patches):
    what every rank copies is the patch convolution, the positions, the norms, out_proj's and fc2's biases; the
    divided rest summed over the tp ranks is the tower's."""
    d, f, layers = 1152, 4304, 27
    copied = 3 * 14 * 14 * d + d + 4096 * d + 2 * d + layers * (4 * d + d + d)
    divided = layers * (3 * (d * d + d) + d * d + d * f + f + f * d)
    assert copied + divided == TOWER
    model = read_config(gemma3(), "gemma-3-27b-it")
    for tp in (2, 4, 8):
        (plan,) = serving.stage_plans(model, Layout(tp=tp))
        tower = plan.parts_parameters - PROJECTOR
        assert tower == copied + divided // tp
        assert tp * tower - (tp - 1) * copied == TOWER


def test_under_pp_the_parts_are_on_the_first_stage_only() -> None:
    model = read_config(gemma3(), "gemma-3-27b-it")
    language = replace(model, parts=())
    for layout in (Layout(pp=2), Layout(tp=2, pp=2), Layout(pp=4, dp=2)):
        plans = serving.stage_plans(model, layout)
        alone = serving.stage_plans(language, layout)
        first = serving.stage_plans(model, Layout(tp=layout.tp))[0].parts_parameters
        assert [p.parts_parameters for p in plans] == [first] + [0] * (layout.pp - 1)
        assert [p.parameters - a.parameters for p, a in zip(plans, alone, strict=True)] == [first] + [0] * (
            layout.pp - 1
        )
    got = json.loads(run("memory", "gemma-3-27b-it", "--pp", "2", "--json").stdout)
    assert got["stage"] == 1 and "first pipeline stage only" in " ".join(got["notes"])


def test_memory_and_fit_show_the_whole_model_per_gpu(shapes) -> None:
    share = vllm_rank_share(shapes, 2) + PROJECTOR
    model = read_config(gemma3(), "gemma-3-27b-it")
    (alone,) = serving.stage_plans(replace(model, parts=()), Layout(tp=2))
    for args in (
        ("memory", "gemma-3-27b-it", "--tp", "2"),
        ("memory", "gemma-3-27b-it", "--tp", "2", "--engine", "vllm"),
    ):
        got = json.loads(run(*args, "--json").stdout)
        assert got["model"] == "gemma-3-27b-it"
        assert got["parameters"] == model.whole_total == 27_432_406_640
        assert got["weights_bytes_per_gpu"] == alone.weights_bytes + 2 * share
        assert any(f"P_vision: {share - PROJECTOR:,} of {TOWER:,} per GPU" in n for n in got["notes"])
    for args in (
        ("fit", "gemma-3-27b-it", "--gpu", "h100-sxm", "--gpus", "2"),
        ("memory", "gemma-3-27b-it", "--gpu-memory", "80GB", "--tp", "2"),
    ):
        got = json.loads(run(*args, "--json").stdout)
        assert got["weights_bytes_per_gpu"] == alone.weights_bytes + 2 * share, args
    one = json.loads(run("fit", "gemma-3-27b-it", "--gpu", "h100-sxm", "--json").stdout)
    assert one["weights_bytes_per_gpu"] == 2 * model.whole_total  # one GPU: the whole model


def test_fit_counts_the_tower_in_what_fits() -> None:
    """A GPU that would hold the language model's shard and one token more, but not the tower's share: nothing
    fits, and the reason is the weights."""
    model = read_config(gemma3(), "gemma-3-27b-it")
    (alone,) = serving.stage_plans(replace(model, parts=()), Layout(tp=2))
    result = serving.fit(model, alone.weights_bytes + 1_000_000, Layout(tp=2))
    assert result.max_seq == 0 and "exceed" in result.reason
    assert result.weights_bytes > alone.weights_bytes + 1_000_000


def test_parts_under_a_quantisation_scheme_stay_in_the_weights_dtype(shapes) -> None:
    share = vllm_rank_share(shapes, 2) + PROJECTOR
    got = json.loads(run("memory", "gemma-3-27b-it", "--tp", "2", "--quant", "fp8", "--json").stdout)
    model = read_config(gemma3(), "gemma-3-27b-it")
    language = replace(model, parts=())
    from llmcount.cli.inference import stored_weights

    stored = stored_weights(gemma3(), "gemma-3-27b-it", model, None, "fp8", None, None)
    (alone,) = serving.with_stored(serving.stage_plans(language, Layout(tp=2)), stored)
    assert got["weights_bytes_per_gpu"] == alone.weights_bytes + 2 * share


def one_line(result, *fragments: str) -> None:
    assert result.exit_code == 1 and result.stdout == "", result.output
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def test_what_cannot_be_placed_is_refused_by_name(tmp_path) -> None:
    one_line(
        run("memory", "gemma-3-27b-it", "--tp", "32"),
        "--tp 32 does not divide vision_config.num_attention_heads = 16",
    )
    unrecorded = {"model_type": "video_llava"}  # its two CLIP towers: not recorded
    path = tmp_path / "video_llava.json"
    path.write_text(json.dumps(unrecorded))
    placed = run("memory", str(path), "--tp", "2")
    one_line(placed, "how vLLM places the vision tower", "(video_llava) is not recorded")
    one_line(run("fit", str(path), "--gpu", "h100-sxm", "--gpus", "2"), "(video_llava) is not recorded")
    one_line(run("memory", str(path), "--pp", "2"), "--pp 2: how vLLM places")
    config = gemma3()
    headed = {**config, "vision_config": {**config["vision_config"], "vision_use_head": True}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(headed))
    one_line(run("memory", str(path), "--tp", "2"), "head/probe", "does not build")
    odd = {**config, "vision_config": {**config["vision_config"], "intermediate_size": 4302}}
    path.write_text(json.dumps(odd))
    one_line(run("memory", str(path), "--tp", "4"), "vision_config.intermediate_size = 4302")
    # a composite that leaves no part out under tp 1, pp 1: whole on the GPU, nothing refused
    assert run("memory", str(path), "--gpu", "h100-sxm").exit_code == 0


def test_the_placement_table_names_real_records_and_composites() -> None:
    from llmcount.formulas import records
    from llmcount.tower_parallel import table

    data = table()
    for name, composite in data["composites"].items():
        kind = records.composite(name)
        assert kind is not None, name
        for part in (kind.vision, kind.projector):
            assert part in data["parts"] or not part, (name, part)
        for record, paths in composite.get("not_built", {}).items():
            terms = {choice.term.path for choice in records.tower(record).choices}
            assert set(paths) <= terms, (name, record)


def qwen_modules(kind: str, vision_config: dict) -> dict[str, tuple[int, ...]]:
    """The shapes of transformers' Qwen2-VL, Qwen2.5-VL or Qwen3-VL vision tower (with its mergers), on meta."""
    torch = pytest.importorskip("torch")
    import importlib

    modeling = importlib.import_module(f"transformers.models.{kind}.modeling_{kind}")
    configuration = importlib.import_module(f"transformers.models.{kind}.configuration_{kind}")
    name = {
        "qwen2_vl": "Qwen2VLVisionConfig",
        "qwen2_5_vl": "Qwen2_5_VLVisionConfig",
        "qwen3_vl": "Qwen3VLVisionConfig",
    }
    name = name[kind]
    tower = {
        "qwen2_vl": "Qwen2VisionTransformerPretrainedModel",
        "qwen2_5_vl": "Qwen2_5_VisionTransformerPretrainedModel",
        "qwen3_vl": "Qwen3VLVisionModel",
    }
    config = getattr(configuration, name)(**{k: v for k, v in vision_config.items() if k != "model_type"})
    with torch.device("meta"):
        model = getattr(modeling, tower[kind])._from_config(config)
    return {n: tuple(p.shape) for n, p in model.named_parameters()}


QWEN2_VL = {
    "model_type": "qwen2_vl",
    "vision_config": {"embed_dim": 1280, "mlp_ratio": 4, "num_heads": 16, "hidden_size": 3584, "depth": 32},
    "hidden_size": 3584,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "vocab_size": 152064,
}


QWEN3_VL = {"model_type": "qwen3_vl", "vision_config": {"out_hidden_size": 4096}}


@pytest.mark.parametrize("kind", ["qwen2_5_vl", "qwen2_vl", "qwen3_vl"])
def test_the_qwen_vl_towers_per_tp_rank(kind: str) -> None:
    """Qwen2.5-VL-7B's ViT, a Qwen2-VL-7B-shaped config and Qwen3-VL's class defaults (mergers to d = 4096; its
    DeepStack mergers split like the merger: qwen3_vl.py Qwen3_VisionPatchMerger): each tp rank's share by hand from
    the vLLM files over transformers' module shapes; the tower's parameters are transformers' at tp 1; under pp
    only the first stage holds it."""
    config = {"qwen2_5_vl": resolve("qwen2.5-vl-7b")[2], "qwen2_vl": QWEN2_VL, "qwen3_vl": QWEN3_VL}
    config = config[kind]
    shapes = qwen_modules(kind, config.get("vision_config", {}))
    model = read_config(config, kind)
    (tower,) = model.parts
    assert vllm_rank_share(shapes, 1, QWEN_COLUMN, QWEN_ROW) == tower.model.counts.total
    language = replace(model, parts=())
    for tp in (2, 4):
        expected = vllm_rank_share(shapes, tp, QWEN_COLUMN, QWEN_ROW)
        (plan,) = serving.stage_plans(model, Layout(tp=tp))
        (alone,) = serving.stage_plans(language, Layout(tp=tp))
        assert plan.parts_parameters == expected < tower.model.counts.total
        assert plan.weights_bytes == alone.weights_bytes + 2 * expected
    staged = serving.stage_plans(model, Layout(tp=2, pp=2))
    assert [p.parts_parameters for p in staged] == [vllm_rank_share(shapes, 2, QWEN_COLUMN, QWEN_ROW), 0]


def test_a_qwen_vl_width_tp_does_not_divide_is_refused_by_its_key(tmp_path) -> None:
    config = resolve("qwen2.5-vl-7b")[2]
    odd = {**config, "vision_config": {**config["vision_config"], "intermediate_size": 3418}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(odd))
    one_line(run("memory", str(path), "--tp", "4"), "vision_config.intermediate_size = 3418", "qwen2_5_vl.py")
    assert run("memory", str(path), "--tp", "2").exit_code == 0


def test_gpu_memory_fits_the_whole_model() -> None:
    """``memory --gpu-memory`` on one GPU: the weights are the whole model's, and the longest S is the last at which
    ``memory`` (whose weights line holds the tower and projector, tests/test_towers_memory.py) stays within it."""
    got = json.loads(run("memory", "gemma-3-27b-it", "--gpu-memory", "80GB", "--json").stdout)
    whole = TOWER + PROJECTOR + 27_009_346_304
    assert got["model"] == "gemma-3-27b-it" and got["weights_bytes"] == 2 * whole
    longest = got["max_seq_at_batch_1"]
    at = json.loads(run("memory", "gemma-3-27b-it", "--seq", str(longest), "--json").stdout)["total_bytes"]
    past = json.loads(run("memory", "gemma-3-27b-it", "--seq", str(longest + 1), "--json").stdout)["total_bytes"]
    assert at <= 80 * 10**9 < past
    fitted = json.loads(run("fit", "gemma-3-27b-it", "--gpu", "h100-sxm", "--json").stdout)
    assert fitted["max_seq"] == longest  # the H100's 80 GB: the same answer per GPU
    small = run("memory", "gemma-3-27b-it", "--gpu-memory", f"{2 * 27_009_346_304 + 10**6}B")
    one_line(small, "smaller than the weights alone")


@pytest.mark.parametrize("backend", ["fa4", "trtllm_mha"])
def test_fit_takes_sglangs_attention_backend(backend: str) -> None:
    """``fit --engine sglang --attention-backend B``: the longest S is the last at which the weights and SGLang's
    cache at B's page size (engines.kv_cache_bytes, tested against SGLang's rules in tests/test_engines_sglang.py)
    fit the GPU."""
    from llmcount import engines

    whole = ("--gpu-memory-utilization", "1")  # the whole GPU: SGLang's default share leaves the 8B no room on an L4
    got = json.loads(
        run(
            "fit", "qwen3-8b", "--gpu", "l4", "--engine", "sglang", "--attention-backend", backend, *whole, "--json"
        ).stdout
    )
    plain = json.loads(run("fit", "qwen3-8b", "--gpu", "l4", "--engine", "sglang", *whole, "--json").stdout)
    assert got["engine_settings"] == {"attention_backend": backend}
    model = read_config(resolve("qwen3-8b")[2], "qwen3-8b")

    def cache(s: int) -> int:
        return engines.kv_cache_bytes("sglang", model, s, 1, None, dtype="bf16", tp=1, attention_backend=backend)

    longest, room = got["max_seq_by_memory"], got["gpu_memory_bytes"] - got["weights_bytes_per_gpu"]
    assert cache(longest) <= room < cache(longest + 1)
    assert longest != plain["max_seq_by_memory"]  # the page size changes the answer


def test_attention_backend_is_refused_where_it_means_nothing() -> None:
    usage = run("fit", "qwen3-8b", "--gpu", "l4", "--attention-backend", "fa4")
    assert usage.exit_code == 2 and "give --engine sglang" in usage.stderr and usage.stdout == ""
    one_line(
        run("fit", "qwen3-8b", "--gpu", "l4", "--engine", "vllm", "--attention-backend", "fa4"),
        "an SGLang setting, not vLLM's",
    )
    one_line(
        run("fit", "qwen3-8b", "--gpu", "l4", "--engine", "sglang", "--attention-backend", "fa5"),
        "did you mean fa4",
    )


def test_the_api_fit_holds_the_whole_model() -> None:
    import llmcount

    whole = TOWER + PROJECTOR + 27_009_346_304
    found = llmcount.fit("gemma-3-27b-it", "80GB")
    assert found.weights == 2 * whole
    got = json.loads(run("memory", "gemma-3-27b-it", "--gpu-memory", "80GB", "--json").stdout)
    assert found.max_seq_by_memory == got["max_seq_by_memory"]
