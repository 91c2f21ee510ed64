"""Every speed figure of a recommended configuration carries its band and its roofline ceiling, as a plan of the same
configuration writes them: a serving result's time to first token and tokens/s (the sweep's names and plan's, the
same figures rounded alike), a training result's tokens/s and run time."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend, recommendation_to_json

CATALOG = load_catalog()
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
MODEL = load_model("llama-3.1-8b")
SERVING_FIGURES = (("prefill_s", 4, "time"), ("ttft_s", 4, "time"), ("decode_tokens_per_s_per_user", 2, "rate"),
                   ("decode_tokens_per_s_total", 1, "rate"), ("output_tokens_per_s", 1, "rate"),
                   ("max_output_tokens_per_s", 1, "rate"))


@pytest.fixture(scope="module")
def serving() -> dict:
    spec = SweepSpec(workload=Workload(task="inference", context_tokens=8192, concurrency=32))
    return recommendation_to_json(recommend(MODEL, spec, CATALOG, "1month", NOW, top=5))


def test_every_serving_figure_has_its_band_and_ceiling_rounded_as_it_is(serving: dict) -> None:
    for r in serving["results"] + serving["pareto"]:
        for name, digits, kind in SERVING_FIGURES:
            value, low, high, top = (r[name + end] for end in ("", "_low", "_high", "_ceiling"))
            for figure in (value, low, high, top):
                assert figure == round(figure, digits), (name, figure)
            assert low <= value <= high
            if kind == "rate":
                assert value <= top and high <= top
            else:
                assert top <= value and top <= low
        for contract, own in (("ttft_s", "prefill_s"), ("output_tokens_per_s", "decode_tokens_per_s_total")):
            assert [r[contract + end] for end in ("", "_low", "_high", "_ceiling")] == \
                [r[own + end] for end in ("", "_low", "_high", "_ceiling")]


def test_a_serving_results_ceilings_are_those_plan_gives_the_same_configuration(serving: dict) -> None:
    r = next(r for r in serving["results"] if r["layout"]["dp"] == 1)  # every sequence on one replica: one pace
    p = plan(MODEL, Workload(task="inference", context_tokens=8192, concurrency=32),
             precision=PrecisionPlan(weights=r["weights"], kv_cache=r["kv_cache"]),
             layout=Layout(gpus=r["gpus"], tp=r["layout"]["tp"], pp=r["layout"]["pp"], dp=1), gpu=get_gpu(r["gpu"]),
             suggest=False, choose_layout=False)
    perf = plan_performance(p)
    assert r["ttft_s_ceiling"] == pytest.approx(perf["ttft_s_ceiling"], abs=1e-4)
    assert r["output_tokens_per_s_ceiling"] == pytest.approx(perf["output_tokens_per_s_ceiling"], abs=0.1)
    assert r["decode_tokens_per_s_per_user_ceiling"] == pytest.approx(perf["decode_tokens_per_s_per_user_ceiling"],
                                                                      abs=0.01)


def test_each_serving_result_has_plans_rate_at_the_largest_concurrency_that_fits(serving: dict) -> None:
    """``max_output_tokens_per_s`` (with its band and ceiling): what ``plan`` reports for the result's configuration,
    the rate at its saturation (the most sequences its KV cache and the engine's cap hold), never below the rate at
    the result's own concurrency where every step reads the KV cache once. Where vLLM runs FlashAttention 2 (SM 8.x),
    a step that holds a prompt chunk reads each decode's cache once per query head of a KV head
    (speed.mixed_attention, 4x for Llama-3.1-8B), and at saturation every step holds one (256 sequences, prompts of
    1,024 over 256 outputs: 1,024 prompt tokens a step), so there the saturated rate may fall below a smaller batch's:
    on one A100 1,566 tok/s at 256 sequences against 1,575 at 32 and 2,023 at 64 (stop 62, after embedread)."""
    from anchorgpu.planner.speed.mixed_attention import mixed_step_kv_read_factor

    for r in serving["results"]:
        lay = r["layout"]
        p = plan(MODEL, Workload(task="inference", context_tokens=8192, concurrency=32),
                 precision=PrecisionPlan(weights=r["weights"], kv_cache=r["kv_cache"]),
                 layout=Layout(gpus=r["gpus"], tp=lay["tp"], pp=lay["pp"], dp=lay["dp"]), gpu=get_gpu(r["gpu"]),
                 suggest=False, choose_layout=False)
        perf = plan_performance(p)
        for end in ("", "_low", "_high", "_ceiling"):
            assert r["max_output_tokens_per_s" + end] == pytest.approx(perf["max_output_tokens_per_s" + end], abs=0.1)
        if mixed_step_kv_read_factor(MODEL, get_gpu(r["gpu"]), engine="vllm", tp=lay["tp"]) == 1.0:
            assert r["max_output_tokens_per_s"] >= r["output_tokens_per_s"] * 0.999


def test_a_training_results_ceilings_are_those_plan_gives_the_same_layout() -> None:
    spec = SweepSpec(workload=Workload(task="train"), train_tokens=10**10)
    rec = recommendation_to_json(recommend(MODEL, spec, CATALOG, "1w", NOW, top=3))
    for r in rec["results"]:
        lay = r["layout"]
        # the row's micro-batch (its whole steps set the time) and offload (1 x L40S offloads the optimizer state)
        p = plan(MODEL, Workload(task="train", recompute=r["recompute"], micro_batch=r["concurrency"]),
                 gpu=get_gpu(r["gpu"]),
                 layout=Layout(gpus=r["gpus"], tp=lay["tp"], pp=lay["pp"], dp=lay["dp"], zero=lay["zero"],
                               cp=lay["cp"], virtual_stages=lay["virtual_stages"],
                               offload=lay.get("offload", "none")),
                 suggest=False, choose_layout=False)
        perf = plan_performance(p, train_tokens=10**10)
        assert r["train_tokens_per_s_ceiling"] == pytest.approx(perf["train_tokens_per_s_ceiling"], abs=0.1)
        assert r["train_time_s_ceiling"] == pytest.approx(perf["train_time_s_ceiling"], abs=0.1)
        assert r["train_tokens_per_s"] <= r["train_tokens_per_s_high"] <= r["train_tokens_per_s_ceiling"]
        assert r["train_time_s_ceiling"] <= r["train_time_s_low"] <= r["train_time_s"]


def test_the_cli_table_shows_each_band_with_its_ceiling_beside_it(capsys: pytest.CaptureFixture[str]) -> None:
    """Under the table: each result's headline speed band and its roofline ceiling, as the JSON gives them (the
    prediction stays the table's answer)."""
    from cli_runner import run, run_json

    argv = ("recommend", "llama-3.1-8b", "--context", "8192", "--concurrency", "32", "--top", "2")
    results = run_json(capsys, *argv)["results"]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    line = " ".join(next(x for x in out.split("\n\n")[0].splitlines() if "roofline ceiling" in x).split())
    for i, r in enumerate(results, 1):
        low, high, top = (r["decode_tokens_per_s_total" + end] for end in ("_low", "_high", "_ceiling"))
        assert f"#{i} {low:,.0f}–{high:,.0f}, ceiling {top:,.0f}" in line
