"""Stop 57 (branch closest): where no training layout fits the GPUs given, ``plan`` showed the unsplit layout (Llama
3.1 405B on 64 H100: TP 1 · PP 1 · DP 64, "needs 6.33 TiB ... short by 6.25 TiB"). It now plans the closest layout
the chooser tried on those GPUs (least memory per GPU) and says so, and "What would fit" offers the optimizer state
in host memory on the same GPUs, with the layout ``plan --gpus 64 --offload optimizer`` chooses around it.

Figures: the plans themselves (each compared with another plan of the same model and GPUs), not pinned numbers; the
one bound, short by less than 30 GiB, is 16 bytes a parameter of mixed-precision AdamW (ZeRO's 2 + 2 + 12) over 64
GPUs, 405.9e9 x 16 / 64 = 94.5 GiB of model states, against the 79.18 GiB an H100 gives (the plan's budget)."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.inputs import Layout, Workload
from anchorgpu.planner.plan import plan
from cli_runner import run, run_json

GIB = 2**30
ARGS = ("plan", "llama-3.1-405b", "--task", "train", "--gpu", "h100", "--gpus", "64")


@pytest.fixture(scope="module")
def closest():  # type: ignore[no-untyped-def]
    return plan(load_model("llama-3.1-405b"), Workload(task="train"), gpu=get_gpu("h100"), layout=Layout(gpus=64))


def test_the_plan_shows_the_closest_layout_on_the_gpus_given(closest) -> None:  # type: ignore[no-untyped-def]
    p = closest
    assert p.fits is False and p.layout.gpus == 64
    assert (p.layout.tp, p.layout.pp, p.layout.dp) != (1, 1, 64) or p.layout.zero > 0  # not the unsplit DP 64
    assert p.headroom_bytes is not None and -30 * GIB < p.headroom_bytes < 0, p.headroom_bytes / GIB
    said = " ".join(p.assumptions)
    assert "No layout tried fits 64 NVIDIA H100 SXM 80GB" in said and "the closest is planned" in said, said
    assert f"short by {(-p.headroom_bytes) / GIB:.2f} GiB per GPU" in said, said
    assert "planned as plain data parallelism" not in said


@pytest.mark.parametrize("layout, recompute", [
    (Layout(gpus=64, dp=64, zero=3), "full"),  # FSDP over all 64 with full recompute
    (Layout(gpus=64, tp=8, pp=8, dp=1, zero=1), "full"),  # TP 8 x PP 8 with the distributed optimizer
    (Layout(gpus=64, dp=64, zero=0), "none"),  # what main showed
])
def test_no_other_layout_of_the_64_needs_less(closest, layout: Layout, recompute: str) -> None:  # type: ignore[no-untyped-def]
    other = plan(load_model("llama-3.1-405b"), Workload(task="train", recompute=recompute, micro_batch=1),
                 gpu=get_gpu("h100"), layout=layout, suggest=False)
    assert other.fits is False
    assert closest.per_gpu.total_bytes <= other.per_gpu.total_bytes


def test_what_would_fit_offers_offload_on_the_same_gpus_as_plan_answers_it(closest) -> None:  # type: ignore[no-untyped-def]
    rows = {s.change: s for s in closest.suggestions}
    offload = rows["--offload optimizer"]
    assert offload.gpus == 64 and offload.headroom_bytes >= 0
    asked = plan(load_model("llama-3.1-405b"), Workload(task="train"), gpu=get_gpu("h100"),
                 layout=Layout(gpus=64, offload="optimizer"))
    assert asked.fits and asked.layout.offload == "optimizer"
    assert offload.total_bytes == asked.per_gpu.total_bytes  # the layout `plan --gpus 64 --offload optimizer` chooses
    assert any(s.gpus > 64 for s in closest.suggestions)  # more GPUs still offered


def test_cli_exit_code_and_json_keys_are_kept(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *ARGS)
    assert code == 0, err  # a plan that does not fit is an answer (as on main)
    assert "Layout TP 1 · PP 1 · DP 64 ·" not in out and "short by 6.25 TiB" not in out
    doc = run_json(capsys, *ARGS)
    assert {"layout", "fits", "headroom_bytes", "suggestions", "assumptions", "per_gpu"} <= set(doc)
    assert doc["fits"] is False and doc["layout"]["gpus"] == 64 and doc["layout"]["zero"] > 0


def test_a_split_the_user_fixed_is_planned_as_given() -> None:  # control: nothing to choose but recompute
    p = plan(load_model("llama-3.1-8b"), Workload(task="train"), gpu=get_gpu("h100"),
             layout=Layout(gpus=8, dp=8, zero=0))
    assert p.fits is False and p.workload.recompute == "none"
    assert not any("the closest is planned" in line for line in p.assumptions)


def test_serving_already_shards_over_the_gpus_given(capsys: pytest.CaptureFixture[str]) -> None:  # control
    doc = run_json(capsys, "plan", "llama-3.1-405b", "--gpu", "l40s", "--gpus", "2")
    assert doc["fits"] is False and doc["layout"]["tp"] * doc["layout"]["pp"] == 2
