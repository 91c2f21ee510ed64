"""A paged engine's saturation counts each sequence at its average cached length (prompt + half the output), so it
runs more sequences than fit at their full length; ``plan --concurrency N`` sizes every sequence at its full prompt +
output. A user who read "saturation = 2,632 sequences" for Mixtral-8x22B on 8 H200 (attention DP) and asked for 2,632
was told it does not fit (a stop-49 ladder check). The plan now gives both: ``saturation_full_length_concurrency`` is
the most sequences a plan at a named concurrency holds, which these tests find by asking plan itself."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from cli_runner import run

CASES = [
    ("llama-3.1-8b", "h100", Layout(gpus=1)),  # memory-bound: 326 of 362
    ("llama-3.1-70b", "h100", Layout(gpus=8, tp=8)),  # the engine's 1,024 cap binds the average, memory the full
    ("mixtral-8x22b", "h200", Layout(gpus=8, tp=1, dp=8, ep=8)),  # attention DP: 8 replicas
    ("qwen2.5-vl-7b", "l40s", Layout(gpus=1)),  # an image a request, held by no sequence's cache
    ("jamba-1.5-mini", "h100", Layout(gpus=2, tp=2)),  # a recurrent state a sequence; the 1,024 cap binds both
]


def _most_planned(model: str, gpu: str, layout: Layout, start: int) -> int:
    """The largest N for which plan at concurrency N fits, by bisection from ``start`` (which must not fit)."""
    m, g = load_model(model), get_gpu(gpu)
    low, high = 1, start
    assert not plan(m, Workload(task="inference", concurrency=high), layout=layout, gpu=g).fits
    while low + 1 < high:
        mid = (low + high) // 2
        if plan(m, Workload(task="inference", concurrency=mid), layout=layout, gpu=g).fits:
            low = mid
        else:
            high = mid
    return low


@pytest.mark.parametrize(("model", "gpu", "layout"), CASES)
def test_the_full_length_count_is_the_most_a_named_concurrency_plans(model: str, gpu: str, layout: Layout) -> None:
    perf = plan_performance(plan(load_model(model), Workload(task="inference"), layout=layout, gpu=get_gpu(gpu)))
    sat, full = perf["saturation_concurrency"], perf["saturation_full_length_concurrency"]
    assert 1 <= full <= sat
    # at most the engine's cap (replicas x max_num_seqs), as saturation is: a plan at a named concurrency past it
    # sizes its memory for the sequences running (the cap's), the rest of the users queueing with no KV cache
    # (planner.serving_queue), so where the cap binds the full length too, every count past it fits
    past = plan(load_model(model), Workload(task="inference", concurrency=4 * sat + 4), layout=layout,
                gpu=get_gpu(gpu))
    if past.fits:
        assert full == sat == (past.workload.max_num_seqs or 0) * past.layout.dp
    else:
        assert full == min(sat, _most_planned(model, gpu, layout, 4 * sat + 4))


def test_the_cli_says_both_where_they_differ(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "mixtral-8x22b", "--gpu", "h200", "--gpus", "8", "--tp", "1", "--dp", "8", "--ep", "8")
    out = " ".join(out.split())  # Rich wraps the line
    assert code == 0 and "saturation = 2,632 sequences at once" in out
    assert "2,368 hold their full length, the most --concurrency N plans" in out
