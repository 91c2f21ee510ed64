"""``GET /v1/gpus/compare`` and the compare page: datasheet ratios and the calibrated model's predictions."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.reference import REFERENCE_WORKLOADS, predicted_speeds


def test_compare_route_returns_ratios_and_predicted_rows(client: TestClient) -> None:
    response = client.get("/v1/gpus/compare", params={"a": "mi300x", "b": "h100"})
    assert response.status_code == 200
    data = response.json()
    assert data["ratio_is"] == "a / b"
    # as the runtimes report them (gpus.toml memory_runtime_sources): MI300X 196,592 MiB (HIP), H100 85,017,624,576 B
    assert data["ratios"]["memory_bytes"] == pytest.approx(196_592 * 2**20 / 85_017_624_576)
    expected = predicted_speeds(get_gpu("mi300x"), get_gpu("h100"))
    assert [row["metric"] for row in data["predicted"]] == [ref.metric for ref in REFERENCE_WORKLOADS]
    for got, want in zip(data["predicted"], expected, strict=True):
        assert got["ratio"] == pytest.approx(want.ratio)
        assert got["ratio_low"] < got["ratio"] < got["ratio_high"]


def test_compare_route_refuses_unknown_and_missing_gpus_with_problem_json(client: TestClient) -> None:
    unknown = client.get("/v1/gpus/compare", params={"a": "mi3000x", "b": "h100"})
    assert unknown.status_code == 404
    assert unknown.headers["content-type"].startswith("application/problem+json")
    assert "mi300x" in unknown.json()["suggestions"]
    missing = client.get("/v1/gpus/compare", params={"a": "h100"})
    assert missing.status_code == 422


def test_compare_page_shows_the_predicted_table(client: TestClient) -> None:
    page = client.get("/gpus/compare", params={"a": "h200", "b": "h100"})
    assert page.status_code == 200
    assert 'id="predicted"' in page.text
    assert "Datasheet ratio" in page.text
