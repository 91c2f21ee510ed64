""""What would fit" offers the smallest vLLM memory fraction that makes a request fit, up to the most vLLM starts
with, and says what it leaves other processes; where none fits, the plan says so instead of offering one.

Figures: the H100 SXM's CUDA total, 85,017,624,576 B (hardware/data/gpus.toml memory_runtime_bytes), less vLLM's
CUDA context (Overheads' default) leaves 0.993 of it free at start-up (planner/engine_startup.py's refusal); the
memory a fraction leaves outside vLLM's budget is the total less ``int(fraction x total)``, as the plan's budget.
"""

from __future__ import annotations

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Overheads, Workload, plan
from anchorgpu.planner.terms import context_bytes
from anchorgpu.units import fmt_bytes

H100 = get_gpu("h100")
MODEL = load_model("gpt-oss-120b")
ONE_GPU = Layout(gpus=1)


def _fraction_suggestions(p) -> list:
    return [s for s in p.suggestions if s.change.startswith("--gpu-memory-utilization")]


def _fits(utilization: float, **workload) -> bool:
    p = plan(MODEL, Workload(task="inference", gpu_memory_utilization=utilization, **workload), gpu=H100,
             layout=ONE_GPU, suggest=False, choose_layout=False)
    return bool(p.fits)


def test_the_smallest_fraction_that_fits_is_offered_with_what_it_leaves() -> None:
    # gpt-oss-120b for 64 users on one H100: short at vLLM's 0.9 and still at the 0.95 once offered
    p = plan(MODEL, Workload(task="inference", concurrency=64), gpu=H100, layout=ONE_GPU, choose_layout=False)
    assert p.fits is False and not _fits(0.95, concurrency=64)
    [s] = _fraction_suggestions(p)
    u = float(s.change.split()[-1])
    assert u == round(u, 2) and 0.95 < u <= 0.993
    assert _fits(u, concurrency=64) and not _fits(round(u - 0.01, 2), concurrency=64)  # the least on the grid
    outside = H100.memory_bytes - int(u * H100.memory_bytes)
    left = outside - context_bytes(H100, Overheads())
    assert fmt_bytes(outside) in s.description and fmt_bytes(left) in s.description and "0.993" in s.description


def test_the_most_vllm_starts_with_is_offered_where_no_two_decimal_fraction_below_it_fits() -> None:
    # 128 users: 0.99 holds too few; 0.993, the most vLLM starts with on an H100, holds them
    p = plan(MODEL, Workload(task="inference", concurrency=128), gpu=H100, layout=ONE_GPU, choose_layout=False)
    assert not _fits(0.99, concurrency=128) and _fits(0.993, concurrency=128)
    assert [s.change for s in _fraction_suggestions(p)] == ["--gpu-memory-utilization 0.993"]


def test_no_fraction_is_offered_where_none_fits_and_the_plan_says_so() -> None:
    # 132 users: short even at 0.993, though by less than the memory vLLM's 0.9 leaves out (a larger fraction looks
    # like the remedy, so the plan says it is not)
    w = dict(concurrency=132)
    p = plan(MODEL, Workload(task="inference", **w), gpu=H100, layout=ONE_GPU, choose_layout=False)
    assert p.fits is False and not _fits(0.993, **w)
    assert p.headroom_bytes is not None and -p.headroom_bytes <= 0.1 * H100.memory_bytes
    assert _fraction_suggestions(p) == []
    [line] = [a for a in p.assumptions if a.startswith("No --gpu-memory-utilization makes this fit")]
    assert "at 0.993, the most vLLM starts with on h100-sxm" in line


def test_no_line_where_not_even_the_whole_gpu_would_hold_it() -> None:
    # a 32,768-token context for each of 64 users: short by more than all the memory the fraction leaves out
    w = dict(concurrency=64, context_tokens=32768)
    p = plan(MODEL, Workload(task="inference", **w), gpu=H100, layout=ONE_GPU, choose_layout=False)
    assert p.fits is False and p.headroom_bytes is not None and -p.headroom_bytes > 0.1 * H100.memory_bytes
    assert _fraction_suggestions(p) == []
    assert not any(a.startswith("No --gpu-memory-utilization") for a in p.assumptions)


def test_sglang_is_offered_no_fraction() -> None:
    # SGLang's mem_fraction_static already leaves only its activations' reserve: no fraction, no line about one
    p = plan(MODEL, Workload(task="inference", concurrency=64, engine="sglang"), gpu=H100, layout=ONE_GPU,
             choose_layout=False)
    assert p.fits is False and p.suggestions
    assert _fraction_suggestions(p) == []
    assert not any(a.startswith("No --gpu-memory-utilization") for a in p.assumptions)
