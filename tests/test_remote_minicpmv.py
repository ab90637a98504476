"""MiniCPM-V 2.6 (model_type minicpmv, remote code): the whole model, as its modeling file's MiniCPMV builds it
(figures in tests/remote_oracle/minicpmv.json, compared in tests/test_remote_built.py), through the CLI, with the
other versions under the same model_type refused by name.

By hand, MiniCPM-V 2.6's vision tower (SigLIP so400m at 980, 27 layers kept: drop_vision_last_layer is false) and its
resampler (64 queries, d = 3584 from d_vis = 1152): the tower 3·14²·1152 + 1152 (patch convolution) + 70²·1152
(positions) + 27·(4·(1152² + 1152) + 2·1152·4304 + 4304 + 1152 + 4·1152) + 2·1152 = 417,792,240; the resampler
64·3584 + 1152·3584 + 4·3584² + 4·3584 + 3·2·3584 + 3584² = 68,619,264.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from refusal import run

SPEC = json.loads((Path(__file__).parent / "remote_oracle" / "minicpmv.json").read_text("utf-8"))
PUBLISHED = {**SPEC["configs"]["MiniCPM-V-2_6"]["config"], "model_type": "minicpmv", "architectures": ["MiniCPMV"]}
TOWER = 3 * 14**2 * 1152 + 1152 + 70**2 * 1152 + 27 * (4 * (1152**2 + 1152) + 2 * 1152 * 4304 + 4304 + 1152 + 4 * 1152)
TOWER += 2 * 1152
RESAMPLER = 64 * 3584 + 1152 * 3584 + 4 * 3584**2 + 4 * 3584 + 3 * 2 * 3584 + 3584**2


def test_parts_by_hand_and_the_whole_as_built(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(PUBLISHED))
    result = run("count", str(path), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert (TOWER, RESAMPLER) == (417_792_240, 68_619_264)
    built = SPEC["figures"]["MiniCPM-V-2_6"]["total"]
    assert built == 8_099_175_152
    text = run("count", str(path))
    assert "8,099,175,152" in text.stdout and "417,792,240" in text.stdout and "68,619,264" in text.stdout
    assert "language model (qwen2, from the whole config)" in " ".join(text.stdout.split())  # a flat config.json
    assert out["total"] == built, out


def test_drop_vision_last_layer_drops_one_tower_layer(tmp_path: Path) -> None:
    """MiniCPMVConfig's default (true) drops the tower's last layer: 4·(1152² + 1152) + 2·1152·4304 + 4304 + 1152 +
    4·1152 = 15,239,504 fewer parameters."""
    totals = []
    for drop in (False, True):
        path = tmp_path / f"{drop}.json"
        path.write_text(json.dumps({**PUBLISHED, "drop_vision_last_layer": drop}))
        result = run("count", str(path))
        assert result.exit_code == 0, result.output
        line = next(li for li in result.stdout.splitlines() if li.startswith("total"))
        totals.append(int(line.split()[3].replace(",", "")))
    assert totals[0] - totals[1] == 4 * (1152**2 + 1152) + 2 * 1152 * 4304 + 4304 + 1152 + 4 * 1152 == 15_239_504


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"version": 2.5}, "version (2.5) is not 2.6"),
        ({"version": None}, "version (None) is not 2.6"),
        ({"drop_vision_last_layer": "yes"}, "key 'drop_vision_last_layer' must be true or false"),
        ({"hidden_size": 100, "num_attention_heads": 4}, "does not split into hidden_size // 128 heads"),
    ],
)
def test_other_versions_and_bad_keys_are_refused_in_one_line(tmp_path: Path, change: dict, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**PUBLISHED, **change}))
    result = run("count", str(path))
    assert result.exit_code == 1 and result.stdout == "", result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
