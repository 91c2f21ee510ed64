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

Booking and the allocation commands (``book``, ``allocations``, ``stop``/``start``/``terminate``, ``extend``) live in
:mod:`~anchorgpu.cli.booking`, which imports this module first, so the commands keep their order.
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
    """The idempotency key given (refused in one line when it could not be one: ``''`` was replaced by a new key
    without a word), else a new one; printed on stderr so that a retry can reuse it."""
    from anchorgpu.validation import is_valid_idempotency_key

    if given is not None and not is_valid_idempotency_key(given):
        shown = repr(given[:40] + ("…" if len(given) > 40 else ""))
        raise InvalidInput(f"--idempotency-key {shown}: expected 1-255 printable ASCII characters, as the API's "
                           "Idempotency-Key header")
    key = given or f"cli-{secrets.token_hex(12)}"
    sys.stderr.write(f"idempotency key: {key}  (retry safely with --idempotency-key {key})\n")
    return key


def _money(amount: str) -> str:
    """``"2190.00"`` -> ``"$2,190.00"`` for the readable output (JSON keeps the plain decimal string)."""
    from decimal import Decimal

    return f"${Decimal(amount):,.2f}"


def _quote_line(line: dict[str, Any]) -> str:
    """One priced line as the web page writes it: what, the billed term x the list price of one unit x how many
    units = the line's amount, so a line for several servers never reads as the price of one.

    >>> _quote_line({"description": "h100-sxm-8x-bm: 8 x h100-sxm (bare-metal) per server", "quantity": 2,
    ...              "billed_unit": "week", "billed_count": 1, "unit_price_usd": "4155.00", "amount_usd": "8310.00"})
    'h100-sxm-8x-bm: 8 x h100-sxm (bare-metal) per server: 1 week x $4,155.00 x 2 = $8,310.00'
    """
    head = f"{line.get('description', line.get('item'))}: "
    unit, count, price = line.get("billed_unit"), line.get("billed_count"), line.get("unit_price_usd")
    if not isinstance(unit, str) or not isinstance(count, int) or price is None:
        return head + _money(line["amount_usd"])
    quantity = line.get("quantity", 1)
    times = f" x {quantity:,}" if isinstance(quantity, int) and quantity != 1 else ""
    return f"{head}{_count(count, unit)} x {_money(price)}{times} = {_money(line['amount_usd'])}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


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
    from anchorgpu.money_rules import usd_amount

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


# -- quotes ----------------------------------------------------------------------------------------

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
        out.print(f"  {_quote_line(line)}")
        if line.get("note"):  # the best-price cap of quotes/pricing.py: say how the term was billed
            out.print(f"    ({line['note']})")
    out.print(f"  total: [bold]{_money(body['total_usd'])}[/bold]  ({body['gpu_hours']:,} GPU-hours, "
              f"{_money(body['effective_per_gpu_hour_usd'])}/GPU-h over the term; comparison rate "
              f"{_money(body['per_gpu_hour_usd'])}/GPU-h at 730 h/month)")
    out.print(f"  {body.get('nothing_else_billed', '')}")
    out.print(f"  valid until {body['valid_until']}; book it with: anchorgpu book {body['id']}")


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
