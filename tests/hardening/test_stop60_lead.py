"""Stop 60, found by the lead while merging: "What would fit" planned each change with the sequence cap the failed plan
had resolved for itself (SGLang's from the KV pool its own format left: 1 where none), so once a queued plan holds
only its running sequences' KV (queuekv) a change "fit" by queueing every user but one. Llama-3.1-70B on one H100
under SGLang was offered ``--weights int4-awq`` at 41.50 GiB a GPU; planned as the command pasted, it needs
119.00 GiB and does not fit. Each change offered must plan as FITS when pasted."""

from __future__ import annotations

import pytest

from cli_runner import run_json

_CASES = [
    ("llama-3.1-70b", "--gpu", "h100", "--gpus", "1", "--context", "8192", "--concurrency", "32", "--engine", "sglang"),
    ("llama-3.1-70b", "--gpu", "h100", "--gpus", "1", "--context", "8192", "--concurrency", "32"),
    ("llama-3.1-70b", "--gpu", "l40s", "--gpus", "1", "--prompt", "2000", "--output-tokens", "500", "--concurrency",
     "64", "--engine", "sglang"),
]


@pytest.mark.parametrize("case", _CASES)
def test_every_change_offered_fits_as_the_command_pasted(capsys: pytest.CaptureFixture[str],
                                                         case: tuple[str, ...]) -> None:
    asked = run_json(capsys, "plan", *case)
    assert asked["fits"] is False and asked["suggestions"]
    for suggestion in asked["suggestions"]:
        change = suggestion["change"].split()
        flags = {change[i] for i in range(0, len(change), 2)}
        base: list[str] = []
        skip = False
        for token in case:  # the change replaces the flags it names
            if skip:
                skip = False
                continue
            if token in flags:
                skip = True
                continue
            base.append(token)
        pasted = run_json(capsys, "plan", *base, *change)
        assert pasted["fits"] is True, f"{' '.join(case)}: {suggestion['change']} was offered but does not fit"


def test_the_sglang_case_offers_no_format_that_queues_every_user_but_one(capsys: pytest.CaptureFixture[str]) -> None:
    asked = run_json(capsys, "plan", *_CASES[0])
    assert [s["change"] for s in asked["suggestions"]] == ["--gpus 4 --tp 4"]
