"""Issue 11, serving side: ``--gpus N --tp T`` (no ``--pp``, no ``--dp``) keeps the TP exactly; the rest of the GPUs
are replicas where those hold the requested concurrency (unchanged), and where they do not, the planner adds pipeline
stages around the TP with the serving chooser's ranking and margins and says so in its "Layout chosen" line
(speed/serving_given_tp.py). Before (main at ce82c34), ``plan llama-3.1-70b --gpu h100 --gpus 8 --tp 2
--concurrency 64`` planned TP 2 x DP 4, DOES NOT FIT at 74.90 GiB a GPU of the 71.26 GiB vLLM budget, its "What
would fit" offering ``--tp 2 --pp 4``."""

from __future__ import annotations

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance

H100 = get_gpu("h100")


def _chosen(p) -> list[str]:  # type: ignore[no-untyped-def]
    return [a for a in p.assumptions if a.startswith("Layout chosen")]


def _tok_s(p) -> float:  # type: ignore[no-untyped-def]
    return float(plan_performance(p)["output_tokens_per_s"])


def test_a_tp_whose_replicas_do_not_fit_gets_pipeline_stages() -> None:
    model, w = load_model("llama-3.1-70b"), Workload(task="inference", concurrency=64)
    p = plan(model, w, gpu=H100, layout=Layout(gpus=8, tp=2))
    assert p.fits and (p.layout.tp, p.layout.pp, p.layout.dp) == (2, 2, 2)
    (line,) = _chosen(p)
    assert "--tp 2 kept as given, 2 pipeline stages added" in line
    # why: the replicas as given, their memory (the figure the plan as given shows)
    replicas = plan(model, w, gpu=H100, layout=Layout(gpus=8, tp=2, pp=1))
    assert not replicas.fits and "TP 2 as 4 replicas does not hold 64 sequences (it needs 74.90 GiB a GPU" in line
    # the chooser's rule: the fewest stages unless more are predicted faster by more than the scale-up margin
    deeper = plan(model, w, gpu=H100, layout=Layout(gpus=8, tp=2, pp=4))
    assert deeper.fits and _tok_s(deeper) <= _tok_s(p) * (1 + calibration().layout_margin_of("scale-up"))


def test_replicas_that_hold_the_users_are_kept_with_no_line() -> None:
    """README: ``--gpus 8 --tp 4`` for a 70B is two TP 4 engines; nothing chosen, so no "Layout chosen" line."""
    p = plan(load_model("llama-3.1-70b"), Workload(task="inference"), gpu=H100, layout=Layout(gpus=8, tp=4))
    assert (p.layout.tp, p.layout.pp, p.layout.dp) == (4, 1, 2) and p.fits and not _chosen(p)


def test_tp_with_pp_or_dp_given_is_planned_as_given() -> None:
    model, w = load_model("llama-3.1-70b"), Workload(task="inference", concurrency=64)
    for given in (Layout(gpus=8, tp=2, pp=1), Layout(gpus=8, tp=2, dp=4)):
        p = plan(model, w, gpu=H100, layout=given)
        assert (p.layout.tp, p.layout.pp, p.layout.dp) == (2, 1, 4) and not p.fits and not _chosen(p)
        assert any(s.change == "--tp 2 --pp 4" for s in p.suggestions)  # "What would fit" still offers stages


def test_a_given_ep_inside_tp_is_kept_with_the_stages() -> None:
    """Qwen3-235B-A22B in bf16 on 8 H100 as TP 4 x EP 4 replicas needs 117.50 GiB a GPU; with 2 stages of TP 4 x EP
    4 (vLLM ``--tensor-parallel-size 4 --pipeline-parallel-size 2 --enable-expert-parallel``) 62.76 GiB."""
    p = plan(load_model("qwen3-235b-a22b"), Workload(task="inference", concurrency=64), gpu=H100,
             layout=Layout(gpus=8, tp=4, ep=4))
    assert p.fits and (p.layout.tp, p.layout.pp, p.layout.dp, p.layout.ep) == (4, 2, 1, 4)
    assert "--tp 4 --ep 4 kept as given, 2 pipeline stages added" in _chosen(p)[0]


def test_attention_data_parallelism_given_gets_no_stages() -> None:
    """EP wider than TP (attention data parallelism) runs one stage in the chooser: the plan stays as given."""
    p = plan(load_model("qwen3-235b-a22b"), Workload(task="inference", concurrency=64), gpu=H100,
             layout=Layout(gpus=8, tp=1, ep=8))
    assert (p.layout.tp, p.layout.pp, p.layout.dp, p.layout.ep) == (1, 1, 8, 8) and not p.fits and not _chosen(p)
