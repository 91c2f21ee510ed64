"""The planner and recommend forms keep an explicit serving-engine choice: vLLM chosen for a training plan is refused
naming it, as ``--engine vllm --task train`` is on the CLI and the API (and as TensorRT-LLM already was on the page),
while the select left at its blank default sends nothing.

Before: the page dropped ``engine=vllm`` from a training form in silence (a stale entry from when the select defaulted
to vLLM) and planned as if nothing had been chosen, while ``engine=trtllm`` was refused.
"""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

from cli_runner import run

REFUSAL = "--engine vllm applies to serving a language model (task inference); task train serves no requests"
PAGES = {"/plan": {"model": "llama-3.1-8b", "gpu": "h100", "task": "train"},
         "/recommend": {"model": "llama-3.2-1b", "task": "train", "max_servers": "1", "top": "1"}}


@pytest.mark.parametrize("path", sorted(PAGES))
def test_the_engine_select_defaults_to_nothing(client: TestClient, path: str) -> None:
    select = re.search(r'<select name="engine"[^>]*>(.*?)</select>', client.get(path).text, re.S)
    assert select is not None
    assert re.findall(r'<option value="([^"]*)"\s+selected', select.group(1)) == [""]


@pytest.mark.parametrize("path", sorted(PAGES))
@pytest.mark.parametrize("engine", ["vllm", "trtllm"])
def test_an_engine_chosen_for_training_is_refused_as_the_cli_refuses_it(
        client: TestClient, capsys: pytest.CaptureFixture[str], path: str, engine: str) -> None:
    page = client.get(path, params={**PAGES[path], "engine": engine})
    said = REFUSAL.replace("vllm", engine)
    assert page.status_code == 422 and said.replace("--engine", "“Serving engine”") in html.unescape(page.text)  # its label
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--engine", engine)
    assert code == 2 and said in err


@pytest.mark.parametrize("path", sorted(PAGES))
def test_the_select_left_alone_plans_the_training(client: TestClient, path: str) -> None:
    page = client.get(path, params={**PAGES[path], "engine": "", "optimizer": "adamw", "train_precision": "mixed"})
    assert page.status_code == 200 and 'role="alert"' not in page.text


def test_vllm_chosen_for_serving_is_kept(client: TestClient) -> None:
    page = client.get("/plan", params={"model": "llama-3.1-8b", "gpu": "h100", "engine": "vllm"})
    assert page.status_code == 200
    assert re.search(r'<option value="vllm"\s+selected', page.text)
