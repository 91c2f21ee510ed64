"""A training plan that does not fit offers, under "What would fit", the splits an engineer reaches for on the same
GPUs: tensor parallelism inside the server and, for sequences of 16,384 tokens or more, context parallelism, each
with full recompute where only both together hold it. Llama 3.1 8B at 131,072 tokens on 8 H100 with ZeRO-1 used to
get only changes of the job (shorter sequences, QLoRA) or nothing at all: with ``--zero 0`` the plan said "see the
suggestions" over an empty list. The split is pinned with ``--tp 1 --pp 1``: a ZeRO flag alone now has TP and PP
searched around it (tests/speed/test_chooser_partial_layout.py), which finds a split that fits."""

from __future__ import annotations

import pytest

from anchorgpu.planner.warnings import NO_CHANGE_FITS_CHECK
from cli_runner import run, run_json

LONG = ("plan", "llama-3.1-8b", "--task", "train", "--seq", "131072", "--gpu", "h100", "--gpus", "8", "--tp", "1",
        "--pp", "1")


@pytest.mark.parametrize("flags", [("--zero", "1"), ("--zero", "0"), ("--fsdp",)])
def test_every_split_offered_fits_when_applied(capsys: pytest.CaptureFixture[str], flags: tuple[str, ...]) -> None:
    doc = run_json(capsys, *LONG, *flags)
    assert doc["fits"] is False
    splits = [s for s in doc["suggestions"] if s["change"].startswith(("--tp", "--cp"))]
    assert splits, doc["suggestions"]
    for s in splits:
        # applied, the rest of the layout is chosen again (a larger micro-batch where it fits): it still fits
        applied = run_json(capsys, *LONG, *flags, *s["change"].split())
        assert applied["fits"] is True, s["change"]


def test_long_sequences_are_offered_context_parallelism(capsys: pytest.CaptureFixture[str]) -> None:
    changes = [s["change"] for s in run_json(capsys, *LONG, "--zero", "1")["suggestions"]]
    assert any(c.startswith("--cp ") for c in changes)
    short = run_json(capsys, "plan", "llama-3.1-70b", "--task", "train", "--seq", "8192", "--gpu", "h100", "--gpus", "8",
                     "--tp", "1", "--pp", "1", "--zero", "1")
    assert short["fits"] is False
    assert not any(s["change"].startswith("--cp ") for s in short["suggestions"])  # 8,192 tokens: no CP tried


def test_no_offer_no_pointer_to_offers(capsys: pytest.CaptureFixture[str]) -> None:
    """A 405B on one 24 GB GPU: nothing single fits, and the check says so instead of pointing at an empty list."""
    pinned = ("--tp", "1", "--pp", "1", "--zero", "0")  # plain DP: no GPU count holds it (a split would, on 512)
    doc = run_json(capsys, "plan", "llama-3.1-405b", "--task", "train", "--gpu", "rtx-4090", "--gpus", "1", *pinned)
    assert doc["fits"] is False and not doc["suggestions"]
    assert NO_CHANGE_FITS_CHECK in doc["checks"]
    code, out, _ = run(capsys, "plan", "llama-3.1-405b", "--task", "train", "--gpu", "rtx-4090", "--gpus", "1", *pinned)
    assert code == 0 and "see the suggestions" not in out


def test_one_split_of_each_kind_is_offered(capsys: pytest.CaptureFixture[str]) -> None:
    """The fastest TP split and the fastest CP split, not every size of each (they would crowd out other changes)."""
    changes = [s["change"] for s in run_json(capsys, *LONG, "--zero", "1")["suggestions"]]
    assert sum(c.startswith("--tp ") for c in changes) <= 1
    assert sum(c.startswith("--cp ") for c in changes) == 1
