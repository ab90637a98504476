"""``memory --training --conventions`` without sympy: Korthikanti's rows, Megatron-LM's and DeepSpeed's estimates of
a config the compiled path counts are computed from the training snapshot's terms (llmcount.plain_conventions) and
are the sympy path's (whose numbers test_papers.py checks against the papers and the projects' own printouts), as
JSON and as text, on several presets and option sets; and such a command imports no sympy."""

from __future__ import annotations

import json

import pytest
from refusal import run
from test_plain_training import _run

from llmcount import counting, plain_conventions
from llmcount.cli import training
from llmcount.formulas import megatron_memory
from llmcount.presets import presets

# presets of a dense layer Megatron's formula describes, of biases and a position table it leaves out, a tied head,
# and MoE, MLA and state layers it refuses by name (gpt2's 12 heads over --tp 8: a refusal worded alike)
NAMES = ("qwen3-8b", "gpt2", "gemma-2-2b", "mixtral-8x7b", "deepseek-v3", "qwen3-next-80b-a3b")
OPTIONS = (
    (),
    ("--tp", "8", "--sequence-parallel", "--recompute", "selective", "--dp", "2", "--zero", "1"),
    ("--pp", "2", "--attention", "eager", "--seq", "1000", "--batch", "3"),
)


def _both(monkeypatch, args: list[str]) -> tuple:
    """The command's result on the compiled path (which must take it unless the command is refused) and with the
    compiled path turned off (the sympy path's)."""
    taken = []
    plain = training._plain
    with monkeypatch.context() as patched:
        patched.setattr(training, "_plain", lambda *a, **k: taken.append(plain(*a, **k)) or taken[-1])
        ours = run(*args)
    with monkeypatch.context() as patched:
        patched.setattr(training, "_plain", lambda *a, **k: False)
        theirs = run(*args)
    assert taken == [True] or theirs.exit_code == 1, args  # gpt2's 12 heads over --tp 8: refused by the sympy path
    return ours, theirs


@pytest.mark.parametrize(("index", "name"), enumerate(NAMES))
def test_conventions_on_the_plain_path_are_the_sympy_paths(monkeypatch, index: int, name: str) -> None:
    for options, shape in ((OPTIONS[0], ("--json",)), (OPTIONS[1 + index % 2], ())):
        args = ["memory", name, "--training", "--conventions", *options, *shape]
        ours, theirs = _both(monkeypatch, args)
        assert (ours.exit_code, ours.stdout, ours.stderr) == (theirs.exit_code, theirs.stdout, theirs.stderr), args
        if ours.exit_code == 0 and shape:
            assert {"activation_conventions", "megatron_memory", "deepspeed_memory"} <= json.loads(ours.stdout).keys()


@pytest.mark.parametrize("name", NAMES)
def test_the_described_model_is_the_sympy_paths(name: str) -> None:
    """What Megatron's and DeepSpeed's estimates read of a model, from the training snapshot and from the Model."""
    counted = counting.read(presets()[name].config(), f"preset {name}", name)
    assert plain_conventions.described(counted) == megatron_memory.described(counted.full())


def test_memory_training_conventions_import_no_sympy() -> None:
    args = ("memory", "llama-3-8b", "--training", "--conventions", "--tp", "2", "--json")
    code, heavy, out, err = _run(*args)
    assert (code, heavy, err) == (0, [], "")
    data = json.loads(out)
    # Megatron's own parameter count of Llama 3 8B at tp = 2: the vocabulary 128,256 padded to a multiple of 256
    # (128,256 already is), 32 layers of 4096·(2·4096 + 2·1024) + 3·4096·14336 + 2·4096, the final norm, two
    # embeddings (untied)
    layer = 4096 * (2 * 4096 + 2 * 1024) + 3 * 4096 * 14336 + 2 * 4096
    assert data["megatron_memory"]["parameters"] == 32 * layer + 4096 + 2 * 4096 * 128256
    assert data["deepspeed_memory"]["total_params"] == 8_030_261_248  # Llama 3 8B's published count
