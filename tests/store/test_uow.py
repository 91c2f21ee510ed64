"""Unit of work and repositories on both engines: nothing is written unless committed; values round-trip."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from anchorgpu.allocations.domain import Allocation, AllocationState
from anchorgpu.store.repository import AccountRecord
from anchorgpu.units import Term

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _account(uow: Any, account_id: str = "acct_uow") -> None:
    uow.accounts.add(AccountRecord(id=account_id, name="uow test", created_at=T0))


def test_uncommitted_work_is_rolled_back_by_default(store: Any) -> None:
    with store.uow_factory() as uow:
        _account(uow)
    with store.uow_factory() as uow:
        assert uow.accounts.get("acct_uow") is None


def test_work_is_rolled_back_on_error(store: Any) -> None:
    with pytest.raises(RuntimeError), store.uow_factory() as uow:
        _account(uow)
        uow.session.flush()
        raise RuntimeError("boom")
    with store.uow_factory() as uow:
        assert uow.accounts.get("acct_uow") is None


def test_committed_work_is_kept(store: Any) -> None:
    with store.uow_factory() as uow:
        _account(uow)
        uow.commit()
    with store.uow_factory() as uow:
        assert uow.accounts.get("acct_uow") is not None


def test_a_unit_of_work_can_be_used_again_but_not_nested(store: Any) -> None:
    uow = store.uow_factory()
    with uow:
        pass
    with uow, pytest.raises(RuntimeError), uow:
        pass


def test_an_allocation_round_trips_with_money_instants_and_events(store: Any, account: Any) -> None:
    from anchorgpu.allocations.services import create_quote

    q = create_quote(store.uow_factory(), account_id=account.id, offering="h100-sxm-1x-vm", term="1h", clock=store.clock)
    paris = timezone(timedelta(hours=1))
    amount = Decimal("12345678901234.56")  # beyond a double's exact integer cents
    allocation, _ = Allocation.bought(
        id="al_roundtrip", account_id=account.id, quote_id=q["id"], offering_id="h100-sxm-1x-vm", region="us-east",
        quantity=1, gpus=1, term=Term("week", 2), amount_usd=amount, starts_at=T0.astimezone(paris), now=T0,
    )
    stopped, events = allocation.stop(T0 + timedelta(minutes=1))
    with store.uow_factory() as uow:
        uow.allocations.add(allocation)
        uow.allocations.save(stopped, events)
        uow.commit()
    with store.uow_factory() as uow:
        loaded = uow.allocations.get(account.id, "al_roundtrip")
    assert loaded is not None
    assert loaded.amount_usd == amount and isinstance(loaded.amount_usd, Decimal)
    assert loaded.starts_at == T0 and loaded.starts_at.tzinfo is not None
    assert loaded.ends_at - loaded.starts_at == timedelta(hours=336)
    assert loaded.state is AllocationState.STOPPED
    assert [e.kind for e in loaded.events] == ["created", "stopped"]


def test_naive_datetimes_are_refused_by_the_store(store: Any) -> None:
    with pytest.raises(Exception, match="naive datetime"), store.uow_factory() as uow:
        uow.accounts.add(AccountRecord(id="acct_naive", name="n",
                                       created_at=datetime(2026, 1, 1)))
        uow.session.flush()
