"""A vision model's images on the planner page, and a diffusion pipeline's options refused for a language model.

The page's only image fields were a diffusion pipeline's ("Images", "Resolution (WxH)"): a user planning Qwen2.5-VL
with 2 images of 1024x1024 typed them there, and the page, ``POST /v1/plan`` and ``anchorgpu plan`` all planned the
text alone (19.34 GiB on an L40S) without a word, where ``recommend`` refused the same fields. The page now has the
vision fields the API and CLI have (``images_per_request``, ``image_resolution``), and every face of ``plan`` refuses
the diffusion ones for a language model in one line, naming the vision ones.
"""

from __future__ import annotations

import html

import pytest
from fastapi.testclient import TestClient

from cli_runner import run

VISION = "model=qwen2.5-vl-7b&gpu=l40s&prompt=1000&output_tokens=200&concurrency=16"


def test_the_planner_form_has_the_vision_fields_in_both_languages(client: TestClient) -> None:
    english, russian = client.get("/plan").text, client.get("/plan?lang=ru").text
    for page in (english, russian):
        assert 'name="images_per_request"' in page and 'name="image_resolution"' in page
    assert "Vision model: images per request" in english and "Diffusion: images per batch" in english
    assert "Модель со зрением: изображений в запросе" in russian and "Диффузия: изображений в батче" in russian
    # the section that holds them says so (it was "Parallelism, training and diffusion options")
    assert "More options: parallelism, serving engine, images, training, diffusion" in english
    assert "Ещё: параллелизм, движок инференса, изображения, обучение, диффузия" in russian


def test_the_page_plans_the_images_as_the_api_does(client: TestClient) -> None:
    query = f"{VISION}&images_per_request=2&image_resolution=1024x1024"
    page = client.get(f"/plan?{query}&lang=en").text
    api = client.post("/v1/plan", json={"model": "qwen2.5-vl-7b", "gpu": "l40s", "prompt": 1000, "output_tokens": 200,
                                        "concurrency": 16, "images_per_request": 2, "image_resolution": "1024x1024"})
    assert api.status_code == 200
    total_gib = api.json()["per_gpu"]["total_bytes"] / 2**30
    assert f"Fits — {total_gib:.1f} GiB per GPU" in page  # 20.5 GiB (README's journey: 20.51 GiB), not the text's 19.3
    assert 'name="images_per_request" id="f-images_per_request" inputmode="numeric" value="2"' in page


@pytest.mark.parametrize("field", ["images=2", "resolution=1024x1024", "vae_tiling=on"])
def test_the_page_refuses_a_diffusion_option_for_a_language_model(client: TestClient, field: str) -> None:
    response = client.get(f"/plan?{VISION}&{field}")
    assert response.status_code == 422
    assert "apply to diffusion pipelines; qwen2.5-vl-7b is a language model" in response.text


def test_the_api_refuses_them_in_one_line(client: TestClient) -> None:
    response = client.post("/v1/plan", json={"model": "qwen2.5-vl-7b", "gpu": "l40s", "images": 2})
    assert response.status_code == 422
    assert response.json()["detail"] == ("images, resolution and vae_tiling apply to diffusion pipelines; qwen2.5-vl-7b is "
                                         "a language model (a vision model's images: images_per_request, image_resolution)")


def test_the_cli_refuses_them_and_a_diffusion_pipeline_keeps_them(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "qwen2.5-vl-7b", "--gpu", "l40s", "--images", "2")
    assert code == 2 and "--images-per-request, --image-resolution" in err
    code, out, _ = run(capsys, "plan", "sdxl-base-1.0", "--gpu", "l40s", "--images", "4", "--json")
    assert code == 0 and '"images": 4' in out


@pytest.mark.parametrize(("lang", "reason"), [("en", "expected WIDTHxHEIGHT in pixels, e.g. 1024x1024"),
                                              ("ru", "ожидается ШИРИНАxВЫСОТА в пикселях, например 1024x1024")])
def test_a_malformed_image_size_is_refused_in_words_not_a_regular_expression(client: TestClient, lang: str,
                                                                             reason: str) -> None:
    """The refusal showed pydantic's "String should match pattern '^[0-9]{1,5}x[0-9]{1,5}$'" on the page (in English
    on the Russian one) and in the API's problem detail."""
    response = client.get(f"/plan?{VISION}&image_resolution=big&lang={lang}")
    label = "“Vision model: image size (WxH)”" if lang == "en" else "«Модель со зрением: размер изображения (ШxВ)»"
    assert response.status_code == 422 and f"{label}: {reason}" in html.unescape(response.text)  # the form's label
    assert "should match pattern" not in response.text
    api = client.post("/v1/plan", json={"model": "qwen2.5-vl-7b", "image_resolution": "big"})
    assert api.status_code == 422 and api.json()["detail"] == "body.image_resolution: expected WIDTHxHEIGHT in pixels, e.g. 1024x1024"
