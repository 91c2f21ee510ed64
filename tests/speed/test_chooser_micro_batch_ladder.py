"""The micro-batch ladder climbs past 4 (issue 11 item 2, stop 55): where a layout's fastest micro-batch that fits is
4, the chooser and the sweep behind ``recommend`` time 8 at that layout, and take it where it fits, splits the batch
and is faster still (:func:`~anchorgpu.planner.speed.micro_batch_ladder.climb_ladder`).

The precedent for 8: NVIDIA's Megatron-Bridge performance configs run Qwen3-30B-A3B at micro_batch_size=8 on 8 B300
and 8 GB300 (QWEN3_30B_A3B_PRETRAIN_CONFIG_B300_BF16_V1, QWEN3_30B_A3B_PRETRAIN_CONFIG_GB300_BF16_V1; 4 on B200 and
GB200), NVIDIA-NeMo/Megatron-Bridge@f29a269f scripts/performance/configs/qwen/qwen3_workload_base_configs.py.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.inputs import RECOMPUTES
from anchorgpu.planner.speed import layouts
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.micro_batch_ladder import LADDER_PAST, climb_ladder
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog

QWEN3_30B = "qwen3-30b-a3b"
SEQ = 2048


def _chosen(name: str, gpu: str, gpus: int, **workload: object) -> tuple[object, float]:
    p = plan(load_model(name), Workload(task="train", **workload), layout=Layout(gpus=gpus),  # type: ignore[arg-type]
             gpu=get_gpu(gpu))
    return p, plan_performance(p)["train_tokens_per_s"]


def test_the_ladder_past_4_is_the_published_8() -> None:
    assert LADDER_PAST == (8,)


def test_qwen3_30b_on_64_b200_at_2048_tokens_runs_micro_batch_8() -> None:
    """Before: EP 8 x DP 64 at micro-batch 4, 1.01M tok/s; the same layout at 8 amortises the per-expert launches
    (moe_host_s_per_expert_gemm) over twice the rows: 1.37M, and it fits."""
    p, tokens_per_s = _chosen(QWEN3_30B, "b200", 64, seq_tokens=SEQ)
    assert p.workload.micro_batch == 8 and p.fits  # type: ignore[attr-defined]
    assert "micro-batch 8" in next(a for a in p.assumptions if a.startswith("Layout chosen"))  # type: ignore[attr-defined]
    lay = p.layout  # type: ignore[attr-defined]
    at_4 = plan(load_model(QWEN3_30B), Workload(task="train", seq_tokens=SEQ, micro_batch=4,
                                                recompute=p.workload.recompute),  # type: ignore[attr-defined]
                gpu=get_gpu("b200"), suggest=False, choose_layout=False,
                layout=Layout(gpus=64, tp=lay.tp, pp=lay.pp, dp=lay.dp, ep=lay.ep, zero=lay.zero, cp=lay.cp))
    assert tokens_per_s > 1.2 * plan_performance(at_4)["train_tokens_per_s"]


def test_a_rank_never_gets_more_than_its_share_of_a_stated_batch() -> None:
    """A global batch of 4 sequences a data-parallel rank (64 x 4 x 2,048 tokens) leaves 8 no room: 4 it stays; one
    of 8 a rank lets the ladder climb."""
    four, _ = _chosen(QWEN3_30B, "b200", 64, seq_tokens=SEQ, global_batch_tokens=64 * 4 * SEQ)
    eight, _ = _chosen(QWEN3_30B, "b200", 64, seq_tokens=SEQ, global_batch_tokens=64 * 8 * SEQ)
    assert four.workload.micro_batch == 4 and four.layout.dp == 64  # type: ignore[attr-defined]
    assert eight.workload.micro_batch == 8  # type: ignore[attr-defined]


def test_a_stated_micro_batch_is_kept() -> None:
    p, _ = _chosen(QWEN3_30B, "b200", 64, seq_tokens=SEQ, micro_batch=4)
    assert p.workload.micro_batch == 4  # type: ignore[attr-defined]


def test_a_dense_model_whose_fastest_is_not_4_never_times_8(monkeypatch: pytest.MonkeyPatch) -> None:
    """Llama 3.1 70B on 512 H100 runs micro-batch 1 (PP 8 x v 10: a larger one leaves fewer micro-batches to fill
    the bubble): the ladder does not climb, and no step at 8 is timed."""
    timed: list[int] = []
    step = layouts.training_step

    def recording(*args: object, **kwargs: object) -> object:
        timed.append(int(kwargs["micro_batch"]))  # type: ignore[call-overload]
        return step(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(layouts, "training_step", recording)
    p, _ = _chosen("llama-3.1-70b", "h100", 512, seq_tokens=4096)
    assert p.workload.micro_batch == 1 and timed and 8 not in timed  # type: ignore[attr-defined]


def _climb(chosen_mb: int, speeds: dict[tuple[int, str], float], fits: set[tuple[int, str]],
           runs: bool = True) -> tuple[int, str, float, object]:
    return climb_ladder((chosen_mb, "none", 100.0, "chosen"), ("none", "full"), lambda mb: runs,
                        lambda mb, rc: speeds[mb, rc], lambda mb, rc: (mb, rc) if (mb, rc) in fits else None)


def test_the_climb_takes_the_fastest_level_of_8_that_fits_and_is_faster() -> None:
    speeds = {(8, "none"): 150.0, (8, "full"): 120.0}
    assert _climb(4, speeds, {(8, "full")}) == (8, "full", 120.0, (8, "full"))
    assert _climb(4, speeds, {(8, "none"), (8, "full")}) == (8, "none", 150.0, (8, "none"))


def test_the_climb_stops_where_8_is_slower_does_not_fit_or_does_not_run() -> None:
    slower = {(8, "none"): 99.0, (8, "full"): 90.0}
    faster = {(8, "none"): 150.0, (8, "full"): 120.0}
    chosen = (4, "none", 100.0, "chosen")
    assert _climb(4, slower, {(8, "none"), (8, "full")}) == chosen
    assert _climb(4, faster, set()) == chosen  # 8 fits at no level
    assert _climb(4, faster, {(8, "none")}, runs=False) == chosen  # past a rank's share of the batch
    assert _climb(2, faster, {(8, "none")}) == (2, "none", 100.0, "chosen")  # 4 did not lead: 8 is not tried


def test_a_recommend_row_climbs_as_plan_does() -> None:
    """The sweep behind ``recommend`` climbs each row's layout as ``plan`` climbs it: Qwen3-30B-A3B on one 8 x B200
    server at 2,048 tokens, EP 8 x DP 8, runs micro-batch 8, and the row is ``plan``'s figures for that split."""
    model, gpu = load_model(QWEN3_30B), get_gpu("b200")
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1) if s.id == "b200-8x-bm")
    work = Workload(task="train", seq_tokens=SEQ)
    result = sweep(model, shapes, SweepSpec(workload=work))
    rows = [result.row(i) for i in range(result.evaluated)]
    (row,) = [r for r in rows if r["gpus"] == 8 and r["tp"] == 1 and r["pp"] == 1 and r["ep"] == 8 and r["zero"] == 1
              and r["cp"] == 1]
    assert row["concurrency"] == 8 and row["fits"]
    chosen = plan(model, work, gpu=gpu, layout=Layout(gpus=8, tp=1, pp=1, dp=8, ep=8, zero=1))
    assert chosen.workload.micro_batch == 8 and RECOMPUTES[row["recompute"]] == chosen.workload.recompute
    assert row["per_gpu_total_bytes"] == chosen.per_gpu.total_bytes
    assert row["train_tokens_per_s"] == pytest.approx(plan_performance(chosen)["train_tokens_per_s"], rel=1e-9)


def test_qwen3_30b_on_64_h100_at_2048_tokens_the_free_choice_is_at_least_a_hand_given_split() -> None:
    """The chooser climbs the ladder on the few fastest splits past the first that fits (chooser_margin), not that one
    alone: left free it is at least as fast as ``--tp 1 --pp 2 --dp 32 --ep 8 --zero 1`` given by hand (v 8 at
    micro-batch 8, 763,926 tok/s, 17.0% over the first, PP 1 x DP 64 at micro-batch 4, 652,744: beyond the training
    layout margin). Micro-batch 8's precedent: the Megatron-Bridge Qwen3-30B-A3B configs named in this file's
    docstring."""
    free, free_tokens_per_s = _chosen(QWEN3_30B, "h100", 64, seq_tokens=SEQ)
    hand = plan(load_model(QWEN3_30B), Workload(task="train", seq_tokens=SEQ), gpu=get_gpu("h100"),
                layout=Layout(gpus=64, tp=1, pp=2, dp=32, ep=8, zero=1))
    assert free.fits and hand.fits  # type: ignore[attr-defined]
    assert free_tokens_per_s >= plan_performance(hand)["train_tokens_per_s"]
