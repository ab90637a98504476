"""Per-layer lists of layer kinds (a record's ``[layer_kinds]``: layer_types, mlp_layer_types, layers_block_type ...)
read as transformers reads them. For every record with such a list, against transformers on the meta device: a
valid list other than the default is counted as transformers builds it; a list with a kind no modeling class builds,
or of a length the config class refuses, is refused by both, with one line naming the key, the entry and its index
and the allowed kinds, by the sympy and the compiled (plain) path alike.

Each record costs a meta build (about 60 s for all of them), so under CI (``CI`` set) the two per-record tests take
a sample: a fixed third of the records (by a CRC of the name, the same third on every run) and every record whose
TOML differs from the one listed in ``layer_kinds_checked.json`` (or is not listed). ``LLMCOUNT_FULL=1`` runs every
record, as a run without CI does; ``LLMCOUNT_FULL=1 LLMCOUNT_REGEN=1`` after such a run passes records the files'
current hashes in the list.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import warnings
import zlib
from pathlib import Path

import oracle
import pytest
from refusal import assert_refused, run
from transformers import AutoConfig

from llmcount import counting
from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import read_config
from llmcount.formulas.reading import LEGACY_KINDS, _Reader, read_values

KINDED = sorted(f.name for f in records.families() if f.layer_kinds and not f.shares)
FAMILIES = Path(records.__file__).parent / "families"
CHECKED = Path(__file__).parent / "layer_kinds_checked.json"  # record -> hash of its TOML at the last full run
FULL = os.environ.get("LLMCOUNT_FULL") == "1" or not os.environ.get("CI")


def record_hash(name: str) -> str:
    return hashlib.sha256((FAMILIES / f"{name}.toml").read_bytes()).hexdigest()[:16]


def sampled(names: list[str]) -> list[str]:
    """Every name on a full run; else a fixed third of them and every one whose record changed since the list."""
    if FULL:
        return names
    checked = json.loads(CHECKED.read_text()) if CHECKED.exists() else {}
    return [n for n in names if zlib.crc32(n.encode()) % 3 == 0 or checked.get(n) != record_hash(n)]


RUN = sampled(KINDED)
LAYERS = 6  # few layers: a cheap meta build; every kind of a list fits in them
SMALL = {  # keys a class ties to the layers or to a kind: set so that LAYERS layers of every kind build
    "gemma3n_text": {"num_kv_shared_layers": 2},
    "zaya": {"sliding_window": 64},
    "dots3_note_text": {"use_dsa": True},
}


def small(family: records.Family) -> dict:
    """The class defaults with LAYERS layers and without the per-layer lists (the config class derives them)."""
    config = oracle.runnable_defaults(family.name)
    config = {k: v for k, v in config.items() if not isinstance(v, list) and k != "per_layer_config"}
    config[next(s.key for s in family.symbols if s.symbol.name == "N")] = LAYERS
    config.update(SMALL.get(family.name, {}))
    for key in family.layer_kinds:  # a list the record reads under another name, too
        for name in (key, *family.aliases.get(key, ())):
            config.pop(name, None)
    return config


def rotated(kinds: frozenset[str], layers: int) -> list[str]:
    """Every kind, in turn from the second: no class's default pattern."""
    ordered = sorted(kinds)
    return [ordered[(i + 1) % len(ordered)] for i in range(layers)]


def config_refused(config: dict) -> bool:
    """Whether transformers' config class (its validators) refuses ``config``."""
    rest = {k: v for k, v in config.items() if k != "model_type"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            AutoConfig.for_model(config["model_type"], **rest)
        except Exception:  # whatever its validators raise
            return True
    return False


def plain_count(config: dict) -> int:
    """The compiled (plain) path's count of ``config``, as ``llmcount count`` reads it."""
    compiled = counting.compiled(config["model_type"])
    assert compiled is not None, f"no compiled snapshot of {config['model_type']}: python -m llmcount.formulas.snapshot"
    return compiled.read(config, "test").total


def plain_refusal(config: dict) -> str:
    """The compiled path's refusal of ``config``: it leaves the config to the sympy path (never counting it), and the
    reader both paths share refuses it with this message."""
    compiled = counting.compiled(config["model_type"])
    with pytest.raises(counting.Fallback):
        compiled.read(config, "test")
    with pytest.raises(LlmcountError) as refused:
        read_values(_Reader(config, "test", compiled))
    assert "\n" not in str(refused.value)
    return str(refused.value)


OFFSET = {"N": 0, "at least N": 1, "cycle": -1}  # a valid list's length beyond LAYERS: longer where only the first
# N entries are read, shorter where the list repeats over the layers


@pytest.mark.parametrize("model_type", RUN)
def test_valid_lists_are_counted_as_transformers_builds_them_and_a_bad_entry_is_refused_by_both(model_type):
    """One meta build per record: every list of the record rotated through its kinds (of a length transformers takes);
    then each list with an unknown entry, refused by name (and by the config class, where it validates the list)."""
    family = records.family(model_type)
    base = small(family)
    config = {**base}
    for key, (kinds, length, _) in family.layer_kinds.items():
        config[key] = rotated(kinds, LAYERS + OFFSET[length])
    try:
        expected = oracle.meta_total(config)
    except oracle.TransformersRejected as rejected:  # a key the class ties to the lists: both refuse
        assert model_type in NOT_BUILT, f"{model_type}: {rejected}; which list of its kinds builds?"
        plain_refusal(config)
    else:
        assert plain_count(config) == expected, (model_type, oracle.VERSIONS)
    for key, (kinds, length, _) in family.layer_kinds.items():
        bad = rotated(kinds, LAYERS)
        bad[3] = "no_such_kind"
        message = plain_refusal({**base, key: bad})
        for needle in (f"'{key}'", "entry 3", "'no_such_kind'", ", ".join(sorted(map(str, kinds)))):
            assert needle in message, (needle, message)
        if length == "N":  # a list its config class validates: transformers refuses it too
            assert config_refused({**base, key: bad}), (model_type, key, oracle.VERSIONS)


NOT_BUILT = {
    "dory",  # DoryConfig halves a list with "mlp" entries; the rotated list with LAYERS entries is refused by both
    "olmo_hybrid",  # OlmoHybridConfig needs a linear_attention layer and a full one in a pattern of its own
}


@pytest.mark.parametrize("model_type", RUN)
def test_a_list_of_the_wrong_length_is_refused_where_transformers_refuses_it(model_type):
    family = records.family(model_type)
    base = small(family)
    for key, (kinds, length, _legacy) in family.layer_kinds.items():
        if length == "cycle":  # a pattern repeated over the layers: any length but none
            assert f"'{key}' has 0 entries" in plain_refusal({**base, key: []})
            continue
        shorter = {**base, key: rotated(kinds, LAYERS - 1)}
        assert f"'{key}' has {LAYERS - 1} entries" in plain_refusal(shorter)
        if length == "N":  # the config class's validator requires one entry per layer
            longer = {**base, key: rotated(kinds, LAYERS + 1)}
            assert f"'{key}' has {LAYERS + 1} entries" in plain_refusal(longer)
            if model_type != "nemotron_h":  # NemotronHConfig builds one layer per entry, whatever num_hidden_layers
                assert config_refused(longer) and config_refused(shorter), (model_type, key, oracle.VERSIONS)


@pytest.mark.parametrize("model_type", ["gemma2", "deepseek_v4", "recurrent_gemma"])
def test_the_sympy_path_refuses_as_the_plain_path(model_type):
    family = records.family(model_type)
    (key, (kinds, _, _)), *_ = family.layer_kinds.items()
    for entries in (["no_such_kind"] * LAYERS, rotated(kinds, LAYERS)[:1] * 0):
        config = {**small(family), key: entries}
        with pytest.raises(LlmcountError) as refused:
            read_config(config, "test")
        assert str(refused.value) == plain_refusal(config)


@pytest.mark.parametrize("model_type", ["gemma2", "qwen3_next", "zamba2"])
def test_legacy_kind_names_are_read_as_transformers_remaps_them(model_type):
    """``attention`` and ``mamba`` name full_attention and linear_attention (transformers remaps them before its
    validators and the modeling code read the list): the same count as the new names."""
    family = records.family(model_type)
    (key, (kinds, _, _)), *_ = family.layer_kinds.items()
    config = {**small(family), key: rotated(kinds, LAYERS)}
    legacy = {new: old for old, new in LEGACY_KINDS.items() if new in kinds}
    assert legacy, kinds
    renamed = {**config, key: [legacy.get(kind, kind) for kind in config[key]]}
    assert renamed[key] != config[key]
    assert read_config(renamed, "test").counts.total == read_config(config, "test").counts.total
    assert read_config(renamed, "test").counts.total == oracle.meta_total(renamed), oracle.VERSIONS


def test_a_class_whose_validator_takes_no_legacy_names_is_refused_on_them():
    """Cohere2MoeConfig validates layer_types before transformers remaps legacy names: 'attention' is refused."""
    family = records.family("cohere2_moe")
    config = {**small(family), "layer_types": ["attention"] * LAYERS}
    assert config_refused(config), oracle.VERSIONS
    with pytest.raises(LlmcountError, match="entry 0 is a string \\('attention'\\)"):
        read_config(config, "test")


def test_every_per_layer_list_a_condition_reads_by_kind_is_declared():
    """A record (a language model's, a remote-code one's, a tower's) whose [layers] conditions compare entries of a list
    to names (``layer_types[i] == 'sliding_attention'``) declares the list's kinds in [layer_kinds], so that an unknown
    entry is refused, not counted as the other kind."""
    compared = re.compile(r"([A-Za-z_]\w*)\[[^\]]*\]\s*(?:==|!=|in)\s*[\['\"]")
    patterns = {"sliding_window_pattern", "hybrid_override_pattern", "index_topk_pattern"}  # strings of letters
    missing = []
    everything = [*records.families(), *map(records.family, records.remote_names())]
    everything += [records.tower(name) for name in records.tower_names()]
    for family in everything:
        for _, _, text in family.layers:
            for key in set(compared.findall(text)) - patterns:
                if key in family.read_keys() and key not in family.layer_kinds:
                    missing.append(f"{family.name}: {key}")
    assert not missing, missing


def test_layer_kinds_name_kinds_transformers_knows():
    """The kinds of layer_types and mlp_layer_types are in transformers' ALLOWED_ATTN_LAYER_TYPES and
    ALLOWED_MLP_LAYER_TYPES (configuration_utils), or in the record's own config class's list (DeepSeek-V4)."""
    from transformers import configuration_utils as cu

    own = {"deepseek_v4": {"hash_moe", "moe"}, "dory": {"mlp"}}
    allowed = {"layer_types": set(cu.ALLOWED_ATTN_LAYER_TYPES), "mlp_layer_types": set(cu.ALLOWED_MLP_LAYER_TYPES)}
    for family in records.families():
        for key, (kinds, _, _) in family.layer_kinds.items():
            if key in allowed:
                unknown = kinds - allowed[key] - own.get(family.name, set())
                assert not unknown, (family.name, key, unknown, oracle.VERSIONS)
    assert set(LEGACY_KINDS.items()) == set(cu._LEGACY_LAYER_TYPE_REMAP.items()), oracle.VERSIONS


def test_count_refuses_an_unknown_kind_in_one_line(tmp_path):
    config = {**oracle.class_defaults("gemma2"), "layer_types": ["zzz"] * 26}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert_refused(run("count", str(path)), "'layer_types'", "entry 0", "'zzz'", "full_attention, sliding_attention")


def test_integer_kinds_of_a_remote_code_config_are_checked_too():
    """MiniMax-M1's attn_type_list codes each layer's attention (0 lightning, 1 softmax): another code, or true for 1,
    is refused by name; a longer list is read as its remote code reads it (entry i for layer i)."""
    family = records.family("minimax_m1")
    (key, (kinds, length, _)), *_ = family.layer_kinds.items()
    assert key == "attn_type_list" and kinds == {0, 1} and length == "at least N"
    config = {"model_type": "minimax_m1", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48}
    config |= {"num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8}
    config |= {"num_local_experts": 4, "num_experts_per_tok": 2}
    good = read_config({**config, key: [0, 1, 0, 1, 1]}, "test").counts.total
    assert good == read_config({**config, key: [0, 1, 0, 1]}, "test").counts.total
    for bad, shown in (([0, 1, 2, 1], "int 2"), ([0, 1, "1", 1], "a string ('1')")):
        with pytest.raises(LlmcountError, match=f"'{key}' entry [12] is {re.escape(shown)}, .*allowed: 0, 1"):
            read_config({**config, key: bad}, "test")
    with pytest.raises(LlmcountError, match=f"'{key}'"):  # true is no code: refused as the key's type
        read_config({**config, key: [0, True, 0, 1]}, "test")


def _composite(tmp_path, **text: object):
    """Gemma 3's composite config (its class defaults) with keys of text_config set; the path of its file."""
    config = oracle.class_defaults("gemma3")
    config["text_config"] = {**config["text_config"], **text}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def test_a_composite_text_config_list_is_checked_as_the_language_models(tmp_path):
    layers = oracle.class_defaults("gemma3")["text_config"]["num_hidden_layers"]
    bad = ["sliding_attention"] * layers
    bad[5] = "mamba"  # linear_attention, as transformers remaps it: no layer Gemma 3 builds
    needles = ("text_config", "'layer_types'", "entry 5", "'mamba'", "full_attention, sliding_attention")
    assert_refused(run("count", str(_composite(tmp_path, layer_types=bad))), *needles)
    short = ["full_attention"] * (layers - 1)
    needles = ("text_config", f"'layer_types' has {layers - 1} entries", f"num_hidden_layers: {layers}")
    assert_refused(run("count", str(_composite(tmp_path, layer_types=short))), *needles)


def test_a_composite_text_config_key_the_record_has_not_seen_gets_its_line(tmp_path):
    result = run("count", str(_composite(tmp_path, brand_new_rank=4)), "--json")
    assert result.exit_code == 0, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "key brand_new_rank is new to the gemma3_text record" in lines[0], result.stderr
    assert json.loads(result.stdout)["total"] > 0


def test_the_sample_is_a_third_and_every_changed_record(monkeypatch):
    """Under CI the per-record tests run a fixed third and every record changed since the list; the list is
    rewritten, on a full run, with LLMCOUNT_REGEN=1."""
    if FULL and os.environ.get("LLMCOUNT_REGEN"):
        CHECKED.write_text(json.dumps({n: record_hash(n) for n in KINDED}, indent=1, sort_keys=True) + "\n")
    monkeypatch.setattr(sys.modules[__name__], "FULL", False)
    third = [n for n in KINDED if zlib.crc32(n.encode()) % 3 == 0]
    assert len(KINDED) // 5 < len(third) < len(KINDED) // 2
    listed = json.loads(CHECKED.read_text())
    unchanged = [n for n in KINDED if listed.get(n) == record_hash(n)]
    changed = sorted(set(KINDED) - set(unchanged))
    assert sampled(KINDED) == sorted(set(third) | set(changed))
    monkeypatch.setattr(sys.modules[__name__], "CHECKED", CHECKED.with_name("missing.json"))
    assert sampled(KINDED) == KINDED  # no list: nothing is known unchanged
