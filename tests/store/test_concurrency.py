"""Races with real threads and real processes: no overselling, one allocation per key, nothing half-written.

Threads each use their own connection (their own unit of work), so the database — not Python — decides
who wins: the stock row lock (PostgreSQL ``SELECT … FOR UPDATE``) or the write lock (SQLite
``BEGIN IMMEDIATE``), and the unique (account, operation, key) constraint on idempotency keys.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from anchorgpu.allocations import services as svc
from anchorgpu.allocations.errors import IdempotencyInProgress, InsufficientCapacity
from anchorgpu.bootstrap import bootstrap
from anchorgpu.config import Settings
from anchorgpu.store.tables import (
    AllocationEventRow,
    AllocationRow,
    CapacityBookingRow,
    IdempotencyKeyRow,
    QuoteRow,
)

H100 = "h100-sxm-1x-vm"
SRC = Path(__file__).resolve().parents[2] / "src"


def _count(store: Any, table: Any) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def _race(n: int, fn: Callable[[int], Any]) -> list[Any]:
    """Run ``fn(i)`` for i < n in n threads released together; return results or exceptions."""
    barrier = threading.Barrier(n)

    def run(i: int) -> Any:
        barrier.wait()
        try:
            return fn(i)
        except Exception as exc:  # collected and checked by the test
            return exc

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(run, range(n)))


@pytest.fixture
def wide_store(db_url: str, fixed_clock: Any) -> Any:
    store = bootstrap(Settings(database_url=db_url), clock=fixed_clock, pool_size=60)
    yield store
    store.dispose()


def test_fifty_concurrent_buyers_of_the_last_three_servers_get_exactly_three(wide_store: Any, make_account: Any) -> None:
    store = wide_store
    svc.set_stock(store.uow_factory(), offering=H100, servers=3, clock=store.clock)
    buyers = [make_account(f"buyer {i}") for i in range(50)]
    quotes = [svc.create_quote(store.uow_factory(), account_id=b.id, offering=H100, term="1w", clock=store.clock)
              for b in buyers]

    results = _race(50, lambda i: svc.buy_quote(store.uow_factory(), account_id=buyers[i].id,
                                                quote_id=quotes[i]["id"], idempotency_key=f"buy-{i}",
                                                clock=store.clock))
    won = [r for r in results if not isinstance(r, Exception)]
    lost = [r for r in results if isinstance(r, Exception)]
    assert len(won) == 3 and all(r.status == 201 for r in won)
    assert len(lost) == 47 and all(isinstance(r, InsufficientCapacity) for r in lost), {type(r) for r in lost}
    assert _count(store, AllocationRow) == 3
    assert svc.list_stock(store.uow_factory(), clock=store.clock)[(H100, "us-east")] == 0


def test_twenty_concurrent_retries_of_one_key_make_one_allocation_and_identical_answers(
    wide_store: Any, account: Any,
) -> None:
    store = wide_store
    q = svc.create_quote(store.uow_factory(), account_id=account.id, offering=H100, term="1month", clock=store.clock)

    results = _race(20, lambda i: svc.buy_quote(store.uow_factory(), account_id=account.id, quote_id=q["id"],
                                                idempotency_key="the-one-key", clock=store.clock))
    errors = [r for r in results if isinstance(r, Exception)]
    assert all(isinstance(e, IdempotencyInProgress) for e in errors), errors
    answers = [(r.status, json.dumps(r.body, sort_keys=True)) for r in results if not isinstance(r, Exception)]
    assert answers and len(set(answers)) == 1
    assert sum(not r.replayed for r in results if not isinstance(r, Exception)) == 1
    assert _count(store, AllocationRow) == 1 and _count(store, IdempotencyKeyRow) == 1


BUYER_SCRIPT = """
import json, sys, time
from datetime import datetime
from pathlib import Path
from anchorgpu.allocations import services as svc
from anchorgpu.bootstrap import bootstrap
from anchorgpu.config import Settings

url, now_iso, go_file, jobs = sys.argv[1], sys.argv[2], Path(sys.argv[3]), json.loads(sys.argv[4])
now = datetime.fromisoformat(now_iso)
store = bootstrap(Settings(database_url=url), clock=lambda: now, migrate=False, seed=False)
while not go_file.exists():
    time.sleep(0.005)
out = []
for account_id, quote_id, key in jobs:
    try:
        o = svc.buy_quote(store.uow_factory(), account_id=account_id, quote_id=quote_id, idempotency_key=key,
                          clock=store.clock)
        out.append({"ok": o.body["id"], "replayed": o.replayed})
    except Exception as exc:
        out.append({"error": getattr(exc, "code", type(exc).__name__)})
print(json.dumps(out))
"""


def _python_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return env


@pytest.mark.slow
def test_buyers_in_separate_processes_never_oversell(store: Any, make_account: Any, tmp_path: Path) -> None:
    svc.set_stock(store.uow_factory(), offering=H100, servers=3, clock=store.clock)
    jobs = []
    for i in range(12):
        buyer = make_account(f"process buyer {i}")
        q = svc.create_quote(store.uow_factory(), account_id=buyer.id, offering=H100, term="1w", clock=store.clock)
        jobs.append((buyer.id, q["id"], f"proc-{i}"))
    go = tmp_path / "go"
    url = store.settings.database_url
    procs = [
        subprocess.Popen([sys.executable, "-c", BUYER_SCRIPT, url, store.clock().isoformat(), str(go),
                          json.dumps(jobs[i::4])], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=_python_env())
        for i in range(4)
    ]
    go.touch()
    outputs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outputs += json.loads(out)
    assert sum("ok" in o for o in outputs) == 3
    assert {o.get("error") for o in outputs if "error" in o} == {"insufficient_capacity"}
    assert _count(store, AllocationRow) == 3


KILLED_SCRIPT = """
import sys, time
from datetime import datetime
from anchorgpu.allocations import services as svc
from anchorgpu.bootstrap import bootstrap
from anchorgpu.config import Settings
from anchorgpu.store import repository

original = repository.QuoteRepository.mark_used

def mark_used_then_hang(self, quote_id, at):
    original(self, quote_id, at)
    self._session.flush()  # everything of the purchase is now written, but not committed
    print("WRITTEN", flush=True)
    time.sleep(120)

repository.QuoteRepository.mark_used = mark_used_then_hang
url, now_iso, account_id, quote_id = sys.argv[1:5]
now = datetime.fromisoformat(now_iso)
store = bootstrap(Settings(database_url=url), clock=lambda: now, migrate=False, seed=False)
svc.buy_quote(store.uow_factory(), account_id=account_id, quote_id=quote_id, idempotency_key="killed-key",
              clock=store.clock)
"""


@pytest.mark.slow
def test_a_purchase_killed_mid_transaction_leaves_nothing_half_written(store: Any, account: Any) -> None:
    q = svc.create_quote(store.uow_factory(), account_id=account.id, offering=H100, term="1month", clock=store.clock)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_SCRIPT, store.settings.database_url, store.clock().isoformat(), account.id, q["id"]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_python_env(),
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "WRITTEN", proc.stderr.read() if proc.stderr else ""
        # The allocation, its event, booking and key row exist only inside the doomed transaction.
        assert _count(store, AllocationRow) == 0
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    for table in (AllocationRow, AllocationEventRow, CapacityBookingRow, IdempotencyKeyRow):
        assert _count(store, table) == 0, table.__tablename__
    with store.engine.connect() as conn:
        assert conn.execute(select(QuoteRow.used_at).where(QuoteRow.id == q["id"])).scalar_one() is None
    # The client's retry with the same key now books it, once.
    retry = svc.buy_quote(store.uow_factory(), account_id=account.id, quote_id=q["id"], idempotency_key="killed-key",
                          clock=store.clock)
    assert retry.status == 201 and retry.replayed is False
    assert _count(store, AllocationRow) == 1


BOOT_SCRIPT = """
import sys, time
from pathlib import Path
from anchorgpu.bootstrap import bootstrap
from anchorgpu.config import Settings
from anchorgpu.allocations.services import list_stock

url, go_file = sys.argv[1], Path(sys.argv[2])
while not go_file.exists():
    time.sleep(0.005)
store = bootstrap(Settings(database_url=url))
print(len(list_stock(store.uow_factory())))
"""


@pytest.mark.slow
def test_workers_starting_together_on_an_empty_database_migrate_and_seed_once(empty_db_url: str, tmp_path: Path) -> None:
    # `anchorgpu serve --workers N` starts N processes that all bootstrap the same database.
    from anchorgpu.catalog import load_catalog

    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", BOOT_SCRIPT, empty_db_url, str(go)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_python_env()) for _ in range(3)]
    go.touch()
    expected = sum(len(o.initial_stock) for o in load_catalog().offerings)
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert int(out) == expected


@pytest.mark.postgres
@pytest.mark.slow
def test_a_twin_that_waits_too_long_for_the_first_request_is_told_it_is_in_progress(
    postgres_url: str, fixed_clock: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from anchorgpu.accounts import create_account
    from anchorgpu.allocations import idempotency

    store = bootstrap(Settings(database_url=postgres_url), clock=fixed_clock)
    account_id, _ = create_account(store.uow_factory(), "twin", clock=store.clock)
    account = type("A", (), {"id": account_id})
    q = svc.create_quote(store.uow_factory(), account_id=account.id, offering=H100, term="1w", clock=store.clock)
    proc = subprocess.Popen(  # the first request: writes everything, then hangs before commit
        [sys.executable, "-c", KILLED_SCRIPT, postgres_url, store.clock().isoformat(), account.id, q["id"]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_python_env(),
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "WRITTEN"
        monkeypatch.setattr(idempotency, "LOCK_TIMEOUT_S", 0.5)
        with pytest.raises(IdempotencyInProgress) as err:
            svc.buy_quote(store.uow_factory(), account_id=account.id, quote_id=q["id"], idempotency_key="killed-key",
                          clock=store.clock)
        assert (err.value.code, err.value.http_status) == ("idempotency_request_in_progress", 409)
    finally:
        proc.kill()
        proc.communicate()
    monkeypatch.setattr(idempotency, "LOCK_TIMEOUT_S", 15.0)
    retry = svc.buy_quote(store.uow_factory(), account_id=account.id, quote_id=q["id"], idempotency_key="killed-key",
                          clock=store.clock)
    assert retry.status == 201 and _count(store, AllocationRow) == 1
    store.dispose()
