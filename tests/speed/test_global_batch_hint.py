"""A training plan at the default global batch says what that batch costs a step where it costs much: on 2,048
H800 the default 4,194,304 tokens leave DeepSeek-V3's chosen layout a few micro-batches per data-parallel rank,
so the pipeline bubble and the unhidden gradient sync take about a third of each step (DeepSeek-V3's own run used
15,360 sequences of 4,096 tokens a step, arXiv:2412.19437 section 4.2). The line prices the same layout at a batch
four times larger and leaves the batch to the user."""

from __future__ import annotations

import re

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from cli_runner import run

DSV3 = ("plan", "deepseek-v3", "--task", "train", "--gpu", "h800", "--gpus", "2048")


def _hint(lines: list[str]) -> str | None:
    return next((line for line in lines if line.startswith("Global batch:")), None)


def test_the_default_batch_on_a_large_cluster_is_priced_against_a_larger_one() -> None:
    model, gpu = load_model("deepseek-v3"), get_gpu("h800")
    chosen = plan(model, Workload(task="train"), gpu=gpu, layout=Layout(gpus=2048))
    perf = plan_performance(chosen)
    hint = _hint(perf["assumptions"])
    assert hint is not None
    share = sum(perf["step_time_breakdown_s"][k] for k in ("pp_bubble", "dp_sync")) / perf["step_time_s"]
    assert f"take {share:.0%} of the step" in hint and share >= 0.2
    # the speed it quotes is the plan's own for the same layout at --global-batch 16M
    lay = chosen.layout
    same = plan(model, Workload(task="train", global_batch_tokens=4 * 4_194_304, recompute=chosen.workload.recompute,
                                micro_batch=chosen.workload.micro_batch, seq_tokens=chosen.workload.seq_tokens),
                gpu=gpu, suggest=False, choose_layout=False,
                layout=Layout(gpus=2048, tp=lay.tp, pp=lay.pp, dp=lay.dp, ep=lay.ep, zero=lay.zero,
                              virtual_stages=lay.virtual_stages,  # interleaved at the chosen stated layout (stop 55)
                              pipeline_layout=lay.pipeline_layout.text if lay.pipeline_layout else None))
    quoted = float(re.search(r"would run at ([\d,]+) tok/s", hint).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert quoted == pytest.approx(plan_performance(same)["train_tokens_per_s"], abs=1.0)
    assert quoted > perf["train_tokens_per_s"]


def test_the_cli_shows_it_under_still_to_check(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *DSV3)
    assert code == 0
    assert "Global batch: not given" in out.split("Still to check", 1)[1].split("Assumed", 1)[0]


def test_a_given_batch_gets_no_such_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *DSV3, "--global-batch", "16M")
    assert code == 0 and "Global batch:" not in out


def test_a_run_the_default_batch_suits_gets_no_such_line() -> None:
    perf = plan_performance(plan(load_model("llama-3.1-8b"), Workload(task="train"), gpu=get_gpu("h100"),
                                 layout=Layout(gpus=8)))
    assert _hint(perf["assumptions"]) is None
