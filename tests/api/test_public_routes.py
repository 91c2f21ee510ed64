"""Public routes: health, GPUs, models, offerings, OpenAPI — and problem+json for every client error."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient


def test_healthz_says_ok_with_the_database_dialect(client: TestClient) -> None:
    response = client.get("/v1/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert response.json()["database"] == "sqlite"


def test_openapi_lists_every_route_of_the_issue(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in ["/v1/gpus", "/v1/gpus/{name}", "/v1/models", "/v1/models/{name}", "/v1/plan", "/v1/recommend", "/v1/offerings",
                 "/v1/quotes", "/v1/quotes/{quote_id}", "/v1/allocations", "/v1/allocations/{allocation_id}",
                 "/v1/allocations/{allocation_id}/stop", "/v1/allocations/{allocation_id}/start",
                 "/v1/allocations/{allocation_id}/extend", "/v1/allocations/{allocation_id}/terminate", "/v1/healthz"]:
        assert path in paths, path


def test_docs_page_is_served(client: TestClient) -> None:
    assert client.get("/docs").status_code == 200


def test_docs_page_is_swagger_ui_with_an_offline_fallback_and_no_remote_favicon(client: TestClient) -> None:
    html = client.get("/docs").text
    assert "swagger-ui-bundle.js" in html and "/openapi.json" in html
    assert 'id="docs-fallback" hidden' in html  # shown only when Swagger UI's assets did not load
    assert "fastapi.tiangolo.com" not in html


def test_gpu_list_has_the_h100_with_its_memory(client: TestClient) -> None:
    body = client.get("/v1/gpus").json()
    assert body["count"] == len(body["data"]) > 5
    h100 = next(g for g in body["data"] if g["name"] == "h100-sxm")
    assert h100["memory_bytes"] > 79 * 10**9  # 80 GB HBM3 (NVIDIA H100 datasheet)


def test_gpu_by_alias_is_case_insensitive(client: TestClient) -> None:
    assert client.get("/v1/gpus/H100").json()["name"] == "h100-sxm"


def test_unknown_gpu_is_404_problem_with_suggestions(client: TestClient, problem: Any) -> None:
    response = client.get("/v1/gpus/h10")
    assert response.status_code == 404
    body = problem(response)
    assert body["code"] == "unknown_gpu"
    assert "h100-sxm" in body["suggestions"]


def test_models_list_holds_the_registry(client: TestClient) -> None:
    names = [m["name"] for m in client.get("/v1/models").json()["data"]]
    assert "llama-3.1-70b" in names


def test_model_by_name_reports_exact_parameter_count(client: TestClient) -> None:
    body = client.get("/v1/models/llama-3.1-8b").json()
    # 8,030,261,248 parameters: computed by transformers on the meta device from the published config.json
    assert body["params_total"] == 8_030_261_248
    # 2 (K,V) x 32 layers x 8 KV heads x 128 head dim x 2 bytes (bf16)
    assert body["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2


def test_model_by_hub_id_of_a_registry_model_works_offline(client: TestClient) -> None:
    assert client.get("/v1/models/meta-llama/Llama-3.1-8B").json()["name"] == "llama-3.1-8b"


def test_an_nvidia_modelopt_checkpoint_is_listed_and_read_by_its_hub_id_offline(client: TestClient) -> None:
    rows = {m["name"]: m for m in client.get("/v1/models").json()["data"]}
    assert rows["deepseek-r1-0528-fp4"]["hub_id"] == "nvidia/DeepSeek-R1-0528-FP4"
    body = client.get("/v1/models/nvidia/DeepSeek-R1-0528-FP4").json()  # this test server fetches nothing
    assert body["name"] == "deepseek-r1-0528-fp4" and body["shipped_weights"] == "nvfp4"
    assert body["kv_cache_dtype"] == "fp8" and body["params_total"] == 671_026_404_352


def test_model_refs_that_are_server_paths_are_refused(client: TestClient, problem: Any) -> None:
    for ref in ["..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "config.json"]:
        response = client.get(f"/v1/models/{ref}")
        assert response.status_code == 422, ref
        assert problem(response)["code"] == "model_path_not_allowed"


def test_unknown_model_is_404_with_did_you_mean(client: TestClient, problem: Any) -> None:
    response = client.get("/v1/models/llama-3.1-7b")
    assert response.status_code == 404
    assert "did you mean" in problem(response)["detail"]


def test_hub_id_offline_is_a_clear_422(client: TestClient, problem: Any) -> None:
    response = client.get("/v1/models/some-org/some-model")
    assert response.status_code == 422
    assert problem(response)["code"] == "hub_unavailable"


def test_offerings_filter_by_gpu_and_carry_stock(client: TestClient) -> None:
    body = client.get("/v1/offerings", params={"gpu": "h100"}).json()
    assert body["count"] > 0
    assert {row["gpu"] for row in body["data"]} == {"h100-sxm"}
    assert all(row["stock"] is not None and row["available_now"] == row["stock"] for row in body["data"])


def test_offerings_are_cheapest_first_by_the_730_hour_rate(client: TestClient) -> None:
    from decimal import Decimal

    rates = [Decimal(r["per_gpu_hour_usd"]) for r in client.get("/v1/offerings").json()["data"] if r["per_gpu_hour_usd"]]
    assert rates == sorted(rates)


def test_offerings_max_price_filter(client: TestClient) -> None:
    from decimal import Decimal

    rows = client.get("/v1/offerings", params={"max_usd_per_gpu_hour": "2.00"}).json()["data"]
    assert rows and all(Decimal(r["per_gpu_hour_usd"]) <= Decimal("2.00") for r in rows)


def test_offerings_bad_filter_is_422_problem(client: TestClient, problem: Any) -> None:
    response = client.get("/v1/offerings", params={"min_gpus": "zero"})
    assert response.status_code == 422
    body = problem(response)
    assert body["code"] == "invalid_request"
    assert body["errors"][0]["field"] == "query.min_gpus"


def test_offerings_unknown_gpu_filter_is_404(client: TestClient, problem: Any) -> None:
    response = client.get("/v1/offerings", params={"gpu": "h1000"})
    assert response.status_code == 404
    assert problem(response)["code"] == "unknown_gpu"


def test_unknown_path_is_404_problem(client: TestClient, problem: Any) -> None:
    response = client.get("/v1/nothing-here")
    assert response.status_code == 404
    assert problem(response)["code"] == "not_found"


def test_wrong_method_is_405_problem(client: TestClient, problem: Any) -> None:
    response = client.delete("/v1/gpus")
    assert response.status_code == 405
    assert problem(response)["code"] == "method_not_allowed"


def test_malformed_json_body_is_422_not_500(client: TestClient, alice: Any, problem: Any) -> None:
    response = client.post("/v1/quotes", content=b"{not json", headers={**alice.auth, "Content-Type": "application/json"})
    assert response.status_code == 422
    assert problem(response)["code"] == "invalid_request"


def test_api_responses_carry_security_headers(client: TestClient) -> None:
    headers = client.get("/v1/healthz").headers
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]


def test_a_real_bug_answers_500_problem_without_details(app: Any, problem: Any) -> None:
    from anchorgpu.api.deps import get_store

    def broken() -> Any:
        raise RuntimeError("secret internals")

    app.dependency_overrides[get_store] = broken
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/v1/healthz")
    assert response.status_code == 500
    body = problem(response)
    assert body["code"] == "internal_error"
    assert "secret" not in response.text


def test_plan_serving_70b_on_four_h100_fits_with_the_contract_keys(client: TestClient) -> None:
    body = {"model": "llama-3.1-70b", "gpu": "h100", "gpus": 4, "context": 8192, "concurrency": 32}
    response = client.post("/v1/plan", json=body)
    assert response.status_code == 200
    plan = response.json()
    assert plan["gpu"]["name"] == "h100-sxm"
    assert plan["gpus"] == 4
    assert plan["fits"] is True
    assert plan["max_concurrency"] >= 32
    per_gpu = plan["per_gpu"]
    assert per_gpu["total_bytes"] == sum(per_gpu[k] for k in ("weights_bytes", "kv_cache_bytes", "activations_bytes", "gradients_bytes", "optimizer_bytes", "overhead_bytes"))
    # 70.55e9 parameters x 2 bytes (bf16) / TP 4 ≈ 35.3 GB of weights per GPU (config.json of Llama 3.1 70B)
    assert abs(per_gpu["weights_bytes"] - 70_553_706_496 * 2 / 4) / (70_553_706_496 * 2 / 4) < 0.01
    assert plan["model"]["params_total"] == 70_553_706_496
    assert plan["assumptions"] and plan["checks"]
    assert plan["performance"]["decode_tokens_per_s_total"] > 0


def test_plan_full_training_of_70b_on_one_gpu_does_not_fit(client: TestClient) -> None:
    plan = client.post("/v1/plan", json={"model": "llama-3.1-70b", "task": "train", "gpu": "h100", "gpus": 1}).json()
    assert plan["fits"] is False
    assert plan["suggestions"][0]["change"] == "gpus 16"  # the layout chosen on 16 GPUs fits (the CLI says --gpus 16)


def test_plan_full_training_of_70b_without_a_gpu_count_takes_the_fewest_that_hold_it(client: TestClient) -> None:
    plan = client.post("/v1/plan", json={"model": "llama-3.1-70b", "task": "train", "gpu": "h100"}).json()
    assert plan["fits"] is True
    assert plan["layout"]["gpus"] == 16
    assert any(a.startswith("GPU count not given: 16 h100-sxm") for a in plan["assumptions"])


def test_plan_takes_the_clis_layout_and_overhead_options(client: TestClient) -> None:
    base = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8, "seq": 4096, "zero": 0}
    zero0 = client.post("/v1/plan", json=base).json()["per_gpu"]
    zero3 = client.post("/v1/plan", json={**base, "zero": 3}).json()["per_gpu"]
    assert zero3["optimizer_bytes"] < zero0["optimizer_bytes"]
    small = client.post("/v1/plan", json={**base, "cuda_context_mib": 0}).json()["per_gpu"]["overhead_bytes"]
    assert small < zero0["overhead_bytes"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"model": "llama-3.1-70b", "tp": 3}, 422, "invalid_workload"),
        ({"model": "llama-3.1-70b", "gpus": 0}, 422, "invalid_request"),
        ({"model": "llama-3.1-70b", "context": 10**18}, 422, "invalid_request"),
        ({"model": "llama-3.1-70b", "gpu_memory_utilization": float("nan")}, 422, "invalid_request"),
        ({"model": "llama-3.1-70b", "weights": "int3-magic"}, 422, None),
        ({"model": "llama-3.1-70b", "gpu": "h1000"}, 404, "unknown_gpu"),
        ({"model": "llama-9"}, 404, "unknown_model"),
        ({"model": "/etc/passwd"}, 422, "model_path_not_allowed"),
        ({"model": "llama-3.1-70b", "lora_targets": ["x"]}, 422, "invalid_request"),
        ({"model": "llama-3.1-70b", "flavour": "spicy"}, 422, "invalid_request"),
    ],
)
def test_bad_plan_requests_get_one_line_and_a_code(client: TestClient, problem: Any, body: dict[str, Any], status: int, code: str | None) -> None:
    response = client.post("/v1/plan", content=__import__("json").dumps(body, allow_nan=True), headers={"Content-Type": "application/json"})
    assert response.status_code == status, response.text
    found = problem(response)
    if code is not None:
        assert found["code"] == code


def test_recommend_lists_fitting_offerings_cheapest_first(client: TestClient) -> None:
    from decimal import Decimal

    response = client.post("/v1/recommend", json={"model": "llama-3.1-8b", "context": 8192, "term": "1month", "top": 5})
    assert response.status_code == 200
    results = response.json()["results"]
    assert 0 < len(results) <= 5
    totals = [Decimal(r["total_usd"]) for r in results]
    assert totals == sorted(totals)
    assert all(r["fits"] for r in results)


def test_recommend_takes_the_training_precision_and_rejects_gpus_without_its_units(client: TestClient,
                                                                                   problem: Any) -> None:
    body = {"model": "llama-3.2-1b", "task": "train", "train_precision": "fp8", "train_tokens": 10**9, "term": "1w",
            "top": 3}
    response = client.post("/v1/recommend", json=body)
    assert response.status_code == 200
    answer = response.json()
    assert answer["workload"]["train_precision"] == "fp8"
    assert not any(r["offering"].startswith("a100") for r in answer["results"])
    assert all("FP8 tensor cores" in r["reason"] for r in answer["rejected"] if r["offering"].startswith("a100"))
    refused = client.post("/v1/recommend", json={**body, "train_precision": "fp16"})
    assert refused.status_code == 422 and "train_precision" in problem(refused)["detail"]


def test_recommend_answers_a_diffusion_pipeline_and_refuses_a_training_task_for_it(client: TestClient,
                                                                                     problem: Any) -> None:
    names = [m["name"] for m in client.get("/v1/models").json()["data"] if m["kind"] == "diffusion"]
    response = client.post("/v1/recommend", json={"model": names[0]})
    assert response.status_code == 200 and response.json()["workload"]["task"] == "diffusion"  # issue 14, item 2
    response = client.post("/v1/recommend", json={"model": names[0], "task": "train"})
    assert response.status_code == 422
    assert "diffusion" in problem(response)["detail"]


def test_glossary_routes_are_mounted_under_v1(client: TestClient) -> None:
    assert client.get("/v1/glossary", params={"q": "kv cache"}).status_code == 200
    assert client.get("/v1/glossary/kv-cache").status_code == 200
    assert client.get("/v1/glossary/no-such-entry").status_code == 404


def test_an_oversized_body_is_413_problem_and_not_read(client: TestClient, problem: Any) -> None:
    response = client.post("/v1/plan", content=b'{"model": "' + b"x" * (2 * 1024 * 1024) + b'"}', headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert problem(response)["code"] == "request_too_large"


def test_an_oversized_chunked_body_is_413(client: TestClient, problem: Any) -> None:
    def chunks() -> Any:
        for _ in range(40):
            yield b"x" * 65536

    response = client.post("/v1/plan", content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert problem(response)["code"] == "request_too_large"


_PUBLIC = (("GET", "/v1/gpus", None), ("GET", "/v1/healthz", None), ("GET", "/v1/offerings", None),
           ("GET", "/v1/models", None), ("GET", "/v1/glossary?q=kv", None),
           ("POST", "/v1/plan", {"model": "llama-3.1-8b", "gpu": "h100"}))


def test_a_key_that_is_sent_is_checked_on_public_routes_too(client: TestClient, alice: Any, clock: Any,
                                                            problem: Any) -> None:
    """QA pass: a revoked, expired or unknown key on a public route was ignored (200), so a caller learnt only at
    the first booking that its key no longer works. A key that is sent is now checked on every route: 401 with
    WWW-Authenticate; without a key the public routes stay public."""
    revoked = client.post("/v1/keys", json={"name": "to revoke"}, headers=alice.auth).json()
    assert client.delete(f"/v1/keys/{revoked['id']}", headers=alice.auth).status_code == 200
    expiring = client.post("/v1/keys", json={"name": "one hour", "expires_at": clock.now.replace(hour=13).isoformat()},
                           headers=alice.auth).json()
    clock.advance(hours=1)
    bad = {"unknown": ("Bearer agpu_not-a-key", "not valid"), "revoked": (f"Bearer {revoked['api_key']}", "revoked"),
           "expired": (f"Bearer {expiring['api_key']}", "expired"), "not bearer": ("Basic dXNlcjpwYXNz", "Bearer")}
    for method, path, body in _PUBLIC:
        assert client.request(method, path, json=body).status_code == 200, path  # no key: public
        assert client.request(method, path, json=body, headers=alice.auth).status_code == 200, path
        for what, (header, reason) in bad.items():
            answer = client.request(method, path, json=body, headers={"Authorization": header})
            assert answer.status_code == 401, (path, what, answer.text)
            assert answer.headers["www-authenticate"] == 'Bearer realm="anchorgpu"'
            refused = problem(answer)
            assert refused["code"] == "authentication_required" and reason in refused["detail"], (path, what)
