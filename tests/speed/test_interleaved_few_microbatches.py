"""An interleaved pipeline with few micro-batches a step. The bubble was Narayanan et al.'s ``(p-1)/v`` stage times
for every ``m``, so ``plan llama-3.1-8b --task train --gpu h100 --gpus 64 --global-batch 4096 --seq 4096`` chose
TP 8 x PP 8 (v 4) with one micro-batch a step and a 0.0295 s step, when one micro-batch through the ``p * v``
chunks in turn takes ``p`` stage times whatever ``v`` is; and Megatron-Core refuses that schedule anyway (its
interleaved schedule needs the micro-batches a multiple of the pipeline size with the default group)."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.pipeline import interleaving_refusal, pipeline_bubble_stage_times
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step
from cli_runner import run

ISSUE = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "64", "--global-batch", "4096",
         "--seq", "4096")


def _schedule_order(p: int, v: int, m: int, group: int, rank: int) -> list[tuple[str, int, int]]:
    """One rank's operations as Megatron-Core's interleaved schedule orders them (schedules.py: get_schedule_table,
    get_pp_rank_microbatches): warm-up forwards, then a forward and a backward in turn, then the cool-down backwards."""
    table: list[tuple[int, int]] = []
    for lo in range(0, m, group):
        hi = m if lo + group >= m else lo + group
        table += [(j, c) for c in range(v) for j in range(lo, hi)]
    total = m * v
    warm = min(total, 2 * (p - rank - 1) + (v - 1) * group) if v > 1 else min(total, p - rank - 1)
    fwd = [("F", j, c) for j, c in table]
    bwd = [("B", j, v - 1 - c) for j, c in table]
    out = fwd[:warm]
    for i in range(total - warm):
        out += [fwd[warm + i], bwd[i]]
    return out + bwd[total - warm:]


def _simulated_step_stage_times(p: int, v: int, m: int, group: int, fwd_s: float, bwd_s: float) -> float:
    """That order timed: each operation waits for its rank's previous one and for its input from the neighbouring
    chunk (chunk ``c`` of rank ``r`` is position ``c * p + r`` of the model); in stage times, ``v * (fwd + bwd)``."""
    orders = [_schedule_order(p, v, m, group, r) for r in range(p)]
    done: dict[tuple[str, int, int], float] = {}
    pos, free, last = [0] * p, [0.0] * p, p * v - 1
    moved = True
    while moved:
        moved = False
        for r in range(p):
            while pos[r] < len(orders[r]):
                kind, j, c = orders[r][pos[r]]
                k = c * p + r
                dep = ((0.0 if k == 0 else done.get(("F", j, k - 1))) if kind == "F"
                       else done.get(("F", j, last)) if k == last else done.get(("B", j, k + 1)))
                if dep is None:
                    break
                free[r] = done[(kind, j, k)] = max(dep, free[r]) + (fwd_s if kind == "F" else bwd_s)
                pos[r] += 1
                moved = True
    assert all(pos[r] == len(orders[r]) for r in range(p))
    return max(done.values()) / (v * (fwd_s + bwd_s))


@pytest.mark.parametrize(("fwd_s", "bwd_s"), [(1.0, 2.0), (1.0, 1.0), (1.0, 3.0)])
@pytest.mark.parametrize("p", [2, 4, 8])
@pytest.mark.parametrize("v", [1, 2, 3, 4])
def test_the_bubble_is_the_schedules(p: int, v: int, fwd_s: float, bwd_s: float) -> None:
    """For every m up to 3p: Megatron-Core's default groups of p where it runs them (m a multiple of p), one group of
    all m otherwise (m < p: what PyTorch's interleaved 1F1B runs as one round)."""
    for m in range(1, 3 * p + 1):
        group = p if m % p == 0 else m
        simulated = _simulated_step_stage_times(p, v, m, group, fwd_s, bwd_s)
        assert simulated == pytest.approx(m + pipeline_bubble_stage_times(p, m, v)), (p, v, m)


def test_the_bubble_reduces_to_the_paper_and_to_p_stage_times() -> None:
    for p in (2, 4, 8, 16):
        for v in (1, 2, 4, 8):
            assert pipeline_bubble_stage_times(p, 4 * p, v) == pytest.approx((p - 1) / v)
            assert 1 + pipeline_bubble_stage_times(p, 1, v) == pytest.approx(p)  # one micro-batch: p stage times


def test_megatron_refuses_interleaving_with_fewer_micro_batches_than_stages_or_a_remainder() -> None:
    assert interleaving_refusal(8, 4, 1, "megatron") is not None
    assert interleaving_refusal(8, 4, 12, "megatron") is not None
    assert interleaving_refusal(8, 4, 24, "megatron") is None
    assert interleaving_refusal(8, 1, 1, "megatron") is None
    assert interleaving_refusal(8, 4, 1, "pytorch") is None  # one round of one micro-batch


def test_the_step_of_one_micro_batch_is_p_stage_times_whatever_v() -> None:
    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100")
    steps = {}
    for v in (1, 2, 4):
        st = training_step(model, gpu, TrainLayout(gpus=64, tp=8, pp=8, virtual_stages=v), seq_tokens=4096,
                           global_batch_tokens=4096, train_stack="pytorch")
        b = st.breakdown_s
        stage_s = (b["compute"] + b["tp_comm"] + b["cp_comm"] + b["ep_alltoall"] + b["moe_launch"] + b["fsdp_comm"]
                   + b["activation_offload"])
        assert b["pp_bubble"] == pytest.approx(7 * stage_s)
        steps[v] = st.step_s
    assert steps[1] == pytest.approx(steps[2]) == pytest.approx(steps[4])


def test_training_step_refuses_what_megatron_refuses() -> None:
    with pytest.raises(InvalidWorkload, match="--virtual-stages 4 with PP 8 and 1 micro-batch a step: Megatron-Core"):
        training_step(load_model("llama-3.1-8b"), get_gpu("h100"), TrainLayout(gpus=64, tp=8, pp=8, virtual_stages=4),
                      seq_tokens=4096, global_batch_tokens=4096)


def test_the_issue_plan_chooses_no_interleaving_and_times_p_stage_times(capsys: pytest.CaptureFixture[str]) -> None:
    p = plan(load_model("llama-3.1-8b"), Workload(task="train", seq_tokens=4096, global_batch_tokens=4096),
             layout=Layout(gpus=64), gpu=get_gpu("h100"))
    assert (p.layout.pp, p.layout.virtual_stages, p.layout.dp) == (8, 1, 1)
    perf = plan_performance(p)
    b = perf["step_time_breakdown_s"]
    assert b["pp_bubble"] == pytest.approx(7 * (b["compute"] + b["tp_comm"]))
    assert perf["step_time_s"] > 0.07  # 8 stage times of about 0.0101 s, not the 0.0295 s of (p-1)/v
    code, out, _ = run(capsys, *ISSUE)
    assert code == 0 and "PP 8 ·" in out and "(v " not in out.split("\n")[1]


@pytest.mark.parametrize("batch", [4096, 8 * 4096, 12 * 4096, 64 * 4096])
def test_the_chooser_interleaves_only_where_megatron_runs_it(batch: int) -> None:
    p = plan(load_model("llama-3.1-8b"), Workload(task="train", seq_tokens=4096, global_batch_tokens=batch),
             layout=Layout(gpus=64), gpu=get_gpu("h100"))
    m = plan_performance(p)["microbatches"]
    assert interleaving_refusal(p.layout.pp, p.layout.virtual_stages, m, "megatron") is None, (p.layout, m)


def test_an_explicit_virtual_stages_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *ISSUE, "--tp", "8", "--pp", "8", "--virtual-stages", "4")
    assert code == 2
    line = ("--virtual-stages 4 with --pp 8: Megatron-Core interleaves only when the micro-batches a step are a multiple "
            "of the 8 pipeline stages, and --global-batch 4,096 tokens over DP 1 x micro-batch 1 x 4,096 tokens makes 1")
    assert line in " ".join(err.split()) and len(err.strip().splitlines()) <= 3
    code, _, err = run(capsys, *ISSUE, "--virtual-stages", "4")  # the chooser has nothing left to choose from
    assert code == 2 and "--virtual-stages 4: no layout of the 64 GPUs interleaves with this batch" in " ".join(err.split())
    with pytest.raises(InvalidWorkload, match="--virtual-stages 4 with --pp 8"):  # without a GPU too (memory only)
        plan(load_model("llama-3.1-8b"), Workload(task="train", seq_tokens=4096, global_batch_tokens=4096),
             layout=Layout(gpus=64, tp=8, pp=8, virtual_stages=4))


def test_a_run_with_enough_micro_batches_keeps_its_interleaving() -> None:
    p = plan(load_model("llama-3.1-8b"), Workload(task="train", seq_tokens=4096, global_batch_tokens=64 * 4096,
                                                  micro_batch=1, recompute="none"),
             layout=Layout(gpus=64, tp=8, pp=8, dp=1, zero=1, virtual_stages=4), gpu=get_gpu("h100"))
    perf = plan_performance(p)
    b = perf["step_time_breakdown_s"]
    assert perf["microbatches"] == 64
    assert b["pp_bubble"] == pytest.approx(7 / 4 * (b["compute"] + b["tp_comm"]) / 64)
