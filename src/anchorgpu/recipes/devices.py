"""The launch's plan over devices: where a GPU package is several devices to its software (MI250X: 2 GCDs), the
plan is planned again over the devices (:func:`~anchorgpu.planner.devices.device_layouts` on
:func:`~anchorgpu.planner.devices.device_spec`), so every recipe counts ranks, visible devices and per-device memory
as the launcher does. Pure: the planner only.
"""

from __future__ import annotations

from dataclasses import replace

from anchorgpu.errors import InvalidInput
from anchorgpu.planner.devices import device_layouts, device_spec
from anchorgpu.planner.plan import Plan, plan
from anchorgpu.recipes._common import Target, is_training, not_expressible
from anchorgpu.units import fmt_bytes

__all__ = ["device_plan"]


def device_plan(planned: Plan, kind: str, target: Target) -> tuple[Plan, Target, str | None]:
    """(the plan over devices, the target in devices a server, the assumption that says so; None: one device a
    package, ``planned`` and ``target`` as they are). Refused in one line when no device layout fits a device."""
    gpu = planned.gpu
    n = 1 if gpu is None else gpu.devices_per_package
    if gpu is None or n == 1:
        return planned, target, None
    training = is_training(planned)
    device = device_spec(gpu)
    w = planned.workload
    if w.engine == "sglang" and any(a.startswith("Serving engine sized like SGLang: mem_fraction_static")
                                    and "(given)" not in a for a in planned.assumptions):
        w = replace(w, gpu_memory_utilization=None)  # SGLang's own default for one device: its reserve over 64 GB
    tried: list[str] = []
    for layout in device_layouts(planned.layout, gpu, training=training):
        work = w
        grew = "DP" if layout.dp != planned.layout.dp else "TP" if layout.tp != planned.layout.tp else "PP"
        if training and grew == "DP" and (w.micro_batch or 1) % n == 0:
            work = replace(w, micro_batch=(w.micro_batch or 1) // n)  # the package's micro-batch, a share a device
        try:
            p = plan(planned.model, work, precision=planned.precision, layout=layout, gpu=device, suggest=False,
                     choose_layout=False)
        except InvalidInput as err:
            tried.append(f"{grew} {getattr(layout, grew.lower())}: {err.message}")
            continue
        if p.fits is False:
            short = f" (short by {fmt_bytes(-p.headroom_bytes)})" if p.headroom_bytes is not None else ""
            tried.append(f"{grew} {getattr(layout, grew.lower())} does not fit a {fmt_bytes(device.memory_bytes)} "
                         f"device{short}")
            continue
        lay = p.layout
        note = (f"{gpu.display_name}: {n} devices a package to {gpu.runtime_name} ({fmt_bytes(device.memory_bytes)} "
                f"each), so the plan's {planned.layout.gpus} package(s) launch as {lay.gpus} devices, a rank a device: "
                f"TP {lay.tp}, PP {lay.pp}, DP {lay.dp}" + (f", EP {lay.ep}" if lay.ep > 1 else "")
                + f" where the plan over packages says TP {planned.layout.tp}, PP {planned.layout.pp}, DP "
                f"{planned.layout.dp}; planned again on one device, it fits"
                + (f" (micro-batch {work.micro_batch} a device)" if work.micro_batch != w.micro_batch else "") + ".")
        return p, Target(nodes=target.nodes, gpus_per_node=target.gpus_per_node * n, name=target.name), note
    raise not_expressible(kind, f"{gpu.display_name} is {n} devices of {fmt_bytes(device.memory_bytes)} a package to "
                                f"{gpu.runtime_name}, and no launch over them holds the plan: " + "; ".join(tried))
