"""GPUStack's gpt-oss-20b bursts (vLLM 0.11.0, defaults) against the planner's step for the same tokens.

Not a test and not calibration: it prints the evidence of benchmarks/vllm_moe_findings.md. gpt-oss-20b's KV cache
holds every request of the 128, 2K and 4K bursts (the plan's own figures, printed; the 32K bursts fill it), so vLLM
admits them and fills each step to its token budget (8,192 on an H100, 2,048 on an A100) with decodes and prompt
chunks until the prompts run out; the prompts are most of every burst's tokens, so most of a decoding request's
inter-token gaps are one full step. The page's median ITL is set beside
the planner's step of that many tokens (the prompt's chunk at the prompt's attention length), the same step split
into its parts. Measured figures: 'Median ITL (ms)' of the Baseline results in gpustack/gpustack
docs/performance-lab/gpt-oss-20b/h100.md (commit 7b50d5067ddbdeba0739e7f72d6f40e53d3b9a04) and a100.md (commit
7ae332aaf05783e657560ef927c527b156e2536d), 'Other Benchmark Cases'.

    PYTHONPATH=src .venv/bin/python benchmarks/vllm_moe_h100_steps.py
"""

from __future__ import annotations

from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import serving_setup
from anchorgpu.planner.speed.runs import _serve_plan, load_runs
from anchorgpu.planner.speed.serving import decode_step

# row id: the page's median inter-token latency, ms
MEDIAN_ITL_MS = {
    "VGM-OSS20-H100-32K": 266.37, "VGM-OSS20-H100-4K": 227.42, "VGM-OSS20-H100-2K": 220.69,
    "VGM-OSS20-H100-128": 228.45,
    "VGM-OSS20-A100-32K": 274.32, "VGM-OSS20-A100-4K": 129.50, "VGM-OSS20-A100-2K": 119.09,
}


def main() -> None:
    cal = calibration()
    print("| row | step tokens | KV holds (tokens) | burst needs (tokens) | median ITL ms | planned step ms "
          "(fixed / weights+products / attention) | ITL / planned |")
    print("|---|---|---|---|---|---|---|")
    for run in load_runs():
        if run.id not in MEDIAN_ITL_MS:
            continue
        r = run.row
        p = _serve_plan(run.id)
        setup = serving_setup(p, prompt_tokens=r["prompt_tokens"], output_tokens=r["output_tokens"],
                              host_overlap=False)
        budget = setup.max_num_batched_tokens
        step = decode_step(p.model, p.gpu, setup, batch=0, prefill_tokens=budget, prompt_tokens=r["prompt_tokens"],
                           cal=cal)
        held = (float(p.breakdown["kv_cache_capacity_bytes"]) / setup.kv_bytes_per_sequence_per_gpu
                * (r["prompt_tokens"] + r["output_tokens"] // 2))
        needs = r["burst_requests"] * (r["prompt_tokens"] + r["output_tokens"])
        itl = MEDIAN_ITL_MS[run.id]
        print(f"| {run.id} | {budget:,} | {held:,.0f} | {needs:,} | {itl:.1f} | {step.step_s * 1e3:.1f} "
              f"({step.fixed_s * 1e3:.1f} / {step.weights_s * 1e3:.1f} / {step.attention_s * 1e3:.1f}) "
              f"| {itl / (step.step_s * 1e3):.2f}x |")


if __name__ == "__main__":
    main()
