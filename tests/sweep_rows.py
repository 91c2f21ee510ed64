"""Plan one row of a sweep with the row's own layout, precision and concurrency: what the sweep-agrees-with-plan
tests compare each row against."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan


def plan_of_row(model: Any, workload: Workload, result: Any, row: dict[str, Any]) -> tuple[Any, Any]:
    """The plan of ``row`` (``workload`` at the row's concurrency, its weights, KV cache and TP/PP/DP/EP on its GPU,
    nothing chosen or suggested) and the row's offering shape. EP is the row's: a MoE row with EP over its replicas is
    attention data parallelism, which its EP-1 twin is not (stop 60: the Grace host-bound check compared an EP 4 row
    with its EP 1 twin's step once a refit put that twin on the host bound)."""
    shape = next(s for s in result.shapes if s.id == row["shape"])
    p = plan(model, replace(workload, concurrency=row["concurrency"]),
             precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
             layout=Layout(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], dp=row["dp"], ep=row.get("ep", 1)),
             gpu=shape.gpu,
             suggest=False, choose_layout=False)
    return p, shape
