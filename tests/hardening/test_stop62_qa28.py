"""Stop 62's new-user pass (benchmarks/hardening/stop62_qa28.md): bad inputs on the issue-11 flags.

``--gpus inf`` (and ``1e309``, which Python reads as infinity, and ``-inf``) was refused as a fraction of a GPU
("only whole GPUs are offered (no MIG slices, vGPU or time-slicing)"), a reason about MIG for a value that is no
count at all; it is now refused as what it is, not a whole number of GPUs, as ``nan`` and ``abc`` were.
"""

from __future__ import annotations

import pytest

from cli_runner import run


@pytest.mark.parametrize("value", ["inf", "-inf", "1e309"])
def test_an_infinite_gpu_count_is_no_count_not_a_fraction(capsys: pytest.CaptureFixture[str], value: str) -> None:
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", value)
    assert (code, out) == (2, "")
    assert err.strip() == f"error: --gpus '{value}': expected a whole number of GPUs"
    assert "MIG" not in err and len(err.strip().splitlines()) == 1


def test_a_fraction_of_a_gpu_still_names_mig(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "0.5")
    assert code == 2 and "only whole GPUs are offered (no MIG slices" in err
