"""The recommend page says which activation recompute each training result was sized and timed with, as the CLI
and JSON do (``rc:LEVEL`` after the layout when it is not ``none``)."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_the_recommend_page_shows_the_recompute(client: TestClient) -> None:
    page = client.get("/recommend?model=qwen3-30b-a3b&task=train&tokens=1e10&seq=16384&gpu=h100")
    assert page.status_code == 200 and "rc:moe" in page.text
