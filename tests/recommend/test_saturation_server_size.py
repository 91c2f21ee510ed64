"""A serving result's rate at saturation (``max_output_tokens_per_s``) is timed on the offering's own servers, as
its other speed figures are: a MoE whose layers span two 4-GPU servers gets the links of 4-GPU servers, not those of
the 8-GPU servers ``plan`` assumes.

Figures: the catalog's GB200 offering is a 4-GPU tray of a 72-GPU NVL72 domain (catalog/data/offerings.csv
gb200-4x-bm; gpus.toml scaleup_domain_gpus 72), so any group of its trays up to 72 GPUs talks over NVLink and the
tray size moves no figure: recommend's row and ``plan`` agree. A 4-GPU H100 server (a shape built here: HGX H100
boards hold 8, gpus.toml scaleup_domain_gpus 8) puts pipeline stages past 4 GPUs on the network.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner._frozen import evolve
from anchorgpu.planner.speed.batching import serving_estimate
from anchorgpu.planner.speed.estimate import plan_performance, serving_setup
from anchorgpu.planner.speed.overrides import calibrated
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import HardwareShape, SweepSpec
from anchorgpu.recommend import recommend, recommendation_to_json
from anchorgpu.recommend.ceilings import row_ceilings

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def _plan_of(model_name: str, row: dict, workload: Workload):
    lay = row["layout"] if "layout" in row else row
    return plan(load_model(model_name), workload,
                precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
                layout=Layout(gpus=row["gpus"], tp=lay["tp"], pp=lay["pp"], dp=lay["dp"], ep=lay["ep"]),
                gpu=get_gpu(row["gpu"]), suggest=False, choose_layout=False)


@pytest.mark.parametrize("model_name", ["deepseek-v3", "qwen3-235b-a22b"])
def test_a_gb200_row_spanning_trays_agrees_with_plan(model_name: str) -> None:
    workload = Workload(task="inference", concurrency=64)
    catalog = load_catalog()
    gb200 = [o for o in catalog.offerings if o.gpu == "gb200"]
    assert [o.gpus for o in gb200] == [4]
    spec = SweepSpec(workload=workload)
    rec = recommendation_to_json(recommend(load_model(model_name), spec, catalog, "1month", NOW, top=10,
                                           offerings=gb200))
    spanning = [r for r in rec["results"] if r["servers"] > 1]
    assert spanning, "no GB200 result spans trays"
    for r in spanning:
        perf = plan_performance(_plan_of(model_name, r, workload))
        for end in ("", "_low", "_high", "_ceiling"):
            assert r["max_output_tokens_per_s" + end] == pytest.approx(perf["max_output_tokens_per_s" + end], abs=0.1)
        if 64 % r["layout"]["dp"] == 0:  # replicas of equal load: the sweep's pace is plan's (else its busiest's)
            # recommend's JSON keeps TTFT to a tenth of a millisecond (0.0415 for plan's 0.041545)
            assert r["output_tokens_per_s"] == pytest.approx(perf["output_tokens_per_s"], rel=1e-3)
            assert r["ttft_s"] == pytest.approx(perf["ttft_s"], rel=1e-3, abs=5e-5)


def test_the_rate_at_saturation_is_timed_on_the_shapes_own_servers() -> None:
    model = load_model("qwen3-235b-a22b")
    shape = HardwareShape(id="h100-4x", gpu=get_gpu("h100"), gpus_per_server=4, max_servers=2)
    workload = Workload(task="inference", concurrency=64)
    spec = SweepSpec(workload=workload, weights=("bf16",))
    result = sweep(model, (shape,), spec)
    rows = [result.row(i) for i in range(result.evaluated)]
    row = next(r for r in rows if r["fits"] and r["tp"] * r["pp"] > 4 and r["ep"] <= r["tp"])  # stages on 2 servers
    got = row_ceilings(model, spec, result, row)
    p = _plan_of("qwen3-235b-a22b", row, workload)
    perf = plan_performance(p, prompt_tokens=result.prompt_tokens, output_tokens=result.output_tokens)
    setup = evolve(serving_setup(p, prompt_tokens=result.prompt_tokens, output_tokens=result.output_tokens),
                   gpus_per_server=4)
    own = serving_estimate(model, shape.gpu, setup, prompt_tokens=result.prompt_tokens,
                           output_tokens=result.output_tokens, concurrency=64,
                           saturation_concurrency=perf["saturation_concurrency"], cal=calibrated(spec.efficiencies))
    assert got["max_output_tokens_per_s"] == pytest.approx(own.max_output_tokens_per_s, rel=1e-9)
    assert got["max_output_tokens_per_s_ceiling"] == pytest.approx(own.max_output_tokens_per_s_ceiling, rel=1e-9)
    # plan's 8-GPU servers keep the stages on NVLink: a different (faster) figure than the shape's network gives
    assert perf["max_output_tokens_per_s"] > got["max_output_tokens_per_s"] * 1.001
