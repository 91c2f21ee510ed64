"""The idempotency rules of run_idempotent, with a small in-memory fake unit of work (no database)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from anchorgpu.allocations.errors import (
    IdempotencyKeyReused,
    InsufficientCapacity,
    InvalidIdempotencyKey,
)
from anchorgpu.allocations.idempotency import fingerprint, run_idempotent, validate_idempotency_key
from anchorgpu.errors import InvalidInput
from anchorgpu.store.repository import IdempotencyRecord
from anchorgpu.store.uow import AbstractUnitOfWork

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


class FakeIdempotency:
    def __init__(self, rows: dict[tuple[str, str, str], IdempotencyRecord]) -> None:
        self.rows = rows

    def get(self, account_id: str, operation: str, key: str) -> IdempotencyRecord | None:
        return self.rows.get((account_id, operation, key))

    def reserve(self, *, account_id: str, operation: str, key: str, fingerprint: str, now: datetime, expires_at: datetime) -> int:
        row_id = len(self.rows) + 1
        self.rows[(account_id, operation, key)] = IdempotencyRecord(
            id=row_id, account_id=account_id, operation=operation, key=key, fingerprint=fingerprint,
            response_status=0, response_body={}, resource_id=None, created_at=now, expires_at=expires_at)
        return row_id

    def complete(self, row_id: int, *, status: int, body: dict[str, Any], resource_id: str | None) -> None:
        for k, r in self.rows.items():
            if r.id == row_id:
                self.rows[k] = IdempotencyRecord(**{**{f: getattr(r, f) for f in r.__slots__},  # type: ignore[attr-defined]
                                                    "response_status": status, "response_body": body,
                                                    "resource_id": resource_id})

    def delete(self, row_id: int) -> None:
        for k in [k for k, r in self.rows.items() if r.id == row_id]:
            del self.rows[k]


class FakeUnitOfWork(AbstractUnitOfWork):
    """Committed state = ``keys`` + ``effects``; a transaction works on copies until commit()."""

    def __init__(self) -> None:
        self.keys: dict[tuple[str, str, str], IdempotencyRecord] = {}
        self.effects: list[str] = []
        self.commits = 0

    def __enter__(self) -> FakeUnitOfWork:
        self._keys, self.pending = dict(self.keys), list(self.effects)
        self.idempotency = FakeIdempotency(self._keys)  # type: ignore[assignment]
        return self

    def commit(self) -> None:
        self.keys, self.effects = dict(self._keys), list(self.pending)
        self.commits += 1

    def rollback(self) -> None:
        pass  # the copies are simply dropped

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        saved = copy.copy(self.pending)
        try:
            yield
        except BaseException:
            self.pending[:] = saved
            raise


def _buy(uow: FakeUnitOfWork, key: str, request: dict[str, Any], *, fail: bool = False, now: datetime = NOW) -> Any:
    def action(u: Any) -> tuple[int, dict[str, Any], str | None]:
        u.pending.append(f"allocation for {request}")
        if fail:
            raise InsufficientCapacity("no servers left")
        return 201, {"id": f"al_{len(u.pending)}", "request": request}, f"al_{len(u.pending)}"

    return run_idempotent(uow, account_id="acct", operation="buy", key=key, request=request, now=now,
                          action=action, ttl_s=24 * 3600)


def test_the_first_request_runs_and_commits_once() -> None:
    uow = FakeUnitOfWork()
    outcome = _buy(uow, "k1", {"quote_id": "q1"})
    assert (outcome.status, outcome.replayed) == (201, False)
    assert len(uow.effects) == 1 and uow.commits == 1


def test_a_repeated_key_with_the_same_request_replays_without_running_again() -> None:
    uow = FakeUnitOfWork()
    first = _buy(uow, "k1", {"quote_id": "q1"})
    again = _buy(uow, "k1", {"quote_id": "q1"})
    assert again.replayed and again.body == first.body and again.status == first.status
    assert len(uow.effects) == 1


def test_a_repeated_key_with_a_different_request_is_refused_and_changes_nothing() -> None:
    uow = FakeUnitOfWork()
    _buy(uow, "k1", {"quote_id": "q1"})
    with pytest.raises(IdempotencyKeyReused) as err:
        _buy(uow, "k1", {"quote_id": "q2"})
    assert (err.value.code, err.value.http_status) == ("idempotency_key_reused", 422)
    assert len(uow.effects) == 1


def test_a_business_error_is_stored_and_replayed_but_its_partial_effects_are_not_kept() -> None:
    uow = FakeUnitOfWork()
    with pytest.raises(InsufficientCapacity) as first:
        _buy(uow, "k1", {"quote_id": "q1"}, fail=True)
    assert uow.effects == []  # the savepoint dropped what the action wrote
    with pytest.raises(InsufficientCapacity) as again:
        _buy(uow, "k1", {"quote_id": "q1"})  # would succeed now, but the first outcome is replayed
    assert getattr(again.value, "replayed", False) and not getattr(first.value, "replayed", True)
    assert (again.value.code, again.value.message) == (first.value.code, first.value.message)
    assert uow.effects == []


def test_bad_input_raised_by_the_action_is_not_stored_so_the_key_stays_free() -> None:
    uow = FakeUnitOfWork()

    def bad(u: Any) -> tuple[int, dict[str, Any], str | None]:
        raise InvalidInput("quantity must be positive")

    with pytest.raises(InvalidInput):
        run_idempotent(uow, account_id="acct", operation="buy", key="k1", request={"q": 1}, now=NOW, action=bad)
    assert uow.keys == {}
    assert _buy(uow, "k1", {"q": 1}).replayed is False


def test_an_expired_key_counts_as_a_new_request() -> None:
    uow = FakeUnitOfWork()
    _buy(uow, "k1", {"quote_id": "q1"})
    later = NOW + timedelta(hours=24, seconds=1)
    outcome = _buy(uow, "k1", {"quote_id": "q2"}, now=later)
    assert outcome.replayed is False and len(uow.effects) == 2


@pytest.mark.parametrize("key", ["", "x" * 256, "clé", "tab\there", "line\nbreak", None, 42])
def test_malformed_keys_are_refused_before_anything_runs(key: Any) -> None:
    uow = FakeUnitOfWork()
    with pytest.raises(InvalidIdempotencyKey):
        _buy(uow, key, {"quote_id": "q1"})
    assert uow.effects == [] and uow.keys == {}


@pytest.mark.parametrize("key", ["a", "x" * 255, "order-42 retry #1", "~!@#$%^&*()"])
def test_printable_ascii_keys_of_1_to_255_characters_are_accepted(key: str) -> None:
    assert validate_idempotency_key(key) == key


def test_the_fingerprint_ignores_key_order_but_not_values() -> None:
    assert fingerprint("buy", {"a": 1, "b": 2}) == fingerprint("buy", {"b": 2, "a": 1})
    assert fingerprint("buy", {"a": 1}) != fingerprint("buy", {"a": 2})
    assert len(fingerprint("buy", {})) == 64  # hex SHA-256
