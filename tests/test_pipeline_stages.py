"""Pipeline stages of records whose layer counts overlap: an attention kind (full, sliding, linear, Mamba) and an
MLP kind (dense, MoE) per layer, as in Jamba or Kimi Linear. The GPU counted holds the parameters transformers'
model has in that stage's layers (contiguous runs, the first N mod pp one longer), the embedding on the first stage,
and the final norm and head on the last (a tied head as a second copy of the embedding there).
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.formulas import records

oracle = pytest.importorskip("oracle")

OVERLAPPING = ["bailing_hybrid", "dots3_note_text", "jamba", "kimi_linear", "lfm2_moe"]


def _stage_parameters(config: dict, pp: int, stage: int) -> int:
    """Parameters of pipeline stage ``stage`` (1-based) of ``pp``, from the model built on the meta device."""
    model, cfg = oracle._meta_model(oracle._freeze(config))
    layers = cfg.num_hidden_layers
    stack_name, stack = next(
        (name, m) for name, m in model.named_modules() if name.endswith("layers") and len(m) == layers
    )
    size, extra = divmod(layers, pp)
    start = sum(size + (s < extra) for s in range(stage - 1))
    run = range(start, start + size + (stage - 1 < extra))
    total = sum(p.numel() for i in run for p in stack[i].parameters())
    embedding = {id(p): p.numel() for p in model.get_input_embeddings().parameters()}
    outside = [p for name, p in model.named_parameters(remove_duplicate=False) if not name.startswith(stack_name + ".")]
    if stage == 1:
        total += sum(embedding.values())
    if stage == pp:  # the final norm and the head, which may be the embedding itself (tied): a copy
        total += sum(p.numel() for p in outside if id(p) not in embedding)
        total += sum(p.numel() for p in model.get_output_embeddings().parameters() if id(p) in embedding)
    return total


@pytest.mark.parametrize("model_type", OVERLAPPING)
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_the_stage_counted_holds_its_layers_parameters(model_type: str, data, tmp_path_factory) -> None:
    config = data.draw(oracle.drawn_config(records.family(model_type)))
    try:
        layers = oracle._meta_model(oracle._freeze(config))[1].num_hidden_layers
    except oracle.TransformersRejected:
        assume(False)
    assume(layers >= 2)
    pp = data.draw(st.integers(2, layers))
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps(config))
    assume(CliRunner().invoke(app, ["count", str(path)]).exit_code == 0)  # a config llmcount counts at all
    result = CliRunner().invoke(app, ["memory", str(path), "--training", "--pp", str(pp), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    stage = int(re.search(r"stage (\d+) of", " ".join(out["notes"])).group(1))
    assert out["parameters_per_gpu"] == _stage_parameters(config, pp, stage)
    assert "upper bound" not in " ".join(out["notes"])  # every layer's kinds were told, none guessed


def test_a_sum_over_the_layers_own_sizes_refuses_pipeline_stages_by_name(tmp_path) -> None:
    """Laguna's query projections are counted as one sum over the layers (their heads may differ per layer): no stage
    can be told its part, so --pp is refused by name rather than put on one stage; without --pp it is counted."""
    config = {
        **{"model_type": "laguna", "vocab_size": 97, "hidden_size": 32, "num_hidden_layers": 4, "head_dim": 8},
        **{"num_attention_heads": 4, "num_key_value_heads": 2, "num_attention_heads_per_layer": [4, 8, 2, 6]},
        **{"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8, "intermediate_size": 16},
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    refused = CliRunner().invoke(app, ["memory", str(path), "--training", "--pp", "2"])
    assert refused.exit_code == 1 and refused.stdout == ""
    assert "--pp 2: attention/q_proj" in refused.stderr and "summed over the layers" in refused.stderr
    assert CliRunner().invoke(app, ["memory", str(path), "--training"]).exit_code == 0
