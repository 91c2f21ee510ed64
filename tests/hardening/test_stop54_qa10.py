"""Stop 54's QA pass over speed and layouts as a new user checks them (benchmarks/hardening/stop54_qa10.md, "qa10").

1. recommend timed every user of a serving row at the busiest replica's pace, where its users split unevenly over
   the replicas (9 users over 4 RTX 4090 replicas: 3, 2, 2, 2), so its total tokens/s (and its price of a million
   tokens) were not plan's for the same layout: with long prompts (8,000 in / 100 out) the step grows with the
   sequences it runs, and recommend said 162.2 tok/s for 4 GPUs, the same as for 3, against plan's 191.9 (its
   "a little below" line said so on rows 47% below). Now the sweep adds each replica's own rate, as plan does.
2. plan --task train on a GPU count past 2,048 with no power-of-two factor (2,049, 4,095, 4,097 H100s for a 70B) chose
   no layout: TP, PP and CP are tried as powers of two, so DP is the count, more ranks than the default batch's 2,048
   sequences, and the chooser skipped every one; the answer was plain DP, DOES NOT FIT (1.12 TiB a GPU), while the
   same GPUs given --zero 3 fit at 50 GiB with the default batch rounded up to one micro-batch a rank (plan's own
   rule, said in its batch line). Now the chooser tries those layouts when none keeps the default batch."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Workload
from anchorgpu.planner.inputs import Layout, PrecisionPlan
from anchorgpu.planner.plan import plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend, recommendation_to_json
from cli_runner import run, run_json

NOW = datetime(2026, 12, 6, 12, tzinfo=UTC)
LONG_PROMPTS = Workload(task="inference", concurrency=9, prompt_tokens=8000, output_tokens=100)


def _rows(gpu: str) -> dict:  # type: ignore[type-arg]
    catalog = load_catalog()
    offerings = tuple(o for o in catalog.offerings if o.gpu == gpu)
    spec = SweepSpec(workload=LONG_PROMPTS, prompt_tokens=8000, output_tokens=100)
    return recommendation_to_json(recommend(load_model("llama-3.1-8b"), spec, catalog, "1month", NOW, top=12,
                                            offerings=offerings))


def _plan_output(gpus: int, dp: int) -> float:
    p = plan(load_model("llama-3.1-8b"), LONG_PROMPTS, precision=PrecisionPlan(weights="bf16", kv_cache="bf16"),
             layout=Layout(gpus=gpus, tp=1, pp=1, dp=dp), gpu=get_gpu("rtx-4090"), suggest=False,
             choose_layout=False)
    assert p.fits
    return float(plan_performance(p, prompt_tokens=8000, output_tokens=100)["output_tokens_per_s"])


def test_an_uneven_rows_total_is_plans_sum_of_its_replicas() -> None:
    answer = _rows("rtx-4090")
    rows = {r["layout"]["dp"]: r for r in answer["results"] if r["layout"]["tp"] == r["layout"]["pp"] == 1}
    four, three = rows[4], rows[3]  # 9 users: 3, 2, 2, 2 and 3, 3, 3
    assert four["decode_tokens_per_s_total"] == pytest.approx(_plan_output(4, 4), abs=0.05)
    assert three["decode_tokens_per_s_total"] == pytest.approx(_plan_output(3, 3), abs=0.05)  # even: unchanged
    # a fourth replica serves more: the lighter ones run faster than the busiest (162.2 both before)
    assert four["decode_tokens_per_s_total"] > 1.1 * three["decode_tokens_per_s_total"]
    # the per-user figure stays the busiest replica's, as plan's; the line says both
    assert four["decode_tokens_per_s_per_user"] == pytest.approx(three["decode_tokens_per_s_per_user"], rel=1e-9)
    line = next(a for a in answer["assumptions"] if a.startswith("Users split unevenly over replicas"))
    assert "tok/s adds each replica's own rate" in line and "a little below" not in line


@pytest.mark.parametrize("gpus", ["2049", "4095"])
def test_a_count_whose_dp_outnumbers_the_default_batch_gets_a_layout(capsys: pytest.CaptureFixture[str],
                                                                      gpus: str) -> None:
    answer = run_json(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--task", "train", "--gpus", gpus)
    assert answer["fits"], answer["per_gpu"]
    assert answer["layout"]["dp"] == int(gpus) and answer["layout"]["zero"] == 3  # FSDP over every GPU
    assert any(a.startswith("Layout chosen: TP 1, PP 1, CP 1, DP ") for a in answer["assumptions"])
    (batch,) = [a for a in answer["performance"]["assumptions"] if a.startswith("global batch timed")]
    assert "the default 4,194,304 (--global-batch not given) rounded up to whole micro-batches" in batch
    assert answer["performance"]["global_batch_tokens"] == int(gpus) * 2048
    # the same as --zero 3 given on those GPUs
    given = run_json(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--task", "train", "--gpus", gpus,
                     "--zero", "3")
    assert given["performance"]["train_tokens_per_s"] == pytest.approx(answer["performance"]["train_tokens_per_s"])


def test_a_count_that_keeps_the_default_batch_is_chosen_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    """8B on 4,096 H100s: DP 4,096 would double the default batch; a split that keeps it is chosen instead."""
    answer = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--gpus", "4096")
    lay = answer["layout"]
    assert (lay["tp"], lay["pp"], lay["dp"]) == (2, 4, 512)
    assert answer["performance"]["global_batch_tokens"] == 4 * 2**20


def test_a_stated_batch_is_still_never_rounded(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--task", "train", "--gpus", "4095",
                       "--global-batch", "4M")
    assert code == 2 and "splits into whole micro-batches for no layout of the 4,095 GPUs" in err
