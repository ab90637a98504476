"""auto_map aliasing: a config published under a model_type of its own whose auto_map names a modeling class that a
record describes is counted with that record, and says so on stderr in one line.

The class table (llmcount/formulas/classes.toml) is data; it is checked here against transformers' own registry, the
oracle for which class belongs to which model_type. Regenerate it with ``python tests/test_auto_map.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import transformers
from oracle import VERSIONS, meta_total
from refusal import assert_refused, run
from transformers.models.auto import modeling_auto

from llmcount.formulas import records
from llmcount.formulas.records import tomllib

TABLE = Path(__file__).parent.parent / "llmcount" / "formulas" / "classes.toml"
HEADER = """# The modeling classes transformers registers for the model_type of each family record (its
# MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and MODEL_MAPPING_NAMES, transformers {version}): a config of another
# model_type whose auto_map names one of these classes (remote code published under a model_type of its own, as
# Kimi-K2's kimi_k2 with modeling_deepseek.DeepseekV3ForCausalLM) is counted with that record, and says so.
# A class several records share belongs to the model_type of its own config class (LlamaForCausalLM: llama).
# tests/test_auto_map.py checks every entry against transformers (python tests/test_auto_map.py rewrites it).
[classes]
"""


def expected_classes() -> dict[str, str]:
    """Every class transformers maps a record's model_type to, with the model_type that owns it."""
    owners: dict[str, set[str]] = {}
    for model_type in records.names():
        for table in (modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, modeling_auto.MODEL_MAPPING_NAMES):
            found = table.get(model_type)
            for name in [found] if isinstance(found, str) else list(found or ()):
                owners.setdefault(name, set()).add(model_type)
    table = {}
    for name, types in owners.items():
        if len(types) == 1:
            table[name] = next(iter(types))
            continue
        own = getattr(getattr(transformers, name, None), "config_class", None)
        if own is not None and own.model_type in types:
            table[name] = own.model_type
    return dict(sorted(table.items()))


def test_class_table_is_transformers_registry() -> None:
    written = tomllib.loads(TABLE.read_text("utf-8"))["classes"]
    assert written == expected_classes(), f"regenerate with: python tests/test_auto_map.py ({VERSIONS})"


KIMI_K2 = {  # Kimi-K2's config.json shape: DeepSeek-V3's keys under model_type kimi_k2, small sizes here
    "model_type": "kimi_k2",
    "architectures": ["DeepseekV3ForCausalLM"],
    "auto_map": {
        "AutoConfig": "configuration_deepseek.DeepseekV3Config",
        "AutoModel": "modeling_deepseek.DeepseekV3Model",
        "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM",
    },
    "vocab_size": 97,
    "hidden_size": 64,
    "intermediate_size": 80,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "q_lora_rank": 12,
    "kv_lora_rank": 10,
    "qk_rope_head_dim": 4,
    "qk_nope_head_dim": 6,
    "v_head_dim": 5,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
    "n_group": 2,
    "topk_group": 1,
}


def test_auto_map_class_is_counted_with_its_record(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(KIMI_K2))
    result = run("count", str(path), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    oracle = meta_total({k: v for k, v in KIMI_K2.items() if k != "auto_map"} | {"model_type": "deepseek_v3"})
    assert data["total"] == oracle, VERSIONS
    assert data["family"] == "deepseek_v3"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "kimi_k2" in lines[0] and "DeepseekV3ForCausalLM" in lines[0] and "deepseek_v3 record" in lines[0]


def test_auto_map_naming_no_known_class_is_refused(tmp_path: Path) -> None:
    config = {
        **KIMI_K2,
        "model_type": "some_remote_lm",
        "auto_map": {"AutoModelForCausalLM": "modeling_some_remote_lm.SomeRemoteLMForCausalLM"},
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert_refused(run("count", str(path)), "unsupported model_type 'some_remote_lm'")
    for odd in ({"AutoModel": 5}, ["x"], {"AutoModelForCausalLM": ["modeling_x.Nothing"]}, "s"):
        path.write_text(json.dumps({**config, "auto_map": odd}))
        assert_refused(run("count", str(path)), "unsupported model_type")


def test_remote_classes_name_remote_records() -> None:
    remote = tomllib.loads(TABLE.read_text("utf-8")).get("remote", {})
    assert remote and set(remote.values()) <= set(records.remote_names())
    assert not set(remote.values()) & set(transformers.CONFIG_MAPPING), "a type transformers ships is not remote code"
    assert not set(remote) & set(expected_classes())


if __name__ == "__main__":  # rewrite the [classes] table from the installed transformers, keeping [remote]
    body = "".join(f'{name} = "{model_type}"\n' for name, model_type in expected_classes().items())
    text = TABLE.read_text("utf-8")
    remote = text[text.index("\n# The classes of the remote-code records") :] if "[remote]" in text else ""
    TABLE.write_text(HEADER.format(version=transformers.__version__) + body + remote, "utf-8")
    sys.exit(0)
