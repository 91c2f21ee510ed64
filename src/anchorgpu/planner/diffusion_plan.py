"""Memory of a diffusion pipeline generating images (task diffusion): its components, the denoiser's and the
VAE decode's activation peaks, with or without model CPU offload. Pure; the formulas are in
:mod:`anchorgpu.planner.diffusion`."""

from __future__ import annotations

import math

from anchorgpu.architectures.spec import DiffusionPipelineSpec
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner import diffusion as dm
from anchorgpu.planner._frozen import evolve
from anchorgpu.planner.formats import WeightFormat
from anchorgpu.planner.inputs import Overheads, Workload
from anchorgpu.planner.result import ResolvedLayout, new_memory_breakdown
from anchorgpu.planner.terms import TaskTerms, context_bytes, new_task_terms
from anchorgpu.units import fmt_bytes

__all__ = ["plan_diffusion"]


def plan_diffusion(pipe: DiffusionPipelineSpec, gpu: GpuSpec | None, w: Workload, fmt: WeightFormat,
               lay: ResolvedLayout, ov: Overheads, assumptions: list[str]) -> TaskTerms:
    width, height = w.resolution or pipe.default_resolution
    if w.resolution is None:
        assumptions.append(f"Resolution not given: the pipeline's default {width}x{height}.")
    sizes = {c.name: dm.component_bytes(c, fmt) for c in pipe.components}
    denoise_act = dm.denoiser_activation_bytes(pipe, width=width, height=height, images=w.images)
    decode = dm.vae_decode_bytes(width=width, height=height, images=w.images, tiling=w.vae_tiling)
    denoiser = sum(sizes[c.name] for c in pipe.components if c.role == "denoiser")
    vae = sum(sizes[c.name] for c in pipe.components if c.role == "vae")
    breakdown: dict[str, int] = {f"component_{name}_bytes": size for name, size in sizes.items()}
    breakdown.update(denoiser_activation_bytes=denoise_act, vae_decode_peak_bytes=decode)
    if lay.offload == "params":
        # model CPU offload: one component on the GPU at a time
        phases = {"denoise": denoiser + denoise_act, "decode": vae + decode,
                  "encode": max((sizes[c.name] for c in pipe.components if c.role == "text_encoder"), default=0)}
        peak_phase = max(phases, key=lambda k: phases[k])
        weights = {"denoise": denoiser, "decode": vae, "encode": phases["encode"]}[peak_phase]
        act = phases[peak_phase] - weights
        assumptions.append("Model CPU offload: each component moves to the GPU only for its phase.")
    else:
        weights = sum(sizes.values())
        peak_phase = "denoise" if denoise_act >= decode else "decode"
        act = max(denoise_act, decode)
        assumptions.append("All components resident; text encoders and VAE in 16 bit.")
    breakdown["peak_phase_is_decode"] = 1 if peak_phase == "decode" else 0
    assumptions.append(
        f"Reported peak is the larger phase: {'VAE decode' if peak_phase == 'decode' else 'denoising'} "
        f"(denoiser activations {fmt_bytes(denoise_act)}, VAE decode {fmt_bytes(decode)}"
        f"{', tiled' if w.vae_tiling else ''}).")
    context = context_bytes(gpu, ov)
    fragmentation = math.ceil((weights + act) * ov.fragmentation_fraction)
    breakdown.update(cuda_context_bytes=context, cublas_workspace_bytes=ov.cublas_workspace_bytes,
                     fragmentation_bytes=fragmentation)
    per_gpu = new_memory_breakdown(weights_bytes=weights, kv_cache_bytes=0, activations_bytes=act, gradients_bytes=0,
                                   optimizer_bytes=0,
                                   overhead_bytes=context + ov.cublas_workspace_bytes + fragmentation)
    return new_task_terms(per_gpu=per_gpu, breakdown=breakdown,
                          budget_bytes=gpu.memory_bytes if gpu is not None else None,
                          workload=evolve(w, resolution=(width, height)))
