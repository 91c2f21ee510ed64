"""The API with images: /v1/plan takes images_per_request and image_resolution, and refuses bad ones with 422.

Figures: Gemma 3 turns every image into 256 tokens (mm_tokens_per_image of its published config).
"""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_api_takes_the_image_fields_and_refuses_bad_ones(client: TestClient) -> None:
    ok = client.post("/v1/plan", json={"model": "gemma-3-27b", "gpu": "h200", "context": 4096, "images_per_request": 3,
                                       "image_resolution": "1024x768"})
    assert ok.status_code == 200
    assert ok.json()["breakdown"]["image_tokens_per_request"] == 3 * 256
    text_only = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "images_per_request": 1})
    assert text_only.status_code == 422 and "takes no images" in text_only.text
    zero = client.post("/v1/plan", json={"model": "gemma-3-27b", "gpu": "h100", "image_resolution": "0x0"})
    assert zero.status_code == 422


def test_recommend_takes_the_image_fields_as_plan_does(client: TestClient, problem) -> None:  # type: ignore[no-untyped-def]
    """POST /v1/recommend takes images_per_request and image_resolution (it had neither, and timed one image at the
    model's native resolution): Qwen2.5-VL-7B turns a 640x480 image into 391 tokens (14-pixel patches merged 2x2),
    and the sweep times the request plan times. Bad values are refused as /v1/plan refuses them."""
    asked = {"model": "qwen2.5-vl-7b", "gpu": "l40s", "concurrency": 16, "images_per_request": 2,
             "image_resolution": "640x480"}
    planned = client.post("/v1/plan", json=asked)
    ok = client.post("/v1/recommend", json={**asked, "max_servers": 1, "top": 1})
    assert planned.status_code == ok.status_code == 200, ok.text
    assert any(a.startswith("Images: 2 x 391 image tokens at 640x480") for a in ok.json()["assumptions"])
    perf = planned.json()["performance"]
    assert (ok.json()["workload"]["prompt_tokens"], ok.json()["workload"]["output_tokens"]) == (
        perf["prompt_tokens"], perf["output_tokens"])
    assert ok.json()["results"][0]["per_gpu"]["kv_cache_bytes"] == planned.json()["per_gpu"]["kv_cache_bytes"]
    for bad, said in (({"model": "llama-3.1-8b", "images_per_request": 1}, "takes no images"),
                      ({"images_per_request": 1025}, "images_per_request"),
                      ({"images_per_request": -1}, "images_per_request"),
                      ({"image_resolution": "0x0"}, "image_resolution 0x0: expected WIDTHxHEIGHT"),  # its field (stop 61)
                      ({"image_resolution": "wide"}, "image_resolution"),
                      ({"task": "train", "images_per_request": 1}, "size serving requests"),
                      ({"model": "flux.1-schnell", "images_per_request": 1}, "size serving requests")):
        refused = client.post("/v1/recommend", json={"model": "qwen2.5-vl-7b", "gpu": "l40s", **bad})
        assert refused.status_code == 422, (bad, refused.text)
        assert said in problem(refused)["detail"], (bad, refused.text)
