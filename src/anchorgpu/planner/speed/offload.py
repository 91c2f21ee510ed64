"""State kept in host memory (``--offload``): the optimizer step run on the CPU, and the parameters fetched from the
host in every micro-batch; and the optimizer step's memory traffic by the precision of its state (``--optimizer-state``).
Pure; stdlib only."""

from __future__ import annotations

from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.memory.model_states import OPTIMIZER_MOMENT_BYTES, OPTIMIZER_STATE_BYTES
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.links import ACTIVATION_BYTES, host_kind, host_link_bytes_per_s

__all__ = ["activation_offload_s", "host_optimizer_s", "optimizer_traffic_bytes_per_param", "parameter_fetch_s"]


def host_optimizer_s(gpu: GpuSpec, cal: Calibration, local_params: float, traffic_bytes_per_param: float | None = None,
                     ) -> float:
    """One optimizer step run on the CPU with its state in host memory (ZeRO-Offload; FSDP's CPU offload): the
    memory-bound AdamW update of the GPU's ``local_params`` at its share of the host's memory bandwidth (stated:
    ``host_memory_gb_per_s_per_gpu``, x86 or Grace superchip), then the updated 16-bit parameters back over the host
    link (half the PCIe figure, or NVLink-C2C's). The gradients go down to the host during the backward pass, behind
    it (ZeRO-Offload sends them as they are reduced), and are not counted. ``traffic_bytes_per_param``: the update's
    memory traffic a parameter (None: the calibrated fp32-state figure, ``optimizer_bytes_per_param``).

    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> cal = calibration()
    >>> round(host_optimizer_s(get_gpu("h100"), cal, 8e9), 2)  # 8B parameters on one H100: 32 B each at 50 GB/s
    5.43
    >>> host_optimizer_s(get_gpu("gb200"), cal, 8e9) < host_optimizer_s(get_gpu("h100"), cal, 8e9)
    True
    """
    if local_params <= 0:
        return 0.0
    host = cal.host_memory_bytes_per_s[host_kind(gpu)]
    traffic = cal.optimizer_bytes_per_param if traffic_bytes_per_param is None else traffic_bytes_per_param
    return (local_params * traffic / host
            + local_params * ACTIVATION_BYTES / (host_link_bytes_per_s(gpu) * cal.link_efficiency))


def parameter_fetch_s(gpu: GpuSpec, cal: Calibration, shard_params: float,
                      param_bytes: float = ACTIVATION_BYTES) -> float:
    """A micro-batch's fetch of the GPU's parameter shard from host memory, forward and backward (parameters
    offloaded with ZeRO-3, ZeRO-Infinity style), over the host link, at ``param_bytes`` a parameter (16 bit; QLoRA's
    packed base less).

    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> round(parameter_fetch_s(get_gpu("h100"), calibration(), 1e9), 3)  # 2 x 2 GB at 64 GB/s x 0.8
    0.078
    """
    return 2 * shard_params * param_bytes / (host_link_bytes_per_s(gpu) * cal.link_efficiency)


def activation_offload_s(gpu: GpuSpec, cal: Calibration, *, offloaded_bytes: float, compute_s: float) -> float:
    """The part of a micro-batch's activation offload (``--offload-activations``) that its computation does not hide:
    ``offloaded_bytes`` go to the host during the forward pass and come back during the backward pass, each way over
    the host link on a copy stream of its own (TE's ``d2h_stream`` and ``h2d_stream``), spread over the layers'
    computation (``layer_window_map``). The forward pass is a third of ``compute_s`` (no recompute: Megatron-Core
    offloads only then), the backward pass the rest; a copy that outlasts its pass is waited for.

    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> cal = calibration()
    >>> activation_offload_s(get_gpu("gb200"), cal, offloaded_bytes=100e9, compute_s=2.0)  # 0.28 s each way: hidden
    0.0
    >>> round(activation_offload_s(get_gpu("h100"), cal, offloaded_bytes=100e9, compute_s=2.0), 2)  # 1.96 s each way
    1.91
    """
    if offloaded_bytes <= 0:
        return 0.0
    copy_s = offloaded_bytes / (host_link_bytes_per_s(gpu) * cal.link_efficiency)
    forward_s = compute_s / 3
    return max(0.0, copy_s - forward_s) + max(0.0, copy_s - (compute_s - forward_s))


def optimizer_traffic_bytes_per_param(fp32_traffic_bytes: float, optimizer_state: str) -> float:
    """The AdamW update's memory traffic a parameter with its state in the precision ``--optimizer-state`` names: the
    calibrated fp32 figure (``optimizer_bytes_per_param``: master, m and v each read and written once, 2 x 12 of its
    bytes, beside the gradient read and the 16-bit weight written) less what 16-bit state saves on both passes
    (:data:`~anchorgpu.planner.memory.OPTIMIZER_STATE_BYTES`).

    >>> [optimizer_traffic_bytes_per_param(32.0, state) for state in ("fp32", "bf16-moments", "bf16")]
    [32.0, 24.0, 20.0]
    """
    if optimizer_state == "fp32":
        return fp32_traffic_bytes
    fp32_master, fp32_scale = OPTIMIZER_STATE_BYTES["fp32"]
    master, scale = OPTIMIZER_STATE_BYTES[optimizer_state]
    saved = (fp32_master - master) + OPTIMIZER_MOMENT_BYTES["adamw"] * (fp32_scale - scale)
    return fp32_traffic_bytes - 2 * saved
"""What a step of a layout costs whatever its global batch, memoised on the (frozen) model, GPU and calibration by
identity and the layout's counts and the step's settings by value: each plan of that layout (a sweep over batch
sizes, a layout search, a repeated question) reuses it."""
