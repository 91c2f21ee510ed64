"""``/v1/quotes``: price a fixed term of an offering and keep the quote (needs an API key)."""

from __future__ import annotations

from fastapi import APIRouter, Path

from anchorgpu.allocations import services
from anchorgpu.api.deps import AccountDep, ClockDep, SettingsDep, UowFactoryDep
from anchorgpu.api.schemas import QuoteCreate, QuoteOut, QuoteStored, problems
from anchorgpu.validation import ID_MAX_LENGTH, ID_PATTERN

router = APIRouter(prefix="/quotes", tags=["quotes"])


@router.post("", status_code=201, response_model=QuoteOut, summary="Create a quote", responses=problems(401, 404, 409, 422))
def create_quote(body: QuoteCreate, account: AccountDep, uow_factory: UowFactoryDep, clock: ClockDep, settings: SettingsDep) -> dict[str, object]:
    """Price `quantity` whole servers of an offering for a fixed term, itemized; buy it before `valid_until`."""
    return services.create_quote(
        uow_factory(), account_id=account.id, offering=body.offering, term=body.term, quantity=body.quantity,
        options=body.options, region=body.region, clock=clock, validity_s=settings.quote_validity_s,
    )


@router.get("/{quote_id}", response_model=QuoteStored, summary="Get a quote", responses=problems(401, 404))
def get_quote(account: AccountDep, uow_factory: UowFactoryDep, quote_id: str = Path(max_length=ID_MAX_LENGTH, pattern=ID_PATTERN, description="Quote id (ASCII letters, digits, '_', '-')")) -> dict[str, object]:
    """One of your quotes, with the prices as quoted (404 for an unknown id or another account's)."""
    return services.get_quote(uow_factory(), account_id=account.id, quote_id=quote_id)
