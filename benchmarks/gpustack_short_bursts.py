"""GPUStack's vLLM 0.11.0 bursts of 1,000 short requests (128-token prompts, 4 output tokens) against its long-prompt
bursts, the lab's H100 machine over its A100 one: evidence of a floor outside the GPU (benchmarks/hardening/
stop59_vgm.md). Not a test and not calibration; page figures only, with the planner's prediction where both GPUs
have a held-out row.

Figures: 'Output token throughput (tok/s)' of `vllm serve <model>` with its defaults (the pages' baseline), `vllm
bench serve --dataset-name random` sending every request at once. Pages (gpustack/gpustack docs/performance-lab/):
qwen3-14b/{a100,h100}.md and qwen3-32b/{a100,h100}.md (commit 10e9444; the qwen3-14b H100 page at 7ae332a),
gpt-oss-20b/a100.md (7ae332a) and h100.md (7b50d50), qwen3-235b-a22b/a100.md (9babbd2) and h100.md (10e9444),
glm-4.5-air/a100.md (1dbc3b8) and h100.md (48d8b10). GLM-4.5-Air's H100 page repeats the A100 page's 'Other
Benchmark Cases' blocks byte for byte (498.76 s, 300.98 s, 121.41 s, 21.03 s, and its SGLang blocks), so its own
H100 figures are the Conclusion table's 'Total TPS' (7,066.67 at 128/4 and 21,705.53 at 4,000/200 tokens), read
here as output tok/s with the A100 run's token totals (127,881 + 4,000 and 1,999,787 + 99,547).

    PYTHONPATH=src .venv/bin/python benchmarks/gpustack_short_bursts.py
"""

from __future__ import annotations

from anchorgpu.planner.speed.front_end import front_end_delay_s
from anchorgpu.planner.speed.runs import Run, load_runs, predict

# model: {case: (A100 output tok/s, H100 output tok/s)}
MEASURED = {
    "qwen3-14b (TP1)": {"128": (149.33, 176.06), "4K": (245.13, 438.56)},
    "qwen3-32b (TP1)": {"128": (80.69, 121.66), "4K": (87.48, 102.21)},
    "gpt-oss-20b (TP1)": {"128": (735.40, 851.04), "4K": (415.64, 847.43)},
    "qwen3-235b-a22b (TP8)": {"128": (226.26, 445.53), "4K": (357.26, 931.21)},
    "glm-4.5-air (TP4)": {"128": (190.21, 7066.67 * 4000 / (127881 + 4000)),
                          "4K": (330.75, 21705.53 * 99547 / (1999787 + 99547))},
}
ROWS = {("gpt-oss-20b (TP1)", "128"): ("VGM-OSS20-A100-128", "VGM-OSS20-H100-128"),
        ("gpt-oss-20b (TP1)", "4K"): ("VGM-OSS20-A100-4K", "VGM-OSS20-H100-4K"),
        ("qwen3-235b-a22b (TP8)", "128"): ("VGM-Q235-A100-128", "VGM-Q235-H100-128"),
        ("qwen3-235b-a22b (TP8)", "4K"): ("VGM-Q235-A100-4K", "VGM-Q235-H100-4K")}
TRTLLM_QWEN3_14B_A100_128_S = 15.03  # the same burst on TensorRT-LLM 1.2.0rc1, same A100 and client (qwen3-14b/a100.md)


def _engine_rate(run: Run) -> float:
    """The planned burst's output tok/s without the page's front-end start delay the row's prediction includes
    (speed/front_end.py): the GPUs' ratio, not the front ends'."""
    tokens = run.row["burst_requests"] * run.row["output_tokens"]
    return tokens / (tokens / predict(run) - front_end_delay_s(run.row))


def main() -> None:
    runs = {run.id: run for run in load_runs()}
    print("| model | case | A100 tok/s | H100 tok/s | measured H100/A100 | predicted H100/A100 "
          "| A100 s (1,000 requests) |")
    print("|---|---|---|---|---|---|---|")
    for model, cases in MEASURED.items():
        for case, (a100, h100) in cases.items():
            pair = ROWS.get((model, case))
            ratio = f"{_engine_rate(runs[pair[1]]) / _engine_rate(runs[pair[0]]):.2f}x" if pair else "-"
            seconds = f"{4000 / a100:.1f}" if case == "128" else "-"
            print(f"| {model} | {case} | {a100:.2f} | {h100:.2f} | {h100 / a100:.2f}x | {ratio} | {seconds} |")
    print(f"\nTensorRT-LLM ran qwen3-14b's 128-token burst on the same A100 in {TRTLLM_QWEN3_14B_A100_128_S} s.")


if __name__ == "__main__":
    main()
