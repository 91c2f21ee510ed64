"""Catalog offerings as the planner's hardware shapes (:func:`shapes_from_catalog`), with the server-to-server
bandwidth each GPU gets from its offering's fabric.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from anchorgpu.catalog import Catalog, Offering
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.serving_setup import SERVER_GPUS
from anchorgpu.planner.speed.topology import server_gpus
from anchorgpu.planner.sweep_types import HardwareShape
from anchorgpu.units import bytes_per_s_to_gbit_per_s, gbit_per_s_to_bytes_per_s

__all__ = ["crosses_network", "multi_server_network_line", "network_bytes_per_s_per_gpu", "network_gbit_per_s_per_gpu",
           "public_network_only", "shapes_from_catalog"]

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
        return gbit_per_s_to_bytes_per_s(links * gbps) / offering.gpus
    return gbit_per_s_to_bytes_per_s(offering.network_gbps) / offering.gpus


def shapes_from_catalog(offerings: Sequence[Offering], *, max_servers: int = 4) -> tuple[HardwareShape, ...]:
    """One hardware shape per offering, 1..``max_servers`` whole servers; pipeline stages may span servers
    only where a fabric joins them (``fabric != "none"``), else extra servers are data-parallel replicas."""
    return tuple(
        HardwareShape(id=o.id, gpu=get_gpu(o.gpu), gpus_per_server=o.gpus, max_servers=max_servers,
                      network_bytes_per_s=network_bytes_per_s_per_gpu(o), scale_out=not public_network_only(o))
        for o in offerings
    )


def network_gbit_per_s_per_gpu(offering: Offering) -> float:
    """:func:`network_bytes_per_s_per_gpu` in Gb/s, as ``plan --network-gbit-per-gpu`` takes it (the same bytes a
    second once converted back: ``tests/recommend/test_row_network.py`` checks every offering).

    >>> from anchorgpu.catalog import load_catalog
    >>> network_gbit_per_s_per_gpu(load_catalog().offering("rtx-pro-6000-8x-bm"))  # 100 Gb/s uplink / 8 GPUs
    12.5
    """
    return bytes_per_s_to_gbit_per_s(network_bytes_per_s_per_gpu(offering))


def crosses_network(offering: Offering, servers: int) -> bool:
    """Whether ``servers`` of ``offering`` put a training row's GPUs on both sides of a network: more than one server
    and more GPUs than one scale-up domain holds (a GB200 row of a few 4-GPU trays stays inside its NVL72 domain).

    >>> from anchorgpu.catalog import load_catalog
    >>> catalog = load_catalog()
    >>> crosses_network(catalog.offering("rtx-4090-1x-vm"), 3), crosses_network(catalog.offering("gb200-4x-bm"), 2)
    (True, False)
    """
    return servers > 1 and servers * offering.gpus > server_gpus(get_gpu(offering.gpu), offering.gpus)


def public_network_only(offering: Offering) -> bool:
    """Whether the offering's servers have no server-to-server fabric (``fabric == "none"``): several of them are
    joined only by each server's public uplink (``network_gbps``), a 10-25 Gb/s link on a 1-GPU VM."""
    return offering.fabric.strip() == "none"


def multi_server_network_line(rows: Iterable[tuple[str, int]], catalog: Catalog) -> str | None:
    """For a training answer: the network each offering shown on more than one server (``rows``: offering id and
    servers) was timed over, a GPU's share, and the ``plan`` option that times a layout the same way; None when no
    row's GPUs cross a network (a GB200 row of a few 4-GPU servers stays within its NVL72 domain).

    ``plan`` takes a server to hold 8 GPUs (``SERVER_GPUS``): an offering whose servers hold fewer (a 1-GPU VM)
    has its rows on several servers timed across the network by recommend, and as servers of 8 by plan, so
    the line names those apart instead of claiming the flag reproduces them."""
    crossing = {offering_id for offering_id, servers in rows if crosses_network(catalog.offering(offering_id), servers)}
    if not crossing:
        return None
    alike: list[tuple[str, str]] = []  # (offering, its network in words), plan times them alike ...
    apart: list[tuple[str, str]] = []  # ... or not (servers of fewer GPUs than plan's)
    for offering_id in sorted(crossing):
        o = catalog.offering(offering_id)
        how = (o.fabric if _FABRIC_RE.search(o.fabric) else f"no fabric: its {o.network_gbps:g} Gb/s uplink"
               + (f" shared by {o.gpus} GPUs" if o.gpus > 1 else ""))
        gpu = get_gpu(o.gpu)
        (alike if server_gpus(gpu, o.gpus) == server_gpus(gpu, SERVER_GPUS) else apart).append(
            (offering_id, f"{offering_id} {network_gbit_per_s_per_gpu(o):g} Gb/s ({how})"))
    line = ("Rows on more than one server are timed over their offering's network between servers, each GPU's share "
            "one way: " + "; ".join(words for _, words in alike + apart) + ".")
    if alike:
        line += (" `anchorgpu plan` times the row's layout alike with `--network-gbit-per-gpu` at that figure (without "
                 f"it, at the calibration's 400 Gb/s){' for ' + ', '.join(i for i, _ in alike) if apart else ''}.")
    if apart:
        names = ", ".join(i for i, _ in apart)
        line += (f" `anchorgpu plan` takes a server to hold {SERVER_GPUS} GPUs, so it times the GPUs of {names} rows "
                 f"as servers of {SERVER_GPUS}, linked within each, and no plan option gives those rows' speed.")
    return line
