"""Booking and the allocation commands: ``book`` a quote, list or show ``allocations`` (or an allocation's launch
recipe), ``stop``/``start``/``terminate`` one, ``extend`` its paid term. Each purchase-like command sends an
idempotency key (see :mod:`~anchorgpu.cli.commerce`, whose wiring and options these commands share).

    anchorgpu book QUOTE_ID [--idempotency-key K] [--json]
    anchorgpu allocations [ID] [--json]
    anchorgpu stop|start|terminate ID [--idempotency-key K] [--json]
    anchorgpu extend ID --term 1w [--idempotency-key K] [--json]
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from anchorgpu.cli._app import app, console, emit_json
from anchorgpu.cli.commerce import ApiKeyOpt, JsonOpt, KeyOpt, _account, _count, _key, _money, _store

if TYPE_CHECKING:
    from anchorgpu.allocations.idempotency import Outcome


def _checked_id(kind: str, value: str) -> str:
    """``value`` when it could name a stored ``kind``, checked before anything is printed or read (the idempotency
    key's line came before the refusal of ``book ''``): a blank id is bad input (exit 2, as the API's 422 for a blank
    ``quote_id``), any other that names no row is unknown (exit 3, the services' rule)."""
    from anchorgpu.allocations.inputs import _require_id
    from anchorgpu.errors import InvalidInput

    if not value.strip():
        where = "`anchorgpu quote`" if kind == "quote" else "`anchorgpu allocations`"
        raise InvalidInput(f"{kind} id {value!r}: the id is empty; give the id {where} printed")
    return _require_id(kind, value)


def _print_outcome(outcome: Outcome, as_json: bool, verb: str) -> None:
    if outcome.replayed:
        sys.stderr.write("replayed: this key was already used for this request; showing the first answer (nothing done again)\n")
    if as_json:
        emit_json(outcome.body)
    else:
        _print_allocation(outcome.body, title=verb)


def _print_allocation(body: dict[str, Any], *, title: str | None = None) -> None:
    out = console()
    head = f"{title}: " if title else ""
    out.print(f"{head}allocation [bold]{body['id']}[/bold] ({body['state']})")
    out.print(f"  {body['quantity']} x {body['offering']} in {body['region']} = {_count(body['gpus'], 'GPU')}")
    out.print(f"  {body['starts_at']} -> {body['ends_at']}  ({body['paid_hours']} h paid)")
    out.print(f"  amount paid: {_money(body['amount_usd'])}   quote: {body['quote_id']}")
    if body.get("terminated_at"):  # the paid end stays as sold; the servers were released at this moment
        out.print(f"  terminated at {body['terminated_at']}: servers released, no refund")
    if body.get("notice"):
        out.print(f"  [bold]note:[/bold] {body['notice']}")


@app.command("book")
def book_command(
    quote_id: Annotated[str, typer.Argument(help="Quote id from `anchorgpu quote`.")],
    idempotency_key: KeyOpt = None,
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Buy a quote: one allocation, exactly once per idempotency key."""
    from anchorgpu.allocations.services import buy_quote

    _checked_id("quote", quote_id)
    store = _store()
    account_id = _account(store, api_key)
    key = _key(idempotency_key)
    outcome = buy_quote(store.uow_factory(), account_id=account_id, quote_id=quote_id, idempotency_key=key,
                        clock=store.clock, key_ttl_s=store.key_ttl_s)
    _print_outcome(outcome, as_json, "booked")


@app.command("allocations")
def allocations_command(
    allocation_id: Annotated[str | None, typer.Argument(help="Show only this allocation (or 'recipe ID': its launch).")] = None,
    recipe_of: Annotated[str | None, typer.Argument(help="After 'recipe': the allocation to launch on.", show_default=False)] = None,
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
    kind: Annotated[str | None, typer.Option("--kind", help="recipe: vllm | sglang | trtllm | torchrun-fsdp | deepspeed | accelerate | skypilot | k8s")] = None,
    model: Annotated[str | None, typer.Option("--model", help="recipe: the model to run (registry name, config.json or Hub id).")] = None,
    task: Annotated[str, typer.Option("--task", help="recipe: inference | train | lora | qlora")] = "inference",
    context: Annotated[str | None, typer.Option("--context", help="recipe: tokens per sequence (inference) or training sequence.")] = None,
    concurrency: Annotated[str | None, typer.Option("--concurrency", help="recipe: sequences at once (inference), e.g. 64 or 1k (= 1,000).")] = None,
) -> None:
    """Your allocations (states at this moment), or one of them; `allocations recipe ID --kind K --model M`: the launch."""
    from anchorgpu.allocations.services import get_allocation, list_allocations

    store = _store()
    account_id = _account(store, api_key)
    if allocation_id == "recipe":
        from anchorgpu.cli.allocation_recipe import allocation_recipe_command

        allocation_recipe_command(store, account_id, recipe_of, kind=kind, model=model, task=task, context=context,
                                  concurrency=concurrency, as_json=as_json)
        return
    if allocation_id is not None:
        body = get_allocation(store.uow_factory(), account_id=account_id, allocation_id=allocation_id, clock=store.clock)
        if as_json:
            emit_json(body)
        else:
            _print_allocation(body)
        return
    bodies = list_allocations(store.uow_factory(), account_id=account_id, clock=store.clock)
    if as_json:
        emit_json(bodies)
        return
    from rich.table import Table

    table = Table(title="Allocations", title_justify="left")
    for name in ("id", "offering", "region", "GPUs", "state", "starts_at", "ends_at", "amount_usd"):
        table.add_column(name, justify="right" if name in ("GPUs", "amount_usd") else "left")
    for b in bodies:
        table.add_row(b["id"], b["offering"], b["region"], str(b["gpus"]), b["state"], b["starts_at"], b["ends_at"], b["amount_usd"])
    console().print(table)
    if any(b["state"] == "stopped" for b in bodies):
        from anchorgpu.allocations.domain import STOP_NOTICE

        console().print(f"note: {STOP_NOTICE}")


def _action(name: str, allocation_id: str, idempotency_key: str | None, api_key: str | None, as_json: bool,
            **extra: Any) -> None:
    from anchorgpu.allocations import services

    _checked_id("allocation", allocation_id)
    store = _store()
    account_id = _account(store, api_key)
    key = _key(idempotency_key)
    fn = getattr(services, name)
    outcome = fn(store.uow_factory(), account_id=account_id, allocation_id=allocation_id, idempotency_key=key,
                 clock=store.clock, key_ttl_s=store.key_ttl_s, **extra)
    _print_outcome(outcome, as_json, {"stop": "stopped", "start": "started", "terminate": "terminated",
                                      "extend": "extended"}[name])


@app.command("stop")
def stop_command(allocation_id: str, idempotency_key: KeyOpt = None, api_key: ApiKeyOpt = None,
                 as_json: JsonOpt = False) -> None:
    """Stop an allocation. Stopping does NOT pause the paid term: its end and price stay the same."""
    _action("stop", allocation_id, idempotency_key, api_key, as_json)


@app.command("start")
def start_command(allocation_id: str, idempotency_key: KeyOpt = None, api_key: ApiKeyOpt = None,
                  as_json: JsonOpt = False) -> None:
    """Start a stopped allocation again (only before its term ends)."""
    _action("start", allocation_id, idempotency_key, api_key, as_json)


@app.command("terminate")
def terminate_command(allocation_id: str, idempotency_key: KeyOpt = None, api_key: ApiKeyOpt = None,
                      as_json: JsonOpt = False) -> None:
    """End an allocation now. No refund; its servers are released."""
    _action("terminate", allocation_id, idempotency_key, api_key, as_json)


@app.command("extend")
def extend_command(
    allocation_id: str,
    term: Annotated[str, typer.Option(help="Added term: Nh, Nw or Nmonth, priced by a new quote.")],
    idempotency_key: KeyOpt = None,
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the price, the new end and the capacity check; charge nothing.")] = False,
    expected_total_usd: Annotated[str | None, typer.Option("--expected-total-usd", help="Charge only at this price (a --dry-run's total); otherwise refused, nothing charged.")] = None,
) -> None:
    """Add a paid term after the allocation's end (capacity checked for the added period). See the price first with --dry-run."""
    from anchorgpu.allocations.extension import quote_extension
    from anchorgpu.money_rules import usd_amount

    # refused before anything is read; an empty value is refused too (only the page's empty field means "not given")
    expected = None if expected_total_usd is None else usd_amount(expected_total_usd, field="expected_total_usd")
    if dry_run:
        store = _store()
        priced = quote_extension(store.uow_factory(), account_id=_account(store, api_key), allocation_id=allocation_id,
                                 term=term, now=store.clock())
        if as_json:
            emit_json(priced)
        else:
            console().print(priced["statement"], markup=False)
            console().print(f"capacity: {priced['capacity']}", markup=False)
            console().print(f"then: anchorgpu extend {allocation_id} --term {priced['term']} "
                            f"--expected-total-usd {priced['total_usd']}", markup=False)
        return
    _action("extend", allocation_id, idempotency_key, api_key, as_json, term=term,
            expected_total_usd=expected)
