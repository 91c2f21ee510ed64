"""What one GPU holds of a workload reduced to bytes (:class:`Workload`): whether its resident bytes fit, the fewest
GPUs they need and the batch-1 decode ceiling they imply, with the sentences that say so. Part of
:func:`~anchorgpu.hardware.compare.compare_gpus`'s answer. Pure; stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass

from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.units import GIB

__all__ = ["Workload", "WorkloadFit", "workload_fit", "workload_statements"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """A workload reduced to the bytes that must sit in GPU memory (and what decode reads per token).

    ``resident_bytes`` is what has to fit: the weights for inference, the model states (weights +
    gradients + optimizer) for training. ``decode_bytes_per_token`` (inference only) is what one decode
    step reads: the weights, or only the active experts' weights for MoE.
    """

    name: str  # e.g. "llama-3.1-70b"
    task: str  # "inference" | "training" | "lora" | "qlora" (a frozen base) | "diffusion" (a diffusion pipeline)
    resident_bytes: int
    resident_label: str  # e.g. "weights at bf16 (2 bytes/parameter)"
    decode_bytes_per_token: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadFit:
    """Whether a workload's resident bytes fit on one GPU, and the batch-1 decode ceiling they imply."""

    gpu: str
    resident_bytes: int
    memory_bytes: int
    fits_one_gpu: bool  # resident bytes only (no KV cache, activations or runtime overhead)
    min_gpus: int  # ceil(resident / memory): a floor with perfect sharding, not a plan
    decode_ceiling_tokens_per_s: float | None  # bandwidth / bytes read per token (batch 1, upper bound)


def workload_fit(gpu: GpuSpec, workload: Workload) -> WorkloadFit:
    """Resident-bytes fit on one GPU and the batch-1 decode ceiling (bandwidth / bytes read per token).

    >>> from anchorgpu.hardware import get_gpu
    >>> w = Workload(name="70b", task="inference", resident_bytes=140 * 10**9, resident_label="weights",
    ...              decode_bytes_per_token=140 * 10**9)
    >>> fit = workload_fit(get_gpu("h100"), w)
    >>> fit.fits_one_gpu, fit.min_gpus, round(fit.decode_ceiling_tokens_per_s or 0, 1)
    (False, 2, 23.9)
    """
    if workload.resident_bytes <= 0:
        raise ValueError("resident_bytes must be positive")
    per_token = workload.decode_bytes_per_token
    return WorkloadFit(
        gpu=gpu.name,
        resident_bytes=workload.resident_bytes,
        memory_bytes=gpu.memory_bytes,
        fits_one_gpu=workload.resident_bytes <= gpu.memory_bytes,
        min_gpus=-(-workload.resident_bytes // gpu.memory_bytes),
        decode_ceiling_tokens_per_s=None if not per_token else gpu.memory_bandwidth_bytes_per_s / per_token,
    )


def _decode_ceiling(fit: WorkloadFit) -> str:
    """The batch-1 decode ceiling clause. Weights one GPU holds are read at its bandwidth; weights split by tensor
    parallelism over the ``min_gpus`` they need are read by all of them at once, so the ceiling is that many times
    one GPU's, while pipeline stages read theirs in turn and stay at one GPU's."""
    one = fit.decode_ceiling_tokens_per_s
    if one is None:
        return ""
    if fit.fits_one_gpu or fit.min_gpus <= 1:
        return f"; batch-1 decode is capped near {one:,.0f} tokens/s by memory bandwidth"
    return (f"; batch-1 decode is capped by memory bandwidth near {one * fit.min_gpus:,.0f} tokens/s with the "
            f"weights split by tensor parallelism over {fit.min_gpus} GPUs (near {one:,.0f} in pipeline stages, "
            f"which read in turn)")


def workload_statements(workload: Workload, fits: tuple[WorkloadFit, WorkloadFit]) -> list[str]:
    # GiB, as the table above (and the GPU's driver) gives its memory: an H100's 79.18 GiB written as decimal GB
    # (85.0 GB) read as more than its 80 GB
    size_gib = workload.resident_bytes / GIB
    out = []
    for fit in fits:
        if fit.fits_one_gpu:
            where = (
                f"by themselves fit on one {fit.gpu} ({fit.memory_bytes / GIB:,.1f} GiB), leaving "
                f"{(fit.memory_bytes - fit.resident_bytes) / GIB:,.1f} GiB for "
                + ("KV cache, activations and runtime" if workload.task == "inference" else "activations and runtime")
            )
        elif workload.task == "inference":
            where = f"do not fit on one {fit.gpu}; they need at least {fit.min_gpus} GPUs (tensor or pipeline parallel)"
        elif workload.task == "diffusion":
            where = (
                f"do not fit on one {fit.gpu}; a diffusion pipeline runs whole on each GPU, so it needs a larger GPU, "
                f"quantized weights or components offloaded to CPU"
            )
        else:
            where = (
                f"do not fit on one {fit.gpu}; fully sharded (ZeRO-3/FSDP) they need at least {fit.min_gpus} GPUs, "
                f"and plain data parallelism never helps (each replica holds them all)"
            )
        decode = _decode_ceiling(fit)
        out.append(f"{workload.name}: {workload.resident_label} take {size_gib:,.1f} GiB and {where}{decode}.")
    if workload.task == "inference":
        out.append("Weights only: KV cache, activations and runtime overhead come on top; run 'anchorgpu plan' for the full per-GPU budget.")
    elif workload.task == "diffusion":
        out.append("Weights only: denoiser activations, the VAE decode peak and runtime overhead come on top; run 'anchorgpu plan' for the full per-GPU budget.")
    elif workload.task in ("lora", "qlora"):
        out.append("Frozen base weights only: the adapters and their optimizer states, activations, buffers and runtime overhead come on top; run 'anchorgpu plan' for the full per-GPU budget.")
    else:
        out.append("Model states only: activations, buffers and runtime overhead come on top; run 'anchorgpu plan' for the full per-GPU budget.")
    return out
