"""``POST /v1/plan`` with the speed model's options: chosen layouts, breakdowns, one-line refusals."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_the_api_refuses_the_same_input_with_problem_json(client: TestClient) -> None:
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "a100", "train_precision": "fp8"})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "seq": 4096,
                                      "global_batch": 1000})
    assert r.status_code == 422 and "global_batch" in r.json()["detail"]


def test_the_api_plan_chooses_a_training_layout_and_returns_the_breakdown(client: TestClient) -> None:
    r = client.post("/v1/plan", json={"model": "llama-3.1-70b", "task": "train", "gpu": "h100", "gpus": 64,
                                      "tokens": 10**11})
    body = r.json()
    assert r.status_code == 200 and body["fits"] is True
    assert set(body["performance"]["step_time_breakdown_s"]) >= {"compute", "pp_bubble", "dp_sync", "optimizer"}


def test_the_api_times_attention_data_parallelism_with_expert_parallelism(client: TestClient) -> None:
    """``tp 1, dp 8, ep 8`` for a mixture of experts: one EP group of eight replicas (speed.serving), said in the
    performance assumptions; an EP that does not divide the GPUs of a stage is a one-line 422."""
    base = {"model": "qwen3-30b-a3b", "gpu": "h100", "gpus": 8, "prompt": 1000, "output_tokens": 200,
            "concurrency": 256}
    r = client.post("/v1/plan", json={**base, "tp": 1, "dp": 8, "ep": 8})
    body = r.json()
    assert r.status_code == 200 and body["layout"]["ep"] == 8 and body["fits"] is True
    perf = body["performance"]
    assert any(line.startswith("expert parallelism over 8 GPUs") for line in perf["assumptions"])
    assert perf["tpot_s_low"] <= perf["tpot_s"] <= perf["tpot_s_high"] and perf["tpot_s_ceiling"] <= perf["tpot_s"]
    bad = client.post("/v1/plan", json={**base, "tp": 1, "dp": 8, "ep": 16, "gpus": 8})
    assert bad.status_code == 422 and bad.headers["content-type"].startswith("application/problem+json")
    assert "ep 16 " in bad.json()["detail"]  # the field, as the API names it


def test_the_api_takes_ep_overlap_for_moe_training_only(client: TestClient) -> None:
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "ep_overlap": True})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert "ep_overlap" in r.json()["detail"]
    ok = client.post("/v1/plan", json={"model": "qwen3-30b-a3b", "task": "train", "gpu": "h100", "gpus": 8, "tp": 1,
                                      "dp": 8, "ep": 8, "ep_overlap": True})
    assert ok.status_code == 200 and ok.json()["layout"]["ep_overlap"] is True


def test_the_api_takes_the_engine_sequence_cap(client: TestClient) -> None:
    base = {"model": "gpt-oss-20b", "gpu": "h100", "concurrency": 1500}
    capped = client.post("/v1/plan", json=base)
    raised = client.post("/v1/plan", json={**base, "max_num_seqs": 1536, "max_num_batched_tokens": 8192})
    assert capped.status_code == raised.status_code == 200
    assert capped.json()["layout"]["dp"] >= 2  # 1,024 a replica by default on an H100
    assert raised.json()["performance"]["saturation_concurrency"] >= 1500
    bad = client.post("/v1/plan", json={**base, "max_num_seqs": 0})
    assert bad.status_code == 422
    above = client.post("/v1/plan", json={**base, "max_num_seqs": 9000, "max_num_batched_tokens": 8192})
    assert above.status_code == 422 and "vLLM refuses to start" in above.json()["detail"]
    rec = client.post("/v1/recommend", json={"model": "gpt-oss-20b", "concurrency": 1500, "max_num_seqs": 2048,
                                             "top": 1})
    assert rec.status_code == 200, rec.text[-300:]


def test_the_api_takes_moe_recompute_for_a_mixture_of_experts_only(client: TestClient) -> None:
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "recompute": "moe"})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert "recompute moe" in r.json()["detail"]
    ok = client.post("/v1/plan", json={"model": "qwen3-30b-a3b", "task": "train", "gpu": "h100", "gpus": 8, "tp": 1,
                                      "dp": 8, "ep": 8, "recompute": "moe"})
    assert ok.status_code == 200 and ok.json()["workload"]["recompute"] == "moe"
