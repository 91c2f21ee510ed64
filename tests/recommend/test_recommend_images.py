"""``recommend`` takes the images of a vision model's request as ``plan`` does (--images-per-request,
--image-resolution; POST /v1/recommend's images_per_request and image_resolution: tests/api/test_image_routes.py). It
had neither option, so it always timed one image at the model's native resolution: Qwen2.5-VL-7B for 16 users on one
L40S with two 640x480 images a request was timed at 1,369 image tokens where plan times 2 x 391 (its grid rule: 14-pixel
patches merged 2x2, Qwen2.5-VL's processor)."""

from __future__ import annotations

import pytest

from cli_runner import run, run_json

COMMON = ("qwen2.5-vl-7b", "--gpu", "l40s", "--concurrency", "16")
IMAGES = ("--images-per-request", "2", "--image-resolution", "640x480")


def test_recommend_times_the_images_asked_as_plan_does(capsys: pytest.CaptureFixture[str]) -> None:
    planned = run_json(capsys, "plan", *COMMON, *IMAGES)
    body = run_json(capsys, "recommend", *COMMON, *IMAGES, "--max-servers", "1", "--top", "1")
    default = run_json(capsys, "recommend", *COMMON, "--max-servers", "1", "--top", "1")
    assert planned["breakdown"]["image_tokens_per_request"] == 2 * 391
    assert any(a.startswith("Images: 2 x 391 image tokens at 640x480") for a in body["assumptions"])
    row, perf = body["results"][0], planned["performance"]
    assert row["offering"] == "l40s-1x-vm" and row["layout"]["tp"] == 1
    assert body["workload"]["context_tokens"] == planned["workload"]["context_tokens"]
    assert (body["workload"]["prompt_tokens"], body["workload"]["output_tokens"]) == (perf["prompt_tokens"],
                                                                                      perf["output_tokens"])
    assert row["per_gpu"]["kv_cache_bytes"] == planned["per_gpu"]["kv_cache_bytes"]
    assert row["decode_tokens_per_s_total"] == pytest.approx(perf["output_tokens_per_s"], abs=0.05)  # JSON: 0.1 tok/s
    # and not the default request's one native-resolution image
    assert default["workload"]["prompt_tokens"] != body["workload"]["prompt_tokens"]


@pytest.mark.parametrize("args", [
    ("qwen2.5-vl-7b", "--images-per-request", "-1"),
    ("qwen2.5-vl-7b", "--images-per-request", "1025"),
    ("qwen2.5-vl-7b", "--image-resolution", "0x0"),
    ("qwen2.5-vl-7b", "--image-resolution", "wide"),
    ("llama-3.1-8b", "--images-per-request", "1"),  # a text-only model
    ("qwen2.5-vl-7b", "--task", "train", "--images-per-request", "1"),
    ("flux.1-schnell", "--images-per-request", "1"),  # a diffusion pipeline
])
def test_recommend_refuses_what_plan_refuses_in_the_same_words(capsys: pytest.CaptureFixture[str],
                                                                 args: tuple[str, ...]) -> None:
    planned = run(capsys, "plan", *args, "--gpu", "l40s")
    code, out, err = run(capsys, "recommend", *args, "--gpu", "l40s")
    assert code == planned[0] == 2 and not out
    assert err == planned[2] and err.startswith("error: ") and err.count("\n") == 1
