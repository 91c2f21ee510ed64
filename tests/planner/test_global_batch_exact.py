"""A stated global batch is planned as given or refused, never rounded (planner.global_batch).

Before: ``plan llama-3.1-8b --task train --gpu h100 --gpus 8 --tp 1 --pp 1 --global-batch 100000 --seq 4096`` timed
4 micro-batches of 8 x 4,096 tokens, 131,072 tokens a step, and said so only in the JSON; the layout chooser picked
DP 16 for 24 sequences (2 micro-batches, 32 sequences); ``recommend`` offered DP 3 for 20 sequences. Megatron-LM,
torchtitan and OLMo-core refuse a batch that is not whole micro-batches for every data-parallel rank.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.recommend.eligibility import miss_reason
from cli_runner import run, run_json

SEQ = 4096
TRAIN = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100")
NOT_WHOLE = ("--global-batch 100,000 tokens is not a whole number of 4,096-token sequences (24.41 of them); the "
             "nearest whole batches are 98,304 tokens (24 sequences) and 102,400 tokens (25)")


def test_a_batch_of_part_sequences_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *TRAIN, "--gpus", "8", "--tp", "1", "--pp", "1", "--global-batch", "100000",
                         "--seq", str(SEQ))
    assert code == 2 and NOT_WHOLE in err and "\n" not in err.strip()
    code, _, err = run(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--global-batch", "100000", "--seq",
                       str(SEQ))
    assert code == 2 and NOT_WHOLE in err


def _explicit(gpus: int, dp: int, batch: int, *, cp: int = 1, seq: int = SEQ) -> object:
    return plan(load_model("llama-3.1-8b"),
                Workload(task="train", seq_tokens=seq, global_batch_tokens=batch, micro_batch=1, recompute="full"),
                layout=Layout(gpus=gpus, tp=1, pp=1, cp=cp, dp=dp, zero=1), gpu=get_gpu("h100"), choose_layout=False)


def test_an_explicit_layout_that_does_not_split_the_batch_is_refused_naming_the_nearest_batches() -> None:
    with pytest.raises(InvalidWorkload) as caught:
        _explicit(16, 16, 24 * SEQ)
    assert str(caught.value) == (
        "--global-batch 98,304 tokens (24 sequences of 4,096) does not split into whole micro-batches over DP 16 x "
        "micro-batch 1 (16 sequences, 65,536 tokens a round); the nearest batches that do are 65,536 and 131,072 "
        "tokens")
    p = _explicit(8, 8, 24 * SEQ)  # 3 micro-batches a rank, exactly
    perf = plan_performance(p)
    assert (perf["microbatches"], perf["global_batch_tokens"]) == (3, 24 * SEQ)
    assert ("global batch timed: 98,304 tokens, as --global-batch gives it = 3 micro-batches x DP 8 x micro-batch 1 "
            "x 4,096 tokens") in perf["assumptions"]


def test_context_parallel_ranks_share_a_sequence_so_only_dp_divides_the_batch() -> None:
    """CP 2 x DP 4 on 8 GPUs: the four data-parallel ranks each take whole sequences, split over their two CP ranks
    (Megatron-LM's data_parallel_size excludes CP); 4 sequences are one micro-batch a rank, 6 are not whole."""
    seq = 8192
    perf = plan_performance(_explicit(8, 4, 4 * seq, cp=2, seq=seq))
    assert (perf["microbatches"], perf["global_batch_tokens"]) == (1, 4 * seq)
    with pytest.raises(InvalidWorkload, match=r"over DP 4 x micro-batch 1 \(4 sequences, 32,768 tokens a round; the "
                                              r"2 CP ranks of a data-parallel rank share each sequence\); the nearest "
                                              r"batches that do are 32,768 and 65,536 tokens"):
        _explicit(8, 4, 6 * seq, cp=2, seq=seq)


def test_the_chooser_keeps_only_layouts_that_split_the_batch(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, *TRAIN, "--gpus", "16", "--global-batch", str(24 * SEQ), "--seq", str(SEQ))
    dp, mb = doc["layout"]["dp"], doc["workload"]["micro_batch"]
    assert 24 % (dp * mb) == 0, (dp, mb)
    assert doc["performance"]["global_batch_tokens"] == 24 * SEQ
    assert doc["performance"]["microbatches"] * dp * mb == 24
    code, _, err = run(capsys, *TRAIN, "--gpus", "16", "--tp", "1", "--pp", "1", "--global-batch", str(24 * SEQ),
                       "--seq", str(SEQ))
    assert code == 2 and (
        "--global-batch 98,304 tokens (24 sequences of 4,096) splits into whole micro-batches for no layout of the 16 "
        "GPUs: DP x micro-batch tried 16 x 1, 16 x 2, 16 x 4; over DP 16 x micro-batch 1 the nearest batches that do "
        "are 65,536 and 131,072 tokens") in err


def test_recommend_offers_only_layouts_that_split_the_batch_as_plan_runs_them(
        capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--global-batch", str(20 * SEQ), "--seq",
                   str(SEQ), "--top", "20")
    assert doc["results"]
    assert all(20 % (r["layout"]["dp"] * r["concurrency"]) == 0 for r in doc["results"]), \
        [(r["layout"]["dp"], r["concurrency"]) for r in doc["results"]]


def test_a_rejection_names_a_batch_that_does_not_split_rather_than_calling_it_small() -> None:
    row = {"fits": True, "splits_batch": False, "tp": 1, "pp": 1, "dp": 3, "concurrency": 1}
    assert miss_reason(row, None, True, batch_tokens=20 * SEQ, seq_tokens=SEQ) == (
        "--global-batch 81,920: does not split into whole micro-batches per data-parallel rank for any layout tried "
        "(the fewest ranks: TP 1, PP 1, DP 3 x micro-batch 1 x 4,096 tokens = 12,288 tokens)")


def test_the_default_batch_says_when_it_is_rounded_to_the_layout(capsys: pytest.CaptureFixture[str]) -> None:
    """No --global-batch: the default 4M tokens over DP 3 is raised to whole micro-batches, and the plan says so, in
    the JSON's speed assumptions and under the CLI's speed figures; over DP 8 it is whole already."""
    args = ("--tp", "1", "--pp", "1", "--zero", "1", "--micro-batch", "1", "--recompute", "full", "--seq", str(SEQ))
    doc = run_json(capsys, *TRAIN, "--gpus", "3", *args)
    line = ("global batch timed: 4,202,496 tokens, the default 4,194,304 (--global-batch not given) rounded up to "
            "whole micro-batches for this layout = 342 micro-batches x DP 3 x micro-batch 1 x 4,096 tokens")
    assert line in doc["performance"]["assumptions"]
    code, out, _ = run(capsys, *TRAIN, "--gpus", "3", *args)
    assert code == 0 and line in " ".join(out.split())
    doc = run_json(capsys, *TRAIN, "--gpus", "8", *args)
    assert ("global batch timed: 4,194,304 tokens, the default (--global-batch not given) = 128 micro-batches x DP 8 "
            "x micro-batch 1 x 4,096 tokens") in doc["performance"]["assumptions"]


def test_where_no_layout_that_splits_the_batch_fits_the_closest_that_splits_it_is_planned(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A 70B on 8 L40S fits no layout. Until stop 57 the plan showed plain DP 8 in its place, which 12 sequences do
    not split, and refused ("no layout tried that splits it into whole micro-batches fits l40s"). Since stop 57
    (closest) the closest layout tried is planned: one of the layouts that split the batch (the only ones tried), so
    the answer is a plan that does not fit, with what would; a batch that DP 8 splits too."""
    for sequences in (12, 16):
        code, _, err = run(capsys, "plan", "llama-3.1-70b", "--task", "train", "--gpu", "l40s", "--gpus", "8",
                           "--global-batch", str(sequences * SEQ), "--seq", str(SEQ))
        assert code == 0, err
        doc = run_json(capsys, "plan", "llama-3.1-70b", "--task", "train", "--gpu", "l40s", "--gpus", "8",
                       "--global-batch", str(sequences * SEQ), "--seq", str(SEQ))
        lay = doc["layout"]
        assert doc["fits"] is False and lay["gpus"] == 8 and sequences % (lay["dp"] * doc["workload"]["micro_batch"]) == 0
        assert any("the closest is planned" in line for line in doc["assumptions"]), doc["assumptions"]
