"""Stop 59's recjson: issue 11 item 6 asks every result of ``recommend`` for the figures ``plan`` reports; a training
row had ``train_tokens_per_s``, ``train_time_s`` and ``gpu_hours`` but no ``train_tflops_per_gpu``, ``train_mfu`` or
``step_time_breakdown_s`` (benchmarks/hardening/stop59_qa25.md, "Left" 1). Each is now plan's for the row's layout,
with ``_low``/``_high``/``_ceiling`` (the breakdown, as plan's, without a band), computed only for the rows a JSON
answer renders (benchmarks/hardening/stop59_recjson.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.app import create_app
from anchorgpu.config import Settings

_BANDED = ("train_tflops_per_gpu", "train_mfu")
_BAND_ENDS = ("", "_low", "_high", "_ceiling")
# issue 11 item 6's per-result keys, each with its band (the breakdown's parts without one, as plan gives them)
_TRAIN_KEYS = ("train_tokens_per_s", "train_tflops_per_gpu", "train_mfu", "train_time_s", "gpu_hours")
_SERVE_KEYS = ("ttft_s", "tpot_s", "output_tokens_per_s", "max_output_tokens_per_s", "decode_tokens_per_s_per_user")
_BREAKDOWN_KEYS = {"compute", "tp_comm", "pp_bubble", "pp_p2p", "cp_comm", "dp_sync", "fsdp_comm", "ep_alltoall",
                   "optimizer"}


def _close(row_value: float, plan_value: float, places: int) -> bool:
    """Equal to the decimals the row keeps (round_figure: ``places`` decimals, or two significant digits)."""
    return bool(abs(row_value - plan_value) <= max(0.5 * 10 ** -places, 5e-3 * abs(plan_value)) + 1e-12)


def _plan_of(client: TestClient, workload: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    lay = row["layout"]
    body = {**workload, "gpu": row["gpu"], "gpus": row["gpus"], "tp": lay["tp"], "pp": lay["pp"], "dp": lay["dp"],
            "cp": lay["cp"], "ep": lay["ep"], "zero": lay["zero"], "virtual_stages": lay["virtual_stages"],
            "recompute": row["recompute"], "micro_batch": row["concurrency"]}
    if lay.get("offload"):
        body["offload"] = lay["offload"]
    if row.get("network_gbit_per_s_per_gpu"):  # timed over the offering's network between servers, as the row
        body["network_gbit_per_gpu"] = row["network_gbit_per_s_per_gpu"]
    answer = client.post("/v1/plan", json=body)
    assert answer.status_code == 200, (body, answer.text)
    performance: dict[str, Any] = answer.json()["performance"]
    return performance


@pytest.mark.parametrize(("workload", "top", "gpu"), [
    # 8B: one L40S VM with the optimizer offloaded (#1), single GPUs
    ({"model": "llama-3.1-8b", "task": "train"}, 3, None),
    # 70B on H100 servers with tokens: TP 2 x PP 8 x DP 2 interleaved over 4 servers, an offloaded server, FSDP
    ({"model": "llama-3.1-70b", "task": "train", "train_tokens": 10**11}, 3, "h100")])
def test_a_training_row_has_plans_tflops_mfu_and_step_parts(sqlite_url: str, workload: dict[str, Any], top: int,
                                                             gpu: str | None) -> None:
    with TestClient(create_app(Settings(database_url=sqlite_url, offline=True))) as client:
        asked = {**workload, "top": top, **({"gpu": gpu} if gpu else {})}
        rows = client.post("/v1/recommend", json=asked).json()["results"]
        assert len(rows) == top
        plan_workload = {k: v for k, v in workload.items() if k != "train_tokens"}
        for row in rows:
            plan = _plan_of(client, plan_workload, row)
            assert _close(row["train_tokens_per_s"], plan["train_tokens_per_s"], 1)  # the same layout, timed alike
            for name, places in (("train_tflops_per_gpu", 1), ("train_mfu", 4)):
                for end in _BAND_ENDS:
                    assert _close(row[name + end], plan[name + end], places), (row["offering"], name + end,
                                                                                row[name + end], plan[name + end])
                assert row[name + "_low"] <= row[name] <= row[name + "_high"] <= row[name + "_ceiling"]
            parts = row["step_time_breakdown_s"]
            assert set(parts) == set(plan["step_time_breakdown_s"])
            for part, seconds in plan["step_time_breakdown_s"].items():
                assert _close(parts[part], seconds, 4), (row["offering"], part, parts[part], seconds)


def test_a_row_plan_cannot_state_is_the_step_the_sweep_timed(sqlite_url: str) -> None:
    """Two 1-GPU A100 VMs joined by their uplinks (8B, row #8 of ``recommend llama-3.1-8b --task train``): plan takes
    a server to hold 8 GPUs, so the row's step is timed on its own servers and network, as the sweep timed it. Its
    parts add up to the step of the default 4M-token global batch (speed.pipeline.default_batch_tokens) at the row's
    tokens/s, most of it the gradient sync over the 10 Gb/s-class link, and its MFU is its TFLOP/s over the A100's
    312 dense BF16 TFLOP/s (NVIDIA A100 datasheet)."""
    with TestClient(create_app(Settings(database_url=sqlite_url, offline=True))) as client:
        rows = client.post("/v1/recommend", json={"model": "llama-3.1-8b", "task": "train", "top": 10,
                                                  "gpu": "a100-80gb-sxm"}).json()["results"]
    row = next(r for r in rows if r["servers"] == 2 and r["gpus"] == 2)
    parts = row["step_time_breakdown_s"]
    step_s = 4 * 2**20 / row["train_tokens_per_s"]
    assert sum(parts.values()) == pytest.approx(step_s, rel=1e-3)
    assert parts["dp_sync"] > parts["compute"]
    assert row["train_mfu"] == pytest.approx(row["train_tflops_per_gpu"] / 312, rel=2e-3)


def test_every_key_of_item_6_is_on_a_training_and_a_serving_row(sqlite_url: str) -> None:
    with TestClient(create_app(Settings(database_url=sqlite_url, offline=True))) as client:
        timed = client.post("/v1/recommend", json={"model": "llama-3.1-8b", "task": "train", "train_tokens": 10**9,
                                                   "top": 2}).json()
        untimed = client.post("/v1/recommend", json={"model": "llama-3.1-8b", "task": "train", "top": 2}).json()
        serving = client.post("/v1/recommend", json={"model": "llama-3.1-70b", "concurrency": 32, "top": 2}).json()
    for row in (*timed["results"], *timed["pareto"]):
        for name in _TRAIN_KEYS:
            for end in _BAND_ENDS:
                assert row[name + end] is not None, (row["offering"], name + end)
        assert _BREAKDOWN_KEYS <= set(row["step_time_breakdown_s"])
    for row in (*untimed["results"], *untimed["pareto"]):  # without tokens no time: as plan's, null
        assert row["gpu_hours"] is None and row["train_time_s"] is None
        for name in ("train_tokens_per_s", *_BANDED):
            for end in _BAND_ENDS:
                assert row[name + end] is not None, (row["offering"], name + end)
        assert _BREAKDOWN_KEYS <= set(row["step_time_breakdown_s"])
    for row in serving["results"]:
        for name in _SERVE_KEYS:
            for end in _BAND_ENDS:
                assert row[name + end] is not None, (row["offering"], name + end)
        assert not any(key in row for key in (*_BANDED, "step_time_breakdown_s"))


def test_the_step_figures_are_planned_only_for_the_rows_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep keeps no step figures; ``recommend`` plans none (its text face reads none), and the JSON plans each
    rendered option once, whether it is among the results, on the Pareto front or both."""
    from anchorgpu.architectures import load_model
    from anchorgpu.architectures.spec import ModelSpec
    from anchorgpu.catalog import load_catalog
    from anchorgpu.planner import Workload
    from anchorgpu.planner.sweep_types import SweepSpec
    from anchorgpu.recommend import recommend, recommendation_to_json, step_figures

    planned: list[str] = []
    original = step_figures.training_step_figures

    def counted(*args: Any, **kwargs: Any) -> dict[str, Any]:
        planned.append(args[3]["shape"])
        return original(*args, **kwargs)

    monkeypatch.setattr(step_figures, "training_step_figures", counted)
    model = load_model("llama-3.1-8b")
    assert isinstance(model, ModelSpec)
    rec = recommend(model, SweepSpec(workload=Workload(task="train")), load_catalog(), "1month",
                    datetime(2026, 12, 1, tzinfo=UTC), top=3)
    assert planned == []
    body = recommendation_to_json(rec)
    assert len(planned) == len({id(o) for o in (*rec.results, *rec.pareto)}) < rec.evaluated
    assert all(row["train_mfu"] is not None for row in (*body["results"], *body["pareto"]))
