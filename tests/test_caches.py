"""What every layer kind keeps while generating, against the cache transformers fills.

For every record that says what its layers keep (``[attention]``, ``[[state]]``), hypothesis draws small
configs (the same drawing as ``test_records``), a batch and a sequence length that fall below, at and above
small sliding windows; transformers builds the model on CPU (eager attention, fp32) and runs one forward pass
with ``use_cache=True``; the bytes of every tensor its cache then holds (keys and values of full, sliding and
chunked layers; conv and recurrent states of linear-attention and Mamba layers) must equal llmcount's KV cache
plus state. The models with a state run in bf16 too: their recurrent states stay in fp32.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from llmcount.formulas import memory, records
from llmcount.formulas.config import RuleRefusal, read_config

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")

NO_CACHE = {  # models whose transformers code keeps no cache: llmcount's figure is what a caching engine keeps
    "openai-gpt": "OpenAIGPTModel recomputes the whole prefix for every generated token",
}
CACHED = [  # encoder-style records describe models that keep no cache unless built as decoders
    name
    for name in records.names()
    if (records.family(name).attention or records.family(name).states)
    and records.family(name).kind != "encoder"
    and name not in NO_CACHE
]
EVEN = st.sampled_from([2, 4, 8])
# xLSTMCache sizes its states from d · qk_dim_factor and d · v_dim_factor rounded up to a multiple of 64, which the
# mLSTM's own states (int(d · factor)) fill only when they are multiples of 64: widths that run cached
WIDTHS = {
    # partial RoPE turns int(head · 0.25) channels, rounded to pairs: heads of 16 keep a rotated part the records read
    "gpt_neox": st.just({"hidden_size": 32, "num_attention_heads": 2}),
    "stablelm": st.just({"hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 2}),
    # the encoders never run on token ids alone: small ones keep the CPU build small (the text model is drawn)
    "phi4_multimodal": st.just(
        {
            "vision_config": {
                "num_hidden_layers": 1,
                "hidden_size": 8,
                "intermediate_size": 8,
                "num_attention_heads": 2,
            },
            "audio_config": {"num_blocks": 1, "hidden_size": 8, "intermediate_size": 8, "num_attention_heads": 2},
        }
    ),
    "xlstm": st.sampled_from([64, 128]).map(
        lambda d: {"hidden_size": d, "embedding_dim": d, "qk_dim_factor": 0.5 if d == 128 else 1.0, "v_dim_factor": 1.0}
    ),
}
ROTARY = {"h_d", "d_rope", "d_nope"}  # rotary embeddings turn pairs of a head's channels: an even size
SMALL_WINDOWS = {
    "sliding_window": [2, 3, 5],
    "attention_chunk_size": [2, 4],
    "window_size": [2, 3],
    "attention_window_size": [2, 3, 5],  # RecurrentGemma
}
SMALL_ROTARY = {"rotary_dim": [2]}  # a rotary part within the drawn heads (CodeGen and GPT-J default to 64)
# layer patterns whose defaults put every sliding or every full layer beyond the 1 to 4 drawn layers (Qwen2: from
# layer 28 on; Gemma 3: every sixth layer full), set also when the class does not store them (Cohere 2)
SMALL_PATTERNS = {
    "max_window_layers": [0, 1, 2],
    "sliding_window_pattern": [1, 2, 3],
    "global_attn_every_n_layers": [1, 2, 3],
    "no_rope_layer_interval": [1, 2, 3],
}


def _every_interval(layers: int) -> st.SearchStrategy[dict]:
    return st.integers(1, layers).map(lambda k: {"full_attention_interval": k})


def _jamba(layers: int) -> st.SearchStrategy[dict]:
    def layout(period: int) -> st.SearchStrategy[dict]:
        return st.integers(0, period - 1).map(lambda o: {"attn_layer_period": period, "attn_layer_offset": o})

    return st.integers(1, layers).flatmap(layout)


# Hybrids whose default layout has no attention layer among the 1 to 4 drawn layers: transformers' DynamicCache
# then raises in get_seq_length ("can only be called on Attention layers"), so at least one attention layer is
# placed by drawing (llmcount itself counts an all-Mamba or all-linear stack; transformers cannot run one cached).
LAYOUTS = {
    "jamba": _jamba,
    "bamba": lambda n: st.lists(st.integers(0, n - 1), min_size=1, unique=True).map(
        lambda i: {"attn_layer_indices": sorted(i)}
    ),
    "granitemoehybrid": lambda n: (
        st.lists(st.sampled_from(["mamba", "attention"]), min_size=n, max_size=n)
        .filter(lambda types: "attention" in types)
        .map(lambda types: {"layer_types": types})
    ),
    "kimi_linear": lambda n: (
        st.lists(st.sampled_from(["linear_attention", "full_attention"]), min_size=n, max_size=n)
        .filter(lambda types: "full_attention" in types)
        .map(lambda types: {"layer_types": types})
    ),
    "bailing_hybrid": lambda n: (
        st.lists(st.sampled_from(["linear_attention", "full_attention"]), min_size=n, max_size=n)
        .filter(lambda types: "full_attention" in types)
        .map(lambda types: {"layer_types": types})
    ),
    # every layer full unless layer_types says otherwise: sliding layers are drawn (the query heads per layer, which
    # the cache does not depend on, are left to their default: num_attention_heads on every layer)
    "laguna": lambda n: st.lists(st.sampled_from(["sliding_attention", "full_attention"]), min_size=n, max_size=n).map(
        lambda types: {"layer_types": types, "num_attention_heads_per_layer": None}
    ),
    "qwen3_next": _every_interval,
    "qwen3_5_text": _every_interval,
    "qwen3_5_moe_text": _every_interval,
}


def rotary_part(config: dict, values: dict) -> int:
    """The channels of a head that rotary embeddings turn, for the models that turn only a fraction of them."""
    named = {symbol.name: value for symbol, value in values.items()}
    head = named.get("h_d") or named["d"] // named.get("h", config.get("num_attention_heads", 1))
    rope = oracle.class_defaults(config["model_type"]).get("rope_parameters") or {}
    fraction = config.get("partial_rotary_factor") or config.get("rotary_pct") or rope.get("partial_rotary_factor", 1)
    return int(head * fraction)


def llmcount_cache_bytes(config: dict, batch: int, seq: int, dtype: str = "fp32") -> int:
    model = read_config(config, "drawn config")
    result = memory.inference(model.derivation, model.values, dtype, seq=seq, batch=batch)
    return result.bytes_of("kv_cache") + result.bytes_of("state")


@pytest.mark.parametrize("model_type", CACHED)
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_cache_equals_transformers(model_type: str, data) -> None:
    assert_cache_equals_transformers(model_type, data, "fp32")


NO_BF16 = {  # models transformers cannot run in bf16: the cache is compared in fp32 only
    "inkling2_text": "Inkling2DynamicShortConvolution projects its taps in fp32 from bf16 weights (a dtype error)",
}
STATEFUL = [name for name in CACHED if records.family(name).states and name not in NO_BF16]


@pytest.mark.parametrize("model_type", STATEFUL)
@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_cache_of_a_bf16_model_equals_transformers(model_type: str, data) -> None:
    """A bf16 model: keys, values and conv states in bf16, the recurrent states that transformers keeps in fp32
    whatever the model's dtype (a record's ``recurrent_dtype``) in fp32."""
    assert_cache_equals_transformers(model_type, data, "bf16")


def assert_cache_equals_transformers(model_type: str, data, dtype: str) -> None:
    family = records.family(model_type)
    config = data.draw(oracle.drawn_config(family, EVEN))
    # windows the drawn sequences fall below, at and above; layer patterns within the drawn layers
    for key, choices in (SMALL_WINDOWS | SMALL_ROTARY | SMALL_PATTERNS).items():
        if isinstance(config.get(key), int) or (key in SMALL_PATTERNS and key in family.keys):
            config[key] = data.draw(st.sampled_from(choices))
    if model_type in LAYOUTS and isinstance(config.get("num_hidden_layers"), int):
        config.update(data.draw(LAYOUTS[model_type](config["num_hidden_layers"])))
    if model_type in WIDTHS:
        config.update(data.draw(WIDTHS[model_type]))
    if "attention_types" in oracle.class_defaults(model_type):  # GPT-Neo: global and local layers, one per drawn layer
        layers = config.get("num_layers", oracle.class_defaults(model_type)["num_layers"])
        config["attention_types"] = [[["global", "local"], layers // 2]] + [[["global"], 1]] * (layers % 2)
    batch, seq = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 7))
    try:
        model = read_config(config, "drawn config")
        values = model.values
        got = llmcount_cache_bytes(config, batch, seq, dtype)
    except RuleRefusal:
        assume(False)
    # the forward pass builds real weights: a draw that leaves a large class default in place (LongCat-Flash's
    # hidden_size 6144 with 512 experts) would need hundreds of GB, so such draws are skipped
    assume(model.counts.total <= oracle.MAX_PARAMETERS)
    assume(all(value % 2 == 0 for symbol, value in values.items() if symbol.name in ROTARY))
    assume(rotary_part(config, values) % 2 == 0)
    try:
        expected = oracle.cache_bytes(config, batch, seq, TORCH_DTYPES[dtype])
    except oracle.TransformersRejected:
        assume(False)
    assert got == expected, f"{model_type} {dtype} B={batch} S={seq}: {config} ({oracle.VERSIONS})"


TORCH_DTYPES = {"fp32": oracle.torch.float32, "bf16": oracle.torch.bfloat16}
