"""GPUStack's vLLM 0.11.0 bursts split into the API server's start delay and the engine's work, from each page's own
time-to-first-token figures (benchmarks/hardening/stop60_vgm2.md). Not a test and not calibration: page figures and
the planner's prediction for the rows that restate them.

A 128-token, 4-output burst finishes each request almost as soon as its prompt is in, so its first tokens come out
at the pace the engine works through the queue. If the engine starts ``t0`` seconds after the burst was sent and then
takes ``T`` seconds, spreading first tokens evenly over them, the mean TTFT is ``t0 + T/2`` and the duration
``t0 + T``: ``T = 2 (duration - mean TTFT)`` and ``t0 = 2 mean TTFT - duration``; the P99 TTFT, ``t0 + 0.99 T``,
checks the reading (column "P99 check"). For the ShareGPT bursts on the H100s (vLLM's ``max_num_seqs`` 1,024 holds
all 1,000 requests, so every prompt is admitted in one wave and first tokens spread over the prefill alone)
``t0 + Tp/2 = mean`` and ``t0 + 0.99 Tp = P99`` give the start ``t0`` and the prefill ``Tp``; the rest of the run is
the decode of the answers, ending with the longest alone.

Pages (gpustack/gpustack docs/performance-lab/): qwen3-14b/a100.md and qwen3-32b/a100.md @10e9444, glm-4.5-air/a100.md
@1dbc3b8, glm-4.5-air/h100.md @48d8b10 (its own ShareGPT block; its random blocks repeat the A100 page's),
qwen3-235b-a22b/a100.md @9babbd2, qwen3-235b-a22b/h100.md @10e9444, gpt-oss-20b/a100.md @7ae332a,
gpt-oss-20b/h100.md @7b50d50, gpt-oss-120b/a100.md @1f37f1b. Each figure is the page's 'Benchmark duration (s)', 'Mean TTFT (ms)', 'P99 TTFT (ms)'.

    PYTHONPATH=src .venv/bin/python benchmarks/gpustack_frontend_delay.py
"""

from __future__ import annotations

from typing import NamedTuple

from anchorgpu.planner.speed.front_end import front_end_delay_s
from anchorgpu.planner.speed.runs import load_runs, predict


class Burst(NamedTuple):
    """One `vllm bench serve` block of a page: what ran, its duration and its TTFT mean and P99 (s)."""

    label: str
    row: str | None  # the calibration row restating it, where one does
    output_tokens: int
    duration_s: float
    mean_ttft_s: float
    p99_ttft_s: float


# 128-token prompts, 4 outputs, 1,000 requests (984 completed on the Qwen3-235B H100 page), every one sent at once.
SHORT = (
    Burst("Qwen3-14B A100 TP1, vLLM", "VGA-Q14-128", 4000, 26.79, 19.45146, 26.52359),
    Burst("Qwen3-32B A100 TP1, vLLM", "VGA-Q32-128", 4000, 49.57, 31.17764, 48.96057),
    Burst("GLM-4.5-Air A100 TP4, vLLM", "VGM-GLMA-A100-128", 4000, 21.03, 16.58377, 20.72661),
    Burst("Qwen3-235B-2507 A100 TP8 BF16, vLLM", "VGM-Q235-A100-128", 4000, 17.68, 12.76763, 17.33937),
    Burst("Qwen3-235B-2507 A100 TP4 FP8, vLLM", None, 4000, 26.54, 17.26017, 26.15432),
    Burst("Qwen3-235B-2507 H100 TP8 BF16, vLLM", "VGM-Q235-H100-128", 3936, 8.83, 7.04217, 8.72124),
    Burst("Qwen3-235B-2507 H100 TP4 FP8, vLLM", None, 3936, 6.11, 5.62151, 5.80357),
    Burst("gpt-oss-20b A100 TP1, vLLM", "VGM-OSS20-A100-128", 4000, 5.44, 2.77446, 5.29860),
    Burst("gpt-oss-20b H100 TP1, vLLM", "VGM-OSS20-H100-128", 4000, 4.70, 3.17414, 4.41525),
    Burst("gpt-oss-120b A100 TP1, vLLM", "VGM-OSS120-A100-128", 4000, 14.09, 7.81318, 13.93599),
    Burst("Qwen3-14B A100 TP1, TensorRT-LLM", "TGA-Q14-128", 4000, 15.03, 8.16648, 14.85634),
    Burst("Qwen3-32B A100 TP1, TensorRT-LLM", "TGA-Q32-128", 4000, 37.25, 19.76177, 36.59274),
    Burst("GLM-4.5-Air A100 TP4 EP4, SGLang", None, 4000, 10.14, 5.88275, 9.32113),
)

# ShareGPT, 1,000 requests (984 on Qwen3-235B's page) sent at once on the H100s: one wave.
SHAREGPT_ONE_WAVE = (
    Burst("GLM-4.5-Air H100 TP4, vLLM", "VGM-GLMA-H100-SG", 199895, 52.39, 16.38388, 19.97518),
    Burst("Qwen3-235B-2507 H100 TP8, vLLM", "VGM-Q235-H100-SG", 193865, 48.28, 8.73069, 12.94037),
    Burst("gpt-oss-20b H100 TP1, vLLM", "VGM-OSS20-H100-SG", 193979, 24.81, 4.88162, 8.16601),
    Burst("GLM-4.5-Air H100 TP4, SGLang", None, 199904, 44.10, 4.37121, 8.36343),
)


# ShareGPT on the A100s (waves of vLLM's 256 sequences; TensorRT-LLM's own limits), each read less the start delay of
# the same page's 128-token burst (same engine, model and chat template): (label, row, output tokens, duration s,
# the short burst whose start delay applies).
SHAREGPT_A100 = (
    ("Qwen3-14B A100 TP1, vLLM", "VGA-Q14-SG", 201605, 106.82, "VGA-Q14-128"),
    ("GLM-4.5-Air A100 TP4, vLLM", "VGM-GLMA-A100-SG", 199904, 106.15, "VGM-GLMA-A100-128"),
    ("Qwen3-14B A100 TP1, TensorRT-LLM", "TGA-Q14-SG", 201471, 72.71, "TGA-Q14-128"),
)


def short_burst_split(b: Burst) -> tuple[float, float]:
    """(start delay t0, engine time T) of a short burst: first tokens spread evenly from t0 to t0 + T."""
    return 2.0 * b.mean_ttft_s - b.duration_s, 2.0 * (b.duration_s - b.mean_ttft_s)


def one_wave_split(b: Burst) -> tuple[float, float]:
    """(start delay t0, prefill Tp) of a one-wave burst: first tokens spread evenly over the prefill."""
    prefill = (b.p99_ttft_s - b.mean_ttft_s) / 0.49
    return b.mean_ttft_s - prefill / 2.0, prefill


def main() -> None:
    runs = {run.id: run for run in load_runs()}
    print("Short bursts (128 in / 4 out):\n")
    print("| burst | row | duration s | start t0 s | engine T s | P99 check s | planned s | planned / measured "
          "| planned / engine phase |")
    print("|---|---|---|---|---|---|---|---|---|")
    for b in SHORT:
        t0, engine = short_burst_split(b)
        cells = ["-", "-", "-"]
        if b.row:  # the row's prediction is its page's start delay plus the planned burst (front_end.py): less it
            planned = b.output_tokens / predict(runs[b.row]) - front_end_delay_s(runs[b.row].row)
            cells = [f"{planned:.2f}", f"{b.duration_s / planned - 1:+.1%}", f"{engine / planned - 1:+.1%}"]
        print(f"| {b.label} | {b.row or '-'} | {b.duration_s:.2f} | {t0:.2f} | {engine:.2f} | "
              f"{t0 + 0.99 * engine:.2f} of {b.p99_ttft_s:.2f} | " + " | ".join(cells) + " |")
    print("\n(planned: the engine's burst alone; planned / measured: rate over rate against the whole run, the row's "
          "error before stop 61; planned / engine phase: the same against the page's run less its start delay t0. "
          "calibrate now compares the page's figure with t0 + planned: speed/front_end.py.)")
    print("\nShareGPT, one wave on the H100s:\n")
    print("| burst | row | duration s | start t0 s | prefill Tp s | decode after s | planned s | planned / measured "
          "| planned / (run - t0) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for b in SHAREGPT_ONE_WAVE:
        t0, prefill = one_wave_split(b)
        cells = ["-", "-", "-"]
        if b.row:
            planned = b.output_tokens / predict(runs[b.row]) - front_end_delay_s(runs[b.row].row)  # engine alone
            cells = [f"{planned:.1f}", f"{b.duration_s / planned - 1:+.1%}",
                     f"{(b.duration_s - t0) / planned - 1:+.1%}"]
        print(f"| {b.label} | {b.row or '-'} | {b.duration_s:.2f} | {t0:.2f} | {prefill:.2f} | "
              f"{b.duration_s - t0 - prefill:.1f} | " + " | ".join(cells) + " |")
    print("\nShareGPT on the A100s, less the start delay of the same page's 128-token burst:\n")
    print("| burst | row | duration s | start t0 s | planned s | planned / measured | planned / (run - t0) |")
    print("|---|---|---|---|---|---|---|")
    starts = {b.row: short_burst_split(b)[0] for b in SHORT if b.row}
    for label, row, tokens, duration, short_row in SHAREGPT_A100:
        t0, planned = starts[short_row], tokens / predict(runs[row]) - front_end_delay_s(runs[row].row)
        print(f"| {label} | {row} | {duration:.2f} | {t0:.2f} | {planned:.1f} | {duration / planned - 1:+.1%} | "
              f"{(duration - t0) / planned - 1:+.1%} |")


if __name__ == "__main__":
    main()
