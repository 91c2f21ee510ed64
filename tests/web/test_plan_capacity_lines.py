"""The planner page's capacity lines say what ``anchorgpu plan`` says: how many sequences the engine runs at once where
its sequence cap (max_num_seqs x replicas) is below what the memory holds, and the KV cache the engine reserves at
start-up. The page showed only "Max concurrency 2,007 sequences" for Llama-3.1-8B on one H100 where the CLI adds
"the engine runs 1,024 at once (max_num_seqs 1,024 x 1 replica); more wait in its queue" and "the engine reserves
50.97 GiB per GPU for KV cache at start-up"; its own assumption pointed at a kv_cache_capacity_bytes it never showed.
The figures here are read from ``POST /v1/plan`` for the same request."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

CAPPED = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "concurrency": 100, "prompt": 100, "output_tokens": 100}
REPLICAS = {"model": "gpt-oss-20b", "gpu": "h100-sxm", "concurrency": 100000}


def _query(body: dict[str, object]) -> str:
    return "&".join(f"{k}={v}" for k, v in body.items())


def _dd(page: str, ident: str) -> str | None:
    found = re.search(rf'<dd id="{ident}">([^<]*)</dd>', page)
    return found.group(1) if found else None


@pytest.mark.parametrize("body", [CAPPED, REPLICAS], ids=["one-replica", "104-replicas"])
def test_the_engine_cap_and_the_reserved_kv_cache_match_the_api(client: TestClient, body: dict[str, object]) -> None:
    plan = client.post("/v1/plan", json=body).json()
    cap = plan["workload"]["max_num_seqs"] * plan["layout"]["dp"]
    assert 0 < cap < plan["max_concurrency"]
    replicas = plan["layout"]["dp"]
    page = client.get(f"/plan?{_query(body)}&lang=en").text
    assert _dd(page, "engine-cap") == (
        f"the engine runs {cap:,} at once (max_num_seqs {plan['workload']['max_num_seqs']:,} × {replicas} "
        f"replica{'' if replicas == 1 else 's'}); more wait in its queue")
    assert _dd(page, "kv-reserved") == f"{plan['breakdown']['kv_cache_capacity_bytes'] / 2**30:.1f} GiB per GPU"


def test_the_lines_are_russian_on_the_russian_page(client: TestClient) -> None:
    page = client.get(f"/plan?{_query(REPLICAS)}&lang=ru").text
    assert "<dt>Одновременно в работе</dt>" in page and "<dt>KV-кэш, резервируемый при запуске</dt>" in page
    assert re.search(r'<dd id="engine-cap">движок одновременно выполняет [\d\u00a0 ]+ \(max_num_seqs [\d\u00a0 ]+ × 104 '
                     r"реплики\); остальные ждут в его очереди</dd>", page)


def test_no_cap_line_where_the_engine_runs_everything_the_memory_holds(client: TestClient) -> None:
    page = client.get("/plan?model=llama-3.1-70b&gpu=h100-sxm&gpus=8&context=8192&concurrency=32").text
    assert 'id="max-concurrency"' in page and 'id="engine-cap"' not in page  # 157 held, 1,024 allowed
    assert 'id="kv-reserved"' in page
