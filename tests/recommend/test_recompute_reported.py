"""Each training recommendation says which activation recompute its memory and speed were sized with (the least
that fits the GPU, ``none`` < ``selective`` < ``moe`` < ``full``): the sweep picked one and did not say which."""

from __future__ import annotations

import pytest

from anchorgpu.planner.inputs import RECOMPUTES
from cli_runner import run, run_json


def test_training_results_name_their_recompute(capsys: pytest.CaptureFixture[str]) -> None:
    # Llama 3.1 70B at 16k tokens on H100 (Qwen3-30B-A3B until stop 60, which now fits one server at TP 4 without
    # recompute, its MoE layers paying only the attention's TP traffic: benchmarks/hardening/stop60_mztrain.md)
    doc = run_json(capsys, "recommend", "llama-3.1-70b", "--task", "train", "--tokens", "1e10", "--seq", "16384",
                   "--gpu", "h100", "--top", "5")
    levels = [r["recompute"] for r in doc["results"]]
    assert levels and set(levels) <= set(RECOMPUTES)
    # at 16k tokens one server holds the run only by recomputing (more servers split the sequence with CP instead)
    recomputed = [level for level in levels if level != "none"]
    assert recomputed
    code, out, _ = run(capsys, "recommend", "llama-3.1-70b", "--task", "train", "--tokens", "1e10", "--seq", "16384",
                       "--gpu", "h100", "--top", "5")
    assert code == 0 and f"rc:{recomputed[0]}" in out


def test_serving_results_have_no_recompute(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "recommend", "llama-3.1-8b", "--concurrency", "8", "--top", "2")
    assert doc["results"] and all(r["recompute"] is None for r in doc["results"])

