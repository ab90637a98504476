"""Moondream 2 (model_type moondream1, remote code): the whole model as its modeling file's HfMoondream builds it
(figures in tests/remote_oracle/moondream1.json, compared whole and part by part in tests/test_remote_built.py), the
2024 revisions (class Moondream over a Phi model, under the same model_type) refused by name.

HfConfig (hf_moondream.py, github.com/vikhyat/moondream at commit 44146f139242dacdf7c02b799e68097424a31036) sets its
``config`` to ``{}`` after reading config.json, so every published config.json builds MoondreamConfig's defaults; the
config.json here is the one hf_release.py publishes (``HfConfig()`` saved with the model: ``config`` empty).

By hand, at those defaults: the language model (dim 2048, ff_dim 8192, 24 blocks, 32 heads, vocabulary 51200)
51200·2048 + 24·(2048·3·2048 + 3·2048 + 2048² + 2048 + 2048·8192 + 8192 + 8192·2048 + 2048 + 2·2048) + 2·2048 +
51200·2048 + 51200 = 1,418,270,720; the vision encoder (enc_dim 1152, 27 blocks, enc_ff_dim 4304, 14-pixel patches of
378-pixel crops) 3·14²·1152 + 1152 + 27²·1152 + 27·(3·1152² + 3·1152 + 1152² + 1152 + 2·1152·4304 + 4304 + 1152 +
4·1152) + 2·1152 = 412,987,248; the projector 2·1152·8192 + 8192 + 8192·2048 + 2048 = 35,661,824; the region head
128 + 256·2048 + 2048 + 2048·8192 + 8192 + 8192·1024 + 1024 + 512 + 512·2048 + 2048 + 2048·8192 + 8192 + 8192·2048 +
2048 = 60,317,312.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from refusal import assert_refused, run

SPEC = json.loads((Path(__file__).parent / "remote_oracle" / "moondream1.json").read_text("utf-8"))
MOONDREAM2 = {  # HfConfig() as hf_release.py pushes it with the model
    "architectures": ["HfMoondream"],
    "auto_map": {"AutoConfig": "hf_moondream.HfConfig", "AutoModelForCausalLM": "hf_moondream.HfMoondream"},
    "config": {},
    "model_type": "moondream1",
    "torch_dtype": "bfloat16",
}
D, FF, E, FE = 2048, 8192, 1152, 4304
LANGUAGE = (
    51200 * D + 24 * (D * 3 * D + 3 * D + D**2 + D + D * FF + FF + FF * D + D + 2 * D) + 2 * D + 51200 * D + 51200
)
TOWER = 3 * 14**2 * E + E + 27**2 * E + 27 * (3 * E**2 + 3 * E + E**2 + E + 2 * E * FE + FE + E + 4 * E) + 2 * E
PROJECTOR = 2 * E * 8192 + 8192 + 8192 * D + D
REGION = 128 + 256 * D + D + D * 8192 + 8192 + 8192 * 1024 + 1024
REGION += 512 + 512 * D + D + D * 8192 + 8192 + 8192 * D + D


def test_moondream2_whole_and_by_part(tmp_path: Path) -> None:
    assert (LANGUAGE, TOWER, PROJECTOR, REGION) == (1_418_270_720, 412_987_248, 35_661_824, 60_317_312)
    total = LANGUAGE + TOWER + PROJECTOR + REGION
    assert total == SPEC["figures"]["moondream2"]["total"] == 1_927_237_104
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MOONDREAM2))
    result = run("count", str(path), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == total
    text = " ".join(run("count", str(path)).stdout.split())
    for figure in (LANGUAGE, TOWER, PROJECTOR, REGION, total):
        assert f"{figure:,}" in text, figure
    assert "as HfMoondream builds it" in text


def test_a_config_of_its_own_is_not_read_by_hf_config() -> None:
    """HfConfig drops config.json's ``config``: the modeling file built the defaults from one that asks for 2 layers."""
    figures = SPEC["figures"]
    assert SPEC["configs"]["config_given_is_ignored"]["config"]["config"] == {"text": {"n_layers": 2}}
    assert figures["config_given_is_ignored"]["total"] == figures["moondream2"]["total"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"architectures": ["Moondream"], "text_config": {"model_type": "phi"}}, "the 2024 moondream2 revisions"),
        ({"phi_config": {"model_type": "phi"}}, "the 2024 moondream2 revisions"),
        ({"group_size": 128}, "group_size (int4-quantised linears"),
        (
            {"vision_config": {"proj_out_dim": 1024}},
            "vision_config.proj_out_dim is not the language model's dim (2048)",
        ),
        ({"region_config": {"dim": 1024}}, "region_config.dim is not the language model's dim (2048)"),
        ({"region_config": {"coord_feat_dim": 255}}, "coord_feat_dim and size_feat_dim must be even"),
        ({"n_heads": 30}, "dim (2048) is not divisible by n_heads (30)"),
    ],
)
def test_other_revisions_and_bad_keys_are_refused_in_one_line(tmp_path: Path, change: dict, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**MOONDREAM2, **change}))
    assert_refused(run("count", str(path)), message)
