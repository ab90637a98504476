"""llmcount's counts against the oracle: transformers' own models, built on the meta device.

(a) every bundled preset, total and per component; (b) published parameter counts of well-known
models; (c) random small configs of every family, drawn by hypothesis to flip every switch the
family has (tied head, biases, GQA ratio, head_dim, absent keys and their defaults, q LoRA,
shared experts, leading dense layers, ...). The expected numbers come from the transformers
version named in each failure message (see ``oracle.VERSIONS``).
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from oracle import VERSIONS, OracleResult, TransformersRejected, hf_count, hf_result

from llmcount.errors import LlmcountError
from llmcount.formulas import records
from llmcount.formulas.config import Model, read_config
from llmcount.presets import find, presets

# ---------------------------------------------------------------------------------------------
# comparing a config's llmcount model with the oracle


def llmcount_components(model: Model) -> dict[str, int]:
    """llmcount's counts by path, zero-size terms dropped (the oracle drops them too)."""
    found: dict[str, int] = {}
    for component in model.counts.components:
        found[component.path] = found.get(component.path, 0) + component.count
    return {path: count for path, count in found.items() if count}


def _diff(got: dict[str, int], expected: dict[str, int]) -> str:
    rows = []
    for path in sorted(set(got) | set(expected)):
        if got.get(path) != expected.get(path):
            rows.append(f"  {path:36s} llmcount {got.get(path)!s:>14}   transformers {expected.get(path)!s:>14}")
    return "\n".join(rows)


def _context(config: dict[str, Any]) -> str:
    return f"config {json.dumps(config, sort_keys=True)}\noracle: {VERSIONS}"


def _expected_activated(oracle: OracleResult) -> int:
    """Every parameter, but only k/n of the routed experts (router and shared experts count fully)."""
    experts = oracle.components.get("moe/experts", 0)
    if not experts:
        return oracle.total
    activated = Fraction(oracle.total - experts) + Fraction(experts * oracle.top_k, oracle.num_experts)
    assert activated.denominator == 1, f"routed experts {experts} not divisible by n={oracle.num_experts}"
    return int(activated)


def assert_matches_transformers(config: dict[str, Any], model: Model, oracle: OracleResult) -> None:
    got = llmcount_components(model)
    assert model.counts.total == oracle.total, (
        f"total: llmcount {model.counts.total:,} != transformers {oracle.total:,}\n{_diff(got, oracle.components)}\n"
        + _context(config)
    )
    assert got == oracle.components, f"components differ:\n{_diff(got, oracle.components)}\n" + _context(config)
    assert model.counts.activated == _expected_activated(oracle), (
        f"activated: llmcount {model.counts.activated:,} != {_expected_activated(oracle):,} "
        f"(k={oracle.top_k}, n={oracle.num_experts} as transformers reads them)\n" + _context(config)
    )


# ---------------------------------------------------------------------------------------------
# (a) every bundled preset


# The families whose HF parameter names oracle.llmcount_path maps term by term; every other preset is checked
# by its total in test_records.py.
MAPPED = {"gpt2", "llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "mixtral", "deepseek_v2", "deepseek_v3"}


def _preset_names() -> list[str]:
    try:
        return sorted(name for name, p in presets().items() if p.config().get("model_type") in MAPPED)
    except (OSError, ValueError, KeyError):  # no index.json yet, or a broken one
        return []


NO_PRESETS = "<no presets found>"


@pytest.mark.parametrize("name", _preset_names() or [NO_PRESETS])
def test_preset_matches_transformers(name: str) -> None:
    if name == NO_PRESETS:
        pytest.fail("llmcount.presets.presets() found no presets (is llmcount/presets/index.json there?)")
    config = presets()[name].config()
    try:
        oracle = hf_result(config)
    except TransformersRejected as error:
        pytest.fail(f"transformers refuses preset {name}: {error}\n{_context(config)}")
    assert_matches_transformers(config, read_config(config, f"preset {name}", name), oracle)


@pytest.mark.parametrize("name", _preset_names() or [NO_PRESETS])
def test_preset_published_total(name: str) -> None:
    """A preset's exact published figure (index.json ``published_total``) is its count."""
    if name == NO_PRESETS:
        pytest.fail("llmcount.presets.presets() found no presets (is llmcount/presets/index.json there?)")
    preset = presets()[name]
    if preset.published_total is None:
        return  # only a rounded figure is published ("1.5B"): nothing exact to compare
    total = read_config(preset.config(), f"preset {name}", name).counts.total
    assert total == preset.published_total, (
        f"{name}: llmcount {total:,} != index.json published_total {preset.published_total:,} ({preset.source})"
    )


# ---------------------------------------------------------------------------------------------
# (b) published figures: hand-written here, not read from the presets' index, with their sources.

PUBLISHED = [
    # Hugging Face Hub, https://huggingface.co/api/models/Qwen/Qwen3-32B -> safetensors.total
    # (all weights BF16; the model card rounds it to "32.8B").
    pytest.param(("qwen3-32b", "Qwen/Qwen3-32B"), 32_762_123_264, id="Qwen3-32B"),
    # Hugging Face Hub, https://huggingface.co/api/models/Qwen/Qwen3-235B-A22B -> safetensors.total
    # (the model card: "235B in total and 22B activated").
    pytest.param(("qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B"), 235_093_634_560, id="Qwen3-235B-A22B"),
    # Hugging Face Hub, meta-llama/Llama-2-7b-hf -> safetensors.total, the count
    # LlamaForCausalLM.num_parameters() prints for the checkpoint (the paper says "7B").
    pytest.param(("llama-2-7b", "meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b"), 6_738_415_616, id="Llama-2-7B"),
    # Hugging Face Hub, https://huggingface.co/api/models/mistralai/Mixtral-8x7B-v0.1 -> safetensors.total
    # (Mistral AI's announcement: "46.7B total parameters").
    pytest.param(
        ("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", "mistralai/Mixtral-8x7B-Instruct-v0.1"),
        46_702_792_704,
        id="Mixtral-8x7B",
    ),
    # GPT2LMHeadModel.from_pretrained("openai-community/gpt2").num_parameters(): the "124M" GPT-2
    # (the Hub's safetensors total is larger, 137M: the checkpoint also stores the attn.bias mask buffers).
    pytest.param(("gpt2", "openai-community/gpt2", "gpt2-small"), 124_439_808, id="GPT-2"),
]


@pytest.mark.parametrize(("candidates", "published"), PUBLISHED)
def test_published_figure(candidates: tuple[str, ...], published: int) -> None:
    try:
        preset = next((p for p in map(find, candidates) if p is not None), None)
    except (OSError, ValueError, KeyError) as error:
        pytest.fail(f"cannot read the presets: {error}")
    if preset is None:
        pytest.fail(f"no preset named or with Hub id {' / '.join(candidates)}; presets: {_preset_names()}")
    config = preset.config()
    model = read_config(config, f"preset {preset.name}", preset.name)
    assert model.counts.total == published, (
        f"{preset.name}: llmcount {model.counts.total:,} != published {published:,}\n" + _context(config)
    )
    assert hf_count(config) == published, (
        f"{preset.name}: transformers {hf_count(config):,} != published {published:,}\n" + _context(config)
    )


# ---------------------------------------------------------------------------------------------
# (c) random small configs of every family

ABSENT: Any = object()  # a key left out of the config: the family's default applies


def opt(strategy: st.SearchStrategy, null: bool = False) -> st.SearchStrategy:
    """The key set to a drawn value, or absent, or (with ``null``) JSON null."""
    options = [strategy, st.just(ABSENT)]
    if null:
        options.append(st.none())
    return st.one_of(*options)


def _build(**keys: Any) -> dict[str, Any]:
    return {key: value for key, value in keys.items() if value is not ABSENT}


def _divisors(x: int) -> list[int]:
    return [y for y in range(1, x + 1) if x % y == 0]


# transformers' num_key_value_heads when the key is absent (None: the number of query heads)
KV_DEFAULT = {"llama": None, "mistral": 8, "mixtral": 8, "qwen2": 32, "qwen3": 32, "qwen3_moe": 4}
# num_key_value_heads: null is turned into h by these config classes; Mistral's, Mixtral's and
# Qwen3-MoE's strict config classes refuse it (int field), so the strategy doesn't draw it there.
KV_NULL_OK = {"llama", "qwen2", "qwen3"}
# head_dim: null means d // h in these models (`getattr(config, "head_dim", None) or d // h`);
# Qwen2/Qwen3-MoE use `getattr(config, "head_dim", d // h)` and would compute with None, Qwen3 refuses it.
HEAD_DIM_NULL_OK = {"llama", "mistral", "mixtral"}

sizes = st.integers(1, 64)
vocab = st.integers(1, 300)
layers = st.integers(1, 4)
switch = opt(st.booleans())


@st.composite
def gqa_keys(draw: st.DrawFn, family: str) -> dict[str, Any]:
    """The keys of Llama-like attention: heads, kv heads (MHA, GQA, MQA, absent, null), head_dim."""
    kv_modes = ["absent", "mha", "mqa", "gqa"] + (["null"] if family in KV_NULL_OK else [])
    kv_mode = draw(st.sampled_from(kv_modes), label="kv heads")
    default = KV_DEFAULT[family]
    if kv_mode == "absent" and default is not None:
        heads = default * draw(st.sampled_from([1, 2]))  # the default must divide h
    else:
        heads = draw(st.sampled_from([1, 2, 3, 4, 6, 8]))
    kv_heads = {
        "absent": ABSENT,
        "null": None,
        "mha": heads,
        "mqa": 1,
        "gqa": draw(st.sampled_from(_divisors(heads))) if kv_mode == "gqa" else None,
    }[kv_mode]

    # head sizes are even: transformers' RoPE validation refuses an odd rotary dimension
    hidden = heads * 2 * draw(st.integers(1, max(1, 32 // heads)))
    if family != "llama":  # Llama's config requires h | d; the others take d // h (floor)
        hidden += draw(st.integers(0, min(heads - 1, 8)))
    head_modes = ["absent", "d // h", "other"] + (["null"] if family in HEAD_DIM_NULL_OK else [])
    head_mode = draw(st.sampled_from(head_modes), label="head_dim")
    head_dim = {"absent": ABSENT, "null": None, "d // h": hidden // heads, "other": ABSENT}[head_mode]
    if head_mode == "other":
        head_dim = draw(st.sampled_from(range(2, 17, 2)))
    return _build(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim)


@st.composite
def dense_config(draw: st.DrawFn, family: str) -> dict[str, Any]:
    # attention_bias / mlp_bias are drawn for every family: those whose model ignores them
    # (Mistral, Qwen2) must be ignored by llmcount too.
    return _build(
        model_type=family,
        **draw(gqa_keys(family)),
        num_hidden_layers=draw(layers),
        vocab_size=draw(vocab),
        intermediate_size=draw(sizes),
        tie_word_embeddings=draw(switch),
        attention_bias=draw(switch),
        mlp_bias=draw(switch),
    )


@st.composite
def experts_keys(draw: st.DrawFn, n_key: str, n_default: int, k_default: int | None, max_n: int = 8) -> dict:
    """Routed experts n (absent: the default) and k <= n (absent when the default fits)."""
    n = draw(opt(st.integers(1, max_n)), label=n_key)
    n_value = n_default if n is ABSENT else n
    k_options = [st.integers(1, min(n_value, max_n))]
    if k_default is not None and k_default <= n_value:
        k_options.append(st.just(ABSENT))
    k = draw(st.one_of(*k_options), label="num_experts_per_tok")
    return _build(**{n_key: n, "num_experts_per_tok": k})


@st.composite
def mixtral_config(draw: st.DrawFn) -> dict[str, Any]:
    return {**draw(dense_config("mixtral")), **draw(experts_keys("num_local_experts", 8, 2))}


@st.composite
def qwen3_moe_config(draw: st.DrawFn) -> dict[str, Any]:
    config = draw(dense_config("qwen3_moe"))
    n_layers = config["num_hidden_layers"]
    config.update(draw(experts_keys("num_experts", 128, 8)))
    config.update(
        _build(
            moe_intermediate_size=draw(opt(sizes)),
            decoder_sparse_step=draw(opt(st.integers(1, 3))),
            # indices up to N: an index past the last layer is ignored by transformers
            mlp_only_layers=draw(opt(st.lists(st.integers(0, n_layers), unique=True, max_size=3), null=True)),
        )
    )
    if draw(st.booleans(), label="drop intermediate_size"):
        del config["intermediate_size"]  # required by llmcount only if some layer is dense
    return config


@st.composite
def deepseek_config(draw: st.DrawFn, family: str) -> dict[str, Any]:
    v3 = family == "deepseek_v3"
    heads = draw(st.integers(1, 8))
    hidden = heads * draw(st.integers(1, max(1, 64 // heads)))
    if v3:  # DeepSeek-V2's config requires h | d, V3's does not
        hidden += draw(st.integers(0, heads - 1))
    n_layers = draw(layers)
    small = st.integers(1, 16)
    config = _build(
        model_type=family,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_key_value_heads=draw(opt(st.sampled_from(_divisors(heads)))),  # no parameter depends on it
        num_hidden_layers=n_layers,
        vocab_size=draw(vocab),
        intermediate_size=draw(sizes),
        q_lora_rank=draw(opt(small, null=True)),  # absent: 1536
        kv_lora_rank=draw(opt(small)),
        qk_rope_head_dim=draw(opt(st.sampled_from([2, 4, 6, 8]))),
        qk_nope_head_dim=draw(opt(small)),
        v_head_dim=draw(opt(small)),
        moe_intermediate_size=draw(opt(sizes)),
        n_shared_experts=draw(opt(st.integers(0, 2))),
        first_k_dense_replace=draw(opt(st.integers(0, n_layers + 1))),
        tie_word_embeddings=draw(switch),
        attention_bias=draw(switch),
        mlp_bias=draw(switch),  # DeepSeek-V2's MLPs and shared experts have it; V3 ignores it
    )
    # V2's num_experts_per_tok has no default (None) in transformers: always given
    config.update(draw(experts_keys("n_routed_experts", 256 if v3 else 64, 8 if v3 else None)))
    if draw(st.booleans(), label="drop intermediate_size"):
        del config["intermediate_size"]
    return config


@st.composite
def gpt2_config(draw: st.DrawFn) -> dict[str, Any]:
    heads = draw(st.integers(1, 8))
    return _build(
        model_type="gpt2",
        n_embd=heads * draw(st.integers(1, max(1, 64 // heads))),
        n_head=heads,
        n_layer=draw(layers),
        vocab_size=draw(vocab),
        n_positions=draw(opt(st.integers(1, 64))),
        n_inner=draw(opt(sizes, null=True)),
        tie_word_embeddings=draw(switch),
    )


CONFIGS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "gpt2": gpt2_config(),
    "llama": dense_config("llama"),
    "mistral": dense_config("mistral"),
    "qwen2": dense_config("qwen2"),
    "qwen3": dense_config("qwen3"),
    "qwen3_moe": qwen3_moe_config(),
    "mixtral": mixtral_config(),
    "deepseek_v2": deepseek_config("deepseek_v2"),
    "deepseek_v3": deepseek_config("deepseek_v3"),
}


def test_every_family_has_a_strategy() -> None:
    assert set(CONFIGS) <= set(records.names())


@pytest.mark.parametrize("family", sorted(CONFIGS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_config_matches_transformers(family: str, data: st.DataObject) -> None:
    config = data.draw(CONFIGS[family], label="config")
    try:
        oracle = hf_result(config)
    except TransformersRejected:
        reject()  # transformers refuses it: not a config anyone can have
    try:
        model = read_config(config, "hypothesis", family)
    except LlmcountError as error:
        # by design llmcount wants intermediate_size when (and only when) some layer is dense
        dense = any(path.startswith("mlp/") for path in oracle.components)
        if "intermediate_size" not in config and "'intermediate_size'" in str(error) and dense:
            return
        raise AssertionError(f"llmcount refuses a config transformers builds: {error}\n{_context(config)}") from None
    assert_matches_transformers(config, model, oracle)


# ---------------------------------------------------------------------------------------------
# configs llmcount must refuse although transformers builds them (it never checks these)

GQA_FAMILIES = ["llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "mixtral"]
MOE_KEYS = {
    "mixtral": "num_local_experts",
    "qwen3_moe": "num_experts",
    "deepseek_v2": "n_routed_experts",
    "deepseek_v3": "n_routed_experts",
}


def _base(family: str) -> dict[str, Any]:
    return {
        "model_type": family,
        "hidden_size": 48,
        "num_hidden_layers": 2,
        "vocab_size": 100,
        "intermediate_size": 64,
        "num_attention_heads": 12,
        "num_key_value_heads": 4,
    }


@pytest.mark.parametrize("family", GQA_FAMILIES)
@settings(max_examples=15, deadline=None)
@given(heads=st.integers(2, 64), kv_heads=st.integers(2, 64))
def test_refuses_heads_not_divisible_by_kv_heads(family: str, heads: int, kv_heads: int) -> None:
    config = {**_base(family), "hidden_size": 4 * heads, "num_attention_heads": heads, "num_key_value_heads": kv_heads}
    if heads % kv_heads == 0:
        read_config(config, "test")
    else:
        with pytest.raises(LlmcountError, match="not divisible by num_key_value_heads"):
            read_config(config, "test")


@pytest.mark.parametrize("family", sorted(MOE_KEYS))
@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 16), k=st.integers(1, 16))
def test_refuses_more_experts_per_token_than_experts(family: str, n: int, k: int) -> None:
    config = {**_base(family), MOE_KEYS[family]: n, "num_experts_per_tok": k}
    if k <= n:
        read_config(config, "test")
    else:
        with pytest.raises(LlmcountError, match="num_experts_per_tok"):
            read_config(config, "test")
