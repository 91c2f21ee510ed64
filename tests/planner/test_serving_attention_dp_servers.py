"""Attention data parallelism over several servers: the one-server engine run on each, ``--tp T --dp n*k/T --ep k``
on ``n * k`` GPUs (EP one server's ``k``: ``n`` independent engines, the users split between them). DeepSeek-V3 for
4,096 users of the default request on H200: one server's attention DP holds 2,400 of them (TP 1 x DP 8 x EP 8), so
before, the fewest GPUs that held them were 40 (TP 2 x PP 5 x DP 4, 21,930 tok/s); two copies of that engine hold
them on 16 GPUs. The plan states the split in its assumptions, and its launch is the one-server command run on each
server behind a load balancer."""

from __future__ import annotations

import shlex

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.recipes import build_recipe

H200 = get_gpu("h200")
V3 = load_model("deepseek-v3")
FP8 = PrecisionPlan(weights="fp8-block128x128")


def _split(p) -> tuple[int, int, int, int, int]:  # type: ignore[no-untyped-def]
    lay = p.layout
    return lay.gpus, lay.tp, lay.pp, lay.dp, lay.ep


def _words(command: str) -> list[str]:
    return shlex.split(command.replace("\\\n", " "))


def test_without_a_gpu_count_two_servers_of_the_one_server_engine_hold_the_users() -> None:
    chosen = plan(V3, Workload(task="inference", concurrency=4096), gpu=H200)
    assert _split(chosen) == (16, 1, 1, 16, 8) and chosen.fits
    assert chosen.layout.attention_dp_groups == 2 and chosen.layout.attention_dp_ranks == 8
    reason = next(a for a in chosen.assumptions if a.startswith("Layout chosen: 16 GPUs"))
    assert "attention data parallelism in 2 independent engines of 8 GPUs" in reason
    assert any(a.startswith("Attention data parallelism in 2 independent engines, each 8 replicas of TP 1")
               for a in chosen.assumptions)
    assert any(w.code == "attention_dp_replicas" and "2 independent engines of 8 GPUs" in w.message
               for w in chosen.warnings)


def test_two_engines_are_one_engine_twice() -> None:
    """The same per-GPU memory and step as the one-server engine with half the users: twice its tokens a second, on
    vLLM and on SGLang (whose settings follow one engine's DP attention group, not the sixteen replicas)."""
    for engine in ("vllm", "sglang"):
        one = plan(V3, Workload(task="inference", concurrency=1024, engine=engine), precision=FP8,
                   layout=Layout(gpus=8, tp=1, dp=8, ep=8), gpu=H200)
        two = plan(V3, Workload(task="inference", concurrency=2048, engine=engine), precision=FP8,
                   layout=Layout(gpus=16, tp=1, dp=16, ep=8), gpu=H200)
        assert two.per_gpu == one.per_gpu and two.budget_bytes == one.budget_bytes
        assert two.max_concurrency == 2 * one.max_concurrency
        speed_one, speed_two = plan_performance(one), plan_performance(two)
        assert speed_two["tpot_s"] == speed_one["tpot_s"]
        assert abs(speed_two["output_tokens_per_s"] / speed_one["output_tokens_per_s"] - 2) < 1e-9


def test_on_16_gpus_asked_the_engines_are_among_the_layouts_tried() -> None:
    """--gpus 16 at 1,024 users: of the 10 layouts that hold them (TP 8 x PP 2 first, its narrower splits last), the
    two engines of TP 4 attention replicas (11,237 tok/s) are predicted more than the layout margin faster than
    TP 8 x PP 2 (9,279) and chosen; at 4,096 users only the engines of TP 1 attention replicas hold them."""
    few = plan(V3, Workload(task="inference", concurrency=1024), layout=Layout(gpus=16), gpu=H200)
    reason = next(a for a in few.assumptions if a.startswith("Layout chosen on the 16 GPUs asked"))
    assert "of the 10 layouts on them that hold 1,024 sequences, the fastest" in reason
    assert _split(few) == (16, 4, 1, 4, 8)
    many = plan(V3, Workload(task="inference", concurrency=4096), layout=Layout(gpus=16), gpu=H200)
    assert _split(many) == (16, 1, 1, 16, 8) and many.fits


def test_each_server_runs_the_one_server_launch() -> None:
    p = plan(V3, Workload(task="inference", concurrency=1024), precision=FP8,
             layout=Layout(gpus=16, tp=4, dp=4, ep=8), gpu=H200)
    vllm = build_recipe(p, "vllm")
    words = _words(vllm.command)
    assert words[words.index("--tensor-parallel-size") + 1] == "4"
    assert words[words.index("--data-parallel-size") + 1] == "2" and "--enable-expert-parallel" in words
    assert any("run this command on each of the 2 servers and put a load balancer in front" in a
               for a in vllm.assumptions)
    sglang = _words(build_recipe(p, "sglang").command)
    assert sglang[sglang.index("--tp-size") + 1] == "8" and sglang[sglang.index("--dp-size") + 1] == "2"
    assert sglang[sglang.index("--ep-size") + 1] == "8"
    trt = plan(V3, Workload(task="inference", concurrency=1024, engine="trtllm"), precision=FP8,
               layout=Layout(gpus=16, tp=1, dp=16, ep=8), gpu=H200)
    words = _words(build_recipe(trt, "trtllm").command)
    assert words[words.index("--tp_size") + 1] == "8" and words[words.index("--ep_size") + 1] == "8"


def test_what_would_fit_offers_one_servers_engine_on_each_server() -> None:
    """TP 8 x DP 2 on 16 H200 does not hold 4,096 users (each TP 8 rank keeps the whole MLA cache); the suggestion is
    the several-server attention-DP layout, which the chooser also picks for them, and it fits as suggested."""
    p = plan(V3, Workload(concurrency=4096), precision=FP8, layout=Layout(gpus=16, tp=8, dp=2), gpu=H200)
    assert not p.fits
    hit = next(s for s in p.suggestions if s.change == "--tp 1 --dp 16 --ep 8")
    assert hit.headroom_bytes > 0 and hit.gpus == 16
