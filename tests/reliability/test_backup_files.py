"""``anchorgpu db backup FILE`` and ``--verify FILE`` with the wrong kind of FILE (QA pass on issue 13).

Found by hand: ``db backup`` onto the SQLite database's own path replaced the database with the backup (every
later command: "file is not a database", with a traceback); onto ``/dev/full`` it replaced the device node with
a regular file; onto a path under ``/proc`` it printed a traceback. ``--verify`` of a line nested 100,000 deep
printed a ``RecursionError`` traceback, and of ``/dev/zero`` read for ever. Each is now one line, exit 2, and
leaves the file and the database as they were.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import func, select

from anchorgpu.cli import main
from anchorgpu.errors import InvalidInput
from anchorgpu.store import backup_verify
from anchorgpu.store.backup import BackupInvalid, backup, verify
from anchorgpu.store.engine import make_engine
from anchorgpu.store.tables import metadata


def _rows(url: str) -> int:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return sum(conn.execute(select(func.count()).select_from(t)).scalar_one() for t in metadata.sorted_tables)
    finally:
        engine.dispose()


def _database_path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


def test_a_backup_onto_the_database_itself_is_refused_and_the_database_keeps_its_rows(sqlite_url: str,
                                                                                        fixed_clock: object) -> None:
    before = _rows(sqlite_url)
    database = _database_path(sqlite_url)
    engine = make_engine(sqlite_url)
    try:
        for target in (database, database.with_name(database.name + "-wal"), database.parent / "." / database.name):
            with pytest.raises(InvalidInput, match="is the database itself"):
                backup(engine, target, now=fixed_clock())  # type: ignore[operator]
    finally:
        engine.dispose()
    assert database.read_bytes().startswith(b"SQLite format 3") and _rows(sqlite_url) == before > 0


def test_a_backup_never_replaces_a_file_that_is_not_a_backup_nor_a_device_or_pipe(sqlite_url: str, tmp_path: Path,
                                                                                  fixed_clock: object) -> None:
    engine = make_engine(sqlite_url)
    try:
        notes = tmp_path / "notes.txt"
        notes.write_text("my notes\n")
        with pytest.raises(InvalidInput, match="exists and is not an AnchorGPU backup"):
            backup(engine, notes, now=fixed_clock())  # type: ignore[operator]
        assert notes.read_text() == "my notes\n"
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        with pytest.raises(InvalidInput, match="not a regular file"):
            backup(engine, fifo, now=fixed_clock())  # type: ignore[operator]
        assert fifo.is_fifo()
        with pytest.raises(InvalidInput, match="cannot write backup file"):  # the parent is a file
            backup(engine, notes / "inside.jsonl", now=fixed_clock())  # type: ignore[operator]
        earlier = tmp_path / "earlier.jsonl"  # an older backup is replaced, as before
        backup(engine, earlier, now=fixed_clock())  # type: ignore[operator]
        backup(engine, earlier, now=fixed_clock())  # type: ignore[operator]
        assert verify(earlier).counts["stock"] > 0
    finally:
        engine.dispose()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temporary file left behind


def test_the_cli_refuses_such_a_file_in_one_line(sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert main(["db", "backup", str(_database_path(sqlite_url))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "database itself" in err[0]
    assert main(["db", "current"]) == 0  # the database still opens


def test_a_line_nested_too_deeply_or_too_long_is_refused_in_one_line(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(BackupInvalid, match="nested too deeply"):
        verify(deep)
    monkeypatch.setattr(backup_verify, "MAX_LINE_BYTES", 1000)
    long = tmp_path / "long.jsonl"
    long.write_bytes(b'{"format":"anchorgpu-backup","pad":"' + b"x" * 5000)  # no newline: read at most the cap
    with pytest.raises(BackupInvalid, match="line 1 is longer than 1,000 bytes"):
        verify(long)


def test_a_database_file_that_is_not_a_database_is_one_line_not_a_traceback(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.db"
    broken.write_text('{"format":"anchorgpu-backup"}\n')  # what a backup written onto the database left there
    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", f"sqlite:///{broken}")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for argv in (["db", "backup", str(tmp_path / "out.jsonl")], ["db", "current"], ["allocations", "--json"]):
        code = main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 1 and len(err) == 1 and err[0].startswith("error: the database"), (argv, err)
        assert "file is not a database" in err[0]
