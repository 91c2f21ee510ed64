"""GPUStack's dense H100 runs against its A100 runs of the same benchmarks, and the planner's ratio beside them.

Not a test and not calibration: it prints why GPUStack's H100 runs of Qwen3-14B and Qwen3-32B are not calibration rows
(benchmarks/gpustack_findings.md). Measured figures: 'Output token throughput (tok/s)' of vLLM 0.11.0 with its defaults
(`vllm serve Qwen/Qwen3-14B`, `vllm serve Qwen/Qwen3-32B`), every request sent at once, random prompts, from
gpustack/gpustack docs/performance-lab/qwen3-14b/{a100,h100}.md and qwen3-32b/{a100,h100}.md ('Other Benchmark
Cases', Baseline; commit 10e9444a07c73556f2ef0d10d2b2766bbf54c9c0, the qwen3-14b H100 page at
7ae332aaf05783e657560ef927c527b156e2536d). The A100 rows are the calibration's VGA-* rows; Qwen3-32B's 32K case on
the H100 is left out (under vLLM's budget no 32,000-token request fits beside its BF16 weights in the plan).

    .venv/bin/python benchmarks/gpustack_h100.py
"""

from __future__ import annotations

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance

# (model, case): (A100 tok/s, H100 tok/s), as the pages print them
MEASURED = {
    ("qwen3-14b", "2K"): (284.64, 505.51), ("qwen3-14b", "4K"): (245.13, 438.56),
    ("qwen3-14b", "32K"): (13.65, 25.48), ("qwen3-14b", "128"): (149.33, 176.06),
    ("qwen3-32b", "2K"): (120.27, 152.42), ("qwen3-32b", "4K"): (87.48, 102.21),
    ("qwen3-32b", "128"): (80.69, 121.66),
}
# the requests as the pages' totals give them (prompt, output tokens a request)
SHAPE = {"2K": (1996, 100), "4K": (3996, 200), "32K": (32000, 99), "128": (128, 4)}
# vLLM's defaults: small on an A100 of any size, large on an H100 (arg_utils)
ENGINE = {"a100-80gb-sxm": (2048, 256), "h100-sxm": (8192, 1024)}


def predicted(model: str, gpu: str, prompt: int, output: int) -> float:
    tokens, seqs = ENGINE[gpu]
    w = Workload(prompt_tokens=prompt, output_tokens=output, concurrency=1, gpu_memory_utilization=0.9,
                 max_num_seqs=seqs, max_num_batched_tokens=tokens)
    p = plan(load_model(model), w, precision=PrecisionPlan(weights="bf16", kv_cache="bf16"), layout=Layout(gpus=1),
             gpu=get_gpu(gpu), suggest=False, choose_layout=False)
    return float(plan_performance(p)["max_output_tokens_per_s"])


def main() -> None:
    print("| model | prompts | measured H100/A100 | predicted H100/A100 | H100 measured/predicted | A100 measured/predicted |")
    print("|---|---|---|---|---|---|")
    for (model, case), (a100, h100) in MEASURED.items():
        prompt, output = SHAPE[case]
        pa, ph = predicted(model, "a100-80gb-sxm", prompt, output), predicted(model, "h100-sxm", prompt, output)
        print(f"| {model} | {case} | {h100 / a100:.2f}x | {ph / pa:.2f}x | {h100 / ph:.2f}x | {a100 / pa:.2f}x |")


if __name__ == "__main__":
    main()
