"""Commerce commands: offerings and stock, quotes, booking and the allocation actions, accounts.

    anchorgpu offerings [--gpu G --min-gpus N --max-usd-per-gpu-hour X --region R --interconnect I] [--json]
    anchorgpu stock show [--json]            anchorgpu stock set OFFERING N [--region R]
    anchorgpu quote OFFERING --term 1month [--quantity N] [--option KEY=N] [--region R] [--json]
    anchorgpu book QUOTE_ID [--idempotency-key K] [--json]
    anchorgpu allocations [ID] [--json]
    anchorgpu stop|start|terminate ID [--idempotency-key K] [--json]
    anchorgpu extend ID --term 1w [--idempotency-key K] [--json]
    anchorgpu accounts create NAME [--json]

The database is ``ANCHORGPU_DATABASE_URL`` (the embedded SQLite file by default; created and migrated
on first use). Commands act as a local account created on first use (its key kept in
``$XDG_CONFIG_HOME/anchorgpu/cli-accounts.json``, per database) unless ``--api-key`` or
``ANCHORGPU_API_KEY`` names another. Purchase-like commands send an idempotency key: generated per
command when not given, and printed (on stderr) so that a retry can reuse it.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from anchorgpu.cli._app import app, console, emit_json
from anchorgpu.errors import InvalidInput

if TYPE_CHECKING:
    from anchorgpu.allocations.idempotency import Outcome
    from anchorgpu.bootstrap import Store

stock_app = typer.Typer(help="Servers in stock per offering and region (operator).", no_args_is_help=True)
accounts_app = typer.Typer(help="Accounts and their API keys.", no_args_is_help=True)
app.add_typer(stock_app, name="stock")
app.add_typer(accounts_app, name="accounts")

ApiKeyOpt = Annotated[
    str | None,
    typer.Option("--api-key", envvar="ANCHORGPU_API_KEY", help="Act as this account (default: the local CLI account)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (the stable contract) instead of a table.")]
KeyOpt = Annotated[
    str | None,
    typer.Option("--idempotency-key", help="Reuse the key of an earlier try to retry safely (default: a new key)."),
]


# -- wiring --------------------------------------------------------------------------------------

def _store() -> Store:
    from anchorgpu.bootstrap import bootstrap
    from anchorgpu.config import Settings

    return bootstrap(Settings())


def _state_file() -> Path:
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "anchorgpu" / "cli-accounts.json"


def _local_account(store: Store) -> str:
    """The CLI's local account for this database, created on first use (its key kept in the state file)."""
    from anchorgpu.accounts import InvalidApiKey, authenticate, create_account

    path = _state_file()
    url = store.settings.database_url
    try:
        known: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError):
        known = {}
    entry = known.get(url)
    if isinstance(entry, dict) and isinstance(entry.get("api_key"), str):
        try:
            return authenticate(store.uow_factory(), entry["api_key"]).id
        except InvalidApiKey:
            pass  # the database was reset: make a new local account
    account_id, api_key = create_account(store.uow_factory(), "local CLI account", clock=store.clock)
    known[url] = {"account_id": account_id, "api_key": api_key}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(known, indent=2), encoding="utf-8")
    os.chmod(tmp, 0o600)
    tmp.replace(path)
    return account_id


def _account(store: Store, api_key: str | None) -> str:
    if api_key:
        from anchorgpu.accounts import authenticate

        return authenticate(store.uow_factory(), api_key).id
    return _local_account(store)


def _key(given: str | None) -> str:
    key = given or f"cli-{secrets.token_hex(12)}"
    sys.stderr.write(f"idempotency key: {key}  (retry safely with --idempotency-key {key})\n")
    return key


def _print_outcome(outcome: Outcome, as_json: bool, verb: str) -> None:
    if outcome.replayed:
        sys.stderr.write("replayed: this key was already used for this request; showing the first answer (nothing done again)\n")
    if as_json:
        emit_json(outcome.body)
    else:
        _print_allocation(outcome.body, title=verb)


def _money(amount: str) -> str:
    """``"2190.00"`` -> ``"$2,190.00"`` for the readable output (JSON keeps the plain decimal string)."""
    from decimal import Decimal

    return f"${Decimal(amount):,.2f}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


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


def _parse_options(values: list[str] | None) -> dict[str, int]:
    options: dict[str, int] = {}
    for raw in values or []:
        key, sep, count = raw.partition("=")
        if not sep or not key.strip() or not count.strip().isdigit():
            raise InvalidInput(f"--option {raw!r}: expected KEY=N with N a whole number, e.g. nvme-tb=2")
        options[key.strip()] = options.get(key.strip(), 0) + int(count)
    return options


# -- catalog and stock -----------------------------------------------------------------------------

@app.command("offerings")
def offerings_command(
    gpu: Annotated[str | None, typer.Option(help="GPU name or alias, e.g. h100.")] = None,
    min_gpus: Annotated[int | None, typer.Option(help="At least this many GPUs per server.")] = None,
    max_usd_per_gpu_hour: Annotated[str | None, typer.Option(help="At most this 730-h comparison rate, USD.")] = None,
    region: Annotated[str | None, typer.Option(help="Only this region, e.g. us-east.")] = None,
    interconnect: Annotated[str | None, typer.Option(help="Substring of the GPU link or server fabric, e.g. nvlink, infiniband.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List offerings (server shapes) with list prices and stock per region, cheapest first."""
    from anchorgpu.allocations.services import list_stock
    from anchorgpu.catalog import find_offerings, load_catalog, offering_regions, offering_to_json, offerings_table
    from anchorgpu.validation import usd_amount

    catalog = load_catalog()
    rate = None if max_usd_per_gpu_hour is None else usd_amount(max_usd_per_gpu_hour, field="max_usd_per_gpu_hour")
    found = find_offerings(catalog, gpu=gpu, min_gpus=min_gpus, max_usd_per_gpu_hour=rate, region=region,
                           interconnect=interconnect)
    store = _store()
    stock = list_stock(store.uow_factory())
    free = list_stock(store.uow_factory(), clock=store.clock)
    rows = offering_regions(found, region)
    if as_json:
        emit_json([
            {**offering_to_json(o, stock.get((o.id, r), 0), region=r, options=catalog.options),
             "available_now": free.get((o.id, r), 0)}
            for o, r in rows
        ])
        return
    if not rows:
        console().print("no offering matches these filters; 'anchorgpu offerings' lists them all")
        return
    console().print(offerings_table([(o, r, stock.get((o.id, r), 0)) for o, r in rows],
                                    title=f"Offerings (catalog {catalog.version}); prices per whole server"))


@stock_app.command("set")
def stock_set_command(
    offering: Annotated[str, typer.Argument(help="Offering id, e.g. h100-sxm-8x-bm.")],
    servers: Annotated[int, typer.Argument(help="Servers in stock (0 or more).")],
    region: Annotated[str | None, typer.Option(help="Region (default: the offering's first region).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Set the stock of an offering in a region. Lowering it never cancels what was sold."""
    from anchorgpu.allocations.services import set_stock

    store = _store()
    result = set_stock(store.uow_factory(), offering=offering, servers=servers, region=region, clock=store.clock)
    if as_json:
        emit_json(result)
        return
    note = ""
    if result["booked_now"] > servers:
        note = f" ({result['booked_now']} servers already sold stay sold; no new bookings until they end)"
    console().print(f"stock of {result['offering']} in {result['region']}: {servers} servers{note}")


@stock_app.command("show")
def stock_show_command(as_json: JsonOpt = False) -> None:
    """Stock and servers free right now, per offering and region."""
    from anchorgpu.allocations.services import list_stock

    store = _store()
    stock = list_stock(store.uow_factory())
    free = list_stock(store.uow_factory(), clock=store.clock)
    rows: list[dict[str, Any]] = [
        {"offering": o, "region": r, "stock": s, "available_now": free.get((o, r), 0)} for (o, r), s in sorted(stock.items())
    ]
    if as_json:
        emit_json(rows)
        return
    from rich.table import Table

    table = Table(title="Stock (servers)", title_justify="left")
    for name in ("offering", "region", "stock", "free now"):
        table.add_column(name, justify="right" if name in ("stock", "free now") else "left")
    for row in rows:
        table.add_row(row["offering"], row["region"], str(row["stock"]), str(row["available_now"]))
    console().print(table)


# -- quotes and allocations ------------------------------------------------------------------------

@app.command("quote")
def quote_command(
    offering: Annotated[str, typer.Argument(help="Offering id, e.g. h100-sxm-1x-vm.")],
    term: Annotated[str, typer.Option(help="Fixed term: Nh, Nw (168 h) or Nmonth (720 h).")],
    quantity: Annotated[int, typer.Option(help="Servers.")] = 1,
    option: Annotated[list[str] | None, typer.Option(help="Extra per server, KEY=N (repeatable), e.g. nvme-tb=2.")] = None,
    region: Annotated[str | None, typer.Option(help="Region (default: the offering's first).")] = None,
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Price a fixed term of an offering and keep the quote (valid 24 h) so it can be booked."""
    from anchorgpu.allocations.services import create_quote

    options = _parse_options(option)
    store = _store()
    account_id = _account(store, api_key)
    body = create_quote(store.uow_factory(), account_id=account_id, offering=offering, term=term, quantity=quantity,
                        options=options, region=region, clock=store.clock,
                        validity_s=store.settings.quote_validity_s)
    if as_json:
        emit_json(body)
        return
    out = console()
    out.print(f"quote [bold]{body['id']}[/bold]: {body['quantity']} x {body['offering']} in {body['region']}, "
              f"{_count(body['term']['count'], body['term']['unit'])} = {body['term']['hours']} h, {_count(body['gpus'], 'GPU')}")
    for line in body["lines"]:
        out.print(f"  {line.get('description', line.get('item'))}: {_money(line['amount_usd'])}")
        if line.get("note"):  # the best-price cap of quotes/pricing.py: say how the term was billed
            out.print(f"    ({line['note']})")
    out.print(f"  total: [bold]{_money(body['total_usd'])}[/bold]  ({body['gpu_hours']:,} GPU-hours, "
              f"{_money(body['effective_per_gpu_hour_usd'])}/GPU-h over the term; comparison rate "
              f"{_money(body['per_gpu_hour_usd'])}/GPU-h at 730 h/month)")
    out.print(f"  {body.get('nothing_else_billed', '')}")
    out.print(f"  valid until {body['valid_until']}; book it with: anchorgpu book {body['id']}")


@app.command("book")
def book_command(
    quote_id: Annotated[str, typer.Argument(help="Quote id from `anchorgpu quote`.")],
    idempotency_key: KeyOpt = None,
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Buy a quote: one allocation, exactly once per idempotency key."""
    from anchorgpu.allocations.services import buy_quote

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
    concurrency: Annotated[int | None, typer.Option("--concurrency", help="recipe: sequences at once (inference).")] = None,
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
    from anchorgpu.validation import usd_amount

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


# -- accounts --------------------------------------------------------------------------------------

@accounts_app.command("create")
def accounts_create_command(
    name: Annotated[str, typer.Argument(help="A name for the account.")],
    as_json: JsonOpt = False,
) -> None:
    """Create an account and print its API key ONCE (only a hash is stored)."""
    from anchorgpu.accounts import create_account

    store = _store()
    account_id, api_key = create_account(store.uow_factory(), name, clock=store.clock)
    if as_json:
        emit_json({"account_id": account_id, "api_key": api_key})
        return
    console().print(f"account {account_id}\napi key (shown once, keep it): {api_key}")
