"""Per-layout constants of the serving sweep's ticks (:mod:`anchorgpu.planner.sweep_serving`) looked up from the
hardware shapes: the links a group of GPUs crosses, each GPU's peaks, the rate of products in two precisions. Each
scalar lookup is made once per distinct key, then taken per layout. Pure."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.speed.links import Link, peak_for, tp_link
from anchorgpu.planner.sweep_grid import Layouts

if TYPE_CHECKING:
    from anchorgpu.planner.sweep_types import HardwareShape

__all__ = ["distinct_gpus", "links", "mixed_rates", "peaks"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def links(shapes: Sequence[HardwareShape], lay: Layouts, ranks: IntArray | None = None,
          network: bool = True, *, allreduce_latency: Callable[[GpuSpec, Link], float] | None = None,
          ) -> tuple[FloatArray, FloatArray]:
    """Per layout row: one-direction bandwidth and latency of the link a group of ``ranks`` adjacent GPUs
    crosses (default the TP group; one lookup per shape and group size); ``allreduce_latency``: the latency of an
    all-reduce over that link where the engine's own differs from the link's (speed.step_constants)."""
    group = lay.tp if ranks is None else ranks
    key = lay.shape * 65536 + group
    unique, inverse = np.unique(key, return_inverse=True)
    bw = np.empty(unique.size)
    lat = np.empty(unique.size)
    for i, k in enumerate(unique.tolist()):
        shape = shapes[k // 65536]
        link = tp_link(shape.gpu, k % 65536, gpus_per_server=shape.gpus_per_server,
                       network_bytes_per_s=shape.network_bytes_per_s if network else None)
        bw[i] = link.bytes_per_s
        lat[i] = link.latency_s if allreduce_latency is None else allreduce_latency(shape.gpu, link)
    return bw[inverse], lat[inverse]


def distinct_gpus(shapes: Sequence[HardwareShape], lay: Layouts) -> tuple[list[GpuSpec], IntArray]:
    """The shapes' GPUs, each once (by identity), and the one of each layout ``(L,)``."""
    first: dict[int, int] = {}
    gpus: list[GpuSpec] = []
    for sh in shapes:
        if first.setdefault(id(sh.gpu), len(gpus)) == len(gpus):
            gpus.append(sh.gpu)
    return gpus, np.array([first[id(sh.gpu)] for sh in shapes])[lay.shape]


def peaks(gpus: Sequence[GpuSpec], precisions: Sequence[Sequence[str]]) -> FloatArray:
    """Per (GPU, format): the compute peak of the format's precision on that GPU (``precisions[g][f]``); one lookup
    per GPU and precision."""
    out = []
    for gpu, row in zip(gpus, precisions, strict=True):
        by_precision = {p: peak_for(gpu, p).flops_per_s for p in sorted(set(row))}
        out.append([by_precision[p] for p in row])
    return np.array(out)


def mixed_rates(low: FloatArray, b16: FloatArray, share: FloatArray) -> FloatArray:
    """``speed.product_shares.mixed_rate`` over (layout, format) arrays: ``low`` where the share is 1."""
    with np.errstate(divide="ignore"):
        mixed = 1.0 / (share / low + (1.0 - share) / b16)
    return np.where(share >= 1.0, low, np.where(share <= 0.0, b16, mixed))
