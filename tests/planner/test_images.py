"""Serving with images and encoder inputs: image tokens in the context, KV and prefill; cross-attention caches.

Figures: token counts by hand from each config (tests/architectures/test_multimodal.py shows the processor
arithmetic); cache sizes by hand from the widths (shown per test). The equivalence tests compare a plan with images
against the same plan with the image tokens given as text context.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anchorgpu.architectures import ModelSpec, from_hf_config
from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner import Workload, plan
from cli_runner import run, run_json

CASES = json.loads((Path(__file__).resolve().parents[1] / "architectures" / "multimodal_cases.json").read_text())


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    return run_json(capsys, "plan", *argv)


def test_images_add_their_tokens_to_the_kv_cache(capsys: pytest.CaptureFixture[str]) -> None:
    # Gemma 3 27B: 256 tokens per image; 2 images on an 8,192-token text context = 8,704 tokens of KV cache, the same
    # cache as 8,704 tokens of text without images.
    with_images = _plan(capsys, "gemma-3-27b", "--gpu", "h200", "--context", "8192", "--images-per-request", "2")
    as_text = _plan(capsys, "gemma-3-27b", "--gpu", "h200", "--context", "8704", "--images-per-request", "0")
    assert with_images["breakdown"]["image_tokens_per_request"] == 512
    assert with_images["per_gpu"]["kv_cache_bytes"] == as_text["per_gpu"]["kv_cache_bytes"]
    assert with_images["max_concurrency"] == as_text["max_concurrency"]


def test_images_lengthen_prefill(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("qwen2.5-vl-7b", "--gpu", "h100", "--prompt", "1000", "--output-tokens", "200")
    none = _plan(capsys, *base, "--images-per-request", "0")
    four = _plan(capsys, *base, "--images-per-request", "4", "--image-resolution", "1024x1024")
    # 4 × 1,369 tokens (1024 × 1024 on Qwen2.5-VL) on top of the 1,200-token sequence
    assert four["breakdown"]["image_tokens_per_request"] == 4 * 1369
    assert four["per_gpu"]["kv_cache_bytes"] > none["per_gpu"]["kv_cache_bytes"]
    assert four["performance"]["ttft_s"] > 2 * none["performance"]["ttft_s"]


def test_defaults_are_stated(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _plan(capsys, "llava-1.5-7b", "--gpu", "l40s", "--context", "2048")
    said = " ".join(doc["assumptions"])
    assert "1 image per request" in said and "native 336x336" in said
    assert doc["breakdown"]["image_tokens_per_request"] == 576


def test_whisper_keeps_the_encoder_output_per_sequence(capsys: pytest.CaptureFixture[str]) -> None:
    # 1,500 encoder frames × K and V of 32 decoder layers × 1,280 wide × 2 bytes = 245,760,000 B per sequence,
    # beside the decoder's own cache of 448 tokens × 2 · 32 · 1,280 × 2 B = 73,400,320 B
    doc = _plan(capsys, "whisper-large-v3", "--gpu", "l4", "--context", "448", "--concurrency", "10")
    assert doc["breakdown"]["cross_attention_kv_per_sequence_bytes"] == 1500 * 2 * 32 * 1280 * 2 == 245_760_000
    assert doc["per_gpu"]["kv_cache_bytes"] == 10 * (245_760_000 + 448 * 2 * 32 * 1280 * 2)


def test_mllama_images_fill_the_cross_attention_cache() -> None:
    spec = from_hf_config(CASES["mllama_cross_layers"]["config"], name="tiny-mllama")
    assert isinstance(spec, ModelSpec)
    # tiles of 56 px, at most 2: a 112 × 56 image takes 2 tiles of (56/14)² + 1 = 17 tokens; 3 images = 102 tokens,
    # each with K and V of 2 cross-attention layers × 2 KV heads × 32 = 256 values, 2 bytes: 52,224 B per sequence
    p = plan(spec, Workload(context_tokens=64, images_per_request=3, image_resolution=(112, 56)))
    assert p.breakdown["cross_attention_kv_per_sequence_bytes"] == 3 * 34 * 256 * 2
    assert p.workload.context_tokens == 64 + 3  # one placeholder token per image in the text


def test_training_with_images_is_refused() -> None:
    spec = from_hf_config(CASES["gemma3_siglip_head"]["config"], name="tiny-gemma3")
    with pytest.raises(InvalidWorkload, match="task inference"):
        plan(spec, Workload(task="lora", images_per_request=1))


@pytest.mark.parametrize(("argv", "needle"), [
    (("gemma-3-27b", "--image-resolution", "0x0"), "--image-resolution 0x0"),  # the flag (stop 61)
    (("gemma-3-27b", "--image-resolution", "big"), "--image-resolution 'big'"),
    (("gemma-3-27b", "--images-per-request", "-1"), "--images-per-request -1"),  # the flag (stop 56 qa15)
    (("llama-3.1-8b", "--images-per-request", "2"), "takes no images"),
    (("whisper-large-v3", "--image-resolution", "640x480"), "takes no images"),
])
def test_bad_image_input_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
                                            needle: str) -> None:
    code, out, err = run(capsys, "plan", *argv, "--gpu", "h100")
    assert code == 2 and out == ""
    assert needle in err and len(err.strip().splitlines()) == 1


def test_t5_reads_the_prompt_in_its_encoder(capsys: pytest.CaptureFixture[str]) -> None:
    # T5-base: 400 prompt tokens in the encoder; each of the 12 decoder layers keeps K and V of 12 heads × 64 over
    # them: 400 × 2 · 12 · 768 × 2 bytes = 14,745,600 B; the decoder's own cache holds the 100 output tokens
    # (112 slots in 16-token KV blocks): 112 × 2 · 12 · 768 × 2 = 4,128,768 B
    doc = _plan(capsys, "t5-base", "--gpu", "l4", "--prompt", "400", "--output-tokens", "100")
    assert doc["breakdown"]["cross_attention_kv_per_sequence_bytes"] == 400 * 2 * 12 * 768 * 2 == 14_745_600
    assert doc["breakdown"]["kv_per_sequence_bytes"] == 112 * 2 * 12 * 768 * 2
    assert any("goes to the encoder" in a for a in doc["assumptions"])


def test_default_request_of_many_users_keeps_its_text_and_output(capsys: pytest.CaptureFixture[str]) -> None:
    # Many users and no length: each is the default request of 1,024 prompt + 256 output text tokens
    # (inputs.DEFAULT_PROMPT_TOKENS, DEFAULT_OUTPUT_TOKENS), and the image comes on top of it, as it does for a
    # request the user sized. Qwen2.5-VL's native image is 1,369 tokens (test_multimodal.py), more than the whole
    # 1,280-token default request: it cannot "sit within" it. Was: 1,280 tokens held, timed as 1 text prompt token
    # + 1 output token; Gemma 3 timed with 192 output tokens (256 less its vision tower's 64 equivalent tokens).
    qwen = _plan(capsys, "qwen2.5-vl-7b", "--gpu", "l40s", "--concurrency", "16")
    assert qwen["workload"]["context_tokens"] == 1024 + 256 + 1369
    assert qwen["performance"]["output_tokens"] == 256
    # the prompt the sequence holds; the vision tower's work (timed as prompt tokens of the same cost) beside it
    assert qwen["performance"]["prompt_tokens"] == 1024 + 1369
    assert qwen["performance"]["encoder_prefill_equivalent_tokens"] > 0
    gemma = _plan(capsys, "gemma-3-27b", "--gpu", "h100", "--gpus", "2", "--concurrency", "32")
    assert gemma["workload"]["context_tokens"] == 1024 + 256 + 256
    assert gemma["performance"]["output_tokens"] == 256
    # a prompt given without an output: the default 256 output tokens are timed, not what the image left of them
    given = _plan(capsys, "gemma-3-27b", "--gpu", "h100", "--gpus", "2", "--concurrency", "32", "--prompt", "500")
    assert given["workload"]["context_tokens"] == 500 + 256 + 256
    assert given["performance"]["output_tokens"] == 256


def test_a_prompt_given_with_images_is_timed_with_the_default_output(capsys: pytest.CaptureFixture[str]) -> None:
    # Mistral Small 3.1 at its native 1540x1540: 3,080 image tokens (the equivalence sample's row); a 128-token prompt
    # without --output-tokens is sized at 128 + 256 text tokens (asked_context) and must be timed with those 256
    # output tokens. Was: 39 (the sequence less the prompt, the images and the vision tower's equivalent tokens).
    doc = _plan(capsys, "mistral-small-3.1-24b", "--gpu", "h100", "--gpus", "2", "--prompt", "128")
    assert doc["breakdown"]["image_tokens_per_request"] == 3080
    assert doc["workload"]["context_tokens"] == 128 + 256 + 3080
    assert doc["performance"]["output_tokens"] == 256


def test_images_that_fill_the_window_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """The adversarial walk's ``plan qwen2.5-vl-7b --gpu l4 --images-per-request 200``: 200 x 1,369 = 273,800 image
    tokens (1024x1024 by the grid rule, test_multimodal) in a request sized at the model's 128,000-token window was
    planned FITS, said the images "sit within the 128,000-token context" and timed a 273,801-token prompt with one
    output token. 93 images (127,317 tokens) still leave room for text and output; 94 (128,686) do not."""
    code, out, err = run(capsys, "plan", "qwen2.5-vl-7b", "--gpu", "l4", "--images-per-request", "200")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "273,800 image tokens" in err and "128,000-token context" in err
    assert run(capsys, "plan", "qwen2.5-vl-7b", "--gpu", "l4", "--images-per-request", "94")[0] == 2
    fits = _plan(capsys, "qwen2.5-vl-7b", "--gpu", "l4", "--images-per-request", "93")
    assert fits["breakdown"]["image_tokens_per_request"] == 127_317
    assert fits["performance"]["prompt_tokens"] + fits["performance"]["output_tokens"] <= 128_000
    anyway = _plan(capsys, "qwen2.5-vl-7b", "--gpu", "l4", "--images-per-request", "200", "--allow-long-context")
    assert anyway["workload"]["context_tokens"] > 128_000  # planned past the limit, as asked, and warned
    assert "context_beyond_model_limit" in {w["code"] for w in anyway["warnings"]}
