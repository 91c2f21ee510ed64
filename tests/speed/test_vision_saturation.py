"""A vision model whose image tokens sit in its context times its prompt with the vision tower's work as tokens of the
same cost; those tokens are never cached, so the sequences the engine keeps running at once (its saturation) must not
count them. Before, plan's saturation charged every sequence for them: Mistral-Small-3.1-24B on one H100 PCIe held
32 sequences of 4,360 tokens at full length but ran 31 at their average length, and plan timed the 32nd user as
queued (379.6 tok/s) where recommend's row for the same layout ran all 32 (383.9 tok/s)."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance

CASES = [  # (model, GPU, engine): models that keep their image tokens in the context (one image by default)
    ("mistral-small-3.1-24b", "h100-pcie", "vllm"),
    ("mistral-small-3.1-24b", "a100-80gb-sxm", "vllm"),
    ("mistral-small-3.1-24b", "h100-pcie", "trtllm"),
    ("qwen2.5-vl-7b", "l4", "vllm"),
    ("gemma-3-27b", "h100-sxm", "vllm"),
]


@pytest.mark.parametrize(("name", "gpu", "engine"), CASES)
def test_saturation_holds_what_the_memory_holds(name: str, gpu: str, engine: str) -> None:
    model, device = load_model(name), get_gpu(gpu)
    probe = plan(model, Workload(concurrency=8, engine=engine), layout=Layout(gpus=1), gpu=device, suggest=False)
    held = probe.max_concurrency
    assert held and held >= 1
    p = plan(model, Workload(concurrency=held, engine=engine), layout=Layout(gpus=1), gpu=device, suggest=False)
    assert p.fits and "encoder_prefill_equivalent_tokens" in p.breakdown
    perf = plan_performance(p)
    cap = p.workload.max_num_seqs or perf["saturation_concurrency"]
    # the memory holds `held` sequences at their full length, so at least as many at their average (or full) length
    assert perf["saturation_concurrency"] >= min(held, cap)
    # every user runs: the total is what the users' requests emit over their time (TTFT, then O - 1 gaps of one
    # TPOT, which sees the other users' prompts only: stop 56 tpotown), none of them queued
    out = p.workload.output_tokens
    request_s = perf["ttft_s"] + (out - 1) * perf["tpot_s"]
    assert perf["output_tokens_per_s"] == pytest.approx(held * out / request_s, rel=0.03)
    assert perf["output_tokens_per_s"] <= held * perf["decode_tokens_per_s_per_user"]


def test_recommend_row_agrees_with_plan(capsys: pytest.CaptureFixture[str]) -> None:
    from cli_runner import run_json

    rec = run_json(capsys, "recommend", "mistral-small-3.1-24b", "--gpu", "h100-pcie", "--concurrency", "32",
                   "--top", "1")
    row = rec["results"][0]
    assert (row["gpus"], row["layout"]["tp"], row["concurrency"]) == (1, 1, 32)
    p = run_json(capsys, "plan", "mistral-small-3.1-24b", "--gpu", "h100-pcie", "--gpus", "1", "--concurrency", "32")
    assert p["per_gpu"]["total_bytes"] == row["per_gpu_total_bytes"]
    assert p["performance"]["output_tokens_per_s"] == pytest.approx(row["output_tokens_per_s"], abs=0.05)
    assert p["performance"]["decode_tokens_per_s_per_user"] == pytest.approx(
        row["decode_tokens_per_s_per_user"], abs=0.005)
