"""KV caches of sliding-window and chunked layers on real configs, derived by hand.

transformers' DynamicSlidingWindowLayer keeps the last W - 1 tokens of a sliding (or chunked) layer, so such a
layer holds min(S, W - 1) tokens; a full layer holds S. Every expected number below is worked out from the
bundled preset's config.json by hand (layer counts from its layer_types or its config class's default pattern),
never from llmcount's code; tests/test_caches.py checks the same rule against the cache transformers fills.

Bytes per layer and token in bf16: 2 (keys and values) · h_kv · h_d · 2 bytes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from refusal import assert_refused, run
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.formulas import memory
from llmcount.formulas.config import read_config
from llmcount.presets import presets


def cache(preset: str, seq: int, batch: int = 1, config: dict[str, Any] | None = None) -> memory.Memory:
    model = read_config(config or presets()[preset].config(), preset)
    return memory.inference(model.derivation, model.values, "bf16", seq=seq, batch=batch)


def kinds(result: memory.Memory) -> dict[str, tuple[int, int]]:
    return {k.kind: (k.layers, k.bytes) for k in result.per_layer_kind}


# Mistral-7B-v0.1: 32 layers, h_kv = 8, h_d = 4096 / 32 = 128, sliding_window = 4096 on every layer.
MISTRAL_PER_TOKEN = 32 * 2 * 8 * 128 * 2  # 131,072 bytes per token over the 32 layers


def test_mistral_7b_beyond_the_window() -> None:
    """S = 32,768 > W - 1 = 4,095: every layer keeps 4,095 tokens: 131,072 · 4,095 = 536,739,840 bytes."""
    result = cache("mistral-7b", 32768)
    assert MISTRAL_PER_TOKEN * 4095 == 536_739_840
    assert result.bytes_of("kv_cache") == 536_739_840
    assert kinds(result) == {"sliding_attention": (32, 536_739_840)}
    assert result.kv_per_token_bytes is None  # a windowed cache has no one per-token figure


@pytest.mark.parametrize(("seq", "tokens"), [(100, 100), (4095, 4095), (4096, 4095), (4097, 4095)])
def test_mistral_7b_below_at_and_above_the_window(seq: int, tokens: int) -> None:
    """Below W - 1 the cache keeps all S tokens; from S = W - 1 on, W - 1 = 4,095 tokens."""
    assert cache("mistral-7b", seq, batch=3).bytes_of("kv_cache") == 3 * MISTRAL_PER_TOKEN * tokens


def test_mistral_without_window_is_full() -> None:
    """sliding_window: null (Mistral-7B-v0.2 and later): every layer keeps S tokens."""
    config = {**presets()["mistral-7b"].config(), "sliding_window": None}
    assert cache("mistral-7b", 32768, config=config).bytes_of("kv_cache") == MISTRAL_PER_TOKEN * 32768


# gpt-oss-120b: 36 layers, layer_types alternating sliding (even i) and full (odd i): 18 + 18; h_kv = 8,
# h_d = 64, sliding_window = 128: 2 · 8 · 64 · 2 = 2,048 bytes per layer and token.
def test_gpt_oss_120b_at_128k() -> None:
    """S = 131,072: 18 sliding layers keep 127 tokens, 18 full layers keep 131,072:
    18 · 2,048 · 127 = 4,681,728 and 18 · 2,048 · 131,072 = 4,831,838,208; 4,836,519,936 bytes in all."""
    config = presets()["gpt-oss-120b"].config()
    assert config["layer_types"].count("sliding_attention") == 18 and config["sliding_window"] == 128
    result = cache("gpt-oss-120b", 131072)
    assert kinds(result) == {"full_attention": (18, 4_831_838_208), "sliding_attention": (18, 4_681_728)}
    assert result.bytes_of("kv_cache") == 4_836_519_936


def test_gpt_oss_20b_short_sequence_is_all_kept() -> None:
    """gpt-oss-20b: 24 layers (12 + 12), same heads. S = 100 < 127: every layer keeps all 100 tokens:
    24 · 2,048 · 100 = 4,915,200 bytes."""
    assert cache("gpt-oss-20b", 100).bytes_of("kv_cache") == 4_915_200


def test_gemma_2_2b() -> None:
    """Gemma-2-2B: 26 layers, no layer_types: Gemma2Config makes the even layers (13) sliding, the odd ones (13)
    full; h_kv = 4, h_d = 256, W = 4,096: 4,096 bytes per layer and token. S = 8,192:
    13 · 4,096 · 4,095 + 13 · 4,096 · 8,192 = 218,050,560 + 436,207,616 = 654,258,176 bytes."""
    result = cache("gemma-2-2b", 8192)
    assert kinds(result) == {"full_attention": (13, 436_207_616), "sliding_attention": (13, 218_050_560)}
    assert result.bytes_of("kv_cache") == 654_258_176


def test_gemma_3_1b() -> None:
    """Gemma-3-1B: 26 layers, sliding_window_pattern 6: full where (i + 1) % 6 == 0 (i = 5, 11, 17, 23: 4 layers),
    22 sliding; h_kv = 1, h_d = 256, W = 512: 1,024 bytes per layer and token. S = 32,768:
    22 · 1,024 · 511 + 4 · 1,024 · 32,768 = 11,511,808 + 134,217,728 = 145,729,536 bytes."""
    result = cache("gemma-3-1b-it", 32768)
    assert kinds(result) == {"full_attention": (4, 134_217_728), "sliding_attention": (22, 11_511_808)}
    assert result.bytes_of("kv_cache") == 145_729_536


def test_llama_4_scout_chunked_layers() -> None:
    """Llama-4-Scout: 48 layers, no layer_types or no_rope_layers: three in four ((i + 1) % 4 != 0, 36 layers)
    are chunked with attention_chunk_size 8,192, keeping 8,191 tokens; 12 are full. h_kv = 8, h_d = 128:
    4,096 bytes per layer and token. S = 131,072: 36 · 4,096 · 8,191 + 12 · 4,096 · 131,072
    = 1,207,812,096 + 6,442,450,944 = 7,650,263,040 bytes."""
    result = cache("llama-4-scout", 131072)
    assert kinds(result) == {"full_attention": (12, 6_442_450_944), "chunked_attention": (36, 1_207_812_096)}
    assert result.bytes_of("kv_cache") == 7_650_263_040


def test_phi_3_mini_window_of_2047() -> None:
    """Phi-3-mini-4k: 32 layers, h_kv = h = 32, h_d = 3,072 / 32 = 96, sliding_window 2,047 on every layer:
    32 · 2 · 32 · 96 · 2 = 393,216 bytes per token, 2,046 tokens kept at S = 4,096: 804,519,936 bytes."""
    assert cache("phi-3-mini", 4096).bytes_of("kv_cache") == 804_519_936


def test_qwen2_5_without_use_sliding_window_is_full() -> None:
    """Qwen2.5-7B sets sliding_window = 131,072 but use_sliding_window = false: every one of its 28 layers
    (h_kv = 4, h_d = 3,584 / 28 = 128) is full: 28 · 2 · 4 · 128 · 2 · 32,768 = 1,879,048,192 bytes."""
    result = cache("qwen2.5-7b", 32768)
    assert kinds(result) == {"full_attention": (28, 1_879_048_192)}


def test_qwen2_with_use_sliding_window_slides_from_max_window_layers() -> None:
    """The same config with use_sliding_window, sliding_window 4,096 and max_window_layers 20: layers 20 to 27
    (8) slide, 20 stay full. 2,048 bytes per layer and token (2 · 4 · 128 · 2), S = 32,768:
    20 · 2,048 · 32,768 + 8 · 2,048 · 4,095 = 1,342,177,280 + 67,092,480 = 1,409,269,760 bytes."""
    config = {
        **presets()["qwen2.5-7b"].config(),
        "use_sliding_window": True,
        "sliding_window": 4096,
        "max_window_layers": 20,
    }
    result = cache("qwen2.5-7b", 32768, config=config)
    assert kinds(result) == {"full_attention": (20, 1_342_177_280), "sliding_attention": (8, 67_092_480)}
    assert result.bytes_of("kv_cache") == 1_409_269_760


def test_layer_types_given_in_the_config_are_honoured() -> None:
    """gpt-oss-20b with its layer_types replaced by 6 sliding layers then 18 full ones: 6 · 2,048 · 127 +
    18 · 2,048 · 1,000 = 1,560,576 + 36,864,000 = 38,424,576 bytes at S = 1,000."""
    config = presets()["gpt-oss-20b"].config()
    config = {**config, "layer_types": ["sliding_attention"] * 6 + ["full_attention"] * 18}
    result = cache("gpt-oss-20b", 1000, config=config)
    assert kinds(result) == {"full_attention": (18, 36_864_000), "sliding_attention": (6, 1_560_576)}


def test_memory_json_lists_the_layer_kinds() -> None:
    """`llmcount memory gpt-oss-120b --seq 131072 --json`: the two kinds, their layers, bytes and formulas."""
    out = CliRunner().invoke(app, ["memory", "gpt-oss-120b", "--seq", "131072", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    by_kind = {entry["kind"]: entry for entry in data["per_layer_kind"]}
    assert {kind: (e["layers"], e["bytes"]) for kind, e in by_kind.items()} == {
        "full_attention": (18, 4_831_838_208),
        "sliding_attention": (18, 4_681_728),
    }
    assert "Min(S, W - 1)" in by_kind["sliding_attention"]["formula"]
    assert data["kv_cache_bytes"] == 4_836_519_936


# ---------------------------------------------------------------------------------------------
# layer_types given in a config (as configs on the Hub give them), against the cache transformers fills

SMALL = {"hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 32}
MOE = {"num_experts_per_tok": 2, "moe_intermediate_size": 8, "intermediate_size": 16}
GIVEN_LAYER_TYPES = {
    "gemma2": {"intermediate_size": 16},
    "gpt_oss": {**MOE, "num_local_experts": 4},
    "qwen2": {"intermediate_size": 16, "use_sliding_window": True},
    "qwen3_moe": {**MOE, "num_experts": 4, "use_sliding_window": True},
    "mellum": {**MOE, "num_local_experts": 4},
    "exaone4": {"intermediate_size": 16},
    "cohere2": {"intermediate_size": 16, "head_dim": 8},
    "olmo3": {"intermediate_size": 16},
    "mistral": {"intermediate_size": 16},  # no layer_types in MistralConfig, but a given list is honoured
    "starcoder2": {"intermediate_size": 16},
    "mixtral": {**MOE, "num_local_experts": 4},
}


@pytest.mark.parametrize("seq", [2, 7])
@pytest.mark.parametrize("model_type", sorted(GIVEN_LAYER_TYPES))
def test_given_layer_types_equal_transformers(model_type: str, seq: int) -> None:
    """Layers 0 and 3 full, 1, 2 and 4 sliding, whatever the class's default pattern; W = 3 (2 tokens kept)."""
    oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers")
    defaults = oracle.runnable_defaults(model_type)
    experts = ("num_experts", "num_local_experts")  # given below, under the one name each record reads
    config = {key: value for key, value in defaults.items() if not isinstance(value, list) and key not in experts}
    config.update(SMALL, num_hidden_layers=5, sliding_window=3, **GIVEN_LAYER_TYPES[model_type])
    full, sliding = "full_attention", "sliding_attention"
    config["layer_types"] = [full, sliding, sliding, full, sliding]
    model = read_config(config, model_type)
    result = memory.inference(model.derivation, model.values, "fp32", seq=seq, batch=2)
    assert kinds(result)["sliding_attention"][0] == 3
    expected = oracle.cache_bytes(config, 2, seq)
    assert result.bytes_of("kv_cache") == expected, f"{model_type} S={seq} ({oracle.VERSIONS})"


def test_a_window_of_one_is_refused_by_name(tmp_path):
    # transformers slices the last W - 1 tokens as [-(W - 1):], which for W = 1 keeps them all: not min(S, 0)
    from llmcount.presets import find

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**find("mistral-7b").config(), "sliding_window": 1}))
    assert_refused(run("memory", str(path)), "window of 1", "mistral")


def test_a_window_the_sequence_does_not_reach_is_said_so(tmp_path) -> None:
    # Mistral-7B at S = 1,000: the window of 4,096 keeps min(1,000, 4,095) = 1,000 tokens, every one of them
    data = json.loads(run("memory", "mistral-7b", "--seq", "1000", "--json").stdout)
    (kind,) = data["per_layer_kind"]
    assert kind["bytes"] == 32 * 1000 * 2 * 8 * 128 * 2  # 32 layers · 1,000 tokens · 2 · h_kv 8 · h_d 128 · 2 bytes
    assert "at S = 1,000 the window W = 4,096 is not reached" in kind["note"]
    beyond = json.loads(run("memory", "mistral-7b", "--seq", "8192", "--json").stdout)
    assert "not reached" not in beyond["per_layer_kind"][0]["note"]


def test_a_window_beyond_the_context_length_never_applies(tmp_path) -> None:
    # a window of 65,536 in a model of 32,768 positions: no sequence the model takes reaches it (not refused)
    config = {**presets()["mistral-7b"].config(), "sliding_window": 65536, "max_position_embeddings": 32768}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("memory", str(path), "--seq", "32768")
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.split())
    assert "the window W = 65,536 is not below the model's context length (max_position_embeddings 32,768)" in flat
    assert "it never applies" in flat


# MiMo-V2-Flash (XiaomiMiMo/MiMo-V2-Flash): 48 layers, full attention on layer 0 and every sixth (5, 11, ..., 47:
# 9 layers), sliding on the other 39; h_kv = 4 on a full layer and 2 · 4 = 8 on a sliding one (MiMoV2FlashAttention
# doubles them), keys of head_dim 192 and values of v_head_dim 128; sliding_window_size 128, which
# MiMoV2FlashConfig turns into sliding_window = 129: a sliding layer keeps 128 tokens.
MIMO = {
    "model_type": "mimo_v2_flash",
    **{"num_hidden_layers": 48, "hidden_size": 4096, "num_attention_heads": 64, "num_key_value_heads": 4},
    **{"head_dim": 192, "v_head_dim": 128, "vocab_size": 152576, "sliding_window_size": 128},
}


def test_mimo_v2_flash_sliding_layers_keep_twice_the_heads() -> None:
    """S = 32,768 in bf16: full layers 9 · 32,768 · 4 · (192 + 128) · 2 bytes = 754,974,720; sliding layers
    39 · 128 · 8 · (192 + 128) · 2 bytes = 25,559,040."""
    result = cache("", 32768, config=MIMO)
    assert kinds(result) == {"full_attention": (9, 754_974_720), "sliding_attention": (39, 25_559_040)}
    assert result.bytes_of("kv_cache") == 754_974_720 + 25_559_040


def test_mimo_v2_flash_window_from_sliding_window() -> None:
    """Without sliding_window_size the window is sliding_window itself: 129 keeps 128 tokens, 33 keeps 32."""
    config = {k: v for k, v in MIMO.items() if k != "sliding_window_size"}
    assert kinds(cache("", 32768, config=config))["sliding_attention"] == (39, 25_559_040)
    small = kinds(cache("", 32768, config={**config, "sliding_window": 33}))
    assert small["sliding_attention"] == (39, 39 * 32 * 8 * 320 * 2)


def test_sliding_widths_need_a_window_and_the_sliding_count() -> None:
    from llmcount.formulas.expressions import RecordError
    from llmcount.formulas.records import _attention

    table = {"layers": "N", "qk": "h*h_d", "v": "h*h_d", "kv": "2*h_kv*h_d", "sliding_kv": "4*h_kv*h_d"}
    with pytest.raises(RecordError, match="need 'window' and 'sliding'"):
        _attention(table, "test")
    spec = _attention({**table, "window": "W", "sliding": "N_sliding"}, "test")
    assert spec.widths(sliding=True)[2] != spec.widths(sliding=False)[2]


# Laguna with 4 layers, layer_types full, sliding, sliding, full; h_kv = 8, h_d = 128 (class defaults); window 4:
# a sliding layer keeps 3 tokens. Per layer and token 2 · 8 · 128 = 2,048 elements, 4 bytes each in fp32.
LAGUNA = {
    "model_type": "laguna",
    **{"num_hidden_layers": 4, "hidden_size": 32, "num_attention_heads": 4, "vocab_size": 64, "sliding_window": 4},
    "layer_types": ["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
    "num_attention_heads_per_layer": [4, 8, 8, 4],
}


def test_laguna_cache_per_layer_kind() -> None:
    """S = 9: full layers 2 · 9 · 2,048 · 4 = 147,456 bytes; sliding layers 2 · 3 · 2,048 · 4 = 49,152."""
    model = read_config(LAGUNA, "laguna")
    result = memory.inference(model.derivation, model.values, "fp32", seq=9)
    assert kinds(result) == {"full_attention": (2, 147_456), "sliding_attention": (2, 49_152)}


def laguna_flops(seq: int, causal: bool, config: dict[str, Any] = LAGUNA) -> dict[str, int]:
    from llmcount.formulas.flops import Flops

    model = read_config(config, "laguna")
    counts = Flops(model.derivation, causal=causal).evaluate(model.values, seq, 1)
    return {c.path: c.flops for c in counts.components if c.path.startswith("attention/scores")}


def test_laguna_scores_sum_the_query_heads_of_each_kind() -> None:
    """Heads 4, 8, 8, 4: the full layers have 4 + 4 = 8 query heads, the sliding ones 8 + 8 = 16, each of h_d = 128.
    S = 9, eager (the full matrix on every layer): 2 · 81 · 128 · 8 = 165,888 and 2 · 81 · 128 · 16 = 331,776.
    Causal: a full layer's head sees 9 · 10 / 2 = 45 pairs, 2 · 45 · 128 · 8 = 92,160; a sliding one (W = 4) sees
    4 · 5 / 2 + (9 - 4) · 4 = 30, 2 · 30 · 128 · 16 = 122,880."""
    assert laguna_flops(9, False) == {"attention/scores": 165_888, "attention/scores/sliding": 331_776}
    assert laguna_flops(9, True) == {"attention/scores": 92_160, "attention/scores/sliding": 122_880}
    every_full = {k: v for k, v in LAGUNA.items() if k != "layer_types"}  # no layer_types: every layer full
    assert laguna_flops(9, False, every_full) == {"attention/scores": 2 * 81 * 128 * 24}
    every_head = {**every_full, "num_attention_heads_per_layer": None}  # null: num_attention_heads (4) everywhere
    assert laguna_flops(9, True, every_head) == {"attention/scores": 2 * 45 * 128 * 16}


def test_laguna_conventions_sum_the_widths_over_the_layers(tmp_path) -> None:
    """The query heads differ per layer (4, 8, 8, 4; head_dim 128): the conventions' attention term runs over
    Σ h·d_qk = Σ h·d_v = 24 · 128 = 3,072 where one width would be L·h·d_qk. At S = 9, by hand: PaLM's attention is
    6 · 9 · (3,072 + 3,072), Kaplan's 3 · 2 · 9 · 3,072, and recomputation adds one forward of the layers, whose core
    is 9 · (3,072 + 3,072). Chinchilla's per-head softmax needs each layer's head count: not given, with the reason."""
    from llmcount.formulas.conventions import conventions, ingredients, not_given

    model = read_config(LAGUNA, "laguna")
    x = ingredients(model, 9)
    assert (x.qk_sum, x.v_sum, x.qk, x.v, x.layers) == (3_072, 3_072, None, None, 4)
    got = {c.name: c.training_flops_per_token for c in conventions(model, 9)}
    N = model.counts.activated - model.counts.embedding
    assert got["palm"] - 6 * model.counts.activated == 6 * 9 * (3_072 + 3_072)  # PaLM's N: every parameter
    assert got["kaplan"] - 6 * N == 3 * 2 * 9 * 3_072
    assert got["megatron-recompute"] - got["megatron"] == 2 * (x.weights - x.router) + 9 * (3_072 + 3_072)
    assert "chinchilla" not in got and "num_attention_heads_per_layer" in not_given(x)["chinchilla"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LAGUNA))
    result = run("flops", str(path), "--conventions", "--seq", "9", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ingredients"]["sum_h_d_qk"] == 3_072 and data["ingredients"]["h_d_qk"] is None
    assert [c["name"] for c in data["not_given"]] == ["chinchilla", "chinchilla-table", "maxtext"]
    refused = run("mfu", str(path), "--tokens-per-second", "10", "--gpu", "h100-sxm", "--convention", "chinchilla")
    assert_refused(refused, "chinchilla", "num_attention_heads_per_layer")


def test_a_record_that_cannot_state_its_score_widths_is_refused_by_name(tmp_path) -> None:
    """A record's ``no_flops`` (no record has one today): FLOPs refused with its reason, the cache still derived."""
    from llmcount.errors import LlmcountError
    from llmcount.formulas import records
    from llmcount.formulas.flops import Flops

    text = (records.resources.files("llmcount.formulas") / "families" / "laguna.toml").read_text()
    start = text.index("summed = true")
    text = text[:start] + 'no_flops = "its widths are not stated"\n'
    draft = tmp_path / "laguna.toml"
    draft.write_text(text)
    family = records.load(draft)
    model = read_config(LAGUNA, "laguna", family=family)
    assert kinds(memory.inference(model.derivation, model.values, "fp32", seq=9))["sliding_attention"] == (2, 49_152)
    with pytest.raises(LlmcountError, match=r"FLOPs are not derived for Laguna \(laguna\): its widths are not stated"):
        _ = Flops(model.derivation).terms


def test_summed_widths_need_the_sliding_layers_own_sums() -> None:
    from llmcount.formulas.expressions import RecordError
    from llmcount.formulas.records import _attention

    table = {"layers": "N", "qk": "h_tot*h_d", "v": "h_tot*h_d", "kv": "2*h_kv*h_d", "summed": True}
    with pytest.raises(RecordError, match="'summed' widths need the sliding layers' own sums"):
        _attention({**table, "window": "W", "sliding": "N_sliding"}, "test")
    with pytest.raises(RecordError, match="'chunked' and 'summed' must be true or false"):
        _attention({**table, "summed": "yes"}, "test")
