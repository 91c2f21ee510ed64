"""SGLang's own step terms over the serving sweep's grid (:mod:`anchorgpu.planner.sweep_serving`), as
:func:`anchorgpu.planner.speed.serving_setup.sglang_step_terms` gives them to one plan: a decode-only step runs the
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
    Workload,
)
from anchorgpu.planner.sglang import (
    SglangSettings,
    cuda_graph_max_bs,
    decode_graph_batch_sizes,
    dequantises_absorbed_weights,
    sglang_gpu_memory_bytes,
    sglang_settings,
)
from anchorgpu.planner.speed.launches import LayerLaunches, absorbed_dequant_bytes, launch_ratio

if TYPE_CHECKING:
    from anchorgpu.planner.sweep_grid import Layouts
    from anchorgpu.planner.sweep_types import HardwareShape

__all__ = ["absorbed_dequant_terms", "graph_max_batch", "padded_rows", "settings_by_layout", "sglang_sweep_line"]

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


def settings_by_layout(shapes: Sequence[HardwareShape], shape: npt.NDArray[np.int64], tp: npt.NDArray[np.int64],
                       pp: npt.NDArray[np.int64], workload: Workload,
                       mla: bool) -> tuple[list[tuple[int, SglangSettings]], npt.NDArray[np.intp]]:
    """SGLang's settings (:func:`~anchorgpu.planner.sglang.sglang_settings`) once per distinct (GPU shape, TP, PP)
    of the layouts given, each with its TP, and the index of each layout's entry: its memory as SGLang reads it and
    the workload's chunk and fraction (given, or SGLang's default)."""
    keys, inverse = np.unique((shape * 4096 + tp) * 4096 + pp, return_inverse=True)
    settings = [(k // 4096 % 4096, sglang_settings(sglang_gpu_memory_bytes(shapes[k // 4096 // 4096].gpu),
                                                   tp=k // 4096 % 4096, pp=k % 4096,
                                                   chunked_prefill_size=workload.max_num_batched_tokens, mla=mla,
                                                   mem_fraction_static=workload.gpu_memory_utilization))
                for k in keys.tolist()]
    return settings, inverse


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
    given = workload.gpu_memory_utilization
    settings = [s for _, s in settings_by_layout(shapes, lay.shape[plain], lay.tp[plain], lay.pp[plain], workload,
                                                 mla)[0]]

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
