"""DeepSeek-VL2 (model_type deepseek_vl_v2, remote code): the whole model, as its modeling files'
DeepseekVLV2ForCausalLM builds it (figures in tests/remote_oracle/deepseek_vl_v2.json, compared whole and part by part
in tests/test_remote_built.py), through the CLI, with other towers and projectors under the same model_type refused.

The repository's README (github.com/deepseek-ai/DeepSeek-VL2 at commit ef9f91e2b6426536b83294c11742c27be66361b1,
"vl2-tiny, 3.37B-MoE in total") gives DeepSeek-VL2-Tiny's size; the config of DeepSeek-VL2-Tiny's sizes kept beside
the figures builds 3,370,501,440. By hand, its projector (downsample_mlp_gelu, depth 2, ratio 2, 1152 to 1280) is
1152·4·1280 + 1280 + 1280·1280 + 1280 + 2·1280 (image_newline, view_seperator) = 7,541,760, and its tower (SigLIP
so400m at 384, patch 14, 27 layers of width 1152 and MLP int(1152 · 3.7362) = 4304, with the attention-pooling head
timm builds for global_pool "map") 3·14²·1152 + 1152 + 27²·1152 + 27·(4·1152² + 4·1152 + 2·1152·4304 + 4304 + 1152
+ 4·1152) + 2·1152 + 1152 + 4·1152² + 4·1152 + 2·1152 + 2·1152·4304 + 4304 + 1152 = 428,225,600.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from refusal import run

SPEC = json.loads((Path(__file__).parent / "remote_oracle" / "deepseek_vl_v2.json").read_text("utf-8"))
TINY = {**SPEC["configs"]["tiny_sized"]["config"], "model_type": "deepseek_vl_v2"}
PROJECTOR = 1152 * 4 * 1280 + 1280 + 1280 * 1280 + 1280 + 2 * 1280
LAYER = 4 * 1152**2 + 4 * 1152 + 2 * 1152 * 4304 + 4304 + 1152 + 4 * 1152
HEAD = 1152 + 4 * 1152**2 + 4 * 1152 + 2 * 1152 + 2 * 1152 * 4304 + 4304 + 1152
TOWER = 3 * 14**2 * 1152 + 1152 + 27**2 * 1152 + 27 * LAYER + 2 * 1152 + HEAD


def test_tiny_by_hand_as_built_and_as_published(tmp_path: Path) -> None:
    assert (PROJECTOR, TOWER) == (7_541_760, 428_225_600)
    built = SPEC["figures"]["tiny_sized"]["total"]
    assert built == 3_370_501_440 and round(built / 1e9, 2) == 3.37  # the README's "3.37B-MoE in total"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    result = run("count", str(path), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == built
    text = run("count", str(path)).stdout
    assert "7,541,760" in text and "428,225,600" in text and "3,370,501,440" in text


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tile_tag": "1D"}, "tile_tag: only '2D'"),
        ({"projector_config": {**TINY["projector_config"], "projector_type": "linear"}}, "only downsample_mlp_gelu"),
        ({"vision_config": {**TINY["vision_config"], "model_name": "deeplip_b_l"}}, "vision_config.model_name is not"),
        ({"vision_config": {**TINY["vision_config"], "class_token": True}}, "a class token is not modelled"),
        ({"projector_config": {**TINY["projector_config"], "n_embed": 1024}}, "n_embed is not the language model's"),
        ({"language_config": {**TINY["language_config"], "num_key_value_heads": 3}}, "not divisible by num_key_value"),
        ({"language_config": [1]}, "key 'language_config' must be a JSON object"),
    ],
)
def test_other_releases_and_bad_keys_are_refused_in_one_line(tmp_path: Path, change: dict, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, **change}))
    result = run("count", str(path))
    assert result.exit_code == 1 and result.stdout == "", result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_flops_and_the_kv_cache_are_refused_by_name(tmp_path: Path) -> None:
    """The record has no [attention] (the cache differs between use_mla and LlamaAttention layers): memory refuses
    the KV cache rather than guess it."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    result = run("memory", str(path), "--seq", "1024")
    assert result.exit_code == 1 and result.stdout == "", result.output
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
