"""An interleaved pipeline's first rank holds ``1 + (p-1)/(p·m)`` times the activations of 1F1B (Korthikanti et al.
2022, section 4.2.3), ``m`` the micro-batches a step runs. The memory reads the same ``m`` the speed estimate times
and the plan's "global batch timed" line states (speed.pipeline.step_microbatches): where the default global batch is
not a whole number of micro-batches for the layout it is rounded up, never down.
"""

from __future__ import annotations

import math

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.global_batch import BATCH_TIMED_LABEL
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.pipeline import step_microbatches

# Llama 3.1 70B, 64k-token sequences, TP 8 x PP 4 x DP 9 on 288 H100s, default batch (4,194,304 tokens): a round of
# DP 9 x 1 x 65,536 = 589,824 tokens goes 7.1 times into it, so the step is timed with 8 micro-batches (4,718,592
# tokens); counting 7 had planned the interleaved first stage at (1 + 3/28) in place of (1 + 3/32) of 1F1B's
# activations, 166 MiB a GPU more than the step it times holds.
MODEL, SEQ_TOKENS, PP, DP = "llama-3.1-70b", 65_536, 4, 9


def _plan(virtual_stages: int | None):  # type: ignore[no-untyped-def]
    return plan(load_model(MODEL), Workload(task="train", seq_tokens=SEQ_TOKENS, recompute="full"),
                layout=Layout(gpus=8 * PP * DP, tp=8, pp=PP, dp=DP, zero=1, virtual_stages=virtual_stages),
                gpu=get_gpu("h100-sxm"), suggest=False, choose_layout=False)


def test_default_batch_rounded_up_to_whole_micro_batches_sizes_the_interleaved_activations() -> None:
    one_f_one_b, interleaved = _plan(None), _plan(2)
    perf = plan_performance(interleaved)
    timed = perf["microbatches"]
    assert timed == step_microbatches(None, dp=DP, micro_batch=1, seq_tokens=SEQ_TOKENS) == 8
    assert any(line.startswith(BATCH_TIMED_LABEL) and "= 8 micro-batches" in line for line in perf["assumptions"])
    base = one_f_one_b.per_gpu.activations_bytes
    assert interleaved.per_gpu.activations_bytes == math.ceil(base * (1 + (PP - 1) / (PP * timed)))
    # what rounding the default batch down (7 micro-batches) had planned: 166 MiB a GPU more
    floor_bytes = math.ceil(base * (1 + (PP - 1) / (PP * 7)))
    assert 165 * 2**20 < floor_bytes - interleaved.per_gpu.activations_bytes < 167 * 2**20
