"""The planner and recommend pages take a request's prompt and output tokens, as the CLI and the API do: without a
context each sequence is sized at prompt + output (issue 11, 'Serving'). The recommend page had neither field, the
planner page no prompt field."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient


@pytest.mark.parametrize("path", ["/plan", "/recommend"])
def test_both_forms_have_the_fields_in_both_languages(client: TestClient, path: str) -> None:
    english, russian = client.get(path).text, client.get(f"{path}?lang=ru").text
    for page in (english, russian):
        assert 'name="prompt"' in page and 'name="output_tokens"' in page
    assert "Prompt tokens per request" in english and "Входных токенов на запрос" in russian


def test_the_recommend_page_sizes_sequences_at_prompt_plus_output(client: TestClient) -> None:
    page = client.get("/recommend?model=llama-3.1-8b&concurrency=64&prompt=1000&output_tokens=200&top=1").text
    assert "prompt + output = 1,000 + 200 = 1,200 tokens" in page
    assert 'name="prompt" inputmode="numeric" value="1000"' in page  # the form keeps what was asked


def test_the_planner_page_sizes_sequences_at_prompt_plus_output(client: TestClient) -> None:
    page = client.get("/plan?model=llama-3.1-8b&gpu=h100&concurrency=64&prompt=1000&output_tokens=200").text
    assert re.search(r"prompt \+ output = 1,000 \+ 200 = 1,200 tokens", page)


@pytest.mark.parametrize("path", ["/plan", "/recommend"])
def test_both_forms_plan_for_the_serving_engine_chosen(client: TestClient, path: str) -> None:
    """``--engine trtllm`` on the pages (tests/planner/test_engine_trtllm.py): the select, in both languages, and the
    answer sized for TensorRT-LLM, the choice kept in the form."""
    english, russian = client.get(path).text, client.get(f"{path}?lang=ru").text
    assert 'name="engine"' in english and "Serving engine" in english and "Движок инференса" in russian
    query = "model=qwen3-32b&gpu=a100-80gb-sxm&prompt=16000&output_tokens=100&concurrency=3&engine=trtllm"
    page = client.get(f"{path}?{query}&lang=en" + ("&gpus=1" if path == "/plan" else "&top=1")).text
    assert "Serving engine sized like TensorRT-LLM" in page
    assert '<option value="trtllm" selected>' in page
    if path == "/plan":  # the A100's TensorRT-LLM runs (GPUStack's TGA-* rows) are the evidence shown, named
        # (then how far those runs widened the band: a median 0.93x, so its low end moves)
        assert re.search(r'<dd id="evidence">10 held-out runs: median [0-9.]+× [^<]* · TensorRT-LLM( · band widened [^<]*)?</dd>',
                         page)


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_recommend_page_refuses_an_unknown_task_as_the_planner_does(client: TestClient, lang: str) -> None:
    """``task=pretrain`` was dropped in silence and the page recommended offerings for serving; the planner page and
    ``POST /v1/recommend`` refuse it."""
    page = client.get(f"/recommend?model=llama-3.1-8b&task=pretrain&top=1&lang={lang}")
    assert page.status_code == 422 and ("“Task”: " if lang == "en" else "«Задача»: ") in page.text
    assert 'id="recommend-error"' in page.text
    assert client.get("/plan?model=llama-3.1-8b&task=pretrain").status_code == 422
