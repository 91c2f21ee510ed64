"""Catalog offerings as the planner's hardware shapes (:func:`shapes_from_catalog`), with the server-to-server
bandwidth each GPU gets from its offering's fabric.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from anchorgpu.catalog import Offering
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.sweep import HardwareShape

__all__ = ["network_bytes_per_s_per_gpu", "shapes_from_catalog"]

_FABRIC_RE = re.compile(r"(\d+)\s*x\s*(\d+)\s*Gb/s", re.IGNORECASE)


def network_bytes_per_s_per_gpu(offering: Offering) -> float:
    """Server-to-server bandwidth per GPU, one direction, from the offering's fabric (``8x400 Gb/s ...``),
    else its public uplink shared by its GPUs.

    >>> from anchorgpu.catalog import load_catalog
    >>> network_bytes_per_s_per_gpu(load_catalog().offering("h100-sxm-8x-bm")) / 1e9  # 8 x 400 Gb/s / 8 GPUs
    50.0
    """
    match = _FABRIC_RE.search(offering.fabric)
    if match:
        links, gbps = int(match.group(1)), int(match.group(2))
        return links * gbps * 1e9 / 8 / offering.gpus
    return offering.network_gbps * 1e9 / 8 / offering.gpus


def shapes_from_catalog(offerings: Sequence[Offering], *, max_servers: int = 4) -> tuple[HardwareShape, ...]:
    """One hardware shape per offering, 1..``max_servers`` whole servers; pipeline stages may span servers
    only where a fabric joins them (``fabric != "none"``), else extra servers are data-parallel replicas."""
    return tuple(
        HardwareShape(id=o.id, gpu=get_gpu(o.gpu), gpus_per_server=o.gpus, max_servers=max_servers,
                      network_bytes_per_s=network_bytes_per_s_per_gpu(o), scale_out=o.fabric.strip() != "none")
        for o in offerings
    )
