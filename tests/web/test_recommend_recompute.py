"""The recommend page says which activation recompute each training result was sized and timed with, as the CLI
and JSON do (``rc:LEVEL`` after the layout when it is not ``none``), and its context-parallel size (``CPn``) where
the sweep split the sequences."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient


def test_the_recommend_page_shows_the_recompute(client: TestClient) -> None:
    # Llama 3.1 70B at 16k tokens on H100: one server holds it only by recomputing, and some results split the
    # sequences with CP (Qwen3-30B-A3B, this test's model until stop 60, now fits one server at TP 4 without
    # recompute, its MoE layers paying only the attention's TP traffic: benchmarks/hardening/stop60_mztrain.md)
    page = client.get("/recommend?model=llama-3.1-70b&task=train&tokens=1e10&seq=16384&gpu=h100")
    assert page.status_code == 200 and re.search(r"rc:(full|moe|selective)", page.text)
    assert re.search(r"PP\d+ CP\d+ DP\d+", page.text)
