"""``/v1/plan`` and ``/v1/recommend``: will it fit, where, how fast, at what cost (public)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from anchorgpu.api.deps import ClockDep, SettingsDep
from anchorgpu.api.models_ref import server_offline
from anchorgpu.api.planning import run_plan, run_recommend
from anchorgpu.api.schemas import PlanOut, PlanRequest, RecommendOut, RecommendRequest, problems

router = APIRouter(tags=["planner"])


@router.post("/plan", response_model=PlanOut, summary="Plan a workload", responses=problems(404, 422))
def plan_route(body: PlanRequest, settings: SettingsDep) -> dict[str, Any]:
    """Per-GPU memory by term, the fit verdict with headroom, capacity, assumptions, warnings and checks."""
    return run_plan(body, offline=server_offline(settings))


@router.post("/recommend", response_model=RecommendOut, summary="Recommend offerings", responses=problems(404, 422))
def recommend_route(body: RecommendRequest, settings: SettingsDep, clock: ClockDep) -> dict[str, Any]:
    """The cheapest catalog offerings that fit the workload for the term, with speed, cost and the layout to use."""
    return run_recommend(body, offline=server_offline(settings), now=clock())
