"""The OpenAPI document describes a plan's speed section: each prediction, its band and ceiling, and units in the
key names (before, ``PlanOut`` listed neither ``performance`` nor ``layout``)."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_the_plan_answer_documents_its_speed_keys(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()["components"]["schemas"]["PlanOut"]
    performance = schema["properties"]["performance"]
    assert "_ceiling" in performance["description"] and "_low" in performance["description"]
    keys = performance["properties"]
    body = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8,
                                         "tokens": 10**10}).json()["performance"]
    banded = {k[: -len("_ceiling")] for k in body if k.endswith("_ceiling")}
    assert banded and banded <= set(keys)  # every banded training figure is described
    serving = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100"}).json()["performance"]
    assert {k[: -len("_ceiling")] for k in serving if k.endswith("_ceiling")} <= set(keys)
    assert "layout" in schema["properties"] and "virtual_stages" in schema["properties"]["layout"]["description"]
