"""The measured rows as the calibration reports them: which set each belongs to, which kind of run (a mixture of
experts, pipeline-staged serving) makes its own band, each row's prediction and error, and the accuracy table and
per-set summaries ``python -m anchorgpu.planner.speed.calibrate`` prints (the README's and
``benchmarks/speed_accuracy.md``'s). Dev tooling beside the fit in :mod:`anchorgpu.planner.speed.calibrate`."""

from __future__ import annotations

import statistics
from typing import Any

from anchorgpu.planner.speed.constants import Calibration, band_kind_of
from anchorgpu.planner.speed.row_engines import row_engine
from anchorgpu.planner.speed.runs import Run, predict

__all__ = ["SETS", "band_kind", "engine_of", "markdown", "paired_errors", "report_rows", "serving_kind", "set_of", "speed_ratio", "stack_of_row",
           "summary"]


SETS: dict[str, str] = {
    "core": "perf_measured.md, published_figures.md and the ROCm findings",
    "trtllm-table": "the further cells of TensorRT-LLM's perf-overview table (dense on NVLink GPUs)",
    "trtllm-pcie-moe": "the same table's pipeline stages on RTX PRO 6000 and Qwen3-30B-A3B (MoE) on one GPU",
    "trtllm-moe": "the same table's other mixtures of experts (Qwen3-235B-A22B, Llama 4 Scout and Maverick on B200, GB200, "
                  "H200, H100 and RTX PRO 6000; Qwen3-30B-A3B over 2-8 RTX PRO 6000), held out",
    "rocm-perf-page": "the further cells of AMD's performance-results throughput table that RS10 and RS11 come from "
                      "(Llama 3.1 70B and 405B in FP8 on 8 MI300X, vLLM 0.9.0.1, every input/output pair), held out",
    "rocm-latency": "the ROCm blog's batch-size latency table (one request to 128 at once on 8 MI300X)",
    "rocm-oci-latency": "OCI's latency table of Llama 3.1 405B on 8 MI300X (1 to 256 requests at once), held out",
    "vllm-gpustack": "GPUStack's vLLM runs on H100 and H200 with 1 to 8 requests in flight (time per output token of "
                     "gpt-oss-120b, GLM-4.6, DeepSeek-R1 and Qwen3-8B), held out",
    "vllm-gpustack-a100": "GPUStack's vLLM runs of Qwen3-14B and Qwen3-32B on one A100 with every request sent at once "
                          "(output tokens a second, ShareGPT and random 128 to 32,000-token prompts), held out",
    "trtllm-gpustack-a100": "the same GPUStack pages' TensorRT-LLM runs of Qwen3-14B and Qwen3-32B on one A100 (its "
                            "defaults on ShareGPT, the pages' tuned command on the random sets), held out",
    "trtllm-l40s": "TensorRT-LLM's 2023 performance page (v0.5): Llama 2 7B in FP8 on one L40S, static batches of 16-64 "
                   "requests and one-prompt first-token latency, held out",
    "vllm-gpustack-moe": "GPUStack's vLLM baselines of mixtures of experts (gpt-oss-20b, gpt-oss-120b, GLM-4.5-Air, "
                         "Qwen3-235B-A22B) on 1-8 A100 80 GB and H100 with every request sent at once (output tokens a "
                         "second), and gpt-oss-120b at 4 requests in flight (time per output token), held out",
    "megatron-bridge": "Megatron-Bridge's pre-training table (NeMo 25.11) on H100, B200, GB200 and GB300: Llama 3 8B and "
                       "70B, Llama 3.1 405B, and the mixtures of experts DeepSeek-V3, gpt-oss-120b, Qwen3-30B-A3B and "
                       "Qwen3-235B-A22B with expert parallelism (tokens a second per GPU), held out",
    "megatron-moe-modelzoo": "the Megatron-MoE model zoo's Qwen3-235B-A22B layouts on 256 H100 with the DeepEP "
                             "dispatcher, with and without the all-to-alls overlapped, and its PP 32 layout with the "
                             "all-to-all dispatcher (step time), held out",
    "deepseek-v3-report": "DeepSeek-V3's whole pre-training on 2,048 H800 (14.8T tokens in 2.664M GPU hours, FP8, PP 16 x "
                          "EP 64, DualPipe), tokens a second per GPU, held out",
    "megatron-dsv3-gb200": "Megatron-LM's DeepSeek-V3 guide for GB200 NVL72: the optimised run on 256 GPUs (MXFP8, PP 8 x "
                           "EP 32, HybridEP, partial CUDA graphs), tokens a second per GPU, held out",
    "torchtitan-2412": "the rest of torchtitan's December 2024 H100 benchmark that T26-T28 come from: Llama 3.1 8B with "
                       "FSDP on 8 and on 128 GPUs, with context parallelism at 32k-262k tokens, 70B without AsyncTP, and "
                       "405B over 512 GPUs with context parallelism (tokens a second per GPU), held out",
    "torchtitan-docs": "torchtitan's docs/performance.md (earlier revisions, 2024): Llama 3.1 405B on 128 H100 in Float8 "
                       "with and without AsyncTP, and Llama 2 13B on 64 A100 with and without activation checkpointing "
                       "(tokens a second per GPU), held out",
    "nemo-2407": "the rest of the NeMo 24.07 performance table T32-T34 come from (DGX-H100, FP8): GPT-3 5B, 20B and 175B, "
                 "Llama 2 7B and 13B and Llama 3 8B pre-training, and Llama 2 fine-tuning of every weight (SFT) and "
                 "with LoRA, tokens a second per GPU, held out",
    "maxtext-dgxc": "NVIDIA's DGXC Benchmarking recipes for MaxText (JAX/XLA, a stack never fitted): Llama 2 70B on 64 and "
                    "Llama 3 70B on 128 H100 in BF16, sharded FSDP-only, tokens a second per GPU from their logged "
                    "steps, held out",
    "trtllm-dsr1-adp": "TensorRT-LLM's DeepSeek-R1 guide: its max-throughput runs with attention data parallelism and EP "
                       "over 8 B200 (NVFP4, FP8 and 16-bit KV caches) and 8 H200 (FP8), output tokens a second, held "
                       "out",
    "inferencemax": "InferenceMAX's runs with 4 to 64 requests in flight (time per output token of gpt-oss-120b on vLLM, "
                    "DeepSeek-R1 on SGLang and TensorRT-LLM on H200, B200 and MI300X-MI355X, Llama 3.3 70B as a dense "
                    "control), held out",
    "inferencemax-trt-moe": "InferenceMAX's TensorRT-LLM 1.2.0rc2 sweep of gpt-oss-120b on B200 (one workflow run): the "
                            "same workloads under TP 1-8 and attention DP with EP over 2 and 4 GPUs, 4 to 128 requests "
                            "in flight (time per output token), held out",
    "inferencemax-sglang-moe": "InferenceMAX's SGLang v0.5.6 sweeps of DeepSeek-R1-0528 (three workflow runs, pairs "
                               "only within a run): NVFP4 on B200 at TP 4 EP 4 and TP 8 EP 8, 4 to 128 requests in "
                               "flight; FP8 on B200 at TP 4 and TP 8, 4 in flight; MXFP4 on MI355X at TP 4 and TP 8, "
                               "4 to 64 in flight (time per output token), held out",
    "answerai-fsdp-qlora": "answer.ai's FSDP-QLoRA benchmark (fsdp_qlora benchmarks_03_2024.md, early 2024): Llama-2 70B "
                           "QLoRA (bitsandbytes NF4, PyTorch FSDP1, full recompute, 2,048-token sequences) on 2, 4 and 8 "
                           "A100 40GB and 4 H100 SXM without offload, and Llama-2 7B QLoRA and LoRA (FSDP and DDP) on "
                           "a dual RTX 4090 workstation (tokens a second per GPU), held out",
}
"""The sets of rows the summaries report apart, by where the rows come from (``set_of``)."""


def band_kind(run: Run) -> str | None:
    """The kind of run whose held-out rows make a band and evidence of their own (``constants.band_kind_of``):
    ``moe`` for a mixture of experts, trained or served, ``pp`` for serving over pipeline stages, else None."""
    from anchorgpu.planner.speed.runs import _model

    return band_kind_of(moe=_model(run.row).moe is not None, phase=run.phase, pp=int(run.row.get("pp", 1)),
                        cp=int(run.row.get("cp", 1)))


def engine_of(run: Run) -> str | None:
    """The serving engine a serving row ran on (``vllm``, ``trtllm`` or ``sglang``), for evidence per engine: the
    row's ``engine``, else TensorRT-LLM's where its benchmark sized the engine (``engine_limits: trtllm-bench``) or
    the row sizes the KV cache as TensorRT-LLM does (``kv_free_fraction``), else by its set; None where no source
    says (a training row, or a serving row of the reference files that names no engine)."""
    if run.phase != "serve":
        return None
    return row_engine(run.row)


def serving_kind(run: Run) -> str | None:
    """:func:`band_kind` of a serving row, None for a training one."""
    return band_kind(run) if run.phase == "serve" else None


def set_of(run: Run) -> str:
    """The set a row is reported in (its ``set`` in ``data/measured_runs.json``): ``core`` for the calibration rows
    of the reference files, else one of :data:`SETS`."""
    name = str(run.row.get("set", "core"))
    if name not in SETS:
        raise ValueError(f"measured run {run.id}: unknown set {name!r} (choose from {', '.join(SETS)})")
    return name


def stack_of_row(run: Run) -> str:
    """The software stack of the row's GPU: ``cuda`` or ``rocm``."""
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner.speed.constants import stack_of

    return stack_of(get_gpu(run.row["gpu"]))


def report_rows(cal: Calibration, runs: tuple[Run, ...]) -> list[dict[str, Any]]:
    """One dict per run: id, role, phase, metric, measured, predicted, error (predicted/measured - 1)."""
    out = []
    for run in runs:
        value = predict(run, cal)
        out.append({"id": run.id, "role": run.role, "phase": run.phase, "metric": run.metric,
                    "measured": run.value, "predicted": value, "error": value / run.value - 1.0,
                    "source": run.source})
    return out


def speed_ratio(run: Run, predicted: float) -> float:
    """Measured over predicted, as a speed: above 1 the run was faster than predicted (a time is inverted)."""
    ratio = run.value / predicted
    return ratio if run.higher_is_better else 1.0 / ratio


def paired_errors(prefixes: list[str], first: dict[str, float], second: dict[str, float],
                  names: tuple[str, str]) -> list[str]:
    """One line per row whose id starts with one of ``prefixes``: its error under two readings of the rows (the
    benchmarks' restatement scripts), e.g. ``N24-GPT3-20B  one NIC -34.6%   every NIC -0.2%``.

    >>> paired_errors(["N24-G"], {"N24-GPT3-20B": -0.346, "S1": 0.1}, {"N24-GPT3-20B": -0.002, "S1": 0.1},
    ...               ("one NIC", "every NIC"))
    ['  N24-GPT3-20B                 one NIC -34.6%   every NIC -0.2%']
    """
    return [f"  {rid:28s} {names[0]} {first[rid]:+.1%}   {names[1]} {second[rid]:+.1%}"
            for prefix in prefixes for rid in first if rid.startswith(prefix)]


def _summaries(rows: list[dict[str, Any]], runs: tuple[Run, ...]) -> list[str]:
    by_id = {r.id: r for r in runs}
    lines = []
    for name in SETS:
        for stack in ("cuda", "rocm"):
            for role in ("fit", "holdout"):
                errs = [abs(r["error"]) for r in rows if r["role"] == role and set_of(by_id[r["id"]]) == name
                        and stack_of_row(by_id[r["id"]]) == stack]
                if errs:
                    lines.append(f"{name} {stack.upper()} {role}: {len(errs)} rows, median |error| "
                                 f"{statistics.median(errs):.1%}, max {max(errs):.1%}, within 25%: "
                                 f"{sum(e <= 0.25 for e in errs)}/{len(errs)}")
    return lines


def summary(rows: list[dict[str, Any]], runs: tuple[Run, ...]) -> str:
    lines = [f"{'row':10} {'role':8} {'phase':6} {'metric':24} {'measured':>12} {'predicted':>12} {'error':>7}"]
    for r in rows:
        lines.append(f"{r['id']:10} {r['role']:8} {r['phase']:6} {r['metric']:24} {r['measured']:>12.5g} "
                     f"{r['predicted']:>12.5g} {r['error']:>+7.1%}")
    lines += _summaries(rows, runs)
    return "\n".join(lines)


def _what(run: Run) -> str:
    """One line of what a row measured, in the planner's terms (the README's accuracy table)."""
    r = run.row
    ref = r["model"]
    model = ref.get("registry") or f"GPT-shaped h={ref['config'].get('n_embd', ref['config'].get('hidden_size'))}"
    if run.phase == "train":
        layout = f"TP{r['tp']} PP{r['pp']}" + (f" CP{r['cp']}" if r["cp"] > 1 else "") + (
            f" v{r['virtual_stages']}" if r["virtual_stages"] > 1 else "") + (" FSDP" if r["zero"] >= 3 else "")
        return f"{model} train, {r['gpus']}×{r['gpu']}, {layout}, {r['precision']}, {run.metric}"
    in_flight = f", {r['concurrency']} in flight" if "concurrency" in r else ""
    return (f"{model} serve, {r['gpus']}×{r['gpu']} TP{r['tp']}, {r['weights']}, {r['prompt_tokens']}/"
            f"{r['output_tokens']}{in_flight}, {run.metric}")


def _figure(value: float, metric: str) -> str:
    if metric == "step_s":
        return f"{value:.2f} s"
    if metric.endswith("_s") and not metric.endswith("per_s"):
        return f"{value * 1e3:.1f} ms"
    return f"{value:,.0f}"


def markdown(rows: list[dict[str, Any]], runs: tuple[Run, ...], sets: tuple[str, ...] = ("core",)) -> str:
    """The speed-accuracy table (row, source, what, role, measured, ours, error) of the rows in ``sets``, then the
    summary of every set."""
    by_id = {r.id: r for r in runs}
    lines = ["| row | source | what | role | measured | ours | error |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        run = by_id[row["id"]]
        if set_of(run) not in sets:
            continue
        lines.append(f"| {run.id} | {run.source.split(' via ')[0][:60]} | {_what(run)} | {run.role} | "
                     f"{_figure(run.value, run.metric)} | {_figure(row['predicted'], run.metric)} | {row['error']:+.1%} |")
    lines.append("")
    lines += _summaries(rows, runs)
    return "\n".join(lines)
