"""The planner page's two side views (issue 14, item 1), each a handful of ~millisecond plans:

- :func:`formats_side_by_side`: the chosen model and GPU in every weights format (memory per GPU, fits,
  max concurrency, speed per user only where it fits);
- :func:`gpus_that_fit`: with no GPU chosen, the fewest GPUs of each kind (1, 2, 4, 8, 16) the workload fits on.

Both plan as the page and the API (``planned``, the page's launch counted); a format or GPU the planner refuses is listed with
its one-line reason, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from pydantic import ValidationError

from anchorgpu.api.planning import planned
from anchorgpu.api.schemas import PlanRequest
from anchorgpu.errors import AnchorError
from anchorgpu.web.refusals import planner_refusal

__all__ = ["FitRow", "FormatRow", "formats_side_by_side", "gpus_that_fit", "most_gpus_tried"]

_LAYOUT_FIELDS = ("gpus", "tp", "pp", "dp", "ep")
SWEEP_BUDGET_S = 1.5
"""Wall-clock budget of the no-GPU sweep per page (the page answers as you type; see :func:`gpus_that_fit`)."""  # the page picks the layout for each GPU it tries


@dataclass(frozen=True, slots=True, kw_only=True)
class FormatRow:
    weights: str
    current: bool
    total_bytes: int | None = None
    gpus: int | None = None  # the plan's own count: without one given, each format gets the fewest that hold it
    fits: bool | None = None
    max_concurrency: int | None = None
    tokens_per_s_per_user: float | None = None  # only for a plan that fits (training: the job's tokens/s)
    speed_low: float | None = None  # its band (where measured runs fell) and roofline ceiling, as the plan gives them
    speed_high: float | None = None
    speed_ceiling: float | None = None
    refused: str | None = None
    link: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class FitRow:
    gpu: str
    display_name: str
    memory_bytes: int
    gpus: int | None  # the fewest that fit (the planner's own count), or None when none does
    total_bytes: int | None = None
    headroom_bytes: int | None = None
    link: str = ""
    checked: bool = True  # False: the sweep's time budget ran out before this GPU


def _plan(values: Mapping[str, Any], offline: bool) -> dict[str, Any]:
    """The plan JSON for ``values``, planned for their ``recipe`` (the page's launch) when they name one; the launch
    itself is not written (the page writes it, or its refusal, once beside its own plan)."""
    return planned(PlanRequest.model_validate(dict(values), strict=False), offline=offline)[1]


def _link(values: Mapping[str, Any], **changes: Any) -> str:
    merged = {**values, **changes}
    flat = [(k, ",".join(map(str, v)) if isinstance(v, list) else ("on" if v is True else str(v)))
            for k, v in merged.items() if v is not None and v is not False]
    return "/plan?" + urlencode(flat)


def _speed(result: Mapping[str, Any]) -> tuple[float | None, ...]:
    """The row's speed (per user serving, the job's tokens/s training), its band's low and high and its roofline
    ceiling; all None without one."""
    perf = result.get("performance") or {}
    for key in ("decode_tokens_per_s_per_user", "train_tokens_per_s"):
        if perf.get(key) is not None:
            return tuple(perf.get(f"{key}{end}") for end in ("", "_low", "_high", "_ceiling"))
    return (None, None, None, None)


def formats_side_by_side(values: Mapping[str, Any], current: str, *, offline: bool,
                         text: Any = None) -> list[FormatRow]:
    """Every weights format for the form's model, GPU and workload; ``current`` is the plan's own format."""
    from anchorgpu.planner import WEIGHT_FORMATS

    rows: list[FormatRow] = []
    for name in WEIGHT_FORMATS:
        link = _link(values, weights=name)
        try:
            result = _plan({**values, "weights": name}, offline)
        except (AnchorError, ValidationError, ValueError) as exc:
            reason = planner_refusal(exc, text) if isinstance(exc, AnchorError) else str(exc).splitlines()[0]
            rows.append(FormatRow(weights=name, current=name == current, refused=reason, link=link))
            continue
        fits = result.get("fits")
        speed, low, high, ceiling = _speed(result) if fits else (None, None, None, None)
        rows.append(FormatRow(
            weights=name, current=name == current, total_bytes=int(result["per_gpu"]["total_bytes"]),
            gpus=int(result["layout"]["gpus"]), fits=fits,
            max_concurrency=result.get("max_concurrency") if fits else None,
            tokens_per_s_per_user=speed, speed_low=low, speed_high=high, speed_ceiling=ceiling, link=link,
        ))
    return rows


def most_gpus_tried(task: str) -> int:
    """The most GPUs the planner tries for ``task`` without a GPU count: a :func:`gpus_that_fit` row with no count
    does not fit on that many or fewer.

    >>> most_gpus_tried("inference"), most_gpus_tried("train")
    (1024, 1024)
    """
    from anchorgpu.planner.speed.serving_layouts import SERVING_GPU_COUNTS
    from anchorgpu.planner.training_gpu_counts import TRAINING_GPU_COUNTS

    return (SERVING_GPU_COUNTS if task == "inference" else TRAINING_GPU_COUNTS)[-1]


def gpus_that_fit(values: Mapping[str, Any], *, offline: bool, budget_s: float = SWEEP_BUDGET_S) -> list[FitRow]:
    """For each GPU the planner knows, the fewest it fits the form's workload on: the planner's own answer without a
    GPU count (serving: the fewest that hold the sequences; training: the fewest that hold the job, up to 1,024;
    the layout chosen on them), fewest GPUs first; GPUs it fits on with no count come last.

    The sweep (one plan per GPU; a large training plan takes up to a few hundred ms) stops after ``budget_s``:
    GPUs not reached are listed as not checked, never as not fitting. Larger GPUs are tried first.
    """
    import time

    from anchorgpu.hardware import list_gpus

    base = {k: v for k, v in values.items() if k not in _LAYOUT_FIELDS and k != "gpu"}
    deadline = time.monotonic() + budget_s
    rows: list[FitRow] = []
    for gpu in sorted(list_gpus(), key=lambda g: (-g.memory_bytes, g.name)):
        name, display, memory = gpu.name, gpu.display_name, int(gpu.memory_bytes)
        if rows and time.monotonic() > deadline:
            rows.append(FitRow(gpu=name, display_name=display, memory_bytes=memory, gpus=None, checked=False))
            continue
        found: FitRow | None = None
        try:  # the planner's own answer without a GPU count: the fewest GPUs that hold the workload
            result = _plan({**base, "gpu": gpu.name}, offline)
        except (AnchorError, ValidationError, ValueError):
            result = {}
        if result.get("fits") is True:
            gpus = int(result["layout"]["gpus"])
            found = FitRow(gpu=name, display_name=display, memory_bytes=memory, gpus=gpus, total_bytes=int(result["per_gpu"]["total_bytes"]),
                           headroom_bytes=int(result["headroom_bytes"]), link=_link(base, gpu=gpu.name, gpus=gpus))
        rows.append(found or FitRow(gpu=name, display_name=display, memory_bytes=memory, gpus=None))
    return sorted(rows, key=lambda r: (r.gpus is None, not r.checked, r.gpus or 0, r.memory_bytes))
