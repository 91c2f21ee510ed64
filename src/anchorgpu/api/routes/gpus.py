"""``/v1/gpus``: the GPU hardware AnchorGPU knows (public)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import Field

from anchorgpu.api.schemas import GpuList, GpuOut
from anchorgpu.api.schemas_base import _Schema
from anchorgpu.hardware import get_gpu, list_gpus

router = APIRouter(prefix="/gpus", tags=["catalog"])


@router.get("", response_model=GpuList, summary="List GPUs")
def list_gpus_route() -> GpuList:
    """List every GPU with memory, bandwidth, peak throughput and interconnect."""
    gpus = [GpuOut.from_domain(g) for g in list_gpus()]
    return GpuList(data=gpus, count=len(gpus))


class SpeedFigureOut(_Schema):
    value: float | None = Field(description="Predicted figure on this GPU; null when the workload does not fit (see note)")
    low: float | None = Field(description="Low end of the likely range (calibration residuals of the GPU's stack)")
    high: float | None = Field(description="High end of the likely range")
    ceiling: float | None = Field(default=None, description="Roofline ceiling of the same layout (the datasheet's peaks with no efficiency): a bound the prediction stays under, never the prediction itself")
    layout: str = Field(description="Layout the prediction assumed (chosen for the user for training)")
    note: str = Field(description="Why there is no figure, when value is null")
    evidence: str = Field(default="", description="How this GPU's own measured runs of this kind fell around the model, or that it has none")


class PredictedSpeedOut(_Schema):
    metric: str = Field(description="Stable key, e.g. 'serve_8b_output_tokens_per_s'")
    label: str = Field(description="For people")
    workload: str = Field(description="The reference workload, in full")
    unit: str = Field(description="Unit of a and b")
    a: SpeedFigureOut = Field(description="The figure on GPU a")
    b: SpeedFigureOut = Field(description="The figure on GPU b")
    ratio: float | None = Field(description="a / b of the predictions")
    ratio_low: float | None = Field(description="Low end of the ratio's likely range (bands combined in quadrature)")
    ratio_high: float | None = Field(description="High end of the ratio's likely range")
    datasheet_metric: str = Field(description="The datasheet metric a roofline would scale with")
    datasheet_ratio: float | None = Field(description="a / b of that datasheet metric")
    note: str = Field(description="Remarks")


class TrainingStacksOut(_Schema):
    a: str = Field(description="On GPU a, the framework that trains in FP8 and in FP4 (or 'none' and why), with its sources' keys, e.g. 'FP8: Transformer Engine; FP4: none (no FP4 tensor cores) (S32)'")
    b: str = Field(description="The same on GPU b")


class GpuComparisonOut(_Schema):
    """Two GPUs side by side, as ``anchorgpu gpus compare A B --json`` (less the optional model plan)."""

    a: GpuOut = Field(description="The first GPU, as /v1/gpus/{name} answers")
    b: GpuOut = Field(description="The second GPU")
    ratio_is: str = Field(description="Always 'a / b'")
    ratios: dict[str, float | None] = Field(description="Datasheet ratio a / b by metric key")
    metrics: list[dict[str, Any]] = Field(description="Datasheet rows: both values, statuses, ratio, note")
    statements: list[str] = Field(description="What the differences mean, in plain language")
    training: TrainingStacksOut = Field(description="The 'FP8 / FP4 training' row, worded as 'anchorgpu gpus show' and the GPU list word it (a.training_stacks and b.training_stacks hold the frameworks themselves)")
    predicted: list[PredictedSpeedOut] = Field(description="The calibrated speed model on reference workloads, a / b with bands")
    price_notes: dict[str, str] | None = Field(default=None, description="The CLI's notes on where each GPU's price comes from ({a, b}); null here")
    workload: dict[str, Any] | None = Field(default=None, description="The CLI's model workload compared on both GPUs (gpus compare A B --model); null here: the API compares without one")
    fits: list[dict[str, Any]] | None = Field(default=None, description="Whether that workload fits each GPU (with --model on the CLI); null here")


@router.get("/compare", response_model=GpuComparisonOut, summary="Compare two GPUs",
            responses={404: {"description": "Unknown GPU (with suggestions)"},
                       422: {"description": "Both names are one GPU (the same name or two of its aliases)"}})
def compare_gpus_route(
    a: Annotated[str, Query(max_length=100, description="First GPU (name or alias)")],
    b: Annotated[str, Query(max_length=100, description="Second GPU (name or alias)")],
) -> GpuComparisonOut:
    """Datasheet ratios and the calibrated model's predicted tokens/s on reference workloads; every ratio is a / b."""
    from anchorgpu.catalog import gpu_hour_price
    from anchorgpu.hardware import compare_gpus, compared_pair, comparison_to_json
    from anchorgpu.planner.speed.reference import predicted_speeds

    first, second = compared_pair(a, b)  # 422 for one GPU named twice
    comparison = compare_gpus(first, second, price_a_usd_per_gpu_hour=gpu_hour_price(first.name),
                              price_b_usd_per_gpu_hour=gpu_hour_price(second.name),
                              predicted=predicted_speeds(first, second))
    return GpuComparisonOut.model_validate(comparison_to_json(comparison))


@router.get("/{name}", response_model=GpuOut, summary="Get one GPU", responses={404: {"description": "Unknown GPU (with suggestions)"}})
def get_gpu_route(name: str = Path(max_length=100, description="Canonical name or alias, case-insensitive (e.g. 'h100')")) -> GpuOut:
    """One GPU by canonical name or alias; 404 `unknown_gpu` with did-you-mean suggestions."""
    return GpuOut.from_domain(get_gpu(name))
