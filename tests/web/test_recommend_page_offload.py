"""The recommend page marks a training row planned with its optimizer state in host memory (stop 58 recoffload:
where no layout without offload fits the offering's GPUs, the row is plan's ``--offload optimizer`` layout) and lists
the row under the checks of ``offload_slows_training``, as the CLI's ``off:opt`` and footnote do."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

QUERY = {"model": "llama-3.1-70b", "task": "train", "gpu": "h100-sxm", "max_servers": "1", "train_tokens": "10B"}


@pytest.mark.parametrize(("lang", "badge"), [("en", "optimizer offloaded"), ("ru", "оптимизатор выгружен")])
def test_the_offloaded_row_is_marked(client: TestClient, lang: str, badge: str) -> None:
    body = client.post("/v1/recommend", json={**QUERY, "max_servers": 1, "train_tokens": 10**10}).json()
    offloaded = [i for i, r in enumerate(body["results"], 1) if r["layout"].get("offload") == "optimizer"]
    assert offloaded  # 70B on one 8 x H100 server: nothing fits without offload (plan --gpus 8 offers it first)
    page = client.get("/recommend", params={**QUERY, "lang": lang}).text
    for i in range(1, len(body["results"]) + 1):
        row = re.search(rf'<tr id="rec-{i}">(.*?)</tr>', page, re.S)
        assert row is not None and (badge in row.group(1)) == (i in offloaded), i
    checks = page[page.index('id="checks"'):]
    assert "offload_slows_training" in checks[:checks.index("</ul>")]
