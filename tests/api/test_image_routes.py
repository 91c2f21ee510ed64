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
