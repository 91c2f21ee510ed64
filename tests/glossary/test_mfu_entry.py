"""The glossary's MFU entry says what the planner's MFU counts: attention over the whole sequence (the Llama 3 paper's
convention), more than a causal kernel runs, so its roofline ceiling can pass 100 % (stop 54, branch qa12; the plan's
step line and the README say the same; the figures are the entry's claims, checked by ``test_claims``)."""

from __future__ import annotations

from anchorgpu.glossary import get_entry


def test_the_mfu_entry_says_attention_is_counted_over_the_whole_sequence_in_both_languages() -> None:
    entry = get_entry("mfu")
    assert entry is not None
    assert "over the whole sequence, as the Llama 3 paper counts it" in entry.long.en
    assert "causal" in entry.long.en and "can pass 100 %" in entry.long.en.replace("\n", " ")
    assert "по всей последовательности, как в статье о Llama 3" in entry.long.ru.replace("\n", " ")
    assert "превышать 100 %" in entry.long.ru
    claimed = {claim.run[-1]: claim for claim in entry.claims}
    assert set(claimed) == {"4096", "131072"}  # the two ceilings the text gives, run by test_claims
