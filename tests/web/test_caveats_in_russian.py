"""Stop 63 (ru63): calibration.json's caveats on a Russian page. Each is said with its figures as fields
(``planner.speed.caveats.caveat_said``): the message id is the caveat with every figure masked, so the Russian in
``messages.po`` takes its numbers from calibration.json, as the English does. A refit that moves only the numbers keeps
the translation; one that changes the words leaves the line English (whole, marked) until it is translated again."""

from __future__ import annotations

import re

import pytest

from anchorgpu.errors import Said
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.caveats import caveat_said, serving_caveats, training_caveats
from anchorgpu.web.i18n import PageText
from anchorgpu.web.refusals import said_words

RU = PageText("ru")
TRANSLATED = tuple(calibration().caveats)
"""Every caveat has its Russian in messages.po (stop 63): a new one, or one whose words a refit changed, fails here
with the message id to translate (benchmarks/caveat_ids.py prints them all)."""


@pytest.mark.parametrize("key", TRANSLATED)
def test_each_translated_caveat_is_russian_with_calibration_jsons_figures(key: str) -> None:
    text = calibration().caveats[key]
    line = caveat_said(text)
    words = said_words(line, RU)
    # a failure after a refit that changed the words: the id to translate is line.template
    assert words is not None, f"no Russian for the caveat {key!r}; its message id is now:\n{line.template}"
    assert not re.search(r"\b[a-z]{3,} [a-z]{3,} [a-z]{3,}\b", words.replace("performance-lab", "")), words
    for value in line.values.values():  # every figure the Russian names comes from calibration.json
        assert isinstance(value, int | str)


def test_a_refit_that_moves_only_the_numbers_keeps_the_russian_and_moves_its_figures() -> None:
    text = calibration().caveats["ttft"]
    moved = text.replace("at 64 ms on vLLM", "at 71 ms on vLLM").replace("predicts 11 ms", "predicts 12 ms")  # 10 ms until stop 63
    assert moved != text
    words = said_words(caveat_said(moved), RU)
    assert words is not None and "71 мс на vLLM" in words and "предсказывает 12 мс" in words, words


def test_a_refit_that_changes_the_words_leaves_the_caveat_english_never_half_translated() -> None:
    changed = calibration().caveats["ttft"].replace("add your server's own", "add your own server's time")
    assert said_words(caveat_said(changed), RU) is None


def test_the_caveat_lines_are_the_english_they_were() -> None:
    caveats = calibration().caveats
    lines = [*serving_caveats(caveats, moe=True, engine="vllm", wide_ep=True), *training_caveats(caveats, moe=True, cp=True)]
    assert lines and all(isinstance(line, Said) for line in lines)
    assert lines[0] == f"Mixture of experts: {caveats['moe']}."
    assert lines[1] == f"Time to first token: {caveats['ttft']}."
    assert lines[-1] == f"Context parallelism: {caveats['cp_train']}."
