"""``/v1/allocations``: buy a quote exactly once, then stop, start, extend or terminate (needs an API key).

Every POST here needs an ``Idempotency-Key`` header. The idempotency logic lives in the service layer
(:mod:`anchorgpu.allocations.idempotency`); this module maps the header to the service's key and the
service's ``replayed`` flag to the ``Idempotent-Replayed: true`` header, with the first status and body.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse

from anchorgpu.allocations import services
from anchorgpu.allocations.idempotency import Outcome
from anchorgpu.api.deps import AccountDep, ClockDep, IdempotencyKeyDep, SettingsDep, UowFactoryDep
from anchorgpu.api.schemas import (
    AllocationCreate,
    AllocationExtend,
    AllocationList,
    AllocationOut,
    ExtensionQuote,
    problems,
)
from anchorgpu.config import Settings
from anchorgpu.validation import ID_MAX_LENGTH, ID_PATTERN

router = APIRouter(prefix="/allocations", tags=["allocations"])

AllocationId = Path(max_length=ID_MAX_LENGTH, pattern=ID_PATTERN, description="Allocation id (ASCII letters, digits, '_', '-')")
_ACTION_PROBLEMS = problems(400, 401, 404, 409, 422)


def outcome_response(outcome: Outcome) -> JSONResponse:
    """The service's answer on the wire: its status and body, flagged when it is a replay."""
    headers = {"Idempotent-Replayed": "true"} if outcome.replayed else None
    return JSONResponse(outcome.body, status_code=outcome.status, headers=headers)


@router.post("", status_code=201, response_model=AllocationOut, summary="Buy a quote", responses=_ACTION_PROBLEMS)
def buy(body: AllocationCreate, account: AccountDep, key: IdempotencyKeyDep, uow_factory: UowFactoryDep, clock: ClockDep,
        settings: SettingsDep) -> JSONResponse:
    """Book the capacity of one of your quotes, once per idempotency key (a retry replays the first answer)."""
    return outcome_response(services.buy_quote(uow_factory(), account_id=account.id, quote_id=body.quote_id, idempotency_key=key,
                                               clock=clock, key_ttl_s=settings.idempotency_key_ttl_s))


@router.get("", response_model=AllocationList, summary="List your allocations", responses=problems(401))
def list_allocations(account: AccountDep, uow_factory: UowFactoryDep, clock: ClockDep) -> AllocationList:
    """Your allocations, oldest first, with their state now."""
    rows = services.list_allocations(uow_factory(), account_id=account.id, clock=clock)
    return AllocationList.model_validate({"data": rows, "count": len(rows)})


@router.get("/{allocation_id}", response_model=AllocationOut, summary="Get an allocation", responses=problems(401, 404))
def get_allocation(account: AccountDep, uow_factory: UowFactoryDep, clock: ClockDep, allocation_id: str = AllocationId) -> dict[str, object]:
    """One of your allocations (404 for an unknown id or another account's)."""
    return services.get_allocation(uow_factory(), account_id=account.id, allocation_id=allocation_id, clock=clock)


def _act(action: Literal["stop", "start", "terminate"], account: Any, key: str, uow_factory: Callable[[], Any],
         clock: Callable[[], datetime], settings: Settings, allocation_id: str) -> JSONResponse:
    service = {"stop": services.stop, "start": services.start, "terminate": services.terminate}[action]
    return outcome_response(service(uow_factory(), account_id=account.id, allocation_id=allocation_id, idempotency_key=key,
                                    clock=clock, key_ttl_s=settings.idempotency_key_ttl_s))


@router.post("/{allocation_id}/stop", response_model=AllocationOut, summary="Stop an allocation", responses=_ACTION_PROBLEMS)
def stop(account: AccountDep, key: IdempotencyKeyDep, uow_factory: UowFactoryDep, clock: ClockDep, settings: SettingsDep,
         allocation_id: str = AllocationId) -> JSONResponse:
    """Stop it. **Stopping does not pause the paid term**: `ends_at` and `amount_usd` stay as they are (see `notice`)."""
    return _act("stop", account, key, uow_factory, clock, settings, allocation_id)


@router.post("/{allocation_id}/start", response_model=AllocationOut, summary="Start a stopped allocation", responses=_ACTION_PROBLEMS)
def start(account: AccountDep, key: IdempotencyKeyDep, uow_factory: UowFactoryDep, clock: ClockDep, settings: SettingsDep,
          allocation_id: str = AllocationId) -> JSONResponse:
    """Start it again; possible until its paid term ends."""
    return _act("start", account, key, uow_factory, clock, settings, allocation_id)


@router.post("/{allocation_id}/terminate", response_model=AllocationOut, summary="Terminate an allocation", responses=_ACTION_PROBLEMS)
def terminate(account: AccountDep, key: IdempotencyKeyDep, uow_factory: UowFactoryDep, clock: ClockDep, settings: SettingsDep,
              allocation_id: str = AllocationId) -> JSONResponse:
    """End it now, for good; the amount paid is not refunded."""
    return _act("terminate", account, key, uow_factory, clock, settings, allocation_id)


@router.post("/{allocation_id}/extend", response_model=AllocationOut | ExtensionQuote, summary="Extend an allocation",
             responses=_ACTION_PROBLEMS)
def extend(body: AllocationExtend, account: AccountDep, key: IdempotencyKeyDep, uow_factory: UowFactoryDep, clock: ClockDep,
           settings: SettingsDep, allocation_id: str = AllocationId) -> JSONResponse:
    """Add a paid period after `ends_at`, priced by a new quote at today's list prices; capacity is checked.

    **Ask the price first**: `"dry_run": true` answers an `ExtensionQuote` (total, new end, capacity) and charges
    nothing. Send its `total_usd` back as `expected_total_usd` to extend only at that price (409 `price_changed` otherwise)."""
    if body.dry_run:
        from anchorgpu.allocations.extension import quote_extension

        return JSONResponse(quote_extension(uow_factory(), account_id=account.id, allocation_id=allocation_id, term=body.term,
                                            now=clock()))
    return outcome_response(services.extend(uow_factory(), account_id=account.id, allocation_id=allocation_id, term=body.term,
                                            idempotency_key=key, clock=clock, key_ttl_s=settings.idempotency_key_ttl_s,
                                            expected_total_usd=body.expected_total_usd))


RecipeKind = Literal["vllm", "sglang", "trtllm", "torchrun-fsdp", "deepspeed", "accelerate", "skypilot", "k8s"]


@router.get("/{allocation_id}/recipe", summary="Launch recipe for an allocation", responses=problems(401, 404, 422))
def allocation_recipe(
    account: AccountDep, uow_factory: UowFactoryDep, clock: ClockDep, settings: SettingsDep,
    allocation_id: str = AllocationId,
    kind: RecipeKind = Query(description="The launch to write"),
    model: str = Query(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$",
                       description="Registry name or Hub id of the model to run"),
    task: Literal["inference", "train", "lora", "qlora"] = Query(
        default="inference", description="What to launch: serving (inference), full training, LoRA or QLoRA"),
    context: int | None = Query(default=None, ge=1, le=10_000_000,
                                description="Tokens per sequence (inference) or the training sequence"),
    concurrency: int | None = Query(default=None, ge=1, le=1_000_000, description="Sequences at once (inference)"),
) -> dict[str, Any]:
    """The model planned on this allocation's servers and GPUs, and the command and files that launch it
    (the same as `anchorgpu allocations recipe ID --kind K --model M`). 422 when the launch cannot express the plan."""
    from anchorgpu.allocations.recipe import allocation_recipe as build
    from anchorgpu.api.models_ref import load_public_model, server_offline
    from anchorgpu.planner import Workload

    workload = (Workload(task="inference", context_tokens=context, concurrency=concurrency) if task == "inference"
                else Workload(task=task, seq_tokens=context))
    return build(uow_factory(), account_id=account.id, allocation_id=allocation_id, clock=clock, kind=kind,
                 model=load_public_model(model, offline=server_offline(settings)), workload=workload)
