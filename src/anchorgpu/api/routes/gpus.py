"""``/v1/gpus``: the GPU hardware AnchorGPU knows (public)."""

from __future__ import annotations

from fastapi import APIRouter, Path

from anchorgpu.api.schemas import GpuList, GpuOut
from anchorgpu.hardware import get_gpu, list_gpus

router = APIRouter(prefix="/gpus", tags=["catalog"])


@router.get("", response_model=GpuList, summary="List GPUs")
def list_gpus_route() -> GpuList:
    """List every GPU with memory, bandwidth, peak throughput and interconnect."""
    gpus = [GpuOut.from_domain(g) for g in list_gpus()]
    return GpuList(data=gpus, count=len(gpus))


@router.get("/{name}", response_model=GpuOut, summary="Get one GPU", responses={404: {"description": "Unknown GPU (with suggestions)"}})
def get_gpu_route(name: str = Path(max_length=100, description="Canonical name or alias, case-insensitive (e.g. 'h100')")) -> GpuOut:
    """One GPU by canonical name or alias; 404 `unknown_gpu` with did-you-mean suggestions."""
    return GpuOut.from_domain(get_gpu(name))
