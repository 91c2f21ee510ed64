"""Backups that restore, and that a restore can trust: every table as JSON lines, checksummed.

``anchorgpu db backup FILE`` / ``db backup --verify FILE`` / ``db restore FILE``. The file is UTF-8 JSON lines::

    {"format": "anchorgpu-backup", "version": 2, "revision": "<alembic revision>", "dialect": "postgresql",
     "created_at": "...", "tables": ["accounts", "api_keys", "stock", ...]}
    {"table": "accounts", "row": {"id": "acct_…", "name": "…", "created_at": "…"}}
    ...
    {"end": true, "counts": {"accounts": 3, ...}, "sha256": "<hex>", "hmac_sha256": "<hex, only with a key>"}

* **Checksum.** ``sha256`` is the SHA-256 of every line before the end line in canonical form (keys sorted,
  no spaces, UTF-8, one ``\\n`` after each), so a value edited by hand — 0.89 → 0.01 with the counts intact —
  is refused. A checksum proves the file is as written, not who wrote it: anyone who can edit the file can
  recompute it. With ``ANCHORGPU_BACKUP_KEY`` set, the end line also carries an HMAC-SHA256 under that key,
  which an editor without the key cannot forge; a restore with the key set refuses a file whose HMAC is
  missing or wrong.
* **Schema revision.** The header names the Alembic revision; the restore refuses a revision this version
  of AnchorGPU does not know, and a target database at another revision. Backups of ``0001_initial`` (one
  key per account) are carried to ``0002_api_keys`` the way the migration does it.
* **Every row validated before anything is written** (:mod:`anchorgpu.store.backup_rows`): the column
  definitions, the API's and services' own checks, each allocation's amount against its events. Constraint
  violations the database finds (CHECK, UNIQUE, foreign keys) abort the one restore transaction and are
  reported in one line. The target is untouched on any refusal.
* **Old backups** (format version 1, before checksums) are refused unless ``allow_unverified`` is given
  (``--allow-unverified``); then they are validated row by row like any other and restored with a warning.
* Tables come in dependency order (SQLAlchemy's ``sorted_tables``); instants are ISO 8601 UTC, money a
  decimal string, JSON columns stay JSON: a SQLite backup restores into PostgreSQL and back.
* The backup reads one consistent snapshot (one transaction; REPEATABLE READ on PostgreSQL) and is written
  to a temporary file renamed into place, so a crash never leaves a half-written FILE behind.
* Restore runs only into an empty database migrated to head (``anchorgpu db upgrade``: its seeded stock
  rows are replaced by the backup's), in one transaction; on PostgreSQL the id sequences are moved past
  the restored ids.

Following the seeds' rule for training checkpoints — a checkpoint counts only once it has been restored —
the tests restore every backup into an empty database and compare every row.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from sqlalchemy import Engine, Table, func, select, text
from sqlalchemy.exc import DBAPIError, StatementError

from anchorgpu.errors import Conflict, InvalidInput
from anchorgpu.store.backup_rows import RowInvalid, check_amounts, decode_row
from anchorgpu.store.tables import metadata
from anchorgpu.store.types import Money, UtcDateTime

__all__ = [
    "BACKUP_FORMAT",
    "BACKUP_VERSION",
    "BackupInvalid",
    "BackupSummary",
    "RestoreRefused",
    "backup",
    "dump_rows",
    "restore",
    "verify",
]

BACKUP_FORMAT = "anchorgpu-backup"
BACKUP_VERSION = 2
_UNVERIFIED_VERSION = 1
_BATCH_ROWS = 500
_REPLACEABLE = frozenset({"stock"})
"""Tables a freshly migrated database already fills (seeded from the catalog); restore replaces them."""
_LEGACY_REVISION = "0001_initial"
MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest line a backup may hold (16 MiB): a row is at most a few kilobytes (a stored answer); a longer line, or
an endless one (``/dev/zero``), is refused instead of read into memory."""


class BackupInvalid(InvalidInput):
    """The file is not a complete, unedited, valid AnchorGPU backup; nothing was written."""

    code = "backup_invalid"


class RestoreRefused(Conflict):
    """The target database is not empty, not migrated, or at another schema revision than the backup."""

    code = "restore_refused"


@dataclass(frozen=True, slots=True, kw_only=True)
class BackupSummary:
    """What a backup, check or restore covered: schema revision, source dialect, rows per table, how it was checked."""

    path: str
    revision: str
    dialect: str
    counts: dict[str, int]
    checksum: str = "sha256"  # "sha256", or "none" for an old unverified file
    signed: bool = False  # an HMAC under ANCHORGPU_BACKUP_KEY was written / checked
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.path, "revision": self.revision, "dialect": self.dialect, "counts": dict(self.counts),
                "rows": sum(self.counts.values()), "checksum": self.checksum, "signed": self.signed,
                "warnings": list(self.warnings)}


def _tables() -> list[Table]:
    return list(metadata.sorted_tables)


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


def _canonical(item: dict[str, Any]) -> bytes:
    return (json.dumps(item, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n").encode("utf-8")


def _revision(engine: Engine) -> str | None:
    from anchorgpu.store.migrate import current_revision

    return current_revision(engine)


def _known_revisions() -> list[str]:
    from alembic.script import ScriptDirectory

    from anchorgpu.store.migrate import alembic_config

    return [s.revision for s in ScriptDirectory.from_config(alembic_config()).walk_revisions()]


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


@dataclass
class _Parsed:
    header: dict[str, Any]
    items: list[tuple[str, dict[str, Any], int]]  # (table, raw row, line number)
    end: dict[str, Any]
    sha256: str
    hmac_sha256: str | None


def _parse(path: Path, key: bytes | None) -> _Parsed:
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InvalidInput(f"cannot read backup file {str(path)!r}: {exc.strerror or exc}") from exc
    header: dict[str, Any] | None = None
    end: dict[str, Any] | None = None
    items: list[tuple[str, dict[str, Any], int]] = []
    digest = hashlib.sha256()
    signature = hmac.new(key, digestmod=hashlib.sha256) if key else None
    with handle:
        for line_no, raw in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if len(raw) > MAX_LINE_BYTES:
                raise BackupInvalid(f"{path}: line {line_no} is longer than {MAX_LINE_BYTES:,} bytes (no row is)")
            try:
                item = json.loads(raw.decode("utf-8"), parse_float=_no_float_loss, parse_constant=_no_constant)
            except UnicodeDecodeError as exc:
                raise BackupInvalid(f"{path}: line {line_no} is not UTF-8 text") from exc
            except RecursionError as exc:
                raise BackupInvalid(f"{path}: line {line_no} is not a row (its JSON is nested too deeply)") from exc
            except ValueError as exc:
                raise BackupInvalid(f"{path}: line {line_no} is not JSON ({str(exc).splitlines()[0][:80]})") from exc
            if not isinstance(item, dict):
                raise BackupInvalid(f"{path}: line {line_no} is not a JSON object")
            if end is not None:
                raise BackupInvalid(f"{path}: line {line_no} comes after the end line")
            if header is None:
                if item.get("format") != BACKUP_FORMAT or item.get("version") not in (BACKUP_VERSION, _UNVERIFIED_VERSION):
                    raise BackupInvalid(f"{path} is not an AnchorGPU backup (version {BACKUP_VERSION})")
                header = item
            elif item.get("end") is True:
                end = item
                continue
            else:
                name, values = item.get("table"), item.get("row")
                if not isinstance(name, str) or not isinstance(values, dict):
                    raise BackupInvalid(f"{path}: line {line_no}: unknown table {name!r}")
                items.append((name, values, line_no))
            canonical = _canonical(item)
            digest.update(canonical)
            if signature is not None:
                signature.update(canonical)
    if header is None:
        raise BackupInvalid(f"{path} is empty")
    if end is None:
        raise BackupInvalid(f"{path} is truncated: it has no end line")
    return _Parsed(header, items, end, digest.hexdigest(), None if signature is None else signature.hexdigest())


def _no_float_loss(text_value: str) -> float:
    value = float(text_value)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text_value[:20]} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _check_integrity(path: Path, parsed: _Parsed, *, key: bytes | None, allow_unverified: bool) -> tuple[str, bool, list[str]]:
    """Checksum and HMAC: ``(checksum kind, signed, warnings)`` or :class:`BackupInvalid`."""
    warnings: list[str] = []
    if parsed.header.get("version") == _UNVERIFIED_VERSION:
        if not allow_unverified:
            raise BackupInvalid(f"{path} has no checksum (written before AnchorGPU checksummed backups): it cannot be told "
                                "apart from an edited file; if you trust it, restore with --allow-unverified (every row is still validated)")
        warnings.append("this backup has no checksum: accepted with --allow-unverified; its rows were validated one by one")
        return "none", False, warnings
    stored = parsed.end.get("sha256")
    if not isinstance(stored, str) or not hmac.compare_digest(stored, parsed.sha256):
        raise BackupInvalid(f"{path}: checksum mismatch: the file was edited or damaged after it was written")
    mac = parsed.end.get("hmac_sha256")
    if key is not None:
        if mac is None:
            if not allow_unverified:
                raise BackupInvalid(f"{path} carries no HMAC but ANCHORGPU_BACKUP_KEY is set: it was not written with the key "
                                    "(restore with --allow-unverified to accept it)")
            warnings.append("no HMAC in this backup although ANCHORGPU_BACKUP_KEY is set: accepted with --allow-unverified")
            return "sha256", False, warnings
        if not isinstance(mac, str) or parsed.hmac_sha256 is None or not hmac.compare_digest(mac, parsed.hmac_sha256):
            raise BackupInvalid(f"{path}: HMAC mismatch: written with another ANCHORGPU_BACKUP_KEY, or edited by someone without it")
        return "sha256", True, warnings
    if mac is not None:
        warnings.append("this backup carries an HMAC but ANCHORGPU_BACKUP_KEY is not set: only its checksum was checked")
    return "sha256", False, warnings


def _rows(path: Path, parsed: _Parsed) -> tuple[list[tuple[Table, dict[str, Any]]], dict[str, int]]:
    """Every row decoded and validated, in dependency order, with the counts checked against the end line."""
    tables = {t.name: t for t in _tables()}
    order = list(tables)
    items = parsed.items
    if parsed.header.get("revision") == _LEGACY_REVISION:
        items = _upgrade_legacy(items)
    rows: list[tuple[Table, dict[str, Any]]] = []
    position = 0
    seen = {name: 0 for name in tables}
    for name, values, line_no in items:
        if name not in tables:
            raise BackupInvalid(f"{path}: line {line_no}: unknown table {name!r}")
        if order.index(name) < position:
            raise BackupInvalid(f"{path}: line {line_no}: table {name} out of dependency order")
        position = order.index(name)
        try:
            rows.append((tables[name], decode_row(tables[name], values)))
        except RowInvalid as exc:
            raise BackupInvalid(f"{path}: line {line_no}: {exc.message}") from exc
        seen[name] += 1
    counts = parsed.end.get("counts")
    if parsed.header.get("revision") == _LEGACY_REVISION and isinstance(counts, dict):
        counts = {**counts, "api_keys": counts.get("accounts")}
    if counts != seen:
        raise BackupInvalid(f"{path}: the rows do not match the counts of its end line (edited or damaged)")
    try:
        check_amounts((t.name, r) for t, r in rows)
    except RowInvalid as exc:
        raise BackupInvalid(f"{path}: {exc.message}") from exc
    return rows, seen


def _upgrade_legacy(items: list[tuple[str, dict[str, Any], int]]) -> list[tuple[str, dict[str, Any], int]]:
    """A 0001_initial backup's rows in the 0002_api_keys form: each account's key hash becomes its
    ``original key`` row, exactly as migration 0002 moves it."""
    out: list[tuple[str, dict[str, Any], int]] = []
    keys: list[tuple[str, dict[str, Any], int]] = []
    for name, values, line_no in items:
        if name == "accounts" and "api_key_hash" in values:
            values = dict(values)
            key_hash = values.pop("api_key_hash")
            account_id = str(values.get("id", ""))
            keys.append(("api_keys", {"id": "key_" + account_id[5:], "account_id": account_id, "name": "original key",
                                      "prefix": "agpu_", "key_hash": key_hash, "created_at": values.get("created_at"),
                                      "expires_at": None, "revoked_at": None}, line_no))
        if name != "accounts" and keys:
            out.extend(keys)
            keys = []
        out.append((name, values, line_no))
    out.extend(keys)
    return out


def verify(path: str | Path, *, key: bytes | None = None, allow_unverified: bool = False) -> BackupSummary:
    """Check ``path`` completely — checksum, HMAC when ``key`` is given, revision, every row — writing nothing."""
    source = Path(path)
    parsed = _parse(source, key)
    checksum, signed, warnings = _check_integrity(source, parsed, key=key, allow_unverified=allow_unverified)
    revision = parsed.header.get("revision")
    known = _known_revisions()
    if revision not in known:
        raise BackupInvalid(f"{source}: schema revision {revision!r} is not one this version of AnchorGPU knows "
                            f"({', '.join(reversed(known))}); restore it with the version that wrote it")
    _, counts = _rows(source, parsed)
    return BackupSummary(path=str(source), revision=str(revision), dialect=str(parsed.header.get("dialect")), counts=counts,
                         checksum=checksum, signed=signed, warnings=warnings)


def _occupied(conn: Any) -> list[str]:
    return [t.name for t in _tables()
            if t.name not in _REPLACEABLE and conn.execute(select(func.count()).select_from(t)).scalar_one() > 0]


def restore(engine: Engine, path: str | Path, *, key: bytes | None = None, allow_unverified: bool = False) -> BackupSummary:
    """Load the backup at ``path`` into ``engine``'s empty database at head, in one transaction, after
    :func:`verify` has accepted the whole file."""
    from anchorgpu.store.engine import write_engine
    from anchorgpu.store.migrate import head_revision

    source = Path(path)
    parsed = _parse(source, key)
    checksum, signed, warnings = _check_integrity(source, parsed, key=key, allow_unverified=allow_unverified)
    revision = _revision(engine)
    if revision is None:
        raise RestoreRefused("the target database has no AnchorGPU schema: run 'anchorgpu db upgrade' on it first, then restore")
    wanted = parsed.header.get("revision")
    if wanted == _LEGACY_REVISION and revision == head_revision():
        warnings.append(f"carried from schema revision {_LEGACY_REVISION} to {revision} as the migration does (one key per account)")
    elif revision != wanted:
        raise RestoreRefused(f"the backup is at schema revision {wanted} but the database is at {revision}; "
                             "restore into a database at the backup's revision")
    rows, counts = _rows(source, parsed)
    try:
        with write_engine(engine).connect() as conn, conn.begin():
            occupied = _occupied(conn)
            if occupied:
                raise RestoreRefused(f"the target database is not empty (it has rows in {', '.join(occupied)}); "
                                     "restore only into a freshly migrated database")
            for table in _tables():
                if table.name in _REPLACEABLE:
                    conn.execute(table.delete())
            _insert(conn, rows)
            if conn.dialect.name == "postgresql":
                _advance_sequences(conn)
    except (DBAPIError, StatementError) as exc:
        reason = str(getattr(exc, "orig", exc) or exc).splitlines()[0][:200]
        raise BackupInvalid(f"{source}: a row breaks a database constraint ({reason}); nothing was restored") from exc
    return BackupSummary(path=str(source), revision=str(revision), dialect=str(parsed.header.get("dialect")), counts=counts,
                         checksum=checksum, signed=signed, warnings=warnings)


def _insert(conn: Any, rows: list[tuple[Table, dict[str, Any]]]) -> None:
    batch: list[dict[str, Any]] = []
    current: Table | None = None
    for table, values in rows:
        if table is not current or len(batch) >= _BATCH_ROWS:
            if current is not None and batch:
                conn.execute(current.insert(), batch)
            batch, current = [], table
        batch.append(values)
    if current is not None and batch:
        conn.execute(current.insert(), batch)


def _advance_sequences(conn: Any) -> None:
    """Move each serial id sequence past the largest restored id (explicit ids do not advance them)."""
    for table in _tables():
        for column in table.primary_key.columns:
            if column.autoincrement is True or (column.autoincrement == "auto" and column.type.python_type is int):
                sequence = conn.execute(text("SELECT pg_get_serial_sequence(:t, :c)"), {"t": table.name, "c": column.name}).scalar()
                if sequence is None:
                    continue
                top = conn.execute(select(func.max(column))).scalar()
                conn.execute(text("SELECT setval(:s, :v, :called)"),
                             {"s": sequence, "v": top if top is not None else 1, "called": top is not None})


def write_canonical(out: IO[bytes], item: dict[str, Any]) -> None:
    """Write one line as the backup does (for tools and tests that build backups by hand)."""
    out.write(_canonical(item))
