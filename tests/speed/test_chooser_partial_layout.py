"""Issue 11: "When part of a layout is given, the rest ... is chosen the same way." A layout flag that fixes neither
TP nor PP (``--zero``, ``--fsdp``, ``--dp``, ``--cp``, ``--ep``) holds its own dimension, and the training chooser
searches TP, PP and the other open dimensions around it (speed/layouts.py ``_candidates``). Before, any such flag
kept TP and PP at 1: ``--zero 1`` for a 70B on 64 H100 did not fit (TP 1 x DP 64, 335.31 GiB), where ``--tp 8
--zero 1`` fits (stop 51's "Left" 2, benchmarks/hardening/stop51_qa.md). ``--tp`` alone or ``--pp`` alone now holds
its own dimension the same way, the other searched (with CP, EP, virtual stages, ZeRO, recompute, micro-batch; DP
the rest); before (main at 8532fa4), either fixed the split, the dimensions not given 1. ``--tp`` and ``--pp``
together still fix the split, so plain data parallelism is ``--dp`` over all the GPUs, or ``--tp 1 --pp 1``."""

from __future__ import annotations

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.layout_choice import training_layout_open
from anchorgpu.planner.speed.estimate import plan_performance

H100 = get_gpu("h100")


def _chosen(p) -> str:  # type: ignore[no-untyped-def]
    return next(a for a in p.assumptions if a.startswith("Layout chosen"))


def test_zero_1_alone_gets_a_split_that_fits_and_beats_tp_8() -> None:
    model = load_model("llama-3.1-70b")
    alone = plan(model, Workload(task="train"), gpu=H100, layout=Layout(gpus=64, zero=1))
    tp8 = plan(model, Workload(task="train"), gpu=H100, layout=Layout(gpus=64, tp=8, zero=1))
    assert alone.fits and alone.layout.zero == 1 and alone.layout.tp * alone.layout.pp > 1
    assert "(kept as given: --zero)" in _chosen(alone)
    # the search includes TP 8 x DP 8, so what it picks is at least as fast
    assert plan_performance(alone)["train_tokens_per_s"] >= plan_performance(tp8)["train_tokens_per_s"]
    assert "(kept as given: --tp, --zero)" in _chosen(tp8)  # --tp alone: PP searched around it


def test_the_given_dimensions_are_held_while_the_rest_is_searched() -> None:
    model = load_model("llama-3.1-8b")
    dp4 = plan(model, Workload(task="train"), gpu=H100, layout=Layout(gpus=8, dp=4))
    assert dp4.layout.dp == 4 and dp4.layout.tp * dp4.layout.pp * dp4.layout.cp == 2 and dp4.fits
    cp2 = plan(model, Workload(task="train", seq_tokens=32768), gpu=H100, layout=Layout(gpus=8, cp=2))
    assert cp2.layout.cp == 2 and cp2.fits


def test_plain_data_parallelism_is_asked_with_dp_over_all_the_gpus() -> None:
    """README's "What does FSDP change?": ``--dp 8 --zero 0`` is plain DDP (136.96 GiB on an H100, DOES NOT FIT) and
    ``--dp 8 --fsdp`` fits (59.90 GiB: 59.30 before stop59 fsdpunits counted the embedding unit in the gather
    buffer); ``--zero 0`` alone now splits the model instead and fits, unsharded."""
    model = load_model("llama-3.1-8b")
    ddp = plan(model, Workload(task="train"), gpu=H100, layout=Layout(gpus=8, dp=8, zero=0))
    assert (ddp.layout.tp, ddp.layout.pp, ddp.layout.dp, ddp.fits) == (1, 1, 8, False)
    assert f"{ddp.per_gpu.total_bytes / 2**30:.2f}" == "136.96"
    fsdp = plan(model, Workload(task="train"), gpu=H100, layout=Layout(gpus=8, dp=8, fsdp=True))
    assert fsdp.fits and f"{fsdp.per_gpu.total_bytes / 2**30:.2f}" == "59.90"
    zero0 = plan(model, Workload(task="train"), gpu=H100, layout=Layout(gpus=8, zero=0))
    assert zero0.fits and zero0.layout.zero == 0 and zero0.layout.tp * zero0.layout.pp > 1


def test_the_layout_is_open_until_tp_and_pp_fix_the_split() -> None:
    closed = Workload(task="train", micro_batch=1, recompute="none")
    assert training_layout_open(Layout(gpus=8, zero=1), closed)  # TP and PP left to choose
    assert training_layout_open(Layout(gpus=8, tp=1, zero=1), closed)  # PP left to choose
    assert training_layout_open(Layout(gpus=8, pp=2, zero=1), closed)  # TP (and the chunks) left to choose
    assert not training_layout_open(Layout(gpus=8, tp=1, pp=1, zero=1), closed)  # one candidate: nothing to choose


def test_tp_alone_searches_the_pipeline_stages() -> None:
    """``plan llama-3.1-405b --task train --gpu h100 --gpus 512 --tp 8``: before, TP 8 x PP 1 x DP 64 (ZeRO-3, full
    recompute, 66,820 tok/s); now PP is searched around TP 8 and the faster layout that fits has stages (TP 8 x PP
    16 x DP 4, ZeRO-1, 97,867 tok/s at this commit's calibration). With ``--pp 1`` too the split is the old one."""
    model = load_model("llama-3.1-405b")
    alone = plan(model, Workload(task="train"), gpu=H100, layout=Layout(gpus=512, tp=8))
    fixed = plan(model, Workload(task="train"), gpu=H100, layout=Layout(gpus=512, tp=8, pp=1))
    assert alone.fits and alone.layout.tp == 8 and alone.layout.pp > 1
    assert "(kept as given: --tp)" in _chosen(alone) and "(kept as given: --tp, --pp)" in _chosen(fixed)
    assert (fixed.layout.tp, fixed.layout.pp, fixed.layout.dp) == (8, 1, 64)
    assert plan_performance(alone)["train_tokens_per_s"] > plan_performance(fixed)["train_tokens_per_s"]


def test_pp_alone_searches_tensor_parallelism() -> None:
    """``plan llama-3.1-70b --task train --gpu h100 --gpus 64 --pp 4``: before, TP 1 x PP 4 x DP 16, unsharded (the
    ZeRO stage searched, none fitting), DOES NOT FIT (329.08 GiB a GPU); now TP is searched around PP 4 and a layout
    with TP > 1 fits."""
    p = plan(load_model("llama-3.1-70b"), Workload(task="train"), gpu=H100, layout=Layout(gpus=64, pp=4))
    assert p.fits and p.layout.pp == 4 and p.layout.tp > 1
    assert "(kept as given: --pp)" in _chosen(p)


def test_a_launch_without_stages_still_holds_pp_1_under_tp_alone() -> None:
    """``--recipe torchrun-fsdp`` (and ``accelerate``) runs no pipeline stages (Workload.launch_stages False): ``--tp 8``
    alone searches everything else but PP, held at 1."""
    w = Workload(task="train", launch_stages=False)
    p = plan(load_model("llama-3.1-405b"), w, gpu=H100, layout=Layout(gpus=512, tp=8))
    assert p.fits and (p.layout.tp, p.layout.pp) == (8, 1)


def test_serving_keeps_the_rest_of_a_given_tp_as_replicas() -> None:
    """Serving: ``--tp`` sizes each engine and the GPUs beyond it are replicas (DP), as vLLM's and SGLang's
    data-parallel launches run them, wherever those replicas hold the users; where they do not, pipeline stages are
    added around the TP (tests/speed/test_serving_given_tp.py)."""
    p = plan(load_model("llama-3.1-70b"), Workload(task="inference"), gpu=H100, layout=Layout(gpus=8, tp=4))
    assert (p.layout.tp, p.layout.pp, p.layout.dp) == (4, 1, 2)
