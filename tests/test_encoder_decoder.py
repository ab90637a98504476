"""The decoder halves of encoder-decoder models (BART, Whisper, TrOCR, ...): what AutoModelForCausalLM builds for their
model_type, the decoder with its cross-attention and the LM head, counted exactly against transformers (every
switch of the records flipped, ``tests/oracle.py``), and said plainly in the output: the encoder is not counted."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from llmcount.cli import app
from llmcount.errors import LlmcountError
from llmcount.formulas import records, symbols
from llmcount.formulas.config import read_config
from llmcount.formulas.expressions import RecordError

oracle = pytest.importorskip("oracle", reason="the oracle needs torch and transformers (pip install '.[test]')")
transformers_mappings = pytest.importorskip("transformers.models.auto.modeling_auto")

DECODERS = sorted(f.name for f in records.families() if f.kind == "encoder-decoder")

# A small decoder (and encoder, which AutoModelForCausalLM does not build) with every size distinct; as many encoder
# layers as decoder layers: transformers 5.23 sizes the *ForCausalLM's DynamicCache by num_hidden_layers, which these
# configs alias to encoder_layers, so a decoder with more layers than that fails its cached forward (IndexError)
SMALL = {
    "decoder_layers": 2,
    "encoder_layers": 2,
    "d_model": 16,
    "decoder_attention_heads": 4,
    "encoder_attention_heads": 4,
    "decoder_ffn_dim": 24,
    "encoder_ffn_dim": 24,
    "vocab_size": 40,
    "max_position_embeddings": 20,
    "max_target_positions": 20,
    "pad_token_id": 1,
    "decoder_start_token_id": 2,
}
OWN_KEYS = {  # the same sizes under a config class's own names (instead of SMALL)
    "prophetnet": {
        "num_decoder_layers": 2,
        "num_encoder_layers": 2,
        "hidden_size": 16,
        "num_decoder_attention_heads": 4,
        "num_encoder_attention_heads": 4,
        "decoder_ffn_dim": 24,
        "encoder_ffn_dim": 24,
        "vocab_size": 40,
        "max_position_embeddings": 20,
        "pad_token_id": 1,
        "ngram": 3,
        "num_buckets": 5,
    },
}
SWITCHES = [  # (model_type, keys): each record's switches, one at a time; the count must follow transformers
    *((name, {"tie_word_embeddings": False}) for name in DECODERS),
    *((name, {"scale_embedding": True}) for name in DECODERS if name != "prophetnet"),  # a factor: no parameters
    ("bigbird_pegasus", {"use_bias": True}),
    ("bigbird_pegasus", {"use_bias": True, "tie_word_embeddings": True}),  # its head is never tied
    ("trocr", {"use_learned_position_embeddings": False}),  # sinusoidal: a plain tensor, no parameters
    ("trocr", {"layernorm_embedding": False}),
    ("trocr", {"cross_attention_hidden_size": 12}),  # keys and values of the cross-attention read a 12-wide encoder
    ("trocr", {"cross_attention_hidden_size": None}),
    ("marian", {"decoder_vocab_size": 30}),  # the embedding has 30 rows, the head 40 (tied: the embedding's 30)
    ("marian", {"decoder_vocab_size": 30, "tie_word_embeddings": False}),
    ("marian", {"decoder_vocab_size": None}),
    ("whisper", {"max_target_positions": 7}),  # Whisper's position table: max_target_positions rows
    ("prophetnet", {"add_cross_attention": False}),
    ("prophetnet", {"ngram": 1, "num_buckets": 7}),
]


def small(model_type: str, **keys) -> dict:
    return {"model_type": model_type, **OWN_KEYS.get(model_type, SMALL), **keys}


def test_every_encoder_decoder_record_is_tested() -> None:
    assert {name for name, _ in SWITCHES} == set(DECODERS)
    assert {"bart", "mbart", "whisper", "trocr", "marian", "pegasus"} <= set(DECODERS)


@pytest.mark.parametrize(("model_type", "keys"), SWITCHES, ids=lambda x: x if isinstance(x, str) else "-".join(x))
def test_each_switch_is_counted_as_transformers_builds_it(model_type: str, keys: dict) -> None:
    for config in (small(model_type), small(model_type, **keys)):
        got = read_config(config, "test").counts.total
        assert got == oracle.meta_total(config), f"{config} ({oracle.VERSIONS})"


def test_bart_large_decoder_by_hand() -> None:
    """facebook/bart-large's config.json gives BartConfig's defaults for every size the decoder has: d = 1024,
    N = 12 decoder layers, d_ff = 4096, V = 50265, n_pos = 1024 (positions offset by 2: 1026 rows)."""
    d, n_layers, d_ff, vocab, rows = 1024, 12, 4096, 50265, 1026
    attention = 4 * d * d + 4 * d  # q, k, v, out projections with biases
    layer = 2 * attention + (2 * d * d_ff + d_ff + d) + 3 * 2 * d  # self- and cross-attention, MLP, three LayerNorms
    decoder = vocab * d + rows * d + 2 * d + n_layers * layer  # + layernorm_embedding; the head is tied
    assert decoder == 254_084_096
    config = {**oracle.class_defaults("bart"), "model_type": "bart"}
    assert read_config(config, "bart-large").counts.total == decoder == oracle.meta_total(config)
    # what is not counted: the encoder that BartForConditionalGeneration adds (same layers without cross-attention,
    # its own position table and layernorm_embedding; the token embedding is shared)
    encoder = rows * d + 2 * d + n_layers * (attention + 2 * d * d_ff + d_ff + d + 2 * 2 * d)
    assert decoder + encoder == oracle.composite_total(config, "BartForConditionalGeneration") == 406_291_456


def test_count_says_what_is_not_counted(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(small("whisper")))
    result = CliRunner().invoke(app, ["count", str(path)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "counted: the decoder with its cross-attention, and the LM head, as WhisperForCausalLM builds it" in text
    assert "not counted: the audio encoder" in text
    data = json.loads(CliRunner().invoke(app, ["count", str(path), "--json"]).stdout)
    assert data["total"] == oracle.meta_total(small("whisper"))
    assert "WhisperForCausalLM" in data["scope"]["counted"]
    assert data["scope"]["not_counted"].startswith("the audio encoder")


def test_list_says_they_are_counted_in_part() -> None:
    result = CliRunner().invoke(app, ["list"])
    line = next(line for line in result.output.splitlines() if line.startswith("encoder-decoder ("))
    assert line == f"encoder-decoder ({len(DECODERS)}), counted in part (see `llmcount formula FAMILY`):"
    # elsewhere a family counted in part is starred, with one note under its group (Moshi: its text decoder)
    assert "moshi*" in result.output and "bart*" not in result.output
    assert result.output.replace(line, "").count("counted in part") == 1


@pytest.mark.parametrize("fmt", ["text", "markdown", "latex"])
def test_the_formula_says_what_is_not_counted(fmt: str) -> None:
    result = CliRunner().invoke(app, ["formula", "bart", "--format", fmt])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.replace("\\_", "_").split())
    assert "not counted: the encoder that BartModel" in text
    data = json.loads(CliRunner().invoke(app, ["formula", "bart", "--json"]).output)
    assert data["scope"]["not_counted"] == records.family("bart").not_counted
    # the keys are BART's own: its num_hidden_layers (an alias of encoder_layers) is not the decoder's N
    assert data["symbols"]["N"] == "decoder_layers" and "num_hidden_layers" not in result.output


def test_a_decoder_only_record_has_no_scope(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gpt2", "n_layer": 1, "n_embd": 8, "n_head": 2, "vocab_size": 10}))
    result = CliRunner().invoke(app, ["count", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert "scope" not in json.loads(result.output)
    assert "not counted" not in CliRunner().invoke(app, ["count", str(path)]).output
    assert "scope" not in json.loads(CliRunner().invoke(app, ["formula", "gpt2", "--json"]).output)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_writeup_says_what_is_not_counted(lang: str) -> None:
    from llmcount.renderers import texts_zh
    from llmcount.renderers.writeup import SECTIONS, render_writeup

    config = small("bart")
    text = render_writeup(read_config(config, "bart"), "markdown", lang, present=set(config), show=SECTIONS)
    assert "encoder-decoder" in text
    said = texts_zh() if lang == "zh" else {}  # the Chinese post says the record's prose in Chinese
    not_counted, not_run = records.family("bart").not_counted, records.family("bart").attention.not_run
    assert said.get(not_counted, not_counted) in text.replace("\\_", "_")  # Markdown escapes the underscores
    assert said.get(not_run, not_run) in text.replace("\\_", "_")  # in the FLOPs section
    assert re.search(r"^## \d+\. " + {"en": "Cross-attention", "zh": "交叉注意力层"}[lang] + "$", text, re.M)
    assert r"P_{\mathrm{xattn}}" in text  # a subscript LaTeX can set (no underscore inside \mathrm)


NOT_RUN = "is not run: {} given token ids alone has no encoder states"


def cross_attention_sentence(model_type: str) -> str:
    counted = records.family(model_type).counted
    return NOT_RUN.format(next(word for word in counted.split() if word.endswith("ForCausalLM")))


@pytest.mark.parametrize("model_type", DECODERS)
def test_costs_say_that_cross_attention_is_not_run(model_type: str, tmp_path) -> None:
    """flops and memory count the *ForCausalLM on token ids alone, and say in one sentence that its cross-attention is
    not run and what it would add per encoder token: in the text, the FLOPs convention and the KV cache's note."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(small(model_type)))
    sentence = cross_attention_sentence(model_type)
    for command in ("flops", "memory"):
        result = CliRunner().invoke(app, [command, str(path), "--seq", "8"])
        assert result.exit_code == 0, result.output
        text = " ".join(result.stdout.split())
        assert sentence in text and "per encoder token" in text
    flops = json.loads(CliRunner().invoke(app, ["flops", str(path), "--seq", "8", "--json"]).stdout)
    assert sentence in flops["convention"]
    assert not any(c["path"].startswith("cross_attention/") for c in flops["components"])
    memory = json.loads(CliRunner().invoke(app, ["memory", str(path), "--seq", "8", "--json"]).stdout)
    assert [sentence in kind["note"] for kind in memory["per_layer_kind"]] == [True]


def test_counted_and_not_counted_go_together() -> None:
    record = {
        "model_type": "x",
        "title": "X",
        "counted": "the decoder",
        "symbols": {"N": "num_hidden_layers", "d": "hidden_size"},
        "terms": [{"path": "mlp/w", "expr": "d*d", "layers": "N"}],
    }
    with pytest.raises(RecordError, match="'counted' and 'not_counted' go together"):
        records.parse_record(record, "x.toml")
    parsed = records.parse_record({**record, "not_counted": "the encoder"}, "x.toml")
    assert (parsed.counted, parsed.not_counted) == ("the decoder", "the encoder")


SEQ2SEQ = {  # the encoder-decoder class of each record whose model_type has one (TrOCR's is VisionEncoderDecoderModel)
    **transformers_mappings.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
    **transformers_mappings.MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES,
}


def _decoder_and_whole(model_type: str, config: dict) -> tuple[int, int]:
    """Parameters of the decoder and LM head of the model_type's encoder-decoder class built on meta (tied weights
    once), and of the whole class."""
    import warnings

    import torch
    import transformers

    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = getattr(transformers, SEQ2SEQ[model_type])(oracle._hf_config(config))
    parts = {id(p): p for p in [*model.get_decoder().parameters(), *model.get_output_embeddings().parameters()]}
    return sum(p.numel() for p in parts.values()), sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("model_type", [name for name in DECODERS if name in SEQ2SEQ])
def test_the_count_is_the_decoder_of_the_whole_model(model_type: str) -> None:
    """What is counted is the decoder and head of ...ForConditionalGeneration too; what is not, its encoder (a
    positive count). BigBird-Pegasus's causal LM has its own head, which its ForConditionalGeneration ties."""
    config = {**oracle.class_defaults(model_type), "model_type": model_type}
    model = read_config(config, model_type)
    decoder, whole = _decoder_and_whole(model_type, config)
    own_head = sum(c.count for c in model.counts.components if c.path == "head/lm_head")
    if model_type == "bigbird_pegasus":
        assert own_head == model.values[symbols.V] * model.values[symbols.d]
        assert decoder == model.counts.total - own_head, oracle.VERSIONS
    else:
        assert own_head == 0 and decoder == model.counts.total, oracle.VERSIONS
    assert whole - decoder > 0  # the encoder


def test_the_module_tree_nests_the_cross_attention_and_names_the_head() -> None:
    from llmcount.renderers.tree import module_tree

    bart = module_tree(read_config(small("bart"), "bart"))
    assert "(self_attn): Attention(" in bart and "(encoder_attn): Attention(" in bart
    assert bart.index("(self_attn_layer_norm)") < bart.index("(encoder_attn)") < bart.index("(fc1)")
    assert "(lm_head): Linear(in_features=16, out_features=40, bias=False)" in bart  # tied: the embedding's
    whisper = module_tree(read_config(small("whisper", tie_word_embeddings=False), "whisper"))
    assert "(proj_out): Linear(in_features=16, out_features=40, bias=False)" in whisper and "lm_head" not in whisper
    assert "(output_projection): Linear(" in module_tree(read_config(small("trocr"), "trocr"))


# ---------------------------------------------------------------------------------------------
# FLOPs and the cache of the *ForCausalLM on token ids alone: no encoder states, so no cross-attention


def counter_and_cache(config: dict, batch: int, seq: int, vocab: int | None = None) -> tuple[int, int]:
    """FlopCounterMode's FLOPs of one forward pass without cache on CPU (eager attention), and the bytes of the
    cache a forward pass with use_cache fills, for token ids below ``vocab`` (default: the config's vocab_size)."""
    import warnings

    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoModelForCausalLM

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(oracle._hf_config(config), attn_implementation="eager")
        ids = torch.randint(0, vocab or model.config.vocab_size, (batch, seq))
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
        with torch.no_grad():
            cache = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True).past_key_values
    assert type(cache).__name__ == "DynamicCache", "no EncoderDecoderCache without encoder states"
    return counter.get_total_flops(), sum(t.numel() * t.element_size() for t in oracle._cache_tensors(cache))


def llmcount_flops_and_cache(config: dict, batch: int, seq: int) -> tuple[int, int]:
    from llmcount.formulas import memory
    from llmcount.formulas.flops import Flops

    model = read_config(config, "test")
    flops = Flops(model.derivation).evaluate(model.values, seq, batch).forward
    cache = memory.inference(model.derivation, model.values, "fp32", seq=seq, batch=batch).bytes_of("kv_cache")
    return flops, cache


# S >= 2: at S = 1 torch turns ProphetNet's einsum A·V, which then contracts one key, into an elementwise product that
# the counter does not see (llmcount counts the matmul it is)
ON_TOKENS = [(name, keys) for name, keys in SWITCHES if "decoder_vocab_size" not in keys]


@pytest.mark.parametrize(("model_type", "keys"), ON_TOKENS, ids=lambda x: x if isinstance(x, str) else "-".join(x))
@pytest.mark.parametrize(("batch", "seq"), [(1, 2), (2, 7), (3, 12)])
def test_flops_and_cache_equal_transformers(model_type: str, keys: dict, batch: int, seq: int) -> None:
    config = small(model_type, **keys)
    seq = min(seq, 7) if keys.get("max_target_positions") == 7 else seq  # a learned table of 7 positions
    expected = counter_and_cache(config, batch, seq)
    assert llmcount_flops_and_cache(config, batch, seq) == expected, f"B={batch} S={seq} {config} ({oracle.VERSIONS})"


def test_marian_logits_are_as_wide_as_its_head() -> None:
    """decoder_vocab_size 30, vocab_size 40: tied, the head is the 30-row embedding and the logits 30 wide; untied,
    the head has vocab_size rows: 2 · B · S · d · (40 - 30) FLOPs more (token ids below the embedding's 30 rows)."""
    batch, seq, d = 2, 5, 16
    got = {}
    for tied in (True, False):
        config = small("marian", decoder_vocab_size=30, tie_word_embeddings=tied)
        got[tied] = llmcount_flops_and_cache(config, batch, seq)
        assert got[tied] == counter_and_cache(config, batch, seq, vocab=30), f"tied={tied} ({oracle.VERSIONS})"
    assert got[False][0] - got[True][0] == 2 * batch * seq * d * (40 - 30)


def test_bart_small_decoder_flops_by_hand() -> None:
    """SMALL as BART: d = 16, N = 2, d_ff = 24, V = 40, B = 2, S = 7. Per token per layer: q, k, v and out
    projections 4 · 2d² = 2,048, the MLP 2 · 2 · d · d_ff = 1,536, scores and values over the S keys 2 · 2 · S · d =
    448; the tied head 2 · d · V = 1,280 per token; the cross-attention none (no encoder states). The cache: keys and
    values of the self-attention, 2 · d per token per layer, in fp32."""
    d, n_layers, d_ff, vocab, batch, seq = 16, 2, 24, 40, 2, 7
    layer = 4 * 2 * d * d + 2 * 2 * d * d_ff + 2 * 2 * seq * d
    forward = batch * seq * (n_layers * layer + 2 * d * vocab)
    cache = n_layers * batch * seq * 2 * d * 4
    assert (forward, cache) == (130_816, 3_584)
    config = small("bart")
    assert llmcount_flops_and_cache(config, batch, seq) == (forward, cache) == counter_and_cache(config, batch, seq)


@pytest.mark.parametrize("model_type", DECODERS)
def test_class_defaults_flops_equal_flop_counter(model_type: str) -> None:
    """The config classes' defaults (BART-large's sizes, Whisper's, ...) on the meta device, at a real length."""
    from test_flops import hf_forward_flops

    config = {**oracle.class_defaults(model_type), "model_type": model_type}
    for batch, seq in [(1, 256), (2, 33)]:
        expected = hf_forward_flops(config, batch, seq)
        assert llmcount_flops_and_cache(config, batch, seq)[0] == expected, f"B={batch} S={seq} ({oracle.VERSIONS})"


@pytest.mark.parametrize("model_type", DECODERS)
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn_config_flops_and_cache_equal_transformers(model_type: str, data) -> None:
    """The record's sizes drawn and switches flipped (the drawing of test_records), S within the position table."""
    config = data.draw(oracle.drawn_config(records.family(model_type), st.sampled_from([2, 4, 8])))
    try:
        model = read_config(config, "drawn config")
    except LlmcountError:
        assume(False)
    # heads of one channel: torch turns ProphetNet's einsum Q·K^T into an elementwise product the counter does not see
    assume(model.values[symbols.d] // model.values[symbols.h] > 1)
    assume(model.counts.total <= oracle.MAX_PARAMETERS)
    positions = model.values.get(symbols.n_pos, 64)
    # ProphetNet's predicting streams read the positions after the main stream's: S within half the table
    batch, seq = data.draw(st.integers(1, 2)), data.draw(st.integers(2, max(2, min(positions // 2, 12))))
    got = llmcount_flops_and_cache(config, batch, seq)
    try:
        expected = counter_and_cache(config, batch, seq)
    except AssertionError:
        raise
    except Exception:  # transformers refuses the config (its class, constructor or forward)
        assume(False)
    assert got == expected, f"{model_type} B={batch} S={seq}: {json.dumps(config)} ({oracle.VERSIONS})"


# ---------------------------------------------------------------------------------------------
# training: what gets no gradient on token ids alone (the cross-attention, fixed sinusoidal tables) has no states


def trained_by_torch(config: dict, batch: int = 2, seq: int = 5) -> tuple[int, int, int]:
    """Parameters of the model, those with a gradient after one backward of the loss on token ids alone (CPU,
    eager), and the values AdamW keeps a first moment for after one step (PyTorch creates its state lazily, for
    parameters with a gradient only)."""
    import warnings

    import torch
    from transformers import AutoModelForCausalLM

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(oracle._hf_config(config), attn_implementation="eager")
        model.train()
        ids = torch.randint(0, config.get("decoder_vocab_size") or model.config.vocab_size, (batch, seq))
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer = torch.optim.AdamW(model.parameters())
        optimizer.step()
    graded = sum(p.numel() for p in model.parameters() if p.grad is not None)
    moments = sum(state["exp_avg"].numel() for state in optimizer.state.values())
    return sum(p.numel() for p in model.parameters()), graded, moments


# Marian with a tied head narrower than vocab_size cannot be trained: its loss views the logits as vocab_size wide
TRAINED = [(name, keys) for name, keys in SWITCHES if keys != {"decoder_vocab_size": 30}]


@pytest.mark.parametrize(("model_type", "keys"), TRAINED, ids=lambda x: x if isinstance(x, str) else "-".join(x))
def test_training_states_only_for_parameters_with_a_gradient(model_type: str, keys: dict) -> None:
    """memory --training: weights for every parameter, gradients, master copy and AdamW's moments only for those
    torch gives a gradient on token ids alone; the others are named (grad = false in the record)."""
    from llmcount.formulas import training as tr

    config = small(model_type, **keys)
    parameters, graded, moments = trained_by_torch(config)
    result = tr.training(read_config(config, "test"), "bf16", "adamw")
    assert (result.held.parameters, result.held.trainable) == (parameters, graded), oracle.VERSIONS
    assert graded == moments and result.no_grad_parameters == parameters - graded
    lines = {line.name: line.bytes for line in result.lines}
    assert (lines["weights"], lines["gradients"], lines["adam_m"]) == (2 * parameters, 2 * graded, 4 * moments)
    crossed = keys.get("add_cross_attention", True)  # ProphetNet can be built without its cross-attention
    assert ("cross_attention/*" in result.no_grad_paths) == crossed == (graded < parameters)


def test_training_output_names_what_gets_no_gradient(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(small("marian")))
    result = CliRunner().invoke(app, ["memory", str(path), "--training", "--seq", "8"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "no gradient: embedding/embed_positions, cross_attention/*, norms/encoder_attn_layer_norm" in text
    data = json.loads(CliRunner().invoke(app, ["memory", str(path), "--training", "--seq", "8", "--json"]).stdout)
    parameters, graded, _ = trained_by_torch(small("marian"))
    assert data["no_gradient"]["parameters"] == parameters - graded
    assert data["trainable_parameters_per_gpu"] == graded


def test_lora_on_what_gets_no_gradient_is_refused_by_name(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(small("bart")))
    args = ["memory", str(path), "--training", "--lora", "8", "--lora-targets", "cross_attention"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and result.stdout == ""
    assert "--lora on cross_attention/q_proj: it gets no gradient" in result.stderr


def test_full_recomputation_keeps_every_stream_of_a_layer_input() -> None:
    """ProphetNet's layers run the main stream and n_gram predicting streams together: a layer's input is
    (1 + n_gram) · S tokens of d, so --recompute full keeps B · S · (1 + n_gram) · d values per layer (by hand:
    B = 2, S = 8, n_gram = 3, d = 16, bf16: 2 · 8 · 4 · 16 · 2 = 2,048 bytes), not B · S · d."""
    from llmcount.formulas.activations import Options, activations

    model = read_config(small("prophetnet"), "prophetnet")
    result = activations(model.architecture, model.values, "bf16", 2, 8, Options("eager", "full"), model.keys)
    assert [kind.bytes for kind in result.per_layer_kind] == [2 * 8 * (1 + 3) * 16 * 2]


@pytest.mark.parametrize(
    ("buckets", "distance", "named"),
    [
        (32, 16, "relative_max_distance (16)"),
        (33, 16, "relative_max_distance (16)"),
        (10, 4, "relative_max_distance (4)"),
        (1, 1, "num_buckets (1)"),
    ],
)
def test_buckets_transformers_cannot_run_are_refused(buckets: int, distance: int, named: str) -> None:
    """ProphetNet buckets a relative position past num_buckets // 2 by the log of its ratio to relative_max_distance /
    (num_buckets // 2): at a distance of at most num_buckets // 2 (or fewer than 2 buckets) that ratio's log is zero
    or negative, and the forward pass fails in transformers; llmcount refuses the config naming the key."""
    import torch

    config = small("prophetnet", num_buckets=buckets, relative_max_distance=distance)
    model = oracle.AutoModelForCausalLM.from_config(oracle._hf_config(config))
    ids = torch.arange(40).reshape(1, 40)
    with pytest.raises((RuntimeError, IndexError, ZeroDivisionError, ValueError)):
        model(ids)
    with pytest.raises(LlmcountError, match=named.replace("(", r"\(").replace(")", r"\)")):
        read_config(config, "test")
