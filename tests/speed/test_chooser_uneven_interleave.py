"""A model whose layers no ``pp x v`` chunks split (DeepSeek-V3: 61 layers, 63 with the embedding and the loss
counted, over power-of-two stages) is interleaved by the chooser and the sweep behind ``recommend`` at a stated
Megatron-Core layout, in the form NVIDIA's DeepSeek-V3 runs write it: ``Et|(tt|)*30mL`` at PP 8 x VP 4 (Megatron-
Bridge's H100 configuration, NVIDIA-NeMo/Megatron-Bridge@04264182
``scripts/performance/configs/deepseek/deepseek_workload_base_configs.py``: 1,024 H100, TP 2 PP 8 VP 4; the
Megatron-MoE model zoo's guide, yanring/Megatron-MoE-ModelZoo@78930f0c ``best-practice/DeepSeekV3/README.md``), less the
multi-token-prediction layer ``m`` the planner does not model. Until stop 55 the chooser never interleaved it: on
2,048 H100 it ran PP 1 (1.42M tok/s), and past 1,024 GPUs plain 1F1B left 31-47% of a step in the bubble."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.inputs import RECOMPUTES
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog

WORK = Workload(task="train", seq_tokens=4096)


def _bubble(p) -> float:  # type: ignore[no-untyped-def]
    perf = plan_performance(p)
    return perf["step_time_breakdown_s"]["pp_bubble"] / perf["step_time_s"]


def test_deepseek_v3_on_2048_h100_is_interleaved_at_the_published_layout_form() -> None:
    model, gpu = load_model("deepseek-v3"), get_gpu("h100")
    chosen = plan(model, WORK, gpu=gpu, layout=Layout(gpus=2048))
    lay = chosen.layout
    assert lay.pp > 1 and lay.virtual_stages > 1
    assert lay.pipeline_layout is not None and lay.pipeline_layout.text == "Et|(tt|)*30L"  # 32 chunks
    assert lay.pp * lay.virtual_stages == 32
    reason = next(a for a in chosen.assumptions if a.startswith("Layout chosen"))
    assert f"PP {lay.pp} (v {lay.virtual_stages}, layout Et|(tt|)*30L)" in reason
    # the same split as plain 1F1B (the even split of the layers over the stages): a larger bubble, a slower step
    even = plan(model, WORK, gpu=gpu, layout=Layout(gpus=2048, tp=lay.tp, pp=lay.pp, dp=lay.dp, ep=lay.ep, zero=lay.zero,
                                                      virtual_stages=1))
    assert even.layout.virtual_stages == 1 and even.layout.pipeline_layout is None
    assert _bubble(chosen) < _bubble(even) / 2
    assert plan_performance(chosen)["train_tokens_per_s"] > plan_performance(even)["train_tokens_per_s"]
    # and the plan of the chosen layout given is the chosen plan (the layout string is what plan() takes)
    given = plan(model, WORK, gpu=gpu, layout=Layout(gpus=2048, tp=lay.tp, pp=lay.pp, dp=lay.dp, ep=lay.ep,
                                                       zero=lay.zero, pipeline_layout=lay.pipeline_layout.text))
    assert plan_performance(given)["train_tokens_per_s"] == pytest.approx(
        plan_performance(chosen)["train_tokens_per_s"], rel=1e-12)


@pytest.mark.parametrize(("pp", "v", "text"), [
    (8, 4, "Et|(tt|)*30L"),  # Megatron-Bridge's H100 PP 8 x VP 4, Et|(tt|)*30mL less the m (row MCORE-GB200-DSV3-MXFP8)
    (16, 2, "Et|(tt|)*30L"),  # the same 32 chunks over PP 16 x VP 2
    (2, 4, "Et*7|(t*8|)*6t*6L"),  # row MB-GB300-DSV3's layout (Megatron-Bridge on 256 GB300, PP 2 x VP 4)
])
def test_the_uneven_layout_is_the_published_one(pp: int, v: int, text: str) -> None:
    from anchorgpu.planner.pipeline_layout import uneven_pipeline_layout

    found = uneven_pipeline_layout(61, pp, v, "deepseek-v3")
    assert found is not None and found.text == text
    assert found.busiest_rank_layers == -(-61 // pp)  # no rank holds more than plain 1F1B's busiest


def test_a_model_that_interleaves_evenly_keeps_its_layouts() -> None:
    from anchorgpu.planner.speed.interleave_choice import uneven_interleave

    for name in ("llama-3.1-70b", "llama-3.1-405b", "qwen3-235b-a22b"):
        model = load_model(name)
        assert all(uneven_interleave(model, pp) is None for pp in (1, 2, 4, 8, 16))


def test_recommend_rows_state_the_layout_and_are_plans_figures() -> None:
    """The sweep behind ``recommend`` runs the same interleaving: a DeepSeek-V3 row at PP 8 runs v 4 at the stated
    layout, states it, and is ``plan`` of that layout (memory and speed), and what ``plan`` chooses for its split."""
    model, gpu = load_model("deepseek-v3"), get_gpu("h100")
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=32) if s.id == "h100-sxm-8x-bm")
    result = sweep(model, shapes, SweepSpec(workload=WORK))
    rows = [result.row(i) for i in range(result.evaluated)]
    staged = [r for r in rows if r["gpus"] == 256 and r["pp"] == 8 and r["fits"] and r["splits_batch"]]
    assert staged and all(r["virtual_stages"] == 4 and r["pipeline_layout"] == "Et|(tt|)*30L" for r in staged)
    row = max(staged, key=lambda r: r["train_tokens_per_s"])
    split = dict(gpus=256, tp=row["tp"], pp=8, dp=row["dp"], ep=row["ep"] if row["ep"] > 1 else None, zero=row["zero"])
    fixed = plan(model, Workload(task="train", seq_tokens=4096, micro_batch=row["concurrency"],
                                 recompute=RECOMPUTES[row["recompute"]]), gpu=gpu, suggest=False, choose_layout=False,
                 layout=Layout(**split, pipeline_layout=row["pipeline_layout"]))  # type: ignore[arg-type]
    chosen = plan(model, WORK, gpu=gpu, layout=Layout(**split))  # type: ignore[arg-type]
    assert chosen.layout.pipeline_layout is not None and chosen.layout.pipeline_layout.text == row["pipeline_layout"]
    for p in (fixed, chosen):
        assert row["per_gpu_total_bytes"] == p.per_gpu.total_bytes
        assert row["train_tokens_per_s"] == pytest.approx(plan_performance(p)["train_tokens_per_s"], rel=1e-9)
