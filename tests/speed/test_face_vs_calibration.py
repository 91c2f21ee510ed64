"""The CLI answers what the calibration predicts, for measured runs whose workload its flags can state in full.

Each case is the ``anchorgpu plan`` command a user would type for one row of
``src/anchorgpu/planner/speed/data/measured_runs.json`` (the row's source is in the comment beside it and in the
row), and its figure must be :func:`anchorgpu.planner.speed.runs.predict`'s for that row to the last digit or so:
the calibration plans these rows through ``runs.serve_plan_of`` / ``runs._train``, the CLI through ``plan`` and
``plan_performance``; a default or path that differs between the two would make the user's number not the calibrated
one. ``benchmarks/face_vs_calibration.py`` runs the same check over a spread of rows (``--all``: every row) and says
what the rows it cannot match set that no flag can.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from anchorgpu.planner.speed.runs import load_runs, predict
from cli_runner import run_json

TRAIN = ("--task", "train", "--network-gbit-per-gpu", "400", "--allow-long-context", "--offline")
CASES = {
    # NVIDIA/NeMo docs/source/performance/performance_summary.md (commit 070a0bb): Llama 2 70B, 64 H100, FP8
    "T32": ("llama-2-70b", "--gpu", "h100-sxm", "--gpus", "64", "--tp", "4", "--pp", "4", "--dp", "4", "--zero", "1",
            "--virtual-stages", "20", "--seq", "4096", "--micro-batch", "1", "--global-batch", "524288",
            "--recompute", "none", "--train-precision", "fp8", "--tp-overlap", *TRAIN),
    # NVIDIA/NeMo performance_summary.md (NeMo 24.07): LoRA of Llama 2 7B on 8 H100
    "N24-L2-7B-LORA": ("llama-2-7b", "--gpu", "h100-sxm", "--gpus", "8", "--tp", "1", "--zero", "1", "--seq", "4096",
                       "--micro-batch", "1", "--global-batch", "131072", "--recompute", "none",
                       "--train-precision", "fp8", *TRAIN[2:], "--task", "lora"),
    # NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md (commit 00b7660): Qwen3 30B-A3B on 8 B200, EP 8
    "MB-B200-Q30": ("qwen3-30b-a3b", "--gpu", "b200", "--gpus", "8", "--tp", "1", "--ep", "8", "--zero", "1",
                    "--seq", "4096", "--micro-batch", "1", "--global-batch", "2097152", "--recompute", "none",
                    "--train-precision", "fp8", "--cross-entropy", "te", *TRAIN),
    # hisohara/ai-scripts @3ae89cf training/02_megatron/README.md: ROCm Megatron-LM, Llama 2 7B on 8 MI300X
    "RT1": ("llama-2-7b", "--gpu", "mi300x", "--gpus", "8", "--tp", "1", "--zero", "1", "--seq", "4096",
            "--micro-batch", "4", "--global-batch", "1048576", "--recompute", "none", "--train-precision", "fp8", *TRAIN),
    # InferenceMAX via gminneci/mantile (commit 11a8e89): gpt-oss-120b on 2 H200, vLLM, 16 requests in flight
    "IM-OSS-H200-TP2-C16": ("gpt-oss-120b", "--gpu", "h200", "--gpus", "2", "--tp", "2", "--weights", "mxfp4",
                            "--kv-cache", "bf16", "--prompt", "1024", "--output-tokens", "1024", "--concurrency", "16",
                            "--offline"),
    # InferenceMAX via leoshan/inference-max-automated-pipeline: DeepSeek-R1 on 8 MI300X, SGLang, 16 in flight
    "IM-DSR1-MI300X-1k-1k-C16": ("deepseek-r1", "--gpu", "mi300x", "--gpus", "8", "--tp", "8",
                                 "--weights", "fp8-block128x128", "--kv-cache", "bf16", "--prompt", "1024",
                                 "--output-tokens", "1024", "--concurrency", "16", "--engine", "sglang", "--offline"),
    # gpustack/gpustack docs/performance-lab/qwen3-14b/a100.md (commit 10e9444): TensorRT-LLM on one A100 80 GB
    "TGA-Q14-SG": ("qwen3-14b", "--gpu", "a100-80gb-sxm", "--gpus", "1", "--weights", "bf16", "--kv-cache", "bf16",
                   "--prompt", "217", "--output-tokens", "201", "--engine", "trtllm", "--gpu-memory-utilization", "0.9",
                   "--max-num-seqs", "2048", "--max-num-batched-tokens", "8192", "--offline"),
    # NVIDIA/TensorRT-LLM Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md (commit 01c4ece): NVIDIA's FP4
    # checkpoint of R1-0528 on 8 B200 with attention data parallelism (TP 1, DP 8, EP 8)
    "TRT-DSR1-ADP-B200-FP8KV": ("deepseek-r1-0528-fp4", "--gpu", "b200", "--gpus", "8", "--tp", "1", "--dp", "8",
                                "--ep", "8", "--weights", "nvfp4", "--kv-cache", "fp8", "--prompt", "1024",
                                "--output-tokens", "2048", "--engine", "trtllm", "--gpu-memory-utilization", "0.93",
                                "--max-num-seqs", "896", "--max-num-batched-tokens", "2048", "--offline"),
}
FIGURE = {"tokens_per_s_per_gpu": "train_tokens_per_s", "max_output_tokens_per_s": "max_output_tokens_per_s",
          "tpot_s": "tpot_s"}


@pytest.mark.parametrize("run_id", sorted(CASES))
def test_the_cli_gives_the_calibrated_figure(capsys: pytest.CaptureFixture[str], run_id: str) -> None:
    run = next(r for r in load_runs() if r.id == run_id)
    if run.metric == "burst_output_tokens_per_s":  # a burst (TGA-Q14-SG since stop 59) is timed on the row's plan,
        run = replace(run, metric="max_output_tokens_per_s")  # whose steady figure the CLI gives: the same path
    perf = run_json(capsys, "plan", *CASES[run_id])["performance"]
    figure = perf[FIGURE[run.metric]] / (run.row["gpus"] if run.metric == "tokens_per_s_per_gpu" else 1)
    assert math.isclose(figure, predict(run), rel_tol=1e-9), (run_id, run.source, figure, predict(run))
