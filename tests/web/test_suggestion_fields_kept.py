"""A "What would fit" change opens a plan whose form shows and keeps it. gpt-oss-120b for 64 users on one H100 does
not fit at vLLM's defaults; the page offers ``max_num_seqs 256`` and ``gpu_memory_utilization 0.96`` (its form's
fields, as the API names them; ``anchorgpu plan`` says ``--max-num-seqs 256``). The first link planned max_num_seqs=256 but the form had no such field, so the next edit
dropped it in silence and the plan no longer fit."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

ASKED = "/plan?model=gpt-oss-120b&gpu=h100-sxm&concurrency=64&gpus=1"


def _links(page: str) -> dict[str, str]:
    table = re.search(r'<table id="suggestions">(.*?)</table>', page, re.S)
    assert table is not None
    return {change: html.unescape(link) for link, change in
            re.findall(r'<a href="([^"]+)" class="apply-suggestion"><code>([^<]+)</code>', table.group(1))}


@pytest.mark.parametrize(("change", "field", "value"), [("max_num_seqs 256", "max_num_seqs", "256"),
                                                        ("gpu_memory_utilization 0.96", "gpu_memory_utilization", "0.96")])
def test_the_opened_plan_fits_and_its_form_keeps_the_change(client: TestClient, change: str, field: str, value: str) -> None:
    asked = client.get(ASKED).text
    assert 'class="verdict nofit"' in asked
    opened = client.get(_links(asked)[change]).text
    assert 'class="verdict fits"' in opened
    assert re.search(rf'<input name="{field}"[^>]* value="{re.escape(value)}"', opened)  # a later edit sends it again
    assert re.search(r'<details class="more"\s+open>', opened)  # and the user sees it


def test_the_engine_fields_are_in_both_languages(client: TestClient) -> None:
    english, russian = client.get("/plan").text, client.get("/plan?lang=ru").text
    for page in (english, russian):
        assert 'name="max_num_seqs"' in page and 'name="max_num_batched_tokens"' in page
    assert "Sequences the engine runs at once (max_num_seqs)" in english
    assert "Одновременных последовательностей в движке (max_num_seqs)" in russian


def test_the_section_stays_closed_when_none_of_its_fields_is_set(client: TestClient) -> None:
    page = client.get("/plan?model=llama-3.1-8b&gpu=h100-sxm").text
    assert re.search(r'<details class="more"\s*>', page)


def test_a_context_parallel_split_is_a_form_field(client: TestClient) -> None:
    """A "What would fit" change can be ``--cp N`` (planner.suggest: from 16,384-token training sequences); the form
    had TP, PP, DP and EP but no CP, so a plan opened with cp=2 lost it at the next edit."""
    page = client.get("/plan?model=llama-3.1-8b&task=train&gpu=h100-sxm&gpus=8&tp=1&seq=32768&cp=2&zero=1").text
    assert re.search(r'<input name="cp"[^>]* value="2"', page)
    assert "cp=2" in page  # the plan's layout line: the split was planned
