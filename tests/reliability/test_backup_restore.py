"""Backups that restore (``anchorgpu.store.backup``, ``anchorgpu db backup|restore``).

A backup counts only once it has been restored (the seeds' rule for training checkpoints): each test
writes a backup of a database with every kind of row — two accounts, quotes, allocations that were
stopped, started, extended and terminated, a stored refusal, idempotency keys, operator stock — restores
it into a freshly migrated database and compares every row of every table, on SQLite and PostgreSQL
and across the two (SQLite → PostgreSQL and back).
"""

from __future__ import annotations

import hashlib
import json
import re
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


def resign(lines: list[str]) -> list[str]:
    """Recompute the end line's SHA-256 over the other lines, as someone editing the file by hand could:
    what the checksum cannot catch, the row validation must."""
    digest = hashlib.sha256()
    out = []
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            out.append(line)
            continue
        if isinstance(item, dict) and item.get("end") is True:
            item["sha256"] = digest.hexdigest()
            out.append(json.dumps(item, separators=(",", ":"), sort_keys=True))
            digest = hashlib.sha256()  # lines after the end line are not covered
            continue
        digest.update((json.dumps(item, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n").encode())
        out.append(line)
    return out


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
        (lambda lines: [lines[0].replace('"version":2', '"version":99'), *lines[1:]], "not an AnchorGPU backup"),
        (lambda lines: [lines[0], lines[1].replace('"accounts"', '"users"'), *lines[2:]], "unknown table"),
        (lambda lines: [lines[0], *reversed(lines[1:-1]), lines[-1]], "dependency order"),
        (lambda lines: [lines[0], lines[1].replace('"created_at":"', '"created_at":"x'), *lines[2:]], "not an ISO 8601 instant"),
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
    (tmp_path / "bad.jsonl").write_text("\n".join(resign(lines)) + "\n", encoding="utf-8")  # as an editor would
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


# -- issue 13: edited, invalid and constraint-breaking backups are refused in one line ------------------

def _edit(path: Path, table: str, edit: Any, *, resign_it: bool) -> Path:
    """Apply ``edit(row)`` to the first row of ``table`` in the backup at ``path``; counts stay intact."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        item = json.loads(line)
        if item.get("table") == table:
            edit(item["row"])
            lines[i] = json.dumps(item, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
            break
    else:
        raise AssertionError(f"no {table} row to edit")
    out = path.with_name(f"edited-{table}.jsonl")
    out.write_text("\n".join(resign(lines) if resign_it else lines) + "\n", encoding="utf-8")
    return out


def _restore_cli(url: str, file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    from anchorgpu.cli import main

    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", url)
    capsys.readouterr()
    code = main(["db", "restore", str(file), *extra])
    return code, capsys.readouterr().err


def _set(column: str, value: Any) -> Any:
    return lambda row: row.__setitem__(column, value)


def test_an_amount_edited_by_hand_is_refused_by_the_checksum_and_the_target_is_untouched(
    store: Any, make_account: Any, target_url: str, tmp_path: Path, fixed_clock: Any,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    _busy_history(store, make_account)
    backup(store.engine, tmp_path / "b.jsonl", now=fixed_clock())
    edited = _edit(tmp_path / "b.jsonl", "allocations", _set("amount_usd", "0.01"), resign_it=False)
    code, err = _restore_cli(target_url, edited, monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "checksum mismatch" in err
    # The same edit with the checksum recomputed: the allocation no longer matches its events.
    resigned = _edit(tmp_path / "b.jsonl", "allocations", _set("amount_usd", "0.01"), resign_it=True)
    code, err = _restore_cli(target_url, resigned, monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "does not match its events" in err
    assert _count(target_url, AccountRow) == 0 and _count(target_url, AllocationRow) == 0


@pytest.mark.parametrize(
    ("table", "edit", "reason"),
    [
        ("stock", _set("servers", "abc"), "stock.servers = 'abc': must be a JSON integer"),
        ("stock", _set("servers", True), "must be a JSON integer"),
        ("allocations", _set("amount_usd", "1e999999"), "money must be a plain decimal string"),
        ("allocations", _set("quantity", 0), "greater than or equal to 1"),
        ("allocations", _set("state", "paused"), "'paused' is not a valid AllocationState"),
        ("accounts", _set("name", "x" * 5000), "5000 characters, the column holds at most 200"),
        ("accounts", _set("name", "al\u0000ice"), "control character"),
        ("quotes", _set("offering_id", "h100\u0000"), "control character"),
        ("quotes", _set("term_hours", 2), "is not 2 hours"),
        ("allocations", _set("ends_at", "9999-12-31T23:00:00+00:00"), "outside the years"),
        ("idempotency_keys", _set("key", "é" * 3), "printable ASCII"),
        ("api_keys", _set("key_hash", "secret"), "not a stored API key"),
    ],
    ids=["servers-abc", "servers-true", "amount-1e999999", "quantity-0", "unknown-state", "name-5000", "nul-in-name",
         "nul-in-offering", "term-hours", "year-9999", "non-ascii-idempotency-key", "key-hash"],
)
def test_an_invalid_row_is_refused_even_with_a_recomputed_checksum(
    sqlite_url: str, tmp_path: Path, fixed_clock: Any, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], table: str, edit: Any, reason: str,
) -> None:
    source = bootstrap(Settings(database_url=sqlite_url), clock=fixed_clock)
    try:
        from anchorgpu.accounts import create_account

        alice, _ = create_account(source.uow_factory(), "alice", clock=fixed_clock)
        quote = svc.create_quote(source.uow_factory(), account_id=alice, offering="h100-sxm-1x-vm", term="1h", clock=fixed_clock)
        svc.buy_quote(source.uow_factory(), account_id=alice, quote_id=quote["id"], idempotency_key="k-1", clock=fixed_clock)
        backup(source.engine, tmp_path / "b.jsonl", now=fixed_clock())
    finally:
        source.dispose()
    target_file = tmp_path / "target.db"
    bootstrap(Settings(database_url=f"sqlite:///{target_file}")).dispose()
    edited = _edit(tmp_path / "b.jsonl", table, edit, resign_it=True)
    with pytest.raises(BackupInvalid, match=re.escape(reason)):
        restore_into = make_engine(f"sqlite:///{target_file}")
        try:
            restore(restore_into, edited)
        finally:
            restore_into.dispose()
    code, err = _restore_cli(f"sqlite:///{target_file}", edited, monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error:") and "Traceback" not in err
    assert _count(f"sqlite:///{target_file}", AccountRow) == 0
    # --verify finds the same without a database
    from anchorgpu.cli import main

    assert main(["db", "backup", "--verify", str(edited)]) == 2
    assert reason in capsys.readouterr().err


def test_a_row_that_breaks_a_database_constraint_is_refused_in_one_line(
    store: Any, make_account: Any, target_url: str, tmp_path: Path, fixed_clock: Any,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    make_account("alice")
    make_account("bob")
    backup(store.engine, tmp_path / "b.jsonl", now=fixed_clock())
    lines = (tmp_path / "b.jsonl").read_text(encoding="utf-8").splitlines()
    keys = [json.loads(line) for line in lines if '"table":"api_keys"' in line]
    keys[1]["row"]["key_hash"] = keys[0]["row"]["key_hash"]  # two keys with one hash: the UNIQUE constraint
    lines = [json.dumps(keys[1], separators=(",", ":"), sort_keys=True) if '"table":"api_keys"' in line and keys[1]["row"]["id"] in line
             else line for line in lines]
    (tmp_path / "dup.jsonl").write_text("\n".join(resign(lines)) + "\n", encoding="utf-8")
    code, err = _restore_cli(target_url, tmp_path / "dup.jsonl", monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1 and "breaks a database constraint" in err and "nothing was restored" in err
    assert _count(target_url, AccountRow) == 0


def test_verify_checks_a_file_without_a_database_and_reports_what_it_checked(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from anchorgpu.cli import main

    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", sqlite_url)
    assert main(["accounts", "create", "carol"]) == 0
    assert main(["db", "backup", str(tmp_path / "b.jsonl")]) == 0
    assert "SHA-256 written" in capsys.readouterr().out
    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", "sqlite:////nonexistent/dir/never.db")  # not used by --verify
    assert main(["db", "backup", "--verify", str(tmp_path / "b.jsonl"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["checksum"] == "sha256" and report["counts"]["accounts"] == 1 and report["counts"]["api_keys"] == 1
    truncated = tmp_path / "cut.jsonl"
    truncated.write_text("\n".join((tmp_path / "b.jsonl").read_text().splitlines()[:-1]) + "\n")
    assert main(["db", "backup", "--verify", str(truncated)]) == 2
    assert "truncated" in capsys.readouterr().err


def test_a_backup_key_adds_an_hmac_that_a_recomputed_checksum_cannot_forge(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from anchorgpu.cli import main

    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("ANCHORGPU_BACKUP_KEY", "operator secret")
    assert main(["accounts", "create", "carol"]) == 0
    capsys.readouterr()
    assert main(["db", "backup", str(tmp_path / "b.jsonl"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["signed"] is True
    assert main(["db", "backup", "--verify", str(tmp_path / "b.jsonl")]) == 0
    assert "HMAC verified" in capsys.readouterr().out
    forged = _edit(tmp_path / "b.jsonl", "accounts", _set("name", "mallory"), resign_it=True)  # valid row, checksum redone
    assert main(["db", "backup", "--verify", str(forged)]) == 2
    assert "HMAC mismatch" in capsys.readouterr().err
    monkeypatch.delenv("ANCHORGPU_BACKUP_KEY")  # without the key only the checksum can be checked: the forgery passes
    assert main(["db", "backup", "--verify", str(forged)]) == 0
    assert "only its checksum was checked" in capsys.readouterr().err
    unsigned = tmp_path / "unsigned.jsonl"
    assert main(["db", "backup", str(unsigned)]) == 0
    monkeypatch.setenv("ANCHORGPU_BACKUP_KEY", "operator secret")
    assert main(["db", "backup", "--verify", str(unsigned)]) == 2
    assert "carries no HMAC" in capsys.readouterr().err


def test_an_old_backup_without_a_checksum_needs_allow_unverified_and_keeps_its_keys(
    target_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from anchorgpu.accounts import hash_api_key

    old_key = "agpu_" + "o" * 43
    tables = ["accounts", "stock", "idempotency_keys", "quotes", "allocations", "allocation_events", "capacity_bookings"]
    lines = [
        {"format": "anchorgpu-backup", "version": 1, "revision": "0001_initial", "dialect": "sqlite",
         "created_at": "2026-11-29T12:00:00+00:00", "tables": tables},
        {"table": "accounts", "row": {"id": "acct_00000000000000bb", "name": "old", "api_key_hash": hash_api_key(old_key),
                                      "created_at": "2026-11-29T12:00:00+00:00"}},
        {"end": True, "counts": {t: (1 if t == "accounts" else 0) for t in tables}},
    ]
    (tmp_path / "v1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    code, err = _restore_cli(target_url, tmp_path / "v1.jsonl", monkeypatch, capsys)
    assert code == 2 and "has no checksum" in err and "--allow-unverified" in err
    code, err = _restore_cli(target_url, tmp_path / "v1.jsonl", monkeypatch, capsys, "--allow-unverified")
    assert code == 0, err
    assert "warning: this backup has no checksum" in err and "carried from schema revision 0001_initial" in err
    copy = bootstrap(Settings(database_url=target_url), migrate=False, seed=False, purge_keys=False)
    try:
        assert authenticate(copy.uow_factory(), old_key).id == "acct_00000000000000bb"
    finally:
        copy.dispose()
