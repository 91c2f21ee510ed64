"""Serving without a layout: the fewest GPUs that hold the requested concurrency, and on that many, replicas (DP) of
the smallest split that holds its share - as serving is deployed (a model is split only as far as its weights and
its share of the sequences need; copies serve the rest). Before, every chosen layout was one replica: TP inside a
server, then PP across servers (gpt-oss-20b for 100,000 users: TP 8 x PP 8 over 64 H100s)."""

from __future__ import annotations

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance

H100 = get_gpu("h100")


def _reason(p) -> str:  # type: ignore[no-untyped-def]
    return next(a for a in p.assumptions if a.startswith("Layout chosen"))


def test_a_small_model_for_very_many_users_is_served_by_replicas() -> None:
    model = load_model("gpt-oss-20b")
    w = Workload(task="inference", concurrency=100_000)
    chosen = plan(model, w, gpu=H100)
    lay = chosen.layout
    assert chosen.fits and lay.tp == 1 and lay.pp == 1 and lay.dp == lay.gpus > 1
    assert f"DP {lay.dp}: {lay.dp} replicas" in _reason(chosen)
    # the same GPUs as one replica split TP x PP hold the sequences too, but serve them more slowly
    one = plan(model, w, gpu=H100, layout=Layout(gpus=lay.gpus, tp=8, pp=lay.gpus // 8, dp=1))
    assert one.fits
    assert (plan_performance(chosen)["max_output_tokens_per_s"]
            > plan_performance(one)["max_output_tokens_per_s"])


def test_each_replica_is_split_only_as_far_as_its_share_needs() -> None:
    """Llama 3.1 8B for 1,000 users at 8k: 16 H100s as 4 replicas of TP 4; TP 1 or TP 2 replicas on 16 GPUs would
    leave too little memory for each GPU's share of the cache (the weights take more per GPU)."""
    model = load_model("llama-3.1-8b")
    w = Workload(task="inference", context_tokens=8192, concurrency=1000)
    chosen = plan(model, w, gpu=H100)
    lay = chosen.layout
    assert chosen.fits and lay.dp is not None and lay.dp > 1 and lay.tp * lay.pp * lay.dp == lay.gpus
    for tp in (1, 2, 4, 8):
        if tp >= lay.tp:
            break
        smaller = plan(model, w, gpu=H100, layout=Layout(gpus=lay.gpus, tp=tp, pp=1, dp=lay.gpus // tp))
        assert not smaller.fits, tp


def test_a_model_that_needs_the_split_keeps_one_replica() -> None:
    chosen = plan(load_model("llama-3.1-70b"), Workload(task="inference", context_tokens=8192, concurrency=32),
                  gpu=H100)
    assert (chosen.layout.gpus, chosen.layout.tp, chosen.layout.pp, chosen.layout.dp) == (4, 4, 1, 1)
    assert "replicas" not in _reason(chosen)


def test_a_replica_holds_no_more_sequences_than_its_engine_runs_at_once() -> None:
    """vLLM runs at most max_num_seqs sequences a replica (1,024 by default on an H100, vLLM arg_utils): gpt-oss-20b
    for 100,000 users was 64 one-GPU replicas, whose memory holds 1,563 each, so 34,464 users waited in the engines'
    queues. Now a replica's share stays within the cap: ceil(100,000 / 1,024) = 98 replicas, taken as 13 whole
    servers, and every user runs at once."""
    model = load_model("gpt-oss-20b")
    chosen = plan(model, Workload(task="inference", concurrency=100_000), gpu=H100)
    lay = chosen.layout
    assert chosen.fits and lay.dp is not None and lay.dp * 1024 >= 100_000 and lay.gpus % 8 == 0
    assert lay.gpus - 8 < 98 * lay.tp * lay.pp  # the fewest whole servers that give 98 replicas
    perf = plan_performance(chosen)
    assert not any("wait in the engine's queue" in a for a in perf["assumptions"])
    assert "at most 1,024 a replica, the engine's max_num_seqs" in _reason(chosen)


def test_a_raised_engine_cap_lets_each_replica_run_more(capsys) -> None:  # type: ignore[no-untyped-def]
    """--max-num-seqs (vLLM's max_num_seqs) is the cap the chooser respects: at 2,048 a replica, 100,000 gpt-oss-20b
    users need fewer H100s than at the default 1,024; a cap above the engine's token budget is refused in one line,
    as vLLM refuses to start (SchedulerConfig: max_num_batched_tokens must be at least max_num_seqs)."""
    from cli_runner import run, run_json

    default = run_json(capsys, "plan", "gpt-oss-20b", "--gpu", "h100", "--concurrency", "100000")["layout"]["gpus"]
    raised = run_json(capsys, "plan", "gpt-oss-20b", "--gpu", "h100", "--concurrency", "100000",
                      "--max-num-seqs", "2048")
    assert raised["layout"]["gpus"] < default
    assert raised["layout"]["dp"] * 2048 >= 100_000
    code, _, err = run(capsys, "plan", "gpt-oss-20b", "--gpu", "h100", "--concurrency", "9000", "--max-num-seqs",
                       "9000", "--max-num-batched-tokens", "8192")
    assert code == 2 and "max-num-seqs 9,000 exceeds max-num-batched-tokens 8,192" in err
    # given alone, a cap above the default budget raises the budget with it, as vLLM needs
    alone = run_json(capsys, "plan", "gpt-oss-20b", "--gpu", "h100", "--gpus", "8", "--concurrency", "9000",
                     "--max-num-seqs", "9000")
    assert any("max_num_batched_tokens 9000, max_num_seqs 9000" in a for a in alone["assumptions"])


def test_on_the_gpus_asked_the_layout_that_serves_the_users_fastest() -> None:
    """``--gpus 8`` alone: the default (TP 8) unless another layout on those GPUs that holds the users serves them
    faster by more than the calibration's layout margin (its scale-up class's between layouts on NVLink). Llama 3.1 8B for 1,000 users on 8 H100s
    is 8 replicas (TP 8 emits less: every GPU all-reduces for all 1,000); for one user TP 8 stays."""
    model = load_model("llama-3.1-8b")
    many = Workload(task="inference", concurrency=1000)
    chosen = plan(model, many, layout=Layout(gpus=8), gpu=H100)
    assert (chosen.layout.tp, chosen.layout.dp) == (1, 8) and chosen.fits
    tp8 = plan(model, many, layout=Layout(gpus=8, tp=8), gpu=H100)
    fast, slow = (plan_performance(p)["output_tokens_per_s"] for p in (chosen, tp8))
    assert fast > slow * (1 + calibration().layout_margin_of("scale-up"))
    assert f"the default, TP 8, serves them at {slow:,.0f}" in _reason(chosen)
    one = plan(model, Workload(task="inference"), layout=Layout(gpus=8), gpu=H100)
    assert (one.layout.tp, one.layout.dp) == (8, 1)
    assert not any(a.startswith("Layout chosen") for a in one.assumptions)
