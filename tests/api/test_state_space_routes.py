"""The API on state-space and hybrid models: the model's recurrent state, the plan's state terms.

Figures: counts by transformers 5.24 on the meta device (tests/architectures/transformers_counts.json); state
sizes by hand from the published configs (tests/architectures/test_ssm_families.py shows the arithmetic).
"""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_model_reports_kv_on_attention_layers_and_the_state_per_sequence(client: TestClient) -> None:
    body = client.get("/v1/models/jamba-1.5-mini").json()
    assert body["params_total"] == 51_570_323_328
    assert body["kv_bytes_per_token"] == 4 * 2 * 8 * 128 * 2  # 4 attention layers of 32
    assert body["state_bytes_per_sequence"] == 28 * (8192 * 3 + 8192 * 16) * 2  # 28 Mamba layers
    assert client.get("/v1/models/llama-3.1-8b").json()["state_bytes_per_sequence"] == 0


def test_plan_of_a_pure_mamba_shows_its_state_and_no_kv(client: TestClient) -> None:
    response = client.post("/v1/plan", json={"model": "mamba-2.8b", "task": "inference", "gpu": "l4", "gpus": 1,
                                             "context": 1_048_576, "concurrency": 8})
    assert response.status_code == 200
    plan = response.json()
    assert plan["fits"] is True
    assert plan["breakdown"]["kv_per_sequence_bytes"] == 0
    assert plan["breakdown"]["state_per_sequence_bytes"] == 64 * (5120 * 3 + 5120 * 16) * 2
    assert plan["per_gpu"]["kv_cache_bytes"] == 8 * 64 * (5120 * 3 + 5120 * 16) * 2
