"""Links: the path a group of GPUs crosses (scale-up, PCIe, the network, through one NIC or several) with its
one-direction bandwidth and latency, the span of a server or scale-up domain, and the host link. Pure.

Datasheet link bandwidths are bidirectional per GPU; a ring or a point-to-point transfer sends one
direction at a time, so half is used. Each collective also pays a fixed latency by link kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from anchorgpu.errors import said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import fast_init
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.units import bytes_per_s_to_gbit_per_s, gbit_per_s_to_bytes_per_s

__all__ = [
    "ACTIVATION_BYTES",
    "Link",
    "data_parallel_link",
    "group_link",
    "host_kind",
    "host_link_bytes_per_s",
    "is_superchip",
    "layout_margin_class",
    "network_bytes_per_s_of",
    "server_gpus",
    "serving_link_kind",
    "tp_link",
]

ACTIVATION_BYTES = 2
"""Bytes per activation value sent between GPUs (bf16)."""
SCALE_UP_FALLBACK_BYTES_PER_S = 64e9
"""PCIe Gen4 x16 (bidirectional) when a GPU lists no PCIe figure."""

NVLINK_C2C_BYTES_PER_S = 900e9
"""NVLink-C2C between a Grace CPU and its Blackwell or Hopper GPUs (bidirectional; the catalog's GB200/GB300 rows)."""


def is_superchip(gpu: GpuSpec) -> bool:
    """A GPU whose host is a Grace CPU over NVLink-C2C (GB200, GB300, GH200), not an x86 host over PCIe.

    >>> from anchorgpu.hardware import get_gpu
    >>> is_superchip(get_gpu("gb200")), is_superchip(get_gpu("h100"))
    (True, False)
    """
    return "C2C" in (gpu.interconnect or "")


def host_kind(gpu: GpuSpec) -> str:
    """The CPU that drives the GPU: ``superchip`` (a Grace beside it) or ``x86`` (the keys of the calibration's
    per-host constants).

    >>> from anchorgpu.hardware import get_gpu
    >>> host_kind(get_gpu("gb200")), host_kind(get_gpu("h100"))
    ('superchip', 'x86')
    """
    return "superchip" if is_superchip(gpu) else "x86"


def host_link_bytes_per_s(gpu: GpuSpec) -> float:
    """One direction of the link between a GPU and its host's memory: half its PCIe figure, NVLink-C2C's on a
    superchip, PCIe Gen4 x16's where the catalog lists neither.

    >>> from anchorgpu.hardware import get_gpu
    >>> host_link_bytes_per_s(get_gpu("h100")) / 1e9, host_link_bytes_per_s(get_gpu("gb200")) / 1e9
    (64.0, 450.0)
    """
    if is_superchip(gpu):
        return NVLINK_C2C_BYTES_PER_S / 2
    return (gpu.pcie_bandwidth_bytes_per_s or SCALE_UP_FALLBACK_BYTES_PER_S) / 2


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """A path between GPUs: its kind, one-direction bandwidth and per-collective latency."""

    kind: Literal["scale-up", "pcie", "network", "none"]
    bytes_per_s: float  # one direction
    latency_s: float
    description: str


def network_bytes_per_s_of(gbit_per_s: float | None) -> float | None:
    """Bytes a second of a bandwidth stated in Gb/s (``Workload.network_gbit_per_s_per_gpu``, as calibration.json and
    the measured runs state theirs), ``None`` kept: the calibration's default.

    >>> network_bytes_per_s_of(12.5), network_bytes_per_s_of(None)
    (1562500000.0, None)
    """
    return None if gbit_per_s is None else gbit_per_s_to_bytes_per_s(gbit_per_s)


def _network(network_bytes_per_s: float | None) -> Link:
    cal = calibration()
    bw = network_bytes_per_s if network_bytes_per_s is not None else cal.network_bytes_per_s
    return Link(kind="network", bytes_per_s=bw, latency_s=cal.latency_s["network"],
                description=said("network between servers, {rate:.0f} Gb/s per GPU", rate=bytes_per_s_to_gbit_per_s(bw)))


_LINK_MEMO: dict[tuple[int, int, int | None, float | None, int, int], tuple[GpuSpec, object, Link]] = {}


def group_link(gpu: GpuSpec, span_gpus: int, *, gpus_per_server: int | None = 8,
               network_bytes_per_s: float | None = None, nics: int = 1) -> Link:
    """The slowest link a group spanning ``span_gpus`` GPUs crosses (see :func:`_group_link`), memoised:
    the answer depends only on the frozen GPU spec, the arguments and the calibration in force."""
    cal = calibration()
    key = (id(gpu), span_gpus, gpus_per_server, network_bytes_per_s, id(cal), nics)
    hit = _LINK_MEMO.get(key)
    if hit is not None and hit[0] is gpu and hit[1] is cal:
        return hit[2]
    if len(_LINK_MEMO) >= 1024:
        _LINK_MEMO.clear()
    link = _group_link(gpu, span_gpus, gpus_per_server=gpus_per_server, network_bytes_per_s=network_bytes_per_s,
                       nics=nics)
    _LINK_MEMO[key] = (gpu, cal, link)
    return link


def server_gpus(gpu: GpuSpec, gpus_per_server: int | None = 8) -> int:
    """The GPUs a group spans before it crosses the network: a server, or a scale-up domain larger than one (72 on
    an NVL72 rack).

    >>> from anchorgpu.hardware import get_gpu
    >>> server_gpus(get_gpu("h100")), server_gpus(get_gpu("gb200"))
    (8, 72)
    """
    domain = gpu.scaleup_domain_gpus if gpu.interconnect_bandwidth_bytes_per_s else 1
    return max(gpus_per_server or 8, domain if domain > 8 else 0)


def _group_link(gpu: GpuSpec, span_gpus: int, *, gpus_per_server: int | None = 8,
                network_bytes_per_s: float | None = None, nics: int = 1) -> Link:
    """The slowest link a group of ranks crosses when its members lie within ``span_gpus`` consecutive GPUs.

    Inside one server: the scale-up link (NVLink / Infinity Fabric) when the span fits its domain
    (``scaleup_domain_gpus``: 8 on HGX/OAM boards, 72 on NVL72 racks, 2 on bridged PCIe pairs), else PCIe.
    Past one server (or past the scale-up domain where that is larger): the network, at ``nics`` times one GPU's
    network bandwidth where the group has that many members in each server (each leaves through its own NIC:
    :func:`data_parallel_link`), up to the link inside the server.

    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> group_link(toy_gpu(), 8).kind, group_link(toy_gpu(), 8).bytes_per_s
    ('scale-up', 450000000000.0)
    >>> group_link(toy_gpu(), 16).kind
    'network'
    """
    cal = calibration()
    if span_gpus <= 1:
        return Link(kind="none", bytes_per_s=math.inf, latency_s=0.0, description="single GPU")
    domain = gpu.scaleup_domain_gpus if gpu.interconnect_bandwidth_bytes_per_s else 1
    server = server_gpus(gpu, gpus_per_server)
    if span_gpus > server:
        link = _network(network_bytes_per_s)
        if nics <= 1:
            return link
        inside = _group_link(gpu, server, gpus_per_server=gpus_per_server)
        through = (said("{link}, through {nics} NICs a server", link=link.description, nics=nics)
                   if nics <= (gpus_per_server or 8) else  # NVL72: a rack
                   said("{link}, through {nics} NICs a scale-up domain", link=link.description, nics=nics))
        return replace(link, bytes_per_s=min(link.bytes_per_s * nics, inside.bytes_per_s), description=through)
    if gpu.interconnect_bandwidth_bytes_per_s and domain > 1 and span_gpus <= domain:
        return Link(kind="scale-up", bytes_per_s=gpu.interconnect_bandwidth_bytes_per_s / 2,
                    latency_s=cal.stack(gpu).scaleup_latency_s, description=gpu.interconnect)
    pcie = gpu.pcie_bandwidth_bytes_per_s or SCALE_UP_FALLBACK_BYTES_PER_S
    return Link(kind="pcie", bytes_per_s=pcie / 2, latency_s=cal.latency_s["pcie"],
                description=f"PCIe {gpu.pcie_gen}".strip())


def data_parallel_link(gpu: GpuSpec, span_gpus: int, members_per_server: int, *, gpus_per_server: int | None = 8,
                       network_bytes_per_s: float | None = None) -> Link:
    """The link a data-parallel (or FSDP) group's collectives run at when the group spans ``span_gpus`` GPUs and has
    ``members_per_server`` members in each server: across servers, NCCL's rings and trees leave a server through
    every member GPU's own NIC (one channel a NIC on rail-optimised clusters, nccl-tests' multi-node bus bandwidth on
    DGX H100: several hundred GB/s, not one NIC's 50), so the group moves ``members_per_server`` times one GPU's
    network bytes, up to the link inside the server that the members' traffic also crosses. One member a server
    (TP 8) is one NIC, as :func:`group_link` gives.

    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> one, four = (data_parallel_link(toy_gpu(), 64, n, network_bytes_per_s=50e9) for n in (1, 4))
    >>> one.bytes_per_s, four.bytes_per_s, four.description
    (50000000000.0, 200000000000.0, 'network between servers, 400 Gb/s per GPU, through 4 NICs a server')
    >>> data_parallel_link(toy_gpu(), 64, 8, network_bytes_per_s=100e9).bytes_per_s  # the scale-up link caps it
    450000000000.0
    """
    return group_link(gpu, span_gpus, gpus_per_server=gpus_per_server, network_bytes_per_s=network_bytes_per_s,
                      nics=max(1, members_per_server))


def tp_link(gpu: GpuSpec, tp: int, *, gpus_per_server: int | None = None,
            network_bytes_per_s: float | None = None) -> Link:
    """The link tensor-parallel collectives cross for ``tp`` adjacent ranks (see :func:`group_link`).

    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> tp_link(toy_gpu(), 16, gpus_per_server=8).kind
    'network'
    """
    return group_link(gpu, tp, gpus_per_server=gpus_per_server, network_bytes_per_s=network_bytes_per_s)


_SLOWER = ("none", "scale-up", "pcie", "network")
"""Link kinds, fastest first."""


def serving_link_kind(gpu: GpuSpec, tp: int, pp: int = 1, ep: int = 1, *, gpus_per_server: int = 8) -> str:
    """The slowest link a serving replica's tensor-, pipeline- and expert-parallel traffic crosses (the links the
    serving step is timed over: :mod:`~anchorgpu.planner.speed.step_constants`): ``none`` for one GPU a replica.

    >>> from anchorgpu.hardware import get_gpu
    >>> [serving_link_kind(get_gpu("h200"), tp, pp) for tp, pp in ((1, 1), (8, 1), (8, 2))]
    ['none', 'scale-up', 'network']
    >>> serving_link_kind(get_gpu("rtx-pro-6000"), 2)
    'pcie'
    """
    kinds = ["none"]
    if tp > 1:
        kinds.append(group_link(gpu, tp, gpus_per_server=gpus_per_server).kind)
    if pp > 1:
        kinds.append(group_link(gpu, tp * pp, gpus_per_server=gpus_per_server).kind)
    if ep > tp:  # attention data parallelism: the experts' all-gathers over the EP group
        kinds.append(data_parallel_link(gpu, ep, min(ep, gpus_per_server), gpus_per_server=gpus_per_server).kind)
    return max(kinds, key=_SLOWER.index)


EXPERT_SPLITS = ("none", "ep", "adp")
"""How a serving layout splits a mixture of experts' experts, least to most apart from TP (:func:`expert_split`)."""


def expert_split(tp: int, ep: int) -> str:
    """``adp`` where EP is wider than TP (attention data parallelism: replicas of the attention route their tokens to
    experts on other GPUs), ``ep`` where the experts are whole over the TP group (EP inside TP), else ``none``."""
    return "adp" if ep > tp else "ep" if ep > 1 else "none"


def layout_margin_class(*kinds: str, experts: str = "none") -> str:
    """The class of the serving chooser's margin between layouts whose slowest links are ``kinds``
    (:func:`serving_link_kind`) and whose most apart split of the experts is ``experts`` (:func:`expert_split`):
    ``scale-up`` where none crosses more than the scale-up fabric (NVLink, xGMI, NVSwitch) or no link at all and
    neither splits the experts, ``scale-up-ep`` the same where one runs EP inside TP, ``scale-up-adp`` where one runs
    attention data parallelism, else ``pcie-or-network`` (the worse link of the two decides). The model ranks TP
    splits and replicas on one server far better than attention-DP layouts (InferenceMAX's gpt-oss-120b sweep on
    B200), and EP inside TP at two sizes about as well as TP splits (InferenceMAX's DeepSeek-R1 on SGLang,
    ``benchmarks/layout_margin_findings.md``), so the three scale-up cases are measured apart.

    >>> layout_margin_class("none", "scale-up"), layout_margin_class("scale-up", "pcie")
    ('scale-up', 'pcie-or-network')
    >>> layout_margin_class("none", "scale-up", experts="ep"), layout_margin_class("scale-up", experts="adp")
    ('scale-up-ep', 'scale-up-adp')
    """
    worst = max(kinds, key=_SLOWER.index)
    if _SLOWER.index(worst) > _SLOWER.index("scale-up"):
        return "pcie-or-network"
    return {"none": "scale-up", "ep": "scale-up-ep", "adp": "scale-up-adp"}[experts]
