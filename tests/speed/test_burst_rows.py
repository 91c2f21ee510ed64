"""Bursts of equal requests, timed as what they are: GPUStack's benchmarks (``vllm bench serve``, every request sent at
once, gpustack/gpustack docs/performance-lab, rows VGA-*, TGA-* and VGM-* of ``measured_runs.json``) divide their
output tokens by the time the last request finishes. With a fixed prompt and output length the engine runs them in
waves of what it holds at once, and a wave's prompts are prefilled before its outputs decode together
(``batching.burst_makespan_s``); ShareGPT's varied lengths stay read as the steady state.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest

from anchorgpu.planner.speed._toys import toy_gpu, toy_model
from anchorgpu.planner.speed.batching import burst_makespan_s
from anchorgpu.planner.speed.runs import load_runs, predict
from anchorgpu.planner.speed.serving import ServingSetup, decode_step

BURSTS = [run for run in load_runs() if run.metric == "burst_output_tokens_per_s"]
SETUP = ServingSetup(weights_bytes_per_gpu=2e9, kv_bytes_per_sequence_per_gpu=4e6, max_num_batched_tokens=2048)


def test_the_fixed_length_bursts_are_the_rows_planned_as_bursts() -> None:
    gpustack = [run for run in load_runs() if run.id.startswith(("VGA-", "TGA-", "VGM-")) and run.metric != "tpot_s"]
    assert {run.id for run in BURSTS} == {run.id for run in gpustack if not run.id.endswith("-SG")}
    for run in BURSTS:
        note = run.row["note"]
        assert "sent at once" in note and "burst_output_tokens_per_s" in note, run.id
        said = re.search(r"([0-9,]+) (?:prompts|requests)", note + run.source)
        assert said and int(said.group(1).replace(",", "")) == run.row["burst_requests"], run.id
        assert run.role == "holdout", run.id  # none of them moves a constant


def test_a_wave_is_its_prompts_prefill_then_its_decode_steps() -> None:
    """One wave of 64 requests of 1,000 + 50 tokens: 32 full steps of prompt tokens (2,048 a step), then 49 steps
    decoding all 64 (the first token comes with the prefill), each as the serving step model times it."""
    model, gpu = toy_model(), toy_gpu()
    steps = math.ceil(64 * 1000 / 2048)
    prefill = decode_step(model, gpu, SETUP, batch=0, prefill_tokens=64 * 1000 / steps, prompt_tokens=1000).step_s
    decode = decode_step(model, gpu, SETUP, batch=64, cached_tokens=1000 + 25).step_s
    wave = burst_makespan_s(model, gpu, SETUP, requests=64, concurrency=64, prompt_tokens=1000, output_tokens=50)
    assert wave == pytest.approx(steps * prefill + 49 * decode, rel=1e-12)
    # one request more than a wave holds: a second wave of one request
    one = burst_makespan_s(model, gpu, SETUP, requests=1, concurrency=64, prompt_tokens=1000, output_tokens=50)
    assert burst_makespan_s(model, gpu, SETUP, requests=65, concurrency=64, prompt_tokens=1000,
                            output_tokens=50) == pytest.approx(wave + one, rel=1e-12)


def test_replicas_share_the_requests() -> None:
    model, gpu = toy_model(), toy_gpu()
    one = burst_makespan_s(model, gpu, SETUP, requests=100, concurrency=32, prompt_tokens=500, output_tokens=20)
    two = burst_makespan_s(model, gpu, replace(SETUP, replicas=2), requests=200, concurrency=64, prompt_tokens=500,
                           output_tokens=20)
    assert two == pytest.approx(one, rel=1e-12)


def test_planned_as_waves_the_bursts_come_closer_than_as_the_steady_state() -> None:
    """The same rows read as the steady state (the engine full, each prompt's prefill riding in earlier requests'
    decode steps) were further from what was measured: the median error over these held-out rows falls."""
    def error(run: object) -> float:
        return abs(predict(run) / run.value - 1)  # type: ignore[attr-defined]

    steady = [replace(run, metric="max_output_tokens_per_s") for run in BURSTS]
    waves, before = sorted(map(error, BURSTS)), sorted(map(error, steady))
    assert waves[len(waves) // 2] < 0.8 * before[len(before) // 2]
    assert sum(e <= 0.25 for e in waves) > sum(e <= 0.25 for e in before)
