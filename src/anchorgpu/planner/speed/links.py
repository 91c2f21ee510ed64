"""Peaks, links and collectives: the datasheet figures a step is bound by, and what moving bytes costs. Pure.

Datasheet link bandwidths are bidirectional per GPU; a ring or a point-to-point transfer sends one
direction at a time, so half is used, at the stated ``link_efficiency`` (nccl-tests bus bandwidth is
typically 75-85% of the link rate). Each collective also pays a fixed latency by link kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import fast_init
from anchorgpu.planner.speed.calibration import calibration

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
]

ComputePrecision = Literal["bf16", "fp8", "fp4"]
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
class PeakChoice:
    """The dense peak the estimate divides by, the precision it belongs to, and why, if it fell back."""

    flops_per_s: float
    precision: str
    requested: str
    warning: tuple[str, str] | None = None


@lru_cache(maxsize=64)
def compute_precision_for_weights(weights_format: str) -> ComputePrecision:
    """The matrix-multiply precision a weight format runs at.

    FP8 weights run W8A8 at the FP8 rate; MXFP4/NVFP4 at the FP4 rate where hardware has it; every
    other format (bf16/fp16, int8, GPTQ/AWQ int4, NF4, GGUF) is weight-only: dequantised to 16 bit and
    multiplied at the BF16 rate.

    >>> compute_precision_for_weights("nvfp4"), compute_precision_for_weights("int4-awq")
    ('fp4', 'bf16')
    """
    fmt = weights_format.lower()
    if fmt.startswith("fp8"):
        return "fp8"
    if fmt in ("mxfp4", "nvfp4"):
        return "fp4"
    return "bf16"


def compute_precision_for_training(train_precision: str) -> ComputePrecision:
    """The matrix-multiply precision of a ``--train-precision``: FP8/FP4 as named, BF16 for the others.

    >>> compute_precision_for_training("fp8"), compute_precision_for_training("mixed")
    ('fp8', 'bf16')
    """
    return "fp8" if train_precision == "fp8" else "fp4" if train_precision == "fp4" else "bf16"


_PEAK_MEMO: dict[tuple[int, str], tuple[GpuSpec, PeakChoice]] = {}


def peak_for(gpu: GpuSpec, precision: str) -> PeakChoice:
    """:func:`_peak_for`, memoised per (GPU spec object, precision): both are immutable."""
    key = (id(gpu), precision)
    hit = _PEAK_MEMO.get(key)
    if hit is not None and hit[0] is gpu:
        return hit[1]
    if len(_PEAK_MEMO) >= 1024:
        _PEAK_MEMO.clear()
    choice = _peak_for(gpu, precision)
    _PEAK_MEMO[key] = (gpu, choice)
    return choice


def _peak_for(gpu: GpuSpec, precision: str) -> PeakChoice:
    """Dense peak of ``precision`` (bf16/fp16, fp8 or fp4) on ``gpu``: FP8 only where ``gpu.fp8_hardware``,
    FP4 only where ``gpu.fp4_hardware``, otherwise the BF16 peak with a warning whose code is in the
    planner's registry.

    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> peak_for(toy_gpu(), "fp4").warning[0]
    'fp4_weight_only_emulation'
    """
    wanted = precision.lower()
    if wanted in ("fp16", "bf16", "float16", "bfloat16"):
        wanted = "bf16"
    if wanted not in ("bf16", "fp8", "fp4"):
        raise InvalidWorkload(f"compute precision {precision!r}: expected bf16, fp16, fp8 or fp4")
    warning: tuple[str, str] | None = None
    if wanted == "fp8" and not gpu.fp8_hardware:
        warning = ("fp8_without_hardware", f"{gpu.name} has no FP8 tensor cores: speed estimated at the BF16 rate")
    elif wanted == "fp4" and not gpu.fp4_hardware:
        warning = ("fp4_weight_only_emulation",
                   f"{gpu.name} has no FP4 math: FP4 weights are dequantized, speed at the BF16 rate")
    if warning is None:
        rate = gpu.peak_flops_per_s(wanted)
        if rate is not None:
            return PeakChoice(flops_per_s=rate, precision=wanted, requested=precision)
        if wanted != "bf16":
            warning = ("kernel_support_unchecked",
                       f"{gpu.name}: no published dense {wanted.upper()} peak, speed estimated at the BF16 rate")
    rate = gpu.peak_flops_per_s("bf16")
    if rate is None:
        raise InvalidWorkload(f"{gpu.name}: no published dense BF16 peak, so speed cannot be estimated")
    return PeakChoice(flops_per_s=rate, precision="bf16", requested=precision, warning=warning)


def power_capped(gpu: GpuSpec, power_limit_w: float) -> GpuSpec:
    """``gpu`` run under a board power limit below its rated TDP: dense peaks scaled by the sustained clock.

    Dynamic CMOS power is ``C * V^2 * f`` and, at the top of the voltage/frequency curve, the voltage rises
    about in step with the clock, so power goes as ``f^3`` and a board held at ``P`` of its rated ``TDP``
    sustains a clock of ``(P / TDP)^(1/3)`` of the one its peaks assume (500 W of 700 W: 0.894). Tensor
    throughput follows the clock; memory bandwidth (HBM's own clock) and the links do not. A limit at or
    above the TDP, or a GPU without a rated TDP, changes nothing.

    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> round(power_capped(toy_gpu(), 500).peak_flops_per_s("bf16") / 1e12, 1)  # 989 x (500/700)^(1/3)
    884.1
    >>> power_capped(toy_gpu(), 800).peaks == toy_gpu().peaks  # at or above the 700 W TDP: unchanged
    True
    """
    if power_limit_w <= 0:
        raise InvalidWorkload(f"power limit {power_limit_w} W: must be positive")
    if not gpu.tdp_w or power_limit_w >= gpu.tdp_w:
        return gpu
    clock = (power_limit_w / gpu.tdp_w) ** (1.0 / 3.0)
    peaks = {name: replace(peak, flops_per_s=peak.flops_per_s * clock) if peak.flops_per_s else peak
             for name, peak in gpu.peaks.items()}
    return replace(gpu, peaks=peaks, tdp_w=int(power_limit_w))


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """A path between GPUs: its kind, one-direction bandwidth and per-collective latency."""

    kind: Literal["scale-up", "pcie", "network", "none"]
    bytes_per_s: float  # one direction
    latency_s: float
    description: str


def _network(network_bytes_per_s: float | None) -> Link:
    cal = calibration()
    bw = network_bytes_per_s if network_bytes_per_s is not None else cal.network_bytes_per_s
    return Link(kind="network", bytes_per_s=bw, latency_s=cal.latency_s["network"],
                description=f"network between servers, {bw * 8 / 1e9:.0f} Gb/s per GPU")


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
        where = "a server" if nics <= (gpus_per_server or 8) else "a scale-up domain"  # NVL72: a rack
        return replace(link, bytes_per_s=min(link.bytes_per_s * nics, inside.bytes_per_s),
                       description=f"{link.description}, through {nics} NICs {where}")
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


def tp_link(gpu: GpuSpec, tp: int, *, gpus_per_server: int | None = None,
            network_bytes_per_s: float | None = None) -> Link:
    """The link tensor-parallel collectives cross for ``tp`` adjacent ranks (see :func:`group_link`).

    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> tp_link(toy_gpu(), 16, gpus_per_server=8).kind
    'network'
    """
    return group_link(gpu, tp, gpus_per_server=gpus_per_server, network_bytes_per_s=network_bytes_per_s)


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
                      efficiency: float | None = None) -> float:
    """One dispatch (or combine) of ``tokens`` tokens of ``token_bytes`` each, ``copies`` routed copies a token, to
    the experts of an EP group of ``ep`` consecutive GPUs. Inside one scale-up domain a plain all-to-all. Across
    servers a two-hop dispatch, as DeepSeek-V3's training does it and DeepEP's kernels implement (DeepSeek-V3
    technical report, arXiv:2412.19437, section 3.2.2): a token crosses the network once to each other server that
    holds any of its experts, ``(N-1) (1 - (1 - 1/N)^copies)`` servers of the group's ``N`` for uniform routing,
    then is forwarded over the scale-up link to the GPUs there.

    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> inside = expert_dispatch_s(8192.0, 2048, 8, 8, toy_gpu(), gpus_per_server=8, network_bytes_per_s=50e9)
    >>> across = expert_dispatch_s(8192.0, 2048, 8, 32, toy_gpu(), gpus_per_server=8, network_bytes_per_s=50e9)
    >>> plain = all_to_all_s(8192.0 * 2048 * 8, 32, group_link(toy_gpu(), 32, network_bytes_per_s=50e9))
    >>> inside < across < plain
    True
    """
    link = group_link(gpu, ep, gpus_per_server=gpus_per_server, network_bytes_per_s=network_bytes_per_s)
    routed = token_bytes * tokens * copies
    if link.kind != "network" or not gpus_per_server or ep <= gpus_per_server:
        return all_to_all_s(routed, ep, link, efficiency=efficiency)
    servers = ep / gpus_per_server
    remote = (servers - 1.0) * (1.0 - (1.0 - 1.0 / servers) ** copies)
    scaleup = group_link(gpu, gpus_per_server, gpus_per_server=gpus_per_server,
                         network_bytes_per_s=network_bytes_per_s)
    return (p2p_s(token_bytes * tokens * remote, link, efficiency=efficiency)
            + all_to_all_s(routed, gpus_per_server, scaleup, efficiency=efficiency))


def p2p_s(message_bytes: float, link: Link, *, efficiency: float | None = None) -> float:
    """One point-to-point transfer (pipeline stages, ring-attention hops)."""
    if message_bytes <= 0 or link.kind == "none":
        return 0.0
    return link.latency_s + message_bytes / (link.bytes_per_s * _eff(efficiency))


def hopper_or_newer(gpu: GpuSpec) -> bool:
    """An NVIDIA GPU of compute capability 9.0 or later (where FlashAttention-2 reaches about a third of the peak).

    >>> from anchorgpu.hardware import get_gpu
    >>> hopper_or_newer(get_gpu("h100")), hopper_or_newer(get_gpu("a100")), hopper_or_newer(get_gpu("mi300x"))
    (True, False, False)
    """
    major = (gpu.compute_capability or "").rstrip("?").split(".")[0]
    return gpu.vendor == "NVIDIA" and major.isdigit() and int(major) >= 9
