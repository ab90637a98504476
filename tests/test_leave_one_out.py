"""The leave-one-out benchmark's sample (benchmarks/leave_one_out.py runs every causal-LM type): discovery from
scratch, as if the bundled record did not exist, reproduces the bundled record's counts and transformers' on the
class defaults and random configs; and a failure is put in its class by its reason."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="discover needs torch and transformers")
pytest.importorskip("transformers", reason="discover needs torch and transformers")

# a llama-like family; a Conv1D family with other key names (gpt2: n_embd, n_head) is drafted and checked against its
# record in test_discover.py
SAMPLE = ["llama"]


def benchmark():
    path = Path(__file__).parent.parent / "benchmarks" / "leave_one_out.py"
    spec = importlib.util.spec_from_file_location("leave_one_out", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("model_type", SAMPLE)
def test_discovery_from_scratch_reproduces_the_record(model_type: str) -> None:
    loo = benchmark()
    assert model_type in loo.causal_types()
    result = loo.run_one(model_type)
    assert result["ok"], result["reason"]
    assert result["checks"] == 6  # the class defaults and five random configs


def test_failures_are_put_in_their_class() -> None:
    loo = benchmark()
    said = "dory: transformers refuses a build with 3 layers (ValueError: ...); no keys tied to num_hidden_layers"
    assert loo.failure_class(said) == "layer count refused by validators"
    assert loo.failure_class("on the random config 2 the draft counts 5 and transformers 4") == "draft not exact"
    assert loo.failure_class("KeyError: 'x'") == "other: KeyError"
