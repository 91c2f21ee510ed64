"""The two layout searches compare speeds at nine significant digits (``speed.ranking.speed_rank``) and give a tie to
the earlier candidate. Where FSDP's gathers bind the step, every recompute level of a layout runs at the same speed
(recompute's extra compute hides as much more of the traffic as it adds), and the last bits of the two searches' sums
differ: Mixtral 8x7B on 16 H100 at TP 8 x DP 2 x EP 4 with ZeRO-3 and micro-batch 4 timed 12,675.042286314607 tok/s
at full recompute in plan's chooser and 12,675.042286314603 at none, so plan took full recompute while recommend's
sweep took none (tests/recommend/test_sweep_agrees_with_plan.py sampled the row)."""

from __future__ import annotations

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.ranking import speed_rank


def test_levels_the_link_binds_tie_and_the_least_recompute_is_chosen() -> None:
    model, gpu = load_model("mixtral-8x7b-v0.1"), get_gpu("h100")
    layout = Layout(gpus=16, tp=8, dp=2, ep=4, zero=3)
    speeds = {rc: plan_performance(plan(model, Workload(task="train", micro_batch=4, recompute=rc), gpu=gpu,
                                        layout=layout, choose_layout=False, suggest=False))["train_tokens_per_s"]
              for rc in ("none", "selective", "full")}
    assert len({speed_rank(v) for v in speeds.values()}) == 1  # the link binds: one speed at every level
    chosen = plan(model, Workload(task="train", micro_batch=4), gpu=gpu, layout=layout)
    assert chosen.workload.recompute == "none"  # the tie goes to the least recompute, as in recommend's sweep


def test_the_rank_keeps_real_differences() -> None:
    assert speed_rank(1000.0001) > speed_rank(1000.0) and speed_rank(1e-3) > speed_rank(0.9999e-3)
    assert speed_rank(float("inf")) == float("inf") and speed_rank(0.0) == 0.0
