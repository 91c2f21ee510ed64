"""``/v1/plan`` and ``/v1/recommend``: will it fit, where, how fast, at what cost (public)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from anchorgpu.api.deps import SettingsDep
from anchorgpu.api.planning import run_plan
from anchorgpu.api.schemas import PlanOut, PlanRequest, problems

router = APIRouter(tags=["planner"])


@router.post("/plan", response_model=PlanOut, summary="Plan a workload", responses=problems(404, 422))
def plan_route(body: PlanRequest, settings: SettingsDep) -> dict[str, Any]:
    """Per-GPU memory by term, the fit verdict with headroom, capacity, assumptions, warnings and checks."""
    return run_plan(body, offline=settings.offline)
