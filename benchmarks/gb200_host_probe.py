"""The single-GPU Qwen3-30B-A3B serving rows on B200 and GB200 against the host term
(benchmarks/moe_small_batch_findings.md, stop 53). Dev tooling; changes no constant on disk.

    PYTHONPATH=src .venv/bin/python benchmarks/gb200_host_probe.py rows
    PYTHONPATH=src .venv/bin/python benchmarks/gb200_host_probe.py eager [SCALE]
    PYTHONPATH=src .venv/bin/python benchmarks/gb200_host_probe.py eager-rederived
    PYTHONPATH=src .venv/bin/python benchmarks/gb200_host_probe.py serial [tp1|superchip|all] [--json|--write]

``rows``: each PQ30 B200/GB200 row's engine batch (trtllm-bench's sizing), the prediction with and without the host
term, and ``1 / rate`` measured and predicted without the host (microseconds an output token; at a host-bound step
that is the host's time a sequence and step).

``eager``: calibrate's report with a TensorRT-LLM step that carries a prompt chunk charged, on its host, the launch of
a whole forward without a captured graph (``ScheduledRequests.can_run_cuda_graph`` is false when a context request is
in the batch): layers x launches a layer (13 for a MoE layer, 9 dense) x the CPU time PyTorch takes for one module
forward (NVIDIA/TransformerEngine issue #2053: 37.08 us on Grace, 13.48 us on a Xeon 8480C), times SCALE (default 1).
``eager-rederived``: the same at SCALE 1, with ``host_s_per_sequence_step`` re-derived from TensorRT-LLM PR #10273
once that run's own eager forward (gpt-oss-120b, 36 layers) is taken out of its 45.11 ms a step.

``serial``: calibrate's report with a TensorRT-LLM step that carries a prompt taking its GPU work plus the host's
``host_s_per_sequence_step`` x batch (stated sizes, nothing fitted) instead of the larger of the two; decode-only
steps keep the overlap. ``tp1`` (default): only replicas of one TP rank (one GPU, PP, or attention DP planned as
DP replicas); ``superchip``: only Grace hosts; ``all``: every TensorRT-LLM replica (stop 62 in
moe_small_batch_findings.md).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import anchorgpu.planner.speed.batching as batching
import anchorgpu.planner.speed.calibration as calibration_module
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed.row_engines import trtllm_bench_engine
from anchorgpu.planner.speed.runs import _model, load_runs, predict

MODULE_FORWARD_S = {"superchip": 37.08e-6, "x86": 13.48e-6}  # TransformerEngine issue #2053
LAUNCHES_PER_LAYER = {"moe": 13, "dense": 9}  # calibration.json kernel_launches_per_layer: attention 5 + moe 8 / mlp 4
PR_10273_STEP_S, PR_10273_SEQS, GPT_OSS_120B_LAYERS = 45.11e-3, 1536, 36


def rows() -> None:
    cal = calibration_module.calibration()
    no_host = replace(cal, host_s_per_sequence_step={"x86": 0.0, "superchip": 0.0})
    for run in load_runs():
        if not run.id.startswith(("PQ30-B200", "PQ30-GB200")):
            continue
        r = run.row
        seqs, tokens = trtllm_bench_engine(_model(r), get_gpu(r["gpu"]).memory_bytes, r)
        with_host, without = predict(run, cal), predict(run, no_host)
        print(
            f"{run.id:24s} seqs {seqs:5d} tokens/step {tokens:6d} measured {run.value:7.0f} "
            f"predicted {with_host:7.0f} no-host {without:7.0f}  us/token measured {1e6 / run.value:6.1f} "
            f"no-host {1e6 / without:6.1f}"
        )


def _patch_eager(scale: float) -> None:
    step = batching._step

    def with_eager(setup: Any, c: Any, batch: float, prefill_tokens: float, *args: Any, **kwargs: Any) -> Any:
        if setup.engine == "trtllm" and prefill_tokens and batch and c.host_s_per_sequence and setup.host_overlap:
            host = "superchip" if c.host_s_per_sequence > 1.5e-5 else "x86"  # 29.4 or 18.1 us; 10.7 or 6.6
            layers = c.allreduce_per_stage / 2.0
            launches = LAUNCHES_PER_LAYER["moe" if c.routed_share is not None else "dense"]
            eager_s = scale * layers * launches * MODULE_FORWARD_S[host]
            c = replace(c, host_s_per_sequence=c.host_s_per_sequence + eager_s / batch)
        return step(setup, c, batch, prefill_tokens, *args, **kwargs)

    batching._step = with_eager  # type: ignore[assignment]


def _patch_serial(scope: str) -> None:
    step = vars(batching)["_step"]

    def serial(setup: Any, c: Any, batch: float, prefill_tokens: float, *args: Any, **kwargs: Any) -> Any:
        out = step(setup, c, batch, prefill_tokens, *args, **kwargs)
        applies = setup.engine == "trtllm" and prefill_tokens and batch and c.host_s_per_sequence and setup.host_overlap
        if scope == "tp1":
            applies = applies and setup.tp == 1
        elif scope == "superchip":
            applies = applies and c.host_s_per_sequence > 1.5e-5  # 29.4 us on Grace, 10.7 on x86
        if not applies:
            return out
        gpu = step(setup, replace(c, host_s_per_sequence=0.0), batch, prefill_tokens, *args, **kwargs)
        return (max(out[0], gpu[0] + c.host_s_per_sequence * batch), *out[1:])

    vars(batching)["_step"] = serial


def _rederive() -> None:
    eager_s = GPT_OSS_120B_LAYERS * LAUNCHES_PER_LAYER["moe"] * MODULE_FORWARD_S["superchip"]
    per_seq = (PR_10273_STEP_S - eager_s) / PR_10273_SEQS
    ratio = MODULE_FORWARD_S["superchip"] / MODULE_FORWARD_S["x86"]
    cal = replace(
        calibration_module.calibration(), host_s_per_sequence_step={"superchip": per_seq, "x86": per_seq / ratio}
    )
    print(
        f"re-derived: {per_seq * 1e6:.2f} us a sequence on Grace, {per_seq / ratio * 1e6:.2f} on x86 "
        f"(PR #10273's eager forward {eager_s * 1e3:.2f} ms taken out)"
    )
    for module in (calibration_module, calibrate, batching):
        module.calibration = lambda *_a, **_k: cal  # type: ignore[attr-defined]
    import anchorgpu.planner.speed.runs as runs
    import anchorgpu.planner.speed.serving as serving

    runs.calibration = serving.calibration = lambda *_a, **_k: cal  # type: ignore[assignment]


def main(argv: list[str]) -> int:
    mode = argv[0] if argv else "rows"
    if mode == "rows":
        rows()
        return 0
    if mode == "eager":
        _patch_eager(float(argv[1]) if len(argv) > 1 else 1.0)
    elif mode == "eager-rederived":
        _rederive()
        _patch_eager(1.0)
    elif mode == "serial":
        scope = argv[1] if len(argv) > 1 and not argv[1].startswith("--") else "tp1"
        _patch_serial(scope)
        return calibrate.main([a for a in argv[1:] if a.startswith("--")])
    else:
        print(f"unknown mode {mode!r}: rows, eager [SCALE], eager-rederived or serial [tp1|superchip|all]")
        return 2
    return calibrate.main([])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
