"""Quote builder → quote → booking, and "my allocations" with stop / start / extend / terminate.

Every form that changes something carries the session's CSRF token and, for purchase-like actions, an
idempotency key generated when the form was rendered: a double click, a resubmitted form or the back
button followed by another submit all send the same key, so the service books (or stops …) once and
replays the first answer.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Form, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from anchorgpu.allocations import services
from anchorgpu.allocations.inputs import _quantity, _term
from anchorgpu.api.deps import ClockDep, SettingsDep, UowFactoryDep, validate_idempotency_key
from anchorgpu.catalog import load_catalog
from anchorgpu.errors import AnchorError
from anchorgpu.validation import ascii_int
from anchorgpu.web.deps import SignedInAccountId, require_csrf
from anchorgpu.web.i18n import PageText, page_text
from anchorgpu.web.refusals import refusal_words
from anchorgpu.web.templating import environment, render, web_session

router = APIRouter(dependencies=[Depends(require_csrf)])

TERM_CHOICES = ("12h", "1w", "2w", "1month", "3month", "6month", "12month")


def new_form_key() -> str:
    """A fresh idempotency key for one rendered form (URL-safe, well within 255 printable characters)."""
    return f"web-{secrets.token_urlsafe(18)}"


def _offering_context(offering_id: str | None, text: PageText | None = None) -> dict[str, Any]:
    catalog = load_catalog()
    context: dict[str, Any] = {"offerings": catalog.offerings, "terms": TERM_CHOICES}
    if offering_id:
        try:
            offering = catalog.offering(offering_id)
        except AnchorError as exc:
            context["error"] = refusal_words(exc, text or PageText("en"))
        else:
            context["offering"] = offering
            context["options"] = [o for o in catalog.options if o.applies_to(offering)]
    return context


@router.get("/quote", response_class=HTMLResponse)
def quote_builder(
    request: Request,
    account_id: SignedInAccountId,
    clock: ClockDep,
    offering: Annotated[str | None, Query(max_length=100)] = None,
    region: Annotated[str | None, Query(max_length=100)] = None,
    quantity: Annotated[str | None, Query(max_length=10)] = None,
    term: Annotated[str | None, Query(max_length=20)] = None,
) -> Response:
    """Pick quantity, term and options for an offering."""
    context = _offering_context(offering, page_text(request))
    context["form"] = {"region": region, "quantity": quantity or "1", "term": term or "1month"}
    if "offering" in context:
        context["preview"] = preview_quote(context["form"] | {"offering": offering or ""}, clock, page_text(request))
    return render(request, "quote_builder.html", context, status_code=404 if "error" in context else 200)


def _not_whole(text: PageText | None) -> str:
    return (text or PageText("en")).gettext("Quantity and option units must be whole numbers.")


def preview_quote(form: Mapping[str, str | None], clock: Any, text: PageText | None = None) -> dict[str, Any]:
    """Price the builder's current choice without storing a quote or charging anything: ``{"quote": JSON}``
    (the same pricing as a real quote), or ``{"error": one-line reason}`` for a choice that cannot be priced."""
    from anchorgpu.quotes.pricing import price_quote
    from anchorgpu.quotes.serialize import quote_to_json

    try:
        options = {key.removeprefix("option:")[:100]: ascii_int(str(value)) for key, value in form.items()
                   if key.startswith("option:") and str(value or "").strip() not in ("", "0")}
        quantity = _quantity(ascii_int(str(form.get("quantity") or "1")))
        term = _term(str(form.get("term") or "")[:20])
        quote = price_quote(load_catalog(), str(form.get("offering") or "")[:100], quantity, term, options, clock(), 60,
                            region=str(form.get("region") or "") or None, quote_id="preview")
    except AnchorError as exc:
        return {"error": refusal_words(exc, text or PageText("en"))}
    except ValueError:
        return {"error": _not_whole(text)}
    return {"quote": quote_to_json(quote)}


@router.get("/quote/preview", response_class=HTMLResponse)
def quote_preview(request: Request, account_id: SignedInAccountId, clock: ClockDep) -> Response:
    """The builder's running total as an HTML fragment (the page fetches it as the options change); no quote is
    stored and nothing is charged. A choice that cannot be priced answers 200 with its reason in the fragment."""
    form = {k: v[:100] for k, v in list(request.query_params.items())[:64]}
    return render(request, "_quote_preview.html", {"preview": preview_quote(form, clock, page_text(request))})


@router.post("/quote")
async def create_quote(request: Request, account_id: SignedInAccountId, uow_factory: UowFactoryDep, clock: ClockDep,
                       settings: SettingsDep) -> Response:
    """Price the form's choice and keep the quote; then show it with its Book button."""
    form = await request.form()
    offering = str(form.get("offering", ""))[:100]
    options: dict[str, int] = {}
    context = _offering_context(offering, page_text(request))
    context["form"] = {k: str(v)[:100] for k, v in form.items() if k != "csrf_token"}
    if "offering" in context:
        context["preview"] = preview_quote(context["form"], clock, page_text(request))
    try:
        for key, value in form.items():
            if key.startswith("option:") and str(value).strip() not in ("", "0"):
                options[key.removeprefix("option:")[:100]] = ascii_int(str(value))
        quantity = ascii_int(str(form.get("quantity", "1")))
        quote = services.create_quote(uow_factory(), account_id=account_id, offering=offering, term=str(form.get("term", ""))[:20],
                                      quantity=quantity, options=options, region=str(form.get("region") or "") or None, clock=clock,
                                      validity_s=settings.quote_validity_s)
    except ValueError as exc:
        if isinstance(exc, AnchorError):
            context["error"] = refusal_words(exc, page_text(request))
            return render(request, "quote_builder.html", context, status_code=exc.http_status)
        context["error"] = _not_whole(page_text(request))
        return render(request, "quote_builder.html", context, status_code=422)
    except AnchorError as exc:
        context["error"] = refusal_words(exc, page_text(request))
        return render(request, "quote_builder.html", context, status_code=exc.http_status)
    return RedirectResponse(f"/quotes/{quote['id']}", status_code=303)


@router.get("/quotes/{quote_id}", response_class=HTMLResponse)
def quote_page(request: Request, account_id: SignedInAccountId, uow_factory: UowFactoryDep, quote_id: str = Path(max_length=100)) -> Response:
    """The stored quote, line by line, with a Book form carrying a fresh idempotency key."""
    quote = services.get_quote(uow_factory(), account_id=account_id, quote_id=quote_id)
    return render(request, "quote.html", {"quote": quote, "idempotency_key": new_form_key()})


@router.post("/quotes/{quote_id}/book")
def book(request: Request, account_id: SignedInAccountId, uow_factory: UowFactoryDep, clock: ClockDep, settings: SettingsDep,
         idempotency_key: Annotated[str, Form(max_length=255)], quote_id: str = Path(max_length=100)) -> Response:
    """Buy the quote once per form key; a resubmitted form lands on the same allocation."""
    key = validate_idempotency_key(idempotency_key)
    try:
        outcome = services.buy_quote(uow_factory(), account_id=account_id, quote_id=quote_id, idempotency_key=key, clock=clock,
                                     key_ttl_s=settings.idempotency_key_ttl_s)
    except AnchorError as exc:
        quote = services.get_quote(uow_factory(), account_id=account_id, quote_id=quote_id)
        return render(request, "quote.html", {"quote": quote, "idempotency_key": new_form_key(), "error": refusal_words(exc, page_text(request))},
                      status_code=exc.http_status)
    allocation_id = outcome.body["id"]
    text = page_text(request)
    if outcome.replayed:
        web_session(request).flash(text.gettext("This booking was already made; nothing was bought twice."))
    else:
        amount = environment(text.locale).filters["money"](outcome.body["amount_usd"])
        web_session(request).flash(text.gettext("Booked: allocation %(id)s, %(amount)s for the whole term.", id=allocation_id,
                                                amount=amount))
    return RedirectResponse(f"/my/allocations/{allocation_id}", status_code=303)


@router.get("/my/allocations", response_class=HTMLResponse)
def my_allocations(request: Request, account_id: SignedInAccountId, uow_factory: UowFactoryDep, clock: ClockDep) -> Response:
    """Every allocation of the signed-in account."""
    rows = services.list_allocations(uow_factory(), account_id=account_id, clock=clock)
    return render(request, "allocations.html", {"allocations": rows})


@router.get("/my/allocations/{allocation_id}", response_class=HTMLResponse)
def allocation_page(request: Request, account_id: SignedInAccountId, uow_factory: UowFactoryDep, clock: ClockDep,
                    settings: SettingsDep, allocation_id: str = Path(max_length=100),
                    kind: str | None = Query(default=None, max_length=20), model: str | None = Query(default=None, max_length=200),
                    task: str = Query(default="inference", max_length=20), context: str | None = Query(default=None, max_length=12),
                    concurrency: str | None = Query(default=None, max_length=8)) -> Response:
    """One allocation with its history, the forms for its actions (each with its own key) and, with ``kind`` and
    ``model``, the launch recipe for these servers (its refusal in one line when it cannot be written)."""
    from anchorgpu.web.launch import RECIPE_KINDS, launch_for_allocation

    allocation = services.get_allocation(uow_factory(), account_id=account_id, allocation_id=allocation_id, clock=clock)
    keys = {action: new_form_key() for action in ("stop", "start", "extend", "terminate")}
    form = {"kind": kind or "vllm", "model": model, "task": task, "context": context, "concurrency": concurrency}
    launch, launch_error = (launch_for_allocation(uow_factory, account_id, allocation_id, clock, settings, form, page_text(request))
                            if kind and model else (None, None))
    return render(request, "allocation.html", {"a": allocation, "keys": keys, "terms": TERM_CHOICES,
                                               "recipe_kinds": RECIPE_KINDS, "launch_form": form, "launch": launch,
                                               "launch_error": launch_error})


@router.get("/my/allocations/{allocation_id}/extend", response_class=HTMLResponse)
def extend_confirm_page(
    request: Request,
    account_id: SignedInAccountId,
    uow_factory: UowFactoryDep,
    clock: ClockDep,
    term: Annotated[str, Query(max_length=20)] = "1month",
    allocation_id: str = Path(max_length=100),
) -> Response:
    """The price of extending, and a form to pay exactly that (nothing is charged by this page)."""
    from anchorgpu.allocations.extension import quote_extension

    allocation = services.get_allocation(uow_factory(), account_id=account_id, allocation_id=allocation_id, clock=clock)
    context: dict[str, Any] = {"a": allocation, "terms": TERM_CHOICES, "term": term, "idempotency_key": new_form_key()}
    try:
        context["priced"] = quote_extension(uow_factory(), account_id=account_id, allocation_id=allocation_id, term=term,
                                            now=clock())
    except AnchorError as exc:
        context["error"] = refusal_words(exc, page_text(request))
        return render(request, "extend_confirm.html", context, status_code=exc.http_status)
    return render(request, "extend_confirm.html", context)


@router.post("/my/allocations/{allocation_id}/{action}")
def allocation_action(
    request: Request,
    account_id: SignedInAccountId,
    uow_factory: UowFactoryDep,
    clock: ClockDep,
    settings: SettingsDep,
    action: Literal["stop", "start", "extend", "terminate"],
    idempotency_key: Annotated[str, Form(max_length=255)],
    term: Annotated[str, Form(max_length=20)] = "",
    expected_total_usd: Annotated[str, Form(max_length=20)] = "",
    allocation_id: str = Path(max_length=100),
) -> Response:
    """Apply the action once per form key, then show the allocation with what changed (and what did not).
    An extension charges only the price the confirmation page showed (``expected_total_usd``)."""
    from urllib.parse import quote as url_quote

    from anchorgpu.allocations.extension import parse_expected_usd

    key = validate_idempotency_key(idempotency_key)
    confirm_url = f"/my/allocations/{allocation_id}/extend?term={url_quote(term)}"
    common: dict[str, Any] = {"account_id": account_id, "allocation_id": allocation_id, "idempotency_key": key, "clock": clock,
                              "key_ttl_s": settings.idempotency_key_ttl_s}
    session = web_session(request)
    text = page_text(request)
    try:
        if action == "extend":
            expected = parse_expected_usd(expected_total_usd)
            if expected is None:  # never charged blind: show the price first
                return RedirectResponse(confirm_url, status_code=303)
            outcome = services.extend(uow_factory(), term=term, expected_total_usd=expected, **common)
        else:
            outcome = {"stop": services.stop, "start": services.start, "terminate": services.terminate}[action](uow_factory(), **common)
    except AnchorError as exc:
        failed = {"stop": text.gettext("Could not stop: %(reason)s", reason=exc.message),
                  "start": text.gettext("Could not start: %(reason)s", reason=exc.message),
                  "extend": text.gettext("Could not extend: %(reason)s", reason=exc.message),
                  "terminate": text.gettext("Could not terminate: %(reason)s", reason=exc.message)}
        session.flash(failed[action])
        if action == "extend" and exc.code == "price_changed":
            return RedirectResponse(confirm_url, status_code=303)  # the new price, to confirm again
        return RedirectResponse(f"/my/allocations/{allocation_id}", status_code=303)
    body = outcome.body
    filters = environment(text.locale).filters
    ends, paid = filters["when"](body["ends_at"]), filters["money"](body["amount_usd"])
    messages = {
        "stop": text.gettext("Stopped. Stopping does not pause the paid term: this allocation still ends at %(ends)s and the amount "
                             "paid stays %(paid)s. Start it again any time before then.", ends=ends, paid=paid),
        "start": text.gettext("Started again; it runs until the end of its paid term, %(ends)s.", ends=ends),
        "extend": text.gettext("Extended: it now ends at %(ends)s; amount paid %(paid)s.", ends=ends, paid=paid),
        "terminate": text.gettext("Terminated for good; the amount paid is not refunded."),
    }
    session.flash(messages[action] + (" " + text.gettext("(This was a resubmitted form: applied once.)") if outcome.replayed else ""))
    return RedirectResponse(f"/my/allocations/{allocation_id}", status_code=303)
