"""Which MoE kernel TensorRT-LLM runs a mixture of experts' routed experts with (its ``moe_config.backend``), as
TensorRT-LLM chooses it, and what that changes in a serving step. Pure; stdlib only.

TensorRT-LLM's PyTorch flow builds the MoE layer from ``moe_config.backend`` (``tensorrt_llm/_torch/modules/fused_moe/
create_moe.py`` ``get_moe_cls`` @ NVIDIA/TensorRT-LLM 01f8de5): ``CUTLASS`` -> ``CutlassFusedMoE``; ``TRTLLM`` ->
``TRTLLMGenFusedMoE`` (the TRTLLM-gen kernels, Blackwell) where the weights are FP8 in blocks, NVFP4, W4A16 MXFP4 or
W4A8 MXFP4/NVFP4, and ``CutlassFusedMoE`` otherwise (a logged fallback); ``TRITON`` -> ``TritonFusedMoE``. The
default was ``CUTLASS`` (``MoeConfig.backend`` in ``tensorrt_llm/llmapi/llm_args.py`` before ``AUTO``); ``AUTO`` (the
default since) resolves in ``ModelConfig.resolve_moe_backend`` (``tensorrt_llm/_torch/model_config.py`` @
NVIDIA/TensorRT-LLM 008e0af): for ``GptOssForCausalLM`` ``TRTLLM`` on SM 100-119 (Blackwell), ``TRITON`` on SM 90-99
(Hopper), ``CUTLASS`` elsewhere; ``CUTLASS`` for the other architectures of the release that introduced it (the
planner's rule). That commit also sends FP8-block checkpoints on SM 100 (DeepSeek-R1), DeepSeek-V4 and Kimi K3 to
``TRTLLM`` and W4A16 NVFP4 to CuTe DSL / Marlin: not followed here (the rows of those models predate it and state
no backend). InferenceMAX's gpt-oss recipe on B200 states ``moe_config.backend: TRTLLM`` (InferenceMAX/InferenceMAX
``benchmarks/gptoss_fp4_b200_trt_slurm.sh`` @ cc9bed4).

What the planner times differently: once every expert is touched the TRTLLM-gen kernel's measured layer time barely
rises with the rows (memory-bound on the experts' weights), so its routed products take the small-row falloff read
from AIConfigurator's table of that kernel (``cal.trtllm_gen_moe_expert_half_tokens``, 54 on B200) in place of the
fitted one (140, set by the CUTLASS rows; benchmarks/trtllm_gptoss_findings.md, branch moebackend). CUTLASS and
Triton keep the fitted ``moe_expert_half_tokens``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from anchorgpu.errors import InvalidWorkload, said

if TYPE_CHECKING:
    from anchorgpu.architectures.spec import ModelSpec
    from anchorgpu.hardware.spec import GpuSpec
    from anchorgpu.planner.speed.constants import Calibration

__all__ = ["CUTLASS", "MOE_BACKENDS", "TRITON", "TRTLLM_GEN", "VLLM_MARLIN", "expert_half_tokens",
           "marlin_expert_rate", "moe_backend_line", "requested_moe_backend", "trtllm_moe_backend",
           "vllm_marlin_line", "vllm_moe_backend"]

CUTLASS, TRTLLM_GEN, TRITON, VLLM_MARLIN = "cutlass", "trtllm-gen", "triton", "vllm-marlin"
# moe_config.backend as TensorRT-LLM spells it -> the kernel family the planner names
MOE_BACKENDS: dict[str, str] = {"CUTLASS": CUTLASS, "TRTLLM": TRTLLM_GEN, "TRITON": TRITON}
# weight formats TRTLLMGenFusedMoE takes (create_moe.get_moe_cls: fp8 block scales, nvfp4, w4a16/w4a8 mxfp4);
# the planner's names, by prefix
_TRTLLM_GEN_FORMATS = ("mxfp4", "nvfp4", "fp8-block")


def trtllm_moe_backend(model: ModelSpec, gpu: GpuSpec | None, weights: str | None, stated: str | None = None) -> str:
    """The MoE kernel TensorRT-LLM runs ``model``'s routed experts with on ``gpu`` in the weight format ``weights``:
    ``stated`` (``moe_config.backend``: ``"TRTLLM"``, ``"CUTLASS"``, ``"TRITON"``, or ``"AUTO"``/None for the
    default's choice), resolved as TensorRT-LLM resolves it (module docstring); ``""`` for a dense model. A format
    TRTLLM-gen does not take falls back to CUTLASS, as the engine does.

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.hardware import get_gpu
    >>> oss = load_model("gpt-oss-120b")
    >>> trtllm_moe_backend(oss, get_gpu("b200"), "mxfp4"), trtllm_moe_backend(oss, get_gpu("h200"), "mxfp4")
    ('trtllm-gen', 'triton')
    >>> trtllm_moe_backend(load_model("qwen3-30b-a3b"), get_gpu("b200"), "nvfp4")  # AUTO: CUTLASS off gpt-oss
    'cutlass'
    >>> trtllm_moe_backend(oss, get_gpu("b200"), "bf16", "TRTLLM")  # not a format TRTLLM-gen takes
    'cutlass'
    """
    if model.moe is None:
        return ""
    backend = requested_moe_backend(model, gpu, stated)
    if backend == TRTLLM_GEN and not (weights or "").startswith(_TRTLLM_GEN_FORMATS):
        return CUTLASS
    return backend


def requested_moe_backend(model: ModelSpec, gpu: GpuSpec | None, stated: str | None = None) -> str:
    """The MoE kernel ``moe_config.backend`` asks for (``stated``, or AUTO's choice for ``model`` on ``gpu``), before
    :func:`trtllm_moe_backend` falls back from TRTLLM-gen on a weight format it does not take.

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.hardware import get_gpu
    >>> requested_moe_backend(load_model("gpt-oss-120b"), get_gpu("b200"))
    'trtllm-gen'
    """
    name = (stated or "AUTO").upper()
    if name == "AUTO":
        major = _sm_major(gpu)
        if model.model_type != "gpt_oss" or major is None:
            name = "CUTLASS"
        else:
            name = "TRTLLM" if 10 <= major < 12 else "TRITON" if major == 9 else "CUTLASS"
    if name not in MOE_BACKENDS:
        raise InvalidWorkload(said("moe_backend {stated!r}: one of {MOE_BACKENDS} or AUTO", stated=stated,
                                   MOE_BACKENDS=', '.join(MOE_BACKENDS)))
    return MOE_BACKENDS[name]


def expert_half_tokens(backend: str, gpu: GpuSpec | None, fitted: float, cal: Calibration) -> float:
    """The routed products' small-row falloff (``expert_rows_factor``'s ``half_tokens``) under ``backend``: the
    TRTLLM-gen kernel's measured figure for the GPU's compute capability
    (``cal.trtllm_gen_moe_expert_half_tokens``) where there is one, else ``fitted`` (the calibration's
    ``moe_expert_half_tokens``).

    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> expert_half_tokens("cutlass", get_gpu("b200"), 140.0, calibration())
    140.0
    >>> expert_half_tokens("trtllm-gen", get_gpu("b200"), 140.0, calibration())  # AIConfigurator's table
    54.0
    """
    if gpu is None or gpu.compute_capability is None:
        return fitted
    if backend == VLLM_MARLIN:
        return cal.vllm_marlin_moe_expert_half_tokens.get(gpu.compute_capability, fitted)
    if backend != TRTLLM_GEN:
        return fitted
    return cal.trtllm_gen_moe_expert_half_tokens.get(gpu.compute_capability, fitted)


def vllm_moe_backend(model: ModelSpec, weights: str | None, stated: str | None, gpu: GpuSpec | None = None) -> str:
    """The MoE kernel vLLM runs ``model``'s routed experts with in the weight format ``weights``: ``"vllm-marlin"``
    for MXFP4 experts where ``stated`` is ``"MARLIN"``, or where it is left to vLLM (None or AUTO) on a CUDA ``gpu``
    below compute capability 9.0, where vLLM always picks it (``get_mxfp4_backend``:
    ``current_platform.get_device_capability()[0] < 9`` -> ``Mxfp4Backend.MARLIN``; it also takes it under
    ``VLLM_MXFP4_USE_MARLIN`` or where the ``triton_kernels`` package is absent, which vLLM 0.11.0 did not install,
    PR #27370: vllm-project/vllm ``vllm/model_executor/layers/quantization/mxfp4.py`` @
    afdb4a4ff429377d0fcfac3752e814ffc36ea41d); else ``""``: vLLM's other kernels, timed at the planner's rates.
    ``""`` for a dense model.

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.hardware import get_gpu
    >>> oss = load_model("gpt-oss-20b")
    >>> vllm_moe_backend(oss, "mxfp4", "MARLIN"), vllm_moe_backend(oss, "mxfp4", None), vllm_moe_backend(oss, "bf16", "MARLIN")
    ('vllm-marlin', '', '')
    >>> [vllm_moe_backend(oss, "mxfp4", None, get_gpu(g)) for g in ("a100", "l40s", "h100", "mi300x")]
    ['vllm-marlin', 'vllm-marlin', '', '']
    """
    if model.moe is None:
        return ""
    if stated is not None and stated.upper() not in ("AUTO", "MARLIN"):
        raise InvalidWorkload(said("moe_backend {stated!r} on vLLM: MARLIN or AUTO", stated=stated))
    if not (weights or "").startswith("mxfp4"):
        return ""
    if stated is None or stated.upper() == "AUTO":
        major = _sm_major(gpu)
        return VLLM_MARLIN if major is not None and major < 9 else ""
    return VLLM_MARLIN


def marlin_expert_rate(backend: str, gpu: GpuSpec | None, bf16_flops_per_s: float, cal: Calibration) -> float:
    """The rate the routed experts' products reach with many rows an expert on vLLM's Marlin kernel: its measured
    share of the GPU's BF16 peak (``cal.vllm_marlin_moe_peak_share`` by compute capability) times that peak; 0.0 for
    another backend or a GPU family without a figure (the planner's own rates then).

    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> round(marlin_expert_rate("vllm-marlin", get_gpu("h100-sxm"), 989e12, calibration()) / 1e12)  # AIConfigurator
    228
    >>> round(marlin_expert_rate("vllm-marlin", get_gpu("a100-80gb-sxm"), 312e12, calibration()) / 1e12)  # SGLang's
    134
    >>> marlin_expert_rate("vllm-marlin", get_gpu("l40s"), 362e12, calibration())  # no SM 8.9 table read
    0.0
    """
    if backend != VLLM_MARLIN or gpu is None or gpu.compute_capability is None:
        return 0.0
    return cal.vllm_marlin_moe_peak_share.get(gpu.compute_capability, 0.0) * bf16_flops_per_s


def vllm_marlin_line(gpu: GpuSpec | None, fitted: float, cal: Calibration, stated: str | None) -> str:
    """The assumption a vLLM plan whose routed experts run on the Marlin kernel (:func:`vllm_moe_backend`) makes:
    why Marlin (``stated`` MARLIN, or vLLM's own choice below compute capability 9.0) and the rate its products are
    timed at (the measured one where ``cal.vllm_marlin_moe_peak_share`` holds the GPU's family, else the planner's).

    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> print(vllm_marlin_line(get_gpu("h100-sxm"), 140.0, calibration(), "MARLIN"))  # doctest: +ELLIPSIS
    MoE kernel: vLLM runs the routed experts with its Marlin kernel ... reaches 23% of the BF16 peak ... at 22 rows
    >>> print(vllm_marlin_line(get_gpu("l40s"), 140.0, calibration(), None))  # doctest: +ELLIPSIS
    MoE kernel: ... below compute capability 9.0 (get_mxfp4_backend; this GPU's is 8.9); no measured table ...
    """
    cc = gpu.compute_capability if gpu is not None else None
    share = cal.vllm_marlin_moe_peak_share.get(cc or "", 0.0)
    half = expert_half_tokens(VLLM_MARLIN, gpu, fitted, cal)
    why = ("as moe_backend MARLIN states (vLLM's choice for MXFP4 experts where triton_kernels is absent)"
           if stated is not None and stated.upper() == "MARLIN" else
           f"its choice for MXFP4 experts below compute capability 9.0 (get_mxfp4_backend; this GPU's is {cc})")
    how = (f"on this GPU family AIConfigurator's measured table of it reaches {share:.0%} of the BF16 peak with many "
           f"rows an expert, half that at {half:g} rows" if share else
           "no measured table of it for this GPU family, so its products are timed at the planner's usual MoE rate")
    return ("MoE kernel: vLLM runs the routed experts with its Marlin kernel (fused_marlin_moe: the MXFP4 weights "
            f"dequantized to BF16 inside the kernel), {why}; {how}")


_KERNELS = {TRTLLM_GEN: "TRTLLM-gen kernels (TRTLLMGenFusedMoE)", CUTLASS: "CUTLASS kernels (CutlassFusedMoE)",
            TRITON: "Triton kernels (TritonFusedMoE)"}


def moe_backend_line(backend: str, stated: str | None, gpu: GpuSpec | None, fitted: float, cal: Calibration, *,
                     requested: str | None = None, weights: str | None = None) -> str:
    """The assumption a TensorRT-LLM plan of a mixture of experts states about its MoE kernel: which one, why, and
    the small-row falloff its routed products are timed at. ``requested``: the kernel ``moe_config.backend`` asked
    for (:func:`requested_moe_backend`); where it is TRTLLM-gen and ``backend`` is not, the line says that the engine
    fell back because TRTLLM-gen takes no ``weights`` weights (``create_moe.get_moe_cls``, a logged warning).

    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> print(moe_backend_line("trtllm-gen", None, get_gpu("b200"), 140.4, calibration()))  # doctest: +ELLIPSIS
    MoE kernel: TensorRT-LLM runs the routed experts with its TRTLLM-gen kernels (TRTLLMGenFusedMoE), its AUTO ...
    >>> print(moe_backend_line("cutlass", None, get_gpu("b200"), 140.4, calibration(), requested="trtllm-gen",
    ...                        weights="bf16"))  # doctest: +ELLIPSIS
    MoE kernel: ... CUTLASS kernels (CutlassFusedMoE): its AUTO choice ... is TRTLLM, whose TRTLLM-gen kernels take no bf16 ...
    """
    why = (f"as moe_config.backend {stated} states" if stated and stated.upper() != "AUTO" else
           "its AUTO choice for this model, GPU and weight format (moe_config.backend; TRTLLM for gpt-oss on "
           "Blackwell, TRITON on Hopper, CUTLASS otherwise)")
    if requested == TRTLLM_GEN and backend != TRTLLM_GEN:
        asked = (f"moe_config.backend {stated} asks for TRTLLM" if stated and stated.upper() != "AUTO" else
                 "its AUTO choice for gpt-oss on Blackwell (moe_config.backend) is TRTLLM")
        why = (f"{asked}, whose TRTLLM-gen kernels take no {weights or 'unquantized'} weights (only FP8 in blocks, "
               "NVFP4 or MXFP4), so TensorRT-LLM falls back to CUTLASS (create_moe.get_moe_cls: 'Using "
               "CutlassFusedMoE instead')")
        return _line(backend, why, gpu, fitted, cal, sep=": ")
    return _line(backend, why, gpu, fitted, cal)


def _line(backend: str, why: str, gpu: GpuSpec | None, fitted: float, cal: Calibration, *, sep: str = ", ") -> str:
    half = expert_half_tokens(backend, gpu, fitted, cal)
    how = (f"their products slow with few rows an expert as AIConfigurator's measured table of that kernel shows (half "
           f"speed at {half:g} rows, where the CUTLASS rows' fit gives {fitted:.0f})" if half != fitted else
           f"their products slow with few rows an expert as the CUTLASS rows' fit has it (half speed at {fitted:.0f} "
           f"rows)")
    return f"MoE kernel: TensorRT-LLM runs the routed experts with its {_KERNELS[backend]}{sep}{why}; {how}"


def _sm_major(gpu: GpuSpec | None) -> int | None:
    if gpu is None or not gpu.compute_capability:
        return None
    return int(gpu.compute_capability.split(".")[0])
