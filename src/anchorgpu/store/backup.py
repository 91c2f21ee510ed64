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

This module names the whole API; the work lives where its step is: :mod:`anchorgpu.store.backup_format` (the
format all three share), :mod:`anchorgpu.store.backup_write` (``backup``, ``dump_rows``),
:mod:`anchorgpu.store.backup_verify` (``verify``) and :mod:`anchorgpu.store.backup_restore` (``restore``).
"""

from __future__ import annotations

from anchorgpu.store.backup_format import (
    BACKUP_FORMAT,
    BACKUP_VERSION,
    BackupInvalid,
    BackupSummary,
    RestoreRefused,
)
from anchorgpu.store.backup_format import write_canonical as write_canonical  # for tools that build backups by hand
from anchorgpu.store.backup_restore import restore
from anchorgpu.store.backup_verify import verify
from anchorgpu.store.backup_write import backup, dump_rows

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
