"""A serving row sized at the default request whose KV cache holds no whole-window sequence gives the maximum length
to start the engine with (``max_model_len_tokens``, as ``anchorgpu recommend`` prints it under its table): the page
shows it in that row's Layout cell, named by the engine's own option, and says why in a note under the table, in
English and Russian. README ("recommend ... llama-3.1-8b --top 3"): the RTX 4090's KV cache holds 39,664 tokens of
Llama 3.1 8B's 131,072-token window, so its launch is started with ``--max-model-len 39664``."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.planner.inputs import ENGINES
from anchorgpu.web.launch import LENGTH_FLAGS

NO_CONTEXT = {"model": "llama-3.1-8b", "top": 3}  # no --context: more users at the default request, one at the window


def _text(fragment: str) -> str:
    return re.sub(r"[ \t\r\n]+", " ", html.unescape(re.sub(r"<[^>]+>", " ", fragment))).strip()


def _row(page: str, rank: int) -> str:
    match = re.search(rf'<tr id="rec-{rank}">(.*?)</tr>', page, re.S)
    assert match, f"no row {rank}"
    return match.group(1)


def _note(page: str) -> str:
    match = re.search(r'<p class="warning" id="max-model-len-note" role="note">(.*?)</p>', page, re.S)
    assert match, "no note on the maximum length"
    return _text(match.group(1))


def _rtx_4090(client: TestClient) -> tuple[int, int]:
    """(rank, maximum length) of the RTX 4090 row of the API's answer for the same request."""
    results = client.post("/v1/recommend", json=NO_CONTEXT).json()["results"]
    rank, row = next((i, r) for i, r in enumerate(results, 1) if r["gpu"] == "rtx-4090")
    assert row["max_model_len_tokens"] is not None  # README: 39,664 tokens, short of the 131,072-token window
    return rank, int(row["max_model_len_tokens"])


def test_the_rtx_4090_row_shows_the_length_to_start_the_engine_with_in_english(client: TestClient) -> None:
    rank, tokens = _rtx_4090(client)
    page = client.get("/recommend?model=llama-3.1-8b&top=3&lang=en").text
    shown = re.search(r'class="muted small max-model-len" title="([^"]*)"><span aria-hidden="true">(.*?)</span><span',
                      _row(page, rank))
    assert shown, "the row gives no maximum length"
    assert _text(shown.group(2)) == f"--max-model-len {tokens}"  # as the engine takes it: no grouping
    assert html.unescape(shown.group(1)) == (f"start the engine with --max-model-len {tokens}: its KV cache holds no "
                                             "whole window of the model (131,072 tokens)")  # Llama 3.1's window
    note = _note(page)
    assert f"#{rank}\u00a0{tokens:,}" in note and "(131,072 tokens)" in note and "--max-model-len" in note
    assert note.endswith("At its default vLLM refuses to start.")


def test_the_rtx_4090_row_shows_the_length_in_russian(client: TestClient) -> None:
    rank, tokens = _rtx_4090(client)
    page = client.get("/recommend?model=llama-3.1-8b&top=3&lang=ru").text
    russian = f"{tokens:,}".replace(",", "\u00a0")  # the Russian grouping (babel: a no-break space)
    row = _text(_row(page, rank))
    assert f"--max-model-len {tokens} запускайте" in row  # the figure, then its words for screen readers
    assert f"запускайте движок с --max-model-len {tokens}: его KV-кэш не вмещает целого окна модели" in row
    note = _note(page)
    assert note.startswith("Максимальная длина для запуска движка") and "«Раскладка»" in note
    assert f"#{rank}\u00a0{russian}" in note and "vLLM не запустится" in note


def test_a_context_given_gives_no_length(client: TestClient) -> None:
    """Every sequence at the --context asked: the engine starts at it, the rows and the page say nothing more."""
    assert not any(r.get("max_model_len_tokens") for r in
                   client.post("/v1/recommend", json={**NO_CONTEXT, "context": 8192}).json()["results"])
    page = client.get("/recommend?model=llama-3.1-8b&top=3&context=8192&lang=en").text
    assert 'id="rec-1"' in page and "max-model-len" not in page


@pytest.mark.parametrize("engine", ENGINES)
def test_the_option_named_is_the_one_the_engines_launch_sets(client: TestClient, engine: str) -> None:
    """The page names each engine's option as the launch recipe (``--recipe``) writes it, with the row's length."""
    body: dict[str, Any] = {**NO_CONTEXT, "top": 1, "recipe": engine, "engine": engine}
    row = client.post("/v1/recommend", json=body).json()["results"][0]
    flag, tokens = LENGTH_FLAGS[engine], row["max_model_len_tokens"]
    assert tokens and re.search(rf"{flag}[\s=\"',\\]+{tokens}\b", str(row["recipe"])), (engine, tokens)
    page = client.get(f"/recommend?model=llama-3.1-8b&top=1&engine={engine}&lang=en").text
    assert f'<span class="flag">{flag}</span> {tokens}</span>' in _row(page, 1)
    assert ("vLLM refuses to start" in _note(page)) is (engine == "vllm")
