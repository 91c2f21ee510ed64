"""Collectives: what moving bytes over a :class:`~anchorgpu.planner.speed.topology.Link` costs, ring all-reduce,
reduce-scatter and all-gather, all-to-all, the two-hop expert dispatch, point-to-point, and a ring's latency. Pure.

Each transfer runs at the link's one-direction bandwidth times ``link_efficiency`` (nccl-tests bus bandwidth is
typically 75-85% of the link rate) and pays the link's fixed latency.
"""

from __future__ import annotations

from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.topology import Link, group_link

__all__ = [
    "all_gather_s",
    "all_to_all_s",
    "allreduce_s",
    "expert_dispatch_s",
    "p2p_s",
    "reduce_scatter_s",
    "ring_latency_s",
]


def ring_latency_s(ranks: int, servers: int, inside: str) -> float:
    """The latency a ring reduce-scatter or all-gather of ``ranks`` ranks over ``servers`` servers pays before any
    byte's bandwidth time, as NCCL's own tuning model counts it (``calibration.ring_step_latency_s``: a base, then
    ``ranks - 1`` steps, ``servers - 1`` of them across the network and the rest inside a server over ``inside``, the
    server's link kind); an all-reduce ring takes twice the steps. A few ranks pay tens of microseconds; FSDP over
    thousands of GPUs pays milliseconds a collective.

    >>> round(ring_latency_s(8, 1, "scale-up") * 1e6, 1), round(ring_latency_s(2048, 256, "scale-up") * 1e3, 2)
    (32.2, 9.67)
    >>> ring_latency_s(1, 1, "scale-up")
    0.0
    """
    if ranks <= 1:
        return 0.0
    lat = calibration().ring_step_latency_s
    across = max(1, min(servers, ranks)) - 1
    return lat["base"] + (ranks - 1 - across) * lat.get(inside, lat["scale-up"]) + across * lat["network"]


def _eff(efficiency: float | None) -> float:
    return calibration().link_efficiency if efficiency is None else efficiency


def allreduce_s(message_bytes: float, ranks: int, link: Link, *, efficiency: float | None = None) -> float:
    """Ring all-reduce: ``latency + 2*(n-1)/n * bytes / (bandwidth * efficiency)``.

    Source: the ring algorithm moves ``2*(n-1)/n`` of the message through each GPU's link (Patarasuk &
    Yuan 2009; NCCL's "bus bandwidth" definition).

    >>> round(allreduce_s(1e9, 2, Link(kind="pcie", bytes_per_s=1e9, latency_s=0.0, description=""), efficiency=0.8), 3)
    1.25
    >>> allreduce_s(1e9, 1, Link(kind="none", bytes_per_s=1.0, latency_s=1.0, description=""))
    0.0
    """
    if ranks <= 1 or message_bytes <= 0:
        return 0.0
    return link.latency_s + 2.0 * (ranks - 1) / ranks * message_bytes / (link.bytes_per_s * _eff(efficiency))


def reduce_scatter_s(message_bytes: float, ranks: int, link: Link, *, efficiency: float | None = None) -> float:
    """Ring reduce-scatter (and, equally, all-gather) of a ``message_bytes`` tensor: half an all-reduce.

    >>> l = Link(kind="pcie", bytes_per_s=1e9, latency_s=0.0, description="")
    >>> reduce_scatter_s(1e9, 4, l, efficiency=1.0) * 2 == allreduce_s(1e9, 4, l, efficiency=1.0)
    True
    """
    if ranks <= 1 or message_bytes <= 0:
        return 0.0
    return link.latency_s + (ranks - 1) / ranks * message_bytes / (link.bytes_per_s * _eff(efficiency))


all_gather_s = reduce_scatter_s


def all_to_all_s(bytes_per_rank: float, ranks: int, link: Link, *, efficiency: float | None = None) -> float:
    """All-to-all where each rank holds ``bytes_per_rank`` and keeps ``1/n`` of it: ``(n-1)/n`` crosses the link."""
    return reduce_scatter_s(bytes_per_rank, ranks, link, efficiency=efficiency)


def expert_dispatch_s(token_bytes: float, tokens: float, copies: int, ep: int, gpu: GpuSpec, *,
                      gpus_per_server: int | None, network_bytes_per_s: float | None,
                      efficiency: float | None = None, scaleup_efficiency: float | None = None,
                      rows_per_token: float | None = None, overlapped_hops: bool = False) -> float:
    """One dispatch (or combine) of ``tokens`` tokens of ``token_bytes`` each, ``copies`` routed copies a token, to
    the experts of an EP group of ``ep`` consecutive GPUs. Inside one scale-up domain a plain all-to-all. Across
    servers a two-hop dispatch, as DeepSeek-V3's training does it and DeepEP's kernels implement (DeepSeek-V3
    technical report, arXiv:2412.19437, section 3.2.2): a token crosses the network once to each other server that
    holds any of its experts, ``(N-1) (1 - (1 - 1/N)^copies)`` servers of the group's ``N`` for uniform routing,
    then is forwarded over the scale-up link to the GPUs there. ``overlapped_hops``: the two hops run at once, each
    token forwarded over the scale-up link as it arrives ("communications via IB and NVLink are fully overlapped",
    the same section; DeepEP's internode kernel runs its RDMA senders, forwarders and NVLink receivers as concurrent
    warp roles, ``csrc/kernels/internode.cu``), so the dispatch takes the slower hop; else (a dispatcher not known
    to pipeline them) their sum. ``scaleup_efficiency``:
    the all-to-all's share of a scale-up link where measured (``stated.alltoall_link_efficiency``; None:
    ``efficiency``). ``rows_per_token``: the rows a token sends over the scale-up link (None: ``copies``, one per
    routed expert, as Megatron-Core's all-to-all dispatcher permutes them before its all-to-all; DeepEP sends one
    row to each rank that holds any of the token's experts, :func:`~anchorgpu.planner.speed.experts.ranks_reached`).

    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> inside = expert_dispatch_s(8192.0, 2048, 8, 8, toy_gpu(), gpus_per_server=8, network_bytes_per_s=50e9)
    >>> across = expert_dispatch_s(8192.0, 2048, 8, 32, toy_gpu(), gpus_per_server=8, network_bytes_per_s=50e9)
    >>> plain = all_to_all_s(8192.0 * 2048 * 8, 32, group_link(toy_gpu(), 32, network_bytes_per_s=50e9))
    >>> inside < across < plain
    True
    """
    link = group_link(gpu, ep, gpus_per_server=gpus_per_server, network_bytes_per_s=network_bytes_per_s)
    routed = token_bytes * tokens * (copies if rows_per_token is None else rows_per_token)
    inside = efficiency if scaleup_efficiency is None else scaleup_efficiency
    if link.kind != "network" or not gpus_per_server or ep <= gpus_per_server:
        return all_to_all_s(routed, ep, link, efficiency=inside if link.kind == "scale-up" else efficiency)
    servers = ep / gpus_per_server
    remote = (servers - 1.0) * (1.0 - (1.0 - 1.0 / servers) ** copies)
    scaleup = group_link(gpu, gpus_per_server, gpus_per_server=gpus_per_server,
                         network_bytes_per_s=network_bytes_per_s)
    network = p2p_s(token_bytes * tokens * remote, link, efficiency=efficiency)
    forward = all_to_all_s(routed, gpus_per_server, scaleup,
                           efficiency=inside if scaleup.kind == "scale-up" else efficiency)
    return max(network, forward) if overlapped_hops else network + forward


def p2p_s(message_bytes: float, link: Link, *, efficiency: float | None = None) -> float:
    """One point-to-point transfer (pipeline stages, ring-attention hops)."""
    if message_bytes <= 0 or link.kind == "none":
        return 0.0
    return link.latency_s + message_bytes / (link.bytes_per_s * _eff(efficiency))
