"""The one registry of planner warning codes. Pure; stdlib only.

Every warning the planner emits has a stable ``code`` (API clients, the web page and the glossary rely
on it) and names the glossary concept that explains it (``concept``, a glossary entry id). Codes are
never renamed; new ones are added here and nowhere else. :func:`make_warning` refuses unknown codes,
so a typo cannot reach a user.
"""

from __future__ import annotations

from dataclasses import dataclass

from anchorgpu.errors import said
from anchorgpu.planner._frozen import builder, fast_init

__all__ = ["NO_CHANGE_FITS_CHECK", "NO_COUNT_FITS_CHECK", "WARNING_CODES", "PlanWarning", "WarningCode", "make_warning"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WarningCode:
    """A registered warning: its code, the glossary concept it names, and what the user should check."""

    code: str
    concept: str  # glossary entry id
    check: str  # the thing the user must still verify (one line, shown under "checks")


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class PlanWarning:
    """One warning attached to a plan: a registered code and a one-line message about this plan."""

    code: str
    message: str

    @property
    def concept(self) -> str:
        return WARNING_CODES[self.code].concept


_new_warning = builder(PlanWarning)  # PlanWarning(...) without the class call (a plan makes one or more)


def _registry(*entries: WarningCode) -> dict[str, WarningCode]:
    return {entry.code: entry for entry in entries}


WARNING_CODES: dict[str, WarningCode] = _registry(
    WarningCode(
        code="ddp_no_memory_pooling", concept="data-parallelism",
        check=said("Data-parallel replicas each hold a full copy: memory does not pool across GPUs."),
    ),
    WarningCode(
        code="attention_dp_replicas", concept="expert-parallelism",
        check="Attention data-parallel replicas each hold the attention and dense layers whole and their own "
              "sequences' KV cache; only the routed experts are split: confirm your engine runs this model with "
              "attention data parallelism (vLLM --data-parallel-size with --enable-expert-parallel, SGLang "
              "--enable-dp-attention, TensorRT-LLM enable_attention_dp).",
    ),
    WarningCode(
        code="tp_requires_engine_support", concept="tensor-parallelism",
        check=said("Confirm your serving engine or training framework supports tensor parallelism for this model."),
    ),
    WarningCode(
        code="pp_requires_engine_support", concept="pipeline-parallelism",
        check=said("Confirm your engine or framework supports pipeline parallelism for this model."),
    ),
    WarningCode(
        code="ep_requires_engine_support", concept="expert-parallelism",
        check=said("Confirm your engine supports expert parallelism for this MoE model."),
    ),
    WarningCode(
        code="tp_over_pcie", concept="nvlink",
        check=said("Tensor parallelism over PCIe-only GPUs is slow: every layer all-reduces over PCIe."),
    ),
    WarningCode(
        code="training_over_public_network", concept="data-parallelism",
        check="Its GPUs sit in separate servers (single-GPU VMs, or servers without a fabric) joined only by each "
              "server's public uplink: every step's gradient and parameter traffic crosses that link, timed at the "
              "uplink the row names. It is not one server of as many GPUs "
              "(`anchorgpu plan --gpus N` plans that: GPUs linked inside one machine): run a short job across "
              "these servers before relying on its speed.",
    ),
    WarningCode(
        code="tp_across_nodes", concept="tensor-parallelism",
        check=said("Tensor parallelism beyond one 8-GPU server crosses the network: prefer PP or DP across nodes."),
    ),
    WarningCode(
        code="fp8_without_hardware", concept="fp8",
        check=said("This GPU has no FP8 tensor cores: FP8 runs as weight-only with dequantization, or not at all."),
    ),
    WarningCode(
        code="fp4_weight_only_emulation", concept="fp4",
        check=said("Native FP4 math exists only on Blackwell and MI355X: elsewhere FP4 weights are dequantized."),
    ),
    WarningCode(
        code="rocm_cuda_only_dependency", concept="rocm",
        check=said("On AMD GPUs check that every dependency (kernels, quantization libraries) has a ROCm build."),
    ),
    WarningCode(
        code="quantization_quality_unchecked", concept="quantization",
        check=said("Check output quality after quantization on your own evaluation set."),
    ),
    WarningCode(
        code="precision_below_checkpoint", concept="quantization",
        check=said("Weights or KV cache below the checkpoint's precision change the outputs: rerun your evaluations."),
    ),
    WarningCode(
        code="kernel_support_unchecked", concept="quantization",
        check=said("Check that your engine has kernels for this weight or cache format on this GPU."),
    ),
    WarningCode(
        code="checkpoint_restore_unverified", concept="checkpointing",
        check=said("Verify that a saved checkpoint restores (and resumes training) before relying on it."),
    ),
    WarningCode(
        code="eager_activations_exceed_headroom", concept="activations",
        check=said("The headroom may not hold what an eager PyTorch stack keeps: compile the model "
                   "(torch.compile), recompute activations or take a smaller micro-batch before training with "
                   "transformers."),
    ),
    WarningCode(
        code="thin_training_headroom", concept="vram",
        check=said("The plan fits with less room than its measured error: run a few steps with "
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True and watch torch.cuda.max_memory_reserved before "
                   "the full run, or keep a layout with more room (recompute, a smaller micro-batch, more GPUs) at "
                   "hand."),
    ),
    WarningCode(
        code="package_is_several_devices", concept="tensor-parallelism",
        check="Each device of the package is its own GPU to the runtime: launch the planned TP times the devices a "
              "package, and check one device holds its share of the per-GPU total.",
    ),
    WarningCode(
        code="partial_gpu_not_offered", concept="mig",
        check=said("AnchorGPU rents whole GPUs only: no MIG slices, vGPU or time-slicing."),
    ),
    WarningCode(
        code="does_not_fit", concept="vram",
        check=said("The per-GPU total exceeds the GPU's memory: see the suggestions."),
    ),
    WarningCode(
        code="weights_exceed_engine_budget", concept="kv-cache",
        check=said("Weights and activations leave no room for the KV cache inside the engine's memory budget."),
    ),
    WarningCode(
        code="context_beyond_model_limit", concept="context-window",
        check=said("The context exceeds the model's trained length: quality beyond it is not guaranteed."),
    ),
    WarningCode(
        code="zero_without_data_parallel", concept="zero",
        check=said("ZeRO/FSDP shard over the data-parallel and context-parallel ranks: with one of each they save nothing."),
    ),
    WarningCode(
        code="offload_slows_training", concept="offloading",
        check=said("CPU offload moves state over PCIe every step: expect slower steps and check host RAM."),
    ),
    WarningCode(
        code="memory_total_unsourced", concept="vram",
        check="No total reported by the CUDA or ROCm runtime is sourced for this GPU, so it is planned on the vendor's "
              "figure; where the runtime's total is sourced it reports less than that figure (the driver keeps "
              "part of it): read the total on your GPU (torch.cuda.mem_get_info) and keep that much "
              "headroom.",
    ),
    WarningCode(
        code="no_gpu_given", concept="vram",
        check=said("No GPU was named, so fit, headroom and the KV-cache budget were not evaluated."),
    ),
)

NO_CHANGE_FITS_CHECK = said("The per-GPU total exceeds the GPU's memory and no single change tried (recompute, "
                            "ZeRO-3, TP, CP, more GPUs, offload, a shorter sequence) makes it fit: drop the layout "
                            "flags to have one chosen, or take GPUs with more memory.")
"""The does_not_fit check where "What would fit" has nothing to offer (the registered one points at suggestions)."""

NO_COUNT_FITS_CHECK = said("The per-GPU total exceeds the GPU's memory on every GPU count the planner tries without "
                           "--gpus and no single change tried makes it fit: pass --gpus for more GPUs, or take GPUs "
                           "with more memory.")
""":data:`NO_CHANGE_FITS_CHECK` where no layout flag was given and the planner chose the GPU count: no flag to drop."""


def make_warning(code: str, message: str) -> PlanWarning:
    """A :class:`PlanWarning` for a registered ``code``; unknown codes are a programming error.

    >>> make_warning("tp_over_pcie", "TP 4 over PCIe").concept
    'nvlink'
    """
    if code not in WARNING_CODES:
        raise KeyError(f"unregistered planner warning code {code!r}")
    one_line = " ".join(message.split())
    return _new_warning(code=code, message=message if one_line == message else one_line)  # a said() line kept whole
