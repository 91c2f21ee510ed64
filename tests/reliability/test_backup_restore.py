"""Backups that restore (``anchorgpu.store.backup``, ``anchorgpu db backup|restore``).

A backup counts only once it has been restored (the seeds' rule for training checkpoints): each test
writes a backup of a database with every kind of row — two accounts, quotes, allocations that were
stopped, started, extended and terminated, a stored refusal, idempotency keys, operator stock — restores
it into a freshly migrated database and compares every row of every table, on SQLite and PostgreSQL
and across the two (SQLite → PostgreSQL and back).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from anchorgpu.accounts import authenticate
from anchorgpu.allocations import services as svc
from anchorgpu.allocations.errors import InsufficientCapacity, QuoteAlreadyUsed
from anchorgpu.bootstrap import bootstrap
from anchorgpu.config import Settings
from anchorgpu.store.backup import BackupInvalid, RestoreRefused, backup, dump_rows, restore
from anchorgpu.store.engine import make_engine
from anchorgpu.store.tables import AccountRow, AllocationRow, metadata


def _busy_history(store: Any, make_account: Any) -> dict[str, Any]:
    """Every kind of row the store writes; returns what the test needs to act on the restored copy."""
    clock = store.clock
    alice, bob = make_account("alice"), make_account("bob")
    svc.set_stock(store.uow_factory(), offering="h100-sxm-8x-bm", servers=1, region="eu-north", clock=clock)
    q1 = svc.create_quote(store.uow_factory(), account_id=alice.id, offering="h100-sxm-1x-vm", term="1month", clock=clock)
    booked = svc.buy_quote(store.uow_factory(), account_id=alice.id, quote_id=q1["id"], idempotency_key="buy-1", clock=clock)
    allocation_id = booked.body["id"]
    for action, key in ((svc.stop, "stop-1"), (svc.start, "start-1")):
        action(store.uow_factory(), account_id=alice.id, allocation_id=allocation_id, idempotency_key=key, clock=clock)
    svc.extend(store.uow_factory(), account_id=alice.id, allocation_id=allocation_id, term="1w", idempotency_key="ext-1", clock=clock)
    q2 = svc.create_quote(store.uow_factory(), account_id=bob.id, offering="h100-sxm-8x-bm", region="eu-north", term="2h", clock=clock)
    second = svc.buy_quote(store.uow_factory(), account_id=bob.id, quote_id=q2["id"], idempotency_key="buy-b", clock=clock)
    svc.terminate(store.uow_factory(), account_id=bob.id, allocation_id=second.body["id"], idempotency_key="end-b", clock=clock)
    store.clock.advance(hours=1)
    svc.set_stock(store.uow_factory(), offering="h100-sxm-8x-bm", servers=0, region="eu-north", clock=clock)
    q3 = svc.create_quote(store.uow_factory(), account_id=bob.id, offering="h100-sxm-8x-bm", region="eu-north", term="1h", clock=clock)
    with pytest.raises(InsufficientCapacity):  # a refusal stored under its key
        svc.buy_quote(store.uow_factory(), account_id=bob.id, quote_id=q3["id"], idempotency_key="buy-refused", clock=clock)
    svc.create_quote(store.uow_factory(), account_id=alice.id, offering="a100-80gb-sxm-8x-bm", term="1month",
                     options={}, clock=clock)  # an unbought quote
    return {"alice": alice, "bob": bob, "q1": q1, "booked": booked, "allocation_id": allocation_id}


def _normalized(rows: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, str]]:
    """Rows as canonical JSON, money compared as numbers (SQLite keeps '2190.0' where PostgreSQL has '2190.00')."""
    money = {(t.name, c.name) for t in metadata.sorted_tables for c in t.columns if type(c.type).__name__ == "Money"}
    out = []
    for table, row in rows:
        row = {k: (str(Decimal(v).normalize()) if (table, k) in money and v is not None else v) for k, v in row.items()}
        out.append((table, json.dumps(row, sort_keys=True)))
    return sorted(out)


@pytest.fixture
def target_url(empty_db_url: str) -> Iterator[str]:
    """A freshly migrated database, as ``anchorgpu db upgrade`` leaves it (catalog stock seeded)."""
    bootstrap(Settings(database_url=empty_db_url)).dispose()
    yield empty_db_url


def test_a_backup_restored_into_a_fresh_database_has_every_row_of_the_original(
    store: Any, make_account: Any, target_url: str, tmp_path: Path, fixed_clock: Any
) -> None:
    history = _busy_history(store, make_account)
    original = list(dump_rows(store.engine))
    assert {t for t, _ in original} == {t.name for t in metadata.sorted_tables}  # every table has rows to compare

    summary = backup(store.engine, tmp_path / "anchorgpu.jsonl", now=fixed_clock())
    target = make_engine(target_url)
    try:
        restored_summary = restore(target, tmp_path / "anchorgpu.jsonl")
        assert restored_summary.counts == summary.counts
        assert _normalized(list(dump_rows(target))) == _normalized(original)
    finally:
        target.dispose()

    # The restored database works: same keys, same replays, same refusals, and new writes do not collide.
    copy = bootstrap(Settings(database_url=target_url), clock=fixed_clock)
    try:
        alice, bob = history["alice"], history["bob"]
        assert authenticate(copy.uow_factory(), alice.api_key).id == alice.id
        replay = svc.buy_quote(copy.uow_factory(), account_id=alice.id, quote_id=history["q1"]["id"], idempotency_key="buy-1",
                               clock=copy.clock)
        assert replay.replayed and replay.body == history["booked"].body
        with pytest.raises(QuoteAlreadyUsed):
            svc.buy_quote(copy.uow_factory(), account_id=alice.id, quote_id=history["q1"]["id"], idempotency_key="buy-again",
                          clock=copy.clock)
        fresh = svc.create_quote(copy.uow_factory(), account_id=bob.id, offering="h100-sxm-1x-vm", term="1h", clock=copy.clock)
        bought = svc.buy_quote(copy.uow_factory(), account_id=bob.id, quote_id=fresh["id"], idempotency_key="after-restore",
                               clock=copy.clock)
        svc.stop(copy.uow_factory(), account_id=bob.id, allocation_id=bought.body["id"], idempotency_key="stop-after", clock=copy.clock)
        assert len(svc.list_allocations(copy.uow_factory(), account_id=bob.id, clock=copy.clock)) == 2
        # the operator's stock came back, not the catalog's seed
        assert svc.list_stock(copy.uow_factory())[("h100-sxm-8x-bm", "eu-north")] == 0
    finally:
        copy.dispose()


def _count(url: str, table: Any) -> int:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(table)).scalar_one())
    finally:
        engine.dispose()


def test_restore_refuses_a_database_that_already_has_data_and_changes_nothing(
    store: Any, account: Any, tmp_path: Path, fixed_clock: Any
) -> None:
    quote = svc.create_quote(store.uow_factory(), account_id=account.id, offering="h100-sxm-1x-vm", term="1h", clock=store.clock)
    svc.buy_quote(store.uow_factory(), account_id=account.id, quote_id=quote["id"], idempotency_key="k", clock=store.clock)
    backup(store.engine, tmp_path / "b.jsonl", now=fixed_clock())
    with pytest.raises(RestoreRefused, match="not empty"):
        restore(store.engine, tmp_path / "b.jsonl")
    assert _count(str(store.engine.url.render_as_string(hide_password=False)), AllocationRow) == 1


def test_restore_refuses_an_unmigrated_database(store: Any, account: Any, empty_db_url: str, tmp_path: Path, fixed_clock: Any) -> None:
    backup(store.engine, tmp_path / "b.jsonl", now=fixed_clock())
    target = make_engine(empty_db_url)
    try:
        with pytest.raises(RestoreRefused, match="db upgrade"):
            restore(target, tmp_path / "b.jsonl")
    finally:
        target.dispose()


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda lines: lines[:-1], "truncated"),
        (lambda lines: lines[:1] + lines[2:], "counts"),
        (lambda lines: [*lines, lines[1]], "after the end line"),
        (lambda lines: [lines[0].replace('"version":1', '"version":99'), *lines[1:]], "not an AnchorGPU backup"),
        (lambda lines: [lines[0], lines[1].replace('"accounts"', '"users"'), *lines[2:]], "unknown table"),
        (lambda lines: [lines[0], *reversed(lines[1:-1]), lines[-1]], "dependency order"),
        (lambda lines: [lines[0], lines[1].replace('"created_at":"', '"created_at":"x'), *lines[2:]], "not valid"),
        (lambda lines: ["{not json", *lines[1:]], "not JSON"),
    ],
    ids=["truncated", "row-removed", "line-after-end", "other-version", "unknown-table", "out-of-order", "bad-instant", "not-json"],
)
def test_a_damaged_backup_is_refused_before_anything_is_written(
    sqlite_url: str, tmp_path: Path, fixed_clock: Any, damage: Any, reason: str
) -> None:
    from anchorgpu.accounts import create_account

    target_file = tmp_path / "target.db"
    shutil.copy(sqlite_url.removeprefix("sqlite:///"), target_file)  # freshly migrated and seeded, as db upgrade leaves it
    target_url = f"sqlite:///{target_file}"
    source = bootstrap(Settings(database_url=sqlite_url), clock=fixed_clock, migrate=False, seed=False, purge_keys=False)
    create_account(source.uow_factory(), "alice", clock=fixed_clock)
    backup(source.engine, tmp_path / "b.jsonl", now=fixed_clock())
    source.dispose()
    lines = damage((tmp_path / "b.jsonl").read_text(encoding="utf-8").splitlines())
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    target = make_engine(target_url)
    try:
        with pytest.raises(BackupInvalid, match=reason):
            restore(target, tmp_path / "bad.jsonl")
    finally:
        target.dispose()
    assert _count(target_url, AccountRow) == 0


def test_the_cli_backs_up_and_restores_and_refuses_with_one_line(
    sqlite_url: str, empty_sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from anchorgpu.cli import main

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", sqlite_url)
    assert main(["accounts", "create", "carol", "--json"]) == 0
    capsys.readouterr()
    assert main(["db", "backup", str(tmp_path / "cli.jsonl"), "--json"]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["counts"]["accounts"] == 1 and written["revision"]

    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", empty_sqlite_url)
    assert main(["db", "restore", str(tmp_path / "cli.jsonl")]) == 4  # not migrated: a conflict, one line
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error:") and "db upgrade" in err[-1]
    assert main(["db", "upgrade"]) == 0
    capsys.readouterr()
    assert main(["db", "restore", str(tmp_path / "cli.jsonl"), "--json"]) == 0
    restored = json.loads(capsys.readouterr().out)
    assert restored["counts"] == written["counts"]
    assert main(["db", "restore", str(tmp_path / "cli.jsonl")]) == 4  # now it holds data
    assert "not empty" in capsys.readouterr().err
    assert main(["db", "restore", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
