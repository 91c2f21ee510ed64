"""Which engines the serving speeds hold for: the same benchmarks on TensorRT-LLM and on vLLM's defaults.

GPUStack's performance lab ran Qwen3-14B and Qwen3-32B on one A100 with every request sent at once (ShareGPT, and
random prompts of 128 to 32,000 tokens) on vLLM 0.11.0 with its defaults and on TensorRT-LLM 1.2.0rc1
(gpustack/gpustack docs/performance-lab/qwen3-14b/a100.md and qwen3-32b/a100.md, commit
10e9444a07c73556f2ef0d10d2b2766bbf54c9c0): the rows ``VGA-*`` (set ``vllm-gpustack-a100``) and ``TGA-*`` (set
``trtllm-gpustack-a100``) of ``src/anchorgpu/planner/speed/data/measured_runs.json``, all held out. TensorRT-LLM
sizes its KV cache from the memory free at its profiling pass's peak (``kv_free_fraction``), which the rows restate.
That every serving plan and recommendation carries the caveat is checked beside the time-to-first-token one
(``test_ttft_caveat.py``).
"""

from __future__ import annotations

import math
import statistics

from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.front_end import front_end_delay_s
from anchorgpu.planner.speed.runs import load_runs, predict

RUNS = {run.id: run for run in load_runs()}
TRTLLM = {key: run for key, run in RUNS.items() if key.startswith("TGA-")}
VLLM = {key: run for key, run in RUNS.items() if key.startswith("VGA-")}


def _speed(key: str) -> float:
    """Measured over predicted output tokens a second."""
    return RUNS[key].value / predict(RUNS[key])


def test_the_same_benchmarks_ran_on_both_engines_and_none_is_fitted() -> None:
    assert len(TRTLLM) == len(VLLM) == 10
    assert {key.split("-", 1)[1] for key in TRTLLM} == {key.split("-", 1)[1] for key in VLLM}
    assert all(run.role == "holdout" for run in (*TRTLLM.values(), *VLLM.values()))
    assert all(run.row["kv_free_fraction"] == 0.9 and run.row["kv_reservation"] == "full" for run in TRTLLM.values())


def test_the_caveat_states_what_the_rows_show() -> None:
    """Its figures are the calibration's, so the caveat cannot drift from the rows."""
    caveat = calibration().caveats["engine"]
    random_prompts = [key for key in TRTLLM if not key.endswith("-SG")]
    worst = max(abs(1 / _speed(key) - 1) for key in random_prompts)
    assert worst <= 0.2 and f"random-prompt runs came within {math.ceil(worst * 100)}% of the prediction" in caveat
    assert f"ShareGPT runs at {_speed('TGA-Q32-SG'):.2f}x and {_speed('TGA-Q14-SG'):.2f}x of it" in caveat
    trt_within = sum(abs(1 / _speed(key) - 1) <= 0.25 for key in TRTLLM)
    assert f"({trt_within} of {len(TRTLLM)} within 25%)" in caveat
    speeds = sorted(_speed(key) for key in VLLM)
    vllm_within = sum(abs(1 / s - 1) <= 0.25 for s in speeds)
    assert (f"median {statistics.median(speeds):.2f}x of the predicted speed ({speeds[0]:.2f}x to {speeds[-1]:.2f}x; "
            f"{vllm_within} of {len(VLLM)} within 25%)") in caveat
    # the engine, not the GPU: on the same A100 and 128-token bursts vLLM 0.11's chat front end held the 1,000
    # requests 12.1 and 12.8 s before its engine started, trtllm-serve's 1.3 and 2.3 s (each page's mean TTFT and
    # duration, the rows' front_end); the rows are timed after those starts, so both engines' counts include them
    for size in ("Q14", "Q32"):
        assert front_end_delay_s(RUNS[f"VGA-{size}-128"].row) > 12.0 > 2.5 > front_end_delay_s(RUNS[f"TGA-{size}-128"].row)


def test_tensorrt_llm_sizes_its_kv_cache_from_the_memory_free_after_its_profiling_pass() -> None:
    """Qwen3-32B's BF16 weights leave an 80 GB A100 little room: planned for vLLM with the row's limits (90% of the
    memory, its sampler's warm-up over 2,048 sequences held) no 32,000-token request's cache fits, but TensorRT-LLM
    ran all 100 of them; planned for TensorRT-LLM (``engine="trtllm"``: 90% of the memory its profiling leaves free)
    one request fits and the row is predicted."""
    from dataclasses import replace

    from anchorgpu.planner import plan
    from anchorgpu.planner.speed.runs import _serve_plan

    p = _serve_plan("TGA-Q32-32K")
    assert p.workload.engine == "trtllm" and p.fits
    b = p.breakdown
    assert b["kv_cache_capacity_bytes"] >= b["kv_per_sequence_bytes"] and b["sampler_logits_bytes"] == 0
    free = p.gpu.memory_bytes - (p.per_gpu.weights_bytes + b["prefill_activation_bytes"] + b["non_torch_bytes"]
                                 + b["rope_table_bytes"] + b["cuda_context_outside_budget_bytes"])
    assert b["kv_cache_capacity_bytes"] == int(0.9 * free)
    as_vllm = plan(p.model, replace(p.workload, engine="vllm"), precision=p.precision, gpu=p.gpu, suggest=False,
                   choose_layout=False)
    assert as_vllm.fits is False
    assert as_vllm.breakdown["kv_cache_capacity_bytes"] < as_vllm.breakdown["kv_per_sequence_bytes"]
    assert 0.85 <= _speed("TGA-Q32-32K") <= 1.15


def test_the_tensorrt_llm_caveat_states_what_its_rows_show() -> None:
    """A plan sized for TensorRT-LLM (``--engine trtllm``) carries the caveat of that engine's rows, its figures the
    rows' own."""
    caveat = calibration().caveats["engine_trtllm"]
    trt_within = sum(abs(1 / _speed(key) - 1) <= 0.25 for key in TRTLLM)
    assert f"({trt_within} of {len(TRTLLM)} within 25%;" in caveat
    assert f"ShareGPT runs at {_speed('TGA-Q32-SG'):.2f}x and {_speed('TGA-Q14-SG'):.2f}x of it" in caveat
    worst = max(abs(1 / _speed(key) - 1) for key in TRTLLM if not key.endswith("-SG"))
    assert worst <= 0.2 and f"random-prompt runs came within {math.ceil(worst * 100)}% of the prediction" in caveat


SGLANG = {key: run for key, run in RUNS.items()
          if run.row.get("engine") == "sglang" and run.row.get("set") == "inferencemax"}
SGLANG_LAYOUTS = {key: run for key, run in RUNS.items() if run.row.get("set") == "inferencemax-sglang-moe"}


def test_the_sglang_caveat_states_what_its_rows_show() -> None:
    """A plan sized for SGLang (``--engine sglang``) carries SGLang's caveat, not vLLM's: which runs back it
    (InferenceMAX's DeepSeek-R1 rows on SGLang, set ``inferencemax``) and how they came out, its figures the rows'
    own, per stack (the ROCm rows run the absorbed weights' dequantisation)."""
    from anchorgpu.planner.speed.rows_report import speed_ratio, stack_of_row

    caveat = calibration().caveats["engine_sglang"]
    assert caveat != calibration().caveats["engine"] and "vLLM's defaults" not in caveat
    assert {run.row.get("set") for run in RUNS.values() if run.row.get("engine") == "sglang"} == {
        "inferencemax", "inferencemax-sglang-moe"}
    assert {run.row["model"]["registry"] for run in SGLANG.values()} == {"deepseek-r1"}
    assert {(run.row["gpus"], run.row["tp"], run.metric) for run in SGLANG.values()} == {(8, 8, "tpot_s")}
    speeds = {key: speed_ratio(run, predict(run)) for key, run in SGLANG.items()}
    within = sum(abs(1 / s - 1) <= 0.25 for s in speeds.values())
    ordered = sorted(speeds.values())
    assert (f"InferenceMAX's {len(SGLANG)} of DeepSeek-R1-0528" in caveat and
            f"median {statistics.median(ordered):.2f}x of the predicted speed ({ordered[0]:.2f}x to {ordered[-1]:.2f}x; "
            f"{within} of {len(SGLANG)} within 25%)" in caveat)
    cuda = [key for key, run in SGLANG.items() if stack_of_row(run) == "cuda"]
    rocm = [key for key, run in SGLANG.items() if stack_of_row(run) == "rocm"]
    fitted = [key for key in cuda if SGLANG[key].role == "fit"]
    assert all(SGLANG[key].role == "holdout" for key in rocm)
    assert (f"{statistics.median(speeds[k] for k in cuda):.2f}x on H200 and B200 ({len(cuda)} runs; {len(fitted)} of "
            f"them among the fitted rows)") in caveat
    assert f"{statistics.median(speeds[k] for k in rocm):.2f}x on MI300X, MI325X and MI355X ({len(rocm)}, held out" in caveat
    at_4 = sorted(speeds[k] for k in rocm if SGLANG[k].row["concurrency"] == 4)
    assert f"slowest at 4 requests in flight, {at_4[0]:.2f}x to {at_4[-1]:.2f}x" in caveat
    for gpu in {SGLANG[k].row["gpu"] for k in rocm}:  # on each AMD GPU its runs at 4 in flight are its slowest
        on_gpu = [k for k in rocm if SGLANG[k].row["gpu"] == gpu]
        assert max(speeds[k] for k in on_gpu if SGLANG[k].row["concurrency"] == 4) < min(
            speeds[k] for k in on_gpu if SGLANG[k].row["concurrency"] > 4)


def test_the_sglang_caveat_states_how_its_layout_pairs_came_out() -> None:
    """The SGLang runs of other layouts (InferenceMAX's DeepSeek-R1-0528 on SGLang 0.5.6, set
    ``inferencemax-sglang-moe``: each workload under two layouts in one run, all held out) and how they came out, per
    stack, and that every pair of them is ranked as measured; its figures the rows' own."""
    from anchorgpu.planner.speed.layout_margin import layout_groups
    from anchorgpu.planner.speed.rows_report import speed_ratio, stack_of_row

    caveat = calibration().caveats["engine_sglang"]
    assert all(run.row["engine"] == "sglang" and run.role == "holdout" for run in SGLANG_LAYOUTS.values())
    predicted = {key: predict(run) for key, run in SGLANG_LAYOUTS.items()}
    for stack, words in (("cuda", "on B200 ran at a median"), ("rocm", "on MI355X at")):
        speeds = sorted(speed_ratio(run, predicted[key]) for key, run in SGLANG_LAYOUTS.items()
                        if stack_of_row(run) == stack)
        assert (f"{words} {statistics.median(speeds):.2f}x{' of the predicted speed' if stack == 'cuda' else ''} "
                f"({speeds[0]:.2f}x to {speeds[-1]:.2f}x; {len(speeds)}") in caveat
    groups = [g for g in layout_groups(tuple(SGLANG_LAYOUTS.values()))]
    pairs = [(a, b) for g in groups for i, a in enumerate(g) for b in g[i + 1:]]
    assert f"every one of their {len(pairs)} pairs was ranked as measured" in caveat
    assert all((a.value < b.value) == (predicted[a.id] < predicted[b.id]) for a, b in pairs)
    assert "other layout" not in caveat

def test_an_sglang_plan_carries_sglangs_engine_caveat() -> None:
    from anchorgpu.architectures import load_model
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, Workload, plan
    from anchorgpu.planner.speed.estimate import plan_performance

    p = plan(load_model("llama-3.1-8b"), Workload(engine="sglang", concurrency=8), gpu=get_gpu("h100"),
             layout=Layout(gpus=1), suggest=False)
    lines = plan_performance(p)["assumptions"]
    assert f"Serving engine: {calibration().caveats['engine_sglang']}." in lines
    assert not any(calibration().caveats["engine"] in line for line in lines)
