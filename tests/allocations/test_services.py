"""Quote → book → stop/start/extend/terminate through the services, on SQLite and on PostgreSQL.

Each test runs twice (``[sqlite]`` and ``[postgres]``) on a database of its own (tests/conftest.py).
Prices come from the shipped catalog (catalog/data/offerings.csv): 1x H100 SXM VM at $2,190/month
(DESIGN.md section 2) and $547/week.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import func, select, text

from anchorgpu.allocations import services as svc
from anchorgpu.allocations.domain import STOP_NOTICE
from anchorgpu.allocations.errors import (
    AllocationExpired,
    AllocationStateConflict,
    IdempotencyKeyReused,
    InsufficientCapacity,
    InvalidIdempotencyKey,
    QuoteAlreadyUsed,
    QuoteExpired,
)
from anchorgpu.errors import UnknownEntity
from anchorgpu.store.tables import AllocationEventRow, AllocationRow, IdempotencyKeyRow, QuoteRow
from anchorgpu.units import fmt_usd

H100 = "h100-sxm-1x-vm"


def quote(store: Any, account: Any, **kw: Any) -> dict[str, Any]:
    args = {"offering": H100, "term": "1month", **kw}
    return svc.create_quote(store.uow_factory(), account_id=account.id, clock=store.clock, **args)


def buy(store: Any, account: Any, quote_id: str, key: str, **kw: Any) -> Any:
    return svc.buy_quote(store.uow_factory(), account_id=account.id, quote_id=quote_id, idempotency_key=key,
                         clock=store.clock, **kw)


def act(store: Any, name: str, account: Any, allocation_id: str, key: str, **kw: Any) -> Any:
    return getattr(svc, name)(store.uow_factory(), account_id=account.id, allocation_id=allocation_id,
                              idempotency_key=key, clock=store.clock, **kw)


def count(store: Any, table: Any) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def set_stock(store: Any, n: int, offering: str = H100, region: str | None = None) -> None:
    svc.set_stock(store.uow_factory(), offering=offering, servers=n, region=region, clock=store.clock)


def test_a_quote_is_stored_with_its_priced_lines(store: Any, account: Any) -> None:
    q = quote(store, account, options={"nvme-tb": 2})
    assert q["id"].startswith("q_") and q["total_usd"] == "2260.00"  # 2190 + 2 x 35 (options.csv)
    again = svc.get_quote(store.uow_factory(), account_id=account.id, quote_id=q["id"])
    assert {k: v for k, v in again.items() if k != "used"} == q and again["used"] is False


def test_booking_a_quote_makes_one_allocation_for_exactly_the_term(store: Any, account: Any) -> None:
    q = quote(store, account)
    outcome = buy(store, account, q["id"], "k1")
    body = outcome.body
    assert (outcome.status, outcome.replayed) == (201, False)
    assert {"id", "quote_id", "offering", "gpus", "state", "starts_at", "ends_at", "amount_usd", "region",
            "term", "events"} <= body.keys()
    assert (body["quote_id"], body["offering"], body["gpus"], body["state"]) == (q["id"], H100, 1, "active")
    assert body["starts_at"] == store.clock().isoformat()
    assert body["paid_hours"] == 720 and body["amount_usd"] == "2190.00"
    assert [e["kind"] for e in body["events"]] == ["created"]


def test_retrying_with_the_same_key_replays_the_same_allocation(store: Any, account: Any) -> None:
    q = quote(store, account)
    first = buy(store, account, q["id"], "retry-me")
    store.clock.advance(minutes=3)
    again = buy(store, account, q["id"], "retry-me")
    assert again.replayed and again.body == first.body and again.status == 201
    assert count(store, AllocationRow) == 1


def test_the_same_key_for_a_different_quote_is_refused_and_books_nothing(store: Any, account: Any) -> None:
    q1, q2 = quote(store, account), quote(store, account)
    buy(store, account, q1["id"], "k")
    with pytest.raises(IdempotencyKeyReused) as err:
        buy(store, account, q2["id"], "k")
    assert err.value.http_status == 422
    assert count(store, AllocationRow) == 1


def test_keys_are_scoped_per_account(store: Any, make_account: Any) -> None:
    alice, bob = make_account("alice"), make_account("bob")
    a = buy(store, alice, quote(store, alice)["id"], "same-key")
    b = buy(store, bob, quote(store, bob)["id"], "same-key")
    assert not b.replayed and a.body["id"] != b.body["id"]


def test_an_expired_quote_cannot_be_bought_and_nothing_changes(store: Any, account: Any) -> None:
    q = quote(store, account)
    store.clock.advance(hours=24)  # valid_until = created + 24 h (Settings.quote_validity_s); the instant itself is past
    with pytest.raises(QuoteExpired) as err:
        buy(store, account, q["id"], "k")
    assert err.value.code == "quote_expired"
    assert count(store, AllocationRow) == 0
    assert svc.get_quote(store.uow_factory(), account_id=account.id, quote_id=q["id"])["used"] is False


def test_a_quote_is_bought_at_most_once(store: Any, account: Any) -> None:
    q = quote(store, account)
    buy(store, account, q["id"], "k1")
    with pytest.raises(QuoteAlreadyUsed):
        buy(store, account, q["id"], "k2")
    with pytest.raises(QuoteAlreadyUsed) as replay:  # the business error is stored under k2 and replayed
        buy(store, account, q["id"], "k2")
    assert getattr(replay.value, "replayed", False) is True
    assert count(store, AllocationRow) == 1


def test_an_unknown_quote_is_not_stored_under_the_key(store: Any, account: Any) -> None:
    with pytest.raises(UnknownEntity):
        buy(store, account, "q_doesnotexist", "k")
    assert count(store, IdempotencyKeyRow) == 0


@pytest.mark.parametrize("key", ["", "k" * 256, "naïve"])
def test_a_malformed_key_changes_nothing(store: Any, account: Any, key: str) -> None:
    q = quote(store, account)
    with pytest.raises(InvalidIdempotencyKey):
        buy(store, account, q["id"], key)
    assert count(store, AllocationRow) == 0 and count(store, IdempotencyKeyRow) == 0


def test_another_accounts_quote_and_allocation_are_not_found(store: Any, make_account: Any) -> None:
    alice, mallory = make_account("alice"), make_account("mallory")
    q = quote(store, alice)
    with pytest.raises(UnknownEntity):
        svc.get_quote(store.uow_factory(), account_id=mallory.id, quote_id=q["id"])
    with pytest.raises(UnknownEntity):
        buy(store, mallory, q["id"], "steal")
    allocation = buy(store, alice, q["id"], "mine").body
    with pytest.raises(UnknownEntity):
        svc.get_allocation(store.uow_factory(), account_id=mallory.id, allocation_id=allocation["id"], clock=store.clock)
    for action in ("stop", "terminate"):
        with pytest.raises(UnknownEntity):
            act(store, action, mallory, allocation["id"], f"m-{action}")
    assert svc.list_allocations(store.uow_factory(), account_id=mallory.id, clock=store.clock) == []
    assert svc.get_allocation(store.uow_factory(), account_id=alice.id, allocation_id=allocation["id"],
                              clock=store.clock)["state"] == "active"


def test_stop_keeps_the_end_and_the_amount_and_says_so(store: Any, account: Any) -> None:
    booked = buy(store, account, quote(store, account)["id"], "b").body
    store.clock.advance(hours=5)
    stopped = act(store, "stop", account, booked["id"], "s")
    assert stopped.body["state"] == "stopped"
    assert (stopped.body["ends_at"], stopped.body["amount_usd"]) == (booked["ends_at"], booked["amount_usd"])
    notice = stopped.body["notice"]
    assert STOP_NOTICE.startswith("Stopping does not pause the paid term") and notice.startswith(STOP_NOTICE.split(":")[0])
    assert booked["ends_at"] in notice and fmt_usd(booked["amount_usd"]) in notice  # "$2,190.00", as every face prints money
    replay = act(store, "stop", account, booked["id"], "s")
    assert replay.replayed and replay.body == stopped.body  # the statement is part of every stop answer
    with pytest.raises(AllocationStateConflict):
        act(store, "stop", account, booked["id"], "s2")


def test_start_after_stop_and_not_after_the_end(store: Any, account: Any) -> None:
    booked = buy(store, account, quote(store, account, term="10h")["id"], "b").body
    act(store, "stop", account, booked["id"], "s")
    assert act(store, "start", account, booked["id"], "st").body["state"] == "active"
    act(store, "stop", account, booked["id"], "s2")
    store.clock.advance(hours=10)
    with pytest.raises(AllocationExpired) as err:
        act(store, "start", account, booked["id"], "st2")
    assert err.value.code == "allocation_expired"
    listed = svc.list_allocations(store.uow_factory(), account_id=account.id, clock=store.clock)
    assert [a["state"] for a in listed] == ["expired"]


def test_every_change_writes_an_event_row(store: Any, account: Any) -> None:
    booked = buy(store, account, quote(store, account)["id"], "b").body
    act(store, "stop", account, booked["id"], "s")
    act(store, "start", account, booked["id"], "st")
    act(store, "extend", account, booked["id"], "e", term="1w")
    act(store, "terminate", account, booked["id"], "t")
    with store.engine.connect() as conn:
        kinds = conn.execute(select(AllocationEventRow.kind).order_by(AllocationEventRow.seq)).scalars().all()
    assert kinds == ["created", "stopped", "started", "extended", "terminated"]


def test_extend_is_priced_by_a_new_quote_and_moves_only_the_end(store: Any, account: Any) -> None:
    booked = buy(store, account, quote(store, account)["id"], "b").body
    extended = act(store, "extend", account, booked["id"], "e", term="1w").body
    assert extended["paid_hours"] == 720 + 168
    assert Decimal(extended["amount_usd"]) == Decimal("2190.00") + Decimal("547.00")  # offerings.csv week price
    assert extended["starts_at"] == booked["starts_at"]
    detail = extended["events"][-1]["details"]
    assert detail["previous_ends_at"] == booked["ends_at"] and detail["quote_id"] != booked["quote_id"]


def test_extend_checks_capacity_for_the_added_period_only(store: Any, make_account: Any) -> None:
    alice, bob = make_account("alice"), make_account("bob")
    set_stock(store, 1)
    first = buy(store, alice, quote(store, alice, term="1w")["id"], "a").body
    # Bob books the single server for the week right after Alice's ends.
    from datetime import datetime

    after = datetime.fromisoformat(first["ends_at"])
    buy(store, bob, quote(store, bob, term="1w")["id"], "b", starts_at=after)
    with pytest.raises(InsufficientCapacity):
        act(store, "extend", alice, first["id"], "ext", term="1h")
    assert svc.get_allocation(store.uow_factory(), account_id=alice.id, allocation_id=first["id"],
                              clock=store.clock)["ends_at"] == first["ends_at"]


def test_booking_beyond_stock_is_refused_and_changes_nothing(store: Any, account: Any) -> None:
    set_stock(store, 2)
    buy(store, account, quote(store, account, quantity=2)["id"], "two")
    q = quote(store, account)
    with pytest.raises(InsufficientCapacity) as err:
        buy(store, account, q["id"], "three")
    assert err.value.code == "insufficient_capacity"
    # The reason reads as a person would write the period (no microseconds, no ISO offset).
    assert "only 0 of 2 free" in err.value.message and " UTC" in err.value.message and "+00:00" not in err.value.message
    assert count(store, AllocationRow) == 1
    assert svc.get_quote(store.uow_factory(), account_id=account.id, quote_id=q["id"])["used"] is False


def test_capacity_is_checked_at_every_instant_not_in_total(store: Any, account: Any) -> None:
    from datetime import timedelta

    set_stock(store, 1)
    now = store.clock()
    buy(store, account, quote(store, account, term="10h")["id"], "a")
    # Back to back with the first booking: fits. Overlapping by one hour: does not.
    buy(store, account, quote(store, account, term="10h")["id"], "b", starts_at=now + timedelta(hours=10))
    with pytest.raises(InsufficientCapacity):
        buy(store, account, quote(store, account, term="10h")["id"], "c", starts_at=now + timedelta(hours=19))
    buy(store, account, quote(store, account, term="10h")["id"], "d", starts_at=now + timedelta(hours=20))


def test_lowering_stock_never_cancels_what_was_sold(store: Any, account: Any) -> None:
    set_stock(store, 2)
    buy(store, account, quote(store, account, quantity=2)["id"], "two")
    result = svc.set_stock(store.uow_factory(), offering=H100, servers=0, clock=store.clock)
    assert result == {"offering": H100, "region": "us-east", "stock": 0, "booked_now": 2}
    assert [a["state"] for a in svc.list_allocations(store.uow_factory(), account_id=account.id, clock=store.clock)] == ["active"]
    with pytest.raises(InsufficientCapacity):
        buy(store, account, quote(store, account)["id"], "more")


def test_terminate_keeps_the_amount_and_frees_the_servers(store: Any, account: Any) -> None:
    set_stock(store, 1)
    booked = buy(store, account, quote(store, account)["id"], "b").body
    store.clock.advance(hours=1)
    ended = act(store, "terminate", account, booked["id"], "t").body
    assert ended["state"] == "terminated" and ended["amount_usd"] == booked["amount_usd"]
    assert ended["terminated_at"] == store.clock().isoformat()
    buy(store, account, quote(store, account)["id"], "again")  # the server is free from now on


def test_history_keeps_the_price_as_quoted_when_the_catalog_changes(store: Any, account: Any) -> None:
    from anchorgpu.catalog import load_catalog

    catalog = load_catalog()
    dearer = dataclasses.replace(
        catalog,
        offerings=tuple(
            dataclasses.replace(o, prices_usd=dataclasses.replace(o.prices_usd, month=Decimal("9999.00")))
            if o.id == H100 else o for o in catalog.offerings
        ),
    )
    q = quote(store, account)  # at the shipped price
    later = quote(store, account, catalog=dearer)
    assert (q["total_usd"], later["total_usd"]) == ("2190.00", "9999.00")
    booked = buy(store, account, q["id"], "k").body
    assert booked["amount_usd"] == "2190.00"
    with store.engine.connect() as conn:
        stored = conn.execute(select(QuoteRow.body).where(QuoteRow.id == q["id"])).scalar_one()
    assert stored["total_usd"] == "2190.00"


def test_expired_keys_are_purged_and_then_count_as_new(store: Any, account: Any) -> None:
    from anchorgpu.allocations.idempotency import purge_idempotency_keys

    buy(store, account, quote(store, account)["id"], "old", key_ttl_s=24 * 3600)
    assert purge_idempotency_keys(store.uow_factory(), now=store.clock()) == 0
    store.clock.advance(hours=24)
    assert purge_idempotency_keys(store.uow_factory(), now=store.clock()) == 1
    assert count(store, IdempotencyKeyRow) == 0
    fresh = buy(store, account, quote(store, account)["id"], "old")
    assert fresh.replayed is False and count(store, AllocationRow) == 2


def test_accounts_store_only_a_hash_of_the_key(store: Any, account: Any) -> None:
    from anchorgpu.accounts import InvalidApiKey, authenticate

    assert authenticate(store.uow_factory(), account.api_key).id == account.id
    with pytest.raises(InvalidApiKey):
        authenticate(store.uow_factory(), account.api_key + "x")
    with store.engine.connect() as conn:
        dump = repr(conn.execute(text("SELECT * FROM accounts")).all())
    assert account.api_key not in dump and account.id in dump


@pytest.mark.parametrize(
    ("kw", "code"),
    [
        ({"quantity": 10**9}, "invalid_quantity"),  # 10^9 servers: refused before pricing, nothing stored
        ({"quantity": 0}, "invalid_quantity"),
        ({"quantity": 1.5}, "partial_gpu_not_offered"),
        ({"term": "1000000000month"}, "invalid_term"),
        ({"term": "-1w"}, "invalid_term"),
        ({"offering": "h100-sxm-1x-vm", "options": {"nvme-tb": -1}}, "invalid_option"),
    ],
)
def test_absurd_quote_requests_are_bad_input_and_store_nothing(store: Any, account: Any, kw: dict[str, Any], code: str) -> None:
    from anchorgpu.errors import InvalidInput

    with pytest.raises(InvalidInput) as err:
        quote(store, account, **kw)
    assert err.value.code == code
    assert count(store, QuoteRow) == 0


def test_extend_refuses_an_absurd_term_and_keeps_the_allocation(store: Any, account: Any) -> None:
    from anchorgpu.errors import InvalidTerm

    booked = buy(store, account, quote(store, account)["id"], "b").body
    with pytest.raises(InvalidTerm):
        act(store, "extend", account, booked["id"], "e", term="999999w")
    assert svc.get_allocation(store.uow_factory(), account_id=account.id, allocation_id=booked["id"],
                              clock=store.clock)["ends_at"] == booked["ends_at"]


def test_a_replay_returns_the_first_answer_even_after_the_allocation_changed(store: Any, account: Any) -> None:
    # Decision (Stripe's model, not EC2's): a replay is the stored first answer; GET shows the state now.
    q = quote(store, account)
    first = buy(store, account, q["id"], "k").body
    act(store, "stop", account, first["id"], "s")
    replay = buy(store, account, q["id"], "k")
    assert replay.replayed and replay.body == first and replay.body["state"] == "active"
    now = svc.get_allocation(store.uow_factory(), account_id=account.id, allocation_id=first["id"], clock=store.clock)
    assert now["state"] == "stopped"
