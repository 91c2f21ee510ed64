"""``/v1/plan`` and ``/v1/recommend``: will it fit, where, how fast, at what cost (public).

The answers are the CLI's JSON with its advice (``suggestions[].change``, ``rejected[].reason``, assumptions …) in the
API's words: each CLI flag that is a field of the request named as the field (:func:`~anchorgpu.api.words.answer_words`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from anchorgpu.api.deps import ClockDep, SettingsDep
from anchorgpu.api.models_ref import server_offline
from anchorgpu.api.planning import run_plan, run_recommend
from anchorgpu.api.schemas import PlanOut, PlanRequest, RecommendOut, RecommendRequest, problems
from anchorgpu.api.words import answer_words, request_fields

router = APIRouter(tags=["planner"])


@router.post("/plan", response_model=PlanOut, summary="Plan a workload", responses=problems(404, 422))
def plan_route(body: PlanRequest, settings: SettingsDep, request: Request) -> dict[str, Any]:
    """Per-GPU memory by term, the fit verdict with headroom, capacity, assumptions, warnings and checks."""
    answer: dict[str, Any] = answer_words(run_plan(body, offline=server_offline(settings)), request_fields(request))
    return answer


@router.post("/recommend", response_model=RecommendOut, summary="Recommend offerings", responses=problems(404, 422))
def recommend_route(body: RecommendRequest, settings: SettingsDep, clock: ClockDep, request: Request) -> dict[str, Any]:
    """The cheapest catalog offerings that fit the workload for the term, with speed, cost and the layout to use."""
    answer: dict[str, Any] = answer_words(run_recommend(body, offline=server_offline(settings), now=clock()),
                                          request_fields(request))
    return answer
