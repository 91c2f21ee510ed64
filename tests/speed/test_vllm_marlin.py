"""vLLM's Marlin MoE kernel: the rows that state it (``moe_backend: "MARLIN"``) time their routed experts at its
measured rate and falloff on Hopper (``speed.moe_backend``; benchmarks/vllm_moe_findings.md, session gpustackmoe).

Sources: vllm-project/vllm ``vllm/model_executor/layers/quantization/mxfp4.py`` ``get_mxfp4_backend`` @ afdb4a4 (Marlin
below SM 9.0, or where ``triton_kernels`` is absent); PR #27370 ("users have to install triton_kernels manually");
gpustack/runner ``pack/cuda/Dockerfile`` @ 01961f47 (``vllm==0.11.0`` from PyPI, no triton_kernels); AIConfigurator
0.12.0's ``h100_sxm/moe/vllm/0.24.0/moe_perf.parquet`` (kernel
``vllm_compressedtensorsw4a4mxfp4moe_marlin_marlinexperts_situ_as_silu``, w4a16_mxfp4, 3,584 x 3,072, MoE TP 1,
power_law_1.01): 228.7 TFLOPS with many rows an expert (0.231 of 989), half that at 22 rows; on the A100 its
``a100_sxm/moe/sglang/0.5.10/moe_perf.parquet`` (``sglang_marlin_moe``, int4_wo, the same moe_wna16_marlin_gemm
kernel; pooled shapes, power_law_1.01): 133.7 TFLOPS (0.429 of 312), half that at 24.5 rows.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance, serving_setup
from anchorgpu.planner.speed.moe_backend import VLLM_MARLIN, expert_half_tokens, marlin_expert_rate, vllm_moe_backend
from anchorgpu.planner.speed.runs import load_runs, predict
from anchorgpu.planner.speed.serving import decode_step
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog
from sweep_rows import plan_of_row

OSS = load_model("gpt-oss-20b")


def test_marlin_is_what_a_vllm_plan_states_for_mxfp4_experts_only() -> None:
    assert vllm_moe_backend(OSS, "mxfp4", "MARLIN") == VLLM_MARLIN
    assert vllm_moe_backend(OSS, "mxfp4", "marlin") == VLLM_MARLIN
    assert vllm_moe_backend(OSS, "mxfp4", None) == vllm_moe_backend(OSS, "mxfp4", "AUTO") == ""  # the Triton path
    assert vllm_moe_backend(OSS, "bf16", "MARLIN") == ""  # 16-bit experts run vLLM's Triton fused_moe
    assert vllm_moe_backend(load_model("qwen3-8b"), "mxfp4", "MARLIN") == ""  # dense
    with pytest.raises(InvalidWorkload):
        vllm_moe_backend(OSS, "mxfp4", "CUTLASS")


def test_the_measured_marlin_rate_and_falloff_on_hopper_and_the_a100() -> None:
    cal = calibration()
    h100, a100, l40s = get_gpu("h100-sxm"), get_gpu("a100-80gb-sxm"), get_gpu("l40s")
    # AIConfigurator's H100 table: 228.7 TFLOPS with many rows an expert, stated as 0.231 of the 989 BF16 TFLOPS
    assert marlin_expert_rate(VLLM_MARLIN, h100, 989e12, cal) == pytest.approx(228.7e12, rel=0.01)
    assert expert_half_tokens(VLLM_MARLIN, h100, 140.0, cal) == pytest.approx(22.0)
    # its A100 table of the same kernel (SGLang 0.5.10's Marlin MoE, int4 weight-only; stop 63): 133.7 TFLOPS, 0.429
    # of 312, half that at 24.5 rows (benchmarks/marlin_a100_moe_fit.py)
    assert marlin_expert_rate(VLLM_MARLIN, a100, 312e12, cal) == pytest.approx(133.7e12, rel=0.01)
    assert expert_half_tokens(VLLM_MARLIN, a100, 140.0, cal) == pytest.approx(24.5)
    # no table read for SM 8.9: the planner's own rates and fitted falloff
    assert marlin_expert_rate(VLLM_MARLIN, l40s, 362e12, cal) == 0.0
    assert expert_half_tokens(VLLM_MARLIN, l40s, 140.0, cal) == 140.0
    assert marlin_expert_rate("", h100, 989e12, cal) == 0.0


def _plan(gpu: str, backend: str | None):  # type: ignore[no-untyped-def]
    return plan(OSS, Workload(task="inference", context_tokens=4096, concurrency=64, engine="vllm",
                              moe_backend=backend),
                precision=PrecisionPlan(weights="mxfp4"), layout=Layout(gpus=1, tp=1), gpu=get_gpu(gpu),
                suggest=False, choose_layout=False)


def test_a_full_prompt_step_on_h100_takes_the_experts_at_marlins_rate() -> None:
    """An 8,192-token step of gpt-oss-20b (1,024 rows an expert): the routed products, 2 x 24 layers x 32 rows x ...
    FLOPs, at 228.7 TFLOPS x (1 + 22 / 1,024) in place of the planner's rate; the rest of the step unchanged."""
    h100 = get_gpu("h100-sxm")
    steps = []
    for backend in (None, "MARLIN"):
        setup = serving_setup(_plan("h100-sxm", backend), prompt_tokens=2000, output_tokens=100)
        steps.append(decode_step(OSS, h100, setup, batch=64, prefill_tokens=8128, prompt_tokens=2000,
                                 cached_tokens=2050).step_s)
    triton, marlin = steps
    assert marlin > 1.6 * triton  # the experts are most of the products; Marlin runs them at ~0.3x the planner's rate
    # on the A100 vLLM picks Marlin by itself (MXFP4 below SM 9.0), so stating it changes nothing
    a100 = get_gpu("a100-80gb-sxm")
    a = [decode_step(OSS, a100, serving_setup(_plan("a100-80gb-sxm", b), prompt_tokens=2000, output_tokens=100),
                     batch=16, prefill_tokens=2032, prompt_tokens=2000, cached_tokens=2050).step_s
         for b in (None, "MARLIN")]
    assert a[0] == a[1]


def test_the_plan_says_which_moe_kernel_it_assumed() -> None:
    perf = plan_performance(_plan("h100-sxm", "MARLIN"), prompt_tokens=2000, output_tokens=100)
    line = next(a for a in perf["assumptions"] if a.startswith("MoE kernel: vLLM"))
    assert "Marlin" in line and "23%" in line and "22 rows" in line


@pytest.mark.parametrize(("row_id", "measured"), [
    # gpustack/gpustack docs/performance-lab/gpt-oss-20b/h100.md @ 7b50d50: output tok/s, vLLM 0.11.0 baseline
    ("VGM-OSS20-H100-2K", 1443.44), ("VGM-OSS20-H100-4K", 847.43), ("VGM-OSS20-H100-32K", 86.62),
])
def test_gpustacks_h100_gpt_oss_rows_state_marlin_and_come_within_25_percent(row_id: str, measured: float) -> None:
    run = next(r for r in load_runs() if r.id == row_id)
    assert run.row["moe_backend"] == "MARLIN" and run.value == measured
    assert abs(predict(run) / measured - 1) < 0.25  # +113..+119% (32K +59%) at the planner's Triton rate


def test_the_sweep_times_marlin_as_the_plan_does() -> None:
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1)
                   if s.gpu.name in ("h100-sxm", "a100-80gb-sxm"))
    workload = Workload(task="inference", context_tokens=4096, concurrency=64, engine="vllm", moe_backend="MARLIN")
    result = sweep(OSS, shapes, SweepSpec(workload=workload, weights=("bf16", "mxfp4")))
    checked = 0
    for i in range(result.evaluated):
        row = result.row(i)
        if not row["fits"] or row["ep"] > row["tp"]:
            continue
        p, _ = plan_of_row(OSS, workload, result, row)
        perf = plan_performance(p, prompt_tokens=result.prompt_tokens, output_tokens=result.output_tokens)
        assert row["decode_tokens_per_s_total"] == pytest.approx(perf["output_tokens_per_s"], rel=1e-6)
        checked += 1
    assert checked
