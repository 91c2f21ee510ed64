"""End to end against real ``anchorgpu serve`` processes: the embedded default, and 2 workers on PostgreSQL.

No browser here: plain HTTP with httpx, an API key from ``anchorgpu accounts create`` on the same database.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.slow


def _create_key(kit: Any, tmp_path: Path, database_url: str | None = None) -> str:
    done = subprocess.run([kit.exe(), "accounts", "create", "e2e", "--json"], env=kit.env(tmp_path, database_url),
                          capture_output=True, text=True, timeout=60, check=True)
    key: str = json.loads(done.stdout)["api_key"]
    return key


def _book_twice_and_stop(base: str, key: str) -> dict[str, Any]:
    auth = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base, timeout=30) as http:
        quote = http.post("/v1/quotes", json={"offering": "h100-sxm-1x-vm", "quantity": 1, "term": "1w", "options": {}}, headers=auth)
        assert quote.status_code == 201, quote.text
        buy = {"quote_id": quote.json()["id"]}
        first = http.post("/v1/allocations", json=buy, headers={**auth, "Idempotency-Key": "e2e-buy"})
        again = http.post("/v1/allocations", json=buy, headers={**auth, "Idempotency-Key": "e2e-buy"})
        assert first.status_code == again.status_code == 201
        assert again.headers["idempotent-replayed"] == "true"
        assert again.json() == first.json()
        allocation = first.json()
        stopped = http.post(f"/v1/allocations/{allocation['id']}/stop", headers={**auth, "Idempotency-Key": "e2e-stop"})
        assert stopped.status_code == 200
        assert stopped.json()["ends_at"] == allocation["ends_at"]
        assert "does not pause" in stopped.json()["notice"]
        listed = http.get("/v1/allocations", headers=auth).json()
        assert listed["count"] == 1
        return allocation


def test_serve_on_a_fresh_machine_creates_the_database_and_serves_api_and_page(tmp_path: Path, serve_kit: Any) -> None:
    process, base, log = serve_kit.start(tmp_path)
    try:
        assert (tmp_path / "anchorgpu.db").exists()
        printed = log.read_text()
        assert f"page:     {base}/" in printed
        assert "anchorgpu accounts create NAME" in printed and "/signin" in printed
        with httpx.Client(base_url=base, timeout=30) as http:
            assert http.get("/v1/healthz").json()["database"] == "sqlite"
            assert http.get("/openapi.json").status_code == 200
            assert "Plan a workload" in http.get("/").text
            assert http.get("/v1/offerings", params={"gpu": "h100"}).json()["count"] > 0  # stock seeded
        _book_twice_and_stop(base, _create_key(serve_kit, tmp_path))
    finally:
        serve_kit.stop(process)


def test_serve_refuses_several_workers_on_the_embedded_sqlite(tmp_path: Path, serve_kit: Any) -> None:
    done = subprocess.run([serve_kit.exe(), "serve", "--workers", "2", "--port", "1"], env=serve_kit.env(tmp_path),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("error: --workers 2 needs PostgreSQL")


@pytest.mark.postgres
def test_serve_with_two_workers_on_postgresql(tmp_path: Path, postgres_url: str, serve_kit: Any) -> None:
    process, base, log = serve_kit.start(tmp_path, database_url=postgres_url, workers=2)
    try:
        with httpx.Client(base_url=base, timeout=30) as http:
            assert http.get("/v1/healthz").json()["database"] == "postgresql"
        _book_twice_and_stop(base, _create_key(serve_kit, tmp_path, postgres_url))
        assert "workers:  2" in log.read_text()
    finally:
        serve_kit.stop(process)
