"""Probe (stop 62, benchmarks/hardening/stop62_trtmem62.md): calibrate with every trtllm-bench row
(``engine_limits: trtllm-bench``, TensorRT-LLM's perf-overview page) planned by TensorRT-LLM's own KV sizing, with the
two terms its source adds to what ``Workload.engine="trtllm"`` already plans. Dev tooling: patches ``runs`` in memory,
writes nothing unless given ``--write`` (then restore data/calibration.json).

The rule, NVIDIA/TensorRT-LLM mid-2025 (the page's 0.20/0.21/1.0 era):

* ``_torch/pyexecutor/_util.py`` ``KvCacheCreator.configure_kv_cache_capacity``: after a warm-up executor with a
  temporary KV cache runs context-only dummy requests that fill ``max_num_tokens`` (``_create_dummy_context_requests``;
  under attention DP every rank gets its own set: ``requests * tp_size``), ``peak = torch peak + (used - torch used)``,
  and ``_cal_max_memory``: ``(total - peak + temporary KV) * free_gpu_memory_fraction``. ``engine="trtllm"`` plans
  this already (capacity = fraction x (memory - context - weights - prefill peak - non-torch)).
* Term 1, in the peak: under attention DP the MoE all-gathers every rank's tokens before the experts
  (``_torch/modules/fused_moe/fused_moe_vanilla.py`` ``forward``: ``if self.use_dp and self.parallel_size > 1: x, ...
  = allgather(...)``; the same in the CUTLASS module; "The maximum number of tokens in MoE are multiplied by DP size
  when attention DP is enabled": ``moe_max_num_tokens = max_num_tokens * dp_size``), with unsplit expert widths.
  So the dummy pass's MoE transient is ``tp x max_num_tokens`` rows of ``k (3 f + h)`` 16-bit values
  (``activations.prefill_activation_bytes``'s MoE term, not divided by TP), not the TP restatement's ``/tp`` share.
* Term 2, after sizing: CUDA graphs are captured by the final executor's ``model_engine.warmup`` (PyExecutor.__init__),
  for every batch size up to ``max_batch_size`` (trtllm-bench's ``get_settings``: ``cuda_graph_config`` padding on,
  ``max_batch_size`` its own; the page's list to 8,192 is filtered ``if bs > self.batch_size: continue``). In the
  estimation executor the warm-up walks the sizes from the largest and returns at the first the temporary cache cannot
  hold (``get_cuda_graph_warmup_request``: ``available_blocks >= batch_size`` else ``return``), so no graph is in the
  profiled peak. The graph pool (its largest graph: the logits of the batch, 16-bit plus the FP32 copy,
  ``modules/logits_processor.py``, and under attention DP the all-gathered MoE transient of ``tp x batch`` rows) must
  fit in ``(1 - fraction)`` of the free memory, else the run is out of memory.
* Term 3, after sizing: a step with a context request is not graph-eligible (``_maybe_get_cuda_graph``:
  ``can_run_cuda_graph`` is generation-only), and ``LogitsProcessor`` computes every sequence's logits
  (``hidden_states[last_tokens]``, then ``.float()``): a full batch's logits again, eager, outside the graph's private
  pool. The dry run has only ``max_num_tokens / ISL`` sequences, so this is not profiled either.
* The page: "We fall back to `0.90` or lower if out-of-memory errors are encountered", and it passes that fraction to
  trtllm-bench, whose ``calc_engine_setting`` sizes the batch cap with it. The probe takes the largest fraction on a
  0.05 grid from 0.95 whose own cap's terms 2 and 3 fit (the grid is this probe's assumption: the page names 0.95 and
  0.90 only).

    PYTHONPATH=src .venv/bin/python benchmarks/trtllm_fallback_sizing_probe.py [--no-adp-peak] [--no-fallback]
        [--no-mixed] [--show PREFIX] [--write]
"""
from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed import runs as rs
from anchorgpu.planner.speed.row_engines import trtllm_bench_limits as rs_limits

_plan_of = rs.serve_plan_of
_bench = rs.trtllm_bench_engine
_as_measured = rs._as_measured
_OPTS = {"adp_peak": True, "fallback": True, "mixed": True}
_SHOW: list[str] = []
GIB = 2**30


def _moe_rows_bytes(model: Any, rows: int) -> int:
    """The MoE transient of ``rows`` tokens with unsplit experts (prefill_activation_bytes's MoE term at tp 1)."""
    k = model.moe.experts_per_token + model.moe.num_shared_experts
    return 2 * rows * k * (3 * model.moe.expert_intermediate_size + model.hidden_size)


def _measured(gpu: Any, r: dict[str, Any]) -> Any:
    gpu = _as_measured(gpu, r)
    held = int(r.get("_held_bytes", 0))
    return replace(gpu, memory_bytes=gpu.memory_bytes - held) if held else gpu


def _bench_engine(model: Any, memory_bytes: float, r: dict[str, Any]) -> tuple[int, int]:
    """trtllm-bench's limits on the whole GPU, at the fraction the run was given (``get_settings`` passes
    ``params.get("kv_cache_free_gpu_mem_fraction")`` to ``calc_engine_setting``): a fallback run gets smaller ones."""
    pp = int(r.get("pp", 1))
    per_micro, tokens = rs_limits(model, memory_bytes + int(r.get("_held_bytes", 0)), tp=r["tp"], pp=pp,
                                  weights=r["weights"], kv_cache=r["kv_cache"], prompt_tokens=r["prompt_tokens"],
                                  output_tokens=r["output_tokens"], kv_fraction=float(r.get("kv_free_fraction", 0.95)))
    return per_micro * pp, tokens


def _memory(r: dict[str, Any]) -> int:
    from anchorgpu.hardware import get_gpu

    return int(get_gpu(r["gpu"]).memory_bytes)


def plan_of(r: dict[str, Any]) -> Any:
    if r.get("engine_limits") != "trtllm-bench" or "kv_free_fraction" in r:
        return _plan_of(r)
    first = _plan_of(dict(r, kv_free_fraction=0.95))
    model, w = first.model, first.workload
    tp, pp = int(r["tp"]), int(r.get("pp", 1))
    adp = bool(r.get("attention_dp_weights")) and model.moe is not None and tp > 1
    peak = 0
    if adp and _OPTS["adp_peak"]:  # all-gathered MoE transient less what prefill_activation_bytes planned for it
        tokens = int(w.max_num_batched_tokens)
        peak = max(0, _moe_rows_bytes(model, tp * tokens) - int(first.breakdown["prefill_activation_bytes"]))
    fraction = 0.95
    free = first.breakdown["kv_cache_capacity_bytes"] / 0.95 - peak
    while _OPTS["fallback"] and fraction > 0.06:
        seqs = _bench_engine(model, 0.0, dict(r, kv_free_fraction=fraction, _held_bytes=_memory(r)))[0] // pp
        pool = 6 * model.vocab_size * seqs + (_moe_rows_bytes(model, tp * seqs) if adp else 0)  # one micro-batch
        if _OPTS["mixed"]:  # a mixed step runs eager: every sequence's logits again, outside the graph pool
            pool += 6 * model.vocab_size * seqs
        if (1 - fraction) * free >= pool:
            break
        fraction = round(fraction - 0.05, 2)
    p = _plan_of(dict(r, kv_free_fraction=fraction, _held_bytes=peak))
    if _SHOW and str(r.get("id", "")).startswith(tuple(_SHOW)):
        print(f"{r['id']:28s} peak+ {peak / GIB:5.2f} fraction {fraction:.2f} KV {first.breakdown['kv_cache_capacity_bytes'] / GIB:6.2f}"
              f" -> {p.breakdown['kv_cache_capacity_bytes'] / GIB:6.2f} GiB", file=sys.stderr)
    return p


if __name__ == "__main__":
    argv = sys.argv[1:]
    for flag, key in (("--no-adp-peak", "adp_peak"), ("--no-fallback", "fallback"), ("--no-mixed", "mixed")):
        if flag in argv:
            _OPTS[key] = False
            argv.remove(flag)
    while "--show" in argv:
        i = argv.index("--show")
        _SHOW.append(argv[i + 1])
        del argv[i:i + 2]
    rs.serve_plan_of = plan_of  # type: ignore[assignment]
    rs.trtllm_bench_engine = _bench_engine  # type: ignore[assignment]
    rs._as_measured = _measured  # type: ignore[assignment]
    sys.exit(calibrate.main(argv))
