"""vLLM runs MXFP4 experts with its Marlin kernel by default below compute capability 9.0 (A100, A10G, L40S...):
``get_mxfp4_backend`` returns ``Mxfp4Backend.MARLIN`` where ``current_platform.get_device_capability()[0] < 9``
(vllm-project/vllm ``vllm/model_executor/layers/quantization/mxfp4.py`` @ afdb4a4ff429377d0fcfac3752e814ffc36ea41d).
A gpt-oss plan on vLLM there says so. Since stop 63 the planner holds a measured Marlin rate for 8.0 (the A100) as well
as 9.0 (``vllm_marlin_moe_peak_share`` '8.0': 0.429, from AIConfigurator 0.12.0's A100 table of the same
``moe_wna16_marlin_gemm`` kernel under SGLang; its vLLM tables for Ampere, ``a100_sxm/moe/vllm/0.14.0``, hold
``vllm_fused_moe`` bfloat16 rows only; benchmarks/marlin_a100_moe_fit.py), so an A100 plan's line gives that rate; on
8.6 and 8.9 (A10G, L40S) the speed stays the planner's usual MoE rate and the line is wording only."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance

OSS = load_model("gpt-oss-20b")


def _performance(gpu: str, *, backend: str | None = None, weights: str = "mxfp4", engine: str = "vllm") -> dict:
    result = plan(OSS, Workload(task="inference", context_tokens=4096, concurrency=16, engine=engine,
                                moe_backend=backend),
                  precision=PrecisionPlan(weights=weights), layout=Layout(gpus=1, tp=1), gpu=get_gpu(gpu),
                  suggest=False, choose_layout=False)
    return plan_performance(result, prompt_tokens=1000, output_tokens=200)


def _kernel_lines(perf: dict) -> list[str]:
    return [a for a in perf["assumptions"] if a.startswith("MoE kernel:")]


@pytest.mark.parametrize(("gpu", "cc"), [("a100", "8.0"), ("a10g", "8.6"), ("l40s", "8.9")])
def test_a_vllm_gpt_oss_plan_below_sm90_says_marlin_runs_the_experts(gpu: str, cc: str) -> None:
    (line,) = _kernel_lines(_performance(gpu))
    assert line.startswith("MoE kernel: vLLM runs the routed experts with its Marlin kernel (fused_marlin_moe: the "
                           "MXFP4 weights dequantized to BF16 inside the kernel)"), line
    assert f"below compute capability 9.0 (get_mxfp4_backend; this GPU's is {cc})" in line, line
    if cc in calibration().vllm_marlin_moe_peak_share:  # the A100's measured Marlin table (since stop 63)
        assert "on this GPU family AIConfigurator's measured table of it reaches 43% of the BF16 peak" in line, line
    else:
        assert "timed at the planner's usual MoE rate" in line, line


def test_the_words_change_no_speed_and_the_a100_alone_has_a_measured_rate_below_sm90() -> None:
    """Stating MARLIN takes the same path as vLLM's default below SM 9.0: the same speed, at the A100's measured Marlin
    rate there (8.0, since stop 63) and at the usual MoE rate on the A10G (8.6), which has no measured table."""
    assert [cc for cc in calibration().vllm_marlin_moe_peak_share if cc.startswith("8.")] == ["8.0"]
    for gpu, words in (("a100", "AIConfigurator's measured table of it reaches 43%"),
                       ("a10g", "no measured table of it for this GPU family")):
        default, stated = _performance(gpu), _performance(gpu, backend="MARLIN")
        assert default["output_tokens_per_s"] == stated["output_tokens_per_s"]
        assert words in _kernel_lines(stated)[0]  # the stated line


@pytest.mark.parametrize(("gpu", "kwargs"), [
    ("h100-sxm", {}),                    # SM 9.0: Triton (triton_kernels) by default, no line
    ("mi300x", {}),                      # ROCm: no CUDA compute capability
    ("a100", {"weights": "bf16"}),       # BF16 experts: not MXFP4
    ("a100", {"engine": "sglang"}),      # another engine
])
def test_no_default_marlin_line_elsewhere(gpu: str, kwargs: dict) -> None:
    assert not any("Marlin" in a for a in _kernel_lines(_performance(gpu, **kwargs)))
