"""What each serving engine's kernels and executor add to a step, as their sources show: TensorRT-LLM's prompt
attention as a kernel of its own, its host passes over the running sequences under pipeline stages (and the ones a
stage's GPU waits for), its own all-reduce and expert-parallel exchange latencies, its decode attention's KV read
and its MoE kernel's cost a routed row. Pure; :mod:`.step_constants` forms a step's constants from them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.experts import routed_rows_per_token_share
from anchorgpu.planner.speed.links import Link

if TYPE_CHECKING:
    from anchorgpu.planner.speed.step_constants import ServingSetup

__all__ = ["allreduce_latency_s", "ep_exchange_latency_s", "host_passes_per_cycle", "host_waited_passes",
           "prompt_attention_apart", "prompt_step_host_serial", "trtllm_kv_read_applies", "trtllm_kv_read_fraction", "trtllm_moe_s_per_token"]


def prompt_attention_apart(engine: str) -> bool:
    """Whether ``engine`` runs a step's prompt (context) attention and its decodes' (generation) attention as two
    kernels one after the other, so a step that carries a prompt chunk pays the chunk's attention on top of the
    decodes' KV read rather than under it: TensorRT-LLM, whose attention op runs the context requests' kernel and
    then the generation requests' on the same stream (NVIDIA/TensorRT-LLM@00dbe288
    cpp/tensorrt_llm/thop/attentionOp.cpp, ``attention_inplace``: ``runner->run(..., is_context=true, ...)`` over
    the ``num_contexts`` requests, then ``is_context=false`` over the ``num_generations``). vLLM's and SGLang's
    backends run one varlen kernel over both and keep the larger of the two (benchmarks/moe_small_batch_findings.md,
    Stop 54 (branch longctx)).

    >>> prompt_attention_apart("trtllm"), prompt_attention_apart("vllm")
    (True, False)
    """
    return engine == "trtllm"


def host_passes_per_cycle(engine: str, pp: int) -> int:
    """How many times the engine's host works through every running sequence in one pipeline cycle (one token for
    each of them): ``pp`` on TensorRT-LLM with pipeline stages, else 1.

    TensorRT-LLM's PyTorch executor serves ``pp`` stages with ``_executor_loop_pp``, one loop iteration per
    micro-batch (``num_micro_batches = pp_size``), and every iteration calls ``_schedule()`` over
    ``self.active_requests`` and ``_handle_responses()``, which loops over ``self.active_requests`` (each request's
    stop state and ``create_response``): every running request, not the micro-batch's share of them, ``pp`` times
    a cycle (NVIDIA/TensorRT-LLM@9521caf tensorrt_llm/_torch/pyexecutor/py_executor.py, the PyTorch backend's first
    PP loop, and the stored copy of the 1.0 era with PR #6976's ``assert sample_state is not None``: the same loop).
    Without stages the one iteration a step is the engine's whole step, which the stated
    ``host_s_per_sequence_step`` measures; with them this charges all of it at each iteration, an upper bound (the
    sampler's update and the KV blocks of the micro-batch are its share only). vLLM and SGLang are left at 1.

    >>> host_passes_per_cycle("trtllm", 8), host_passes_per_cycle("trtllm", 1), host_passes_per_cycle("vllm", 4)
    (8, 1, 1)
    """
    return pp if engine == "trtllm" and pp > 1 else 1


def prompt_step_host_serial(engine: str, *, tp: int, pp: int, moe: bool) -> bool:
    """Whether a step that carries prompt tokens takes the GPU's work *plus* the host's pass over the running sequences
    (``host_s_per_sequence_step`` x batch) rather than the larger of the two: TensorRT-LLM, one stage, one GPU a
    replica (attention-DP ranks planned as replicas included), a mixture of experts.

    * Such a step runs without a CUDA graph: ``ScheduledRequests.can_run_cuda_graph`` is ``not
      self.context_requests`` (NVIDIA/TensorRT-LLM ``tensorrt_llm/_torch/pyexecutor/scheduler.py``), so the host
      launches the whole forward op by op from Python.
    * One stage runs ``_executor_loop_overlap`` (``py_executor.py``: ``_executor_loop_pp`` where ``pp_size > 1``,
      timed by :func:`host_waited_passes`), one thread that in each iteration schedules and prepares the step,
      launches its forward, launches sampling, and only then updates the previous step's requests. Its per-sequence
      work therefore runs in series with the forward's launches, and the step takes ``max(GPU, launch + h B)``.
    * Where the eager forward is launch-bound (launching it takes at least the GPU's time for it), that is at least
      ``GPU + h B``. A small-active MoE layer is where that holds: about 13 launches a layer
      (``calibration.json`` ``kernel_launches_per_layer``; more kernels beside the grouped products: router,
      top-k, permute, quantize, finalize) around products of 3B active parameters. On Grace a PyTorch module forward
      takes 37.08 us of CPU (NVIDIA/TransformerEngine issue #2053; 13.48 us on a Xeon 8480C).

    Not sized from a source: the launch time itself (the stated module time gives 23 ms a Qwen3-30B-A3B forward on
    Grace, about half of what the GB200 rows imply; benchmarks/hardening/stop62_bwserve.md). Dense models and
    replicas over TP > 1 are left overlapped: on the fit rows a dense model's prompt step is GPU-bound, and the TP
    > 1 rows lose fit rows under it (stop 62 in benchmarks/moe_small_batch_findings.md, and stop62_bwserve.md).

    >>> prompt_step_host_serial("trtllm", tp=1, pp=1, moe=True), prompt_step_host_serial("trtllm", tp=1, pp=2, moe=True)
    (True, False)
    >>> prompt_step_host_serial("vllm", tp=1, pp=1, moe=True), prompt_step_host_serial("trtllm", tp=1, pp=1, moe=False)
    (False, False)
    """
    return engine == "trtllm" and tp == 1 and pp == 1 and moe


def host_waited_passes(engine: str, pp: int) -> int:
    """How many passes of the engine's host over the running sequences a pipeline cycle waits for on top of the GPUs'
    work (not overlapped with it): 1 on TensorRT-LLM with pipeline stages, else 0.

    In ``_executor_loop_pp`` every rank but the last runs its micro-batch's forward through ``_forward_step_inter_pp``,
    which records an event after ``_forward_step`` and calls ``sampler_event.synchronize()`` before returning
    (NVIDIA/TensorRT-LLM@9521caf tensorrt_llm/_torch/pyexecutor/py_executor.py, and the same in the stored 1.0-era
    copy with PR #6976's ``assert sample_state is not None``): the rank's host waits for its GPU to finish each
    forward, and only then relays the sample state, updates and schedules, and prepares the next micro-batch, while
    its GPU has nothing queued. So each of a cycle's ``pp`` ticks is that rank's GPU work plus its host work for an
    iteration, and the ring runs at the pace of those ranks (the last rank's own overlap cannot outrun its inputs).
    The host work an iteration is at least the micro-batch's share of the stated per-sequence cost (its requests'
    scheduling, resources, sampler update), ``pp`` micro-batches a cycle: one pass over the running sequences, the
    count returned here. The walk over every running request at each iteration (:func:`host_passes_per_cycle`) stays
    the cycle's floor, overlapped. vLLM and SGLang, and one stage, overlap it all (0).

    >>> host_waited_passes("trtllm", 8), host_waited_passes("trtllm", 1), host_waited_passes("vllm", 4)
    (1, 0, 0)
    """
    return 1 if engine == "trtllm" and pp > 1 else 0


def allreduce_latency_s(gpu: GpuSpec, link: Link, engine: str, cal: Calibration) -> float:
    """The fixed cost of one TP all-reduce over ``link``: the link's (NCCL's, ``latency_s``), or inside an NVLink
    server on TensorRT-LLM its own all-reduce kernels' measured figure for the GPU (``cal.trtllm_allreduce_latency_s``;
    a GPU without one keeps the link's). The ceiling's links have none (0.0 stays 0.0).

    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> nvlink = Link(kind="scale-up", bytes_per_s=9e11, latency_s=1.5e-5, description="")
    >>> allreduce_latency_s(toy_gpu(), nvlink, "vllm", calibration())  # NCCL's
    1.5e-05
    """
    if engine != "trtllm" or link.kind != "scale-up" or link.latency_s == 0.0:
        return link.latency_s
    return cal.trtllm_allreduce_latency_s.get(gpu.name, link.latency_s)


def ep_exchange_latency_s(gpu: GpuSpec, link: Link, ep: int, cal: Calibration) -> float:
    """The fixed cost of each collective of an expert-parallel exchange wider than TP (all-gather, reduce-scatter)
    over ``link`` among ``ep`` GPUs: inside an NVLink server NCCL's measured all-gather / reduce-scatter latency for
    the GPU at the smallest group size given that holds ``ep`` (``cal.ep_exchange_latency_s``); the link's own
    (``latency_s``: NCCL's all-reduce) for a GPU or a group size without a figure, or a link off the scale-up fabric.
    The ceiling's links have none (0.0 stays 0.0).

    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> nvlink = Link(kind="scale-up", bytes_per_s=9e11, latency_s=1.5e-5, description="")
    >>> ep_exchange_latency_s(toy_gpu(), nvlink, 2, calibration())  # a GPU without a figure: the link's
    1.5e-05
    """
    if link.kind != "scale-up" or link.latency_s == 0.0:
        return link.latency_s
    sizes = cal.ep_exchange_latency_s.get(gpu.name, {})
    held = [n for n in sizes if n >= ep]
    return sizes[min(held)] if held else link.latency_s


def trtllm_kv_read_fraction(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, cal: Calibration) -> float:
    """The share of ``gpu``'s memory bandwidth TensorRT-LLM's decode attention reaches reading an FP8 KV cache of
    many sequences (``cal.trtllm_decode_attention_kv_fraction`` of the GPU, measured on its kernels), for a mixture of
    experts, or 0.0 where that figure does not apply and the KV read goes at the step's fitted ``decode_mbu``: another
    engine, a 16-bit cache, a GPU without a figure, MLA (another kernel), a recurrent model's state, or a dense model.
    Dense models run the same kernel, but their fitted ``decode_mbu`` already carries their KV read: timed this way
    too, the refit moves the dense serving constants and MoE fit rows drop out (benchmarks/moe_small_batch_findings.md,
    Stop 55). Prediction only (the ceiling reads at the datasheet's bandwidth).

    >>> from anchorgpu.planner.speed._toys import toy_gpu, toy_model
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> from anchorgpu.planner.speed.step_constants import ServingSetup
    >>> s = ServingSetup(weights_bytes_per_gpu=1e9, kv_bytes_per_sequence_per_gpu=1e6, engine="vllm", kv_fp8=True)
    >>> trtllm_kv_read_fraction(toy_model(), toy_gpu(), s, calibration())  # not TensorRT-LLM
    0.0
    """
    if not setup.kv_fp8 or not trtllm_kv_read_applies(model, setup.engine):
        return 0.0
    return cal.trtllm_decode_attention_kv_fraction.get(gpu.name, 0.0)


def trtllm_kv_read_applies(model: ModelSpec, engine: str) -> bool:
    """Whether an FP8 KV cache of ``model`` on ``engine`` is read at TensorRT-LLM's measured decode-attention share
    (:func:`trtllm_kv_read_fraction`; the catalog sweep asks the same): TensorRT-LLM, a mixture of experts, not MLA,
    no recurrent state."""
    return engine == "trtllm" and model.moe is not None and model.mla is None and model.recurrent is None


def trtllm_moe_s_per_token(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, cal: Calibration) -> float:
    """Seconds a replica's token adds to one GPU's step through TensorRT-LLM's MoE kernel beyond the roofline: the
    stated cost a routed row (``cal.trtllm_moe_s_per_routed_row`` of the GPU's compute capability; none where the
    family has no figure) times the rows the GPU runs for that token, ``k x MoE layers / pp`` x
    :func:`routed_rows_per_token_share`. Zero for a dense model or another engine (the figure is TensorRT-LLM's
    CUTLASS MoE measured; vLLM runs other kernels). Prediction only: the roofline ceiling has no such term.

    The rows divide by EP, not by MoE TP: sliced experts (EP 1, TensorRT-LLM's default mapping under ``--tp N``) run
    every routed row on every GPU, each a ``1 / tp`` slice of the expert's width, and AIConfigurator's MoE tables
    charge each GPU the per-row cost of all of them (Qwen3-235B's layer from MoE TP 1 to 8: the latency a token
    falls only from 0.198 to 0.109 us on B200 NVFP4, 0.283 to 0.117 on H200 FP8; benchmarks/
    moe_small_batch_findings.md, Stop 57).

    >>> from anchorgpu.planner.speed._toys import toy_gpu, toy_model
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> from anchorgpu.planner.speed.step_constants import ServingSetup
    >>> s = ServingSetup(weights_bytes_per_gpu=1e9, kv_bytes_per_sequence_per_gpu=1e6, engine="trtllm")
    >>> trtllm_moe_s_per_token(toy_model(), toy_gpu(), s, calibration())  # dense
    0.0
    """
    moe = model.moe
    if moe is None or setup.engine != "trtllm" or gpu.compute_capability is None:
        return 0.0
    per_row_s = cal.trtllm_moe_s_per_routed_row.get(gpu.compute_capability, 0.0)
    return per_row_s * moe.experts_per_token * moe.num_moe_layers / setup.pp * routed_rows_per_token_share(setup.tp,
                                                                                                          setup.ep)
