"""A vision model's timed prompt is the prompt its sequence holds: text and image tokens, never more than the context.
The vision tower's work, which prefill times as prompt tokens of the same cost, is reported beside it under the key an
encoder-decoder's encoder work uses (``encoder_prefill_equivalent_tokens``). Before, ``performance.prompt_tokens``
counted the tower's work as prompt: qwen2.5-vl-7b with two 1024x1024 images and ``--context 1280`` on an L40S read
4,810 prompt tokens (1,024 text + 2,738 image + 1,048 for the tower) against a 4,018-token sequence
(1,280 text + 2,738 image), while Whisper's was its decoder's own 4-token prompt. The speed is the same.
The plan JSON's ``workload.prompt_tokens`` is that held prompt too; before, it kept the timed one (4,810 in the example;
Whisper's 1,059: 4 + 1,055 for its encoder), while ``Plan.workload`` itself still holds the prompt the speed model
times."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Workload, plan, plan_to_json
from anchorgpu.planner.inference import request_media
from anchorgpu.planner.media import encoder_equivalent_tokens
from anchorgpu.planner.speed.estimate import plan_performance

CASES = {
    # (model, workload): in-context images of two sizes, a given prompt, a long default context
    "qwen2.5-vl-7b two images, short context": (
        "qwen2.5-vl-7b", Workload(task="inference", context_tokens=1280, images_per_request=2)),
    "qwen2.5-vl-7b by request": (
        "qwen2.5-vl-7b", Workload(task="inference", prompt_tokens=300, output_tokens=100, concurrency=16)),
    "gemma-3-4b default": ("gemma-3-4b", Workload(task="inference", concurrency=8)),
    "llava-1.5-7b context": ("llava-1.5-7b", Workload(task="inference", context_tokens=1024, concurrency=16)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_vision_plans_prompt_is_what_its_sequence_holds(case: str) -> None:
    name, w = CASES[case]
    model = load_model(name)
    p = plan(model, w, gpu=get_gpu("l40s"))
    perf = plan_performance(p)
    images = p.breakdown["image_tokens_per_request"]
    tower = encoder_equivalent_tokens(request_media(model, w), model)
    assert images > 0 and tower > 0
    assert perf["encoder_prefill_equivalent_tokens"] == tower
    assert "encoder_input_tokens" not in perf  # the images are in the prompt, not an encoder's input
    # the speed prompt the plan times (its workload's) is the prompt plus the tower's work, as before
    assert perf["prompt_tokens"] + tower == p.workload.prompt_tokens
    assert perf["prompt_tokens"] + perf["output_tokens"] <= p.workload.context_tokens
    assert perf["prompt_tokens"] > images  # text and image tokens


def test_the_figures_of_the_example() -> None:
    """The plan of the docstring's example (`anchorgpu plan qwen2.5-vl-7b --gpu l40s --images-per-request 2 --context
    1280 --json`): 1,024 text + 2,738 image tokens, the tower's work as 1,136 tokens (its products without the LM head, which runs at sampled positions only), within 4,018."""
    p = plan(load_model("qwen2.5-vl-7b"), Workload(task="inference", context_tokens=1280, images_per_request=2),
             gpu=get_gpu("l40s"))
    perf = plan_performance(p)
    assert (perf["prompt_tokens"], perf["encoder_prefill_equivalent_tokens"], perf["output_tokens"]) == (3762, 1136, 256)
    assert p.workload.context_tokens == 4018


def test_an_encoder_decoders_prompt_is_unchanged() -> None:
    """Whisper: the decoder's own 4-token prompt, the encoder's 1,500 frames and their work beside it."""
    p = plan(load_model("whisper-large-v3"), Workload(task="inference"), gpu=get_gpu("l40s"))
    perf = plan_performance(p)
    assert (perf["prompt_tokens"], perf["encoder_input_tokens"], perf["encoder_prefill_equivalent_tokens"]) == (
        4, 1500, 1139)


JSON_CASES = {
    **CASES,
    "whisper-large-v3 default": ("whisper-large-v3", Workload(task="inference")),
    "t5-base by request": ("t5-base", Workload(task="inference", prompt_tokens=500, output_tokens=100)),
    "llama-3.2-11b-vision (cross-attention images)": ("llama-3.2-11b-vision", Workload(task="inference")),
}


@pytest.mark.parametrize("case", list(JSON_CASES))
def test_the_plan_jsons_workload_holds_the_prompt_performance_reports(case: str) -> None:
    name, w = JSON_CASES[case]
    p = plan(load_model(name), w, gpu=get_gpu("l40s"))
    perf = plan_performance(p)
    body = plan_to_json(p)
    stand_in = body["breakdown"]["encoder_prefill_equivalent_tokens"]
    assert stand_in == perf["encoder_prefill_equivalent_tokens"] > 0
    assert (body["workload"]["prompt_tokens"], body["workload"]["output_tokens"]) == (perf["prompt_tokens"],
                                                                                      perf["output_tokens"])
    assert body["workload"]["prompt_tokens"] + stand_in == p.workload.prompt_tokens  # the prompt plan times


def test_the_plan_json_of_the_example() -> None:
    """`anchorgpu plan qwen2.5-vl-7b --gpu l40s --images-per-request 2 --context 1280 --json`: workload.prompt_tokens
    3,762 (1,024 text + 2,738 image tokens), the tower's 1,136 under breakdown, not 4,810."""
    p = plan(load_model("qwen2.5-vl-7b"), Workload(task="inference", context_tokens=1280, images_per_request=2),
             gpu=get_gpu("l40s"))
    body = plan_to_json(p)
    assert (body["workload"]["prompt_tokens"], body["breakdown"]["encoder_prefill_equivalent_tokens"]) == (3762, 1136)


def test_a_text_plan_has_no_encoder_key() -> None:
    perf = plan_performance(plan(load_model("llama-3.1-8b"), Workload(task="inference"), gpu=get_gpu("l40s")))
    assert "encoder_prefill_equivalent_tokens" not in perf and "encoder_input_tokens" not in perf


def test_recommend_reports_the_same_prompt(capsys) -> None:  # type: ignore[no-untyped-def]
    """`anchorgpu recommend --json`'s workload: the example's prompt within its 4,018-token sequence, the tower's work
    beside it (before: 4,810 prompt tokens and no such key)."""
    from cli_runner import run_json

    body = run_json(capsys, "recommend", "qwen2.5-vl-7b", "--context", "1280", "--images-per-request", "2", "--gpu",
                    "l40s", "--term", "1month", "--top", "1")
    w = body["workload"]
    assert (w["prompt_tokens"], w["encoder_prefill_equivalent_tokens"], w["context_tokens"]) == (3762, 1136, 4018)
    assert "encoder_input_tokens" not in w
