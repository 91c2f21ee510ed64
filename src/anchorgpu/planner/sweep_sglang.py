"""SGLang's own step terms over the serving sweep's grid (:mod:`anchorgpu.planner.sweep_serving`), as
:func:`anchorgpu.planner.speed.serving_plan.sglang_step_terms` gives them to one plan: a decode-only step runs the
smallest CUDA graph SGLang captured that holds its batch (padding rows that multiply the weights but read no KV
cache), eagerly above ``cuda_graph_max_bs``; on AMD GPUs an FP8 MLA model's absorbed latent weights are dequantised
every step (two kernels more before each absorbed product, and their bytes). In numpy, each term once per distinct
value; ``tests/recommend`` holds the sweep to ``plan``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.inputs import (
    DEFAULT_GPU_MEMORY_UTILIZATION,
    Workload,
    block_size_of,
    engine_limits,
    large_engine_defaults,
)
from anchorgpu.planner.sglang import (
    cuda_graph_max_bs,
    decode_graph_batch_sizes,
    dequantises_absorbed_weights,
    sglang_gpu_memory_bytes,
    sglang_settings,
)
from anchorgpu.planner.speed.launches import LayerLaunches, absorbed_dequant_bytes, launch_ratio

if TYPE_CHECKING:
    from anchorgpu.planner.sweep import HardwareShape
    from anchorgpu.planner.sweep_grid import Layouts

__all__ = ["absorbed_dequant_terms", "graph_max_batch", "padded_rows", "sglang_sweep_line", "vllm_sweep_line"]

FloatArray = npt.NDArray[np.float64]


def graph_max_batch(shapes: Sequence[HardwareShape], lay: Layouts) -> FloatArray:
    """SGLang's ``cuda_graph_max_bs`` per layout ``(L,)``: :func:`~anchorgpu.planner.sglang.cuda_graph_max_bs` once
    per distinct (GPU shape, TP) (the sweep's layouts have no attention DP: it plans those one by one)."""
    keys, inverse = np.unique(lay.shape * 4096 + lay.tp, return_inverse=True)
    max_bs = [cuda_graph_max_bs(sglang_gpu_memory_bytes(shapes[k // 4096].gpu), k % 4096) for k in keys.tolist()]
    return np.array(max_bs, dtype=np.float64)[inverse]


def padded_rows(batch: FloatArray, max_bs: FloatArray) -> FloatArray:
    """The rows a decode-only step of ``batch`` sequences a replica multiplies ``(C, L)``: the smallest captured
    graph that holds it (:func:`~anchorgpu.planner.sglang.decode_graph_batch_sizes` up to the layout's ``max_bs``,
    which is always captured), the batch itself above ``max_bs`` (run eagerly). The sizes below any ``max_bs`` are
    the same list, so one list, the largest ``max_bs``'s, serves every layout, capped at its own.

    >>> padded_rows(np.array([[1.0, 9.0, 13.0, 161.0, 200.0, 300.0]]), np.array([160.0, 160.0, 160.0, 160.0, 512.0, 256.0]))
    array([[  1.,  12.,  16., 161., 200., 300.]])
    """
    sizes = np.array(decode_graph_batch_sizes(int(max_bs.max())), dtype=np.float64)
    first = sizes[np.minimum(np.searchsorted(sizes, batch), sizes.size - 1)]
    return np.where(batch <= max_bs, np.maximum(batch, np.minimum(first, max_bs)), batch)


def absorbed_dequant_terms(model: ModelSpec, shapes: Sequence[HardwareShape], lay: Layouts, weights: tuple[str, ...],
                           launches: LayerLaunches, block_fp8: Sequence[bool], bw_mbu: FloatArray
                           ) -> tuple[FloatArray, FloatArray] | None:
    """Where SGLang dequantises the absorbed weights: per (layout, format) ``(L, W)``, the launch ratio of a layer
    with the dequantising kernels (else the format's own) and the seconds the dequantisation's bytes take at the
    decode bandwidth ``bw_mbu`` (``(L,)``) on one stage (else 0), as ``speed.step_constants`` adds them to a step's
    fixed cost; None where no layout and format of the grid dequantises."""
    amd = np.array([sh.gpu.vendor == "AMD" for sh in shapes])[lay.shape]
    fp8 = np.array([dequantises_absorbed_weights("AMD", model.mla is not None, name) for name in weights])
    applies = amd[:, None] & fp8[None, :]
    if not applies.any():
        return None
    plain = np.array([launch_ratio(model, launches, block_fp8=b) for b in block_fp8])
    dequant = np.array([launch_ratio(model, launches, block_fp8=b, absorbed_dequant=True) for b in block_fp8])
    ratio = np.where(applies, dequant[None, :], plain[None, :])
    tps, tp_row = np.unique(lay.tp, return_inverse=True)
    bytes_l = np.array([absorbed_dequant_bytes(model, int(tp)) for tp in tps.tolist()])[tp_row]
    seconds = np.where(applies, (bytes_l / lay.pp / bw_mbu)[:, None], 0.0)
    return ratio, seconds


def sglang_sweep_line(shapes: Sequence[HardwareShape], lay: Layouts, workload: Workload, mla: bool) -> str:
    """The serving-engine assumption of a sweep for SGLang: its settings differ by GPU and layout (its memory and TP
    set the prefill chunk, the largest decode graph and the reserve ``mem_fraction_static`` leaves), so the line
    states the rule and the range its layouts span (plan's line names one GPU's values).

    >>> from anchorgpu.planner.sweep import HardwareShape
    >>> from anchorgpu.planner.sweep_grid import layout_grid
    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.architectures import load_model
    >>> shapes = [HardwareShape(id="h100-8x", gpu=get_gpu("h100"), gpus_per_server=8, max_servers=1)]
    >>> line = sglang_sweep_line(shapes, layout_grid(load_model("llama-3.1-8b"), shapes, training=False, max_pp=1,
    ...                          zero_stages=(0,)), Workload(engine="sglang"), mla=False)
    >>> "(0.812 to 0.83 here)" in line, "chunked_prefill_size 8192 and cuda_graph_max_bs 256 to 512" in line
    (True, True)
    """
    plain = lay.ep == 1  # the attention-DP layouts (EP over the server) are planned whole, each by plan
    keys = np.unique((lay.shape[plain] * 4096 + lay.tp[plain]) * 4096 + lay.pp[plain]).tolist()
    given = workload.gpu_memory_utilization
    settings = [sglang_settings(sglang_gpu_memory_bytes(shapes[k // 4096 // 4096].gpu), tp=k // 4096 % 4096, pp=k % 4096,
                                chunked_prefill_size=workload.max_num_batched_tokens, mla=mla,
                                mem_fraction_static=given) for k in keys]

    def span(values: Sequence[float]) -> str:
        low, high = min(values), max(values)
        return f"{low:g}" if low == high else f"{low:g} to {high:g}"

    fraction = (f"mem_fraction_static {given:g} (given)" if given is not None else
                "mem_fraction_static SGLang's default for each GPU and layout, 1 - its reserve for activations and "
                f"CUDA graphs over the GPU's memory as nvidia-smi reports it, the runtime total where no such figure is "
                f"sourced ({span([s.mem_fraction_static for s in settings])} here)")
    seqs = ("max_running_requests as given" if workload.max_num_seqs is not None else
            "max_running_requests its default: half the KV pool's tokens, at most its request pool")
    return (f"Serving engine sized like SGLang on each GPU and layout, as plan sizes it: {fraction} of the memory free "
            f"at start holds the weights and the KV pool; chunked_prefill_size "
            f"{span([s.chunked_prefill_size for s in settings])} and cuda_graph_max_bs "
            f"{span([s.cuda_graph_max_bs for s in settings])} by the GPU's memory and TP; {seqs}; KV pool in one-token "
            "slots (page_size 1).")


def vllm_sweep_line(shapes: Sequence[HardwareShape], workload: Workload) -> str | None:
    """The serving-engine assumption of a sweep for vLLM where its scheduler defaults differ across the GPUs swept
    (:func:`~anchorgpu.planner.inputs.large_engine_defaults`: 8,192 tokens and 1,024 sequences on GPUs of at least
    70 GiB but the A100, 2,048 and 256 elsewhere): the rule and the values the swept GPUs got; None where one set of
    values holds them all (plan's line is right as it is).

    >>> from anchorgpu.planner.sweep import HardwareShape
    >>> from anchorgpu.hardware import get_gpu
    >>> shapes = [HardwareShape(id=g, gpu=get_gpu(g), gpus_per_server=1, max_servers=1) for g in ("h100", "l40s")]
    >>> vllm_sweep_line(shapes, Workload()).split("swept ")[1]
    '8,192 and 1,024 on h100-sxm; 2,048 and 256 on l40s; gpu_memory_utilization 0.9, KV block 16 tokens.'
    >>> vllm_sweep_line(shapes[:1], Workload()) is None, vllm_sweep_line(shapes, Workload(max_num_batched_tokens=4096,
    ...                                                                   max_num_seqs=128)) is None
    (True, True)
    """
    limits: dict[tuple[int, int], list[str]] = {}
    for sh in shapes:
        names = limits.setdefault(engine_limits(workload, large_gpu=large_engine_defaults(sh.gpu)), [])
        if sh.gpu.name not in names:
            names.append(sh.gpu.name)
    if len(limits) < 2:
        return None
    got = "; ".join(f"{tokens:,} and {seqs:,} on {', '.join(names)}" for (tokens, seqs), names in sorted(limits.items(),
                                                                                                    reverse=True))
    utilization = workload.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION
    return ("Serving engine sized like vLLM on each GPU, as plan sizes it: max_num_batched_tokens and max_num_seqs "
            "vLLM's defaults by the GPU (8,192 and 1,024 on GPUs of at least 70 GiB but the A100, 2,048 and 256 "
            f"elsewhere; arg_utils _set_default_args), among the GPUs swept {got}; gpu_memory_utilization {utilization}, KV block "
            f"{block_size_of(workload)} tokens.")
