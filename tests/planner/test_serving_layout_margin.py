"""The serving chooser's one rule: the fastest layout on the GPUs, the planner's first kept only where the other is
predicted faster by no more than the calibration's layout margin (``layout_margin`` in ``speed/data/calibration.json``,
the median disagreement of the model between two held-out measured rows of one workload at different layouts, per
class of the worse link the two layouts cross: ``by_link``, on NVLink, on NVLink where one of the two runs EP inside
TP (``scale-up-ep``) or attention data parallelism (``scale-up-adp``), and over PCIe or the network). So
``plan`` on the GPUs and at the concurrency of one of ``recommend``'s rows lands on recommend's layout, or on one
within that margin of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Plan, Workload, plan
from anchorgpu.planner.speed.calibrate import _layout_margin_line
from anchorgpu.planner.speed.calibration import calibration, read_calibration_doc
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.layout_margin import LINK_CLASSES, layout_groups, layout_spread
from anchorgpu.planner.speed.rows_report import report_rows
from anchorgpu.planner.speed.runs import load_runs
from anchorgpu.planner.speed.serving_ranking import pair_class, pair_margin, pick_over_first
from cli_runner import run_json


def _split(layout: Layout) -> tuple[int, int, int, int]:
    return layout.tp or 1, layout.pp or 1, layout.dp or 1, layout.ep or 1


def _speed(p: object) -> float:
    return float(plan_performance(p)["output_tokens_per_s"])  # type: ignore[arg-type]


def _chosen_and_other(model_name: str, gpu_name: str, users: int, other: Layout) -> tuple[Plan, Plan]:
    """The plan the chooser makes for ``users`` on ``other.gpus`` GPUs of ``gpu_name``, and the plan of ``other``."""
    model, gpu = load_model(model_name), get_gpu(gpu_name)
    w = Workload(task="inference", concurrency=users)
    return plan(model, w, layout=Layout(gpus=other.gpus), gpu=gpu), plan(model, w, layout=other, gpu=gpu)


def test_the_margin_is_what_the_calibration_computes() -> None:
    """The stored value is ``layout_spread`` of the held-out rows under the shipped constants (13.8% over 105 pairs
    in 31 groups when first written; with InferenceMAX's TensorRT-LLM gpt-oss-120b sweep on B200, 9.1% over 133 in
    47, per class 2.6% over the 31 NVLink pairs of TP splits and replicas, the pooled 9.1% for the 7 NVLink pairs
    where one layout splits the experts (measured alone 12.5%), 17.0% over the 95 crossing PCIe); within a point, so a refit that moves a few rows a little does not fail it before ``calibrate --write``
    rewrites it."""
    runs = load_runs()
    spread = layout_spread(report_rows(calibration(), runs), runs)
    stored = read_calibration_doc()["layout_margin"]
    assert calibration().layout_margin == stored["value"]
    assert abs(spread.margin - stored["value"]) <= 0.01
    assert spread.pairs == stored["pairs"] and spread.groups == stored["groups"]
    assert set(spread.by_link) == set(stored["by_link"]) == set(LINK_CLASSES)
    for name, (pairs, value) in spread.by_link.items():
        assert stored["by_link"][name]["pairs"] == pairs and abs(stored["by_link"][name]["value"] - value) <= 0.01
        assert calibration().layout_margin_of(name) == stored["by_link"][name]["value"]
    assert sum(pairs for pairs, _ in spread.by_link.values()) == spread.pairs
    # the scale-up pairs agree far better than the PCIe ones: the reason the margin is per class
    assert calibration().layout_margin_of("scale-up") < calibration().layout_margin < \
        calibration().layout_margin_of("pcie-or-network")
    assert "layout margin: " in _layout_margin_line(spread)
    # the pairs are rows of one model, GPU, engine and workload at different layouts, none of them fitted
    for group in layout_groups(runs):
        assert all(run.role == "holdout" for run in group)
        assert len({(r.row["gpus"], r.row["tp"], r.row.get("pp", 1), r.row.get("ep", 1)) for r in group}) == len(group)


def test_pick_over_first() -> None:
    assert pick_over_first([100.0, 116.0], margin=0.163) == 0  # 16% faster: inside the margin
    assert pick_over_first([100.0, 117.0], margin=0.163) == 1
    assert pick_over_first([100.0, 130.0, 130.0], margin=0.163) == 1  # equals: the earlier
    assert pick_over_first([100.0, 90.0], margin=0.0) == 0
    # a margin a layout: the fastest within its own (PCIe) margin gives way to the next beyond its (NVLink) one
    assert pick_over_first([100.0, 112.0, 108.0], margin=[0.0, 0.159, 0.051]) == 2
    assert pick_over_first([100.0, 112.0, 104.0], margin=[0.0, 0.159, 0.051]) == 0


def test_the_margin_is_the_one_of_the_worse_link() -> None:
    """Two layouts on an NVLink server compare at the scale-up class's margin, or the scale-up-adp class's where one
    splits the experts (attention data parallelism with EP); a pipeline across servers, or any split of PCIe-only GPUs
    (RTX PRO 6000), at the PCIe-or-network class's."""
    h200, rtx = get_gpu("h200"), get_gpu("rtx-pro-6000")
    tp8, dp8 = Layout(gpus=8, tp=8, pp=1, dp=1), Layout(gpus=8, tp=1, pp=1, dp=8)
    staged, adp = Layout(gpus=16, tp=8, pp=2, dp=1), Layout(gpus=8, tp=1, pp=1, dp=8, ep=8)
    up, down = calibration().layout_margin_of("scale-up"), calibration().layout_margin_of("pcie-or-network")
    assert pair_margin(h200, tp8, dp8) == up
    assert pair_class(h200, tp8, adp) == pair_class(h200, Layout(gpus=8, tp=4, dp=2, ep=8), adp) == "scale-up-adp"
    assert pair_class(h200, tp8, Layout(gpus=8, tp=8, ep=8)) == "scale-up-ep"  # EP inside TP
    assert pair_class(h200, Layout(gpus=8, tp=8, ep=8), adp) == "scale-up-adp"  # the more apart split decides
    assert pair_margin(h200, tp8, adp) == calibration().layout_margin_of("scale-up-adp")
    assert pair_margin(h200, staged, Layout(gpus=16, tp=8, pp=1, dp=2)) == down
    assert pair_margin(rtx, dp8, Layout(gpus=8, tp=2, pp=1, dp=4)) == pair_margin(rtx, tp8, adp) == down
    assert pair_margin(rtx, Layout(gpus=1, tp=1), Layout(gpus=2, tp=1, dp=2)) == up  # no link at all


def test_a_difference_inside_the_margin_keeps_the_first() -> None:
    """Qwen3-30B-A3B for 48 users of 8,192 tokens on 8 H200s: attention data parallelism (TP 1, DP 8, EP 8) is
    predicted about 5% faster than TP 8 (the default), less than NVLink's margin for a layout that runs attention
    data parallelism (scale-up-adp, 6.4% at stop 62), so TP 8 stays, with no "Layout chosen" sentence but a "Layout
    kept" one naming the faster layout (recommend, ranking with no margin, may show it). (gpt-oss-120b on 8 H100s was
    this case until stop 51, when the attention-DP exchange took NCCL's measured latency for its group size and came
    11% ahead; the same model at 64 users until stop 62, when a step stopped reading the input-embedding table it only
    gathers rows from and the attention-DP GPUs, each holding the whole table, came 7.9% ahead.)"""
    model, gpu = load_model("qwen3-30b-a3b"), get_gpu("h200")
    users = Workload(task="inference", concurrency=48, context_tokens=8192)
    kept = plan(model, users, layout=Layout(gpus=8), gpu=gpu)
    assert _split(kept.layout) == (8, 1, 1, 1)
    assert not any(a.startswith("Layout chosen") for a in kept.assumptions)
    attention_dp = plan(model, users, layout=Layout(gpus=8, tp=1, dp=8, ep=8), gpu=gpu)
    assert attention_dp.fits
    faster = _speed(attention_dp) / _speed(kept) - 1.0
    assert 0.0 < faster <= calibration().layout_margin_of("scale-up-adp")
    # the plan says it kept TP 8 over that faster layout, which recommend, ranking with no margin, may show
    kept_line = next(a for a in kept.assumptions if a.startswith("Layout kept on the 8 GPUs asked: the default, TP 8"))
    assert f"(the fastest, TP 1, DP 8, EP 8, by {faster:.1%} at {_speed(attention_dp):,.0f};" in kept_line


def test_a_default_that_is_the_fastest_says_nothing_more() -> None:
    """Llama 3.1 70B for 32 users of 8,192 tokens on 8 H100s (the README's first journey): TP 8 is the fastest layout
    that holds them, so the plan keeps its one "Layout not given" line."""
    p = plan(load_model("llama-3.1-70b"), Workload(task="inference", concurrency=32, context_tokens=8192),
             layout=Layout(gpus=8), gpu=get_gpu("h100"))
    assert _split(p.layout) == (8, 1, 1, 1)
    assert not any(a.startswith(("Layout kept", "Layout chosen")) for a in p.assumptions)


def test_mixtral_on_24_h200_runs_three_attention_dp_engines() -> None:
    """The issue's case: for 6,144 users on 24 H200s, three one-server attention-DP engines (recommend's row) are
    predicted 73% faster than TP 8 x 3 (32,854 against 18,948 tok/s after stop 63's refit; 68% before it, 49% at stop 50;
    67.5% after stop 60's refit, 96bb4014), beyond the margin; before, the chooser kept TP 8 x 3 (20,600 tok/s)."""
    chosen = plan(load_model("mixtral-8x22b"), Workload(task="inference", concurrency=6144), layout=Layout(gpus=24),
                  gpu=get_gpu("h200"))
    assert _split(chosen.layout) == (1, 1, 24, 8)
    default = plan(load_model("mixtral-8x22b"), Workload(task="inference", concurrency=6144),
                   layout=Layout(gpus=24, tp=8, dp=3), gpu=get_gpu("h200"))
    assert _speed(chosen) > _speed(default) * (1 + calibration().layout_margin_of("scale-up-adp"))
    reason = next(a for a in chosen.assumptions if a.startswith("Layout chosen on the 24 GPUs asked"))
    margin = f"{calibration().layout_margin_of('scale-up-adp'):.1%}"  # on NVLink, and the chosen one splits experts
    assert f"the fastest ({_speed(chosen):,.0f} output tok/s), predicted more than {margin} faster than the " \
           "planner's first" in reason
    assert "two layouts of one measured workload whose traffic stays on the scale-up link" in reason
    assert f"the default, TP 8 with 3 replicas, serves them at {_speed(default):,.0f}" in reason
    # README.md's serving bullet quotes both, and the most sequences the layout holds (recommend's row runs that many)
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())
    assert f"({_speed(chosen):,.0f} tok/s against TP 8 x 3's {_speed(default):,.0f})" in readme
    assert f"the plan's max concurrency of {chosen.max_concurrency:,})" in readme


def test_deepseek_v3_on_16_h200_runs_two_tp4_attention_dp_engines() -> None:
    """The issue's second case: 1,024 users on 16 H200s, two one-server engines of TP 4 attention replicas are
    predicted about 21% faster than TP 8 x PP 2 (the first that holds them, kept before), beyond the margin of a pair
    whose worse link is the network (PP 2 across two servers)."""
    model, gpu = load_model("deepseek-v3"), get_gpu("h200")
    users = Workload(task="inference", concurrency=1024)
    chosen = plan(model, users, layout=Layout(gpus=16), gpu=gpu)
    assert _split(chosen.layout) == (4, 1, 4, 8)
    staged = plan(model, users, layout=Layout(gpus=16, tp=8, pp=2), gpu=gpu)
    assert _speed(chosen) > _speed(staged) * (1 + calibration().layout_margin_of("pcie-or-network"))
    reason = next(a for a in chosen.assumptions if a.startswith("Layout chosen on the 16 GPUs asked"))
    assert f"predicted more than {calibration().layout_margin_of('pcie-or-network'):.1%} faster" in reason


@pytest.mark.parametrize(("model", "gpu"), [("mixtral-8x22b", "h200"), ("deepseek-v3", "h200"),
                                            ("llama-3.1-70b", "h100"), ("qwen3-235b-a22b", "h100")])
def test_plan_on_recommends_rows_lands_on_its_layout(capsys: pytest.CaptureFixture[str], model: str,
                                                     gpu: str) -> None:
    """On each of recommend's top four rows' GPUs at its concurrency, plan's chosen layout is recommend's at its
    speed, or (recommend's sweep also tries layouts the chooser does not, such as Llama 3.1 70B's TP 2 x PP 2
    replicas) one that recommend's is predicted faster than by no more than the margin."""
    margin = max(calibration().layout_margin_of(c) for c in LINK_CLASSES)
    rows = run_json(capsys, "recommend", model, "--gpu", gpu)["results"][:4]
    assert rows
    same = 0
    for row in rows:
        lay = row["layout"]
        chosen = plan(load_model(model), Workload(task="inference", concurrency=row["concurrency"]),
                      layout=Layout(gpus=row["gpus"]), gpu=get_gpu(gpu))
        speed = _speed(chosen)
        if _split(chosen.layout) == (lay["tp"], lay["pp"], lay["dp"], lay["ep"]):
            same += 1
            assert speed == pytest.approx(row["output_tokens_per_s"], rel=1e-4)
        else:
            assert row["output_tokens_per_s"] <= speed * (1 + margin), (row["gpus"], lay, _split(chosen.layout))
    if model != "llama-3.1-70b":  # the MoE rows: attention-DP engines, TP and PP splits the chooser also tries;
        # since stop 54's refit Qwen3-235B's 16- and 32-GPU rows are TP 4 x PP 4, 0.9% faster than the TP 8 x PP 2
        # plan keeps (within the 12.9% margin, since 96bb4014, of a pair that crosses the network, as the else branch checks)
        assert same >= len(rows) // 2


def test_on_nvlink_an_attention_dp_layout_is_held_to_the_ep_class_margin() -> None:
    """DeepSeek-V3 for 512 users on 16 H200s: two one-server engines of TP 4 attention replicas with EP 8 are
    predicted about 11% faster than TP 8 x 2, both on NVLink; one splits the experts, so the pair is of the
    scale-up-adp class, whose margin (wider than the TP-only class's: the model ranks attention-DP/EP layouts worse,
    InferenceMAX's gpt-oss-120b sweep on B200) decides: chosen beyond it, kept within it, the line quoting it."""
    chosen, default = _chosen_and_other("deepseek-v3", "h200", 512, Layout(gpus=16, tp=8, dp=2))
    adp = plan(load_model("deepseek-v3"), Workload(task="inference", concurrency=512),
               layout=Layout(gpus=16, tp=4, dp=4, ep=8), gpu=get_gpu("h200"))
    margin = calibration().layout_margin_of("scale-up-adp")
    assert margin > calibration().layout_margin_of("scale-up")
    faster = _speed(adp) / _speed(default) - 1.0
    assert 0.05 < faster < 0.2
    if faster > margin:
        assert _split(chosen.layout) == (4, 1, 4, 8)
        line = next(a for a in chosen.assumptions if a.startswith("Layout chosen on the 16 GPUs asked"))
        assert f"predicted more than {margin:.1%} faster" in line
    else:
        assert _split(chosen.layout) == (8, 1, 2, 1)
        line = next(a for a in chosen.assumptions if a.startswith("Layout kept on the 16 GPUs asked"))
        assert f"no other predicted more than {margin:.1%} faster" in line
    assert "one runs attention data parallelism with EP" in line  # the class's words (serving_ranking._CLASS_WORDS)


def test_over_pcie_a_layout_10_percent_faster_leaves_the_first() -> None:
    """Llama 3.1 70B on 8 RTX PRO 6000s (PCIe only), TP 4 x DP 2 against TP 8 (the default): at 48 users it is
    predicted about 6% faster, more than NVLink's margin (TP splits and replicas) but within the PCIe class's, so TP 8
    stays, the "Layout kept" line quoting that margin; at 80 users it is about 20% faster, beyond the PCIe margin, so
    it replaces TP 8, the "Layout chosen" line saying so. (The test's name is its first case's: about 10% at 64 users
    when written, within 17.0%; the pair had reached 13.6% against a 13.6% margin when calibration 96bb4014, stop
    60's refit, moved the PCIe-or-network margin to 12.9%, and the 64-user TP 4 x DP 2 now replaces TP 8 as the rule
    says. The figures are the product's, compared with the calibration's margins, not pinned.)"""
    up, pcie = calibration().layout_margin_of("scale-up"), calibration().layout_margin_of("pcie-or-network")
    kept, other = _chosen_and_other("llama-3.1-70b", "rtx-pro-6000", 48, Layout(gpus=8, tp=4, dp=2))
    assert _split(kept.layout) == (8, 1, 1, 1)
    faster = _speed(other) / _speed(kept) - 1.0
    assert up < faster <= pcie
    line = next(a for a in kept.assumptions if a.startswith("Layout kept on the 8 GPUs asked: the default, TP 8"))
    assert f"no other predicted more than {pcie:.1%} faster" in line
    assert f"(the fastest, TP 4, PP 1, DP 2, by {faster:.1%}" in line and "crosses PCIe or the network" in line
    # more users: the same pair beyond the PCIe margin, so the faster layout replaces the first
    chosen, tp8 = _chosen_and_other("llama-3.1-70b", "rtx-pro-6000", 80, Layout(gpus=8, tp=8))
    assert _split(chosen.layout) == (4, 1, 2, 1)
    assert _speed(chosen) / _speed(tp8) - 1.0 > pcie
    line = next(a for a in chosen.assumptions if a.startswith("Layout chosen on the 8 GPUs asked: TP 4, PP 1, DP 2"))
    assert f"predicted more than {pcie:.1%} faster than the planner's first" in line
    assert "crosses PCIe or the network" in line and f"the default, TP 8, serves them at {_speed(tp8):,.0f}" in line
