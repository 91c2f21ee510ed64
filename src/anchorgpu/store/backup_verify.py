"""Verifying a backup without writing anything: parse every line, check the checksum and HMAC, the schema
revision and every row (see :mod:`anchorgpu.store.backup`); :mod:`anchorgpu.store.backup_restore` runs the
same checks before it writes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Table

from anchorgpu.errors import InvalidInput
from anchorgpu.store.backup_format import (
    _LEGACY_REVISION,
    _UNVERIFIED_VERSION,
    BACKUP_FORMAT,
    BACKUP_VERSION,
    BackupInvalid,
    BackupSummary,
    _canonical,
    _tables,
)
from anchorgpu.store.backup_rows import RowInvalid, check_amounts, decode_row

__all__ = ["MAX_LINE_BYTES", "verify"]

MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest line a backup may hold (16 MiB): a row is at most a few kilobytes (a stored answer); a longer line, or
an endless one (``/dev/zero``), is refused instead of read into memory."""


def _known_revisions() -> list[str]:
    from alembic.script import ScriptDirectory

    from anchorgpu.store.migrate import alembic_config

    return [s.revision for s in ScriptDirectory.from_config(alembic_config()).walk_revisions()]


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
