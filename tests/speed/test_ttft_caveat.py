"""What a time to first token leaves out: the caveat every serving plan and recommendation carries.

The predicted TTFT is the engine's own time; GPUStack's measured TTFTs (client-side, through each engine's HTTP server)
of Qwen3-8B on one H100, 233-token prompts at 4 requests in flight, are 64.00 ms on vLLM 0.11.0, 27.70 ms on SGLang
0.5.3.post3 and 51.61 ms on TensorRT-LLM 1.2.0rc1 (gpustack/gpustack docs/performance-lab/qwen3-8b/h100-latency.md,
commit c0cee89c99d601188c511e53f90d5dff1356c4f1, "Choosing the Inference Engine").
"""

from __future__ import annotations

import pytest

from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import ENGINE_CAVEAT_LABEL, TTFT_CAVEAT_LABEL
from cli_runner import run, run_json

QWEN3_8B_H100 = ("plan", "qwen3-8b", "--gpu", "h100", "--prompt", "233", "--output-tokens", "221", "--concurrency", "4")


def test_the_caveat_gives_the_measured_figures_and_the_prediction_beside_them(capsys: pytest.CaptureFixture[str]) -> None:
    caveat = calibration().caveats["ttft"]
    for measured in ("64 ms on vLLM 0.11.0", "28 ms on SGLang 0.5.3", "52 ms on TensorRT-LLM 1.2.0rc1"):
        assert measured in caveat
    predicted_ms = run_json(capsys, *QWEN3_8B_H100, "--json")["performance"]["ttft_s"] * 1e3
    assert f"where this model predicts {predicted_ms:.0f} ms" in caveat  # the caveat cannot drift from the model


# every serving caveat, with how it opens: this one, and which engines the speeds hold for (test_engine_caveat.py)
SERVING_CAVEATS = [(TTFT_CAVEAT_LABEL, "it is the engine's own time"),
                   (ENGINE_CAVEAT_LABEL, "the serving rows these speeds are fitted on are mostly TensorRT-LLM's")]


@pytest.mark.parametrize(("label", "opening"), SERVING_CAVEATS)
def test_a_serving_plan_lists_it_under_still_to_check_and_a_training_plan_does_not(
        capsys: pytest.CaptureFixture[str], label: str, opening: str) -> None:
    code, out, _ = run(capsys, *QWEN3_8B_H100)
    assert code == 0
    still = " ".join(out.split("Still to check", 1)[1].split("Assumed", 1)[0].split())
    assert f"- {label}: {opening}" in still
    lines = run_json(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8",
                     "--json")["performance"]["assumptions"]
    assert not any(line.startswith(label + ":") for line in lines)


@pytest.mark.parametrize("label", [label for label, _ in SERVING_CAVEATS])
def test_a_serving_recommendation_carries_it(capsys: pytest.CaptureFixture[str], label: str) -> None:
    doc = run_json(capsys, "recommend", "llama-3.1-8b", "--task", "inference", "--context", "4096", "--concurrency", "8",
                   "--json")
    assert any(line.startswith(label + ":") for line in doc["assumptions"])
