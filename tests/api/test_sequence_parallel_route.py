"""``sequence_parallel`` on ``POST /v1/plan``: null plans the default (on with tp > 1 for training), false plans TP
without it, and stating it where it cannot run is a one-line 422 problem+json (tests/planner/test_sequence_parallel.py
covers the figures)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

BASE = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8, "tp": 4, "zero": 1, "micro_batch": 1,
        "recompute": "none", "seq": 4096}


def test_the_api_plans_tp_without_sequence_parallelism(client: TestClient) -> None:
    off, default = (client.post("/v1/plan", json={**BASE, **extra}) for extra in ({"sequence_parallel": False}, {}))
    assert off.status_code == 200 and default.status_code == 200, (off.json(), default.json())
    assert off.json()["layout"]["sequence_parallel"] is False and default.json()["layout"]["sequence_parallel"] is True
    assert off.json()["per_gpu"]["activations_bytes"] > default.json()["per_gpu"]["activations_bytes"]


@pytest.mark.parametrize("extra", [{"tp": 1, "sequence_parallel": True},
                                   {"task": "inference", "zero": None, "micro_batch": None, "recompute": None,
                                    "seq": None, "sequence_parallel": False}])
def test_the_api_refuses_sequence_parallelism_where_it_cannot_run(client: TestClient, extra: dict[str, object]) -> None:
    r = client.post("/v1/plan", json={k: v for k, v in {**BASE, **extra}.items() if v is not None})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert "sequence_parallel" in r.json()["detail"] and "\n" not in r.json()["detail"]
