"""Writing a backup: every row from one snapshot, checksummed, to a temporary file renamed into place.

See :mod:`anchorgpu.store.backup` for the file format and its guarantees.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, Table, select

from anchorgpu.errors import InvalidInput
from anchorgpu.store.backup_format import (
    BACKUP_FORMAT,
    BACKUP_VERSION,
    BackupSummary,
    RestoreRefused,
    _canonical,
    _revision,
    _tables,
)
from anchorgpu.store.types import Money, UtcDateTime

__all__ = ["backup", "dump_rows"]


def _encode(table: Table, row: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column in table.columns:
        value = row._mapping[column.name]
        if value is not None and isinstance(column.type, UtcDateTime):
            value = value.astimezone(UTC).isoformat()
        elif value is not None and isinstance(column.type, Money):
            value = str(value)
        out[column.name] = value
    return out


def dump_rows(engine: Engine) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every row of every table as ``(table name, JSON-ready row)``, in dependency order, from one snapshot.

    Rows of a table come in primary-key order, so two dumps of equal databases are equal.
    """
    connection = engine.connect()
    if engine.dialect.name == "postgresql":
        connection = connection.execution_options(isolation_level="REPEATABLE READ")
    with connection as conn, conn.begin():
        for table in _tables():
            for row in conn.execute(select(table).order_by(*table.primary_key.columns)):
                yield table.name, _encode(table, row)


def _database_files(engine: Engine) -> list[Path]:
    """The SQLite database file and its companions (WAL, shared memory, rollback journal); none on PostgreSQL."""
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:" or database.startswith("file:"):
        return []
    main = Path(database)
    return [main, *(main.with_name(main.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]


def _writable_target(engine: Engine, target: Path) -> Path:
    """``target`` if a backup may be written there: never the database itself (replacing it would destroy the
    data being backed up), never a directory, device, pipe or other file that is not a regular one, and never an
    existing file that is not an AnchorGPU backup (a mistyped FILE must not replace something else)."""
    shown = str(target)
    for own in _database_files(engine):
        same = own.exists() and target.exists() and os.path.samefile(own, target)
        if same or own.resolve() == target.resolve():
            raise InvalidInput(f"backup file {shown!r} is the database itself; write the backup to another file")
    if target.is_dir():
        raise InvalidInput(f"backup file {shown!r} is a directory")
    if target.exists() or target.is_symlink():
        if not target.is_file():
            raise InvalidInput(f"backup file {shown!r} exists and is not a regular file (a device, pipe or broken "
                               "link); choose another file")
        try:
            with target.open("rb") as handle:
                first = handle.readline(4096)
        except OSError as exc:
            raise InvalidInput(f"cannot write backup file {shown!r}: {exc.strerror or exc}") from exc
        if first and not _is_backup_header(first):
            raise InvalidInput(f"backup file {shown!r} exists and is not an AnchorGPU backup; choose another file "
                               "(an old backup is replaced, anything else is kept)")
    return target


def _is_backup_header(line: bytes) -> bool:
    try:
        item = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return isinstance(item, dict) and item.get("format") == BACKUP_FORMAT


def backup(engine: Engine, path: str | Path, *, now: datetime, key: bytes | None = None) -> BackupSummary:
    """Write every table of ``engine``'s database to ``path`` (see the module docstring); ``key`` adds an HMAC."""
    revision = _revision(engine)
    if revision is None:
        raise RestoreRefused("nothing to back up: the database has no AnchorGPU schema (run: anchorgpu db upgrade)")
    target = _writable_target(engine, Path(path))
    counts = {t.name: 0 for t in _tables()}
    header = {"format": BACKUP_FORMAT, "version": BACKUP_VERSION, "revision": revision, "dialect": engine.dialect.name,
              "created_at": now.astimezone(UTC).isoformat(), "tables": list(counts)}
    digest = hashlib.sha256()
    signature = hmac.new(key, digestmod=hashlib.sha256) if key else None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise InvalidInput(f"cannot write backup file {str(target)!r}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as out:
            for name, row in [("", header), *dump_rows(engine)]:
                line = _canonical(header if not name else {"table": name, "row": row})
                if name:
                    counts[name] += 1
                out.write(line)
                digest.update(line)
                if signature is not None:
                    signature.update(line)
            end: dict[str, Any] = {"end": True, "counts": counts, "sha256": digest.hexdigest()}
            if signature is not None:
                end["hmac_sha256"] = signature.hexdigest()
            out.write(_canonical(end))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except OSError as exc:  # disk full, permissions, a file system that takes no new files (/proc)
        Path(tmp).unlink(missing_ok=True)
        raise InvalidInput(f"cannot write backup file {str(target)!r}: {exc.strerror or exc}") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return BackupSummary(path=str(target), revision=revision, dialect=engine.dialect.name, counts=counts, signed=key is not None)
