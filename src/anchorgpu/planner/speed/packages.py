"""Serving speed on a GPU package that is several devices to its software (MI250X: 2 GCDs of 64 GB), timed as it is
launched. Pure.

The planner counts such a package as one GPU (AMD's datasheet does), and its ``package_is_several_devices`` warning
tells the user to launch TP x ``devices_per_package`` where the plan says TP (vLLM and SGLang run a GCD a rank).
Timed as one device, the package reads its weights at the whole package's bandwidth with no collective between its
halves; the launch it prescribes splits every layer over the two GCDs and all-reduces twice a layer between them
(Llama-3.1-8B, one request: 9.1 ms a token as one device, 10.1 ms as the TP 2 launch; Qwen3-30B-A3B 7.2 and 8.7 ms).
So a serving plan on such a package is timed on the first device layout that holds it
(:func:`~anchorgpu.planner.devices.device_layouts`, the order the launch recipes try them), planned on one device
(:func:`~anchorgpu.planner.devices.device_spec`): its figures are totals over the same users and the same packages,
so they stand for the package plan as they are. Training is left timed on the packages: its launch only doubles
the data-parallel ranks (each at half the micro-batch), which moves the step by a gradient sync's share.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anchorgpu.planner.result import Plan

__all__ = ["LAUNCHED_LABEL", "launched_serving_performance"]

LAUNCHED_LABEL = "timed as launched"
"""How the assumption that a package's serving plan is timed on its devices starts (the CLI prints it under the speed)."""


def launched_serving_performance(planned: Plan, **options: Any) -> dict[str, Any]:
    """The ``performance`` section of ``planned`` (a fitting serving plan on a package of several devices) timed on
    the first device layout that holds it, with a first assumption that says so; where none does (experts or heads
    that do not split over the devices), timed on the package as one device, and the assumption says that instead.
    ``options`` are :func:`~anchorgpu.planner.speed.estimate.plan_performance`'s.

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.planner import Workload, plan
    >>> p = plan(load_model("llama-3.1-8b"), Workload(concurrency=1, prompt_tokens=1000, output_tokens=1000),
    ...          gpu=get_gpu("mi250x"))
    >>> perf = launched_serving_performance(p)
    >>> perf["assumptions"][0][:96]
    'timed as launched: AMD Instinct MI250X is 2 devices to ROCm (64.00 GiB each), so TP 1 runs as TP'
    """
    from anchorgpu.errors import InvalidInput
    from anchorgpu.planner.devices import device_layouts, device_spec
    from anchorgpu.planner.plan import plan
    from anchorgpu.planner.speed.estimate import plan_performance
    from anchorgpu.units import fmt_bytes

    gpu = planned.gpu
    assert gpu is not None
    device = device_spec(gpu)
    lay = planned.layout
    tried: list[str] = []
    for layout in device_layouts(lay, gpu, training=False):
        grew = f"TP {layout.tp}" if layout.tp != lay.tp else f"PP {layout.pp}"
        try:
            p = plan(planned.model, planned.workload, precision=planned.precision, layout=layout, gpu=device,
                     suggest=False, choose_layout=False)
        except InvalidInput as err:  # heads, experts or layers that do not split so
            tried.append(f"{grew}: {err.message}")
            continue
        if p.fits is False:
            tried.append(f"{grew} does not fit a {fmt_bytes(device.memory_bytes)} device")
            continue
        perf = plan_performance(p, **options)
        grown = f"TP {p.layout.tp}" if p.layout.tp != lay.tp else f"PP {p.layout.pp}"
        said = f"TP {lay.tp}" if p.layout.tp != lay.tp else f"PP {lay.pp}"
        perf["assumptions"] = [
            f"{LAUNCHED_LABEL}: {gpu.display_name} is {gpu.devices_per_package} devices to {gpu.runtime_name} "
            f"({fmt_bytes(device.memory_bytes)} each), so {said} runs as {grown} over {p.layout.gpus} devices, a rank "
            f"a device, each at 1/{gpu.devices_per_package} of the package's bandwidth and peak, with the collectives "
            "between them (the package_is_several_devices warning); timed as one device, the package would claim "
            f"{_faster(planned, perf, options)}",
            *perf.get("assumptions", []),
        ]
        return perf
    perf = plan_performance(replace(planned, gpu=replace(gpu, devices_per_package=1)), **options)
    perf["assumptions"] = [
        f"{LAUNCHED_LABEL}: not here; {gpu.display_name} is {gpu.devices_per_package} devices to {gpu.runtime_name}, "
        "and no launch over them was planned for this request (" + "; ".join(tried) + "), so it is timed as one "
        "device of the whole package's bandwidth and peak, with no collective between its halves: a launch over the "
        "devices runs slower", *perf.get("assumptions", [])]
    return perf


def _faster(planned: Plan, launched: dict[str, Any], options: dict[str, Any]) -> str:
    """How much faster the package timed as one device would claim to be than its launch, in words."""
    from anchorgpu.planner.speed.estimate import plan_performance

    assert planned.gpu is not None
    one = plan_performance(replace(planned, gpu=replace(planned.gpu, devices_per_package=1)), **options)
    package, device = one.get("output_tokens_per_s"), launched.get("output_tokens_per_s")
    if not package or not device:
        return "another speed"
    more = package / device - 1
    return (f"{abs(more):.0%} {'more' if more >= 0 else 'fewer'} output tokens/s ({package:,.0f} against "
            f"{device:,.0f})")
