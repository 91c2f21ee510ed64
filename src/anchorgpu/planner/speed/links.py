"""Peaks, links and collectives: the datasheet figures a step is bound by, and what moving bytes costs. Pure.

The names live, by domain, in :mod:`~anchorgpu.planner.speed.peaks` (compute precision and dense peaks),
:mod:`~anchorgpu.planner.speed.topology` (the link a group crosses) and :mod:`~anchorgpu.planner.speed.collectives`
(what a collective or a transfer over it costs); they are re-exported here, where the speed model imports them.

Datasheet link bandwidths are bidirectional per GPU; a ring or a point-to-point transfer sends one
direction at a time, so half is used, at the stated ``link_efficiency`` (nccl-tests bus bandwidth is
typically 75-85% of the link rate). Each collective also pays a fixed latency by link kind.
"""

from __future__ import annotations

from anchorgpu.planner.speed.collectives import (
    all_gather_s,
    all_to_all_s,
    allreduce_s,
    expert_dispatch_s,
    p2p_s,
    reduce_scatter_s,
    ring_latency_s,
)
from anchorgpu.planner.speed.peaks import (
    ComputePrecision,
    PeakChoice,
    compute_precision_for_training,
    compute_precision_for_weights,
    hopper_or_newer,
    peak_for,
    power_capped,
    weights_precision_on,
)
from anchorgpu.planner.speed.topology import (
    ACTIVATION_BYTES,
    Link,
    data_parallel_link,
    group_link,
    host_kind,
    host_link_bytes_per_s,
    is_superchip,
    server_gpus,
    tp_link,
)

__all__ = [
    "ACTIVATION_BYTES",
    "ComputePrecision",
    "Link",
    "PeakChoice",
    "all_gather_s",
    "all_to_all_s",
    "expert_dispatch_s",
    "allreduce_s",
    "compute_precision_for_training",
    "compute_precision_for_weights",
    "data_parallel_link",
    "group_link",
    "hopper_or_newer",
    "host_link_bytes_per_s",
    "host_kind",
    "is_superchip",
    "p2p_s",
    "peak_for",
    "power_capped",
    "reduce_scatter_s",
    "ring_latency_s",
    "server_gpus",
    "tp_link",
    "weights_precision_on",
]
