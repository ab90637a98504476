"""Published sizes of the bundled presets of the classic families (GPT-NeoX), with their sources."""

from __future__ import annotations

from llmcount.sources import load


def test_pythia_160m() -> None:
    # Pythia model table (EleutherAI/pythia README; Biderman et al. 2023): 162,322,944 parameters in all,
    # 85,056,000 without the embedding and the untied head
    model = load("pythia-160m")
    assert model.counts.total == 162_322_944
    assert model.counts.total - 2 * 50304 * 768 == 85_056_000


def test_gpt_neox_20b() -> None:
    # EleutherAI/gpt-neox-20b model card, hyperparameter table: 20,554,567,680 parameters (20.55B)
    assert load("gpt-neox-20b").counts.total == 20_554_567_680


def test_opt_125m() -> None:
    # facebook/opt-125m model card and the OPT paper (Zhang et al. 2022): 125M parameters, no exact figure
    assert abs(load("opt-125m").counts.total - 125e6) < 0.5e6


def test_falcon_7b() -> None:
    # tiiuae/falcon-7b: model card "7B"; the Hub page's 7.22B counts lm_head.weight, which the checkpoint stores
    # apart from the word embedding it is tied to. print(model): Embedding(65024, 4544); per layer
    # query_key_value 4544 -> 4672 (71 query heads of 64 + one K and one V head: multi-query), dense 4544 -> 4544,
    # dense_h_to_4h 4544 -> 18176 and back, no biases, one LayerNorm (parallel attention); 32 layers; ln_f.
    d, V, N = 4544, 65024, 32
    per_layer = d * 4672 + d * d + 2 * d * 18176 + 2 * d
    tied = V * d + N * per_layer + 2 * d
    model = load("falcon-7b")
    assert model.counts.total == tied == 6_921_720_704
    assert round((tied + V * d) / 1e9, 2) == 7.22  # the Hub page's figure: the stored, untied head
