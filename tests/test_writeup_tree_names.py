"""The module tree with the model code's own names, from a record's [tree] table: GPT-2's tree, line for line,
against transformers' own print(model) (torch and transformers, tests only), with what the tree leaves out
(modules without parameters, eps) taken out of the real one."""

from __future__ import annotations

import json
import re

import pytest

from llmcount.formulas.config import read_config
from llmcount.formulas.expressions import RecordError
from llmcount.formulas.records import parse_record
from llmcount.renderers.tree import module_tree
from llmcount.renderers.writeup import build

GPT2_SMALL = {
    "architectures": ["GPT2LMHeadModel"],
    "model_type": "gpt2",
    "vocab_size": 1000,
    "n_embd": 64,
    "n_layer": 3,
    "n_head": 4,
    "n_positions": 128,
}
NO_PARAMETERS = re.compile(r"\((drop|attn_dropout|resid_dropout|dropout|act)\): ")


def printed(real) -> list[str]:
    """transformers' print(model) without the modules that have no parameters, and LayerNorm's arguments trimmed."""
    lines = [line for line in str(real).splitlines() if not NO_PARAMETERS.search(line)]
    return [re.sub(r"LayerNorm\(\((\d+),\), eps=.*\)$", r"LayerNorm((\1,))", line) for line in lines]


def test_gpt2_tree_is_transformers_print_model_line_for_line():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    with torch.device("meta"):
        real = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**GPT2_SMALL))
    ours = module_tree(read_config(GPT2_SMALL, "test"))
    assert ours.splitlines() == printed(real)


def test_the_post_says_the_tree_is_what_print_model_prints():
    text = build("gpt2", sections="tree").text
    assert "(c_attn): Conv1D(nf=2304, nx=768)" in text and "(0-11): 12 x GPT2Block(" in text
    assert "`print(model)` in transformers prints:" in text and "generic" not in text
    assert "; `Conv1D(nf, nx)` writes the output first)" in text
    assert "routed experts" not in text and "router" not in text
    zh = build("gpt2", "markdown", "zh", sections="tree").text
    assert "在 transformers 中执行 `print(model)`，输出如下" in zh


def test_a_family_without_a_printed_tree_keeps_the_generic_names(tmp_path):
    """Zamba2 with untied embeddings gives each hybrid layer N_attn adapters (the record counts them on N_attn*N_attn
    layers), a layout its [printed] tree does not describe: the post says its tree is the generic layout."""
    transformers = pytest.importorskip("transformers")
    config = {**transformers.AutoConfig.for_model("zamba2").to_dict(), "model_type": "zamba2"}
    config["tie_word_embeddings"] = False
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    text = build(str(path), sections="tree").text
    assert "ForCausalLM(" in text and "with generic class names" in text
    assert "print(model)` in transformers prints:" not in text


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        ({"colour": "red"}, "unknown fields"),
        ({"linear": "Conv1D(nf={out})"}, "linear is a format with {in} and {out}"),
        ({"containers": {"attention": ["attn"]}}, "takes [attribute, class]"),
        ({"layers": 3}, "layers takes a string"),
    ],
)
def test_a_bad_tree_table_is_refused_by_name(tree, message):
    record = {
        "model_type": "toy",
        "title": "Toy",
        "symbols": {"d": "hidden_size"},
        "terms": [{"path": "norms/norm", "expr": "d"}],
        "tree": tree,
    }
    with pytest.raises(RecordError, match=re.escape(message)):
        parse_record(record, "families/toy.toml")


QWEN3_MOE_SMALL = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "vocab_size": 1000,
    "hidden_size": 64,
    "intermediate_size": 160,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "tie_word_embeddings": False,
}
MODULE = re.compile(r"^\s*\(([\w-]+)\): ", re.M)


def test_an_moe_routers_name_and_place_are_the_model_codes():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    with torch.device("meta"):
        real = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**QWEN3_MOE_SMALL))
    real_names = [n for n in MODULE.findall(str(real)) if n not in ("act_fn", "rotary_emb")]
    ours = module_tree(read_config(QWEN3_MOE_SMALL, "test"))
    assert MODULE.findall(ours) == real_names
    assert "(gate): Linear(in_features=64, out_features=8, bias=False)" in ours and "(router)" not in ours
