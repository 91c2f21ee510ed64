"""PostgreSQL restarted in the middle of a booking load: nothing lost, nothing doubled, 503 while it is
down, recovery without restarting AnchorGPU.

The test starts its own PostgreSQL cluster (``initdb`` + ``pg_ctl`` from /usr/lib/postgresql/*/bin, in a
temporary folder, on a free port), then ``anchorgpu serve --workers 2`` on it (the load harness's
:class:`load_server.Server`). Six clients quote and book in a loop, each booking with its own
``Idempotency-Key`` and retrying the same request on a 503 or a transport error until it has its final
answer. Mid-run the cluster is stopped with ``pg_ctl stop -m immediate`` (a crash: no shutdown
checkpoint, WAL recovery on start), left down for 2 s, and started again. Then:

* while it was down, requests answered 503 ``database_unavailable`` as problem+json with ``Retry-After``,
  and no request answered any other 5xx;
* bookings succeed again within seconds, on the same server processes (same worker pids): the pools'
  pre-ping replaced the dead connections;
* the database holds exactly the acknowledged bookings: one allocation per acknowledged key, with its
  ``created`` event, one capacity row and its quote marked used, and no allocation nobody was told of.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, func, select

from anchorgpu.store.tables import AllocationEventRow, AllocationRow, CapacityBookingRow, IdempotencyKeyRow, QuoteRow

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "load"))
import load_server  # noqa: E402


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


@dataclass
class Cluster:
    """A throw-away PostgreSQL cluster: trust auth, loopback only, its own port and folder."""

    bin: Path
    folder: Path
    port: int = field(default_factory=load_server.free_port)

    def _run(self, *args: str, timeout_s: float = 60) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {done.stderr.strip()[-800:]}")

    @property
    def data(self) -> str:
        return str(self.folder / "data")

    def init(self) -> None:
        self._run("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")

    def start(self) -> None:
        self._run("pg_ctl", "-D", self.data, "-l", str(self.folder / "log"), "-w", "-t", "60", "-o",
                  f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c max_connections=60", "start")

    def crash_stop(self) -> None:
        self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop", timeout_s=30)
        except RuntimeError:
            pass  # not running

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    bin_dir = _pg_bin()
    if bin_dir is None or not (bin_dir / "initdb").exists():
        pytest.skip("initdb/pg_ctl not found (install the PostgreSQL server package); the restart test needs its own cluster")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: cannot start PostgreSQL as another user")
    folder = Path(tempfile.mkdtemp(prefix="agpu-pg-"))  # outside pytest's root-only tmp tree: the postgres user enters it
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    made = Cluster(bin_dir, folder)
    try:
        made.init()
        made.start()
        yield made
    finally:
        made.stop()
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Record:
    lock: threading.Lock = field(default_factory=threading.Lock)
    answers: list[tuple[float, int, str, dict[str, str]]] = field(default_factory=list)  # (t, status, code, headers)
    booked: dict[str, str] = field(default_factory=dict)  # idempotency key -> allocation id (acknowledged 201)
    transport_errors: int = 0

    def add(self, status: int, code: str, headers: dict[str, str]) -> None:
        with self.lock:
            self.answers.append((time.monotonic(), status, code, headers))


def _until_final(client: httpx.Client, record: Record, method: str, url: str, deadline: float, **kwargs: Any) -> httpx.Response:
    """Send until the answer is final (not a 503, no transport error); the same body and key each time."""
    while True:
        if time.monotonic() > deadline:
            raise AssertionError(f"{method} {url}: no final answer before the deadline")
        try:
            answer = client.request(method, url, **kwargs)
        except httpx.TransportError:
            with record.lock:
                record.transport_errors += 1
            time.sleep(0.2)
            continue
        code = answer.json().get("code", "") if answer.headers.get("content-type", "").startswith("application/problem+json") else ""
        record.add(answer.status_code, code, {k.lower(): v for k, v in answer.headers.items()})
        if answer.status_code == 503:
            time.sleep(float(answer.headers.get("retry-after", "1")) / 4)
            continue
        return answer


def _client_loop(base: str, api_key: str, name: str, record: Record, stop: threading.Event, deadline: float) -> None:
    auth = {"Authorization": f"Bearer {api_key}"}
    with httpx.Client(base_url=base, timeout=30) as client:
        n = 0
        while not stop.is_set():
            n += 1
            quote = _until_final(client, record, "POST", "/v1/quotes", deadline, headers=auth,
                                 json={"offering": "l4-1x-vm", "quantity": 1, "term": "1h"})
            assert quote.status_code == 201, quote.text
            key = f"{name}-{n}"
            bought = _until_final(client, record, "POST", "/v1/allocations", deadline, headers={**auth, "Idempotency-Key": key},
                                  json={"quote_id": quote.json()["id"]})
            assert bought.status_code == 201, bought.text
            with record.lock:
                assert key not in record.booked
                record.booked[key] = bought.json()["id"]


def _prepare(url: str, *, clients: int) -> list[str]:
    """Stock that never runs short and one account per client, through the services (as the CLI would)."""
    from anchorgpu.accounts import create_account
    from anchorgpu.allocations import services as svc
    from anchorgpu.bootstrap import bootstrap
    from anchorgpu.config import Settings

    store = bootstrap(Settings(database_url=url), migrate=False, seed=False, purge_keys=False)
    try:
        svc.set_stock(store.uow_factory(), offering="l4-1x-vm", servers=svc.MAX_STOCK_SERVERS, clock=store.clock)
        return [create_account(store.uow_factory(), f"client {i}", clock=store.clock)[1] for i in range(clients)]
    finally:
        store.dispose()


def test_postgres_restarted_mid_load_loses_nothing_doubles_nothing_and_recovers_without_a_server_restart(
    cluster: Cluster, tmp_path: Path
) -> None:
    import psycopg

    with psycopg.connect(cluster.url().replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute('CREATE DATABASE "anchorgpu"')
    url = cluster.url("anchorgpu")
    server = load_server.Server(database_url=url, workers=2, log_path=tmp_path / "serve.log")
    try:
        server.start()
        keys = _prepare(url, clients=6)
        workers_before = server.worker_pids()
        record, stop = Record(), threading.Event()
        deadline = time.monotonic() + 50
        errors: list[BaseException] = []

        def client(key: str, name: str) -> None:
            try:
                _client_loop(server.base_url, key, name, record, stop, deadline)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=client, args=(key, f"c{i}"), daemon=True) for i, key in enumerate(keys)]
        for thread in threads:
            thread.start()
        time.sleep(2)
        booked_before = len(record.booked)
        down_at = time.monotonic()
        cluster.crash_stop()
        time.sleep(2)
        cluster.start()
        up_at = time.monotonic()
        time.sleep(3)
        stop.set()
        for thread in threads:
            thread.join(timeout=max(1, deadline - time.monotonic()))
        assert not errors, errors[0]
        assert not any(thread.is_alive() for thread in threads)

        # 503 problem+json with Retry-After while down; nothing else above 499, ever
        statuses = Counter(status for _, status, _, _ in record.answers)
        unavailable = [(t, code, headers) for t, status, code, headers in record.answers if status == 503]
        assert unavailable, f"no 503 seen while PostgreSQL was down: {statuses}"
        assert all(code == "database_unavailable" and headers.get("retry-after") for _, code, headers in unavailable)
        assert all(down_at - 0.5 <= t <= up_at + 5 for t, _, _ in unavailable)
        assert {s for s in statuses if s >= 500} == {503}, statuses
        # recovery without restarting the server: bookings after the restart, on the same worker processes
        recovered = [t for t, status, _, _ in record.answers if status == 201 and t > up_at]
        assert recovered, "no booking succeeded after PostgreSQL came back"
        assert server.worker_pids() == workers_before
        assert len(record.booked) > booked_before
    finally:
        server.stop()

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            allocations = {r.id: r.quote_id for r in conn.execute(select(AllocationRow.id, AllocationRow.quote_id))}
            created = Counter(r for (r,) in conn.execute(select(AllocationEventRow.allocation_id).where(AllocationEventRow.kind == "created")))
            capacity = Counter(r for (r,) in conn.execute(select(CapacityBookingRow.allocation_id)))
            used = conn.execute(select(func.count()).select_from(QuoteRow).where(QuoteRow.used_at.is_not(None))).scalar_one()
            buy_keys = dict(conn.execute(select(IdempotencyKeyRow.key, IdempotencyKeyRow.resource_id)).all())
    finally:
        engine.dispose()
    assert set(allocations) == set(record.booked.values())  # nothing lost, nothing nobody was told of
    assert len(allocations) == len(record.booked)  # nothing doubled
    assert all(created[a] == 1 and capacity[a] == 1 for a in allocations) and used == len(allocations)
    assert buy_keys == record.booked
    print(f"\nbookings {len(record.booked)} ({booked_before} before the crash); answers {dict(statuses)}; "
          f"503s {len(unavailable)}; first booking after restart {min(recovered) - up_at:.2f} s after pg_ctl start returned")
