"""From packages to devices: what a launch runs where one GPU package is several devices to its software.

The planner counts a GPU as its vendor sells it (an MI250X: one package of 128 GB). ROCm sees each MI250X as
``devices_per_package`` = 2 devices (GCDs) of 64 GB, and every launcher counts devices: ``--tensor-parallel-size``,
``--nproc-per-node``, ``HIP_VISIBLE_DEVICES``, a DeepSpeed or FSDP world size (AMD's MI250X documentation treats
each GCD as a GPU). :func:`device_layouts` maps a plan's resolved layout to the device-level layouts that realise
it, in the order a launch should try them; :func:`device_spec` is one device's figures, to plan that launch on.
Pure: no face, no I/O.
"""

from __future__ import annotations

from dataclasses import replace

from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.inputs import Layout
from anchorgpu.planner.result import ResolvedLayout

__all__ = ["device_layouts", "device_spec", "same_layout"]


def same_layout(lay: ResolvedLayout, *, training: bool) -> Layout:
    """The resolved layout as a :class:`Layout` to plan again with (every size named; the training-state sharding
    for training only)."""
    if not training:
        return Layout(gpus=lay.gpus, tp=lay.tp, pp=lay.pp, dp=lay.dp, ep=lay.ep if lay.ep > 1 else None, cp=lay.cp,
                      offload=lay.offload)
    return Layout(gpus=lay.gpus, tp=lay.tp, pp=lay.pp, dp=lay.dp, ep=lay.ep if lay.ep > 1 else None, cp=lay.cp,
                  virtual_stages=lay.virtual_stages if lay.virtual_stages > 1 else None, zero=lay.zero,
                  tp_overlap=lay.tp_overlap, ep_overlap=lay.ep_overlap, fsdp=lay.fsdp, offload=lay.offload,
                  pipeline_layout=lay.pipeline_layout.text if lay.pipeline_layout is not None else None,
                  sequence_parallel=None)  # the planner resolves it for the stack, as it did


def device_spec(gpu: GpuSpec) -> GpuSpec:
    """One device of ``gpu``'s package: its memory, bandwidth, peaks and units divided by ``devices_per_package``
    (MI250X: a GCD of 64 GB, 1.6 TB/s, 110 CUs); ``gpu`` itself where the package is one device.

    >>> from anchorgpu.hardware import get_gpu
    >>> gcd = device_spec(get_gpu("mi250x"))
    >>> gcd.memory_bytes * 2 == get_gpu("mi250x").memory_bytes, gcd.devices_per_package, gcd.sm_count
    (True, 1, 110)
    >>> device_spec(get_gpu("h100")) is get_gpu("h100")
    True
    """
    n = gpu.devices_per_package
    if n == 1:
        return gpu
    peaks = {k: replace(p, flops_per_s=p.flops_per_s / n) if p.flops_per_s is not None else p
             for k, p in gpu.peaks.items()}

    def part(value: int | None) -> int | None:
        return None if value is None else value // n

    return replace(gpu, memory_bytes=gpu.memory_bytes // n, memory_physical_bytes=part(gpu.memory_physical_bytes),
                   memory_nominal_bytes=part(gpu.memory_nominal_bytes), memory_smi_mib=part(gpu.memory_smi_mib),
                   memory_bandwidth_bytes_per_s=gpu.memory_bandwidth_bytes_per_s / n, sm_count=part(gpu.sm_count),
                   peaks=peaks, devices_per_package=1)


def device_layouts(lay: ResolvedLayout, gpu: GpuSpec | None, *, training: bool) -> tuple[Layout, ...]:
    """The device-level layouts that run ``lay`` (planned over packages of ``gpu``), in the order to try them.

    One device a package: the plan's layout itself, and nothing else. ``n`` devices a package: every layout has
    ``n`` times the devices, each holding about ``1 / n`` of the package's share:

    * serving: the replica grows, never the replica count (a replica twice over on half the memory would not
      hold what the package held): TP x ``n`` first (the weights, KV heads and activation tiles split ``n`` ways,
      as vLLM and SGLang run a GCD a rank), then PP x ``n`` (the layers split, where the heads do not divide by the
      larger TP). Experts spread over the grown TP (EP x ``n``, and under attention DP EP stays every device).
    * training: the sharding group grows (DP x ``n``: FSDP / ZeRO world size counts devices), else TP x ``n``.

    Whether a candidate is valid for the model (heads divisible, layers per stage) and fits one device is the
    planner's to judge: plan each on :func:`device_spec` and take the first that fits.

    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.planner.result import ResolvedLayout
    >>> one = ResolvedLayout(gpus=1, tp=1, pp=1, dp=1, ep=1, zero=0, fsdp=False, offload="none",
    ...                      sequence_parallel=False)
    >>> [(c.gpus, c.tp, c.pp, c.dp) for c in device_layouts(one, get_gpu("mi250x"), training=False)]
    [(2, 2, 1, 1), (2, 1, 2, 1)]
    >>> [(c.gpus, c.tp, c.pp, c.dp) for c in device_layouts(one, get_gpu("h100"), training=False)]
    [(1, 1, 1, 1)]
    """
    base = same_layout(lay, training=training)
    n = 1 if gpu is None else gpu.devices_per_package
    if n == 1:
        return (base,)
    gpus = lay.gpus * n
    ep = lay.ep * n if lay.ep > 1 else None
    wider_tp = replace(base, gpus=gpus, tp=lay.tp * n, ep=ep)
    if training:
        shards = replace(base, gpus=gpus, dp=lay.dp * n, ep=ep)
        return (shards, wider_tp)
    more_stages = replace(base, gpus=gpus, pp=lay.pp * n, ep=ep, pipeline_layout=None)
    return (wider_tp, more_stages)
