"""``recommend --task train`` with a small stated global batch offers only layouts that split it, as ``plan`` does.

The training sweep timed each layout at ``max(global batch, DP x micro-batch x sequence)``: with
``--global-batch 4096 --seq 4096`` (one sequence a step) it offered 2 x A100 "TP1 PP1 DP2", which ``plan`` refuses
("--global-batch 4,096: smaller than one micro-batch per data-parallel rank"). A layout with more data-parallel
ranks than the batch has micro-batches is now not runnable for it (``splits_batch``), and an offering and server count
with no such layout is rejected for the batch."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog
from anchorgpu.recommend.eligibility import miss_reason
from anchorgpu.recommend.selection import closest_miss, group_keys
from cli_runner import run, run_json

SEQ = 4096


@pytest.mark.parametrize("sequences", [1, 2])
def test_recommend_offers_only_layouts_that_split_the_batch(capsys: pytest.CaptureFixture[str], sequences: int) -> None:
    batch = sequences * SEQ
    doc = run_json(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--global-batch", str(batch), "--seq",
                   str(SEQ), "--top", "20")
    assert doc["results"]
    for r in doc["results"]:
        assert r["layout"]["dp"] * r["concurrency"] * SEQ <= batch, r
    best = doc["results"][0]  # and plan runs what recommend offers, with that batch
    lay = best["layout"]
    p = plan(load_model("llama-3.1-8b"),
             Workload(task="train", seq_tokens=SEQ, global_batch_tokens=batch, micro_batch=1,
                      recompute=best["recompute"]),
             layout=Layout(gpus=best["gpus"], tp=lay["tp"], pp=lay["pp"], dp=lay["dp"], zero=lay["zero"],
                           offload=lay.get("offload", "none")),  # a row no layout fits without offload (stop 58)
             gpu=get_gpu(best["gpu"]), suggest=False, choose_layout=False)
    assert p.fits


def test_a_server_count_with_no_layout_that_splits_the_batch_is_rejected_for_it() -> None:
    """Two single-A100 VMs without a fabric: only DP 2 spans them, which one sequence a step cannot split."""
    offering = load_catalog().offering("a100-80gb-sxm-1x-vm")
    shapes = shapes_from_catalog([offering], max_servers=2)
    spec = SweepSpec(workload=Workload(task="train", seq_tokens=SEQ), global_batch_tokens=SEQ)
    result = sweep(load_model("llama-3.1-8b"), shapes, spec)
    two = [i for i in range(result.evaluated) if result.value("servers", i) == 2]
    assert two and not any(bool(result.value("splits_batch", i)) for i in two)
    with pytest.raises(InvalidWorkload, match=r"--global-batch 4,096 tokens \(1 sequence of 4,096\) is smaller than one "
                                              "micro-batch per data-parallel rank: DP 2 x micro-batch 1"):
        plan(load_model("llama-3.1-8b"), Workload(task="train", seq_tokens=SEQ, global_batch_tokens=SEQ),
             layout=Layout(gpus=2, tp=1, pp=1, dp=2), gpu=get_gpu("a100-80gb-sxm"), choose_layout=False)
    miss = closest_miss(result, group_keys(result))[(0, 2)]
    reason = miss_reason(result.row(miss), None, True, batch_tokens=SEQ, seq_tokens=SEQ)
    assert reason.startswith("--global-batch 4,096: smaller than one micro-batch per data-parallel rank of every "
                             "layout tried (the fewest ranks: TP 1, PP 1, DP 2 x micro-batch 1 x 4,096 tokens = "
                             "8,192 tokens)")


def test_a_batch_smaller_than_one_sequence_is_refused_as_plan_refuses_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--global-batch", "2048", "--seq",
                       str(SEQ))
    assert code == 2
    assert ("--global-batch 2,048 tokens is less than one sequence of 4,096 tokens; the smallest whole batch is 4,096 "
            "tokens") in err


def test_without_a_stated_batch_every_layout_runs_the_default_one() -> None:
    """No --global-batch: the default batch grows to a micro-batch per rank, as plan() times an explicit layout."""
    shapes = shapes_from_catalog([load_catalog().offering("h100-sxm-8x-bm")], max_servers=1)
    result = sweep(load_model("llama-3.1-8b"), shapes, SweepSpec(workload=Workload(task="train", seq_tokens=SEQ)))
    assert all(bool(result.value("splits_batch", i)) for i in range(result.evaluated))


def test_the_sweep_interleaves_only_where_megatron_runs_it_with_the_stated_batch(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A stated batch of 24 sequences gives a TP 2 x PP 4 x DP 4 layout of 32 H100 six micro-batches a step, which
    Megatron-Core's interleaved schedule refuses (not a multiple of the 4 stages): the sweep asked ``plan`` for the
    interleaved memory of every pipelined layout and stopped on that refusal ("--virtual-stages 10 with --pp 4: ...",
    exit 2 from ``recommend``); a pipelined layout now interleaves only where its micro-batches allow it."""
    batch = 24 * SEQ
    code, _, err = run(capsys, "recommend", "llama-3.1-70b", "--task", "train", "--gpu", "h100", "--global-batch",
                       str(batch), "--seq", str(SEQ))
    assert code == 0, err
    shapes = shapes_from_catalog([load_catalog().offering("h100-sxm-8x-bm")], max_servers=4)
    result = sweep(load_model("llama-3.1-70b"), shapes,
                   SweepSpec(workload=Workload(task="train", seq_tokens=SEQ), global_batch_tokens=batch))
    seen = set()
    for i in range(result.evaluated):
        row = result.row(i)
        if row["pp"] < 2 or not row["splits_batch"]:
            continue
        # micro-batches a step at the row's micro-batch, as speed.pipeline.microbatches_for counts them
        m = -(-batch // (row["dp"] * row["concurrency"] * SEQ))
        seen.add((m % row["pp"] == 0, int(row["virtual_stages"]) > 1))
        assert int(row["virtual_stages"]) == 1 or m % row["pp"] == 0, row
    assert (False, False) in seen  # a pipelined layout Megatron-Core would not interleave at this batch was swept
