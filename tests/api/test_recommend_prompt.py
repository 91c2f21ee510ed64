"""POST /v1/recommend takes the request's prompt, as the CLI's --prompt: without a context each sequence is sized at
prompt + output (issue 11, 'Serving'); the field was missing, so the API sized every sequence at the model's window."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_recommend_sizes_sequences_at_prompt_plus_output(client: TestClient) -> None:
    body = {"model": "llama-3.1-8b", "prompt": 1000, "output_tokens": 200, "concurrency": 64, "top": 3}
    answer = client.post("/v1/recommend", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["workload"]["context_tokens"] == 1200
    assert answer.json()["results"][0]["per_gpu"]["kv_cache_bytes"] < 16 * 2**30
    refused = client.post("/v1/recommend", json={**body, "prompt": 0})
    assert refused.status_code == 422 and "prompt" in refused.text
