"""With ``--mfu`` the training step's assumption names the user's efficiency as theirs, at every width (the override
drops the fitted shape term), never "a calibrated 40%"; with ``--mbu`` alone the products' efficiency is still the
fitted one and says so (stop 54, branch qa12, from qa11's report: "BF16 products at a calibrated 40% of the dense
peak" under ``--mfu 0.4``)."""

from __future__ import annotations

import pytest

from cli_runner import run_json

TRAIN = ("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--task", "train")


def _step_line(answer: dict) -> str:
    return next(a for a in answer["performance"]["assumptions"] if a.startswith("step = "))


def test_the_user_s_mfu_is_named_theirs(capsys: pytest.CaptureFixture[str]) -> None:
    line = _step_line(run_json(capsys, *TRAIN, "--mfu", "0.4"))
    assert "BF16 products at the 40% of the dense peak you gave (mfu), at every width h/tp" in line, line
    assert "calibrated" not in line and "less for h/tp" not in line, line


def test_a_fitted_efficiency_stays_calibrated_beside_a_user_s_mbu(capsys: pytest.CaptureFixture[str]) -> None:
    for extra in ((), ("--mbu", "0.5")):
        line = _step_line(run_json(capsys, *TRAIN, *extra))
        assert "products at a calibrated" in line and "you gave" not in line, (extra, line)
