"""The recommend page says which activation recompute each training result was sized and timed with, as the CLI
and JSON do (``rc:LEVEL`` after the layout when it is not ``none``), and its context-parallel size (``CPn``) where
the sweep split the sequences."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient


def test_the_recommend_page_shows_the_recompute(client: TestClient) -> None:
    page = client.get("/recommend?model=qwen3-30b-a3b&task=train&tokens=1e10&seq=16384&gpu=h100")
    # one server holds the 16k run only by recomputing; more servers split the sequences with CP instead
    assert page.status_code == 200 and re.search(r"rc:(full|moe|selective)", page.text)
    assert re.search(r"PP\d+ CP\d+ DP\d+", page.text)
