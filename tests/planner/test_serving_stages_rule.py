"""The serving chooser and recommend's sweep run pipeline stages on NVLink/xGMI servers only where no layout of TP
alone holds the users (planner.speed.serving_stages: vLLM's distributed-serving guide, TP over a node's GPUs and PP
across nodes for a model one node cannot hold); PCIe-only servers rank stages by speed (TensorRT-LLM's own perf
table stages them there: calibration rows P70-RTXTP1PP8-*, PL4S-RTXTP4PP2-*). Before (stop57 qa19 "Left" 3),
DeepSeek-R1 for 4 users of 128,000 + 1,000 tokens on B200 was chosen as TP 2 x PP 4, 115 tok/s at a 20.9 s time to
first token, where TP 8 holds them at 102 tok/s and 6.0 s. Since stop58 qa22 (the output rate is timed at a request's
time to first token and its gaps, Little's law: planner.speed.request_cycle.request_step_s) TP 2 x PP 4 there is 79
tok/s, 4 x 1,000 tokens over 20.9 s + 999 x 29.8 ms, and no longer the faster: the rule has nothing to leave out
there; it still does for 512 users of Llama 3.1 70B on 8 H100 (test_the_rule_still_leaves_faster_stages_out)."""

from __future__ import annotations

import numpy as np
import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.serving_stages import STAGES_RULE
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog
from anchorgpu.recommend.selection import best_serving_per_group

R1_LONG = dict(prompt_tokens=128_000, output_tokens=1_000, concurrency=4)


def _reason(p) -> str:  # type: ignore[no-untyped-def]
    return " ".join(a for a in p.assumptions if a.startswith("Layout chosen") or a.startswith("Layout kept"))


def test_no_stages_inside_an_nvlink_server_where_tp_alone_holds_the_users() -> None:
    """qa19's case: TP 8 on the 8 B200s (one stage), not TP 2 x PP 4, which (its 20.9-s time to first token in
    every request's cycle) is no faster."""
    p = plan(load_model("deepseek-r1"), Workload(task="inference", **R1_LONG), gpu=get_gpu("b200"))
    assert (p.layout.gpus, p.layout.pp) == (8, 1)
    chosen = plan_performance(p)
    assert chosen["ttft_s"] < 10.0  # TP 2 x PP 4's was 20.9 s
    staged = plan_performance(plan(load_model("deepseek-r1"), Workload(task="inference", **R1_LONG),
                                   gpu=get_gpu("b200"), layout=Layout(gpus=8, tp=2, pp=4)))
    assert staged["ttft_s"] > 2 * chosen["ttft_s"]
    assert staged["output_tokens_per_s"] < chosen["output_tokens_per_s"]


def test_the_rule_still_leaves_faster_stages_out() -> None:
    """Llama 3.1 70B for 512 users on 8 H100: TP 2 x PP 2 x DP 2 is predicted faster and left out by the rule."""
    p = plan(load_model("llama-3.1-70b"), Workload(task="inference", concurrency=512), gpu=get_gpu("h100"),
             layout=Layout(gpus=8))
    assert p.layout.pp == 1
    reason = _reason(p)
    assert "TP 2, PP 2, DP 2, predicted at" in reason and STAGES_RULE in reason


def test_the_gpus_asked_follow_the_same_rule() -> None:
    """With --gpus 8: TP 4 x DP 2 (no stages), not TP 2 x PP 2 x DP 2 (predicted 3.5% faster at twice the TTFT
    before stop58 qa22; no faster since)."""
    p = plan(load_model("deepseek-r1"), Workload(task="inference", **R1_LONG), gpu=get_gpu("b300"),
             layout=Layout(gpus=8))
    assert (p.layout.tp, p.layout.pp, p.layout.dp) == (4, 1, 2)


def test_stages_stay_where_tp_alone_holds_nothing() -> None:
    """Llama 3.1 405B in bf16 (810 GB of weights) needs more than one 8 x H100 server: TP 8 x PP 2 over two, the
    line saying the stages are there as TP alone holds nothing."""
    p = plan(load_model("llama-3.1-405b"),
             Workload(task="inference", prompt_tokens=8000, output_tokens=500, concurrency=64), gpu=get_gpu("h100"))
    assert (p.layout.gpus, p.layout.tp, p.layout.pp) == (16, 8, 2)
    assert "as no layout of TP alone holds them" in _reason(p)


def test_pcie_servers_keep_stages_ranked_by_speed() -> None:
    """L40S (PCIe only): Llama 3.1 70B for 64 users of 8,000 + 500 tokens stays TP 2 x PP 4 on 8 GPUs, as
    TensorRT-LLM's own L40S runs stage it (rows PL4S-RTXTP4PP2-*), with no word of the NVLink rule."""
    p = plan(load_model("llama-3.1-70b"),
             Workload(task="inference", prompt_tokens=8000, output_tokens=500, concurrency=64), gpu=get_gpu("l40s"))
    assert (p.layout.gpus, p.layout.tp, p.layout.pp) == (8, 2, 4)
    assert STAGES_RULE not in _reason(p)


def test_a_pp_given_is_planned_as_given() -> None:
    p = plan(load_model("deepseek-r1"), Workload(task="inference", **R1_LONG), gpu=get_gpu("b200"),
             layout=Layout(gpus=8, tp=2, pp=4))
    assert (p.layout.tp, p.layout.pp, p.layout.dp) == (2, 4, 1)


@pytest.mark.parametrize("shape_id", ["b300-8x-bm", "mi355x-8x-bm"])
def test_recommends_pick_is_plans_choice_on_the_same_gpus(shape_id: str) -> None:
    """The sweep's best configuration on one 8-GPU server under the rule is the layout plan chooses on those 8 GPUs
    (TP 4 x DP 2)."""
    model = load_model("deepseek-r1")
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1) if s.id == shape_id)
    result = sweep(model, shapes, SweepSpec(workload=Workload(task="inference", **R1_LONG),
                                            weights=("fp8-block128x128",)))
    usable = np.asarray(result.columns["fits"], dtype=bool)
    (best,) = best_serving_per_group(result, usable).values()
    row = result.row(best)
    p = plan(model, Workload(task="inference", **R1_LONG), gpu=shapes[0].gpu, layout=Layout(gpus=8))
    assert (row["tp"], row["pp"], row["dp"]) == (p.layout.tp, p.layout.pp, p.layout.dp) == (4, 1, 2)
