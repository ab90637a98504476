"""Discovery's failure classes, one test each: configs whose validators tie the layer count to other keys (a list
with one entry per layer, counts of layer groups that sum to it), config keys the glossary has no symbol for (a
record's own symbol, named after its key, with the docstring's meaning), and a draft that is not exact said in
words (which term, which config, both numbers)."""

from __future__ import annotations

import pytest

from llmcount.formulas import records
from llmcount.formulas.config import read_config
from llmcount.formulas.expressions import RecordError

pytest.importorskip("torch", reason="discover needs torch and transformers")
pytest.importorskip("transformers", reason="discover needs torch and transformers")

from llmcount.discover import probe
from llmcount.discover.core import Discoverer
from llmcount.discover.verify import Check, first_failure


def test_a_per_layer_list_follows_the_layer_count() -> None:
    # lara_mini's validator: `num_hidden_layers` must equal the number of `layer_types` (34 by default)
    default = probe.class_defaults("lara_mini")["layer_types"]  # given as the class gives it (discovery does)
    with pytest.raises(probe.Refused, match="layer_types"):
        probe.build("lara_mini", {"num_hidden_layers": 3, "layer_types": default})
    discoverer = Discoverer("lara_mini", log=lambda text: None)
    assert discoverer.per_layer == {"layer_types": ["linear_attention", "sliding_attention", "full_attention"]}
    built = discoverer.build({})
    assert built.layers == 3
    five = discoverer.consistent({"num_hidden_layers": 5}, {"num_hidden_layers": 5})
    kinds = ["linear_attention", "sliding_attention", "full_attention"]
    assert five["layer_types"] == [*kinds, *kinds[:2]]
    assert discoverer.build({"num_hidden_layers": 5}).layers == 5


def test_group_counts_that_sum_to_the_layer_count() -> None:
    # dory's validator: n_input_layers + n_recurrent_layers + n_output_layers must equal num_hidden_layers
    groups = {"n_input_layers": 16, "n_recurrent_layers": 40, "n_output_layers": 16}  # the class defaults
    with pytest.raises(probe.Refused, match="must equal num_hidden_layers"):
        probe.build("dory", {"num_hidden_layers": 3, **groups})
    discoverer = Discoverer("dory", log=lambda text: None)
    assert discoverer.parts == ["n_input_layers", "n_recurrent_layers", "n_output_layers"]
    assert discoverer.build({}).layers == 3
    # a group count changed: the layer count follows; the layer count changed: the groups share it out
    assert (
        discoverer.consistent({**discoverer.fixed, "n_recurrent_layers": 4}, {"n_recurrent_layers": 4})[
            "num_hidden_layers"
        ]
        == 6
    )
    shared = discoverer.consistent({**discoverer.fixed, "num_hidden_layers": 7}, {"num_hidden_layers": 7})
    assert sum(shared[k] for k in discoverer.parts) == 7
    assert discoverer.build({"n_recurrent_layers": 4}).layers == 6


OWN = """
model_type = "own_symbol_example"
title = "A record with a symbol of its own"
kind = "dense"

[glossary]
output_vocab_size = { meaning = "Number of LM-head rows kept." }

[symbols]
N = { key = "num_hidden_layers", default = 2 }
V = { key = "vocab_size", default = 300 }
d = { key = "hidden_size", default = 64 }
output_vocab_size = { key = "output_vocab_size", default = "V", null = "V" }

[[terms]]
path = "embedding/embed_tokens"
expr = "V*d"
embedding = true

[[terms]]
path = "head/lm_head"
expr = "d*output_vocab_size"
embedding = true
"""


def test_a_record_declares_a_symbol_named_after_its_key(tmp_path) -> None:
    path = tmp_path / "own.toml"
    path.write_text(OWN)
    family = records.load(path)
    config = {"model_type": "own_symbol_example", "hidden_size": 64, "vocab_size": 300, "output_vocab_size": 100}
    assert read_config(config, "own", family=family).counts.total == 300 * 64 + 64 * 100  # by hand
    unset = {**config, "output_vocab_size": None}  # null: the whole vocabulary
    assert read_config(unset, "own", family=family).counts.total == 2 * 300 * 64


@pytest.mark.parametrize(
    ("glossary", "message"),
    [
        ('d_ff = { meaning = "x" }', "is a glossary symbol already"),
        ('Weird = { meaning = "x" }', "named after its config key"),
        ('N_Full = { meaning = "x" }', "named after its config key"),
        ('output_vocab_size = { key = "other_key", meaning = "x" }', "named after its key"),
        ('output_vocab_size = { meaning = "x", latex = "y" }', "unknown fields"),
    ],
)
def test_a_bad_own_symbol_is_refused_by_name(tmp_path, glossary: str, message: str) -> None:
    path = tmp_path / "own.toml"
    path.write_text(OWN.replace('output_vocab_size = { meaning = "Number of LM-head rows kept." }', glossary))
    with pytest.raises(RecordError, match=message):
        records.load(path)


def test_the_meaning_is_drafted_from_the_config_docstring() -> None:
    assert probe.docstring_meaning("dory", "n_recurrent_layers") == "Number of decoder layers in the recurrent section."
    assert probe.docstring_meaning("llama", "no_such_key") == ""


def test_the_first_failing_check_is_said_in_words() -> None:
    checks = [
        Check("class defaults", 1000, 1000),
        Check(
            "random config 2", 37_253, 2_248_159_360, where="term embedding/embed_tokens (model.embed_tokens.weight)"
        ),
        Check("random config 3", 5, 6),
    ]
    said = first_failure(checks)
    assert said.startswith("on the random config 2 the draft counts 2,248,159,360 and transformers 37,253")
    assert "embedding/embed_tokens" in said and "random config 3" not in said
    assert first_failure(checks[:1]) == ""
    refused = [Check("random configs", None, None, "transformers accepted 2 of 40 drawn; the first refusal: E")]
    assert first_failure(refused) == "random configs: transformers accepted 2 of 40 drawn; the first refusal: E"


def test_tensors_on_some_layers_by_position_alone(tmp_path) -> None:
    # RWKV's pre_ln is on the first block only, whatever the config: a layer-count symbol of the record's own
    from llmcount.discover.verify import verify

    discoverer = Discoverer("rwkv", log=lambda text: None)
    text = discoverer.run().text
    assert '= "i == 0"' in text and "[glossary]" in text
    path = tmp_path / "rwkv.toml"
    path.write_text(text)
    checks = verify(discoverer, path)
    assert all(c.exact for c in checks), "\n".join(c.line() for c in checks)


def test_the_layer_count_key_is_the_one_the_causal_lm_builds() -> None:
    # BART's attribute_map names encoder_layers num_hidden_layers, but its causal LM is the decoder alone
    assert probe.attribute_map("bart")["num_hidden_layers"] == "encoder_layers"
    assert probe.build("bart", {"decoder_layers": 2, "encoder_layers": 1}).layers == 2
    assert Discoverer("bart", log=lambda text: None).layer_key == "decoder_layers"
    assert Discoverer("prophetnet", log=lambda text: None).layer_key == "num_decoder_layers"  # no alias at all


def test_class_defaults_that_do_not_build_are_refused_by_the_draft_too(tmp_path) -> None:
    # MinistralConfig defaults head_dim to None, which its attention cannot build with
    from llmcount.discover.verify import verify

    with pytest.raises(probe.Refused):
        probe.build("ministral", {})
    discoverer = Discoverer("ministral", log=lambda text: None)
    assert isinstance(discoverer.fixed["head_dim"], int)
    path = tmp_path / "ministral.toml"
    path.write_text(discoverer.run().text)
    checks = verify(discoverer, path)
    assert checks[0].name == "class defaults" and checks[0].refused and "head_dim" in checks[0].refused
    assert len(checks) == 6 and all(c.exact for c in checks), "\n".join(c.line() for c in checks)


def test_a_pattern_shorter_than_the_layers_repeats_over_them() -> None:
    # RecurrentGemma's block_types has 3 entries for 26 layers: layer i has block_types[i % len(block_types)]
    discoverer = Discoverer("recurrent_gemma", log=lambda text: None)
    discoverer.layer_values = {"block_types": [["recurrent", "recurrent", "attention"], ["attention"]]}
    said = discoverer.candidates()
    assert "block_types[i % len(block_types)] == 'recurrent'" in said
    assert "block_types[i] == 'recurrent'" not in said
    lara = Discoverer("lara_mini", log=lambda text: None)  # one entry per layer: indexed as it is
    lara.layer_values = {"layer_types": [["full_attention", "linear_attention"]]}
    assert "layer_types[i] == 'full_attention'" in lara.candidates()


def test_a_default_rounded_up_from_a_fraction() -> None:
    # FalconMamba's time_step_rank "auto" is ceil(hidden_size / 16)
    from sympy import Symbol

    from llmcount.discover import fit

    d = Symbol("d")
    samples = [({d: x}, -(-x // 16)) for x in (40, 64, 100, 17)]
    assert fit.derived(samples, [d]) == "(d + 15) // 16"
    assert fit.derived([({d: x}, x // 4) for x in (40, 64, 101, 17)], [d]) == "d // 4"


@pytest.mark.parametrize("name", ["ngram", "ngram_size", "dff"])
def test_a_one_word_key_names_its_own_symbol(tmp_path, name: str) -> None:
    path = tmp_path / "own.toml"
    path.write_text(OWN.replace("output_vocab_size", name))
    family = records.load(path)
    config = {"model_type": "own_symbol_example", "hidden_size": 64, "vocab_size": 300, name: 100}
    assert read_config(config, "own", family=family).counts.total == 300 * 64 + 64 * 100


@pytest.mark.parametrize("name", ["ceil", "none", "ab", "len", "for"])
def test_a_one_word_name_the_formulas_reserve_is_refused(tmp_path, name: str) -> None:
    path = tmp_path / "own.toml"
    path.write_text(OWN.replace("output_vocab_size", name))
    with pytest.raises(RecordError, match="named after its config key"):
        records.load(path)


def test_a_size_shared_out_over_heads() -> None:
    # RecurrentGemma's RG-LRU gates are block-diagonal: one (w / h) x (w / h) block per head
    from sympy import Symbol

    from llmcount.discover import fit

    w, h = Symbol("w", positive=True, integer=True), Symbol("h", positive=True, integer=True)
    samples = [({w: a * b, h: b}, a) for a, b in ((4, 2), (6, 3), (8, 5), (10, 2), (3, 7), (12, 4), (5, 6))]
    assert fit.polynomial(samples, [w, h]) is None
    assert fit.quotient(samples, [w, h]) == w / h


def test_a_key_a_validator_ties_to_the_sizes_is_left_for_the_class_to_compute() -> None:
    # XLNet's validator: d_head must equal d_model // n_head; discovery gives d_head only because it is an integer
    discoverer = Discoverer("xlnet", log=lambda text: None)
    with pytest.raises(probe.Refused, match="d_head"):
        discoverer.build({"d_model": 2 * discoverer.defaults["d_model"]})
    built = discoverer.build({"d_model": 2 * discoverer.defaults["d_model"]}, repair={"d_model"})
    assert built.attributes["d_head"] == 2 * discoverer.defaults["d_model"] // discoverer.defaults["n_head"]


def test_the_experts_per_token_a_validator_pins_are_drawn_at_the_class_default() -> None:
    # ZAYA accepts num_experts_per_tok=1 only: random configs must draw it as the class has it, often enough
    import random

    from sympy import Symbol

    from llmcount.discover.verify import random_config

    discoverer = Discoverer("zaya", log=lambda text: None)
    assert discoverer.defaults["num_experts_per_tok"] == 1
    discoverer.symbols = {"num_experts_per_tok": Symbol("k", positive=True, integer=True)}
    discoverer.activation_keys, discoverer.switches_read, discoverer.layer_values = ["num_experts_per_tok"], [], {}
    rng = random.Random(1)
    drawn = [random_config(discoverer, rng).get("num_experts_per_tok") for _ in range(10)]
    assert drawn.count(1) >= 3, drawn


def test_tensors_of_one_name_with_other_conditions_get_terms_of_their_own(tmp_path) -> None:
    # ModernBERT-decoder's norm biases exist only with norm_bias (default False): a term of their own with its
    # condition, not added to the weights' term unconditionally (which counted them twice the norm weights)
    from llmcount.discover.verify import verify

    discoverer = Discoverer("modernbert-decoder", log=lambda text: None)
    text = discoverer.run().text
    assert 'path = "norms/mlp_norm.bias"' in text
    path = tmp_path / "modernbert-decoder.toml"
    path.write_text(text)
    checks = verify(discoverer, path)
    assert all(c.exact for c in checks), "\n".join(c.line() for c in checks)
