"""The planner and recommend pages say the planner's advice in their form's names, as the API does
(tests/api/test_advice_in_field_words.py): the form's inputs, the URLs its links build and its own "context: must be at
least 1" (both languages) are the request's field names, never the CLI's flags. Before, "What would fit" offered
``--max-num-seqs 256`` and a rejected offering read ``--train-precision fp8: …``, flags no page user has; the links
still apply the change to the form."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

from cli_runner import run

NOT_FITTING = {"model": "gpt-oss-120b", "gpu": "h100-sxm", "concurrency": "64", "gpus": "1"}


def _changes(page: str) -> list[str]:
    table = re.search(r'<table id="suggestions">(.*?)</table>', page, re.S)
    assert table is not None
    return [html.unescape(change) for change in re.findall(r"<code>([^<]+)</code>", table.group(1))]


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_what_would_fit_names_the_forms_fields(client: TestClient, capsys: pytest.CaptureFixture[str], lang: str) -> None:
    page = client.get("/plan", params={**NOT_FITTING, "lang": lang}).text
    assert _changes(page) == ["engine trtllm", "max_num_seqs 256", "gpu_memory_utilization 0.96", "gpus 2 tp 2"]
    link = re.search(r'<a href="([^"]+)" class="apply-suggestion"><code>max_num_seqs 256</code>', page)
    assert link is not None and "max_num_seqs=256" in html.unescape(link.group(1))  # the link still applies it
    _, table, _ = run(capsys, "plan", "gpt-oss-120b", "--gpu", "h100-sxm", "--concurrency", "64", "--gpus", "1")
    assert "--max-num-seqs 256" in table  # the CLI keeps its flag


def test_the_needed_change_names_the_fields(client: TestClient) -> None:
    page = client.get("/plan?model=llama-3.1-70b&gpu=h100-sxm&gpus=1&context=8192").text
    needed = re.search(r'id="needed-change"[^>]*>(?:<code>)?([^<]+)<', page)
    assert needed is not None and needed.group(1) == "gpus 4 tp 4"  # the CLI: --gpus 4 --tp 4


def test_a_rejected_offering_names_the_field_on_the_recommend_page(client: TestClient) -> None:
    """FP8 training on an A100 (no FP8 tensor cores, hardware/data/gpus.toml), ranked by a 10B-token run's price (a
    rejection is shown where cheaper than the first row; by the month's price, since stop 58, one L40S with its
    optimizer state offloaded is cheaper than the A100 VM)."""
    page = client.get("/recommend", params={"model": "llama-3.1-8b", "task": "train", "train_precision": "fp8",
                                            "top": "3", "train_tokens": "10B"}).text
    assert "train_precision fp8: a100-80gb-sxm has no FP8 tensor cores" in html.unescape(page)
    assert "--train-precision" not in page


def test_the_recommend_pages_assumptions_name_the_planner_page(client: TestClient) -> None:
    page = html.unescape(client.get("/recommend", params={"model": "llama-3.1-8b", "top": "3"}).text)
    assert "each sequence sized as the Planner page with concurrency N sizes it" in page
    assert "for chat, set min_tokens_per_s_per_user" in page
