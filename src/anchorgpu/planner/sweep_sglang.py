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
from anchorgpu.planner.sglang import cuda_graph_max_bs, decode_graph_batch_sizes, dequantises_absorbed_weights
from anchorgpu.planner.speed.launches import LayerLaunches, absorbed_dequant_bytes, launch_ratio

if TYPE_CHECKING:
    from anchorgpu.planner.sweep import HardwareShape
    from anchorgpu.planner.sweep_grid import Layouts

__all__ = ["absorbed_dequant_terms", "graph_max_batch", "padded_rows"]

FloatArray = npt.NDArray[np.float64]


def graph_max_batch(shapes: Sequence[HardwareShape], lay: Layouts) -> FloatArray:
    """SGLang's ``cuda_graph_max_bs`` per layout ``(L,)``: :func:`~anchorgpu.planner.sglang.cuda_graph_max_bs` once
    per distinct (GPU shape, TP) (the sweep's layouts have no attention DP: it plans those one by one)."""
    keys, inverse = np.unique(lay.shape * 4096 + lay.tp, return_inverse=True)
    max_bs = [cuda_graph_max_bs(shapes[k // 4096].gpu.memory_bytes, k % 4096) for k in keys.tolist()]
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
