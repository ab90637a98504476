"""What the compiled path works out once per family and reuses (which choices hold, the activation tables' symbols,
the checks a config passed) by the values the conditions read: a config read after others of its family gets the
same count as read alone, and a bad one is refused with its own message however many good ones came before."""

from __future__ import annotations

import pytest

from llmcount import counting
from llmcount.errors import LlmcountError
from llmcount.formulas.config import read_config
from llmcount.presets import presets


def _llama(**changes):
    return {**presets()["llama-3-8b"].config(), **changes}


def test_a_check_is_made_again_for_values_it_has_not_passed() -> None:
    for _ in range(3):
        counting.read(_llama(), "good")
        read_config(_llama(), "good")
    bad = _llama(num_key_value_heads=7)
    with pytest.raises(counting.Fallback):
        counting.read(bad, "bad")
    for _ in range(2):  # refused each time, with the rule's message naming the keys
        with pytest.raises(LlmcountError, match=r"bad: num_attention_heads \(32\) is not divisible by .* \(7\)"):
            read_config(bad, "bad")
    assert counting.read(_llama(), "good").total == read_config(_llama(), "good").counts.total


def test_a_switch_read_after_the_other_value_selects_its_own_terms() -> None:
    """tie_word_embeddings decides whether the LM head is counted: V·d parameters (hand derivation: 128,256 × 4,096)."""
    untied = counting.read(_llama(), "untied")
    tied = counting.read(_llama(tie_word_embeddings=True), "tied")
    again = counting.read(_llama(), "untied again")
    assert untied.total - tied.total == 128_256 * 4_096
    assert again.total == untied.total
    assert [c.path for c in again.components] == [c.path for c in untied.components]


def test_a_value_of_another_type_is_not_taken_for_a_remembered_one() -> None:
    """true and 1 are different keys: a config giving tie_word_embeddings as 1 is refused by name, not counted as the
    remembered true."""
    counting.read(_llama(tie_word_embeddings=True), "tied")
    with pytest.raises(LlmcountError, match="tie_word_embeddings"):
        read_config(_llama(tie_word_embeddings=1), "one")


@pytest.mark.parametrize("name", ["gemma-2-2b", "qwen3-next-80b-a3b", "deepseek-v2-lite", "llama-3-8b"])
def test_a_family_read_many_times_counts_as_the_sympy_path(name: str) -> None:
    config = presets()[name].config()
    totals = set()
    for vocab in (1000, 2000, 1000, 3000, 2000):
        changed = {**config, "vocab_size": vocab}
        ours = counting.read(changed, "x")
        theirs = read_config(changed, "x")
        assert (ours.total, ours.activated, ours.values) == (
            theirs.counts.total,
            theirs.counts.activated,
            {s.name: v for s, v in theirs.values.items()},
        )
        totals.add(ours.total)
    assert len(totals) == 3
